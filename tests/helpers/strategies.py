"""Hypothesis strategies that build JUnit XML and pytest-json-report documents.

Used by the differential (native == pure) fuzz tests (test_property_parity.py). Nothing
here imports the engine: a strategy builds a *logical* report first (tests, retries,
collection errors, durations), renders it into bytes with a random choice of the
dialect's features, and keeps the *truth* the summary must show (docs/ENGINE.md).

Shapes:

* ``junit_docs(prefix="")`` / ``json_docs(prefix="")`` -> ``Doc``: a valid document
  (``Doc.data``: bytes, UTF-8 / latin-1 / US-ASCII / UTF-16 for JUnit) and its
  ``Truth``. ``prefix`` makes every node id unique across several documents (shards).
* ``valid_docs()``: either of the two.
* ``copied_failures_docs()`` -> ``Doc``: a pytest report (JUnit or pytest-json) whose
  failures copy a few test bodies into several files with other numbers (the engine's
  ``same_as``), and its ``Truth``.
* ``mutated_docs()`` -> ``Doc`` with ``truth=None``: a valid document damaged by 1-3
  mutations (truncated, bytes flipped, tags unbalanced, attributes or keys duplicated,
  encodings mixed, DOCTYPE injected, wrong JSON types, ...). Any outcome is allowed as
  long as both backends agree.
* ``budgets_dicts()`` -> dict of the nine budgets (small values, to make every cut
  happen), ready for ``Budgets(**d)``.

Truth (what a correct summary says, computed here from the spec, not from a backend):
counts by outcome (retries merged: consecutive equal node ids are one test whose
outcome is the last attempt's; ``flaky`` when the attempts include a pass and a
failure/error, or for a JUnit ``flakyFailure``/``flakyError`` without failure), the
sum of the durations in microseconds, the failing tests ``(node_id, outcome, phase)``
in report order, the collection errors' paths, and every test's ``(node_id,
duration_us)`` (for *slowest*).
"""

from __future__ import annotations

import itertools
import json
import math
import random
import re
from dataclasses import dataclass, field, replace

from hypothesis import strategies as st

# --------------------------------------------------------------------------------------
# Truth


@dataclass(frozen=True)
class Truth:
    """What a correct summary of a document shows.

    ``tests``: one ``(node_id, outcome, phase, flaky, duration_us)`` per test in report
    order (retries merged), and one ``(node_id, "subtest-failed" | "subtest-passed",
    phase, False, 0, label)`` per subtest record. ``collection_errors``: paths in report
    order. ``passed_with_failed_subtests``: tests pytest counted passed although their
    subtests failed (docs/ENGINE.md, *Subtests*). ``session_adjust_us``: what the
    summary's ``duration_s`` adds to the tests' sum, in microseconds: for a file with
    pytest's session time (pytest-json-report's top-level ``duration``) that time minus
    the file's tests' sum, else 0; shards add theirs up (docs/ENGINE.md, *Summary JSON*).
    """

    format: str
    tests: tuple[tuple, ...]
    collection_errors: tuple[str, ...]
    passed_with_failed_subtests: int = 0
    session_adjust_us: int = 0

    @property
    def counts(self) -> dict[str, int]:
        """The ``counts`` object of the summary (key order as written)."""
        by = {"passed": 0, "failed": 0, "error": 0, "skipped": 0, "xfailed": 0, "xpassed": 0}
        subtests = {"subtest-passed": 0, "subtest-failed": 0}
        for t in self.tests:
            if t[1] in subtests:
                subtests[t[1]] += 1
            else:
                by[t[1]] += 1
        errors = by["error"] + len(self.collection_errors)
        total = sum(by.values()) + len(self.collection_errors)
        return {
            "total": total,
            "passed": by["passed"],
            "failed": by["failed"],
            "errors": errors,
            "skipped": by["skipped"],
            "xfailed": by["xfailed"],
            "xpassed": by["xpassed"],
            "flaky": sum(1 for t in self.tests if t[3]),
            "subtests_passed": subtests["subtest-passed"],
            "subtests_failed": subtests["subtest-failed"],
            "passed_with_failed_subtests": self.passed_with_failed_subtests,
        }

    @property
    def total_us(self) -> int:
        return min(sum(t[4] for t in self.tests), 2**64 - 1)

    @property
    def duration_us(self) -> int:
        """The summary's ``duration_s`` in microseconds: the files' session times, and
        the tests' sum of those without one."""
        return min(max(self.total_us + self.session_adjust_us, 0), 2**64 - 1)

    @property
    def failures(self) -> list[tuple[str, str, str | None]]:
        return [
            (t[0], "failed" if t[1] == "subtest-failed" else t[1], t[2])
            for t in self.tests
            if t[1] in ("failed", "error", "subtest-failed")
        ]

    @property
    def failure_labels(self) -> list[str | None]:
        """The ``subtest`` field of each failure (None for a test)."""
        return [t[5] if len(t) > 5 else None for t in self.tests if t[1] in ("failed", "error", "subtest-failed")]

    def slowest(self, n: int) -> list[tuple[str, float]]:
        ranked = sorted(
            ((-t[4], i, t[0], t[4]) for i, t in enumerate(self.tests) if t[4] > 0),
        )
        return [(node, us / 1e6) for _, _, node, us in ranked[:n]]

    def __add__(self, other: Truth) -> Truth:
        """The truth of two shards summarised together (input order)."""
        return Truth(
            self.format,
            self.tests + other.tests,
            self.collection_errors + other.collection_errors,
            self.passed_with_failed_subtests + other.passed_with_failed_subtests,
            self.session_adjust_us + other.session_adjust_us,
        )


@dataclass(frozen=True)
class Doc:
    """A generated report: its format, bytes, truth (None for mutated documents) and
    the dialect features it uses (labels for ``hypothesis.event``)."""

    format: str
    data: bytes
    truth: Truth | None
    features: frozenset[str] = field(default_factory=frozenset)


# --------------------------------------------------------------------------------------
JSON_SESSION_S = 0.1496751308441162
"""The top-level ``duration`` (pytest's session seconds) of a generated pytest-json-report
document that has one."""

# The duration rule of docs/ENGINE.md, written again from the spec (not imported).

_PLAIN = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")


def expected_us(raw: str | None, junit: bool) -> int:
    """Seconds as text -> integer microseconds, by the documented rule (0 if invalid)."""
    if raw is None:
        return 0
    s = raw.strip(" \t\r\n")
    if junit and "," in s:
        s = s.replace(",", "") if "." in s else s.replace(",", ".")
    if not _PLAIN.match(s):
        return 0
    x = float(s)
    if not math.isfinite(x) or x < 0 or x >= 1e9:
        return 0
    return math.floor(x * 1e6 + 0.5)


# --------------------------------------------------------------------------------------
# Characters and texts

# Characters that stress escaping, normalisation, grouping and UTF-8 boundaries.
SPECIAL_CHARS = [
    "<",
    ">",
    "&",
    '"',
    "'",
    "]",
    "\t",
    "\n",
    "\r",
    " ",
    ":",
    ".",
    "/",
    "\\",
    "_",
    "E",
    "é",
    "ß",
    "\u00a0",
    "\u0085",
    "\u2028",
    "\u200b",
    "\u05d0",
    "\u0301",
    "…",
    "€",
    "\U0001f600",
    "\U0001d518",
    "\U00010348",
    "\ufffd",
    "\U0010fffd",
    "\x7f",
    "\x80",
    "\x9f",
]

# Valid XML 1.0 characters (no other controls, no surrogates, no U+FFFE/U+FFFF).
xml_chars = st.one_of(
    st.sampled_from(SPECIAL_CHARS),
    st.characters(min_codepoint=0x20, max_codepoint=0x7E),
    st.characters(
        exclude_categories=("Cs", "Cc"),
        exclude_characters="\ufffe\uffff",
    ),
)
# Any character a JSON string can carry (escaped as needed); lone surrogates excluded.
json_chars = st.one_of(
    xml_chars,
    st.characters(max_codepoint=0x1F),
)

ASCII_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def xml_text(max_size: int = 40) -> st.SearchStrategy[str]:
    return st.text(xml_chars, max_size=max_size)


_LINE_CHARS = st.one_of(
    st.sampled_from([c for c in SPECIAL_CHARS if c not in "\r\n\u0085\u2028:"]),
    st.characters(min_codepoint=0x20, max_codepoint=0x7E, exclude_characters=":"),
    st.characters(exclude_categories=("Cs", "Cc", "Zl", "Zp"), exclude_characters="\ufffe\uffff:\u0085"),
)


def xml_line(max_size: int = 30) -> st.SearchStrategy[str]:
    """A text without line breaks or ``:`` (for names and one-line messages)."""
    return st.text(_LINE_CHARS, max_size=max_size)


IDENT = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)
CLASS_IDENT = st.from_regex(r"(Test)?[A-Z][A-Za-z0-9_]{0,8}", fullmatch=True)

# Lines that look like pytest / Python / Java tracebacks, for the cutter and grouper.
TRACE_LINES = [
    "    def test_it(self):",
    "        x = compute()",
    ">       assert x == 1",
    "E       assert 2 == 1",
    "E       AssertionError: assert 'abc' == 'abd'",
    "E         - abd",
    "E         + abc",
    "E",
    "tests/test_mod.py:12: AssertionError",
    "tests/test_mod.py:40: in helper",
    "/usr/lib/python3.11/site-packages/lib/core.py:301: in run",
    "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _",
    "_ _",
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.11/site-packages/requests/api.py", line 59, in request',
    "    return session.request(method=method, url=url, **kwargs)",
    '  File "tests/test_net.py", line 8, in test_get',
    "    get('http://10.0.0.1:8080/x')",
    "ValueError: invalid literal for int() with base 10: 'abc'",
    "KeyError: 'user-42'",
    "ConnectionError: connection to 10.0.0.7:5432 refused after 3 retries",
    "TimeoutError: request 3f2a9c1e-7b1d-4c8e-9a2f-0c1d2e3f4a5b timed out after 30.5 s",
    "OSError: [Errno 2] No such file or directory: '/tmp/data/x.csv'",
    "java.lang.AssertionError: expected:<1> but was:<2>",
    "\tat org.junit.Assert.fail(Assert.java:88)",
    "\tat java.base/jdk.internal.reflect.NativeMethodAccessorImpl.invoke0(Native Method)",
    "\tat com.example.FooTest.testBar(FooTest.java:42)",
    "<frozen importlib._bootstrap>:1387: in _gcd_import",
    "self = <tests.test_mod.TestA object at 0x7f3a2b1c0d90>",
    "",
    "   ",
    "[gw0] linux -- Python 3.11.9 /usr/bin/python",
    # lines the shown-traceback rules rewrite (docs/ENGINE.md, *The shown traceback*)
    "    ^^^^^^^^^^^^",
    "             ~~~~^^^",
    "self = <tests.test_mod.CacheTest testMethod=test_clear>",
    "E       AssertionError: assert 'B' == 'C'",
    "E         - C",
    "E         + B",
    "E       assert {'a': 1} == {'a': 2}",
    "E         Omitting 1 identical items, use -vv to show",
    "E         Differing items:",
    "E         Full diff:",
    "E           {",
    "E         -     'a': 2,",
    "E         Use -v to get more diff",
    "E         ...Full output truncated (3 lines hidden), use '-vv' to show",
    # pytest 9.2's own default verbosity: its truncation without a count, a skipped prefix
    "E         ...Full output truncated, use '-vv' to show",
    "E         Skipping 1087 identical leading characters in diff, use -v to show",
    "tests/test_mod.py:12: KeyError",
    # a module that does not compile: its position as an `E` line is a frame
    'E     File "/srv/app/tests/test_mod.py", line 7',
    'E     File "/usr/lib/python3.11/site-packages/lib/core.py", line 3',
    "E       x = (1,",
    "E           ^",
    "E   SyntaxError: '(' was never closed",
    # a fixture lookup error's listing and closing line (docs/ENGINE.md, *Fixture lookup errors*)
    "file /srv/app/tests/conftest.py, line 9",
    "file tests/test_mod.py, line 3: source code not available",
    "  @pytest.fixture",
    "  def client(dbb):",
    "/srv/app/tests/conftest.py:9",
]

