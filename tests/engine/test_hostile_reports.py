"""Hostile reports: each answered in bounded time and memory, with a clear error or a
correct summary, the same in both backends.

Every hostile file is generated in a temporary directory at test time (the large ones
are streamed to disk, never held in the test's memory). Each backend runs in its worker
process of ``peak_memory.measure``, which gives the growth of the peak RSS during the
call and kills the worker as soon as it grows past the bound, so a parser that holds a
whole 100 MB value fails fast instead of swapping.

Bounds: the growth of the peak RSS during the call is at most ``MEMORY_BOUND_MB`` (64 MB)
for both backends, on inputs of up to 100 MB, so memory does not grow with the input;
each call ends within ``peak_memory.TIME_BOUND_S`` (a generous hang bound, not a speed
assertion).

Set ``HOSTILE_FIGURES=path.jsonl`` to append every measurement (for docs/RELIABILITY.md).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.backends import BACKENDS, assert_same_result, needs_native
from helpers.peak_memory import TIME_BOUND_S, Measured, measure

pytestmark = needs_native

MB = 1 << 20
MEMORY_BOUND_MB = 64


def bounded_in_both(paths: list[str], fmt: str = "auto") -> dict[str, Measured]:
    """Both backends on the same input, each measured in its worker process; asserts the
    memory and time bounds and that the backends agree (the same summary bytes or the
    same error kind). Returns the measurements by backend."""
    results = {b: measure(paths, b, MEMORY_BOUND_MB, fmt) for b in BACKENDS}
    for b, r in results.items():
        assert r.kind != "killed", f"{b}: {r.result[1]}"
        assert r.growth_kb <= MEMORY_BOUND_MB * 1024, f"{b}: peak RSS grew by {r.growth_kb // 1024} MB"
        assert r.seconds is None or r.seconds <= TIME_BOUND_S
    assert_same_result(results["native"].result, results["pure"].result, where=f"{paths}: ")
    return results


def write_stream(path: Path, parts) -> str:
    """Write an iterable of bytes chunks (the large files never sit in memory)."""
    with open(path, "wb") as f:
        for part in parts:
            f.write(part)
    return str(path)


def repeat(chunk: bytes, total: int):
    """``chunk`` repeated up to about ``total`` bytes, in 1 MB writes."""
    block = chunk * max(1, MB // len(chunk))
    written = 0
    while written < total:
        yield block
        written += len(block)


def kind(results: dict[str, Measured]) -> str:
    """``"ok"`` or the error kind of a ``bounded_in_both`` answer."""
    return results["native"].kind


def summary(results: dict[str, Measured]) -> dict:
    """The parsed summary of a ``bounded_in_both`` answer."""
    return results["native"].summary


# --------------------------------------------------------------------------------------
# Entity expansion and external entities: refused before any expansion or fetch


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<testsuite name="pytest"><testcase classname="t" name="a">
<failure message="&lol9;">&lol9;</failure></testcase></testsuite>
"""


def test_billion_laughs_is_refused_at_once(tmp_path):
    """Ten levels of entities (10^9 "lol" if expanded) used in an attribute and a text:
    refused as ``forbidden`` at the DOCTYPE, within a second, saying where."""
    r = bounded_in_both([write_stream(tmp_path / "lol.xml", [BILLION_LAUGHS])])
    assert kind(r) == "forbidden"
    for b in BACKENDS:
        assert r[b].seconds < 1.0, f"{b} took {r[b].seconds} s"
        assert "DOCTYPE" in r[b].result[2] and r[b].position, (b, r[b].result, r[b].position)


def test_quadratic_blowup_is_forbidden(tmp_path):
    """One 100 KB entity referenced 20,000 times (2 GB if expanded)."""
    head = (
        b'<?xml version="1.0"?>\n<!DOCTYPE t [<!ENTITY a "'
        + b"A" * 100_000
        + b'">]>\n<testsuite><testcase name="x"><failure>'
    )
    path = write_stream(tmp_path / "quad.xml", [head, b"&a;" * 20_000, b"</failure></testcase></testsuite>"])
    assert kind(bounded_in_both([path])) == "forbidden"


