"""The builder's rules in both backends: traceback cutting, group keys, and the summary.

Each rule is checked two ways: concrete expected outputs (worked out by hand from
docs/ENGINE.md) on realistic pytest tracebacks for both implementations, and hypothesis
runs that feed the same random inputs to both backends (cut, group, summary) and demand
identical results. The native rules are read off summaries (``rule_probes``): the
extension exports no rule function.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace

import orjson
import pytest
from helpers import corpus
from helpers.backends import needs_native, summary_in_both
from helpers.rule_probes import native_cut, native_group_key, summaries_agree
from helpers.rule_probes import pure_cut as pure_summary_cut
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_mcp_server.engine.models import Budgets, Location, RunReport
from pytest_mcp_server.engine.pure import cut as pure_cut
from pytest_mcp_server.engine.pure import group as pure_group
from pytest_mcp_server.engine.pure import summary as pure_summary
from pytest_mcp_server.engine.pure.record import CollectionErrorRecord, TestRecord

# Shared with the Rust unit tests of rust/core/src/cut.rs (include_str!).
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def impl(backend: str) -> SimpleNamespace:
    """The rule functions ``cut_traceback`` and ``group_key`` of the backend under test
    (the pure ones live in two modules; the native ones as its summaries apply them)."""
    if backend == "native":
        return SimpleNamespace(cut_traceback=native_cut, group_key=native_group_key)
    return SimpleNamespace(cut_traceback=pure_summary_cut, group_key=pure_group.group_key)


# --------------------------------------------------------------------------------------
# Traceback cutting: concrete cases.

# pytest --tb=long output of a test whose request failed inside `requests`/`urllib3`,
# with a chained exception (the shape pytest writes; the paths are a venv's); the Rust
# unit tests of cut.rs read the same file.
REQUESTS_TRACEBACK = (FIXTURES / "tracebacks" / "requests_chained.txt").read_text()


def test_cut_drops_library_frames_and_keeps_essential_lines(impl):
    cut, omitted = impl.cut_traceback(REQUESTS_TRACEBACK, 40, 200)
    lines = cut.split("\n")
    # Step 4: of the 7 lines before `>`, the last 3 non-blank stay; 4 become a marker.
    assert lines[:5] == [
        "... [4 lines omitted]",
        "        headers = {}",
        "        params = {}",
        "        timeout = 3",
        ">       r = requests.get(url, headers=headers, params=params, timeout=timeout)",
    ]
    # Step 2: the two site-packages short entries go (2 lines each), the helper stays;
    # the separator is shown short (its width says nothing).
    assert lines[7:12] == [
        "_ _ _ _ _",
        "... [2 lines omitted]",
        "tests/helpers.py:9: in request",
        "    return session.request(method=method, url=url, **kwargs)",
        "... [2 lines omitted]",
    ]
    # The library frame that raised is the last of its exception: kept, E line and all.
    assert "E       ConnectionRefusedError: [Errno 111] Connection refused" in lines
    assert "The above exception was the direct cause of the following exception:" in lines
    # The failure is located at its root cause (the helper's frame, ConnectionRefusedError),
    # so pytest's closing line of the final exception says something new: it stays.
    assert lines[-4:] == [
        ">       raise RuntimeError('boom')",
        "E       RuntimeError: boom",
        "",
        "tests/test_api.py:30: RuntimeError",
    ]
    # The 4 lines of source context count (a larger budget shows them); the library
    # frames' 2 + 2 lines are marked but not counted: no budget shows them.
    assert omitted == 4
    assert not any("site-packages/requests" in line for line in lines)


def test_frame_context_budget_sets_how_much_of_a_frame_stays_before_its_arrow(impl):
    """Step 4's context is the ``max_frame_context_lines`` budget: a large one keeps the
    whole frame (``self = ...``, the ``def`` line, every source line), 0 keeps none of
    the source before ``>`` and writes each long-format frame on one line (the shown
    traceback's compact frames), a short entry as it is; library frames go either way."""
    whole, omitted = impl.cut_traceback(REQUESTS_TRACEBACK, 400, 200, None, 1000)
    lines = whole.split("\n")
    assert lines[:8] == [
        "self = <tests.test_api.TestApi object at 0x7f00>",
        "",
        "    def test_get(self):",
        "        url = URL",
        "        headers = {}",
        "        params = {}",
        "        timeout = 3",
        ">       r = requests.get(url, headers=headers, params=params, timeout=timeout)",
    ]
    assert omitted == 0  # only the two site-packages short entries go: not counted
    bare, omitted = impl.cut_traceback(REQUESTS_TRACEBACK, 400, 200, None, 0)
    assert bare.split("\n") == [
        "tests/test_api.py:14: r = requests.get(url, headers=headers, params=params, timeout=timeout)",
        "... [2 lines omitted]",
        "tests/helpers.py:9: in request",
        "    return session.request(method=method, url=url, **kwargs)",
        "... [2 lines omitted]",
        ".venv/lib/python3.11/site-packages/urllib3/connection.py:203: sock = connection.create_connection(",
        "E       ConnectionRefusedError: [Errno 111] Connection refused",
        "The above exception was the direct cause of the following exception:",
        "tests/test_api.py:30: raise RuntimeError('boom')",
        "E       RuntimeError: boom",
    ]
    # every frame's source before `>` goes (7 and 4 lines; a frame with a single source
    # line before it keeps it: a marker would save nothing), counted; and the library
    # entries, marked but not counted
    assert omitted == 7 + 4
    # None is the budget's default (3), the same cut as without the argument.
    assert impl.cut_traceback(REQUESTS_TRACEBACK, 40, 200, None, None) == impl.cut_traceback(
        REQUESTS_TRACEBACK, 40, 200
    )
    assert impl.cut_traceback(REQUESTS_TRACEBACK, 40, 200, None, Budgets().max_frame_context_lines) == (
        impl.cut_traceback(REQUESTS_TRACEBACK, 40, 200)
    )


def test_a_single_line_before_the_context_stays_a_marker_would_not_save_a_line(impl):
    """Step 4 drops nothing when only one non-blank line lies before the kept context
    (the ``def`` line of a test with three lines before its ``>``): its marker would
    take a line to save one; two such lines go, as one marker."""
    frame = (
        "    def test_x():\n        a = 1\n        b = 2\n        c = 3\n>       assert a == b\nE       assert 1 == 2"
    )
    assert impl.cut_traceback(frame, 40, 200) == (frame, 0)
    cut, omitted = impl.cut_traceback("    @mark\n" + frame, 40, 200)
    assert cut.split("\n")[:2] == ["... [2 lines omitted]", "        a = 1"] and omitted == 2


# One nested failure of each real pytest-json-report file (tests/helpers/corpus.py: the in-repo
# one always, the plugin's sample when the shared corpus is present) and its cut at
# (40, 200), worked out by hand from the longrepr: corpus id -> (node id suffix, first
# lines, last lines, runs of consecutive lines that must be there, lines omitted).
CUT_ON_REAL_REPORTS = {
    # Two frames: the test (15 lines before `>       discount(10)`: the def line, the 13
    # lines of the inner function, a blank one) keeps its last 3 source lines and the
    # blank; the inner function's frame (15 lines after the separator: a blank, the
    # locals line, a blank, the def line and 11 body lines) keeps its last 3.
    "dialects/json/pytest-json-report.json": (
        "::test_discount_chain",
        [
            "... [11 lines omitted]",
            "            label = label.upper()",
            "            assert label",
            "            return price - rates[tier] * price",
            "    ",
            ">       discount(10)",
        ],
        # pytest's closing `test_cart.py:37: KeyError` is the failure's location: not repeated
        [">       return price - rates[tier] * price", "                       ^^^^^^^^^^^", "E       KeyError: None"],
        [("... [12 lines omitted]",), (">       return price - rates[tier] * price",)],
        23,
    ),
    # 14 source lines before `>       foo()`: the first 11 go, the last 3 stay. The last
    # frame has only a blank line before its context: nothing dropped there.
    "shared/pytest-json-report/sample_report.json": (
        "::test_fail_nested",
        [
            "... [11 lines omitted]",
            "            print('foo')",
            "            v = [bar(x) for x in range(3)]",
            "            return v",
            ">       foo()",
        ],
        [">       return 2 - c - None", "E       TypeError: unsupported operand type(s) for -: 'int' and 'NoneType'"],
        [("E       TypeError: unsupported operand type(s) for -: 'int' and 'NoneType'",), ("", "o = 1")],
        11,
    ),
}


@pytest.mark.parametrize("rel", [rel for rel in CUT_ON_REAL_REPORTS if corpus.available(rel)])
def test_cut_on_a_real_pytest_json_report(impl, rel):
    suffix, head, tail, present, want_omitted = CUT_ON_REAL_REPORTS[rel]
    report = json.loads(corpus.path(rel).read_text())
    nested = next(t for t in report["tests"] if t["nodeid"].endswith(suffix))
    cut, omitted = impl.cut_traceback(nested["call"]["longrepr"], 40, 200)
    lines = cut.split("\n")
    assert lines[: len(head)] == head
    assert lines[-len(tail) :] == tail
    for run in present:
        assert any(tuple(lines[i : i + len(run)]) == run for i in range(len(lines))), run
    assert omitted == want_omitted


def test_cut_native_and_java_tracebacks(impl):
    text = (
        "Traceback (most recent call last):\n"
        '  File "/work/app/tests/test_x.py", line 3, in test_x\n'
        "    run()\n"
        '  File "/usr/lib/python3.11/json/__init__.py", line 346, in loads\n'
        "    return _default_decoder.decode(s)\n"
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        '  File "C:\\work\\app\\app.py", line 9, in run\n'
        "    json.loads('{')\n"
        "json.decoder.JSONDecodeError: Expecting property name\n"
        "java.lang.AssertionError: expected\n"
        "\tat org.junit.Assert.fail(Assert.java:88)\n"
        "\tat com.example.CalcTest.adds(CalcTest.java:12)\n"
        "\tat sun.reflect.NativeMethodAccessorImpl.invoke0(Native Method)\n"
    )
    cut, omitted = impl.cut_traceback(text, 40, 200)
    assert cut.split("\n") == [
        "Traceback (most recent call last):",
        '  File "/work/app/tests/test_x.py", line 3, in test_x',
        "    run()",
        "... [3 lines omitted]",
        '  File "C:\\work\\app\\app.py", line 9, in run',
        "    json.loads('{')",
        "json.decoder.JSONDecodeError: Expecting property name",
        "java.lang.AssertionError: expected",
        "... [1 lines omitted]",
        "\tat com.example.CalcTest.adds(CalcTest.java:12)",
        "... [1 lines omitted]",
    ]
    assert omitted == 0  # library frames only: marked, not counted (no budget shows them)


def test_cut_head_and_tail_with_markers_and_long_lines(impl):
    text = "\r\n\n" + "".join(f"line {i}\r\n" for i in range(1, 101)) + "\n \n"
    cut, omitted = impl.cut_traceback(text, 10, 200)
    assert cut.split("\n") == ["line 1", "line 2", "line 3", "... [91 lines omitted]"] + [
        f"line {i}" for i in range(95, 101)
    ]
    assert omitted == 91
    # Step 8 counts characters, not bytes; markers are never cut.
    assert impl.cut_traceback("é" * 20, 40, 8) == ("é" * 7 + "…", 0)
    assert impl.cut_traceback("  \n\t\n", 40, 200) == ("", 0)
    many = "> x\n" + "".join(f"E   {i}\n" for i in range(20))
    cut, omitted = impl.cut_traceback(many, 3, 8)
    assert cut == "> x\n... [19 lines omitted]\nE   19"
    assert omitted == 19


# --------------------------------------------------------------------------------------
# Groups: concrete cases.


SYNTAX_ERROR = "\n".join(
    [
        "/usr/lib/python3.11/ast.py:50: in parse",
        "    return compile(source, filename, mode, flags,",
        'E     File "/srv/app/tests/test_mod.py", line 7',
        "E       x = (1,",
        "E           ^",
        "E   SyntaxError: '(' was never closed",
    ]
)


@needs_native
@pytest.mark.parametrize(
    "message",
    [None, "  File \"/srv/app/tests/test_mod.py\", line 7\n    x = (1,\n        ^\nSyntaxError: '(' was never closed"],
    ids=["from the text", "from the crash message"],
)
def test_a_syntax_error_is_its_last_line_located_at_its_position(message):
    """Python reports a module that does not compile as its position (``File "p", line
    N``), the source line, a caret and ``SyntaxError: ...``: the message is that last
    line, and the position is a frame (the deepest: the location), shown relative to the
    root, in both backends."""
    summary = orjson.loads(summaries_agree(SYNTAX_ERROR, message, ("/srv/app", [])))
    [failure] = summary["failures"]
    assert (failure["exception"], failure["message"]) == ("SyntaxError", "'(' was never closed")
    assert failure["location"] == {"path": "tests/test_mod.py", "line": 7}


def test_300_connection_errors_have_one_key(impl):
    rng = random.Random(7)
    keys = set()
    for _ in range(300):
        host = ".".join(str(rng.randrange(256)) for _ in range(4))
        message = (
            f"HTTPConnectionPool(host='{host}', port={rng.randrange(1, 65536)}): "
            f"connection to {host}:{rng.randrange(1, 65536)} refused after {rng.randrange(1, 100)} retries "
            f"(waited {rng.random() * 10:.3f}s, conn at 0x{rng.getrandbits(48):x})"
        )
        keys.add(impl.group_key("ConnectionError", message))
    assert len(keys) == 1
    ((group_id, normalized),) = keys
    # The call repr `HTTPConnectionPool(...)` folds as a whole, its name kept.
    assert normalized == (
        "HTTPConnectionPool(...): connection to <addr> refused after <n> retries (waited <n>s, conn at <hex>)"
    )
    assert group_id.startswith("g") and len(group_id) == 9
    assert impl.group_key("TimeoutError", "connection to 1.2.3.4:5 refused after 1 retries")[0] != group_id


@pytest.mark.parametrize(
    "message, normalized",
    [
        ("no key 'user id'", "no key <str>"),
        ('can\'t open "a b"', "can't open <str>"),
        ("assert b'\\x00' != rb'q r'", "assert b<str> != rb<str>"),
        # Quoted identifiers (type and attribute names) are kept, so different causes
        # stay apart; other quoted values fold.
        ("'NoneType' object has no attribute 'a'", "'NoneType' object has no attribute 'a'"),
        ("'str' object has no attribute 'lowr'", "'str' object has no attribute 'lowr'"),
        ("key 'user_id' or '1x' or ''", "key 'user_id' or <str> or <str>"),
        # Booleans, object reprs and call reprs fold (names kept).
        ("assert True == False", "assert <bool> == <bool>"),
        ("Truex True_ xTrue", "Truex True_ xTrue"),
        ("assert Point(x=1, y=2) == <app.Point object at 0x7f01>", "assert Point(...) == <obj>"),
        ("assert f(g(1)) == 2 and a < b > c", "assert f(g(...)) == <n> and a < b > c"),
        ("unclosed 'quote", "unclosed 'quote"),
        ("id=550e8400-e29b-41d4-a716-446655440000.", "id=<uuid>."),
        ("sha 3f2a9c1b ok, deadbeef stays", "sha <hex> ok, deadbeef stays"),
        ("file /tmp/pytest-of-root/pytest-12/x.json missing", "file <path> missing"),
        ("see tests/test_x.py:12", "see <path>:<n>"),
        ("C:\\Users\\me\\x.txt", "C:<path>"),
        ("/tmp alone", "/tmp alone"),
        ("version 1.2.3.4.5", "version <n>.<n>.<n>"),
        ("2024-01-31 12:30:45.123", "<n>-<n>-<n> <n>:<n>:<n>"),
        ("worker_3 died; héllo 42 wörld", "worker_<n> died; héllo <n> wörld"),
    ],
)
def test_normaliser_placeholders(impl, message, normalized):
    assert impl.group_key(None, message)[1] == normalized


@pytest.mark.parametrize(
    "messages",
    [
        # one dict comparison, three reprs of the result (dict, defaultdict, an object without repr)
        [
            "assert {2: 1, 3: 2} == {1: 2, 2: 3}",
            "assert defaultdict(<class 'int'>, {2: 1, 3: 2}) == defaultdict(<class 'int'>, {1: 2, 2: 3})",
            "assert <t.CustomMapping object at 0x7f10> == <t.CustomMapping object at 0x7f11>",
        ],
        # unittest's assertNotIn on three containers
        [
            "None unexpectedly found in Cache({None: 1}, maxsize=2, currsize=1)",
            "None unexpectedly found in {None: 1}",
            "None unexpectedly found in <t.Mapping object at 0x7f10>",
        ],
        ["assert 'a' == 1", 'assert "b" == [1, (2, 3)]', "assert None == True"],
    ],
)
def test_an_assertion_site_is_one_group_whatever_the_values(impl, messages):
    keys = {impl.group_key("AssertionError", message, "tests/t.py:58") for message in messages}
    assert len({group_id for group_id, _ in keys}) == 1
    # the message shown stays the first failure's, values masked but readable
    assert len({normalized for _, normalized in keys}) == len(messages)


def test_a_fingerprint_is_the_exception_and_the_frame_and_values_fold_without_one(impl):
    at_58 = impl.group_key("AssertionError", "assert [1] == [2]", "tests/t.py:58")[0]
    assert impl.group_key("AssertionError", "assert [1] == [2]", "tests/t.py:59")[0] != at_58
    assert impl.group_key("KeyError", "assert [1] == [2]", "tests/t.py:58")[0] != at_58
    # at one frame the message does not count, whatever its wording or values
    assert impl.group_key("AssertionError", "assert [1] in [2]", "tests/t.py:58")[0] == at_58
    attr = impl.group_key("AttributeError", "'NoneType' object has no attribute 'a'", "tests/t.py:58")[0]
    assert impl.group_key("AttributeError", "'str' object has no attribute 'lowr'", "tests/t.py:58")[0] == attr
    # without a frame the message is the key, its values folded for every exception
    assert (
        impl.group_key("AssertionError", "assert [1] == [2]")[0]
        == impl.group_key("AssertionError", "assert 'x' == [2]")[0]
    )
    assert impl.group_key("KeyError", "'user-1'")[0] == impl.group_key("KeyError", "'user-2'")[0]
    assert impl.group_key("KeyError", "'user-1'")[0] != impl.group_key("KeyError", "missing 'user-1'")[0]


def test_group_id_is_fnv1a_of_exception_nul_message():
    # FNV-1a 64 of the single byte 0x00 (exception None, message "") is 0xaf63bd4c8601b7df.
    assert pure_group.group_key(None, "") == ("gaf63bd4c", "")
    assert pure_group.group_key("", "x") == pure_group.group_key(None, "x")


# --------------------------------------------------------------------------------------
# Native == pure on random inputs.

# Characters every normaliser rule and cutting rule reacts to, plus plain text.
_TOKEN_CHARS = "0123456789abcdefxXEF_.:/\\-'\"bru \n\t\rné…😀>@%~+(),*&;=[]{}<!?#$^|`"
_FRAGMENTS = [
    "0x1f",
    "10.0.0.1",
    ":8080",
    "550e8400-e29b-41d4-a716-446655440000",
    "3f2a9c1b",
    "/tmp/a/b",
    "C:\\x\\y",
    "'str'",
    '"s"',
    "rb'x'",
    "1.5",
    "_ _ _",
    "E   ",
    ">   ",
    "tests/t.py:12: ",
    "site-packages/x.py:3: in f",
    '  File "/usr/lib/python3.11/x.py", line 3, in f',
    '  File "app.py", line 9, in g',
    "\tat java.lang.X.y(X.java:1)",
    "The above exception was the direct cause of the following exception:",
    "in ",
    "\n",
    "\r\n",
    "    ",
    "None",
    "defaultdict(",
    "<class 'a.<locals>.B'>",
    "{1: [",
]
messages = st.lists(
    st.one_of(st.sampled_from(_FRAGMENTS), st.text(alphabet=_TOKEN_CHARS, max_size=6)), max_size=40
).map("".join)


def _crash(exception: str | None, message: str) -> str:
    return f"{exception}: {message}" if exception else message


# A failure's group is its summary's (id, exception, normalised message): both backends
# must write the same summary for any crash message (the line the key is made of is the
# summary's, see docs/ENGINE.md, *Messages and exceptions*).


@needs_native
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exception=st.one_of(st.none(), st.sampled_from(["", "ValueError", "é.Error"])), message=messages)
def test_group_key_parity(exception, message):
    summaries_agree("", _crash(exception, message), max_message_chars=100_000)


