"""Change-aware runs through the real server over real stdio: ``execute_tests`` and
``discover_tests`` with ``affected`` on a small project in a real git repository, run
by real pytest under coverage.py, with the test map in the artifacts directory.

What an agent relies on: the first run builds the map and runs everything; after
that, an edit inside one function runs exactly the tests that ran it, and an edit to
another function of the same file (or to a function no test runs) runs none of them; a
new test runs; a test that failed runs again until it passes; a change the map cannot
see (a conftest hook, a newly installed distribution) runs everything; with nothing affected nothing runs and the answer
says so; the plan (``discover_tests``) is what the run then does; a map file that
cannot be trusted is rebuilt with a notice; an interpreter without coverage.py gets a
tool error naming the install command; without git it works the same (fingerprints,
not diffs); within a ``keywords`` selection only that selection is run and recorded;
two calls at once both land in the map; a run killed by its timeout writes nothing, and
its answer still carries the selection.
"""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

import anyio
from helpers.affected_support import affected_run, edit, kept_stats, map_rows, ran, reasons
from helpers.interpreters import link_distribution, python_with
from helpers.server_support import connect, git, run, text_of
from helpers.server_support import typed_stdio_server as server
from mcp import Client

from pytest_mcp_server.domain.failures import ToolFailureDetail
from pytest_mcp_server.domain.tools import DiscoverResult
from pytest_mcp_server.run.pytest_plugin.pytest_mcp_server_shared import stat_key

CALC = """\
def add(a, b):
    return a + b


def mul(a, b):
    return a * b


def unused(a):
    return -a
"""
TEST_ADD = """\
from pkg.calc import add


def test_add_small():
    assert add(1, 2) == 3


def test_add_negative():
    assert add(-1, -2) == -3
"""
TEST_MUL = """\
from pkg.calc import mul


def test_mul():
    assert mul(2, 3) == 6
"""
NEW_TEST = """

def test_add_zero():
    assert add(0, 5) == 5
"""


COUNTING_CONFTEST = """\
from pathlib import Path


def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # one line per pytest start, outside the project
        with open(Path(__file__).resolve().parent.parent / "pytest-starts.log", "a") as f:
            f.write("start\\n")
"""


def make_project(tmp_path: Path, conftest: str = "", *, use_git: bool = True) -> Path:
    """``pkg/calc.py`` (add, mul, unused), two test files (two tests run add, one runs
    mul), ``conftest`` as conftest.py; committed (when ``use_git``)."""
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "calc.py").write_text(CALC)
    (root / "tests" / "test_add.py").write_text(TEST_ADD)
    (root / "tests" / "test_mul.py").write_text(TEST_MUL)
    (root / "conftest.py").write_text(conftest)
    if use_git:
        git(root, "init", "-q")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "base")
    return root


