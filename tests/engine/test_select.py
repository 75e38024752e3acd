"""Node-id selection (docs/ENGINE.md, *Selection*) in both backends.

``summarize(..., select=[...])`` lists only the selected tests and collection errors while
counts stay the whole report's, and names the entries that matched no failing test. Each
case runs the native and the pure backend and demands byte-identical JSON, on made-up
reports written both as JUnit XML and as pytest-json-report (a class, a parametrised test,
a directory, a file, entries that match nothing) and on every file of the report corpora
(tests/helpers/corpus.py: the in-repo dialects, and the shared corpus when present), against an
oracle that applies the documented rule directly.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from xml.sax.saxutils import quoteattr

import orjson
import pytest
from helpers import backends, corpus

from pytest_mcp_server.engine import summarize
from pytest_mcp_server.engine.models import Budgets

# Large enough that nothing is cut: the oracle can filter the unselected summary.
EVERYTHING = Budgets(
    failures_listed=10_000, max_groups=10_000, max_examples=1_000, max_slowest=1_000, max_collection_errors=10_000
)


def selected_by(entries: Sequence[str], node_id: str) -> bool:
    """The documented rule, written independently of both backends."""
    for entry in entries:
        stem = entry.rstrip("/")
        if node_id == stem or node_id.startswith((stem + "::", stem + "[", stem + "/")):
            return True
    return False


def selected_in_both(paths: Sequence[Path], select: Sequence[str] | None, budgets: Budgets = EVERYTHING) -> dict:
    """Both backends with ``select`` and every failure listed (``EVERYTHING``): the same
    bytes (``backends.summary_in_both``); the parsed summary."""
    return backends.summary_in_both(paths, select=select, **budgets.model_dump())


# --------------------------------------------------------------------------------------
# A made-up run, written in both formats.

# (file, class or None, name, outcome, seconds, message). The classes TestX and TestXY
# and the tests test_p[..] and test_pq share prefixes that the rule must tell apart.
TESTS = [
    ("tests/unit/test_a.py", "TestX", "test_1", "failed", 0.5, "AssertionError: assert 1 == 2"),
    ("tests/unit/test_a.py", "TestX", "test_2", "passed", 3.0, None),
    ("tests/unit/test_a.py", "TestXY", "test_3", "failed", 0.1, "AssertionError: assert 3 == 4"),
    ("tests/unit/test_a.py", None, "test_p[1]", "failed", 0.2, "ValueError: bad value 1"),
    ("tests/unit/test_a.py", None, "test_p[2]", "passed", 2.0, None),
    ("tests/unit/test_a.py", None, "test_pq", "failed", 0.1, "ValueError: bad value 9"),
    ("tests/api/test_b.py", None, "test_c", "error", 1.0, "ConnectionError: refused"),
    ("tests/unitx/test_d.py", None, "test_e", "failed", 0.3, "KeyError: 'k'"),
]
BROKEN_MODULE = "tests/unit/test_broken.py"


def node_id(file: str, cls: str | None, name: str) -> str:
    return f"{file}::{cls}::{name}" if cls else f"{file}::{name}"


ALL_IDS = [node_id(f, c, n) for f, c, n, *_ in TESTS]


def listed_in_report_order(summary: dict) -> list[str]:
    """The node ids of the listed failures, in report order (the engine lists one
    failure per group first; which tests are listed is what these cases check)."""
    return sorted((f["node_id"] for f in summary["failures"]), key=ALL_IDS.index)


def write_junit(path: Path, tests: Sequence[tuple], broken: str | None) -> Path:
    cases = []
    for file, cls, name, outcome, seconds, message in tests:
        module = file.removesuffix(".py").replace("/", ".")
        classname = f"{module}.{cls}" if cls else module
        body = ""
        if outcome == "failed":
            body = f"<failure message={quoteattr(message)}>E   {message}\n\n{file}:3: Error</failure>"
        elif outcome == "error":
            setup = f'failed on setup with "{message}"'
            body = f"<error message={quoteattr(setup)}>E   {message}\n\n{file}:9: Error</error>"
        cases.append(
            f"<testcase classname={quoteattr(classname)} name={quoteattr(name)} "
            f'file="{file}" line="2" time="{seconds}">{body}</testcase>'
        )
    if broken is not None:
        module = broken.removesuffix(".py").replace("/", ".")
        cases.append(
            f'<testcase classname="" name="{module}" time="0"><error message="collection failure">'
            f"E   ImportError: No module named 'x'</error></testcase>"
        )
    path.write_text(f'<testsuites><testsuite name="pytest">{"".join(cases)}</testsuite></testsuites>')
    return path


def write_pytest_json(path: Path, tests: Sequence[tuple], broken: str | None) -> Path:
    entries = []
    for file, cls, name, outcome, seconds, message in tests:
        failing_phase = {"failed": "call", "error": "setup"}.get(outcome)
        entry: dict = {"nodeid": node_id(file, cls, name), "outcome": outcome}
        for phase in ("setup", "call", "teardown"):
            if outcome == "error" and phase != "setup":
                continue
            data: dict = {"duration": seconds if phase == "call" or failing_phase == phase else 0.0}
            data["outcome"] = "failed" if phase == failing_phase else "passed"
            if phase == failing_phase:
                data["crash"] = {"path": file, "lineno": 3, "message": message}
                data["longrepr"] = f"E   {message}\n\n{file}:3: Error"
            entry[phase] = data
        entries.append(entry)
    collectors = []
    if broken is not None:
        collectors.append(
            {"nodeid": broken, "outcome": "failed", "longrepr": "E   ImportError: No module named 'x'", "result": []}
        )
    doc = {"exitcode": 1, "root": "/repo", "summary": {}, "collectors": collectors, "tests": entries}
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture(params=["junit", "pytest-json"])
def run_report(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """The made-up run as one report file, in each format."""
    if request.param == "junit":
        return write_junit(tmp_path / "run.xml", TESTS, BROKEN_MODULE)
    return write_pytest_json(tmp_path / "run.json", TESTS, BROKEN_MODULE)


def test_the_made_up_run_has_the_node_ids_the_cases_rely_on(run_report: Path) -> None:
    whole = selected_in_both([run_report], None)
    assert listed_in_report_order(whole) == [i for i, t in zip(ALL_IDS, TESTS, strict=True) if t[3] != "passed"]
    assert [e["path"] for e in whole["collection_errors"]] == [BROKEN_MODULE]
    assert whole["unmatched"] == []


def test_a_class_and_a_parametrised_test_select_what_is_below_them_only(run_report: Path) -> None:
    select = [
        "tests/unit/test_a.py::TestX",  # not TestXY
        "tests/unit/test_a.py::test_p",  # test_p[1], test_p[2], not test_pq
        "tests/nowhere",
        "tests/unit/test_a.py::TestX::test_2",  # passes: selects, but is unmatched
    ]
    whole = selected_in_both([run_report], None)
    s = selected_in_both([run_report], select)
    assert s["counts"] == whole["counts"] and s["duration_s"] == whole["duration_s"] and s["files"] == whole["files"]
    assert listed_in_report_order(s) == [
        "tests/unit/test_a.py::TestX::test_1",
        "tests/unit/test_a.py::test_p[1]",
    ]
    assert [(g["exception"], g["count"], g["examples"]) for g in s["groups"]] == [
        ("AssertionError", 1, ["tests/unit/test_a.py::TestX::test_1"]),
        ("ValueError", 1, ["tests/unit/test_a.py::test_p[1]"]),
    ]
    assert s["collection_errors"] == []
    assert [t["node_id"] for t in s["slowest"]] == [
        "tests/unit/test_a.py::TestX::test_2",
        "tests/unit/test_a.py::test_p[2]",
        "tests/unit/test_a.py::TestX::test_1",
        "tests/unit/test_a.py::test_p[1]",
    ]
    assert s["unmatched"] == ["tests/nowhere", "tests/unit/test_a.py::TestX::test_2"]


def test_a_directory_selects_its_tests_and_collection_errors_but_not_a_sibling_prefix(run_report: Path) -> None:
    s = selected_in_both([run_report], ["tests/unit/"])
    assert listed_in_report_order(s) == [
        "tests/unit/test_a.py::TestX::test_1",
        "tests/unit/test_a.py::TestXY::test_3",
        "tests/unit/test_a.py::test_p[1]",
        "tests/unit/test_a.py::test_pq",
    ]  # not tests/unitx/...
    assert [e["path"] for e in s["collection_errors"]] == [BROKEN_MODULE]
    assert s["unmatched"] == []
    # Without the trailing slash the rule is the same.
    assert selected_in_both([run_report], ["tests/unit"]) == s


def test_a_file_selects_an_erroring_test_with_its_phase(run_report: Path) -> None:
    s = selected_in_both([run_report], ["tests/api/test_b.py", BROKEN_MODULE])
    assert sorted((f["node_id"], f["outcome"], f["phase"]) for f in s["failures"]) == [
        ("tests/api/test_b.py::test_c", "error", "setup")
    ]
    assert [e["path"] for e in s["collection_errors"]] == [BROKEN_MODULE]
    assert s["unmatched"] == []


def test_omitted_counts_only_the_selected_items(run_report: Path) -> None:
    budgets = Budgets(failures_listed=1, max_groups=1, max_collection_errors=0)
    s = selected_in_both([run_report], ["tests/unit"], budgets)
    assert listed_in_report_order(s) == ["tests/unit/test_a.py::TestX::test_1"]
    o = s["omitted"]
    # 4 selected failures (1 listed), 2 selected groups (1 listed), 1 selected collection error.
    assert (o["failures"], o["groups"], o["collection_errors"]) == (3, 1, 1)
    whole = selected_in_both([run_report], None, budgets)
    assert (whole["omitted"]["failures"], whole["omitted"]["collection_errors"]) == (5, 1)  # 6 failures in all


def test_an_empty_selection_lists_nothing_and_entries_matching_nothing_are_unmatched(run_report: Path) -> None:
    whole = selected_in_both([run_report], None)
    empty = selected_in_both([run_report], [])
    assert empty["counts"] == whole["counts"]
    assert (empty["failures"], empty["groups"], empty["collection_errors"], empty["slowest"]) == ([], [], [], [])
    assert empty["omitted"] == dict.fromkeys(whole["omitted"], 0)
    assert empty["unmatched"] == []
    # Near misses: a partial name, a trailing `::`, a longer id; duplicates are kept in order.
    entries = ["tests/unit/test_a.py::Test", "tests/unit/test_a.py::", "tests/api/test_b.py::test_c[1]", "x", "x"]
    none = selected_in_both([run_report], entries)
    assert none["failures"] == [] and none["collection_errors"] == []
    assert none["unmatched"] == entries


def test_shards_merge_the_matched_entries(tmp_path: Path) -> None:
    # The native backend parses shards in parallel and merges them: an entry matched only
    # in the second shard is not unmatched, and the lists follow input order.
    first = write_junit(tmp_path / "a.xml", TESTS[:3], None)
    second = write_junit(tmp_path / "b.xml", TESTS[3:], BROKEN_MODULE)
    select = ["tests/unit/test_a.py::TestX", "tests/api", BROKEN_MODULE, "tests/unitx/test_d.py::test_f"]
    s = selected_in_both([first, second], select)
    assert listed_in_report_order(s) == [
        "tests/unit/test_a.py::TestX::test_1",
        "tests/api/test_b.py::test_c",
    ]
    assert [e["path"] for e in s["collection_errors"]] == [BROKEN_MODULE]
    assert s["unmatched"] == ["tests/unitx/test_d.py::test_f"]


def test_summarize_takes_a_list_and_refuses_a_single_string(run_report: Path, backend: str) -> None:
    summary = summarize(run_report, backend=backend, select=("tests/api/", "nothing"))
    assert [f.node_id for f in summary.failures] == ["tests/api/test_b.py::test_c"]
    assert summary.unmatched == ["nothing"]
    # A string is a sequence of strings too: read as characters it would select nothing.
    with pytest.raises(TypeError, match="list of node ids"):
        summarize(run_report, backend=backend, select="tests/unit")


# --------------------------------------------------------------------------------------
# The corpus: selections cut from each file's own node ids, checked against the oracle.

CORPUS_FILES = corpus.files("*.xml") + corpus.files("*.json")


def selections_for(ids: list[str], rng: random.Random) -> list[list[str]]:
    """Entries of every kind from real node ids: whole ids, the part before the last
    ``::`` (a class or file), before ``[`` (a parametrised test), a directory, a cut at a
    random place (usually not a boundary), and an id that is not there."""
    picked = ids[:3] + rng.sample(ids, min(3, len(ids)))
    entries: list[str] = []
    for i in picked:
        entries.append(i)
        if "::" in i:
            entries.append(i.rsplit("::", 1)[0])
        if "[" in i:
            entries.append(i.split("[", 1)[0])
        if "/" in i:
            entries.append(i.rsplit("/", 1)[0] + "/")
        if i:
            entries.append(i[: rng.randrange(len(i) + 1)])
    return [entries, entries[:1] + ["no/such/test.py::t"], [e for e in entries if "::" not in e] or ["-"]]


@pytest.mark.parametrize("path", corpus.params(CORPUS_FILES))
def test_corpus_selections_list_exactly_what_the_rule_selects(path: Path) -> None:
    if backends.kind_in_both([path]) != "ok":
        return  # refusals are compared by tests/engine/test_junit_corpus.py; a selection changes nothing there
    whole = selected_in_both([path], None)
    ids = [f["node_id"] for f in whole["failures"]] + [t["node_id"] for t in whole["slowest"]]
    ids += [e["path"] for e in whole["collection_errors"]]
    if not ids:
        ids = ["tests/test_x.py::test_y"]
    rng = random.Random(corpus.relative(path))
    for select in selections_for(ids, rng):
        s = selected_in_both([path], select)
        assert (s["counts"], s["duration_s"], s["files"]) == (whole["counts"], whole["duration_s"], whole["files"])
        failures = [f for f in whole["failures"] if selected_by(select, f["node_id"])]
        errors = [e for e in whole["collection_errors"] if selected_by(select, e["path"])]
        # The same failures, each as in the whole summary (the order follows each
        # summary's own groups: one failure per group first).
        assert sorted(s["failures"], key=orjson.dumps) == sorted(failures, key=orjson.dumps)
        assert s["collection_errors"] == errors
        slowest = [t for t in whole["slowest"] if selected_by(select, t["node_id"])]
        if len(whole["slowest"]) < EVERYTHING.max_slowest:
            assert s["slowest"] == slowest
        else:  # the whole list was cut: the selected tests it holds come first, in its order
            assert s["slowest"][: len(slowest)] == slowest
        if all(g["id"] != "gother" for g in whole["groups"]):
            assert sum(g["count"] for g in s["groups"]) == len(failures)
        listed = [f["node_id"] for f in failures] + [e["path"] for e in errors]
        assert s["unmatched"] == [e for e in select if not any(selected_by([e], i) for i in listed)]
        # The default budgets cut the lists: the bytes must still agree.
        selected_in_both([path], select, Budgets())