@needs_native
@settings(max_examples=1000, deadline=None)
@given(message=st.one_of(st.text(max_size=80), st.text(st.characters(max_codepoint=127), max_size=80)))
def test_group_key_parity_on_any_text(message):
    summaries_agree("", _crash("E", message))


@needs_native
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message=st.one_of(messages, st.text(max_size=80)))
def test_group_key_parity_at_an_assertion_site(message):
    # the site's key folds values (brackets, angle reprs, quotes, None/True/False); the
    # traceback ends at the site, a test file's line
    summaries_agree("tests/t.py:9: AssertionError", _crash("AssertionError", message), max_message_chars=100_000)


# The sample lines of a library frame (a path the path-pattern rule calls library code):
# a text without them drops nothing as library, so its count is its markers' total.
LIBRARY_LINES = frozenset(
    {
        ".venv/lib/python3.11/site-packages/lib/a.py:5: in call",
        "/usr/lib/python3.12/site-packages/lib/a.py:9: ValueError",
        "C:\\py\\Lib\\site-packages\\m.py:3: in f",
        "<frozen importlib._bootstrap>:241: in _call",
        '  File "/usr/lib/python3.11/json/decoder.py", line 3, in f',
        "\tat org.junit.Assert.fail(Assert.java:88)",
    }
)

