"""The per-test recorder of change-aware runs, through the real server over real stdio,
on both of its implementations: sys.monitoring (a real CPython 3.12 virtualenv,
``python312``) and coverage.py's C tracer (this Python 3.11).

What an agent relies on, whatever the project does:

* a project with a strict coverage configuration (humanize 4.17.0's: coverage.py
  ``core = "sysmon"``, ``disable_warnings = ["no-sysmon"]``, pytest
  ``filterwarnings = error``) and pytest-cov with a ``fail_under`` of 60 in its
  ``addopts`` (met by the whole suite, not by a subset) runs green and builds its map,
  with the same outcomes as a plain run;
* tests that start threads, fork, or replace the trace function keep their outcomes,
  and code run in a thread during a test is that test's;
* an edit to a function no test runs selects nothing; an edit to one function selects
  the tests that ran it;
* a test that frees the recorder's tool id keeps its outcome, the answer says the map
  was left as it was, and the map is.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.affected_support import affected_run, edit, map_rows, ran, reasons
from helpers.server_support import committed_project, connect, run, text_of
from helpers.server_support import typed_stdio_server as server

from pytest_mcp_server.domain.tools import ExecuteResult

STRICT_PYPROJECT = """\
[tool.pytest.ini_options]
addopts = "--cov=pkg --cov-fail-under=60"
filterwarnings = ["error"]

[tool.coverage.run]
core = "sysmon"
disable_warnings = ["no-sysmon"]
"""
TABLES = 'ESCAPES = {"n": "\\n", "t": "\\t"}\n'
FMT = """\
import threading


def upper(text):
    return text.upper()


def in_thread(text):
    out = []
    worker = threading.Thread(target=lambda: out.append(shout(text)))
    worker.start()
    worker.join()
    return out[0]


def shout(text):
    return text.upper() + "!"


def unused(text):
    return text[::-1]
"""
TESTS = """\
import os
import sys

from pkg.fmt import in_thread, upper


def test_upper():
    assert upper("a") == "A"


def test_thread():
    assert in_thread("b") == "B!"


def test_fork():
    pid = os.fork()
    if pid == 0:
        upper("child")
        os._exit(0)
    assert os.waitpid(pid, 0)[1] == 0


def test_settrace():
    seen = []
    sys.settrace(lambda frame, event, arg: seen.append(event))
    try:
        upper("traced")
    finally:
        sys.settrace(None)
    assert upper("z") == "Z"


def test_after_settrace():
    assert upper("w") == "W"
"""
FREE_TOOL_IDS = """\
import sys

from pkg.fmt import upper


def test_frees_every_tool_id():
    for tool in range(6):
        if sys.monitoring.get_tool(tool) is not None:
            sys.monitoring.free_tool_id(tool)
    assert upper("q") == "Q"
"""


def make_strict_project(tmp_path: Path) -> Path:
    """``pkg/fmt.py`` (upper, shout run in a thread, unused), its tests, humanize's strict
    coverage configuration and pytest-cov in ``addopts``; committed."""
    files = {"pkg/__init__.py": "", "pkg/fmt.py": FMT, "tests/test_fmt.py": TESTS, "pyproject.toml": STRICT_PYPROJECT}
    return committed_project(tmp_path / "proj", files)


@pytest.fixture(params=["3.11", "3.12"])
def project_python(request: pytest.FixtureRequest) -> list[str]:
    """The server's ``--python`` option for each recorder: none (this 3.11, coverage.py's
    C tracer) or the 3.12 virtualenv (sys.monitoring)."""
    if request.param == "3.11":
        return []
    return ["--python", str(request.getfixturevalue("python312"))]


def test_a_strict_coverage_configuration_threads_forks_and_settrace_keep_their_outcomes(tmp_path, project_python):
    root = make_strict_project(tmp_path)
    artifacts = tmp_path / "artifacts"
    fmt = root / "pkg" / "fmt.py"

    async def body():
        steps = {}
        async with connect(server(root, artifacts, *project_python), "auto") as client:
            plain = await client.call_tool("execute_tests", {})
            steps["plain"] = (ExecuteResult.model_validate(plain.structured_content), text_of(plain))
            for data in root.glob(".coverage*"):  # the plain run's pytest-cov wrote its data file
                data.unlink()
            steps["first"] = await affected_run(client)
            steps["rows"] = map_rows(artifacts)
            steps["again"] = await affected_run(client)
            edit(fmt, "return text[::-1]", "return ''.join(reversed(text))")
            steps["unused_edited"] = await affected_run(client)
            edit(fmt, 'return text.upper() + "!"', 'return text.upper() + "?"')
            steps["thread_code_edited"] = await affected_run(client)
        return steps

    steps = run(body)
    plain, text = steps["plain"]
    assert plain.status == "passed" and ran(plain) == (5, 0), text
    first, text = steps["first"]
    assert first.status == "passed" and ran(first) == (5, 0), text
    assert reasons(first) == {"no_map": 5} and first.selection.notice is None
    assert not list(root.glob(".coverage*"))  # pytest-cov was switched off: no data file written
    rows = steps["rows"]
    # the thread's code is the test's that started it
    assert ("tests/test_fmt.py::test_thread", "passed") in {row[:2] for row in rows}
    thread_paths = {row[2] for row in rows if row[0] == "tests/test_fmt.py::test_thread"}
    assert "pkg/fmt.py" in thread_paths

    # the C tracer (3.11) loses a test that replaces it: that test is left out of the map and
    # runs on every call, as a new test; sys.monitoring (3.12) is not touched by sys.settrace
    lost = 0 if project_python else 1
    again, text = steps["again"]
    assert ran(again) == (lost, 0) and again.selection.selected == lost, text
    unused_edited, text = steps["unused_edited"]
    assert ran(unused_edited) == (lost, 0) and unused_edited.selection.total == 5, text
    assert reasons(unused_edited) == ({"new": 1} if lost else {})

    thread_code_edited, text = steps["thread_code_edited"]
    assert ran(thread_code_edited) == (lost, 1), text
    assert thread_code_edited.selection.reasons.changed == 1
    assert thread_code_edited.summary.failures[0].node_id == "tests/test_fmt.py::test_thread"


def test_a_test_that_frees_the_recorders_tool_id_passes_and_the_map_is_left_as_it_was(tmp_path, python312):
    root = make_strict_project(tmp_path)
    artifacts = tmp_path / "artifacts"

    async def body():
        async with connect(server(root, artifacts, "--python", str(python312)), "auto") as client:
            built = await affected_run(client)
            rows = map_rows(artifacts)
            (root / "tests" / "test_free.py").write_text(FREE_TOOL_IDS)
            freed = await affected_run(client)
            return built, rows, freed

    built, rows, freed = run(body)
    assert built[0].status == "passed" and built[0].selection.notice is None
    result, text = freed
    assert result.status == "passed" and ran(result) == (1, 0), text
    assert result.selection.notice is not None
    assert result.selection.notice.startswith("the test map was left as it was: the sys.monitoring recorder stopped")
    assert "test_frees_every_tool_id" in result.selection.notice
    assert "the test map was left as it was" in text
    assert map_rows(artifacts) == rows


IMPORT_TESTS = """\
from pkg.fmt import unescape