def test_undefined_entities_without_a_dtd_are_malformed(tmp_path):
    """No DTD, a million references to an undefined entity: refused at the first one."""
    path = write_stream(
        tmp_path / "undef.xml",
        [b"<testsuite><testcase name='x'><failure>", b"&a;" * 1_000_000, b"</failure></testcase></testsuite>"],
    )
    assert kind(bounded_in_both([path])) == "malformed"


@pytest.fixture
def listener():
    """A local TCP port that records whether anything connected to it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.settimeout(0.2)
    hits: list[bytes] = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(0.5)
                try:
                    hits.append(conn.recv(1024))
                except OSError:
                    hits.append(b"")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield sock.getsockname()[1], hits
    stop.set()
    thread.join(timeout=5)
    sock.close()


SECRET = "hostile-secret-" + "7f3a"


@pytest.mark.parametrize(
    "template",
    [
        pytest.param(
            '<!DOCTYPE t [<!ENTITY x SYSTEM "file://{secret}">]>\n<testsuite><testcase name="&x;"/></testsuite>',
            id="general-entity-file",
        ),
        pytest.param(
            '<!DOCTYPE t [<!ENTITY x SYSTEM "{url}">]>\n'
            '<testsuite><testcase name="a"><failure>&x;</failure></testcase></testsuite>',
            id="general-entity-url",
        ),
        pytest.param('<!DOCTYPE t [<!ENTITY % p SYSTEM "{url}"> %p;]>\n<testsuite/>', id="parameter-entity-url"),
        pytest.param(
            '<!DOCTYPE testsuite SYSTEM "{url}">\n<testsuite><testcase name="a"/></testsuite>', id="external-dtd-url"
        ),
        pytest.param(
            '<?xml version="1.0"?><!DOCTYPE t PUBLIC "-//x//y" "file://{secret}"><testsuite/>', id="public-id-file"
        ),
    ],
)
def test_external_entities_are_forbidden_and_never_fetched(tmp_path, listener, template):
    port, hits = listener
    secret_file = tmp_path / "secret.txt"
    secret_file.write_text(SECRET)
    doc = template.format(secret=secret_file, url=f"http://127.0.0.1:{port}/evil.dtd")
    r = bounded_in_both([write_stream(tmp_path / "xxe.xml", [doc.encode()])])
    assert kind(r) == "forbidden"
    assert all(SECRET not in str(m.result) for m in r.values()), "a backend read the secret file"
    time.sleep(0.3)
    assert hits == [], "a backend connected to the URL of an external entity"


def test_xinclude_is_plain_markup(tmp_path):
    """XInclude is not processed: the element is ignored, the file is not read."""
    secret_file = tmp_path / "secret.txt"
    secret_file.write_text(SECRET)
    doc = (
        '<testsuite xmlns:xi="http://www.w3.org/2001/XInclude"><testcase name="a">'
        f'<failure message="m"><xi:include href="file://{secret_file}" parse="text"/></failure>'
        "</testcase></testsuite>"
    )
    r = bounded_in_both([write_stream(tmp_path / "xi.xml", [doc.encode()])])
    assert kind(r) == "ok"
    assert summary(r)["counts"]["failed"] == 1
    assert SECRET not in json.dumps(summary(r))


# --------------------------------------------------------------------------------------
# Depth


DEPTH = 100_000


def test_100000_nested_suites_are_answered(tmp_path):
    path = write_stream(
        tmp_path / "deep.xml",
        [
            b"<testsuites>",
            b"<testsuite>" * DEPTH,
            b'<testcase name="deep"><failure message="m"/></testcase>',
            b"</testsuite>" * DEPTH,
            b"</testsuites>",
        ],
    )
    r = bounded_in_both([path])
    if kind(r) == "ok":  # a limit on depth would be a clear error; if accepted, it is correct
        assert summary(r)["counts"]["failed"] == 1 and summary(r)["failures"][0]["node_id"] == "deep"


def test_100000_nested_elements_inside_a_failure(tmp_path):
    path = write_stream(
        tmp_path / "deeptext.xml",
        [
            b'<testsuite><testcase name="a"><failure message="m">',
            b"<b>x" * DEPTH,
            b"</b>" * DEPTH,
            b"</failure></testcase></testsuite>",
        ],
    )
    r = bounded_in_both([path])
    if kind(r) == "ok":
        assert summary(r)["counts"]["failed"] == 1


def test_100000_unclosed_elements_are_malformed(tmp_path):
    path = write_stream(tmp_path / "open.xml", [b"<testsuites>", b"<testsuite>" * DEPTH])
    assert kind(bounded_in_both([path])) == "malformed"


@pytest.mark.parametrize(
    "nest",
    [pytest.param((b"[", b"]"), id="arrays"), pytest.param((b'{"a":', b"}"), id="objects")],
)
def test_100000_nested_json_values_are_answered(tmp_path, nest):
    """ENGINE.md: nesting beyond 1024 levels is ``malformed`` (RFC 8259 section 9)."""
    opening, closing = nest
    path = write_stream(
        tmp_path / "deep.json",
        [b'{"exitcode": 0, "summary": {}, "x": ', opening * DEPTH, b"1", closing * DEPTH, b', "tests": []}'],
    )
    assert kind(bounded_in_both([path])) == "malformed"


# --------------------------------------------------------------------------------------
# Size: a 100 MB value is capped while streaming


def _huge_attribute(path: Path, size: int) -> str:
    return write_stream(
        path,
        [
            b'<testsuite><testcase name="a"><failure message="',
            *repeat(b"x", size),
            b'">body</failure></testcase></testsuite>',
        ],
    )


def _huge_text(path: Path, size: int) -> str:
    return write_stream(
        path,
        [
            b'<testsuite><testcase name="a"><failure message="m">',
            *repeat("E   line of text é\n".encode(), size),
            b"</failure></testcase></testsuite>",
        ],
    )


def _huge_output(path: Path, size: int) -> str:
    return write_stream(
        path,
        [
            b'<testsuite><testcase name="a"><failure message="m"/><system-out>',
            *repeat("out é\n".encode(), size),
            b"</system-out></testcase></testsuite>",
        ],
    )


def _huge_json_string(path: Path, size: int) -> str:
    head = (
        b'{"exitcode": 1, "summary": {}, "tests": [{"nodeid": "a", "outcome": "failed",'
        b' "call": {"duration": 1, "outcome": "failed", "longrepr": "'
    )
    return write_stream(path, [head, *repeat(b"E   x\\n", size), b'"}}]}'])


def _check_huge(s: dict, case: str, size: int) -> None:
    """What the summary of a huge value says: one failure, everything cut is counted."""
    assert s["counts"]["failed"] == 1
    f = s["failures"][0]
    assert len(f["message"]) <= 300
    if case == "attribute":
        assert f["message"].startswith("xxxx")
    if case in ("text", "json-string"):
        assert s["omitted"]["text_bytes"] >= size // 2
    if case == "output":
        assert len(f["stdout"].encode()) <= 2048 and s["omitted"]["output_bytes"] >= size - 3 * MB


HUGE = {"attribute": _huge_attribute, "text": _huge_text, "output": _huge_output, "json-string": _huge_json_string}


@pytest.mark.parametrize("case", list(HUGE))
def test_a_huge_value_is_capped_in_bounded_memory(tmp_path, case, backend):
    """A 20 MB and a 100 MB value (attribute, failure text, system-out, JSON string):
    the same bounded peak for both sizes, so memory does not grow with the input."""
    for size in (20 * MB, 100 * MB):
        path = HUGE[case](tmp_path / f"huge-{size}", size)
        r = measure([path], backend, MEMORY_BOUND_MB)
        os.remove(path)
        assert r.kind == "ok", r
        assert r.growth_kb <= MEMORY_BOUND_MB * 1024, f"peak RSS grew by {r.growth_kb // 1024} MB"
        _check_huge(r.summary, case, size)


@pytest.mark.parametrize("case", list(HUGE))
def test_a_large_value_gives_the_same_summary_in_both(tmp_path, case):
    r = bounded_in_both([HUGE[case](tmp_path / "large", 3 * MB)])
    _check_huge(summary(r), case, 3 * MB)


MAX_ATTRIBUTES = 1024  # docs/ENGINE.md, *JUnit XML*: one more is malformed


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        pytest.param(MAX_ATTRIBUTES - 1, "ok", id="at-the-limit"),
        pytest.param(MAX_ATTRIBUTES, "malformed", id="one-above"),
        pytest.param(100_000, "malformed", id="100k"),
        pytest.param(1_000_000, "malformed", id="1M"),
    ],
)
def test_a_start_tag_with_very_many_attributes(tmp_path, count, expected):
    """More than 1024 attributes on a start tag is malformed (the testcase's ``name`` is
    one of them): refused while the tag is read, so a 12 MB tag of 1,000,000 attributes
    (past the pure guard's span) stays within the memory bound in both backends."""
    attrs = b"".join(b' a%d="v"' % i for i in range(count))
    path = write_stream(tmp_path / "attrs.xml", [b"<testsuite><testcase name='a'", attrs, b"/></testsuite>"])
    r = bounded_in_both([path])
    assert kind(r) == expected
    if expected == "ok":
        assert summary(r)["counts"]["passed"] == 1
    else:
        for b in BACKENDS:
            assert "more than 1024 attributes" in r[b].result[2], r[b].result


# Over-long attribute values (more than the pure guard's 1 MB span): the pure backend
# gives expat only their head and checks the rest itself, as expat would; the kind and
# the summary (the message's omitted bytes included) must stay native's.
_FILLER = "ab&amp;&lt;&#10;&#x1F600;\u00e9\u20ac\U0001f600\r\n\t\rcd&quot;&apos;&gt;&#65;>".encode()


def _long_value(middle: bytes, size: int = 3 * MB, closing: bytes = b'"') -> list[bytes]:
    half = [*repeat(_FILLER, size // 2)]  # 1.5 MB, made when the test runs
    return [
        b'<testsuite><testcase name="a"><failure type="E" message="',
        *half,
        middle,
        *half,
        closing,
        b">body</failure></testcase></testsuite>",
    ]


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        pytest.param(lambda: _long_value(b""), "ok", id="references-crlf-multibyte"),
        pytest.param(lambda: _long_value(b"\r"), "ok", id="cr-before-the-quote"),
        pytest.param(lambda: _long_value(b"<"), "malformed", id="lt"),
        pytest.param(lambda: _long_value(b"&foo;"), "malformed", id="undefined-entity"),
        pytest.param(lambda: _long_value(b"& "), "malformed", id="bare-ampersand"),
        pytest.param(lambda: _long_value(b"&#0;"), "malformed", id="reference-to-nul"),
        pytest.param(lambda: _long_value(b"&#xD800;"), "malformed", id="reference-to-a-surrogate"),
        pytest.param(lambda: _long_value(b"&#x110000;"), "malformed", id="reference-beyond-unicode"),
        pytest.param(lambda: _long_value(b"\x01"), "malformed", id="control-character"),
        pytest.param(lambda: _long_value(b"\xff"), "malformed", id="invalid-utf8"),
        pytest.param(lambda: _long_value(b"\xed\xa0\x80"), "malformed", id="utf8-surrogate"),
        pytest.param(lambda: _long_value(b"\xef\xbf\xbe"), "malformed", id="u-fffe"),
        pytest.param(lambda: _long_value(b"&amp", closing=b'&amp"'), "malformed", id="unfinished-reference-at-the-end"),
        pytest.param(lambda: _long_value(b"", closing=b'\xc3"'), "malformed", id="unfinished-character-at-the-end"),
        pytest.param(lambda: _long_value(b"", closing=b""), "malformed", id="eof-in-the-value"),
        pytest.param(
            lambda: _long_value(b"", closing=b'" message="again"'), "malformed", id="duplicate-after-the-value"
        ),
        pytest.param(lambda: _long_value(b"", closing=b'"x="1"'), "malformed", id="no-space-after-the-value"),
        pytest.param(
            lambda: _long_value(b"", closing=b'"/></testcase></testsuite><x'), "malformed", id="error-after-the-value"
        ),
        pytest.param(
            lambda: [
                b'<testsuite><testcase name="',
                *repeat(_FILLER, 3 * MB),
                b'"><failure message="m"/></testcase></testsuite>',
            ],
            "ok",
            id="long-testcase-name",
        ),
        pytest.param(
            lambda: [
                b"<testsuite><testcase name='a'><failure message='",
                *repeat(b'x"', 3 * MB),
                b"' type='",
                *repeat(b"T", 2 * MB),
                b"'/></testcase></testsuite>",
            ],
            "ok",
            id="two-long-values-single-quotes",
        ),
        pytest.param(
            lambda: [
                b'<?xml version="1.0" encoding="ISO-8859-1"?><testsuite><testcase name="a"><failure message="',
                *repeat(b"\xe9&lt;", 3 * MB),
                b'"/></testcase></testsuite>',
            ],
            "ok",
            id="latin-1",
        ),
        pytest.param(
            lambda: [
                b"<testsuite><x a='",
                *repeat(b"v", 2 * MB),
                b"'",
                *(b" b%d='v'" % i for i in range(MAX_ATTRIBUTES)),
                b"/></testsuite>",
            ],
            "malformed",
            id="too-many-attributes-after-a-long-value",
        ),
        pytest.param(
            lambda: [
                b"<testsuite><x a='",
                *repeat(b"v", 2 * MB),
                b"'",
                *(b" b%d='v'" % i for i in range(MAX_ATTRIBUTES - 1)),
                b"/></testsuite>",
            ],
            "ok",
            id="a-long-value-and-the-most-attributes",
        ),
        pytest.param(
            lambda: [
                b"<testsuite><testcase name='a'><system-out>",
                *repeat(b"text &amp; more\n", 3 * MB),
                b"</system-out></testcase></testsuite>",
            ],
            "ok",
            id="long-text-is-left-to-expat",
        ),
    ],
)
def test_an_over_long_attribute_value_is_checked_as_expat_would(tmp_path, parts, expected):
    """Both backends give the same kind, and for a valid file the same summary (so the
    same omitted count for a message whose middle the pure guard never gave expat)."""
    r = bounded_in_both([write_stream(tmp_path / "long.xml", parts())])
    assert kind(r) == expected


def test_200000_distinct_failures_stay_bounded(tmp_path):
    """Past 2,000 distinct groups, failures join ``gother``, whose message says how many
    causes it folded (counted up to 10,000); memory stays flat."""

    def cases():
        yield b'<testsuite name="pytest">'
        for start in range(0, 200_000, 10_000):
            yield b"".join(
                b'<testcase classname="tests.test_x" name="t%d" time="0.01">'
                b'<failure message="E%dkind: broken %s"/></testcase>' % (i, i, b"q" * (i % 7))
                for i in range(start, start + 10_000)
            )
        yield b"</testsuite>"

    r = bounded_in_both([write_stream(tmp_path / "many.xml", cases())])
    s = summary(r)
    assert s["counts"]["failed"] == 200_000
    assert len(s["failures"]) == 20 and s["omitted"]["failures"] == 199_980
    other = next(g for g in s["groups"] if g["id"] == "gother")
    assert other["count"] == 200_000 - 2_000
    assert other["message"] == "more than 10000 other causes"


# --------------------------------------------------------------------------------------
# Encodings and bytes


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(
            b'<testsuite><testcase name="a"><failure message="\xff"/></testcase></testsuite>',
            "malformed",
            id="xml-invalid-byte-in-attribute",
        ),
        pytest.param(
            b'<testsuite><testcase name="a"><failure>\xc3</failure></testcase></testsuite>',
            "malformed",
            id="xml-truncated-sequence",
        ),
        pytest.param(b'<testsuite><testcase name="\xc0\xaf"/></testsuite>', "malformed", id="xml-overlong"),
        pytest.param(
            b'<testsuite><testcase name="\xed\xa0\x80"/></testsuite>', "malformed", id="xml-encoded-surrogate"
        ),
        pytest.param(
            b'<testsuite><testcase name="\xf4\x90\x80\x80"/></testsuite>', "malformed", id="xml-beyond-unicode"
        ),
        pytest.param(
            b'<?xml version="1.0" encoding="US-ASCII"?><testsuite><testcase name="\xc3\xa9"/></testsuite>',
            "malformed",
            id="xml-non-ascii-in-us-ascii",
        ),
        pytest.param(
            b'{"exitcode": 0, "summary": {}, "tests": [{"nodeid": "\xff", "outcome": "passed"}]}',
            "malformed",
            id="json-invalid-byte",
        ),
        pytest.param(
            b'{"exitcode": 0, "summary": {}, "tests": [{"nodeid": "\xed\xa0\x80", "outcome": "passed"}]}',
            "malformed",
            id="json-encoded-surrogate",
        ),
        pytest.param(
            b'{"exitcode": 0, "summary": {}, "tests": [{"nodeid": "\\ud800", "outcome": "passed"}]}',
            "malformed",
            id="json-lone-surrogate-escape",
        ),
        pytest.param(
            b'{"exitcode": 0, "summary": {}, "tests": [{"nodeid": "\\ud83d\\ude00", "outcome": "passed"}]}',
            "ok",
            id="json-surrogate-pair-escape",
        ),
    ],
)
def test_invalid_utf8(tmp_path, data, expected):
    assert kind(bounded_in_both([write_stream(tmp_path / "r", [data])])) == expected