def test_an_edit_runs_only_the_tests_that_ran_the_edited_function(tmp_path):
    """Also: an affected call that can select a test starts pytest once (the selection
    is made inside that run), one that the map proves can select none starts no pytest
    at all (nothing changed, a function no test runs edited), and a file's fingerprints
    kept in the map are trusted only while its stat is unchanged: a rewrite with the
    same content runs nothing, an edit of the same size with its modification time set
    back is still seen."""
    root = make_project(tmp_path, COUNTING_CONFTEST)
    artifacts = tmp_path / "artifacts"
    calc = root / "pkg" / "calc.py"
    starts = tmp_path / "pytest-starts.log"

    async def body():
        steps = {}
        async with connect(server(root, artifacts), "auto") as client:
            steps["first"] = await affected_run(client)
            steps["kept_after_build"] = (kept_stats(artifacts), stat_key(calc))
            steps["unchanged"] = await affected_run(client)
            edit(calc, "return a * b", "product = a * b\n    return product")
            steps["mul_edited"] = await affected_run(client)
            edit(calc, "return -a", "return 0 - a")
            steps["unused_edited"] = await affected_run(client)
            calc.write_text(calc.read_text())  # new stat, same blocks
            steps["rewritten_unchanged"] = await affected_run(client)
            steps["kept_after_rewrite"] = (kept_stats(artifacts), stat_key(calc))
            (root / "tests" / "test_add.py").write_text(TEST_ADD + NEW_TEST)
            steps["new_test"] = await affected_run(client)
            before = calc.stat()
            edit(calc, "return a + b", "return b + a")  # same size; modification time set back below
            os.utime(calc, ns=(before.st_atime_ns, before.st_mtime_ns))
            assert calc.stat().st_size == before.st_size
            steps["add_edited_with_workers"] = await affected_run(client, workers=2)
            steps["after_workers"] = await affected_run(client)
        return steps

    steps = run(body)
    # one pytest start per call that can select a test; none when the map proves nothing can fail
    started = ("first", "mul_edited", "new_test", "add_edited_with_workers")
    assert starts.read_text().count("start") == len(started)

    first, text = steps["first"]
    assert first.status == "passed" and ran(first) == (3, 0)
    assert first.selection.model_dump(exclude={"changed_files", "notice", "tests", "pytest_started"}) == {
        "mode": "affected",
        "selected": 3,
        "total": 3,
        "reasons": {"no_map": 3, "changed": 0, "new": 0, "failed_last": 0, "config_changed": 0},
    }
    assert (
        text.splitlines()[0]
        == "Affected: 3 of 3 tests: no test map yet for this root and interpreter (this run builds it)"
    )
    assert text.splitlines()[1].startswith("PASSED 3 passed in ")
    # the map is in the artifacts directory, never in the project
    assert len(list((artifacts / "maps").glob("*.sqlite"))) == 1
    assert not [p for p in root.rglob("*") if p.suffix == ".sqlite" or p.name.startswith(".coverage")]

    unchanged, text = steps["unchanged"]
    assert (unchanged.status, unchanged.exit_code, unchanged.selection.selected, ran(unchanged)) == (
        "no_tests",
        5,
        0,
        (0, 0),
    )
    assert text.splitlines()[0] == (
        "Affected: 0 of 3 tests: no test ran code that changed since it last ran, and none failed last time"
    )
    assert "NO TESTS RAN: nothing is affected" in text and "affected=false runs every test" in text

    mul_edited, text = steps["mul_edited"]
    assert ran(mul_edited) == (1, 0) and reasons(mul_edited) == {"changed": 1}
    assert mul_edited.selection.changed_files == ["pkg/calc.py"]
    assert text.splitlines()[0] == "Affected: 1 of 3 tests (1 changed), by changes in pkg/calc.py"
    assert mul_edited.deselected == 2  # the two tests of add were not run

    unused_edited, _ = steps["unused_edited"]  # a function no test runs: nothing to run
    assert unused_edited.status == "no_tests" and unused_edited.selection.total == 3
    assert steps["rewritten_unchanged"][0].status == "no_tests"
    # the files read are kept with their stat, from the build on: the next call reads none
    # of them again; one the map proves unchanged without a run keeps its new stat too
    for kept, stat in (steps["kept_after_build"], steps["kept_after_rewrite"]):
        assert kept["pkg/calc.py"] == stat and "tests/test_add.py" in kept

    new_test, text = steps["new_test"]  # the other tests of the edited test file are not affected
    assert ran(new_test) == (1, 0) and reasons(new_test) == {"new": 1}
    assert text.splitlines()[0] == "Affected: 1 of 4 tests (1 new), by changes in tests/test_add.py"

    with_workers, _ = steps["add_edited_with_workers"]  # the three tests of add, in xdist workers
    assert ran(with_workers) == (3, 0) and reasons(with_workers) == {"changed": 3}
    after_workers, _ = steps["after_workers"]  # the workers' coverage refreshed the map
    assert after_workers.status == "no_tests"