def test_unescape():
    assert unescape("n") == "\\\\n"
"""
OTHER_TESTS = """\
from pkg.other import double


def test_double():
    assert double(2) == 4
"""


def make_import_project(tmp_path: Path) -> Path:
    """``pkg/fmt.py`` reads the table ``ESCAPES`` of ``pkg/tables.py`` (run only at
    import); ``pkg/other.py`` imports neither; one test of each, in two test files;
    committed."""
    files = {
        "pkg/__init__.py": "",
        "pkg/tables.py": 'ESCAPES = {"n": "\\\\n", "t": "\\\\t"}\n',
        "pkg/fmt.py": "from .tables import ESCAPES\n\n\ndef unescape(c):\n    return ESCAPES[c]\n",
        "pkg/other.py": "def double(x):\n    return 2 * x\n",
        "tests/test_pkg.py": IMPORT_TESTS,
        "tests/test_other.py": OTHER_TESTS,
    }
    return committed_project(tmp_path / "imports", files)


def test_a_constant_read_through_an_import_selects_the_tests_that_read_it(tmp_path, project_python):
    """A module-level table changes no line any test ran (it ran at import), yet the
    test that runs the function reading it fails: its name selects it, and not the test
    of a module that does not read it. A file that adds a computed import selects
    nothing while no test runs it. A statement run for its effect at import cannot be
    bounded by names: the tests of its importers run, every test when a file that ran
    imports by a computed name (the graph is blind), and the answer says why."""
    root = make_import_project(tmp_path)
    artifacts = tmp_path / "artifacts"
    tables = root / "pkg" / "tables.py"

    async def body():
        steps = {}
        async with connect(server(root, artifacts, *project_python), "auto") as client:
            steps["first"] = await affected_run(client)
            edit(tables, '"n": "\\\\n"', '"n": "\\\\r"')
            steps["constant"] = await affected_run(client)
            edit(tables, '"n": "\\\\r"', '"n": "\\\\n"')
            steps["reverted"] = await affected_run(client)
            (root / "pkg" / "loader.py").write_text(
                "import importlib\n\n\ndef load(name):\n    return importlib.import_module(name)\n"
            )
            edit(tables, '"t": "\\\\t"', '"t": "\\\\v"')
            steps["loader_never_ran"] = await affected_run(client)
            (root / "tests" / "test_loader.py").write_text(
                "from pkg.loader import load\n\n\ndef test_load():\n    assert load('json').dumps(1) == '1'\n"
            )
            steps["loader_ran"] = await affected_run(client)
            tables.write_text(tables.read_text() + 'ESCAPES.update(v="\\\\v")\n')
            steps["blind"] = await affected_run(client)
        return steps

    steps = run(body)
    assert ran(steps["first"][0]) == (2, 0)
    constant, text = steps["constant"]
    assert ran(constant) == (0, 1) and reasons(constant) == {"changed": 1}, text
    assert constant.summary.failures[0].node_id == "tests/test_pkg.py::test_unescape"
    assert constant.selection.changed_files == ["pkg/tables.py"]
    assert "before every test" not in text and constant.deselected == 1  # never "every" while deselecting
    reverted, text = steps["reverted"]
    assert ran(reverted) == (1, 0), text  # the failed test again (changed and failed last)
    never_ran, text = steps["loader_never_ran"]
    assert ran(never_ran) == (1, 0) and reasons(never_ran) == {"changed": 1}, text  # test_unescape reads ESCAPES
    assert never_ran.selection.notice is None, text
    loader_ran, text = steps["loader_ran"]
    assert ran(loader_ran) == (1, 0) and reasons(loader_ran) == {"new": 1}, text
    blind, text = steps["blind"]
    assert ran(blind) == (3, 0) and reasons(blind) == {"changed": 3}, text
    assert blind.selection.notice is not None
    assert "pkg/loader.py:5 calls importlib.import_module with a computed name" in blind.selection.notice
    assert "every test depends on it" in text


CASES = """\
def make_cases(n):
    return [i * 2 for i in range(n)]