MESSAGES = [
    "AssertionError: assert 2 == 1",
    "assert 2 == 1",
    "ValueError: bad value 17",
    "KeyError: 'user-42'",
    "ConnectionError: connection to 10.0.0.7:5432 refused",
    'failed on setup with "ConnectionError: connection to 10.0.0.7:5432 refused"',
    'failed on teardown with "RuntimeError: resource was not released"',
    "Expected 'a.b' but got \"c d\" at /srv/app/x.py",
    "TimeoutError: id 3f2a9c1e-7b1d-4c8e-9a2f-0c1d2e3f4a5b after 1.25 s at 0xdeadBEEF",
    "expected:<1> but was:<2>",
    "  \n  AssertionError: leading blank lines",
    "  File \"/srv/app/tests/test_mod.py\", line 7\n    x = (1,\n        ^\nSyntaxError: '(' was never closed",
    "",
    " ",
]


# Whole texts of kinds the engine reads as a whole (docs/ENGINE.md, *Doctests*, *Fixture
# lookup errors*), whose lines drawn one by one would rarely make one; `{n}` is a line
# number drawn for each, `{p}` one of a few paths (so that several failures share a site).
WHOLE_TEXTS = [
    # a doctest's wrong value
    "00{n} >>> natural_list(['a', 'b'])\nExpected:\n    'a and b'\nGot:\n    'a & b'\n\n{p}:{n}: DocTestFailure",
    # an assertion at a test's line
    "    def test_it():\n>       assert f(1) == {n}\nE       assert 2 == {n}\n\ntests/test_mod.py:{n}: AssertionError",
    # an exception a test raised
    "    def test_it():\n>       raise KeyError('k{n}')\nE       KeyError: 'k{n}'\n\ntests/test_mod.py:{n}: KeyError",
    # a fixture pytest cannot give, asked for by a fixture of a conftest
    "file /srv/app/tests/test_mod.py, line 3\n  def test_it(client):\nfile {p}, line {n}\n  @pytest.fixture\n"
    "  def client(dbb):\nE       fixture 'dbb' not found\n>       available fixtures: cache, client\n"
    ">       use 'pytest --fixtures [testpath]' for help on them.\n\n{p}:{n}",
]
WHOLE_TEXT_PATHS = ["pkg/mod.py", "/srv/app/tests/conftest.py", "tests/conftest.py"]