def test_a_failing_test_runs_again_until_it_passes_and_a_conftest_hook_runs_everything(tmp_path):
    root = make_project(tmp_path)
    artifacts = tmp_path / "artifacts"
    calc = root / "pkg" / "calc.py"

    async def body():
        steps = {}
        async with connect(server(root, artifacts), "auto") as client:
            await affected_run(client)
            edit(calc, "return a * b", "return a + b")  # mul is broken
            steps["broken"] = await affected_run(client)
            steps["still_broken"] = await affected_run(client)
            plan = await client.call_tool("discover_tests", {"affected": True})
            steps["plan"] = DiscoverResult.model_validate(plan.structured_content), text_of(plan)
            edit(calc, "return a + b\n\n\ndef unused", "return a * b\n\n\ndef unused")
            steps["fixed"] = await affected_run(client)
            steps["green"] = await affected_run(client)
            (root / "conftest.py").write_text("import pytest\n")
            steps["conftest_import"] = await affected_run(client)
            (root / "conftest.py").write_text("import pytest\n\n\ndef pytest_configure(config):\n    pass\n")
            steps["conftest"] = await affected_run(client)
            (root / "tests" / "test_mul.py").unlink()
            steps["deleted"] = await affected_run(client)
        return steps

    steps = run(body)

    broken, text = steps["broken"]
    assert broken.status == "failed" and ran(broken) == (0, 1) and reasons(broken) == {"changed": 1}
    # said once: the 2 tests the map left out by the selection line, the changed file by the suspect line
    assert text.splitlines()[0] == "Affected: 1 of 3 tests (1 changed)"
    assert text.splitlines()[1].startswith("FAILED 1 failed in ")
    # no test passed: the suspect line gives the failing count alone (0 of 0 passing says nothing)
    assert re.fullmatch(r"changed code run by failing tests: pkg/calc\.py:\d+ \(1 of 1 failing\)", text.splitlines()[2])
    still_broken, text = steps["still_broken"]  # nothing changed, but it failed last time
    assert ran(still_broken) == (0, 1) and reasons(still_broken) == {"failed_last": 1}
    assert text.splitlines()[0] == "Affected: 1 of 3 tests (1 failed last)"

    plan, text = steps["plan"]  # the plan of the next run, and nothing ran for it
    assert (plan.total, plan.selection.selected, plan.node_ids) == (3, 1, ["tests/test_mul.py::test_mul"])
    assert [(t.node_id, t.reason) for t in plan.selection.tests] == [("tests/test_mul.py::test_mul", "failed_last")]
    assert text.splitlines() == [
        "Affected: 1 of 3 tests (1 failed last)",
        "",
        "Affected tests 1-1 of 1:",
        "  failed_last    tests/test_mul.py::test_mul",
    ]

    fixed, _ = steps["fixed"]
    assert fixed.status == "passed" and ran(fixed) == (1, 0) and reasons(fixed) == {"changed": 1}
    assert steps["green"][0].status == "no_tests"

    # a conftest's import no test reads selects nothing; a hook added reaches every test
    conftest_import, text = steps["conftest_import"]
    assert conftest_import.status == "no_tests" and conftest_import.selection.selected == 0, text
    conftest, text = steps["conftest"]
    assert ran(conftest) == (3, 0) and reasons(conftest) == {"changed": 3}
    assert text.splitlines()[0] == "Affected: 3 of 3 tests (3 changed), by changes in conftest.py"

    # a deleted test leaves the map: not selected, not counted, not kept
    deleted, _ = steps["deleted"]
    assert (deleted.status, deleted.selection.total) == ("no_tests", 2)
    (map_file,) = (artifacts / "maps").glob("*.sqlite")
    with sqlite3.connect(map_file) as con:
        assert sorted(row[0] for row in con.execute("SELECT node_id FROM tests")) == [
            "tests/test_add.py::test_add_negative",
            "tests/test_add.py::test_add_small",
        ]


def test_a_corrupt_map_is_rebuilt_with_a_notice_affected_needs_coverage_py_and_a_new_distribution_runs_all(tmp_path):
    root = make_project(tmp_path)
    artifacts = tmp_path / "artifacts"
    python = python_with(tmp_path, "pytest")
    (site,) = python.parent.parent.glob("lib/python*/site-packages")

    async def body():
        async with connect(server(root, artifacts), "auto") as client:
            await affected_run(client)
            (map_file,) = (artifacts / "maps").glob("*.sqlite")
            map_file.write_bytes(b"not a map" * 100)
            rebuilt = await affected_run(client)
            again = await affected_run(client)
            refused = await client.call_tool("execute_tests", {"affected": True, "repeat": 2})
        async with connect(server(root, tmp_path / "other", "--python", str(python)), "auto") as client:
            missing = await client.call_tool("execute_tests", {"affected": True})
            plan_missing = await client.call_tool("discover_tests", {"affected": True})
            link_distribution("coverage", site)  # installed: no restart needed
            installed = await affected_run(client)
            link_distribution("idna", site)  # a distribution the map cannot see into
            new_distribution = await affected_run(client)
        return map_file, rebuilt, again, refused, missing, plan_missing, installed, new_distribution

    map_file, (rebuilt, text), (again, _), refused, missing, plan_missing, installed, new_distribution = run(body)
    assert ran(rebuilt) == (3, 0) and reasons(rebuilt) == {"no_map": 3}
    assert rebuilt.selection.notice == (
        f"the test map {map_file} was not readable as SQLite (file is not a database); "
        "rebuilt empty (every test runs as no_map)"
    )
    assert text.splitlines()[1] == f"Notice: {rebuilt.selection.notice}"
    assert again.status == "no_tests" and again.selection.notice is None  # the rebuilt map is trusted

    assert refused.is_error
    assert ToolFailureDetail.model_validate(refused.structured_content).field == "affected"

    for answer in (missing, plan_missing):
        assert answer.is_error
        detail = ToolFailureDetail.model_validate(answer.structured_content)
        assert detail.kind == "coverage_missing"
        assert f"{python} -m pip install coverage" in detail.message

    assert reasons(installed[0]) == {"no_map": 3}  # a map of its own: another interpreter
    new_distribution, text = new_distribution
    assert ran(new_distribution) == (3, 0) and reasons(new_distribution) == {"config_changed": 3}
    assert text.splitlines()[0] == "Affected: 3 of 3 tests (3 config changed), by changes in installed distributions"


