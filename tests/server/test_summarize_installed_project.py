"""``summarize_report`` on a run's report shows the frames, groups and locations of that
run's ``execute_tests`` answer, also for a project installed non-editable.

A small package is really installed with pip into a venv's site-packages, and its source
tree then removed from the root (as a checkout run by tox, or the tests of an installed
distribution: the root declares the project, its code is only in site-packages). The
project's own code is then known only from the interpreter (the distribution the root
declares). A bug is written into the installed file. One server runs ``execute_tests``;
a fresh server whose Python lacks the project summarises the run's report, with and
without node ids (the run recorded its project code), and another fresh one a copy of
the report inside the root (its project's interpreter is asked): each answer must
locate the failures at the package's line in site-packages and group them as the run
did.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from helpers.installed_project import InstalledProject, install_project
from helpers.server_support import TYPED, connect, run, text_of
from mcp import StdioServerParameters

from pytest_mcp_server.domain.tools import ExecuteResult, SummarizeResult
from pytest_mcp_server.engine.models import ReportSummary

CORE = """\
def half(x):
    return x // 2
"""

BUGGY = """\
def half(x):
    return {0: 0}[x] // 2
"""

TESTS = """\
import pytest

from halves.core import half


@pytest.mark.parametrize("n", range(1, 6))
def test_half(n):
    assert half(n) == n // 2


def test_half_of_two():
    assert half(2) == 1


def test_zero():
    assert half(0) == 0
"""

BUG_AT = ("<site-packages>/halves/core.py", 2)


def server(project: InstalledProject, artifacts: Path, python: Path | None = None) -> StdioServerParameters:
    """The real server for the installed project, run with ``python`` (default: the
    venv's Python, which has the project installed), answering in the ``typed`` view."""
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)
    args = ["-m", "pytest_mcp_server", "--root", str(project.root), "--python", str(python or project.python)]
    args += ["--artifacts-dir", str(artifacts), *TYPED]
    return StdioServerParameters(command=sys.executable, args=args, env=env)


def where(summary: ReportSummary) -> tuple[dict, dict]:
    """Each listed failure's (exception, location, group) by node id, and each listed
    group's (count, location) by id."""
    failures = {
        f.node_id: (f.exception, (f.location.path, f.location.line) if f.location else None, f.group)
        for f in summary.failures
    }
    groups = {g.id: (g.count, (g.location.path, g.location.line) if g.location else None) for g in summary.groups}
    return failures, groups


def test_summarize_report_uses_the_runs_project_code_for_an_installed_project(tmp_path: Path):
    files = {"src/halves/__init__.py": "", "src/halves/core.py": CORE, "tests/test_halves.py": TESTS}
    project = install_project(tmp_path, "halves", ["halves"], files, where="src")
    shutil.rmtree(project.root / "src")
    (project.site_packages / "halves" / "core.py").write_text(BUGGY)
    shutil.rmtree(project.site_packages / "halves" / "__pycache__", ignore_errors=True)
    artifacts = tmp_path / "artifacts"
    # the budgets of execute_tests, so that both list the same failures and groups
    budgets = {"failures_listed": 20, "traceback_lines": 30, "output_bytes": 512}

    async def execute():
        async with connect(server(project, artifacts), "auto") as client:
            return await client.call_tool("execute_tests", {})

    executed = run(execute)
    assert not executed.is_error, text_of(executed)
    answer = ExecuteResult.model_validate(executed.structured_content)
    report = answer.report_path
    copy = project.root / "copied-records.jsonl"
    shutil.copyfile(report, copy)

    async def summarize_run():
        # a server whose Python does not have the project installed: only what the run
        # recorded can say that site-packages/halves is the project's code
        async with connect(server(project, artifacts, Path(sys.executable)), "auto") as client:
            whole = await client.call_tool("summarize_report", {"paths": [report], **budgets})
            selected = await client.call_tool(
                "summarize_report", {"paths": [report], "node_ids": ["tests/test_halves.py::test_half"]}
            )
            return whole, selected

    async def summarize_copy():
        # a report that is no run's: the project code comes from the project's interpreter
        async with connect(server(project, artifacts), "auto") as client:
            return await client.call_tool("summarize_report", {"paths": [copy.name], **budgets})

    whole, selected = run(summarize_run)
    copied = run(summarize_copy)

    # the run's answer: one group, at the package's line, whatever the test
    answer_failures, answer_groups = where(answer.summary)
    assert answer.summary.counts.failed == 6
    assert {location for _, location, _ in answer_failures.values()} == {BUG_AT}, text_of(executed)
    [(group_id, (count, location))] = answer_groups.items()
    assert (count, location) == (6, BUG_AT)
    assert f"\n {BUG_AT[0]}:{BUG_AT[1]}: " in text_of(executed)

    for result in (whole, copied):
        summary = SummarizeResult.model_validate(result.structured_content).summary
        assert summary is not None
        failures, groups = where(summary)
        # every failure the answer lists, as it lists it; the same groups
        assert {node_id: failures[node_id] for node_id in answer_failures} == answer_failures, text_of(result)
        assert groups == answer_groups, text_of(result)
        assert set(failures.values()) == {("KeyError", BUG_AT, group_id)}
        text = text_of(result)
        # the location is named once: by the header, or by the traceback's line that starts with it
        at = f"{BUG_AT[0]}:{BUG_AT[1]}"
        header = f"- FAILED tests/test_halves.py::test_half[1]  at {at}\n" in text
        assert header != (f"\n {at}: " in text), text
        assert "return {0: 0}[x] // 2" in text, text  # the failing line of the code under test, shown

    summary = SummarizeResult.model_validate(selected.structured_content).summary
    assert summary is not None
    failures, groups = where(summary)
    assert len(failures) == 5 and set(failures.values()) == {("KeyError", BUG_AT, group_id)}, text_of(selected)
    assert groups == {group_id: (5, BUG_AT)}
    # each of the 5 entries names the location once (pytest's closing line says it twice)
    at = f"{BUG_AT[0]}:{BUG_AT[1]}"
    assert text_of(selected).count(f"  at {at}\n") + text_of(selected).count(f"\n {at}: ") == 5, text_of(selected)