@st.composite
def traceback_texts(draw, max_lines: int = 30) -> str:
    """A traceback-like text, sometimes huge (over the 128 KiB text cap), sometimes one
    of ``WHOLE_TEXTS`` (lines added before or after it, now and then)."""
    lines = draw(st.lists(st.one_of(st.sampled_from(TRACE_LINES), xml_line(60)), max_size=max_lines))
    if draw(st.integers(0, 3)) == 0:
        whole = draw(st.sampled_from(WHOLE_TEXTS)).format(
            n=draw(st.integers(1, 3)), p=draw(st.sampled_from(WHOLE_TEXT_PATHS))
        )
        lines = [whole] if draw(st.booleans()) else [*lines[:2], whole, *lines[2:3]]
    sep = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    text = sep.join(lines)
    if draw(st.integers(0, 60)) == 0:  # rarely: over the text cap, with multibyte chars
        unit = draw(st.sampled_from(["E   é€😀 line\n", "x" * 97 + "\n", "ab\U0001f600"]))
        text = text + unit * draw(st.integers(1, 300_000 // len(unit.encode())))
    return text


def _rng(draw) -> random.Random:
    """A plain PRNG seeded by one draw: rendering choices (escapes, spacing, attribute
    order) cost one draw instead of one per choice (``st.randoms`` is much slower)."""
    return random.Random(draw(st.integers(0, 2**32 - 1)))


# --------------------------------------------------------------------------------------
# XML rendering


def _representable(ch: str, charset: str) -> bool:
    o = ord(ch)
    if charset == "ascii":
        return o < 0x80
    if charset == "latin-1":
        return o < 0x100
    return True


def _charref(ch: str, rnd) -> str:
    o = ord(ch)
    style = rnd.randrange(4)
    if style == 0:
        return f"&#{o};"
    if style == 1:
        return f"&#x{o:X};"
    if style == 2:
        return f"&#x{o:x};"
    return f"&#000{o};"


def xml_escape_text(s: str, rnd, charset: str) -> str:
    """Character data whose parsed value is ``s`` (any valid XML char), in ``charset``.

    Characters the charset cannot carry become character references here, or (long
    texts, fast path) when the document is encoded with ``xmlcharrefreplace``."""
    if len(s) > 2000:
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#13;")
    out: list[str] = []
    for i, ch in enumerate(s):
        if ch == "&":
            out.append(rnd.choice(["&amp;", "&#38;", "&#x26;"]))
        elif ch == "<":
            out.append(rnd.choice(["&lt;", "&#60;", "&#x3c;"]))
        elif ch == ">":
            if i >= 1 and s[i - 1] == "]":
                out.append("&gt;")
            else:
                out.append(rnd.choice([">", ">", "&gt;"]))
        elif ch == '"':
            out.append(rnd.choice(['"', "&quot;"]))
        elif ch == "'":
            out.append(rnd.choice(["'", "&apos;"]))
        elif ch == "\r":
            out.append(rnd.choice(["&#13;", "&#xD;"]))  # a literal CR would become LF
        elif not _representable(ch, charset) or rnd.random() < 0.03:
            out.append(_charref(ch, rnd))
        else:
            out.append(ch)
    return "".join(out)


def xml_escape_attr(s: str, rnd, charset: str, quote: str) -> str:
    """An attribute value whose parsed (normalised) value is ``s``.

    Tabs, newlines and CRs are written as character references (a literal one would be
    normalised to a space); a space is sometimes written as a literal tab/LF/CR/CRLF,
    which the parser must normalise back to one space.
    """
    out: list[str] = []
    for ch in s:
        if ch == "&":
            out.append(rnd.choice(["&amp;", "&#38;"]))
        elif ch == "<":
            out.append(rnd.choice(["&lt;", "&#60;"]))
        elif ch == quote:
            out.append("&quot;" if quote == '"' else "&apos;")
        elif ch in "\t\n\r":
            out.append(_charref(ch, rnd))
        elif ch == " " and rnd.random() < 0.2:
            out.append(rnd.choice(["\t", "\n", "\r", "\r\n"]))
        elif not _representable(ch, charset) or rnd.random() < 0.03:
            out.append(_charref(ch, rnd))
        else:
            out.append(ch)
    return "".join(out)


def _ws(rnd) -> str:
    return rnd.choice(["", "", "\n", "\n  ", "\r\n", " ", "\t"])


class _XmlWriter:
    """Builds an XML document as a str in a given charset (ascii / latin-1 / full)."""

    def __init__(self, rnd, charset: str) -> None:
        self.rnd = rnd
        self.charset = charset
        self.parts: list[str] = []

    def start(self, name: str, attrs: list[tuple[str, str]], empty: bool = False) -> None:
        rnd = self.rnd
        attrs = list(attrs)
        rnd.shuffle(attrs)
        buf = ["<", name]
        for k, v in attrs:
            q = rnd.choice(['"', "'"])
            buf.append(rnd.choice([" ", " ", "\n    ", "\t"]))
            buf.append(k + rnd.choice(["=", "=", " = "]) + q + xml_escape_attr(v, rnd, self.charset, q) + q)
        buf.append(rnd.choice(["", "", " ", "\n"]))
        buf.append("/>" if empty else ">")
        self.parts.append("".join(buf))

    def end(self, name: str) -> None:
        self.parts.append(f"</{name}{self.rnd.choice(['', '', ' '])}>")

    def ws(self) -> None:
        self.parts.append(_ws(self.rnd))
        if self.rnd.random() < 0.05:
            self.parts.append(self.rnd.choice(["<!-- a comment - with dashes -->", "<?pi data?>", "<!---->"]))

    def text(self, s: str) -> None:
        """Character data with the parsed value ``s``, in random chunks (escaped text,
        CDATA sections, comments and PIs in between)."""
        rnd = self.rnd
        i = 0
        while i < len(s):
            n = rnd.choice([len(s), rnd.randrange(1, 50 if len(s) < 5000 else 20_000)])
            chunk = s[i : i + n]
            i += n
            r = rnd.random()
            if r < 0.25 and "\r" not in chunk and all(_representable(c, self.charset) for c in chunk):
                self.parts.append("<![CDATA[" + chunk.replace("]]>", "]]]]><![CDATA[>") + "]]>")
            else:
                self.parts.append(xml_escape_text(chunk, rnd, self.charset))
            if r > 0.97:
                self.parts.append(rnd.choice(["<!-- c -->", "<?x y?>"]))

    def raw(self, s: str) -> None:
        self.parts.append(s)

    def getvalue(self) -> str:
        return "".join(self.parts)


# --------------------------------------------------------------------------------------
# JUnit: node ids by the documented rule (written from docs/ENGINE.md)


def junit_node_id(classname: str | None, name: str, file: str | None, suite_name: str | None) -> str:
    """Node id of a testcase (docs/ENGINE.md, *Node id*, rules 1-3)."""
    c = classname or ""
    if file is not None and file.endswith(".py"):
        p = file[2:] if file.startswith("./") else file
        m = p[:-3].replace("/", ".").replace("\\", ".")
        if c == m:
            return f"{p}::{name}"
        if c.startswith(m + "."):
            return p + "::" + c[len(m) + 1 :].replace(".", "::") + "::" + name
    if suite_name == "pytest" and c:
        segs = c.split(".")
        k = len(segs)
        while k > 0 and segs[k - 1][:1] in tuple(ASCII_UPPER):
            k -= 1
        if k > 0:
            return "/".join(segs[:k]) + ".py" + "".join("::" + s for s in segs[k:]) + "::" + name
    return f"{c}::{name}" if c else name


def junit_collection_path(name: str, suite_name: str | None) -> str:
    """Path of a pytest collection error (``tests.test_x`` -> ``tests/test_x.py``)."""
    if suite_name == "pytest":
        return "/".join(name.split(".")) + ".py"
    return name


# Time attribute spellings: (text or None for absent).
JUNIT_TIMES = st.one_of(
    st.none(),
    st.floats(0, 100, allow_nan=False).map(lambda x: f"{x:.3f}"),
    st.floats(0, 5000).map(repr),
    st.sampled_from(
        [
            "0",
            "0.000",
            "1.5",
            " 2.25 ",
            "0,160",
            "1,234.5",
            "12,5",
            "",
            "abc",
            "inf",
            "nan",
            "NaN",
            "1e3",
            "1E-3",
            "-1",
            "-0.0",
            ".5",
            "5.",
            "1_000",
            "1e9",
            "999999999.9999",
            "0.0000005",
            "0.0000004999",
            "+3",
            "1e400",
            "\t7\n",
            "0x10",
            "1,2,3",
            "1.2.3",
        ]
    ),
)


@dataclass
class _Case:
    """One testcase element to render (an attempt of a logical test)."""

    attrs: list[tuple[str, str]]
    children: list[tuple[str, list[tuple[str, str]], str]]  # (tag, attrs, text)
    outcome: str  # passed/failed/error/skipped/xfailed or "collection"
    phase: str | None
    flaky: bool
    us: int


@st.composite
def _result_children(draw, kind: str, pytest_suite: bool = False):
    """The result children of a testcase whose intended outcome is ``kind``. In a pytest
    suite a failed case has one ``<failure>`` (several are subtests: ``_junit_subtests_test``).

    Returns (children, outcome, phase, flaky)."""
    children: list[tuple[str, list[tuple[str, str]], str]] = []

    def elem(tag: str, *, msg=True, typ=None, text=True):
        attrs: list[tuple[str, str]] = []
        if msg and draw(st.booleans()):
            attrs.append(("message", draw(st.one_of(st.sampled_from(MESSAGES), xml_text(30)))))
        t = (
            typ
            if typ is not None
            else draw(
                st.one_of(
                    st.none(),
                    st.sampled_from(["AssertionError", "ValueError", "", "java.lang.AssertionError", "pytest.skip"]),
                )
            )
        )
        if t is not None:
            attrs.append(("type", t))
        body = draw(traceback_texts()) if text else ""
        return (tag, attrs, body)

    outcome, phase, flaky = "passed", None, False
    if kind == "passed":
        pass
    elif kind == "flaky":
        for _ in range(draw(st.integers(1, 3))):
            children.append(elem(draw(st.sampled_from(["flakyFailure", "flakyError"]))))
        outcome, flaky = "passed", True
    elif kind == "failed":
        children.append(elem("failure"))
        extras = ["rerunFailure", "rerunError", "skipped"] + ([] if pytest_suite else ["failure"])
        for _ in range(draw(st.integers(0, 2))):
            children.append(elem(draw(st.sampled_from(extras))))
        outcome, phase = "failed", "call"
    elif kind == "error":
        msg = draw(
            st.one_of(
                st.none(),
                st.sampled_from(
                    [
                        'failed on setup with "ValueError: x"',
                        'failed on teardown with "RuntimeError: y"',
                        "failed on setup",
                        "failed on teardownX",
                        "Failed on setup",
                        " failed on setup",
                        "boom",
                        "collection failure!",
                    ]
                ),
                xml_text(20).filter(lambda m: m != "collection failure"),
            )
        )
        attrs = [] if msg is None else [("message", msg)]
        if draw(st.booleans()):
            attrs.append(("type", draw(st.sampled_from(["ValueError", "", "Error"]))))
        children.append(("error", attrs, draw(traceback_texts())))
        for _ in range(draw(st.integers(0, 2))):
            children.append(elem(draw(st.sampled_from(["failure", "error", "rerunError", "skipped"]))))
        outcome = "error"
        if msg is not None and msg.startswith("failed on setup"):
            phase = "setup"
        elif msg is not None and msg.startswith("failed on teardown"):
            phase = "teardown"
    elif kind == "skipped":
        children.append(
            elem(
                "skipped",
                typ=draw(st.sampled_from(["pytest.skip", "", "skip", "pytest.xfailed", None])) or None,
                text=draw(st.booleans()),
            )
        )
        outcome = "skipped"
    elif kind == "xpassed":
        # pytest's XPASS marker (checked before the xfail type)
        attrs = [("message", "xfail-marked test passes unexpectedly")]
        if draw(st.booleans()):
            attrs.append(("type", draw(st.sampled_from(["pytest.xfail", "pytest.skip", ""]))))
        children.append(("skipped", attrs, ""))
        if draw(st.booleans()):
            children.append(elem("skipped", typ="pytest.xfail", text=False))
        outcome = "xpassed"
    elif kind == "xfailed":
        children.append(elem("skipped", typ="pytest.xfail", text=draw(st.booleans())))
        if draw(st.booleans()):
            children.append(elem("skipped", typ="pytest.skip", text=False))
        outcome = "xfailed"
    else:  # pragma: no cover
        raise AssertionError(kind)
    # Non-result children anywhere among the results; a nested <testcase> is not a test
    # but an ordinary element (its own results do not count).
    for _ in range(draw(st.integers(0, 2))):
        tag = draw(st.sampled_from(["system-out", "system-err", "properties", "properties", "nested-testcase"]))
        if tag == "properties":
            children.append(("properties", [], ""))
        elif tag == "nested-testcase":
            children.append(("nested-testcase", [], ""))
        else:
            out = draw(xml_text(60))
            if draw(st.integers(0, 3)) == 0:
                out = draw(_captured_sections())
            if draw(st.integers(0, 40)) == 0:
                out = out + "0123456789abcdé\n" * draw(st.integers(1, 20_000))
            children.append((tag, [], out))
    designated = children[0] if kind not in ("passed", "flaky") else None
    _rng(draw).shuffle(children)
    if designated is not None:
        # the element that decides the outcome stays the first of its kind
        children.remove(designated)
        children.insert(0, designated)
    return children, outcome, phase, flaky


@st.composite
def _captured_sections(draw) -> str:
    """A ``system-out``/``system-err`` body as pytest writes it with ``junit_logging``:
    header lines (`` Captured Log `` centred in 80 ``-``, or near misses), each followed
    by text and a line break; sometimes text before the first header."""
    out = draw(st.sampled_from(["", "", "before\n", "-- x\n"]))
    for _ in range(draw(st.integers(1, 3))):
        title = draw(
            st.sampled_from([" Captured Log ", " Captured Out ", " Captured Err ", " Captured log ", "Captured Log"])
        )
        header = title.center(draw(st.sampled_from([80, 80, 20, 300])), "-")
        lines = draw(st.lists(st.one_of(xml_line(20), st.just("-" * 5), st.just("")), max_size=4))
        out += header + "\n" + "\n".join(lines) + "\n"
    return out


@st.composite
def _junit_identity(draw, prefix: str, index: int, pytest_suite: bool):
    """(classname or None, name, file or None) of one logical test."""
    name = f"test_{prefix}{index}" + draw(
        st.one_of(
            st.just(""),
            st.sampled_from(["[0]", "[a.b/c-1]", "[x y]", "[é😀]", "_with.dots", "[\\]", "[<&>]"]),
            xml_line(12).map(lambda s: "_" + s),
            xml_line(12).map(lambda s: "[" + s + "]"),
        )
    )
    modparts = draw(st.lists(IDENT, min_size=1, max_size=3))
    module = ".".join(modparts)
    classes = draw(st.lists(CLASS_IDENT, max_size=2))
    style = draw(st.sampled_from(["pytest", "pytest", "pytest_file", "java", "empty", "absent", "random"]))
    file = None
    if style == "pytest":
        classname = ".".join([module, *classes])
    elif style == "pytest_file":
        classname = ".".join([module, *classes])
        sep = draw(st.sampled_from(["/", "/", "\\"]))
        file = draw(st.sampled_from(["", "./"])) + sep.join(modparts) + ".py"
        if draw(st.integers(0, 4)) == 0:  # a file that does not match the classname
            file = "other/" + file.lstrip("./")
    elif style == "java":
        classname = "com.example." + draw(CLASS_IDENT)
        if draw(st.booleans()):
            file = "src/test/java/com/example/FooTest.java"
    elif style == "empty":
        classname = ""
    elif style == "absent":
        classname = None
    else:
        classname = draw(xml_line(20))
        if draw(st.booleans()):
            file = draw(xml_line(20))
    return classname, name, file


@st.composite
def _testcase_attrs(draw, classname: str | None, name: str, file: str | None):
    """The identity attributes of one ``<testcase>`` (``name``, then ``classname`` and
    ``file`` when given) plus a drawn ``time`` attribute (absent when None); returns the
    attribute list and the raw time text the truth rows are computed from."""
    attrs: list[tuple[str, str]] = [("name", name)]
    if classname is not None:
        attrs.append(("classname", classname))
    if file is not None:
        attrs.append(("file", file))
    time = draw(JUNIT_TIMES)
    if time is not None:
        attrs.append(("time", time))
    return attrs, time


@st.composite
def _junit_logical_test(draw, prefix: str, index: int, suite_name: str | None):
    """The testcase elements (1-3 attempts) of one logical test, and its truth row."""
    classname, name, file = draw(_junit_identity(prefix, index, suite_name == "pytest"))
    node_id = junit_node_id(classname, name, file, suite_name)
    attempts = draw(st.integers(1, 3)) if draw(st.integers(0, 4)) == 0 else 1
    kinds_single = ["passed", "passed", "failed", "error", "skipped", "xfailed", "xpassed", "flaky"]
    kinds_retry = ["passed", "failed", "error", "skipped", "xfailed", "xpassed"]
    cases: list[_Case] = []
    for _ in range(attempts):
        kind = draw(st.sampled_from(kinds_single if attempts == 1 else kinds_retry))
        children, outcome, phase, flaky = draw(_result_children(kind, suite_name == "pytest"))
        attrs, time = draw(_testcase_attrs(classname, name, file))
        if draw(st.booleans()):
            attrs.append(("line", draw(st.sampled_from(["12", "0", "x", "-3", "", "99999999999999999999"]))))
        if draw(st.integers(0, 5)) == 0:
            attrs.append(("assertions", "3"))
        cases.append(_Case(attrs, children, outcome, phase, flaky, expected_us(time, junit=True)))
    final = cases[-1]
    if attempts == 1:
        flaky = final.flaky
    else:
        outs = {c.outcome for c in cases}
        flaky = "passed" in outs and bool(outs & {"failed", "error"})
    row = (
        node_id,
        final.outcome,
        final.phase if final.outcome in ("failed", "error") else None,
        flaky,
        sum(c.us for c in cases),
    )
    return cases, row


_SUBTEST_MARKER = re.compile(r"contains [0-9]+ failed subtests?")


@st.composite
def _junit_subtests_test(draw, prefix: str, index: int, suite_name: str | None):
    """The testcase of one test with subtests as pytest 9 writes it (one ``<failure>`` per
    failed subtest, then the fixture flavour's ``contains N failed subtests``), with or
    without the server plugin's properties; its truth rows (subtest failures, passed
    subtests, the parent) and whether pytest counted the parent passed."""
    classname, name, file = draw(_junit_identity(prefix, index, True))
    node_id = junit_node_id(classname, name, file, suite_name)
    failed = draw(st.integers(1, 4))
    passed = draw(st.integers(0, 3))
    fixture_flavour = draw(st.booleans())
    with_properties = draw(st.booleans()) or (failed == 1 and not fixture_flavour)
    labels = [draw(st.one_of(st.just("(i=1)"), st.just("[case] (i=2, j=x)"), xml_line(12))) for _ in range(failed)]
    children: list[tuple[str, list[tuple[str, str]], str]] = []
    if with_properties:
        props = [("failed", label) for label in labels]
        for _ in range(passed):
            props.insert(draw(st.integers(0, len(props))), ("passed", draw(xml_line(10))))
        children.append(("subtest-properties", [(outcome, label) for outcome, label in props], ""))
    for _ in range(failed):
        message = draw(
            st.one_of(st.sampled_from(MESSAGES), xml_text(30)).filter(lambda m: not _SUBTEST_MARKER.fullmatch(m))
        )
        attrs = [("message", message)] if draw(st.booleans()) else []
        children.append(("failure", attrs, draw(traceback_texts())))
    if fixture_flavour:
        marker = f"contains {failed} failed subtest{'s' if failed > 1 else ''}"
        children.append(("failure", [("message", marker)], marker))
    attrs, time = draw(_testcase_attrs(classname, name, file))
    rows: list[tuple] = [
        (node_id, "subtest-failed", "call", False, 0, label if with_properties else "") for label in labels
    ]
    rows += [(node_id, "subtest-passed", None, False, 0, "")] * (passed if with_properties else 0)
    rows.append((node_id, "failed", "call", False, expected_us(time, junit=True)))
    return _Case(attrs, children, "failed", "call", False, expected_us(time, junit=True)), rows, not fixture_flavour


@st.composite
def _junit_collection_error(draw, prefix: str, index: int, suite_name: str | None):
    name = "tests.test_broken_" + prefix + str(index) + draw(st.sampled_from(["", ".sub_mod", ".a.b"]))
    classname = draw(st.sampled_from(["", "", "tests.test_mod.TestBroken", "tests.test_mod"]))
    attrs = [("name", name), ("classname", classname)]
    if draw(st.booleans()):
        attrs.append(("time", draw(st.sampled_from(["0.000", "1.5", "3"]))))
    err_attrs = [("message", "collection failure")]
    children = [("error", err_attrs, draw(traceback_texts()))]
    # a class that failed to collect (non-empty classname): the node id of rules 1-3
    path = junit_node_id(classname, name, None, suite_name) if classname else junit_collection_path(name, suite_name)
    return _Case(attrs, children, "collection", None, False, 0), path


@dataclass
class _Suite:
    name: str | None
    items: list  # _Case lists / ("collection", _Case) / _Suite


ENCODINGS = [
    # (charset, declared encoding or None, BOM bytes, python codec)
    ("full", None, b"", "utf-8"),
    ("full", "UTF-8", b"", "utf-8"),
    ("full", "utf-8", b"", "utf-8"),
    ("full", None, b"\xef\xbb\xbf", "utf-8"),
    ("full", "UTF-8", b"\xef\xbb\xbf", "utf-8"),
    ("full", "utf8", b"", "utf-8"),
    ("ascii", "US-ASCII", b"", "ascii"),
    ("ascii", "us-ascii", b"", "ascii"),
    ("ascii", "ASCII", b"", "ascii"),
    ("latin-1", "iso8859-1", b"", "latin-1"),
    ("latin-1", "ISO_8859-1", b"", "latin-1"),
    ("full", "utf16", b"\xff\xfe", "utf-16-le"),
    ("latin-1", "ISO-8859-1", b"", "latin-1"),
    ("latin-1", "iso-8859-1", b"", "latin-1"),
    ("latin-1", "latin-1", b"", "latin-1"),
    ("latin-1", "latin1", b"", "latin-1"),
    ("latin-1", "LATIN1", b"", "latin-1"),
    ("full", "UTF-16", b"\xff\xfe", "utf-16-le"),
    ("full", "utf-16", b"\xfe\xff", "utf-16-be"),
    ("full", None, b"\xff\xfe", "utf-16-le"),
    ("full", None, b"\xfe\xff", "utf-16-be"),
]


@st.composite
def junit_docs(draw, prefix: str = "") -> Doc:
    """A valid JUnit XML document with every dialect feature, and its truth."""
    features: set[str] = set()
    rnd = _rng(draw)
    counter = [0]
    rows: list[tuple] = []
    coll_paths: list[str] = []
    parents_passed = [0]

    def build_suite(depth: int, suite_name: str | None) -> _Suite:
        suite = _Suite(suite_name, [])
        n_items = draw(st.integers(0, 6 if depth < 2 else 3))
        for _ in range(n_items):
            what = draw(st.sampled_from(["test"] * 8 + ["collection", "suite", "subtests", "subtests"]))
            if what == "subtests" and suite_name == "pytest":
                i = counter[0]
                counter[0] += 1
                case, subtest_rows, parent_passed = draw(_junit_subtests_test(prefix, i, suite_name))
                suite.items.append([case])
                rows.extend(subtest_rows)
                parents_passed[0] += parent_passed
                features.add("subtests")
            elif what == "suite" and depth < 4:
                name = draw(st.sampled_from(["pytest", "pytest", "tests", "", None, "com.example.FooTest"]))
                suite.items.append(build_suite(depth + 1, name))
                features.add("nested-suite")
            elif what == "collection":
                i = counter[0]
                counter[0] += 1
                case, path = draw(_junit_collection_error(prefix, i, suite_name))
                suite.items.append([case])
                coll_paths.append(path)
                features.add("collection-error")
            else:
                i = counter[0]
                counter[0] += 1
                cases, row = draw(_junit_logical_test(prefix, i, suite_name))
                suite.items.append(cases)
                rows.append(row)
                if len(cases) > 1:
                    features.add("retries")
                features.add(f"outcome:{row[1]}")
                if row[3]:
                    features.add("flaky")
        return suite

    root_kind = draw(st.sampled_from(["testsuites", "testsuites", "testsuite"]))
    if root_kind == "testsuites":
        # testcases directly under <testsuites> have no enclosing suite
        top = build_suite(0, None)
    else:
        top = build_suite(1, draw(st.sampled_from(["pytest", "tests", None])))

    charset, declared, bom, codec = draw(st.sampled_from(ENCODINGS))
    features.add(f"encoding:{declared or ('bom' if bom else 'none')}")
    w = _XmlWriter(rnd, charset)
    if declared is not None or draw(st.booleans()):
        decl_attrs = ' version="1.0"'
        if declared is not None:
            decl_attrs += f' encoding="{declared}"'
        if draw(st.booleans()):
            decl_attrs += ' standalone="yes"'
        w.raw(f"<?xml{decl_attrs}?>")
    w.ws()
    if draw(st.integers(0, 8)) == 0:
        w.raw("<!-- generated by hypothesis -->")
        w.ws()

    def render_suite_attrs(s: _Suite) -> list[tuple[str, str]]:
        attrs = []
        if s.name is not None:
            attrs.append(("name", s.name))
        for k in draw(
            st.sets(
                st.sampled_from(["tests", "failures", "errors", "skipped", "time", "timestamp", "hostname"]), max_size=4
            )
        ):
            attrs.append((k, draw(st.sampled_from(["3", "0", "-1", "abc", "2020-09-04T16:18:04", "1.5"]))))
        return attrs

    def render_items(s: _Suite) -> None:
        for item in s.items:
            w.ws()
            if isinstance(item, _Suite):
                w.start("testsuite", render_suite_attrs(item))
                render_suite_body(item)
                w.end("testsuite")
            else:
                for case in item:
                    render_case(case)
                    w.ws()

    def render_suite_body(s: _Suite) -> None:
        if draw(st.integers(0, 4)) == 0:
            w.ws()
            w.start("properties", [])
            w.start("property", [("name", "python"), ("value", "3.11")], empty=True)
            w.end("properties")
            features.add("properties")
        render_items(s)
        if draw(st.integers(0, 5)) == 0:
            w.start("system-out", [])
            w.text(draw(xml_text(40)))
            w.end("system-out")
        w.ws()

    def render_case(case: _Case) -> None:
        if not case.children and rnd.random() < 0.5:
            w.start("testcase", case.attrs, empty=True)
            return
        w.start("testcase", case.attrs)
        for tag, attrs, body in case.children:
            w.ws()
            if tag == "properties":
                w.start("properties", [])
                w.start("property", [("name", "k"), ("value", "v &amp; w")], empty=True)
                w.end("properties")
                continue
            if tag == "subtest-properties":
                # the server plugin's properties: one per subtest report, in report order
                w.start("properties", [])
                for outcome, label in attrs:
                    value = f"{outcome} {label}"
                    w.start("property", [("name", "pytest_mcp_server.subtest"), ("value", value)], empty=True)
                w.end("properties")
                continue
            if tag == "nested-testcase":
                w.start("testcase", [("name", "inner"), ("classname", "nested")])
                w.start("error", [("message", "not a result of the outer case")], empty=True)
                w.start("skipped", [("type", "pytest.xfail")], empty=True)
                w.end("testcase")
                features.add("nested-testcase")
                continue
            if not body and rnd.random() < 0.5:
                w.start(tag, attrs, empty=True)
                continue
            w.start(tag, attrs)
            if body and rnd.random() < 0.1:
                # text split around a child element: all character data counts
                half = len(body) // 2
                w.text(body[:half])
                w.start("pre", [])
                w.text("nested")
                w.end("pre")
                w.text(body[half:])
                features.add("text-in-descendants")
            else:
                w.text(body)
            w.end(tag)
        w.ws()
        w.end("testcase")

    if root_kind == "testsuites":
        w.start("testsuites", [("name", "pytest tests")] if draw(st.booleans()) else [])
        render_items(top)
        w.ws()
        w.end("testsuites")
    else:
        w.start("testsuite", render_suite_attrs(top))
        render_suite_body(top)
        w.end("testsuite")
    w.ws()
    text = w.getvalue()
    # (only long texts still hold characters the charset lacks: see xml_escape_text)
    data = bom + text.encode(codec, "xmlcharrefreplace")
    if len(data) > 128 * 1024:
        features.add("huge")
    return Doc("junit", data, Truth("junit", tuple(rows), tuple(coll_paths), parents_passed[0]), frozenset(features))


# --------------------------------------------------------------------------------------
# JSON rendering (a tiny serializer: duplicate keys and exact number spellings allowed)


class Num(str):
    """A JSON number written exactly as this text."""


class Raw(str):
    """JSON text written as is (for mutations)."""


class Obj(list):
    """A JSON object as a list of (key, value) pairs: order kept, duplicates allowed."""


def json_escape(s: str, rnd, ascii_only: bool) -> str:
    """A JSON string literal for ``s`` with random escape spellings."""
    if len(s) > 2000:
        return json.dumps(s, ensure_ascii=ascii_only)
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "/" and rnd.random() < 0.3:
            out.append("\\/")
        elif o < 0x20:
            short = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}.get(ch)
            out.append(short if short and rnd.random() < 0.7 else f"\\u{o:04x}")
        elif (ascii_only and o > 0x7E) or rnd.random() < 0.02:
            if o > 0xFFFF:
                v = o - 0x10000
                hi, lo = 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)
                out.append(f"\\u{hi:04x}\\u{lo:04X}")
            else:
                out.append(rnd.choice([f"\\u{o:04x}", f"\\u{o:04X}"]))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def json_dump(value, rnd, ascii_only: bool = False, indent: int | None = None, level: int = 0) -> str:
    """Serialise ``Obj``/list/str/``Num``/``Raw``/bool/None/int/float with random spacing."""
    nl = "" if indent is None else "\n" + " " * (indent * (level + 1))
    nl_end = "" if indent is None else "\n" + " " * (indent * level)
    colon = rnd.choice([":", ": ", " : "]) if indent is None else ": "
    comma = rnd.choice([",", ", "]) if indent is None else ","
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, Num):
        return str(value)
    if isinstance(value, Obj):
        if not value:
            return "{}"
        items = [
            nl + json_escape(k, rnd, ascii_only) + colon + json_dump(v, rnd, ascii_only, indent, level + 1)
            for k, v in value
        ]
        return "{" + comma.join(items) + nl_end + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        items = [nl + json_dump(v, rnd, ascii_only, indent, level + 1) for v in value]
        return "[" + comma.join(items) + nl_end + "]"
    if isinstance(value, str):
        return json_escape(value, rnd, ascii_only)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    raise TypeError(type(value))  # pragma: no cover