def test_without_git_within_a_keyword_two_calls_at_once_and_a_killed_run_keep_the_map_right(tmp_path):
    root = make_project(tmp_path, use_git=False)
    artifacts = tmp_path / "artifacts"
    calc = root / "pkg" / "calc.py"

    async def body():
        steps = {}
        async with connect(server(root, artifacts), "auto") as client:
            steps["keyword"] = await affected_run(client, keywords="add")
            steps["all"] = await affected_run(client)
            steps["rows"] = map_rows(artifacts)
            edit(calc, "return a + b", "import time\n    time.sleep(60)\n    return a + b")
            steps["killed"] = await client.call_tool("execute_tests", {"affected": True, "timeout_s": 3})
            steps["rows_after_kill"] = map_rows(artifacts)
            edit(calc, "import time\n    time.sleep(60)\n    return a + b", "return a + b")
            steps["restored"] = await affected_run(client)
            # two calls at once on one root (--max-concurrent 2): each writes its tests in its own transaction
            edit(calc, "return a + b", "return b + a")
            edit(calc, "return a * b", "return b * a")
            async with anyio.create_task_group() as group:
                for keyword in ("add", "mul"):
                    group.start_soon(concurrent, client, keyword, steps)
            steps["after_both"] = await affected_run(client)
            # a test file that no longer imports: the run shows its collection error, even with
            # nothing else affected; once fixed, its test runs again (it left the map)
            (root / "tests" / "test_mul.py").write_text(TEST_MUL.replace("def test_mul():", "def test_mul(:"))
            steps["broken_file"] = await affected_run(client)
            (root / "tests" / "test_mul.py").write_text(TEST_MUL)
            steps["fixed_file"] = await affected_run(client)
        return steps

    async def concurrent(client: Client, keyword: str, steps: dict) -> None:
        steps[keyword] = await affected_run(client, keywords=keyword)

    steps = run(body)
    keyword, text = steps["keyword"]  # within the selection: the two tests of add
    assert ran(keyword) == (2, 0) and (keyword.selection.selected, keyword.selection.total) == (2, 2)
    everything, text = steps["all"]  # the map has the two: the third is new
    assert ran(everything) == (1, 0) and reasons(everything) == {"new": 1}
    assert text.splitlines()[0] == "Affected: 1 of 3 tests (1 new), by changes in tests/test_mul.py"
    assert not (root / ".git").exists()

    killed = steps["killed"]
    detail = ToolFailureDetail.model_validate(killed.structured_content)
    assert killed.is_error and detail.kind == "timeout"
    # the timeout's answer still says what the map selected, of the whole suite
    assert (detail.selection.selected, detail.selection.total, detail.selection.reasons.changed) == (2, 3, 2)
    assert detail.selection.changed_files == ["pkg/calc.py"]
    assert text_of(killed).splitlines()[1] == "Affected: 2 of 3 tests (2 changed), by changes in pkg/calc.py"
    assert steps["rows_after_kill"] == steps["rows"]  # nothing of the killed run was written
    # add is back as the map knows it: nothing is affected
    assert steps["restored"][0].status == "no_tests"

    assert ran(steps["add"][0]) == (2, 0) and ran(steps["mul"][0]) == (1, 0)
    assert steps["after_both"][0].status == "no_tests"  # both calls' entries are in the map

    broken_file, text = steps["broken_file"]
    assert broken_file.status == "interrupted" and broken_file.selection.selected == 0
    assert [e.path for e in broken_file.summary.collection_errors] == ["tests/test_mul.py"]
    assert text.splitlines()[0] == "Affected: 0 of 2 collected tests; 1 file could not be collected (below)"
    assert text.splitlines()[1].startswith("INTERRUPTED 1 error in ")
    fixed_file, _ = steps["fixed_file"]
    assert ran(fixed_file) == (1, 0) and reasons(fixed_file) == {"new": 1}


