"""Naming the change behind a failure through the real server over real stdio:
``execute_tests`` with ``coverage`` on projects made here in real git repositories,
where a committed, passing project gets a wrong-value bug that no traceback passes
through (the assertion fails in the test), and the answer must name the changed lines
the failing tests ran, ranked by failing against passing tests (Ochiai).

Cases: a changed branch only the failing tests take (named by its line, every failing
test and no passing one); a ``return`` moved into a branch the failing tests skip (its
line never runs for them: named through the function that holds it); two changes, one
run only by passing tests (not named) and one by the failing ones (named); a green run
and a coverage run outside git (no suspects); an affected run outside git (the function
the map saw change is named whole); a comment-only change (nothing to name). Without
the server: the ranking itself on hand-made contexts (every input is plain data).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.backends import summary_in_both
from helpers.server_support import connect, git, run, text_of
from helpers.server_support import typed_stdio_server as server

from pytest_mcp_server.domain.coverage_answer import ChangedLines
from pytest_mcp_server.domain.suspects import (
    node_id_of_context,
    rank_suspects,
    source_shape,
    spans_to_record,
)
from pytest_mcp_server.domain.tools import ExecuteResult
from pytest_mcp_server.engine.coverage_reports import LineContexts
from pytest_mcp_server.engine.models import ProjectCode, SuspectGroup

NUMBERS = """\
def intcomma(value):
    text = str(value)
    if value < 0:
        return "-" + intcomma(-value)
    out = ""
    while len(text) > 3:
        out = "," + text[-3:] + out
        text = text[:-3]
    return text + out


def clamp(value, low, high):
    if value < low:
        return low
    if value > high:
        return high
    return value


def size_label(n):
    label = "small"
    if n > 100:
        label = "large"
    return label
"""
TESTS = """\
import pytest

from pkg.numbers import clamp, intcomma, size_label


@pytest.mark.parametrize("n, text", [(1, "1"), (1000, "1,000"), (1234567, "1,234,567"), (-1000, "-1,000")])
def test_intcomma(n, text):
    assert intcomma(n) == text


def test_intcomma_in_a_sentence():
    assert f"total: {intcomma(5000)} items" == "total: 5,000 items"


@pytest.mark.parametrize("v, expected", [(5, 5), (-1, 0), (11, 10)])
def test_clamp(v, expected):
    assert clamp(v, 0, 10) == expected


@pytest.mark.parametrize("n, label", [(5, "small"), (50, "small"), (500, "large")])
def test_size_label(n, label):
    assert size_label(n) == label