JSON_DURATIONS = st.one_of(
    st.floats(0, 10, allow_nan=False).map(lambda x: Num(repr(x))),
    st.integers(0, 100).map(lambda x: Num(str(x))),
    st.sampled_from(
        [
            "0",
            "0.0",
            "-0",
            "-0.0",
            "1e-3",
            "1E+2",
            "2.5e0",
            "0.0000005",
            "0.0000004999",
            "-1",
            "1e9",
            "999999999.9999",
            "9223372036854775807",
            "1e308",
            "0.00015997886657714844",
            "1e-400",
            "-1e-400",
        ]
    ).map(Num),
)

JSON_ANY = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**63) + 1, 2**63 - 1),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(json_chars, max_size=10),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.lists(st.tuples(st.text(json_chars, max_size=6), children), max_size=4).map(Obj),
    ),
    max_leaves=12,
)


@st.composite
def _json_phase(draw, outcome: str, with_details: bool):
    fields: list[tuple[str, object]] = [("duration", draw(JSON_DURATIONS)), ("outcome", outcome)]
    if with_details:
        if draw(st.booleans()):
            crash = [
                (
                    "path",
                    draw(st.sampled_from(["/home/u/proj/tests/test_x.py", "tests/test_x.py", "/elsewhere/y.py", ""])),
                ),
                ("lineno", draw(st.integers(0, 10_000))),
                ("message", draw(st.one_of(st.sampled_from(MESSAGES), st.text(json_chars, max_size=30)))),
            ]
            _rng(draw).shuffle(crash)
            fields.append(("crash", Obj(crash)))
        if draw(st.booleans()):
            fields.append(
                ("traceback", [Obj([("path", "tests/test_x.py"), ("lineno", 3), ("message", "AssertionError")])])
            )
        if draw(st.booleans()):
            fields.append(("longrepr", draw(traceback_texts())))
    for stream in ("stdout", "stderr"):
        if draw(st.integers(0, 3)) == 0:
            out = draw(st.text(json_chars, max_size=40))
            if draw(st.integers(0, 15)) == 0:
                out = out + "captured é output\n" * draw(st.integers(1, 10_000))
            fields.append((stream, out))
    if draw(st.integers(0, 5)) == 0:
        fields.append(("log", [Obj([("name", "root"), ("msg", "hello"), ("levelno", 20), ("args", None)])]))
    elif draw(st.integers(0, 3)) == 0:
        fields.append(("log", draw(_json_log_records())))
    if draw(st.integers(0, 8)) == 0:
        fields.append(("extra_key", draw(JSON_ANY)))
    _rng(draw).shuffle(fields)
    return Obj(fields)