TABLE = """\
def build():
    return {name: len(name) for name in ("a", "bb", "ccc")}


TABLE = build()
"""
TEST_TABLE = """\
from pkg.table import TABLE


def test_table():
    assert TABLE["bb"] == 2
"""


def test_a_function_run_at_import_is_a_dependency_of_every_test_and_a_narrower_run_does_not_forget_it(tmp_path):
    """``pkg/table.py`` builds a table at import (``TABLE = build()``): ``build`` runs
    outside any test, so an edit to it may change what any test sees, and every test
    runs. A run collecting only ``tests/test_add.py`` never imports ``pkg.table``; the
    map still holds ``build`` as run at import afterwards."""
    root = make_project(tmp_path)
    (root / "pkg" / "table.py").write_text(TABLE)
    (root / "tests" / "test_table.py").write_text(TEST_TABLE)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "table")
    artifacts = tmp_path / "artifacts"

    async def body():
        steps = {}
        async with connect(server(root, artifacts), "auto") as client:
            steps["first"] = await affected_run(client)
            edit(root / "pkg" / "calc.py", "return a + b", "return b + a")
            steps["narrow"] = await affected_run(client, node_ids=["tests/test_add.py"])
            edit(root / "pkg" / "table.py", "len(name)", "len(name) * 1")
            steps["build_edited"] = await affected_run(client)
            steps["after"] = await affected_run(client)
        return steps

    steps = run(body)
    assert ran(steps["first"][0]) == (4, 0)
    narrow, _ = steps["narrow"]
    assert ran(narrow) == (2, 0) and reasons(narrow) == {"changed": 2} and narrow.selection.total == 2
    build_edited, text = steps["build_edited"]
    assert ran(build_edited) == (4, 0) and reasons(build_edited) == {"changed": 4}
    assert text.splitlines()[0] == "Affected: 4 of 4 tests (4 changed), by changes in pkg/table.py"
    assert steps["after"][0].status == "no_tests"


NO_TESTS_TEXT = (
    "Affected: 0 of {total} tests: no test ran code that changed since it last ran, and none failed last time\n"
    "NO TESTS RAN: nothing is affected since the last runs. This is not a fresh pass of the suite: a test that "
    "reads a data file another test or a change wrote is not tracked; execute_tests with affected=false runs "
    "every test.\n"
)
COLLECTING_CONFTEST = (
    COUNTING_CONFTEST
    + """

def pytest_collect_file(file_path, parent):
    return None
"""
)


