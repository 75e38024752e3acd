"""The ``summarize_report`` workflow: summarise existing report files (a run's
``report_path``, or reports inside the project), test reports through the report engine
and coverage reports through ``engine.coverage_reports``."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import anyio

from pytest_mcp_server.app.runner import Runner
from pytest_mcp_server.domain.coverage_answer import summarize_coverage
from pytest_mcp_server.domain.failures import ToolFailure, invalid
from pytest_mcp_server.domain.tools import SummarizeParams, SummarizeResult
from pytest_mcp_server.domain.validation import resolve_inside
from pytest_mcp_server.engine import summarize as engine_summarize
from pytest_mcp_server.engine.coverage_reports import CoverageFormat, sniff_coverage
from pytest_mcp_server.engine.models import ReportError
from pytest_mcp_server.run.coverage_run import project_lines


async def summarize_report(runner: Runner, params: SummarizeParams) -> SummarizeResult:
    """Summarise existing report files (the ``summarize_report`` tool).

    Paths must be regular files inside the project root or the artifacts directory
    (``_report_file``: a relative path is the root's, or a run's report as the answer views
    name it); without paths, the record file of the project's last finished ``execute_tests`` run
    is read (``RunDirectories.last_report``; refused when there is none).
    With ``node_ids``, the engine selects those tests (or tests under those paths,
    ``engine.summarize(select=...)``, one pass) and the larger ``FULL_STORY`` budgets
    apply: failures, groups (with their counts), collection errors, slowest and
    ``omitted`` cover only the selected tests, counts stay the whole report's, and
    ``not_failing`` is the engine's ``unmatched``; the text then gives each listed
    failure in full (``full_story``). The project code is the one the run's own answer
    used for a run's report, else the server's (``Runner.project_of_reports``), so
    frames, groups and locations are those of ``execute_tests``. Coverage reports (coverage.py JSON, Cobertura
    XML) are answered with their ``coverage`` instead (``_summarize_coverage``). Raises
    ``ToolFailure(report_error)`` for a file that is not a readable report.
    """
    if params.paths:
        paths = [str(_report_file(runner, p, f"paths[{i}]")) for i, p in enumerate(params.paths)]
    else:
        last = await anyio.to_thread.run_sync(runner.run_dirs.last_report)
        if last is None:
            raise invalid("paths", "no execute_tests run of this project has a report yet; give report files")
        paths = [str(last.resolve())]
    formats = await anyio.to_thread.run_sync(lambda: [sniff_coverage(p) for p in paths])
    if any(formats):
        return await _summarize_coverage(runner, params, paths, formats)
    budgets = params.budgets()
    # an empty node_ids list means no filter (as the FULL_STORY choice in params.budgets())
    select = params.node_ids or None
    project = await runner.project_of_reports([Path(p) for p in paths])
    try:
        summary = await anyio.to_thread.run_sync(
            partial(engine_summarize, paths, budgets=budgets, select=select, project=project)
        )
    except ReportError as exc:
        raise _report_failure(exc, paths) from None
    return SummarizeResult(summary=summary, not_failing=summary.unmatched, full_story=select is not None)


async def _summarize_coverage(
    runner: Runner, params: SummarizeParams, paths: list[str], formats: list[CoverageFormat | None]
) -> SummarizeResult:
    """``summarize_report`` on coverage reports (``engine.coverage_reports.sniff_coverage`` found
    one among ``paths``): all must be coverage reports, merged as coverage.py combines
    data; ``node_ids`` is refused (a coverage report names no tests)."""
    if params.node_ids:
        raise invalid("node_ids", "coverage reports hold no tests to select; omit node_ids")
    kinds = [kind for kind in formats if kind is not None]
    if len(kinds) != len(paths):
        other = paths[formats.index(None)]
        raise _report_failure(
            ReportError(
                "mixed_formats",
                other,
                "this file is not a coverage report but others are; summarise test reports and coverage "
                "reports in separate calls",
            ),
            paths,
        )
    try:
        lines = await anyio.to_thread.run_sync(project_lines, paths, kinds)
    except ReportError as exc:
        raise _report_failure(exc, paths) from None
    coverage = summarize_coverage(lines, root=str(runner.root))
    return SummarizeResult(summary=None, not_failing=[], coverage=coverage)


def _report_file(runner: Runner, value: str, field: str) -> Path:
    """The report file an agent named (``resolve_inside``: inside the project root or
    the artifacts directory, a regular file; a ``ToolFailure`` naming ``field`` otherwise).
    A relative path is relative to the root; one that names nothing there but a file in
    this project's runs directory is that file: a run's ``report_path`` as the answer
    views give it (``<run id>/records.jsonl``, ``adapters.mcp.structured.run_report_path``)."""
    base = runner.artifacts_base
    bases = [runner.root, base.resolve() if base.exists() else base]
    raw = Path(value)
    runs = runner.run_dirs.runs_dir
    if not raw.is_absolute() and not (runner.root / raw).exists() and (runs / raw).is_file():
        return resolve_inside(value, [runs, *bases], field, must_be_file=True)
    return resolve_inside(value, bases, field, must_be_file=True)


def _report_failure(exc: ReportError, paths: list[str]) -> ToolFailure:
    """``ToolFailure(report_error)`` for a report that cannot be read, naming its
    argument (``paths[2]``)."""
    try:
        field = f"paths[{paths.index(exc.path)}]"
    except ValueError:
        field = "paths"
    return ToolFailure("report_error", f"{field}: {exc} ({exc.kind})", field=field, report_error_kind=exc.kind)