traceback_lines = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "",
                "   ",
                "_ _ _ _ _",
                " _ _ _ ",
                "__ _",
                ">       assert x",
                "E       assert 1 == 2",
                "E",
                "tests/test_x.py:12: ",
                "tests/test_x.py:12: AssertionError",
                "tests/helpers.py:9: in helper",
                ".venv/lib/python3.11/site-packages/lib/a.py:5: in call",
                "/usr/lib/python3.12/site-packages/lib/a.py:9: ValueError",
                "C:\\py\\Lib\\site-packages\\m.py:3: in f",
                "<frozen importlib._bootstrap>:241: in _call",
                '  File "/usr/lib/python3.11/json/decoder.py", line 3, in f',
                '  File "app.py", line 9, in g',
                "    x = f()",
                "           ^^^^",
                "\tat org.junit.Assert.fail(Assert.java:88)",
                "\tat com.example.T.t(T.java:1)",
                "The above exception was the direct cause of the following exception:",
                "During handling of the above exception, another exception occurred:",
                "    def test():",
                "self = <X object at 0x7f>",
                # a fixture lookup error's listing and closing line (*Fixture lookup errors*)
                "file /srv/app/tests/conftest.py, line 9",
                "file /srv/app/tests/test_x.py, line 2: source code not available",
                "  @pytest.fixture",
                "  def client(dbb):",
                "/srv/app/tests/conftest.py:9",
            ]
        ),
        st.text(alphabet=_TOKEN_CHARS, max_size=30),
    ),
    max_size=60,
)