def test_pytest_starts_only_when_something_can_fail_and_says_why_when_it_cannot_prove_it(tmp_path):
    """With nothing changed the answer comes without pytest, and reads as the answer of
    a pytest run that deselected everything. A new test file, a conftest that hooks
    collection and ``--doctest-modules`` each start pytest (a comment added to conftest.py
    does not); the last
    two keep starting it (the map cannot know what they collect), and the selection says
    why in ``pytest_started``."""
    root = make_project(tmp_path, COUNTING_CONFTEST)
    artifacts = tmp_path / "artifacts"
    starts = tmp_path / "pytest-starts.log"

    async def body():
        steps = {}

        async def step(name: str) -> None:
            before = starts.read_text().count("start") if starts.exists() else 0
            result, text = await affected_run(client)
            steps[name] = (result, text, starts.read_text().count("start") - before)

        async with connect(server(root, artifacts), "auto") as client:
            await step("first")
            await step("unchanged")
            (root / "tests" / "test_new.py").write_text("def test_new():\n    assert True\n")
            await step("new_file")
            await step("unchanged_again")
            (root / "conftest.py").write_text(COUNTING_CONFTEST + "# a comment\n")
            await step("conftest_changed")
            await step("after_conftest")
            (root / "conftest.py").write_text(COLLECTING_CONFTEST)
            await step("hook_added")
            await step("after_hook")
            (root / "conftest.py").write_text(COUNTING_CONFTEST)
            (root / "pytest.ini").write_text("[pytest]\naddopts = --doctest-modules\n")
            await step("doctest_modules")
            await step("after_doctest_modules")
        return steps

    steps = run(body)
    pytest_runs = {name: started for name, (_, _, started) in steps.items()}
    assert pytest_runs == {
        "first": 1,
        "unchanged": 0,
        "new_file": 1,
        "unchanged_again": 0,
        "conftest_changed": 0,
        "after_conftest": 0,
        "hook_added": 1,
        "after_hook": 1,
        "doctest_modules": 1,
        "after_doctest_modules": 1,
    }
    unchanged, text, _ = steps["unchanged"]
    assert text == NO_TESTS_TEXT.format(total=3)
    assert (unchanged.status, unchanged.exit_code, unchanged.deselected) == ("no_tests", 5, 3)
    assert (unchanged.selection.selected, unchanged.selection.total, unchanged.selection.pytest_started) == (0, 3, None)
    assert unchanged.summary.counts.total == 0 and Path(unchanged.report_path).is_file()
    assert unchanged.command[1:3] == ["-m", "pytest"]

    new_file, _, _ = steps["new_file"]
    assert ran(new_file) == (1, 0) and reasons(new_file) == {"new": 1}
    assert steps["unchanged_again"][1] == NO_TESTS_TEXT.format(total=4)
    # a comment in conftest.py changes no element and no block: nothing can fail
    assert steps["conftest_changed"][1] == NO_TESTS_TEXT.format(total=4)
    after_hook, text, _ = steps["after_hook"]
    assert after_hook.status == "no_tests" and text == NO_TESTS_TEXT.format(total=4)
    assert after_hook.selection.pytest_started.startswith("a plugin or conftest hooks collection (pytest_collect_file")
    after_doctests, _, _ = steps["after_doctest_modules"]
    assert after_doctests.selection.pytest_started == "--doctest-modules collects doctests from every module"


def test_a_run_collects_only_the_test_files_a_change_reaches_and_counts_the_whole_suite(tmp_path):
    """After an edit, pytest is given the test files holding the selected tests and the
    new or changed test files only, so it imports nothing else; the selection still
    counts the whole suite, and the tests left uncollected count as deselected. A test
    file that stops importing is collected and shown, and stays shown on the next call."""
    root = make_project(tmp_path)
    artifacts = tmp_path / "artifacts"
    imports_log = tmp_path / "test_add-imported.log"
    test_add = root / "tests" / "test_add.py"
    test_add.write_text(f"open({str(imports_log)!r}, 'a').write('imported\\n')\n" + TEST_ADD)
    calc = root / "pkg" / "calc.py"

    def imported() -> int:
        return imports_log.read_text().count("imported") if imports_log.exists() else 0

    async def body():
        steps = {}
        async with connect(server(root, artifacts), "auto") as client:
            steps["first"] = (*await affected_run(client), imported())
            edit(calc, "return a * b", "return a * b + 0")
            steps["mul_edited"] = (*await affected_run(client), imported())
            (root / "tests" / "test_new.py").write_text("def test_new():\n    assert True\n")
            edit(calc, "return a * b + 0", "return b * a")
            steps["new_file"] = (*await affected_run(client), imported())
            steps["unchanged"] = (*await affected_run(client), imported())
            test_add.write_text(test_add.read_text() + "\nimport no_such_module\n")
            steps["broken"] = (*await affected_run(client), imported())
            steps["still_broken"] = (*await affected_run(client), imported())
        return steps

    steps = run(body)
    assert steps["first"][2] == 1
    mul_edited, text, imports = steps["mul_edited"]
    assert imports == 1  # test_add.py was not collected, so not imported
    assert mul_edited.command[-1] == "tests/test_mul.py" and "tests/test_add.py" not in mul_edited.command
    assert (mul_edited.selection.selected, mul_edited.selection.total, mul_edited.deselected) == (1, 3, 2)
    assert text.splitlines()[:2] == [
        "Affected: 1 of 3 tests (1 changed), by changes in pkg/calc.py",
        text.splitlines()[1],
    ] and text.splitlines()[1].startswith("PASSED 1 passed in ")  # the selection line says what was deselected

    new_file, _, imports = steps["new_file"]
    assert imports == 1 and new_file.command[-2:] == ["tests/test_mul.py", "tests/test_new.py"]
    assert reasons(new_file) == {"changed": 1, "new": 1} and new_file.selection.total == 4
    unchanged, _, _ = steps["unchanged"]
    assert unchanged.status == "no_tests" and unchanged.selection.pytest_started is None  # no pytest

    for name in ("broken", "still_broken"):
        broken, text, _ = steps[name]
        assert broken.status == "interrupted", text
        assert [e.path for e in broken.summary.collection_errors] == ["tests/test_add.py"], text
        assert "ModuleNotFoundError" in text and "no_such_module" in text