JUNIT_SAMPLE = (
    '<?xml version="1.0" encoding="{enc}"?>\n<testsuites><testsuite name="pytest">'
    '<testcase classname="tests.test_é" name="test_ok" time="0.5"/>'
    '<testcase classname="tests.test_é" name="test_bad[😀]" time="1,25"><failure message="AssertionError: ☃ != 𝔘">'
    "E   AssertionError: ☃ != 𝔘\ntests/test_é.py:3: AssertionError</failure></testcase>"
    "</testsuite></testsuites>\n"
)


@pytest.mark.parametrize(("codec", "bom"), [("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff")])
def test_utf16_with_bom_equals_the_utf8_report(tmp_path, codec, bom):
    utf8 = tmp_path / "utf8" / "r.xml"
    utf16 = tmp_path / "utf16" / "r.xml"
    utf8.parent.mkdir()
    utf16.parent.mkdir()
    write_stream(utf8, [JUNIT_SAMPLE.format(enc="UTF-8").encode()])
    write_stream(utf16, [bom + JUNIT_SAMPLE.format(enc="UTF-16").encode(codec)])
    a, b = bounded_in_both([str(utf8)]), bounded_in_both([str(utf16)])
    assert kind(a) == kind(b) == "ok"
    sa, sb = summary(a), summary(b)
    sa.pop("files"), sb.pop("files")
    assert sa == sb
    assert sa["counts"]["failed"] == 1 and sa["failures"][0]["node_id"] == "tests/test_é.py::test_bad[😀]"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(b"\xff\xfe" + '{"exitcode": 0, "summary": {}}'.encode("utf-16-le"), None, id="utf16-json"),
        pytest.param(
            '<testsuite><testcase name="a"/></testsuite>'.encode("utf-16-le"), "malformed", id="utf16-xml-without-bom"
        ),
        pytest.param(
            b"\xff\xfe" + '<?xml version="1.0" encoding="UTF-8"?><testsuite/>'.encode("utf-16-le"),
            None,
            id="utf16-bom-declares-utf8",
        ),
        pytest.param(b"\xff\xfe<\x00t\x00", "malformed", id="utf16-truncated"),
        pytest.param(b"\xff\xfe<\x00", "malformed", id="utf16-odd-length"),
        pytest.param(b"\xef\xbb\xbf\xef\xbb\xbf<testsuite/>", None, id="double-bom"),
        pytest.param(
            b'<?xml version="1.0" encoding="UTF-32"?><testsuite/>', "unsupported_encoding", id="utf32-declared"
        ),
        pytest.param(
            b'<?xml version="1.0" encoding="EBCDIC-US"?><testsuite/>', "unsupported_encoding", id="ebcdic-declared"
        ),
    ],
)
def test_mixed_and_odd_encodings(tmp_path, data, expected):
    r = bounded_in_both([write_stream(tmp_path / "r", [data])])
    if expected is not None:
        assert kind(r) == expected


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(b"\x00<testsuite/>", "not_a_report", id="nul-first"),
        pytest.param(b"<testsuite>\x00</testsuite>", "malformed", id="xml-nul-in-text"),
        pytest.param(b'<testsuite><testcase name="a\x00b"/></testsuite>', "malformed", id="xml-nul-in-attribute"),
        pytest.param(b"<testsuite/>\x00", "malformed", id="xml-nul-after-root"),
        pytest.param(b'<testsuite><testcase name="a&#0;b"/></testsuite>', "malformed", id="xml-nul-char-ref"),
        pytest.param(
            b'{"exitcode": 0, "summary": {}, "tests": [{"nodeid": "a\x00", "outcome": "passed"}]}',
            "malformed",
            id="json-raw-nul-in-string",
        ),
        pytest.param(b'{"exitcode": 0, "summary": {}}\x00', "malformed", id="json-nul-after-root"),
        pytest.param(
            b'{"exitcode": 1, "summary": {}, "tests": [{"nodeid": "a\\u0000b", "outcome": "failed",'
            b' "call": {"duration": 0, "outcome": "failed", "longrepr": "E  x\\u0000y"}}]}',
            "ok",
            id="json-escaped-nul",
        ),
    ],
)
def test_nul_bytes(tmp_path, data, expected):
    assert kind(bounded_in_both([write_stream(tmp_path / "r", [data])])) == expected