@needs_native
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=traceback_lines,
    newline=st.sampled_from(["\n", "\r\n"]),
    # the smallest values Budgets accepts (max_traceback_lines >= 3, max_line_chars >= 8)
    max_lines=st.integers(3, 45),
    max_line_chars=st.integers(8, 60),
    context_lines=st.one_of(st.none(), st.integers(0, 8)),
    # with a project, paths are shown relative to its root (fixture listings included)
    project=st.sampled_from([None, ("/srv/app", [])]),
)
def test_cut_traceback_parity(lines, newline, max_lines, max_line_chars, context_lines, project):
    text = newline.join(lines)
    assert native_cut(text, max_lines, max_line_chars, project, context_lines) == pure_summary_cut(
        text, max_lines, max_line_chars, project, context_lines
    )


@needs_native
@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=300), max_lines=st.integers(3, 20))
def test_cut_traceback_parity_on_any_text(text, max_lines):
    assert native_cut(text, max_lines, 20) == pure_summary_cut(text, max_lines, 20)


@given(
    lines=traceback_lines,
    max_lines=st.integers(3, 45),
    max_line_chars=st.integers(8, 60),
    context_lines=st.integers(0, 8),
)
@settings(max_examples=500, deadline=None)
def test_cut_traceback_invariants(lines, max_lines, max_line_chars, context_lines):
    text = "\n".join(lines)
    cut, omitted = pure_cut.cut_traceback(text, max_lines, max_line_chars, None, context_lines)
    out = cut.split("\n") if cut else []
    assert len(out) <= max_lines
    markers = [line for line in out if line.startswith("... [") and line.endswith(" lines omitted]")]
    kept = len(out) - len(markers)
    # Every line after step 1 is either kept or counted in a marker.
    input_lines = text.split("\n")
    non_blank = [i for i, line in enumerate(input_lines) if line.strip(" \t\n\r\x0b\x0c")]
    expected_total = non_blank[-1] - non_blank[0] + 1 if non_blank else 0
    marked = sum(int(m[5:].split(" ")[0]) for m in markers)
    assert kept + marked == expected_total
    # the count leaves out library frames' lines (no budget shows them), and only them
    assert omitted <= marked
    if not any(line in LIBRARY_LINES for line in input_lines):
        assert omitted == marked
    assert all(len(line) <= max_line_chars for line in out if line not in markers)