def test_lf_in_the_projects_addopts_keeps_its_meaning_and_the_map_keeps_every_test(tmp_path):
    """A project whose ``addopts`` hold ``--lf`` collects only its last failures; an
    affected call there neither drops the other tests from the map nor answers without
    pytest (the map cannot know what ``--lf`` will pick), and says why."""
    root = make_project(tmp_path)
    (root / "pytest.ini").write_text("[pytest]\naddopts = --lf\n")
    artifacts = tmp_path / "artifacts"
    calc = root / "pkg" / "calc.py"

    async def body():
        steps = {}
        async with connect(server(root, artifacts), "auto") as client:
            steps["first"] = await affected_run(client)
            edit(calc, "return a * b", "return a * b + 1")
            steps["broken"] = await affected_run(client)
            steps["rows_after_broken"] = map_rows(artifacts)
            edit(calc, "return a * b + 1", "return a * b")
            steps["fixed"] = await affected_run(client)
            steps["unchanged"] = await affected_run(client)
        return steps

    steps = run(body)
    assert ran(steps["first"][0]) == (3, 0)
    broken, text = steps["broken"]
    assert ran(broken) == (0, 1), text
    # --lf collected only the failing test; the two others keep their entries
    tests_in_map = {row[0] for row in steps["rows_after_broken"]}
    assert len(tests_in_map) == 3
    fixed, text = steps["fixed"]
    assert ran(fixed) == (1, 0), text  # pytest's --lf: the last failure, which the map selects too
    unchanged, text = steps["unchanged"]
    assert unchanged.status == "no_tests", text
    assert unchanged.selection.pytest_started == "--lf in the options collects only some tests"


PYPROJECT = """\
[project]
name = "proj"
version = "1.0"

[tool.ruff]
line-length = 100

[tool.pytest.ini_options]
addopts = "-q"
"""


def test_only_what_pytest_and_the_recorder_read_of_pyproject_is_configuration(tmp_path):
    """An edit to ``[project]`` or another tool's table of ``pyproject.toml`` changes no
    test's selection (and starts no pytest); an edit to ``[tool.pytest.ini_options]``
    runs every test as ``config_changed``."""
    root = make_project(tmp_path, COUNTING_CONFTEST)
    (root / "pyproject.toml").write_text(PYPROJECT)
    artifacts = tmp_path / "artifacts"
    starts = tmp_path / "pytest-starts.log"
    pyproject = root / "pyproject.toml"

    async def body():
        steps = {}
        async with connect(server(root, artifacts), "auto") as client:
            steps["first"] = await affected_run(client)
            edit(pyproject, 'version = "1.0"', 'version = "1.1"')
            edit(pyproject, "line-length = 100", "line-length = 120")
            before = starts.read_text().count("start")
            steps["packaging"] = await affected_run(client)
            steps["packaging_starts"] = starts.read_text().count("start") - before
            edit(pyproject, 'addopts = "-q"', 'addopts = "-q -rA"')
            steps["pytest_table"] = await affected_run(client)
        return steps

    steps = run(body)
    packaging, text = steps["packaging"]
    assert packaging.status == "no_tests" and steps["packaging_starts"] == 0, text
    pytest_table, text = steps["pytest_table"]
    assert ran(pytest_table) == (3, 0) and reasons(pytest_table) == {"config_changed": 3}, text
    assert pytest_table.selection.changed_files == ["pyproject.toml"]