def _json_test(duration: bytes = b"1", lineno: bytes = b"3", exitcode: bytes = b"1") -> bytes:
    return (
        b'{"exitcode": ' + exitcode + b', "summary": {}, "tests": [{"nodeid": "t.py::a", "outcome": "failed", '
        b'"call": {"duration": '
        + duration
        + b', "outcome": "failed", "crash": {"path": "t.py", "lineno": '
        + lineno
        + b', "message": "boom"}}}]}'
    )


@pytest.mark.parametrize(
    ("data", "expected", "duration_s"),
    [
        pytest.param(_json_test(duration=b"1e400"), "malformed", None, id="json-duration-overflows-a-double"),
        pytest.param(_json_test(duration=b"-1e400"), "malformed", None, id="json-duration-overflows-negative"),
        pytest.param(_json_test(duration=b"1e-400"), "ok", 0.0, id="json-duration-underflows"),
        pytest.param(_json_test(duration=b"1e308"), "ok", 0.0, id="json-duration-huge-finite"),
        pytest.param(_json_test(duration=b"9223372036854775807"), "ok", 0.0, id="json-duration-max-i64"),
        pytest.param(_json_test(duration=b"9223372036854775808"), "malformed", None, id="json-duration-beyond-i64"),
        pytest.param(_json_test(duration=b"-0"), "ok", 0.0, id="json-duration-negative-zero"),
        pytest.param(_json_test(duration=b"0.0000005"), "ok", 1e-6, id="json-duration-rounds-half-up"),
        pytest.param(_json_test(duration=b"1" + b"0" * 400), "malformed", None, id="json-duration-400-digits"),
        pytest.param(_json_test(duration=b"0." + b"0" * 400 + b"1"), "ok", 0.0, id="json-duration-400-fraction-digits"),
        pytest.param(_json_test(lineno=b"18446744073709551616"), "malformed", None, id="json-lineno-beyond-u64"),
        pytest.param(_json_test(lineno=b"-5"), "ok", 1.0, id="json-lineno-negative"),
        pytest.param(_json_test(lineno=b"1.5"), "malformed", None, id="json-lineno-not-integer"),
        pytest.param(_json_test(exitcode=b"1e400"), "malformed", None, id="json-exitcode-overflows"),
        pytest.param(b'<testsuite><testcase name="a" time="1e400"/></testsuite>', "ok", 0.0, id="junit-time-overflows"),
        pytest.param(
            b'<testsuite><testcase name="a" time="1e-400"/></testsuite>', "ok", 0.0, id="junit-time-underflows"
        ),
        pytest.param(
            b'<testsuite><testcase name="a" time="' + b"9" * 5000 + b'"/></testsuite>',
            "ok",
            0.0,
            id="junit-time-5000-digits",
        ),
        pytest.param(
            b'<testsuite><testcase name="a" line="99999999999999999999999"><failure/></testcase></testsuite>',
            "ok",
            0.0,
            id="junit-line-beyond-u64",
        ),
    ],
)
def test_numbers_out_of_range(tmp_path, data, expected, duration_s):
    r = bounded_in_both([write_stream(tmp_path / "r", [data])])
    assert kind(r) == expected
    if expected == "ok":
        assert summary(r)["duration_s"] == duration_s


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(b'{"exitcode": 0, "exitcode": 1, "summary": {}}', "malformed", id="json-duplicate-exitcode"),
        pytest.param(
            b'{"exitcode": 0, "summary": {}, "tests": [], "tests": []}', "malformed", id="json-duplicate-tests"
        ),
        pytest.param(
            b'{"exitcode": 0, "summary": {}, "tests": [{"nodeid": "a", "nodeid": "b", "outcome": "passed"}]}',
            "malformed",
            id="json-duplicate-nodeid",
        ),
        pytest.param(
            b'{"exitcode": 0, "summary": {}, "tests": [{"nodeid": "a", "outcome": "passed", "outcome": "failed"}]}',
            "malformed",
            id="json-duplicate-outcome",
        ),
        pytest.param(
            b'{"exitcode": 0, "summary": {}, "x": 1, "x": 2,'
            b' "tests": [{"nodeid": "a", "outcome": "passed", "k": 1, "k": 2}]}',
            "ok",
            id="json-duplicate-ignored-keys",
        ),
        pytest.param(
            b'<testsuite><testcase name="a" name="b"/></testsuite>', "malformed", id="xml-duplicate-attribute"
        ),
        pytest.param(
            b"<testsuite><testcase name='a' time='1' time='2'/></testsuite>", "malformed", id="xml-duplicate-time"
        ),
    ],
)
def test_duplicate_keys_and_attributes(tmp_path, data, expected):
    assert kind(bounded_in_both([write_stream(tmp_path / "r", [data])])) == expected