# --------------------------------------------------------------------------------------
# The pure builder end to end on hand-made records.

BUDGETS = Budgets(failures_listed=2, max_groups=2, max_examples=2, max_slowest=3, max_message_chars=40)


def _failure(node_id, message, text="", outcome="failed", **extra):
    return TestRecord(node_id, outcome, "call", 1_000, message=message, text=text, **extra)


def _records():
    return [
        TestRecord("t.py::pass_fast", "passed", duration_us=10),
        TestRecord("t.py::pass_slow", "passed", duration_us=2_500_000),
        _failure("t.py::a", "ConnectionError: refused by 10.0.0.1:5432 after 3 retries", stdout="", stderr="boom"),
        TestRecord("t.py::flaky", "passed", duration_us=2_500_000, flaky=True),
        _failure(
            "t.py::b",
            None,
            "    def test_b():\n>       d['x']\nE       KeyError: 'x'\n\nt.py:9: KeyError",
            text_bytes_omitted=100,
        ),
        _failure("t.py::c", "ConnectionError: refused by 10.0.0.2:6379 after 12 retries", output_bytes_omitted=7),
        _failure("t.py::d", "ConnectionError: refused by 10.9.0.2:1 after 1 retries", outcome="error"),
        TestRecord("t.py::skip", "skipped"),
        TestRecord("t.py::xf", "xfailed", duration_us=3),
        _failure("t.py::e", "OSError: disk full on /dev/sda1 at 2024-01-01T00:00:00, please clean up the disk"),
        CollectionErrorRecord("tests/test_bad.py", text="E   ImportError: no module named x\n", text_bytes_omitted=5),
    ]