"""


def make_project(tmp_path: Path, *, use_git: bool = True) -> Path:
    """The project with passing tests, committed (when ``use_git``)."""
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "numbers.py").write_text(NUMBERS)
    (root / "tests" / "test_numbers.py").write_text(TESTS)
    if use_git:
        git(root, "init", "-q")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "base")
    return root


def change(root: Path, old: str, new: str) -> None:
    path = root / "pkg" / "numbers.py"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def measured_run(root: Path, artifacts: Path) -> tuple[ExecuteResult, str]:
    async def body():
        async with connect(server(root, artifacts), "auto") as client:
            answer = await client.call_tool("execute_tests", {"coverage": True})
            return ExecuteResult.model_validate(answer.structured_content), text_of(answer)

    return run(body)


def test_a_wrong_branch_only_failing_tests_take_is_named_by_its_line(tmp_path):
    root = make_project(tmp_path)
    # the thousands separator becomes "." in the loop: every test with 4+ digits fails,
    # in the test's assert, with no frame in pkg/numbers.py
    change(root, 'out = "," + text[-3:] + out', 'out = "." + text[-3:] + out')
    result, text = measured_run(root, tmp_path / "artifacts")

    assert result.status == "failed"
    assert result.summary.counts.failed == 4
    top = result.suspects[0]
    assert (top.path, top.lines, top.by) == ("pkg/numbers.py", "7", "line")
    assert (top.failing, top.failing_total) == (4, 4)
    assert top.passing == 0  # test_intcomma[1-1] skips the loop; the others never call intcomma
    assert top.passing_total == 7
    assert "changed code run by failing tests: pkg/numbers.py:7 (4 of 4 failing, 0 of 7 passing)" in text
    # the headline comes right after the verdict line
    assert text.splitlines()[1].startswith("changed code run by failing tests: pkg/numbers.py:7")
    # two assertion sites (test_intcomma's and the sentence test's), no frame in
    # pkg/numbers.py, one changed line they all ran: one group (the engine's, keyed by the
    # suspect), one entry in full, and the other site's test named first among the group's
    # other failures
    (group,) = result.summary.groups
    assert group.count == 4
    assert {f.group for f in result.summary.failures} == {group.id}
    assert text.count("- FAILED ") == 1
    assert "also in 3 more: test_intcomma_in_a_sentence, test_intcomma[1234567-1,234,567], ..." in text


def test_a_return_moved_into_a_skipped_branch_is_named_through_its_function(tmp_path):
    root = make_project(tmp_path)
    # the return moves into the branch: small values fall off the end and return None
    change(root, '        label = "large"\n    return label\n', '        label = "large"\n        return label\n')
    result, text = measured_run(root, tmp_path / "artifacts")

    assert result.summary.counts.failed == 2
    # line 24, the moved return, runs only for 500 (passing); the failing tests ran
    # size_label's other lines, so the change is named through its function
    top = result.suspects[0]
    assert (top.path, top.lines, top.by) == ("pkg/numbers.py", "24", "function")
    assert (top.failing, top.failing_total, top.passing, top.passing_total) == (2, 2, 1, 9)
    assert "changed code in a function run by failing tests: pkg/numbers.py:24 (2 of 2 failing, 1 of 9 passing)" in text


def test_only_the_change_the_failing_tests_ran_is_named(tmp_path):
    root = make_project(tmp_path)
    change(root, "    if value > high:\n", "    if value >= high:\n")  # harmless: run by passing tests only
    change(root, "    while len(text) > 3:\n", "    while len(text) > 4:\n")  # groups of four digits
    result, text = measured_run(root, tmp_path / "artifacts")

    assert result.summary.counts.failed == 4
    paths_lines = [(s.path, s.lines) for s in result.suspects]
    assert paths_lines == [("pkg/numbers.py", "6")]
    assert (result.suspects[0].failing, result.suspects[0].passing) == (4, 1)  # intcomma(1) ran it and passed
    # the clamp change ran only in passing tests: never named
    assert ("pkg/numbers.py", "15") not in paths_lines
    assert "pkg/numbers.py:15" not in text


def test_deleted_lines_point_at_the_code_where_they_were(tmp_path):
    """A deletion adds no line for a diff to name: the lines on either side of where the
    deleted code was stand for it (here the clamp's upper bound goes: between ``return low``
    and ``return value``, the one the failing test runs)."""
    root = make_project(tmp_path)
    change(root, "    if value > high:\n        return high\n", "")
    result, text = measured_run(root, tmp_path / "artifacts")
    assert result.summary.counts.failed == 1
    top = result.suspects[0]
    assert (top.path, top.lines, top.by, top.failing) == ("pkg/numbers.py", "14-15", "line", 1)
    assert "changed code run by failing tests: pkg/numbers.py:14-15 (1 of 1 failing" in text
    # a deletion is no changed line of the coverage summary's: nothing "changed and not run"
    assert "changed lines not run" not in text


@pytest.mark.parametrize("mode", ["coverage", "affected"])
def test_an_unused_new_function_beside_the_bug_is_listed_once_as_not_run(tmp_path, mode):
    """The edit that breaks ``intcomma`` also adds a function no test calls: only its
    ``def`` line ran, at import. The answer names the broken line as the suspect and the
    new function's body once, under the changed lines not run (a measured run; an
    affected run, which names only what its tests ran, leaves it out); never as code run
    at import."""
    root = make_project(tmp_path)

    async def body():
        async with connect(server(root, tmp_path / "artifacts"), "auto") as client:
            if mode == "affected":
                await client.call_tool("execute_tests", {"affected": True})  # builds the map
            change(root, 'out = "," + text[-3:] + out', 'out = "." + text[-3:] + out')
            path = root / "pkg" / "numbers.py"
            path.write_text(path.read_text() + '\n\ndef percent(x):\n    value = x * 100\n    return f"{value}%"\n')
            answer = await client.call_tool("execute_tests", {mode: True})
            return ExecuteResult.model_validate(answer.structured_content), text_of(answer)

    result, text = run(body)
    assert result.summary.counts.failed == 4, text
    first = len(NUMBERS.splitlines()) + 3  # the new def line
    assert [(s.path, s.lines) for s in result.suspects] == [("pkg/numbers.py", "7")], text
    assert "run at import" not in text, text
    if mode == "coverage":  # the measured run lists what it did not run, its body once
        assert f"changed lines not run: pkg/numbers.py {first + 1}-{first + 2}" in text, text
        assert text.count("changed lines not run") == 1, text
    else:  # an affected run names only what its tests ran
        # the body's line numbers as the text would name them, not any digits ("in 0.28s")
        assert f"numbers.py {first + 1}" not in text and f"numbers.py:{first + 1}" not in text, text


def test_an_affected_run_names_the_change_its_failing_tests_ran(tmp_path):
    root = make_project(tmp_path)

    async def body():
        async with connect(server(root, tmp_path / "artifacts"), "auto") as client:
            first = await client.call_tool("execute_tests", {"affected": True})  # builds the map
            change(root, 'out = "," + text[-3:] + out', 'out = "." + text[-3:] + out')
            second = await client.call_tool("execute_tests", {"affected": True})
            return ExecuteResult.model_validate(first.structured_content), second

    first, second = run(body)
    assert first.status == "passed" and first.suspects is None
    result, text = ExecuteResult.model_validate(second.structured_content), text_of(second)
    # only the tests that ran intcomma run again; the four that reach the loop fail
    assert result.selection.selected == 5
    assert result.summary.counts.failed == 4
    top = result.suspects[0]
    assert (top.path, top.lines, top.by, top.failing, top.passing) == ("pkg/numbers.py", "7", "line", 4, 0)
    assert top.passing_total == 1  # test_intcomma[1-1]: the only selected test that passed
    lines = text.splitlines()
    assert lines[0].startswith("Affected: 5 of 11 tests")
    assert lines[2] == "changed code run by failing tests: pkg/numbers.py:7 (4 of 4 failing, 0 of 1 passing)"
    (group,) = result.summary.groups  # two assertion sites, one cause
    assert group.count == 4


def test_an_affected_run_without_git_names_the_function_the_map_saw_change(tmp_path):
    """No git diff to say which lines changed: the functions whose fingerprints the map
    does not hold stand for it, and the one the failing tests ran is named whole."""
    root = make_project(tmp_path, use_git=False)

    async def body():
        async with connect(server(root, tmp_path / "artifacts"), "auto") as client:
            await client.call_tool("execute_tests", {"affected": True})  # builds the map
            change(root, 'out = "," + text[-3:] + out', 'out = "." + text[-3:] + out')
            return await client.call_tool("execute_tests", {"affected": True})

    answer = run(body)
    result, text = ExecuteResult.model_validate(answer.structured_content), text_of(answer)
    assert result.summary.counts.failed == 4
    top = result.suspects[0]
    assert (top.path, top.lines, top.failing, top.passing) == ("pkg/numbers.py", "2-9", 4, 1)
    assert len(result.suspects) == 1  # clamp and size_label did not change
    assert text.splitlines()[2].startswith(f"changed code run by failing tests: pkg/numbers.py:{top.lines} ")


def test_a_repeated_measured_run_names_the_change_its_last_run_failed_on(tmp_path):
    root = make_project(tmp_path)
    change(root, "    while len(text) > 3:\n", "    while len(text) > 4:\n")

    async def body():
        async with connect(server(root, tmp_path / "artifacts"), "auto") as client:
            answer = await client.call_tool("execute_tests", {"coverage": True, "repeat": 2})
            return ExecuteResult.model_validate(answer.structured_content), text_of(answer)

    result, text = run(body)
    assert result.runs == 2 and result.summary.counts.failed == 4
    top = result.suspects[0]
    assert (top.path, top.lines, top.failing, top.passing) == ("pkg/numbers.py", "6", 4, 1)
    assert "changed code run by failing tests: pkg/numbers.py:6 (4 of 4 failing, 1 of 7 passing)" in text


SEPARATORS = """\
SEPARATOR = ","


