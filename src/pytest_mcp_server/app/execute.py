"""The ``execute_tests`` workflow: run the selected tests in a fresh pytest and answer
with the engine's summary of the run's record file.

Each run writes one record file, ``<run directory>/records.jsonl`` (``RECORDS_FILE``: the
server's plugin's stream in pytest-reportlog's format, ``run.events``): the server follows
it for progress, and once the run ended the report engine reads it in one pass, its
summary with the warnings, counts, the running test and each test's outcome
(``Runner.read_records``). With ``repeat``, one call makes several such runs
(``app.repeat``).

When a run times out or pytest dies (a signal, ``os._exit``), the answer still says what
happened: the record file names the test that was running and since when, and its
complete lines hold every finished test, summarised through the report engine as usual.
On a timeout the plugin is first asked for a stack dump (``run.stacks.dump_stacks``,
before the group is killed); after a fatal signal, pytest's own faulthandler dump on
stderr gives the stack.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from pytest_mcp_server.app.affected_call import execute_affected, interpreter_with_coverage
from pytest_mcp_server.app.map_suspects import recorded_map, with_map_suspects
from pytest_mcp_server.app.repeat import execute_repeated
from pytest_mcp_server.app.runner import RunAnswer, Runner, RunRecords, regrouped, run_status
from pytest_mcp_server.domain.coverage_answer import ran_a_test
from pytest_mcp_server.domain.failures import ToolFailure, invalid
from pytest_mcp_server.domain.nodeids import node_last_name
from pytest_mcp_server.domain.tools import ExecuteParams, ExecuteResult
from pytest_mcp_server.domain.validation import check_node_ids_exist
from pytest_mcp_server.run.argv import RECORDS_FILE, STACKS_FILE, child_env, execute_argv
from pytest_mcp_server.run.coverage_run import coverage_env, find_suspects, finish_coverage, missing_coverage
from pytest_mcp_server.run.events import EventFollower, ProgressFn
from pytest_mcp_server.run.git import changed_lines
from pytest_mcp_server.run.interpreter import Interpreter
from pytest_mcp_server.run.process import ProcessOutcome, signal_name
from pytest_mcp_server.run.rundirs import RUNNING_MARKER, write_project
from pytest_mcp_server.run.stacks import dump_stacks, fatal_error, parse_dump, read_dumps, test_stack


async def execute_tests(runner: Runner, params: ExecuteParams, progress: ProgressFn | None = None) -> ExecuteResult:
    """Run the selected tests and summarise the run (the ``execute_tests`` tool).

    ``progress`` is awaited with (tests done, tests collected) as the run goes on.
    Refuses (before starting pytest) node ids that do not exist inside the root and
    ``workers`` without pytest-xdist. Raises ``ToolFailure`` for timeouts, crashes,
    usage and internal errors, and ``coverage`` without coverage.py and pytest-cov
    (``coverage_missing``); failing tests, collection errors (exit 2) and an empty
    selection (exit 5) are results. With ``coverage`` the run writes its data into
    the run directory and the result carries its ``coverage`` (``run.coverage_run``).
    With ``repeat`` above 1 the selection runs that many times (``app.repeat``).
    With ``affected`` only the tests a change can affect run (``app.affected_call``;
    ``coverage_missing`` without coverage.py). Without either, a run with failures
    names the changed code they ran as the test map of an earlier affected call last
    recorded them, when there is one (``app.map_suspects``; the run itself unchanged).
    """
    check_node_ids_exist(params.node_ids, runner.root)
    interp = await runner.interpreter()
    if params.workers is not None and not interp.has_xdist:
        interp = await runner.interpreter(refresh=True)
        if not interp.has_xdist:
            raise invalid(
                "workers",
                f"pytest-xdist is not installed in the project's interpreter {interp.python}; "
                "omit workers, or install pytest-xdist there",
            )
    if params.affected:
        interp = await interpreter_with_coverage(runner)
    if params.coverage and missing_coverage(interp) is not None:
        interp = await runner.interpreter(refresh=True)
        if (failure := missing_coverage(interp)) is not None:
            raise failure
    timeout = min(params.timeout_s or runner.config.max_timeout_s, runner.config.max_timeout_s)
    if params.affected:
        return await execute_affected(runner, params, interp, timeout, progress, run_in_dir)
    if params.repeat > 1:
        run_once = partial(execute_run, runner, params, interp)
        return await execute_repeated(runner, params, interp, timeout, progress, run_once)
    # a plain run with a map an earlier affected call left: the run as it is, the map read after it
    recorded = None if params.coverage else recorded_map(runner, interp)
    answer = await execute_run(runner, params, interp, timeout, progress, outcomes=recorded is not None)
    if recorded is None or answer.result.summary.ok:
        return answer.result
    return await with_map_suspects(runner, params, answer, recorded)


async def execute_run(
    runner: Runner,
    params: ExecuteParams,
    interp: Interpreter,
    timeout: float,
    progress: ProgressFn | None,
    *,
    outcomes: bool = False,
) -> RunAnswer:
    """One complete run of ``execute_tests``: a fresh pytest in its own run directory
    (a pytest slot held while it runs), killed after ``timeout`` seconds, its record
    file read (each test's outcome too with ``repeat`` or ``outcomes``). Raises
    ``ToolFailure`` as ``execute_tests`` says."""
    async with runner.slots:
        run_dir = await anyio.to_thread.run_sync(runner.run_dirs.new)
        wanted = outcomes or params.repeat > 1
        return await run_in_dir(runner, params, interp, timeout, progress, run_dir, outcomes=wanted)


async def run_in_dir(
    runner: Runner,
    params: ExecuteParams,
    interp: Interpreter,
    timeout: float,
    progress: ProgressFn | None,
    run_dir: Path,
    plugin_options: Sequence[str] = (),
    *,
    outcomes: bool = False,
) -> RunAnswer:
    """``execute_run`` in ``run_dir`` (made by ``runner.run_dirs.new``; a pytest slot held
    by the caller), with the server's further ``plugin_options`` on the argv
    (``run.argv.execute_argv``), each test's outcome read when ``outcomes``. On a failure
    the run directory is removed."""
    records = run_dir / RECORDS_FILE
    running = run_dir / RUNNING_MARKER
    running.touch()
    # summarize_report on this run's report uses the project code its answer uses
    project = runner.project()
    await anyio.to_thread.run_sync(write_project, run_dir, project)
    argv = execute_argv(params, interp, run_dir, plugin_options)
    follower = EventFollower(records)
    watch = partial(follower.follow, progress) if progress is not None else None
    stopped_at: list[float] = []  # when the timeout hook ran (unix time)
    on_timeout = partial(dump_stacks, records, run_dir / STACKS_FILE, stopped_at)
    keep = False
    try:
        measured = coverage_env(run_dir, interp) if params.coverage else None
        outcome = await runner.run_pytest(argv, timeout, watch, on_timeout, measured)
        if progress is not None:
            await follower.report(progress)  # the tests finished after the follower's last poll
        ended_at = stopped_at[0] if stopped_at else time.time()
        # the engine reads the record file once: the summary, what the session says, the outcomes
        wanted = outcomes or params.coverage
        read = await runner.read_records(records, params.budgets(), outcome, argv, project, outcomes=wanted)
        try:
            status = run_status(outcome, argv, read.session, timeout, runner.config.max_timeout_s)
        except ToolFailure as failure:
            if failure.kind in ("timeout", "crashed", "internal_error"):
                await _explain_stop(runner, failure, run_dir, read, ended_at, outcome)
            raise
        summary = read.summary()
        coverage = None
        suspects = None
        if params.coverage and params.repeat == 1:  # a repeated call combines all its runs at the end
            changed = await changed_lines(runner.root)
            ran = ran_a_test(summary.counts)  # else "changed lines not run" says nothing: left out
            coverage = await finish_coverage(
                interp.python, runner.root, child_env(), run_dir, changed=changed, tests_ran=ran
            )
            if summary.counts.failed or summary.counts.errors:
                suspects = await find_suspects(run_dir, runner.root, changed, read.outcomes)
                if suspects:  # failures with no cause frame that ran the top suspect: one cause
                    summary = await regrouped(runner, records, params.budgets(), suspects[0]) or summary
        keep = True
    finally:
        with anyio.CancelScope(shield=True):
            running.unlink(missing_ok=True)
            if not keep:
                shutil.rmtree(run_dir, ignore_errors=True)
    session_s = read.session_s()
    result = ExecuteResult(
        status=status,
        exit_code=outcome.exit_code,
        duration_s=round(session_s, 3) if session_s is not None else outcome.duration_s,
        command=argv,
        report_path=str(records),
        summary=summary,
        warnings=read.session.warnings,
        deselected=read.session.deselected,
        coverage=coverage,
        suspects=suspects,
        cold_start=outcome.cold_start,
    )
    return RunAnswer(result, outcome.duration_s, read.outcomes)


async def _explain_stop(
    runner: Runner,
    failure: ToolFailure,
    run_dir: Path,
    read: RunRecords,
    ended_at: float,
    outcome: ProcessOutcome,
) -> None:
    """Add to a ``timeout``, ``crashed`` or ``internal_error`` failure what the record file says: the test
    that was running and for how long, its stack (the timeout's dump, or faulthandler's
    fatal-error report in stderr), and the summary of the tests that finished (the engine
    read the file's complete lines: a write cut by the kill is its ``truncated``). The
    message names the running test and its innermost frame."""
    update: dict[str, Any] = {}
    message = failure.detail.message
    running_tests = read.session.running
    running = running_tests[0].node_id if running_tests else None
    if failure.kind == "timeout":
        text = await anyio.to_thread.run_sync(read_dumps, run_dir / STACKS_FILE)
        # the running test's function, to pick its thread among the xdist workers'
        function = node_last_name(running) if running else None
        stack, own_frame = test_stack(parse_dump(text), runner.root, prefer_current=False, function=function)
    else:
        fatal = fatal_error(outcome.stderr_tail)
        stack, own_frame = test_stack(fatal[1], runner.root, prefer_current=True) if fatal else ([], None)
        if fatal and outcome.exit_code < 0:
            # faulthandler's report says what the guess in the message only supposes
            message = (
                f"pytest was killed by {signal_name(outcome.exit_code)} after {outcome.duration_s:g}s: "
                f"{fatal[0]} (faulthandler's report is in stderr_tail)."
            )
    if running_tests:
        node_id = running_tests[0].node_id
        update["running_test"] = node_id
        update["running_for_s"] = round(max(0.0, ended_at - running_tests[0].started), 2)
        others = len(running_tests) - 1
        also = f" (and {others} more)" if others else ""
        where = f", at {own_frame}" if own_frame else ""
        message += f" The test running was {node_id}{also}, for {update['running_for_s']:g}s{where}."
    elif own_frame:
        message += f" No test was running (collection, or a session fixture); pytest stood at {own_frame}."
    if stack:
        update["stack"] = stack
    if read.tests_or_errors:
        update["summary"] = read.summary()  # else the answer keeps the output tails
    update["message"] = message
    failure.detail = failure.detail.model_copy(update=update)
