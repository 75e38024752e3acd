"""Differential fuzzing of the two report-log readers (``reportlog.rs``, ``pure/reportlog.py``).

Hypothesis builds report logs line by line in the shapes pytest serialises (TestReport,
SubTestReport, CollectReport, SessionStart/Finish, the server dialect's extra lines,
``CollectedIds`` among them, unknown types), with structured ``longrepr`` values of every part pytest renders (entries
long/short/native/value, function arguments wider than a line, locals, file locations
with multi-line messages, chains with their descriptions, sections with odd separators),
Python whitespace and line boundaries in the texts, the dialect's counts of what the plugin cut
(``text_bytes_cut``, ``sections_bytes_cut``), wrong types on the fields read, and
files cut anywhere or damaged by flipped bytes. Both backends must write the same bytes,
or refuse with the same error kind, and never crash. Budgets are drawn at random, and so
is the page of collected node ids asked for (none, or one at any offset), over one file
or several read in input order.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.backends import needs_native, result_in_both
from helpers.strategies import budgets_dicts, fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

from pytest_mcp_server.engine.models import CollectedPage, ProjectCode

pytestmark = needs_native

# Texts with what the rendering must treat as Python does: its whitespace (stripped at
# both ends), its line boundaries (form feed, \x1c, \u2028 split source lines), the fail
# marker, non-ASCII (column counts are characters).
_TEXT_ALPHABET = st.sampled_from(
    list("ab x_:.()'\"/E>")
    + ["\n", "\r", "\t", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\xa0", "\u2028", "é", "日", "😀"]
)
TEXT = st.text(_TEXT_ALPHABET, max_size=30)
LONG_TEXT = st.text(_TEXT_ALPHABET, max_size=200)
NODE_IDS = st.sampled_from(["t.py::a", "t.py::b", "t.py::C::d[1]", "/r/t.py::e", "é.py::f"])
# What a CollectedIds line lists: node ids of several files (a bare path, an empty id, a
# parameter holding ``::``) and values that are not strings (skipped).
COLLECTED_IDS = st.one_of(
    NODE_IDS,
    st.sampled_from(["u.py", "d/v.py::x[a::b]", "", "w.py::😀", "x.py::a", "y.py::b"]),
    st.sampled_from([None, 1, 2.5, [], {}, True]),
)
WHEN = st.sampled_from(["setup", "call", "teardown"])
SOURCE_LINE = st.one_of(
    TEXT.map(lambda s: "    " + s),
    TEXT.map(lambda s: ">   " + s),
    TEXT.map(lambda s: "E   " + s),
    TEXT,
    # a syntax error's position: a frame the entry's exception lines give (docs/ENGINE.md,
    # *Frames as data*), in project, test and library code, one with a trailing \r
    st.sampled_from(
        [
            'E     File "t.py", line 2',
            'E   File "/r/pkg/a.py", line 9\r',
            'E     File "/usr/lib/python3.11/x.py", line 7',
        ]
    ),
)
INT = st.one_of(st.integers(-5, 500), st.just(2**63), st.just(-(2**63)))
# The dialect's counts of what the plugin cut of a report (``text_bytes_cut``, the values
# of ``sections_bytes_cut``): 0 to 2^53, and just beyond (malformed in both).
CUT_BYTES = st.one_of(st.integers(0, 10**9), st.just(2**53))
BAD_CUT_BYTES = st.sampled_from([-1, 2**53 + 1, 2**64, 1.5, "7", True, [], {}])


# Whether the document being drawn may have wrong types (a third of the documents do).
_BAD = st.shared(st.integers(0, 2).map(lambda n: n == 0), key="reportlog-bad")


def _maybe_bad(good: st.SearchStrategy, bad: st.SearchStrategy | None = None) -> st.SearchStrategy:
    """``good``; in a document drawn with wrong types, sometimes a value of another JSON
    type (a structural error)."""
    wrong = bad if bad is not None else st.sampled_from([None, 1, 1.5, "x", [], {}, True])
    mixed = st.one_of(*([good] * 15), wrong)
    return _BAD.flatmap(lambda allowed: mixed if allowed else good)


@st.composite
def filelocs(draw) -> dict:
    return {
        "path": draw(_maybe_bad(st.sampled_from(["/r/t.py", "t.py", "/usr/lib/python3.11/x.py", "<frozen a>"]))),
        "lineno": draw(_maybe_bad(INT, st.sampled_from([1.0, "3", None]))),
        "message": draw(_maybe_bad(LONG_TEXT)),
    }


@st.composite
def repr_entries(draw) -> dict:
    kind = draw(st.sampled_from(["ReprEntry", "ReprEntry", "ReprEntry", "ReprEntryNative", "Other"]))
    if kind == "ReprEntryNative":
        return {"type": kind, "data": {"lines": draw(st.lists(LONG_TEXT, max_size=4))}}
    if kind == "Other":
        return {"type": kind, "data": {}}
    args = draw(st.lists(st.tuples(TEXT, st.one_of(TEXT, LONG_TEXT)).map(list), max_size=5))
    data = {
        "lines": draw(_maybe_bad(st.lists(SOURCE_LINE, max_size=6), st.sampled_from([["a", 1], "x"]))),
        "reprfuncargs": draw(st.one_of(st.none(), st.just({}), st.just({"args": args}), _maybe_bad(st.none()))),
        "reprlocals": draw(st.one_of(st.none(), st.lists(TEXT, max_size=3).map(lambda x: {"lines": x}))),
        "reprfileloc": draw(st.one_of(st.none(), filelocs())),
        "style": draw(_maybe_bad(st.sampled_from(["long", "short", "native", "value", "line"]))),
    }
    return {"type": kind, "data": data}


@st.composite
def repr_tracebacks(draw) -> dict:
    return {
        "reprentries": draw(st.lists(repr_entries(), max_size=4)),
        "extraline": draw(st.one_of(st.none(), TEXT, _maybe_bad(st.none()))),
        "style": "long",
    }


@st.composite
def longreprs(draw) -> object:
    form = draw(st.sampled_from(["none", "string", "skip", "structured", "structured", "structured", "odd"]))
    if form == "none":
        return None
    if form == "string":
        return draw(LONG_TEXT)
    if form == "skip":
        return ["t.py", 3, draw(TEXT)]
    if form == "odd":
        return draw(st.sampled_from([1, True, {}, {"reprcrash": None}, ["a"]]))
    chain = draw(
        st.one_of(
            st.none(),
            st.just([]),
            st.lists(
                st.tuples(
                    repr_tracebacks(),
                    st.one_of(st.none(), filelocs()),
                    st.one_of(
                        st.none(),
                        st.just("The above exception was the direct cause of the following exception:"),
                        TEXT,
                    ),
                ).map(list),
                min_size=1,
                max_size=3,
            ),
            _maybe_bad(st.none(), st.sampled_from([1, "x", {"a": 1}])),
        )
    )
    sections = draw(
        st.one_of(
            st.just([]),
            st.lists(
                st.tuples(TEXT, LONG_TEXT, st.sampled_from(["-", "=", "_ ", "", " ", "ab"])).map(list), max_size=2
            ),
            _maybe_bad(st.just([]), st.sampled_from([[["a", "b"]], "x"])),
        )
    )
    return {
        "reprcrash": draw(st.one_of(st.none(), filelocs())),
        "reprtraceback": draw(repr_tracebacks()),
        "sections": sections,
        "chain": chain,
    }


@st.composite
def report_sections(draw) -> list:
    names = st.sampled_from(
        [f"Captured {k} {w}" for k in ("stdout", "stderr", "log") for w in ("setup", "call", "teardown")]
        + ["Captured stdout", "Other", "Captured  stdout call"]
    )
    return draw(_maybe_bad(st.lists(st.tuples(names, LONG_TEXT).map(list), max_size=4), st.just([["x"]])))


@st.composite
def lines(draw) -> dict:
    kind = draw(
        st.sampled_from(
            ["TestReport"] * 8
            + ["SubTestReport"] * 2
            + ["CollectReport", "SessionStart", "SessionFinish", "TestStart", "TestStart", "WarningMessage"]
            + ["WarningMessage", "CollectionFinish", "Deselected", "Other", "none"]
            + ["CollectedIds"] * 3
        )
    )
    if kind == "none":
        return {"a": 1}
    key = "_report_type" if kind == "SubTestReport" and draw(st.booleans()) else "$report_type"
    line: dict = {key: draw(_maybe_bad(st.just(kind), st.just(7)))}
    if kind in ("TestReport", "SubTestReport"):
        line["nodeid"] = draw(_maybe_bad(NODE_IDS))
        line["when"] = draw(_maybe_bad(WHEN, st.just("lunch"))) if kind == "TestReport" else "call"
        line["outcome"] = draw(_maybe_bad(st.sampled_from(["passed", "failed", "skipped", "rerun"]), st.just("x")))
        if draw(st.booleans()):
            line["duration"] = draw(
                _maybe_bad(st.one_of(st.floats(allow_nan=False, allow_infinity=False), INT), st.just("1"))
            )
        if draw(st.integers(0, 3)) == 0:
            line["wasxfail"] = "reason"
        if draw(st.booleans()):
            line["longrepr"] = draw(longreprs())
        if draw(st.booleans()):
            line["sections"] = draw(report_sections())
        if draw(st.integers(0, 3)) == 0:
            line["text_bytes_cut"] = draw(_maybe_bad(CUT_BYTES, BAD_CUT_BYTES))
        if kind == "TestReport" and draw(st.integers(0, 3)) == 0:
            names = st.sampled_from(["Captured stdout call", "Captured stderr setup", "Captured log call", "Other"])
            line["sections_bytes_cut"] = draw(
                _maybe_bad(
                    st.dictionaries(names, _maybe_bad(CUT_BYTES, BAD_CUT_BYTES), max_size=3),
                    st.sampled_from([[], 5, "x", [["Captured stdout call", 5]]]),
                )
            )
        if draw(st.booleans()):
            line["start"] = draw(_maybe_bad(st.floats(0, 2e9)))
            line["stop"] = draw(_maybe_bad(st.floats(0, 2e9)))
        if kind == "SubTestReport" and draw(st.integers(0, 4)):
            line["_subtest.context"] = draw(
                _maybe_bad(
                    st.fixed_dictionaries(
                        {
                            "msg": _maybe_bad(st.one_of(st.none(), TEXT)),
                            "kwargs": _maybe_bad(st.dictionaries(TEXT, TEXT, max_size=3), st.just({"a": 1})),
                        }
                    )
                )
            )
    elif kind == "CollectReport":
        line["nodeid"] = draw(_maybe_bad(st.sampled_from(["t.py", "", "pkg/"])))
        line["outcome"] = draw(_maybe_bad(st.sampled_from(["failed", "passed", "skipped"])))
        line["longrepr"] = draw(longreprs())
        if draw(st.integers(0, 3)) == 0:
            line["text_bytes_cut"] = draw(_maybe_bad(CUT_BYTES, BAD_CUT_BYTES))
    elif kind == "SessionStart":
        if draw(st.booleans()):
            line["root"] = draw(_maybe_bad(st.sampled_from(["/r", "/r/", "", "/other"])))
        if draw(st.booleans()):
            line["stack_dump_armed"] = draw(st.sampled_from([True, False, 1, "true"]))
    elif kind == "SessionFinish":
        if draw(st.booleans()):
            line["duration"] = draw(_maybe_bad(st.floats(allow_nan=False, allow_infinity=False)))
        if draw(st.booleans()):
            line["exitstatus"] = draw(_maybe_bad(INT, st.sampled_from([1.0, "1"])))
    elif kind == "TestStart":
        line["nodeid"] = draw(_maybe_bad(NODE_IDS))
        line["start"] = draw(_maybe_bad(st.floats(0, 2e9), st.sampled_from([None, "1"])))
    elif kind == "CollectedIds":
        line["nodeids"] = draw(_maybe_bad(st.lists(COLLECTED_IDS, max_size=8), st.sampled_from([None, "t.py::a", {}])))
    elif kind in ("CollectionFinish", "Deselected"):
        line["collected" if kind == "CollectionFinish" else "count"] = draw(_maybe_bad(INT, st.just(2.0)))
    elif kind == "WarningMessage":
        line.update(draw(warning_messages()))
    return line


# A message of pytest's unhandled-exception warnings: a traceback whose frames are the
# project's or the library's, with source lines and odd frame lines.
_FRAME_LINES = st.one_of(
    st.sampled_from(["/r/pkg/w.py", "/usr/lib/python3.11/threading.py", "t.py", '/r/a", line 3, in b.py'])
    .flatmap(lambda path: st.tuples(st.just(path), st.integers(0, 99), st.sampled_from(["run", "f", "a, in b"])))
    .map(lambda f: f'  File "{f[0]}", line {f[1]}, in {f[2]}'),
    st.sampled_from(['  File "x.py", line , in f', '  File "x.py", line ٣, in f', "    raise ValueError(1)"]),
    TEXT.map(lambda s: "    " + s),
)
TRACEBACKS = st.lists(_FRAME_LINES, max_size=6).flatmap(
    lambda frames: st.sampled_from(["ValueError: x", "", "  indented", "KeyError"]).map(
        lambda last: "Exception in thread T:\nTraceback (most recent call last):\n" + "\n".join([*frames, last])
    )
)


@st.composite
def warning_messages(draw) -> dict:
    """The fields of a WarningMessage: its category (pytest's exception warnings often),
    message (a traceback for those, sometimes), where it was raised."""
    category = draw(
        st.sampled_from(
            ["DeprecationWarning", "UserWarning", "PytestUnhandledThreadExceptionWarning", None]
            + ["PytestUnraisableExceptionWarning"]
        )
    )
    fields: dict = {"category": draw(_maybe_bad(st.just(category)))}
    fields["message"] = draw(_maybe_bad(st.one_of(TEXT, LONG_TEXT, TRACEBACKS)))
    if draw(st.integers(0, 3)):
        fields["filename"] = draw(_maybe_bad(st.sampled_from(["/r/pkg/m.py", "/r/t.py", "/usr/lib/python3.11/x.py"])))
        fields["lineno"] = draw(_maybe_bad(INT, st.sampled_from([1.0, "3"])))
    return fields


@st.composite
def report_logs(draw) -> bytes:
    """A report log: a SessionStart, generated lines (with each test's teardown usually
    after its other reports), then maybe a SessionFinish; written as pytest-reportlog
    does (json.dumps per line), with blank lines, CRLF or a missing last newline."""
    body = [{"$report_type": "SessionStart", "pytest_version": "9.2.0", "root": draw(st.sampled_from(["/r", "/r/"]))}]
    body += draw(st.lists(lines(), max_size=25))
    # close most tests with a teardown, as pytest does
    for node_id in draw(st.lists(NODE_IDS, max_size=5)):
        body.append({"$report_type": "TestReport", "nodeid": node_id, "when": "teardown", "outcome": "passed"})
    if draw(st.booleans()):
        body.append({"$report_type": "SessionFinish", "exitstatus": 1, "duration": 2.5})
    ensure_ascii = draw(st.booleans())
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    text = newline.join(json.dumps(line, ensure_ascii=ensure_ascii) for line in body)
    if draw(st.booleans()):
        text += newline
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 4)) == 0:
        data = data[: draw(st.integers(len(data) // 3, len(data)))]
    return data


# The page of collected node ids asked for: none, or one anywhere (before, inside and
# beyond the ids a few generated lines hold), listing few files or many.
_SOME_PAGE = st.builds(
    CollectedPage,
    offset=st.one_of(st.integers(0, 4), st.integers(0, 40), st.integers(0, 40), st.just(2**63 - 1)),
    limit=st.one_of(st.integers(1, 12), st.integers(1, 12), st.just(0), st.just(10_000_000)),
    max_files=st.integers(0, 5),
)
COLLECTED_PAGES = st.one_of(_SOME_PAGE, _SOME_PAGE, _SOME_PAGE, st.none())


class _Scratch:
    def __init__(self, root: Path) -> None:
        self.root = root

    def write(self, data: bytes, name: str = "r.jsonl") -> str:
        path = self.root / name
        path.write_bytes(data)
        return str(path)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> _Scratch:
    return _Scratch(tmp_path_factory.mktemp("reportlog-fuzz"))


@pytest.mark.fuzz
@fuzz_settings(150)
@given(
    data=report_logs(),
    budgets=budgets_dicts(),
    fmt=st.sampled_from(["auto", "reportlog"]),
    project=st.sampled_from([None, ProjectCode(root="/r", packages=("pkg",))]),
    page=COLLECTED_PAGES,
)
def test_generated_report_logs_give_identical_bytes_or_the_same_error_kind(scratch, data, budgets, fmt, project, page):
    result_in_both(scratch.write(data), budgets, fmt, project, collected_page=page)


@st.composite
def collect_only_logs(draw) -> bytes:
    """The record file of a collect-only run, as the server plugin writes it: a
    SessionStart, collection errors, the CollectionFinish and the collected ids in
    CollectedIds lines of up to 40 ids (node ids of several files, values that are not
    strings now and then), a SessionFinish; sometimes cut in its last line."""
    body: list[dict] = [{"$report_type": "SessionStart", "pytest_version": "9.2.0", "root": "/r"}]
    if draw(st.booleans()):
        body.append({"$report_type": "CollectReport", "nodeid": "t.py", "outcome": "failed", "longrepr": "E boom"})
    fewest = draw(st.sampled_from([20, 5, 0]))  # 20 first: the simplest examples hold ids
    chunks = draw(st.lists(st.lists(COLLECTED_IDS, min_size=fewest, max_size=40), min_size=1, max_size=4))
    body.append({"$report_type": "CollectionFinish", "collected": sum(map(len, chunks))})
    body += [{"$report_type": "CollectedIds", "nodeids": chunk} for chunk in chunks]
    body.append({"$report_type": "SessionFinish", "exitstatus": draw(st.sampled_from([0, 2, 5])), "duration": 0.5})
    text = "".join(json.dumps(line, ensure_ascii=draw(st.booleans())) + "\n" for line in body)
    data = text.encode("utf-8")
    if draw(st.integers(0, 5)) == 5:  # not 0: the simplest examples hypothesis draws stay whole
        data = data[: draw(st.integers(len(data) // 2, len(data)))]
    return data


@pytest.mark.fuzz
@fuzz_settings(100)
@given(
    data=st.lists(st.one_of(collect_only_logs(), collect_only_logs(), report_logs()), min_size=1, max_size=4),
    page=COLLECTED_PAGES,
)
def test_collect_only_logs_give_the_same_collected_page_in_both(scratch, data, page):
    """A page of the collected ids of one record file, or of several read one after the
    other (natively too, not in parallel, when a page is asked for): the page and the
    file counts run over the files in input order, the same in both backends."""
    paths = [scratch.write(doc, f"r{i}.jsonl") for i, doc in enumerate(data)]
    result_in_both(paths, collected_page=page)


@pytest.mark.fuzz
@fuzz_settings(100)
@given(
    data=report_logs(), flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=4)
)
def test_damaged_report_logs_give_the_same_answer(scratch, data, flips):
    damaged = bytearray(data)
    for at, byte in flips:
        if damaged:
            damaged[at % len(damaged)] = byte
    result_in_both(scratch.write(bytes(damaged)))


@pytest.mark.fuzz
@fuzz_settings(30)
@given(depth=st.integers(120, 135), newline=st.booleans())
def test_the_nesting_limit_is_the_same(scratch, depth, newline):
    line = '{"$report_type": "Other", "x": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"
    data = '{"$report_type": "SessionStart"}\n' + line + ("\n" if newline else "")
    result_in_both(scratch.write(data.encode()))