@st.composite
def _json_log_records(draw):
    """A phase's ``log``: pytest-json-report's record objects, some broken (a missing
    key, a wrong type), or not a list at all."""
    if draw(st.integers(0, 8)) == 0:
        return draw(st.sampled_from([None, "log", 3, Obj([("msg", "x")])]))
    records = []
    for _ in range(draw(st.integers(0, 4))):
        if draw(st.integers(0, 8)) == 0:
            records.append(draw(st.sampled_from([None, "text", 7, ["WARNING"]])))
            continue
        fields: list[tuple[str, object]] = [
            ("name", draw(st.sampled_from(["root", "app.db", "é"]))),
            ("msg", draw(st.one_of(st.sampled_from(MESSAGES), st.text(json_chars, max_size=30)))),
            ("args", None),
            ("levelname", draw(st.sampled_from(["WARNING", "ERROR", "INFO", "CRITICAL", "LEVEL 5"]))),
            ("levelno", 30),
            ("filename", draw(st.sampled_from(["test_x.py", "db.py"]))),
            ("lineno", draw(st.one_of(st.integers(-3, 10_000), st.just(Num("1.5")), st.just("12")))),
        ]
        if draw(st.integers(0, 6)) == 0:
            fields.pop(draw(st.integers(0, len(fields) - 1)))
        if draw(st.integers(0, 8)) == 0:
            fields.append(("msg", "a second msg"))
        if draw(st.integers(0, 20)) == 0:
            fields.append(("msg2", "long " * draw(st.integers(1, 5000))))
        _rng(draw).shuffle(fields)
        records.append(Obj(fields))
    return records


def _phases_for(outcome: str, draw) -> tuple[list[tuple[str, str]], str | None]:
    """Phase outcomes of a test with ``outcome``; returns ([(phase, phase_outcome)], phase
    of the failure by the rule 'first phase whose outcome is failed')."""
    if outcome == "passed" or outcome == "xpassed":
        plan = [("setup", "passed"), ("call", "passed"), ("teardown", "passed")]
    elif outcome == "failed":
        plan = [
            ("setup", "passed"),
            ("call", "failed"),
            ("teardown", draw(st.sampled_from(["passed", "passed", "failed"]))),
        ]
    elif outcome == "rerun":
        plan = [("setup", "passed"), ("call", "failed"), ("teardown", "passed")]
    elif outcome == "error":
        plan = draw(
            st.sampled_from(
                [
                    [("setup", "failed"), ("teardown", "passed")],
                    [("setup", "passed"), ("call", "passed"), ("teardown", "failed")],
                    [("setup", "passed"), ("call", "failed"), ("teardown", "failed")],
                ]
            )
        )
    elif outcome == "skipped":
        plan = draw(
            st.sampled_from(
                [
                    [("setup", "skipped"), ("teardown", "passed")],
                    [("setup", "passed"), ("call", "skipped"), ("teardown", "passed")],
                ]
            )
        )
    elif outcome == "xfailed":
        plan = [("setup", "passed"), ("call", "skipped"), ("teardown", "passed")]
    else:  # pragma: no cover
        raise AssertionError(outcome)
    # Some reports drop phases (e.g. a plugin), keep at least the order.
    if draw(st.integers(0, 10)) == 0:
        plan = [p for p in plan if draw(st.booleans())]
    phase = next((name for name, o in plan if o == "failed"), None)
    return plan, phase


@st.composite
def _json_test_entries(draw, prefix: str, index: int, root: str):
    """Entries (1-3 with reruns) of one logical test and its truth row."""
    module = draw(st.sampled_from(["tests/test_x.py", "test_create_report.py", "tests/sub dir/test_é.py", "a::b.py"]))
    cls = draw(st.sampled_from(["", "TestA::", "TestA::TestB::"]))
    suffix = draw(st.one_of(st.just(""), st.text(json_chars, max_size=8).map(lambda s: "[" + s + "]")))
    nodeid = f"{module}::{cls}test_{prefix}_{index}{suffix}"
    final = draw(st.sampled_from(["passed", "passed", "failed", "error", "skipped", "xfailed", "xpassed"]))
    reruns = draw(st.integers(0, 2)) if draw(st.integers(0, 4)) == 0 else 0
    # pytest-json-report leaves only `rerun` entries when the last attempt passed: a
    # chain not followed by its node id is a test that passed, flaky (ENGINE.md)
    lone = reruns > 0 and draw(st.integers(0, 3)) == 0
    attempts = ["rerun"] * reruns + ([] if lone else [final])
    entries = []
    total_us = 0
    phase = None
    for outcome in attempts:
        plan, phase = _phases_for(outcome, draw)
        # pytest 9 leaves the status word of a passed subtest as the outcome when a
        # subtest report came last: a passed test
        written = "subtests passed" if outcome == "passed" and draw(st.integers(0, 8)) == 0 else outcome
        fields: list[tuple[str, object]] = [("nodeid", nodeid), ("outcome", written)]
        if draw(st.booleans()):
            fields.append(("lineno", draw(st.integers(0, 500))))
        if draw(st.booleans()):
            fields.append(("keywords", [nodeid.rsplit("::", 1)[-1], "tests", ""]))
        for name, ph_outcome in plan:
            ph = draw(
                _json_phase(ph_outcome, ph_outcome == "failed" or (ph_outcome == "skipped" and draw(st.booleans())))
            )
            fields.append((name, ph))
            total_us += sum(expected_us(str(v), junit=False) for k, v in ph if k == "duration")
        if draw(st.integers(0, 6)) == 0:
            fields.append(("metadata", draw(JSON_ANY)))
        if draw(st.integers(0, 6)) == 0:
            fields.append(("user_properties", [["k", 1]]))
        _rng(draw).shuffle(fields)
        entries.append(Obj(fields))
    if lone:
        final, phase = "passed", None
    flaky = final == "passed" and reruns > 0
    row = (nodeid, final, phase if final in ("failed", "error") else None, flaky, min(total_us, 2**64 - 1))
    return entries, row