def test_pure_builder_summary_matches_hand_derived_values():
    builder = pure_summary.SummaryBuilder(BUDGETS.model_dump())
    for record in _records():
        builder.push(record)
    raw = builder.finish("junit", ["a.xml", "b.xml"])
    summary = RunReport.model_validate_json(raw)
    assert summary.files == ["a.xml", "b.xml"]
    c = summary.counts
    assert (c.total, c.passed, c.failed, c.errors, c.skipped, c.xfailed, c.xpassed, c.flaky) == (
        11,
        3,
        4,
        2,
        1,
        1,
        0,
        1,
    )
    assert summary.duration_s == 5.005013  # 10 + 2.5e6 * 2 + 5 failures * 1000 + 3 us

    conn_id, conn_message = pure_group.group_key("ConnectionError", "refused by 10.0.0.1:5432 after 3 retries")
    assert conn_message == "refused by <addr> after <n> retries"
    # The KeyError was raised in t.py (project code, not test code): keyed by that frame.
    key_error_id = pure_group.group_key("KeyError", "", "t.py:9")[0]
    assert [(g.id, g.count, g.exception, g.message, g.examples) for g in summary.groups] == [
        (conn_id, 3, "ConnectionError", conn_message, ["t.py::a", "t.py::c"]),
        (key_error_id, 1, "KeyError", "'x'", ["t.py::b"]),
    ]
    assert [g.location for g in summary.groups] == [None, Location(path="t.py", line=9)]

    first, second = summary.failures
    assert (first.node_id, first.exception, first.message, first.group) == (
        "t.py::a",
        "ConnectionError",
        "refused by 10.0.0.1:5432 after 3 retries",
        conn_id,
    )
    assert (first.stdout, first.stderr, first.location) == (None, "boom", None)
    assert (second.exception, second.message) == ("KeyError", "'x'")
    assert (second.location.path, second.location.line) == ("t.py", 9)

    assert [(s.node_id, s.duration_s) for s in summary.slowest] == [
        ("t.py::pass_slow", 2.5),
        ("t.py::flaky", 2.5),
        ("t.py::a", 0.001),
    ]
    assert [(e.path, e.exception, e.message) for e in summary.collection_errors] == [
        ("tests/test_bad.py", "ImportError", "no module named x"),
    ]
    o = summary.omitted
    # 5 failures, 2 listed; groups ConnectionError, KeyError, OSError -> 1 not listed.
    assert (o.failures, o.groups, o.collection_errors, o.traceback_lines, o.output_bytes, o.text_bytes) == (
        3,
        1,
        0,
        0,
        7,
        105,
    )
    # The bytes are canonical: re-serialising the model gives them back.
    assert summary.to_json() == raw