def size():
    return 2
"""
CASES_CONFTEST = """\
from pkg.cases import size


def pytest_generate_tests(metafunc):
    if "n" in metafunc.fixturenames:
        metafunc.parametrize("n", range(size()))
"""
IMPORTING_FILES = {
    "pkg/__init__.py": "",
    "pkg/cases.py": CASES,
    "pkg/calc.py": "def double(x):\n    return 2 * x\n",
    "conftest.py": CASES_CONFTEST,
    # imports pkg.cases too, but its import runs none of it
    "tests/test_calc.py": (
        "from pkg import cases\nfrom pkg.calc import double\n\n\n"
        "def test_double():\n    assert double(2) == 4\n\n\ndef test_n(n):\n    assert n >= 0\n"
    ),
    "tests/test_cases.py": (
        "from pkg.cases import make_cases\n\nCASES = make_cases(3)\n\n\n"
        "def test_cases():\n    assert CASES == [0, 2, 4]\n"
    ),
    # runs make_cases at import too, after test_cases.py did: recorded again for this import
    "tests/test_shared.py": (
        "from pkg.cases import make_cases\n\nN = make_cases(2)[-1]\n\n\ndef test_shared():\n    assert N == 2\n"
    ),
    # make_cases runs in a helper module's import, nested in this test module's
    "tests/helpers.py": "from pkg.cases import make_cases\n\nTABLE = make_cases(2)\n",
    "tests/test_helped.py": "from helpers import TABLE\n\n\ndef test_helped():\n    assert TABLE == [0, 2]\n",
}


def test_code_run_while_test_modules_import_selects_the_tests_of_those_modules(tmp_path, project_python):
    """A function that test modules call at their top level (a table of cases, a class
    decorator) changes what those modules hold, so their tests depend on it; tests of a
    module whose import ran none of it do not, even when that module imports the same
    file. Each module's import is recorded on its own (the second to call the function
    is not hidden behind the first), and so is a helper module imported by a test
    module. Code run by a collection hook, with no module being imported, still
    reaches every test. The C tracer (3.11) cannot tell imports apart: there every
    test depends on code run at import, as before."""
    root = committed_project(tmp_path / "importing", IMPORTING_FILES)
    artifacts = tmp_path / "artifacts"
    cases = root / "pkg" / "cases.py"

    async def body():
        steps = {}
        async with connect(server(root, artifacts, *project_python), "auto") as client:
            steps["first"] = await affected_run(client)
            edit(cases, "i * 2 for", "i * 3 for")
            steps["make_cases"] = await affected_run(client)
            edit(cases, "i * 3 for", "i * 2 for")
            steps["reverted"] = await affected_run(client)
            steps["again"] = await affected_run(client)
            edit(cases, "return 2\n", "return 1\n")
            steps["size"] = await affected_run(client)
        return steps

    steps = run(body)
    first, text = steps["first"]
    assert ran(first) == (6, 0), text
    changed, text = steps["make_cases"]
    for node_id in (
        "tests/test_cases.py::test_cases",
        "tests/test_helped.py::test_helped",
        "test_shared.py::test_shared",
    ):
        assert node_id in text, text  # the three fail, as one group
    assert changed.selection.changed_files == ["pkg/cases.py"]
    # sys.monitoring: the three modules whose import ran make_cases; the C tracer: all six
    assert ran(changed) == ((0, 3) if project_python else (3, 3)), text
    assert changed.selection.reasons.changed == (3 if project_python else 6), text
    reverted, text = steps["reverted"]
    assert ran(reverted) == (3 if project_python else 6, 0), text
    again, text = steps["again"]
    assert again.selection.selected == 0, text
    size, text = steps["size"]  # run by a collection hook: every test (test_n[1] is gone)
    assert ran(size) == (5, 0) and size.selection.reasons.changed == 5, text