def join(parts):
    return SEPARATOR.join(parts)
"""
BUILT_SEPARATORS = """\
def default_separator():
    return ","


SEPARATOR = default_separator()


def join(parts):
    return SEPARATOR.join(parts)
"""
SEPARATOR_TESTS = """\
from pkg.separators import join


def test_join_two():
    assert join(["a", "b"]) == "a,b"


def test_join_one():
    assert join(["a"]) == "a"
"""


def separators_project(root: Path, source: str) -> Path:
    """``pkg/separators.py`` (``source``) and its two tests, committed."""
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "separators.py").write_text(source)
    (root / "tests" / "test_separators.py").write_text(SEPARATOR_TESTS)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root / "pkg" / "separators.py"


@pytest.mark.parametrize(
    ("source", "old", "new", "line"),
    [
        (SEPARATORS, 'SEPARATOR = ","', 'SEPARATOR = ";"', "1"),  # a constant
        (BUILT_SEPARATORS, 'return ","', 'return ";"', "2"),  # a function only a module-level call runs
    ],
)
def test_changed_code_run_only_at_import_is_named_as_run_before_every_test(tmp_path, source, old, new, line):
    """The separator is set when the module is imported, outside every test's context;
    changed, it is what broke ``join``, and no test ran its line (nor its function) as a
    test. Named alike by a measured run (pytest-cov's contexts) and an affected run (the
    map's)."""
    measured = separators_project(tmp_path / "measured", source)
    measured.write_text(source.replace(old, new))
    result, text = measured_run(tmp_path / "measured", tmp_path / "a1")

    affected_root = tmp_path / "affected"
    module = separators_project(affected_root, source)

    async def body():
        async with connect(server(affected_root, tmp_path / "a2"), "auto") as client:
            await client.call_tool("execute_tests", {"affected": True})  # builds the map
            module.write_text(source.replace(old, new))
            answer = await client.call_tool("execute_tests", {"affected": True})
            return ExecuteResult.model_validate(answer.structured_content), text_of(answer)

    affected, affected_text = run(body)
    expected = (
        "changed code run at import, before each test that ran: "
        f"pkg/separators.py:{line} (1 of 1 failing, 1 of 1 passing)"
    )
    for answer, answer_text in ((result, text), (affected, affected_text)):
        assert answer.summary.counts.failed == 1
        (top,) = answer.suspects
        assert (top.path, top.lines, top.by, top.failing, top.passing) == ("pkg/separators.py", line, "import", 1, 1)
        assert expected in answer_text.splitlines()


def test_no_suspects_for_a_green_run_or_outside_git(tmp_path):
    green = make_project(tmp_path / "green")
    change(green, "    return value\n", "    return value  # reviewed\n")  # a comment: nothing to name
    result, text = measured_run(green, tmp_path / "a1")
    assert result.status == "passed"
    assert result.suspects is None
    assert "changed code" not in text

    plain = make_project(tmp_path / "plain", use_git=False)
    change(plain, 'out = "," + text[-3:] + out', 'out = "." + text[-3:] + out')
    result, text = measured_run(plain, tmp_path / "a2")
    assert result.status == "failed"
    assert result.suspects is None  # no git: no change to name
    assert "changed code" not in text


# -- the ranking on plain data --------------------------------------------------------


def test_ranking_is_ochiai_and_counts_each_test_once_across_its_phases():
    changed = ChangedLines(ranges={"m.py": [(2, 2), (6, 6)]})
    source = "def f(x):\n    return x + 1\n\n\ndef g(x):\n    return x * 2\n"
    outcomes = {"t::a": "failed", "t::b": "failed", "t::c": "passed", "t::d": "passed", "t::e": "skipped"}
    measured = {
        "m.py": LineContexts(
            executable=frozenset({1, 2, 5, 6}),
            contexts={
                1: ("",),
                2: ("t::a|run", "t::a|setup", "t::c|run"),  # 1 failing (twice), 1 passing
                5: ("",),
                6: ("t::a|run", "t::b|run", "t::c|run", "t::d|run", "t::e|run"),  # 2 failing, 2 passing
            },
        )
    }
    suspects = rank_suspects(changed, measured, outcomes, {"m.py": source}, limit=3)
    # Ochiai: line 2 = 1/sqrt(2*2) = 0.5; line 6 = 2/sqrt(2*4) = 0.707
    assert [(s.lines, s.failing, s.passing) for s in suspects] == [("6", 2, 2), ("2", 1, 1)]
    assert rank_suspects(changed, measured, outcomes, {"m.py": source}, limit=1)[0].lines == "6"
    assert rank_suspects(changed, measured, {"t::c": "passed"}, {"m.py": source}, limit=3) == []


def test_contexts_functions_and_multi_line_statements():
    assert node_id_of_context("tests/t.py::test_a[x|y]|run") == "tests/t.py::test_a[x|y]"
    assert node_id_of_context("") is None
    source = "@dec\ndef f():\n    def inner():\n        return 1\n    return inner\n\nx = f(\n    1,\n    2,\n)\n"
    shape = source_shape(source)
    assert shape.functions == [(1, 5), (3, 4)]
    # lines 8-10 belong to the statement of line 7 (coverage.py records it there)
    assert {line: shape.statement_start[line] for line in (8, 9, 10)} == {8: 7, 9: 7, 10: 7}
    assert source_shape("def broken(:\n").functions == []


def test_an_affected_run_records_the_lines_of_the_functions_holding_the_change():
    """The spans whose functions' lines an affected run records (``spans_to_record``):
    the outermost function holding each changed line or deletion, decorators included;
    module-level and class-body code adds none (the recorder writes it line by line
    anyway); every line of a new file or of one that does not parse."""
    source = (
        "import x\n\n@dec\ndef f():\n    def g():\n        return 1\n    return g()\n\n"
        "Y = 2\n\nclass C:\n    a = 1\n\n    def m(self):\n        return 2\n"
    )
    in_nested_at_module_and_in_method = ChangedLines(ranges={"p.py": [(6, 6), (9, 9), (15, 15)]})
    assert spans_to_record(in_nested_at_module_and_in_method, "p.py", source) == [(3, 7), (14, 15)]
    assert spans_to_record(ChangedLines(deletions={"p.py": [7]}), "p.py", source) == [(3, 7)]
    assert spans_to_record(ChangedLines(ranges={"p.py": [(12, 12)]}), "p.py", source) == []
    assert spans_to_record(ChangedLines(new_files={"p.py"}), "p.py", source) is None
    assert spans_to_record(ChangedLines(ranges={"p.py": [(1, 1)]}), "p.py", "def broken(:\n") is None


def test_a_change_inside_a_multi_line_statement_is_counted_at_its_first_line():
    # the changed argument on line 3 is recorded by coverage.py under line 2
    changed = ChangedLines(ranges={"m.py": [(3, 3)]})
    source = "def f(x):\n    return g(\n        x + 1,\n    )\n"
    measured = {"m.py": LineContexts(executable=frozenset({1, 2}), contexts={1: ("",), 2: ("t::a|run",)})}
    (suspect,) = rank_suspects(changed, measured, {"t::a": "failed"}, {"m.py": source}, limit=3)
    assert (suspect.lines, suspect.failing, suspect.by) == ("3", 1, "line")


def test_a_new_function_no_one_calls_is_no_suspect_though_its_def_line_ran_at_import():
    """The same edit adds a function nobody calls (lines 4-5) and breaks ``f`` (line 2):
    only the definition of the new function ran, at import, and that ran nothing of it,
    so it is no suspect (it would contradict ``changed lines not run`` beside it); the
    broken line is."""
    changed = ChangedLines(ranges={"m.py": [(2, 2), (4, 5)]})
    source = "def f(x):\n    return x - 1\n\ndef unused(y):\n    return y\n"
    contexts = {1: ("",), 2: ("t::a|run",), 4: ("",)}
    measured = {"m.py": LineContexts(executable=frozenset({1, 2, 4, 5}), contexts=contexts)}
    suspects = rank_suspects(changed, measured, {"t::a": "failed"}, {"m.py": source}, limit=3)
    assert [(s.lines, s.by) for s in suspects] == [("2", "line")]
    # a decorated one alike: its decorator line is part of its definition
    decorated = "def f(x):\n    return x - 1\n\n@staticmethod\ndef unused(y):\n    return y\n"
    changed = ChangedLines(ranges={"m.py": [(2, 2), (4, 6)]})
    contexts = {1: ("",), 2: ("t::a|run",), 4: ("",), 5: ("",)}
    measured = {"m.py": LineContexts(executable=frozenset({1, 2, 4, 5, 6}), contexts=contexts)}
    suspects = rank_suspects(changed, measured, {"t::a": "failed"}, {"m.py": decorated}, limit=3)
    assert [(s.lines, s.by) for s in suspects] == [("2", "line")]


def test_the_engine_groups_the_failures_a_suspect_explains_before_cutting_groups(tmp_path):
    """With a suspect (the changed lines the failing tests ran), a failure of one of its
    tests with no frame of the code under test joins the suspect's group whatever its
    message or assertion site, in both backends, before ``max_groups`` cuts the list; a
    failure with a frame in the code under test, or of a test that did not run the
    suspect, keeps its own group."""

    def failing(node_id: str, path: str, line: int, message: str, frames: list[tuple[str, int]]) -> list[dict]:
        entries = [
            {
                "type": "ReprEntry",
                "data": {
                    "lines": [f"E   {message}"],
                    "reprfuncargs": None,
                    "reprlocals": None,
                    "reprfileloc": {"path": p, "lineno": n, "message": "AssertionError"},
                    "style": "short",
                },
            }
            for p, n in frames
        ]
        longrepr = {
            "reprcrash": {"path": f"/r/{path}", "lineno": line, "message": message},
            "reprtraceback": {"reprentries": entries, "extraline": None, "style": "short"},
            "sections": [],
            "chain": None,
        }
        return [
            {
                "$report_type": "TestReport",
                "nodeid": node_id,
                "when": "call",
                "outcome": "failed",
                "longrepr": longrepr,
                "duration": 0.1,
            },
            {"$report_type": "TestReport", "nodeid": node_id, "when": "teardown", "outcome": "passed"},
        ]

    lines = [{"$report_type": "SessionStart", "root": "/r"}]
    for n in ("a", "a2", "a3"):
        lines += failing(f"tests/t.py::{n}", "tests/t.py", 3, "AssertionError: assert 1 == 2", [("tests/t.py", 3)])
    lines += failing("tests/u.py::b", "tests/u.py", 5, "AssertionError: assert 'x' == 'y'", [("tests/u.py", 5)])
    lines += failing("tests/v.py::c", "pkg/m.py", 7, "AssertionError: wrong", [("tests/v.py", 2), ("pkg/m.py", 7)])
    lines += failing("tests/w.py::d", "tests/w.py", 9, "AssertionError: assert 3 == 4", [("tests/w.py", 9)])
    lines.append({"$report_type": "SessionFinish", "exitstatus": 1, "duration": 1.0})
    log = tmp_path / "r.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    project = ProjectCode(root="/r", packages=("pkg",))
    explained = frozenset({"tests/t.py::a", "tests/t.py::a2", "tests/t.py::a3", "tests/u.py::b", "tests/v.py::c"})
    suspect = SuspectGroup(key="pkg/m.py:7", node_ids=explained)
    plain = summary_in_both(log, project=project)
    assert sorted(g["count"] for g in plain["groups"]) == [1, 1, 1, 3]
    grouped = summary_in_both(log, project=project, suspect=suspect, max_groups=1)
    [group] = grouped["groups"]
    # each assertion site's first failure first, then the others in report order
    assert (group["count"], group["examples"]) == (4, ["tests/t.py::a", "tests/u.py::b", "tests/t.py::a2"])
    assert grouped["omitted"]["groups"] == 2  # tests/v.py::c (a frame in pkg) and tests/w.py::d (not explained)
    assert grouped["failures"][0]["node_id"] == "tests/t.py::a"
    assert {f["group"] for f in grouped["failures"][:4]} == {group["id"]}  # a, a2, a3 and b: one cause


def test_data_of_only_the_lines_that_ran_takes_the_statements_as_executable():
    # an affected run's map data names only lines that ran: line 3, which no test ran,
    # is still a hunk, found through the function whose line 2 the failing test ran
    changed = ChangedLines(ranges={"m.py": [(3, 3)]})
    source = "def f(x):\n    y = x + 1\n    return y\n"
    contexts = {2: ("t::a",)}
    partial = {"m.py": LineContexts(executable=frozenset({2}), contexts=contexts, complete=False)}
    (suspect,) = rank_suspects(changed, partial, {"t::a": "failed"}, {"m.py": source}, limit=3)
    assert (suspect.lines, suspect.by, suspect.failing) == ("3", "function", 1)
    whole = {"m.py": LineContexts(executable=frozenset({2}), contexts=contexts)}  # a report's: line 3 is not code
    assert rank_suspects(changed, whole, {"t::a": "failed"}, {"m.py": source}, limit=3) == []