def test_pure_builder_counts_subtests_apart_and_lists_each_failed_one():
    # The same records as the Rust unit test in rust/core/src/summary.rs
    # (subtests_count_apart_and_each_failed_one_is_listed_with_its_label): a unittest-style
    # parent whose subtest i=1 failed, and a collection error raised in a library frame.
    builder = pure_summary.SummaryBuilder(Budgets().model_dump())
    parent = "t.py::T::test_even"
    builder.push(TestRecord(node_id=parent, subtest="(i=0)"))
    builder.push(
        TestRecord(
            node_id=parent,
            outcome="failed",
            subtest="(i=1)",
            text="E   AssertionError: 1 is odd\n\nt.py:13: AssertionError",
        )
    )
    builder.push(
        TestRecord(
            node_id=parent,
            outcome="failed",
            message="contains 1 failed subtest",
            duration_us=7,
            passed_with_failed_subtests=True,
        )
    )
    builder.push(
        CollectionErrorRecord(
            path="tests/test_x.py",
            text="tests/test_x.py:3: in <module>\n    import pkg\n"
            'pkg/__init__.py:3: in load\n    raise ValueError("bad")\nE   ValueError: bad',
        )
    )
    summary = RunReport.model_validate_json(builder.finish("junit", ["a.xml"]))
    c = summary.counts
    assert (c.total, c.passed, c.failed, c.errors) == (2, 0, 1, 1)
    assert (c.subtests_passed, c.subtests_failed, c.passed_with_failed_subtests) == (1, 1, 1)
    subtest, own = summary.failures
    assert (subtest.node_id, subtest.subtest, subtest.message) == (parent, "(i=1)", "1 is odd")
    assert subtest.location is not None and (subtest.location.path, subtest.location.line) == ("t.py", 13)
    assert (own.subtest, own.message) == (None, "contains 1 failed subtest")
    # the test that only says its subtest failed is counted in that subtest's group
    assert own.group == subtest.group and [(g.id, g.count) for g in summary.groups] == [(subtest.group, 2)]
    # a subtest is never among the slowest: only its test is
    assert [(s.node_id, s.duration_s) for s in summary.slowest] == [(parent, 7e-6)]
    [error] = summary.collection_errors
    assert error.location is not None and (error.location.path, error.location.line) == ("pkg/__init__.py", 3)
    assert error.traceback.startswith("tests/test_x.py:3: in <module>")


