"""``execute_tests`` with ``repeat`` above 1: the selection runs that many times, one
complete run after the other (each a fresh pytest with its own run directory and record
file), and the tests whose outcome changed between runs are the flaky ones
(``domain.flaky.OutcomeHistory``, fed with each run's outcomes as the engine read them).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import anyio

from pytest_mcp_server.app.runner import RunAnswer, Runner, regrouped
from pytest_mcp_server.domain.coverage_answer import ran_a_test
from pytest_mcp_server.domain.failures import ToolFailure, ToolFailureDetail
from pytest_mcp_server.domain.flaky import FlakyTest, OutcomeHistory, last_failing_run
from pytest_mcp_server.domain.tools import ExecuteParams, ExecuteResult
from pytest_mcp_server.engine import summarize as engine_summarize
from pytest_mcp_server.engine.models import Budgets, Failure, ReportError
from pytest_mcp_server.run.argv import child_env
from pytest_mcp_server.run.coverage_run import find_suspects, finish_coverage
from pytest_mcp_server.run.events import ProgressFn
from pytest_mcp_server.run.git import changed_lines
from pytest_mcp_server.run.interpreter import Interpreter
from pytest_mcp_server.run.process import interrupt_requested

RunOnce = Callable[[float, ProgressFn | None], Awaitable[RunAnswer]]
"""One complete run (``app.execute.execute_run`` bound to its runner, parameters and
interpreter): given the seconds left and a progress callback, the run's result, the
pytest process's wall time and each test's outcome."""


async def execute_repeated(
    runner: Runner,
    params: ExecuteParams,
    interp: Interpreter,
    timeout: float,
    progress: ProgressFn | None,
    run_once: RunOnce,
) -> ExecuteResult:
    """Run the selection ``params.repeat`` times with ``run_once`` and find the tests whose
    outcome changed.

    ``timeout`` bounds the pytest time of all runs together (the processes' wall time):
    each run gets what the finished ones left. ``progress`` counts tests over all runs
    (done over the runs finished plus the current one; total as if every run left
    collects as many as the current one). Returns the last run's result with ``runs``,
    ``summary.counts.flaky`` and ``flaky`` (the first ``failures_listed`` flaky tests,
    each with the failure of its last failing run). A run that raises ``ToolFailure``
    (a timeout, a crash) ends the call: the failure names the run and what the finished
    runs found (``_repeat_stop``). A call interrupted on request (``run.process.Interrupt``)
    starts no further run: ``runs`` counts the runs made.
    """
    history = OutcomeHistory()
    reports: list[str] = []
    spent = 0.0  # wall seconds of the finished runs' pytest processes
    tests_done = 0
    failing_before = 0  # failed and errored tests of the finished runs
    per_run: int | None = None
    result: ExecuteResult | None = None
    run_dirs: list[Path] = []
    tests_ran = False  # in any run; else the coverage claims no changed line not run
    reported = 0  # the last progress sent: MCP progress only ever increases
    runs_made = 0

    async def report(done: int, total: int | None, failing: int) -> None:
        nonlocal reported
        if progress is not None and done > reported:
            reported = done
            await progress(done, total, failing)

    for index in range(params.repeat):
        runs_left = params.repeat - index
        run_progress = (
            None
            if progress is None
            else partial(_progress_across_runs, report, tests_done, failing_before, runs_left, per_run)
        )
        try:
            if timeout - spent <= 0:
                raise ToolFailure("timeout", "pytest was not started: no time was left.")
            answer = await run_once(timeout - spent, run_progress)
        except ToolFailure as failure:
            failure.detail = _repeat_stop(failure, index, params, timeout, spent, history)
            raise
        result, outcomes = answer.result, answer.outcomes
        spent += answer.wall_s
        history.add_run(outcomes)
        reports.append(result.report_path)
        run_dirs.append(Path(result.report_path).parent)
        tests_ran = tests_ran or ran_a_test(result.summary.counts)
        tests_done += len(outcomes)
        failing_before += result.summary.counts.failed + result.summary.counts.errors
        per_run = len(outcomes)
        # every test of the run is read now, whether or not the run's last progress
        # read came after its last test (a loaded machine)
        await report(tests_done, tests_done + per_run * (runs_left - 1), failing_before)
        runs_made = index + 1
        if interrupt_requested():  # stopped on request (as Ctrl-C): no further run starts
            break
    assert result is not None  # repeat >= 2: the loop ran
    flaky = history.flaky()
    listed = await _flaky_failures(runner, flaky[: params.failures_listed], reports, params.budgets())
    counts = result.summary.counts.model_copy(update={"flaky": len(flaky)})
    summary = result.summary.model_copy(update={"counts": counts})
    coverage = None
    suspects = None
    if params.coverage:
        changed = await changed_lines(runner.root)
        coverage = await finish_coverage(
            interp.python, runner.root, child_env(), run_dirs[-1], run_dirs, changed, tests_ran
        )
        if not summary.ok:
            # the contexts of every run, the outcomes of the last (the one the summary describes)
            suspects = await find_suspects(run_dirs[-1], runner.root, changed, outcomes)
            if suspects:
                again = await regrouped(runner, Path(result.report_path), params.budgets(), suspects[0])
                summary = again.model_copy(update={"counts": counts}) if again is not None else summary
    update = {"summary": summary, "runs": runs_made, "flaky": listed, "coverage": coverage, "suspects": suspects}
    return result.model_copy(update=update)


async def _flaky_failures(
    runner: Runner, flaky: list[tuple[str, str]], reports: list[str], budgets: Budgets
) -> list[FlakyTest]:
    """``flaky`` (node id, pattern) as ``FlakyTest`` entries, each with the failure of
    its last failing run, read from that run's report (``reports``, in run order)
    through the report engine with a node-id selection, one pass per run. A report
    removed meanwhile (another call's runs rotated it away) leaves ``failure`` None."""
    by_run: dict[int, list[str]] = {}
    for node_id, pattern in flaky:
        run = last_failing_run(pattern)
        if run is not None:
            by_run.setdefault(run, []).append(node_id)
    failures: dict[tuple[int, str], Failure] = {}
    for run, node_ids in by_run.items():
        try:
            summary = await anyio.to_thread.run_sync(
                partial(engine_summarize, [reports[run]], budgets=budgets, select=node_ids, project=runner.project())
            )
        except ReportError:
            continue
        for failure in summary.failures:
            failures.setdefault((run, failure.node_id), failure)
    out: list[FlakyTest] = []
    for node_id, pattern in flaky:
        run = last_failing_run(pattern)
        failed_run = None if run is None else run + 1
        shown = failures.get((run, node_id)) if run is not None else None
        out.append(FlakyTest(node_id=node_id, pattern=pattern, failed_run=failed_run, failure=shown))
    return out


async def _progress_across_runs(
    progress: ProgressFn,
    done_before: int,
    failing_before: int,
    runs_left: int,
    per_run_guess: int | None,
    done: int,
    total: int | None,
    failing: int,
) -> None:
    """Report one run's progress (``done`` of ``total`` tests, ``failing`` of them failed)
    as progress over all runs of a repeated call: ``done_before`` tests finished in the
    earlier runs (``failing_before`` of them failed or errored), and ``runs_left`` runs
    (this one included) of ``total`` tests each (``per_run_guess``, the previous run's,
    until this run has collected)."""
    per_run = total if total is not None else per_run_guess
    await progress(
        done_before + done, None if per_run is None else done_before + per_run * runs_left, failing_before + failing
    )


def _repeat_stop(
    failure: ToolFailure, index: int, params: ExecuteParams, timeout: float, spent: float, history: OutcomeHistory
) -> ToolFailureDetail:
    """The detail of a ``ToolFailure`` raised by run ``index`` (0-based) of
    ``params.repeat``, its message led by which run ended the call, for a timeout how the
    budget was spent (``timeout`` seconds for all runs, ``spent`` by the finished ones)
    and what to do, and how many flaky tests the finished runs found (``history``);
    ``runs_finished``, and ``flaky`` (the first ``failures_listed``, patterns only) say
    which (the text lists them, ``adapters.text.render_failure``). The lead comes first:
    the text caps the message line."""
    repeat = params.repeat
    finished = history.runs
    flaky = history.flaky()
    found = f"found {len(flaky) or 'no'} flaky test{'' if len(flaky) == 1 else 's'}"
    if failure.kind == "timeout":
        lead = f"Run {index + 1} of {repeat} ran out of time: timeout_s ({timeout:g}s) covers all {repeat} runs"
        if finished:
            lead += f", and {_runs_phrase(finished)} took {spent:.2f}s and {found}"
        lead += "; lower repeat or raise timeout_s."
    else:
        lead = f"Run {index + 1} of {repeat} failed" + (f" ({_runs_phrase(finished)} {found})." if finished else ".")
    return failure.detail.model_copy(
        update={
            "message": f"{lead} {failure.detail.message}",
            "runs_finished": finished,
            "flaky": [
                FlakyTest(node_id=node_id, pattern=pattern) for node_id, pattern in flaky[: params.failures_listed]
            ],
        }
    )


def _runs_phrase(count: int) -> str:
    """``"run 1"``, ``"runs 1-3"``: the first ``count`` runs."""
    return "run 1" if count == 1 else f"runs 1-{count}"
