"""One rootdir, one node id: change-aware runs of a project whose tests directory has an
ini file of its own, through the real server over real stdio.

A plain ``pytest`` in the root of such a project takes the root as its rootdir and
``pyproject.toml`` as its ini file (``testpaths = ["tests"]``); a pytest given
``tests/test_x.py`` would take ``tests/`` and ``tests/pytest.ini`` instead, and name the
same test ``test_x.py::t``. What an agent relies on: a call that collects only some test
files resolves the rootdir and ini file of the last full collection (the server pins
them with ``-c``), so the map's node ids keep one form, the suite's count stays, and the
options of ``pyproject.toml`` hold in every run. When pytest refuses a call's command
line (a conftest refuses the test files the server names, here), the map is left as it
was, the answer says the next call recovers, and the next call collects the whole suite.
"""

from __future__ import annotations

from helpers.affected_support import affected_run, edit, map_rows, ran, reasons
from helpers.server_support import TYPED, committed_project, connect, run, text_of
from helpers.server_support import stdio_server as server

from pytest_mcp_server.app.collection_proof import IdForm, form_problem, rootdir_pins
from pytest_mcp_server.domain.failures import ToolFailureDetail
from pytest_mcp_server.domain.tools import DiscoverResult

PYPROJECT = """\
[project]
name = "proj"
version = "1.0"

[tool.pytest.ini_options]
testpaths = ["tests"]
python_functions = ["test_*", "check_*"]
"""
# pytest would read this file, and not pyproject.toml, when given tests/... alone: its
# python_functions would leave check_* uncollected
TESTS_INI = "[pytest]\npython_functions = test_*\n"
FILES = {
    "pyproject.toml": PYPROJECT,
    "tests/pytest.ini": TESTS_INI,
    "pkg/__init__.py": "",
    "pkg/calc.py": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
    "tests/test_add.py": (
        "from pkg.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
        "def check_add_zero():\n    assert add(0, 2) == 2\n"
    ),
    "tests/test_mul.py": "from pkg.calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
    # puts the project on sys.path whichever rootdir pytest takes, and refuses a command
    # line naming test files while a file beside the project says so
    "tests/conftest.py": """\
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))


def pytest_configure(config):
    named = [arg for arg in config.invocation_params.args if arg.endswith(".py")]
    if named and (Path(__file__).parents[2] / "refuse").exists():
        raise pytest.UsageError(f"refusing {named}")
""",
}
IDS = ["tests/test_add.py::check_add_zero", "tests/test_add.py::test_add", "tests/test_mul.py::test_mul"]