@st.composite
def json_docs(draw, prefix: str = "") -> Doc:
    """A valid pytest-json-report document (every key, omitted keys, reruns, collectors)."""
    features: set[str] = set()
    rnd = _rng(draw)
    root = draw(st.sampled_from(["/home/u/proj", "/tmp/pytest-of-user/pytest-40/test_create_report0", "C:\\proj", ""]))
    rows: list[tuple] = []
    tests: list[Obj] = []
    n = draw(st.integers(0, 12))
    for i in range(n):
        entries, row = draw(_json_test_entries(prefix, i, root))
        tests.extend(entries)
        rows.append(row)
        features.add(f"outcome:{row[1]}")
        if len(entries) > 1:
            features.add("reruns")
        if entries and ("outcome", "rerun") in entries[-1]:
            features.add("lone-rerun")
    collectors: list[Obj] = [
        Obj([("nodeid", ""), ("outcome", "passed"), ("result", [Obj([("nodeid", "tests"), ("type", "Dir")])])])
    ]
    coll_paths: list[str] = []
    for j in range(draw(st.integers(0, 3))):
        outcome = draw(st.sampled_from(["failed", "passed", "failed"]))
        nodeid = f"tests/test_broken_{prefix}{j}.py"
        fields: list[tuple[str, object]] = [("nodeid", nodeid), ("outcome", outcome), ("result", [])]
        if outcome == "failed":
            fields.append(("longrepr", draw(traceback_texts())))
            coll_paths.append(nodeid)
            features.add("collection-error")
        rnd.shuffle(fields)
        collectors.append(Obj(fields))
    summary = Obj([("total", len(rows)), ("collected", len(rows))])
    for k in draw(st.sets(st.sampled_from(["passed", "failed", "error", "skipped"]))):
        summary.append((k, draw(st.integers(0, 5))))
    top: list[tuple[str, object]] = [("exitcode", draw(st.sampled_from([0, 1, 2, 5]))), ("summary", summary)]
    if draw(st.booleans()) or coll_paths:
        top.append(("collectors", collectors))
    else:
        coll_paths = []
    if n or draw(st.booleans()):
        top.append(("tests", tests))
    else:
        features.add("no-tests-key")
    session_us = None
    for k in draw(st.sets(st.sampled_from(["created", "duration", "root", "environment", "warnings"]))):
        if k == "duration":  # by the duration rule: whole microseconds
            session_us = expected_us(repr(JSON_SESSION_S), junit=False)
        v = {
            "created": Num("1795268236.0547996"),
            "duration": Num(repr(JSON_SESSION_S)),
            "root": root,
            "environment": Obj([("Python", "3.11.9"), ("Plugins", Obj([("json-report", "1.5.0")]))]),
            "warnings": [Obj([("message", "deprecated"), ("category", "DeprecationWarning"), ("when", "collect")])],
        }[k]
        top.append((k, v))
    rnd.shuffle(top)
    indent = draw(st.sampled_from([None, None, 2]))
    ascii_only = draw(st.booleans())
    text = (
        draw(st.sampled_from(["", "\n", " \t\r\n"]))
        + json_dump(Obj(top), rnd, ascii_only, indent)
        + draw(st.sampled_from(["", "\n", "  \n"]))
    )
    bom = b"\xef\xbb\xbf" if draw(st.integers(0, 10)) == 0 else b""
    data = bom + text.encode("utf-8")
    if len(data) > 128 * 1024:
        features.add("huge")
    truth = Truth("pytest-json", tuple(rows), tuple(coll_paths))
    if session_us is not None:
        truth = replace(truth, session_adjust_us=session_us - truth.total_us)
    return Doc("pytest-json", data, truth, frozenset(features))


def valid_docs(prefix: str = "") -> st.SearchStrategy[Doc]:
    return st.one_of(junit_docs(prefix), json_docs(prefix))


# --------------------------------------------------------------------------------------
# Copied test bodies: failures whose texts repeat an earlier one's but for numbers and
# their own file (docs/ENGINE.md, *Failures*, ``same_as``)

# pytest's long-format texts of a few checks; ``{file}`` is the failing test's own file,
# ``{a}``, ``{b}``, ``{line}``, ``{line2}`` numbers (the values and the lines differ from copy
# to copy). Two share their first frame and differ only in the last: never one another's.
COPIED_BODIES = [
    (
        "    def test_total():\n>       check({a})\n\n{file}:{line}: \n"
        "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _\n\n"
        "total = {a}\n\n    def check(total):\n"
        '>       assert {{"total": total}} == {{"total": {b}}}\n'
        "E       AssertionError: assert {{'total': {a}}} == {{'total': {b}}}\n\n"
        "{file}:{line2}: AssertionError",
        "AssertionError: assert {{'total': {a}}} == {{'total': {b}}}",
    ),
    (
        "    def test_total():\n>       check({a})\n\n{file}:{line}: \n"
        "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _\n\n"
        "total = {a}\n\n    def check(total):\n"
        ">       assert total < {b}, f'{{total}} is too much'\n"
        "E       AssertionError: {a} is too much\n\n"
        "{file}:{line2}: AssertionError",
        "AssertionError: {a} is too much",
    ),
    (
        "    def test_sum():\n>       assert sum([{a}, 2]) == {b}\nE       assert {a} == {b}\n"
        "E        +  where {a} = sum([{a}, 2])\n\n{file}:{line}: AssertionError",
        "assert {a} == {b}",
    ),
    (
        "    def test_load():\n"
        "        path = '{file}.data'\n"
        ">       open(path)\n"
        "E       FileNotFoundError: [Errno {a}] No such file or directory: '{file}.data'\n\n"
        "{file}:{line}: FileNotFoundError",
        "FileNotFoundError: [Errno {a}] No such file or directory: '{file}.data'",
    ),
]

# Test files, some with digits of their own (replaced as the file before digits are).
COPIED_FILES = ["tests/test_a.py", "tests/test_b.py", "tests/sub/test_c2.py", "test_d.py"]

# A number as written: ASCII digits, or in a third of the documents sometimes
# Arabic-Indic or fullwidth digits, which are text, not numbers, to the rule (Python's
# ``\\d`` would take them: a copy would then pass for another).
_ASCII_NUMBERS = st.integers(0, 300).map(str)
_MIXED_NUMBERS = st.one_of(
    *[_ASCII_NUMBERS] * 5, st.sampled_from(["\u0663", "\u0661\u0662", "\uff17", "3\u0663", "\u0664"])
)


# (stdout, stderr) of a copied body, with the same placeholders
COPIED_OUTPUTS = st.tuples(
    st.sampled_from([None, "run {a} of {b}\n", "seed {a}\n{file} done\n"]),
    st.sampled_from([None, None, "warning: {a}\n"]),
)


@st.composite
def copied_failures_docs(draw) -> Doc:
    """A pytest report (JUnit XML as pytest writes it, or pytest-json-report) of failing
    tests whose texts are one of ``COPIED_BODIES`` with their own file and drawn numbers
    (so many repeat an earlier failure but for numbers and their file), with captured
    output that repeats too, some passing tests between them, and its truth."""
    fmt = draw(st.sampled_from(["junit", "pytest-json"]))
    # each test's time as _copied_junit / _copied_json write it
    if fmt == "junit":
        us = expected_us("0.001", junit=True)
    else:
        us = sum(expected_us(t, junit=False) for t in ("0.0001", "0.0008", "0.0001"))
    rows: list[tuple] = []
    cases: list[tuple[str, str, str, str | None, str | None]] = []  # node id, message, text, stdout, stderr
    outputs = [draw(COPIED_OUTPUTS) for _ in COPIED_BODIES]
    numbers_as = _MIXED_NUMBERS if draw(st.integers(0, 2)) == 0 else _ASCII_NUMBERS
    for i in range(draw(st.integers(2, 10))):
        file = draw(st.sampled_from(COPIED_FILES))
        name = draw(st.sampled_from(["test_total", "test_sum", "test_load"])) + draw(
            st.sampled_from(["", f"[{i}]", f"[{i}-x]"])
        )
        node_id = f"{file}::{name}"
        if any(case[0] == node_id for case in cases):  # one result per test
            continue
        if draw(st.integers(0, 3)) == 0:
            rows.append((node_id, "passed", None, False, us))
            cases.append((node_id, "", "", None, None))
            continue
        which = draw(st.integers(0, len(COPIED_BODIES) - 1))
        body, message = COPIED_BODIES[which]
        numbers = {key: draw(numbers_as) for key in ("a", "b", "line", "line2")}
        text = body.format(file=file, **numbers)
        # a body's copies print alike, mostly
        stdout, stderr = outputs[which] if draw(st.integers(0, 4)) else draw(COPIED_OUTPUTS)
        cases.append(
            (
                node_id,
                message.format(file=file, **numbers),
                text,
                None if stdout is None else stdout.format(file=file, **numbers),
                None if stderr is None else stderr.format(file=file, **numbers),
            )
        )
        rows.append((node_id, "failed", "call", False, us))
    if fmt == "junit":
        data = _copied_junit(cases)
    else:
        data = _copied_json(cases)
    features = frozenset({f"copied:{fmt}"})
    return Doc(fmt, data, Truth(fmt, tuple(rows), ()), features)


def _copied_junit(cases: list[tuple[str, str, str, str | None, str | None]]) -> bytes:
    """pytest's JUnit XML of ``cases`` (node id, message, text, stdout, stderr; a passed
    test has no text): one ``<testcase>`` each, 1 ms."""
    from xml.sax.saxutils import escape, quoteattr

    out = ['<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest">']
    for node_id, message, text, stdout, stderr in cases:
        path, _, name = node_id.partition("::")
        classname = path.removesuffix(".py").replace("/", ".")
        assert junit_node_id(classname, name, None, "pytest") == node_id, node_id
        out.append(f'<testcase classname={quoteattr(classname)} name={quoteattr(name)} time="0.001">')
        if text:
            out.append(f"<failure message={quoteattr(message)}>{escape(text)}</failure>")
        for tag, tail in (("system-out", stdout), ("system-err", stderr)):
            if tail is not None:
                out.append(f"<{tag}>{escape(tail)}</{tag}>")
        out.append("</testcase>")
    out.append("</testsuite></testsuites>")
    return "".join(out).encode("utf-8")


