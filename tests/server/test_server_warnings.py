"""Warnings and deselected tests reach the answer of execute_tests, end to end: the real
server over real stdio, the real pytest on tests/fixtures/warnings_logs (a deprecation
warning from 3 places, a UserWarning, an exception in a thread, one in ``__del__``, and
2 tests deselected by the project's ``addopts -m "not slow"``).

pytest's reports keep neither (JUnit has no warnings and no deselected count), so an
agent reading only the summary missed a crashing thread and believed the run covered
every test; the event plugin records both.
"""

from __future__ import annotations

from helpers.server_support import TYPED, Project, connect, line_of, run, text_of

from pytest_mcp_server.domain.tools import ExecuteResult
from pytest_mcp_server.engine.models import Budgets

WARNING_GROUPS_LISTED = Budgets().max_warning_groups
"""Warning groups an answer lists (the engine's default budget)."""


def test_warnings_are_grouped_with_the_thread_traceback_and_deselected_counted(tmp_path):
    project = Project("warnings_logs", tmp_path)
    tests = project.root / "tests" / "test_warnings.py"

    async def body():
        async with connect(project.params(*TYPED), "auto") as client:
            return await client.call_tool("execute_tests", {})

    result = run(body)
    assert not result.is_error, text_of(result)
    res = ExecuteResult.model_validate(result.structured_content)
    assert res.status == "failed" and res.deselected == 2
    assert res.summary.counts.total == 6  # the 2 slow tests did not run

    warnings = res.warnings
    assert warnings.total == 6 and warnings.omitted == 0
    by_category = {g.category: g for g in warnings.groups}
    assert sorted(by_category) == [
        "DeprecationWarning",
        "PytestUnhandledThreadExceptionWarning",
        "PytestUnraisableExceptionWarning",
        "UserWarning",
    ]
    # the same deprecation from three call sites is one group, counted 3 times
    deprecation = by_category["DeprecationWarning"]
    assert deprecation.count == 3 and deprecation.message == "old_api is deprecated, use new_api"
    assert deprecation.locations == [
        f"tests/test_warnings.py:{line_of(tests, 'assert old_api(1)')}",
        f"tests/test_warnings.py:{line_of(tests, 'assert old_api(2)')}",
        f"tests/test_warnings.py:{line_of(tests, 'assert old_api(3)')}",
    ]
    assert deprecation.traceback is None
    assert by_category["UserWarning"].locations == ["noisy/__init__.py:10"]
    # the thread's exception: where it was raised (not pytest's threadexception.py), and its traceback's end
    raise_line = line_of(tests, 'raise RuntimeError("worker thread failed")')
    thread = by_category["PytestUnhandledThreadExceptionWarning"]
    assert thread.locations == [f"tests/test_warnings.py:{raise_line}"]
    assert thread.traceback == (
        f"tests/test_warnings.py:{raise_line} in crash_in_thread\n"
        '    raise RuntimeError("worker thread failed")\n'
        "RuntimeError: worker thread failed"
    )
    unraisable = by_category["PytestUnraisableExceptionWarning"]
    assert unraisable.traceback is not None
    assert unraisable.traceback.endswith("OSError: cleanup failed in __del__")
    assert f"tests/test_warnings.py:{line_of(tests, 'raise OSError(')} in __del__" in unraisable.traceback

    text = text_of(result)
    assert text.startswith("FAILED 1 failed, 5 passed, 2 deselected in ")
    assert text.count("Warnings (6):") == 1
    deprecation_lines = [line for line in text.splitlines() if "DeprecationWarning" in line]
    assert len(deprecation_lines) == 1 and "x3" in deprecation_lines[0]
    assert f"tests/test_warnings.py:{raise_line} in crash_in_thread" in text
    assert "RuntimeError: worker thread failed" in text
    assert "threading.py" not in text  # the thread machinery's frames are cut
    assert "threadexception.py" not in text


def test_a_green_run_with_deselected_tests_stays_short(tmp_path):
    project = Project("hangs", tmp_path)

    async def body():
        async with connect(project.params(*TYPED), "legacy") as client:
            return await client.call_tool("execute_tests", {"keywords": "first or third", "timeout_s": 60})

    result = run(body)
    res = ExecuteResult.model_validate(result.structured_content)
    assert res.status == "passed" and res.deselected == 3
    assert res.warnings.total == 0 and res.warnings.groups == []
    text = text_of(result)
    assert text.startswith("PASSED 2 passed, 3 deselected in ")
    assert "Warnings" not in text
    assert len(text.encode()) < 300, text


MANY_WARNINGS = """
import warnings

import pytest


@pytest.mark.parametrize("i", range(8))
def test_distinct(i):
    warnings.warn(f"distinct warning number {i}", UserWarning)


@pytest.mark.parametrize("i", range(10))
def test_repeated(i):
    warnings.warn("the same warning every time", FutureWarning)
"""


def test_many_distinct_warnings_are_listed_up_to_the_budget_and_the_rest_counted(tmp_path):
    project = Project("hangs", tmp_path)
    (project.root / "tests" / "test_many_warnings.py").write_text(MANY_WARNINGS)

    async def body():
        async with connect(project.params(*TYPED), "legacy") as client:
            return await client.call_tool("execute_tests", {"node_ids": ["tests/test_many_warnings.py"]})

    result = run(body)
    res = ExecuteResult.model_validate(result.structured_content)
    assert res.status == "passed"
    warnings = res.warnings
    assert warnings.total == 18
    assert len(warnings.groups) == WARNING_GROUPS_LISTED
    assert warnings.omitted == 9 - WARNING_GROUPS_LISTED  # 8 distinct messages and the repeated one
    assert [g.message for g in warnings.groups] == [f"distinct warning number {i}" for i in range(5)]
    text = text_of(result)
    assert "Warnings (18):" in text
    assert f"... {9 - WARNING_GROUPS_LISTED} more distinct warnings" in text
    assert "distinct warning number 5" not in text


def test_a_warning_from_an_installed_package_is_shown_as_the_engine_shows_its_frames(tmp_path):
    """A package installed in the project's virtualenv (below the root, inside
    ``site-packages``) warns: its location is ``<site-packages>/pkg/mod.py:N``, as the
    summaries show such a frame, not the long path below the root."""
    project = Project("hangs", tmp_path)
    site = project.root / ".venv" / "lib" / "python3.11" / "site-packages"
    (site / "chatty").mkdir(parents=True)
    (site / "chatty" / "__init__.py").write_text(
        "import warnings\n\n\ndef talk():\n    warnings.warn('chatty is chatty', UserWarning)\n"
    )
    (project.root / "tests" / "test_chatty.py").write_text(
        f"import sys\nsys.path.insert(0, {str(site)!r})\nimport chatty\n\n\ndef test_talk():\n    chatty.talk()\n"
    )

    async def body():
        async with connect(project.params(*TYPED), "auto") as client:
            return await client.call_tool("execute_tests", {"node_ids": ["tests/test_chatty.py"]})

    result = run(body)
    res = ExecuteResult.model_validate(result.structured_content)
    [group] = res.warnings.groups
    assert group.locations == ["<site-packages>/chatty/__init__.py:5"], group
    assert "(at <site-packages>/chatty/__init__.py:5)" in text_of(result), text_of(result)