def test_a_tests_directory_with_its_own_ini_file_keeps_one_rootdir_and_one_form_of_node_ids(tmp_path):
    root = committed_project(tmp_path / "proj", FILES)
    artifacts = tmp_path / "artifacts"
    calc = root / "pkg" / "calc.py"

    async def body():
        steps = {}
        async with connect(server(root, artifacts, *TYPED), "auto") as client:
            steps["first"] = await affected_run(client)
            edit(calc, "return a * b", "return b * a")
            steps["mul_edited"] = await affected_run(client)
            steps["rows_after_narrowed"] = map_rows(artifacts)
            edit(calc, "return a + b", "return b + a")
            steps["add_edited"] = await affected_run(client)
            steps["unchanged"] = await affected_run(client)
            plan = await client.call_tool("discover_tests", {"affected": True, "node_ids": ["tests/test_mul.py"]})
            steps["plan"] = (DiscoverResult.model_validate(plan.structured_content), text_of(plan), plan.is_error)
            steps["rows_before_refused"] = map_rows(artifacts)
            (tmp_path / "refuse").write_text("")
            edit(calc, "return b * a", "return a * b")
            refused = await client.call_tool("execute_tests", {"affected": True})
            steps["refused"] = (refused, map_rows(artifacts))
            steps["after_refused"] = await affected_run(client)
            steps["rows_after_refused"] = map_rows(artifacts)
            (tmp_path / "refuse").unlink()
            # a changed pytest table: nothing to pin, so the agent's path gives pytest tests/ as rootdir
            edit(
                root / "pyproject.toml",
                'testpaths = ["tests"]',
                'testpaths = ["tests"]\nconsole_output_style = "classic"',
            )
            steps["unpinned"] = await affected_run(client, node_ids=["tests/test_mul.py"])
            steps["rows_after_unpinned"] = map_rows(artifacts)
            steps["after_unpinned"] = await affected_run(client)
            steps["rows_at_end"] = map_rows(artifacts)
        return steps

    steps = run(body)
    first, text = steps["first"]
    assert ran(first) == (3, 0) and first.selection.total == 3, text

    # only test_mul.py is collected, from the root's rootdir and ini file
    mul_edited, text = steps["mul_edited"]
    assert mul_edited.command[-1] == "tests/test_mul.py" and "tests/test_add.py" not in mul_edited.command
    assert "-c" in mul_edited.command and mul_edited.command[mul_edited.command.index("-c") + 1] == str(
        root / "pyproject.toml"
    )
    assert ran(mul_edited) == (1, 0) and reasons(mul_edited) == {"changed": 1}, text
    assert (mul_edited.selection.selected, mul_edited.selection.total, mul_edited.deselected) == (1, 3, 2), text
    assert mul_edited.selection.notice is None, text
    assert sorted({row[0] for row in steps["rows_after_narrowed"]}) == IDS

    # the call after it: the two tests of test_add.py, check_add_zero included (pyproject's python_functions)
    add_edited, text = steps["add_edited"]
    assert ran(add_edited) == (2, 0) and reasons(add_edited) == {"changed": 2}, text
    assert add_edited.selection.total == 3 and add_edited.command[-1] == "tests/test_add.py", text
    unchanged, text = steps["unchanged"]
    assert unchanged.status == "no_tests" and unchanged.selection.pytest_started is None, text
    # the plan of a call naming a test file: collected with the same pins, its id of the map's form (not new)
    plan, text, failed = steps["plan"]
    assert not failed and (plan.selection.selected, plan.selection.total) == (0, 1), text
    assert plan.selection.notice is None, text

    # pytest refuses the call's command line: the map is as it was, and the answer says what comes next
    refused, rows = steps["refused"]
    assert refused.is_error
    detail = ToolFailureDetail.model_validate(refused.structured_content)
    assert detail.kind == "usage_error" and "refusing ['tests/test_mul.py']" in detail.message
    assert "the test map was left as it was; the next affected call collects the whole suite" in detail.message
    assert rows == steps["rows_before_refused"]
    after, text = steps["after_refused"]
    assert ran(after) == (1, 0) and reasons(after) == {"changed": 1}, text
    assert not any(arg.endswith(".py") for arg in after.command), text  # the whole suite was collected
    assert after.selection.total == 3 and after.deselected == 2, text
    assert sorted({row[0] for row in steps["rows_after_refused"]}) == IDS

    # ids of another form are never stored; the answer says so, and the next call collects in full
    unpinned, text = steps["unpinned"]
    assert "-c" not in unpinned.command and ran(unpinned) == (1, 0), text
    assert unpinned.selection.notice is not None and unpinned.selection.notice.startswith(
        "the test map was left as it was; the next affected call collects the whole suite (pytest resolved "
        f"rootdir {root / 'tests'}, ini file {root / 'tests' / 'pytest.ini'} where the map's tests are of "
        f"rootdir {root}, ini file {root / 'pyproject.toml'})"
    ), text
    assert steps["rows_after_unpinned"] == steps["rows_after_refused"]
    after, text = steps["after_unpinned"]
    assert ran(after) == (3, 0) and reasons(after) == {"config_changed": 3}, text
    assert after.selection.notice is None, text
    assert sorted({row[0] for row in steps["rows_at_end"]}) == IDS


def test_the_pins_name_the_ini_file_and_the_rootdir_only_where_pytest_would_not_find_it():
    with_ini = IdForm("/p", "/p/pyproject.toml")
    assert rootdir_pins(with_ini) == ["-c", "/p/pyproject.toml"]  # pytest takes the ini file's directory
    assert rootdir_pins(IdForm("/p", "/p/cfg/pytest.ini")) == ["-c", "/p/cfg/pytest.ini", "--rootdir=/p"]
    assert rootdir_pins(IdForm("/p", None)) == ["--rootdir=/p"]
    assert rootdir_pins(IdForm("/$HOME/p", None)) == []  # pytest would expand the variable
    assert rootdir_pins(None) == []
    tests_ini = IdForm("/p/tests", "/p/tests/pytest.ini")
    assert form_problem(with_ini, with_ini, full=False) is None
    assert form_problem(with_ini, tests_ini, full=True) is None  # a plain collection sets the form
    assert form_problem(None, tests_ini, full=False) is None  # nothing recorded to compare with
    assert form_problem(with_ini, tests_ini, full=False) == (
        "pytest resolved rootdir /p/tests, ini file /p/tests/pytest.ini where the map's tests are of "
        "rootdir /p, ini file /p/pyproject.toml"
    )