def test_pure_builder_caps_messages_and_fills_gother():
    builder = pure_summary.SummaryBuilder(BUDGETS.model_dump(), group_limit=2)
    for record in _records():
        builder.push(record)
    summary = orjson.loads(builder.finish("pytest-json", ["r.json"]))
    # The third distinct key (OSError, after ConnectionError and KeyError) is past the
    # limit: `gother` has 1 member, ties with KeyError, appeared later -> not listed.
    assert [g["exception"] for g in summary["groups"]] == ["ConnectionError", "KeyError"]
    assert summary["omitted"]["groups"] == 1
    builder = pure_summary.SummaryBuilder(Budgets(max_groups=5, max_message_chars=40).model_dump(), group_limit=2)
    for record in _records():
        builder.push(record)
    summary = orjson.loads(builder.finish("pytest-json", ["r.json"]))
    other = summary["groups"][-1]
    assert other == {
        "id": "gother",
        "count": 1,
        "exception": None,
        "message": "1 other cause",
        "location": None,
        "examples": ["t.py::e"],
    }
    # One representative per group, largest first (gother's is t.py::e), then the rest.
    assert [f["node_id"] for f in summary["failures"]] == ["t.py::a", "t.py::b", "t.py::e", "t.py::c", "t.py::d"]
    oserror = summary["failures"][2]
    assert oserror["group"] == "gother"
    full = "disk full on /dev/sda1 at 2024-01-01T00:00:00, please clean up the disk"
    assert oserror["message"] == full[:39] + "…"


# --------------------------------------------------------------------------------------
# Several files: merging in the native backend equals feeding the records in order.


def _letters(i: int) -> str:
    """``i`` written with the letters g..z (no digits or hex letters, so every value
    normalises to a different group key)."""
    digits = "ghijklmnopqrstuvwxyz"
    out = ""
    while True:
        out = digits[i % 20] + out
        i //= 20
        if i == 0:
            return out


def _junit(cases: list[tuple[str, str]]) -> str:
    body = "".join(
        f'<testcase classname="tests.test_m" name="{name}" time="0.01"><failure message="{message}"/></testcase>'
        for name, message in cases
    )
    return f'<?xml version="1.0"?><testsuite name="pytest">{body}</testsuite>'


@needs_native
def test_merge_stays_exact_when_a_later_file_overflows_the_group_table(tmp_path):
    shared = "RuntimeError: shared cause"
    first = tmp_path / "a.xml"
    first.write_text(_junit([("test_a0", shared), ("test_a1", "RuntimeError: only in a")]))
    # Enough new keys to fill the table (with the first file's 2) and overflow it; then
    # the first file's key comes back: it must join its group, not `gother`.
    limit = pure_summary.MAX_TRACKED_GROUPS
    cases = [(f"test_b{i}", f"RuntimeError: cause {_letters(i)}") for i in range(limit + 1)]
    cases += [("test_b_shared", shared), ("test_b_new", "RuntimeError: late newcomer")]
    second = tmp_path / "b.xml"
    second.write_text(_junit(cases))

    summary = summary_in_both([first, second], max_groups=3, max_examples=3)
    groups = {g["message"]: g for g in summary["groups"]}
    assert groups["shared cause"]["count"] == 2
    assert groups["shared cause"]["examples"] == ["tests/test_m.py::test_a0", "tests/test_m.py::test_b_shared"]
    # 2 + (limit + 1) + 1 distinct keys: `limit` tracked, 4 failures in `gother`.
    # The four failures in `gother` have four distinct keys: its message counts them.
    assert groups["4 other causes"]["count"] == 4
    assert summary["omitted"]["groups"] == limit + 1 - 3  # `limit` tracked + gother, 3 listed