def _copied_json(cases: list[tuple[str, str, str, str | None, str | None]]) -> bytes:
    """pytest-json-report's document of ``cases`` (as ``_copied_junit``'s): setup, call
    and teardown of 1 ms in all (a failure's call carries its crash line, text and
    output)."""
    tests = []
    for node_id, message, text, stdout, stderr in cases:
        call: dict[str, object] = {"duration": 0.0008, "outcome": "failed" if text else "passed"}
        if text:
            call["crash"] = {"path": "/home/u/proj/" + node_id.partition("::")[0], "lineno": 3, "message": message}
            call["longrepr"] = text
        for stream, tail in (("stdout", stdout), ("stderr", stderr)):
            if tail is not None:
                call[stream] = tail
        tests.append(
            {
                "nodeid": node_id,
                "outcome": "failed" if text else "passed",
                "setup": {"duration": 0.0001, "outcome": "passed"},
                "call": call,
                "teardown": {"duration": 0.0001, "outcome": "passed"},
            }
        )
    document = {"root": "/home/u/proj", "exitcode": 1, "summary": {"total": len(tests)}, "tests": tests}
    return json.dumps(document, ensure_ascii=False).encode("utf-8")


# --------------------------------------------------------------------------------------
# Mutations

INTERESTING_BYTES = [
    b"<",
    b">",
    b"&",
    b"\x00",
    b"\xff",
    b"\xfe",
    b"\xc3",
    b"\xe2\x82",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"]]>",
    b"<!DOCTYPE x>",
    b"&unknown;",
    b"&#0;",
    b"&#xD800;",
    b"&#x110000;",
    b"&#99999999999;",
    b"&amp",
    b"<!--",
    b"-->",
    b"<?",
    b"?>",
    b"<![CDATA[",
    b"</testcase>",
    b"<testcase name='x'>",
    b"<testsuite>",
    b'"',
    b"'",
    b"\\",
    b"\\u",
    b"\\ud800",
    b"\\udc00",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"1e999",
    b"-",
    b"null",
    b"\r",
    b"\n",
    b"\xef\xbb\xbf",
    b"\xff\xfe",
    b'"nodeid"',
    b'"tests":',
    b"\x80",
]

UNSUPPORTED_ENCODINGS = [
    "EBCDIC",
    "Shift_JIS",
    "UTF-32",
    "ASCII",
    "windows-1252",
    "UTF-7",
    "utf8",
    "",
    "UTF-16LE",
    "cp1252",
    "latin_1",
    "utf-16be",
    "us_ascii",
]


def _find_all(data: bytes, pattern: bytes) -> list[re.Match]:
    return list(re.finditer(pattern, data, re.S))


@st.composite
def _mutate(draw, doc: Doc) -> tuple[bytes, str]:
    data = doc.data
    n = len(data)
    kinds = ["truncate", "flip", "insert", "delete", "duplicate", "swap"]
    if doc.format == "junit":
        kinds += [
            "dup_attr",
            "drop_end",
            "stray_end",
            "rename_end",
            "encoding",
            "bom",
            "doctype",
            "bad_entity",
            "nul",
            "latin1_as_utf8",
            "declaration_anywhere",
        ]
    else:
        kinds += ["dup_key", "wrong_type", "drop_key", "lone_surrogate", "huge_number", "nul", "bad_outcome", "deep"]
    kind = draw(st.sampled_from(kinds))
    pos = draw(st.integers(0, n)) if n else 0
    if kind == "truncate":
        return data[:pos], kind
    if kind == "flip" and n:
        p = min(pos, n - 1)
        return data[:p] + bytes([data[p] ^ draw(st.integers(1, 255))]) + data[p + 1 :], kind
    if kind == "insert":
        return data[:pos] + draw(
            st.one_of(st.sampled_from(INTERESTING_BYTES), st.binary(min_size=1, max_size=8))
        ) + data[pos:], kind
    if kind == "delete":
        return data[:pos] + data[pos + draw(st.integers(1, 64)) :], kind
    if kind == "duplicate":
        k = draw(st.integers(1, 200))
        return data[:pos] + data[pos : pos + k] + data[pos:], kind
    if kind == "swap" and n > 2:
        a, b = sorted(draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True)))
        return data[:a] + data[b : b + 1] + data[a + 1 : b] + data[a : a + 1] + data[b + 1 :], kind
    if kind == "dup_attr":
        ms = _find_all(data, rb"<(testcase|testsuite|failure|error|skipped)(\s+)([a-z]+)\s*=\s*(\"[^\"<]*\"|'[^'<]*')")
        if ms:
            m = draw(st.sampled_from(ms))
            return data[: m.end()] + b" " + m.group(3) + b"=" + m.group(4) + data[m.end() :], kind
    if kind == "drop_end":
        ms = _find_all(data, rb"</[a-z-]+\s*>")
        if ms:
            m = draw(st.sampled_from(ms))
            return data[: m.start()] + data[m.end() :], kind
    if kind == "stray_end":
        return data[:pos] + draw(st.sampled_from([b"</testcase>", b"</x>", b"</testsuites>", b"<testcase>"])) + data[
            pos:
        ], kind
    if kind == "rename_end":
        ms = _find_all(data, rb"</([a-z-]+)")
        if ms:
            m = draw(st.sampled_from(ms))
            return data[: m.start(1)] + b"testsuitex" + data[m.end(1) :], kind
    if kind == "encoding":
        enc = draw(st.sampled_from(UNSUPPORTED_ENCODINGS + ["ISO-8859-1", "US-ASCII", "UTF-16", "UTF-8"]))
        m = re.match(rb"(\xef\xbb\xbf)?<\?xml[^>]*?encoding=[\"']([^\"']*)[\"']", data)
        if m:
            return data[: m.start(2)] + enc.encode() + data[m.end(2) :], kind
        body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
        if body.startswith(b"<?xml"):
            return body.replace(b"?>", f' encoding="{enc}"?>'.encode(), 1), kind
        return f'<?xml version="1.0" encoding="{enc}"?>'.encode() + body, kind
    if kind == "bom":
        return draw(
            st.sampled_from([b"\xff\xfe", b"\xfe\xff", b"\xef\xbb\xbf", b"\xef\xbb", b"\x00\x00\xfe\xff"])
        ) + data, kind
    if kind == "doctype":
        dt = draw(
            st.sampled_from(
                [
                    b'<!DOCTYPE testsuites [<!ENTITY a "aaaaaaaa"><!ENTITY b "&a;&a;&a;">]>',
                    b'<!DOCTYPE x SYSTEM "file:///etc/passwd">',
                    b"<!DOCTYPE testsuites>",
                    b"<!doctype testsuites>",
                ]
            )
        )
        m = re.search(rb"<test", data)
        if m:
            return data[: m.start()] + dt + data[m.start() :], kind
    if kind == "declaration_anywhere":
        # a markup declaration at any byte: in text (forbidden), in an attribute value or
        # a tag (an earlier well-formedness error: malformed), in a comment (ignored)
        decl = draw(
            st.sampled_from(
                [
                    b"<!DOCTYPE x>",
                    b"<!ENTITY a 'b'>",
                    b"<!ELEMENT",
                    b"<!ATTLIST",
                    b"<!NOTATION n SYSTEM 'x'>",
                    b"<!DOCTYPE",
                ]
            )
        )
        return data[:pos] + decl + data[pos:], kind
    if kind == "bad_entity":
        return data[:pos] + draw(
            st.sampled_from([b"&nbsp;", b"&a;", b"&#0;", b"&#xFFFE;", b"&#x1F;", b"&;", b"&#;", b"&#x;", b"& "])
        ) + data[pos:], kind
    if kind == "nul":
        return data[:pos] + b"\x00" + data[pos:], kind
    if kind == "latin1_as_utf8":
        # declare latin-1 / US-ASCII over UTF-8 bytes (valid latin-1, invalid ASCII)
        body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
        body = re.sub(rb"^<\?xml[^>]*\?>", b"", body)
        return (
            f'<?xml version="1.0" encoding="{draw(st.sampled_from(["ISO-8859-1", "US-ASCII"]))}"?>'.encode()
            + body
            + "<!-- é😀 -->".encode(),
            kind,
        )
    if kind == "dup_key":
        ms = _find_all(
            data,
            rb'"(nodeid|outcome|duration|tests|exitcode|summary|longrepr|crash|call|setup)"\s*:\s*("(?:[^"\\]|\\.)*"|[-0-9.eE+]+|null|true|false)',
        )
        if ms:
            m = draw(st.sampled_from(ms))
            return data[: m.end()] + b"," + m.group(0) + data[m.end() :], kind
    if kind == "wrong_type":
        ms = _find_all(
            data,
            rb'"(nodeid|outcome|duration|tests|summary|longrepr|crash|call|setup|lineno|message|stdout|path|collectors|exitcode)"\s*:\s*',
        )
        if ms:
            m = draw(st.sampled_from(ms))
            repl = draw(st.sampled_from([b"1", b"null", b'"x"', b"[]", b"{}", b"true", b"1.5", b'["a"]']))
            rest = data[m.end() :]
            # replace the value token that follows (simple scalar values only)
            v = re.match(rb'("(?:[^"\\]|\\.)*"|[-0-9.eE+]+|null|true|false)', rest)
            if v:
                return data[: m.end()] + repl + rest[v.end() :], kind
            return data[: m.end()] + repl + b"," + rest, kind
    if kind == "drop_key":
        ms = _find_all(
            data,
            rb'"(exitcode|summary|tests|nodeid|outcome|duration)"\s*:\s*("(?:[^"\\]|\\.)*"|[-0-9.eE+]+|null|true|false)\s*,?',
        )
        if ms:
            m = draw(st.sampled_from(ms))
            return data[: m.start()] + data[m.end() :], kind
    if kind == "lone_surrogate":
        ms = _find_all(data, rb'"(?:[^"\\]|\\.)*"')
        if ms:
            m = draw(st.sampled_from(ms))
            s = draw(
                st.sampled_from([b"\\ud800", b"\\udfff", b"\\ud83d\\u0041", b"\\u12", b"\\x41", b"\\ud83d\\ude00"])
            )
            return data[: m.start() + 1] + s + data[m.start() + 1 :], kind
    if kind == "huge_number":
        ms = _find_all(data, rb"(?<=[:\[,\s])-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")
        if ms:
            m = draw(st.sampled_from(ms))
            num = draw(
                st.sampled_from(
                    [
                        b"1e400",
                        b"-1e400",
                        b"18446744073709551616",
                        b"-9223372036854775809",
                        b"99999999999999999999999999999999",
                        b"1e-400",
                        b"-0",
                        b"0.1e1",
                        b"1" * 400,
                    ]
                )
            )
            return data[: m.start()] + num + data[m.end() :], kind
    if kind == "bad_outcome":
        ms = _find_all(data, rb'"outcome"\s*:\s*"[a-z]*"')
        if ms:
            m = draw(st.sampled_from(ms))
            o = draw(st.sampled_from([b"PASSED", b"", b"xfail", b"rerun", b"skip", b"broken"]))
            return data[: m.start()] + b'"outcome": "' + o + b'"' + data[m.end() :], kind
    if kind == "deep":
        d = draw(st.integers(100, 3000))
        ms = _find_all(data, rb'"(metadata|extra_key|environment|keywords)"\s*:\s*')
        if ms:
            m = draw(st.sampled_from(ms))
            rest = data[m.end() :]
            return data[: m.end()] + b"[" * d + b"]" * d + b"," + b'"zz":' + rest, kind
    # not applicable to this document: truncate instead
    return data[:pos], "truncate"