# --------------------------------------------------------------------------------------
# A file that changes while being read


def _grow(path: Path, stop: threading.Event, finish: bytes | None, after_s: float) -> None:
    """Append test cases to ``path`` until ``stop`` (then ``finish``, if given, closes
    the document after ``after_s`` seconds)."""
    start = time.monotonic()
    i = 0
    with open(path, "ab") as f:
        while not stop.is_set():
            if finish is not None and time.monotonic() - start > after_s:
                f.write(finish)
                f.flush()
                return
            f.write(b"".join(b'<testcase name="grow%d" time="0.001"/>' % (i + k) for k in range(200)))
            f.flush()
            i += 200
            time.sleep(0.05)


@pytest.mark.parametrize(
    "finish",
    [pytest.param(None, id="never-closed"), pytest.param(b"</testsuite></testsuites>", id="closed-later")],
)
def test_a_file_that_grows_while_being_read(tmp_path, backend, finish):
    """Either the reader reaches the (current) end first: the document is unfinished,
    ``malformed``; or the writer closes it first: a summary of every test written."""
    path = tmp_path / "growing.xml"
    path.write_bytes(
        b'<testsuites><testsuite name="pytest">' + b"".join(b'<testcase name="t%d"/>' % i for i in range(50_000))
    )
    stop = threading.Event()
    writer = threading.Thread(target=_grow, args=(path, stop, finish, 0.5), daemon=True)
    writer.start()
    try:
        r = measure([str(path)], backend, MEMORY_BOUND_MB)
    finally:
        stop.set()
        writer.join(timeout=10)
    assert r.result[0] in ("ok", "error"), r
    assert r.growth_kb <= MEMORY_BOUND_MB * 1024
    if r.result[0] == "error":
        assert r.kind == "malformed"
    else:
        assert finish is not None
        assert r.summary["counts"]["passed"] >= 50_000