@st.composite
def mutated_docs(draw) -> Doc:
    """A valid document damaged by 1-3 mutations (``truth`` is None)."""
    doc = draw(valid_docs())
    data = doc.data
    kinds = []
    for _ in range(draw(st.integers(1, 3))):
        data, kind = draw(_mutate(Doc(doc.format, data, None)))
        kinds.append(kind)
    return Doc(doc.format, data, None, frozenset(f"mutation:{k}" for k in kinds))


@st.composite
def prefixed_noise(draw) -> Doc:
    """A report-like first byte followed by arbitrary bytes."""
    head = draw(
        st.sampled_from(
            [
                b"<",
                b"<testsuites>",
                b"<testsuite><testcase name='a'>",
                b"{",
                b'{"exitcode": 0, "summary": {}, "tests": [',
                b"\xef\xbb\xbf<",
                b"\xff\xfe<\x00",
                b" \n",
            ]
        )
    )
    return Doc("noise", head + draw(st.binary(max_size=200)), None, frozenset({"noise"}))


# --------------------------------------------------------------------------------------
# Budgets

BUDGET_BOUNDS = {
    "failures_listed": (0, 30),
    "max_traceback_lines": (3, 60),
    "max_line_chars": (8, 300),
    "max_message_chars": (8, 400),
    "max_output_bytes": (0, 4096),
    "max_groups": (0, 12),
    "max_examples": (0, 5),
    "max_slowest": (0, 8),
    "max_collection_errors": (0, 4),
    "max_log_bytes": (0, 300),
    "max_frame_context_lines": (0, 12),
}


@st.composite
def budgets_dicts(draw) -> dict[str, int]:
    """Budgets drawn at random (the defaults sometimes, small values often)."""
    if draw(st.integers(0, 4)) == 0:
        return {}
    out = {}
    for name, (lo, hi) in BUDGET_BOUNDS.items():
        if draw(st.booleans()):
            out[name] = draw(st.one_of(st.just(lo), st.integers(lo, hi)))
    return out


# --------------------------------------------------------------------------------------
# Fuzz settings and what every summary must satisfy (the engine is imported lazily, so
# the strategies above stay usable without it). Running both backends and comparing them
# is tests/helpers/backends.py.

# Set by tests/conftest.py from ``--soak=MINUTES`` (0: the normal, quick run).
SOAK_MINUTES: float = 0.0


def fuzz_settings(examples: int, **kwargs):
    """Hypothesis settings of a fuzz test: ``examples`` per run normally; under
    ``--soak`` many more per run (conftest loops the run until the time is spent)."""
    from hypothesis import HealthCheck, settings

    soak = SOAK_MINUTES > 0
    return settings(
        max_examples=max(examples * 4, 100) if soak else examples,
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
            HealthCheck.function_scoped_fixture,
        ],
        # The quick run is derandomized (the same examples every time: CI stays
        # deterministic); --soak explores with fresh random seeds.
        derandomize=not soak,
        database=None,
        print_blob=True,
        **kwargs,
    )


_MARKER = re.compile(
    r"\.\.\. \[[0-9]+ lines omitted\]\Z"
    r"|\.\.\. \[the (?:line above repeats|[0-9]+ lines above repeat) [0-9]+ more times\]\Z"
    r"|E\s*Full diff: \[[0-9]+ lines left out: "
    r"(?:the differing items above|both sides are whole in the assert line above)\]\Z"
)
"""The engine's own lines in a shown traceback, never cut to ``max_line_chars``
(docs/ENGINE.md, *Traceback cutting*): omission markers, folded repeats, a left-out
``Full diff``."""


def check_invariants(raw: bytes, budgets: dict[str, int], paths: list[str]) -> dict:
    """What every summary satisfies whatever the input (docs/ENGINE.md): the public
    model accepts it, counts add up, every budget holds, nothing is cut silently."""
    import orjson

    from pytest_mcp_server.engine.models import Budgets, RunReport

    RunReport.model_validate_json(raw)
    s = orjson.loads(raw)
    b = Budgets(**budgets)
    c = s["counts"]
    om = s["omitted"]
    assert s["files"] == paths
    assert c["total"] == sum(c[k] for k in ("passed", "failed", "errors", "skipped", "xfailed", "xpassed"))
    assert c["flaky"] <= c["total"]
    assert len(s["failures"]) <= b.failures_listed
    assert len(s["collection_errors"]) <= b.max_collection_errors
    # every failing test and collection error is listed or counted as omitted
    assert (
        len(s["failures"]) + om["failures"] + len(s["collection_errors"]) + om["collection_errors"]
        == c["failed"] + c["errors"] + c["subtests_failed"]
    )
    assert c["passed_with_failed_subtests"] <= c["failed"]
    assert len(s["groups"]) <= b.max_groups
    for g in s["groups"]:
        assert g["count"] >= 1 and len(g["examples"]) <= min(b.max_examples, g["count"])
        assert re.fullmatch(r"g[0-9a-f]{8}|gother", g["id"]), g["id"]
        assert len(g["message"]) <= b.max_message_chars
    assert len(s["slowest"]) <= b.max_slowest
    durations = [t["duration_s"] for t in s["slowest"]]
    assert all(d > 0 for d in durations) and durations == sorted(durations, reverse=True)
    for f in s["failures"]:
        assert f["outcome"] in ("failed", "error")
        assert "\n" not in f["message"] and len(f["message"]) <= b.max_message_chars, f["message"]
        lines = f["traceback"].split("\n")
        assert len(lines) <= b.max_traceback_lines, (len(lines), b.max_traceback_lines)
        for line in lines:
            assert len(line) <= b.max_line_chars or _MARKER.match(line), (line, b.max_line_chars)
        for stream in ("stdout", "stderr"):
            if f[stream] is not None:  # empty output is null
                assert 0 < len(f[stream].encode("utf-8", "surrogatepass")) <= b.max_output_bytes
        if f["log"] is not None:
            assert 0 < len(f["log"].encode("utf-8", "surrogatepass")) <= b.max_log_bytes
    # groups count the failing tests (collection errors are not grouped); a failure
    # names the group it is counted in
    failing_tests = (
        c["failed"] + c["errors"] + c["subtests_failed"] - len(s["collection_errors"]) - om["collection_errors"]
    )
    ids = {g["id"] for g in s["groups"]}
    counts = [g["count"] for g in s["groups"]]
    assert counts == sorted(counts, reverse=True)
    if om["groups"] == 0:
        assert sum(counts) == failing_tests, (counts, failing_tests)
        assert all(f["group"] in ids for f in s["failures"])
    else:
        assert sum(counts) < failing_tests and len(s["groups"]) == b.max_groups
    for e in s["collection_errors"]:
        assert "\n" not in e["message"] and len(e["message"]) <= b.max_message_chars
    # each listed traceback says what its cut left out; together, the omitted count
    listed = s["failures"] + s["collection_errors"]
    assert sum(x["traceback_lines_omitted"] for x in listed) == om["traceback_lines"]
    assert all(v >= 0 for v in om.values())
    assert [f["same_as"] for f in s["failures"]] == expected_same_as(s["failures"])
    return s


def expected_same_as(failures: list[dict]) -> list[str | None]:
    """The ``same_as`` of each listed failure by docs/ENGINE.md's words (*Failures*),
    written again here: for the first failure of its group in the list, the node id of
    the first earlier such failure whose exception, message, traceback, stdout, stderr
    and log are its own once each failure's own file (node id before ``::``) is written
    ``<file>`` and then each run of ASCII digits ``N``, unless that node id is its own;
    else None."""

    def shown(failure: dict) -> list[str | None]:
        own_file = failure["node_id"].split("::")[0]
        fields: list[str | None] = []
        for name in ("exception", "message", "traceback", "stdout", "stderr", "log"):
            text = failure[name]
            if text is not None:
                text = text.replace(own_file, "<file>") if own_file else text
                # a run of ASCII digits is one N; any other character (a Unicode digit too) stays
                runs = itertools.groupby(text, key=lambda ch: ch in "0123456789")
                text = "".join("N" if is_digits else "".join(run) for is_digits, run in runs)
            fields.append(text)
        return fields

    firsts = [i for i, f in enumerate(failures) if all(g["group"] != f["group"] for g in failures[:i])]
    expected: list[str | None] = [None] * len(failures)
    for i in firsts:
        same = [j for j in firsts if j < i and shown(failures[j]) == shown(failures[i])]
        if same and failures[same[0]]["node_id"] != failures[i]["node_id"]:
            expected[i] = failures[same[0]]["node_id"]
    return expected


def check_truth(raw: bytes, truth: Truth, budgets: dict[str, int], paths: list[str]) -> None:
    """The summary says what the generated document holds (counts, durations, the
    failing tests with their phases, collection errors, slowest, omitted counts)."""
    from pytest_mcp_server.engine.models import Budgets

    s = check_invariants(raw, budgets, paths)
    b = Budgets(**budgets)
    assert s["format"] == truth.format
    assert s["counts"] == truth.counts
    assert s["tests_duration_s"] == truth.total_us / 1e6
    # pytest's session time when the document has one (pytest-json-report's duration)
    assert s["duration_s"] == truth.duration_us / 1e6
    fails = truth.failures
    got = [(f["node_id"], f["outcome"], f["phase"]) for f in s["failures"]]
    # Listed: one representative per listed group (largest first), then the others in
    # report order (docs/ENGINE.md, *Failures*); a failed subtest carries its label.
    got = [(*f, s["failures"][i]["subtest"]) for i, f in enumerate(got)]
    fails = [(*f, label) for f, label in zip(fails, truth.failure_labels, strict=True)]
    k = min(len(s["groups"]), b.failures_listed)
    assert [f["group"] for f in s["failures"][:k]] == [g["id"] for g in s["groups"][:k]]
    rest = list(fails)
    for representative in got[:k]:
        rest.remove(representative)
    assert got[k:] == rest[: b.failures_listed - k]
    assert s["omitted"]["failures"] == max(0, len(fails) - b.failures_listed)
    assert [e["path"] for e in s["collection_errors"]] == list(truth.collection_errors[: b.max_collection_errors])
    assert s["omitted"]["collection_errors"] == max(0, len(truth.collection_errors) - b.max_collection_errors)
    assert [(t["node_id"], t["duration_s"]) for t in s["slowest"]] == truth.slowest(b.max_slowest)