def test_a_file_that_shrinks_while_being_read(tmp_path, backend):
    """Truncated by another process mid-read: an error or a summary, never a crash."""
    path = tmp_path / "shrinking.xml"
    body = b"".join(b'<testcase name="t%d"><failure message="m"/></testcase>' % i for i in range(400_000))
    path.write_bytes(b"<testsuite>" + body + b"</testsuite>")

    def shrink():
        time.sleep(0.05)
        os.truncate(path, len(body) // 3)

    t = threading.Thread(target=shrink)
    t.start()
    r = measure([str(path)], backend, MEMORY_BOUND_MB)
    t.join()
    assert r.result[0] in ("ok", "error"), r
    if r.result[0] == "error":
        assert r.kind == "malformed"


# --------------------------------------------------------------------------------------
# Paths that are not regular files


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        pytest.param(lambda d: str(d), "unreadable", id="a-directory"),
        pytest.param(lambda d: str(d / "missing.xml"), "not_found", id="missing"),
        pytest.param(lambda d: "/dev/null", "not_a_report", id="dev-null"),
        pytest.param(lambda d: "/proc/self/status", "not_a_report", id="proc-file"),
    ],
)
def test_paths_that_are_not_reports(tmp_path, make: Callable[[Path], str], expected):
    assert kind(bounded_in_both([make(tmp_path)])) == expected
