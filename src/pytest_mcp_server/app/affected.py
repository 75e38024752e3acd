"""``execute_tests`` and ``discover_tests`` with ``affected``: collect the selection,
pick the tests a change can affect from the per-test map (``plan_affected``), run only
those under per-test coverage, and refresh the map entries of the tests that ran
(``execute_affected``).

The map (``run.testmap``) is keyed by root and interpreter and lives in the artifacts
directory. A run that fails as a tool error (timeout, crash, usage error) changes
nothing in it. Tests deleted from the suite leave it when a run's collection covered
them (no ``markers``/``keywords``, and their ids under the call's ``node_ids``).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import anyio

from pytest_mcp_server.app.runner import Runner, run_status
from pytest_mcp_server.domain.affected import AffectedTest, Selection, select_affected, selection_of
from pytest_mcp_server.domain.policy import MIN_RUN_TIMEOUT_S
from pytest_mcp_server.domain.suspects import group_by_suspect
from pytest_mcp_server.domain.tools import ExecuteParams, ExecuteResult, SelectionParams
from pytest_mcp_server.engine.models import Budgets, ReportSummary
from pytest_mcp_server.run.affected import (
    MAP_DATA_DIR,
    MAP_JSON,
    affected_argv,
    changed_contexts,
    changed_parts,
    config_fingerprint,
    configuration,
    missing_map_coverage,
    read_blocks,
    read_map_data,
    tests_blocks,
)
from pytest_mcp_server.run.argv import RECORDS_FILE, ExitCode, child_env, discover_argv
from pytest_mcp_server.run.coverage import rank_in_root
from pytest_mcp_server.run.events import ProgressFn, read_collected, read_outcomes, read_run_events
from pytest_mcp_server.run.git import changed_lines
from pytest_mcp_server.run.interpreter import Interpreter
from pytest_mcp_server.run.rundirs import RUNNING_MARKER
from pytest_mcp_server.run.testmap import map_path, open_map

COLLECT_DIR = "collect"
"""The run directory's subdirectory holding the record file of the collect-only run."""
CONFIG_PARTS_KEY = "config_parts"
"""The map's ``meta`` row holding the last run's configuration parts (JSON), to name what changed."""


@dataclass
class AffectedPlan:
    """What ``plan_affected`` found: the selected ``tests`` with their reasons, its
    ``selection``, every ``collected`` node id, the configuration ``parts`` and
    ``fingerprint``, and the collect-only run (``collect_argv``, its record file
    ``collect_records``, its ``summary``: collection errors, no tests)."""

    tests: list[AffectedTest]
    selection: Selection
    collected: list[str]
    parts: dict[str, str]
    fingerprint: str
    collect_argv: list[str]
    collect_records: Path
    summary: ReportSummary
    duration_s: float


async def interpreter_with_coverage(runner: Runner) -> Interpreter:
    """The project's interpreter, which must have coverage.py (probed again once before
    refusing); raises ``ToolFailure(coverage_missing)`` naming the install command."""
    interp = await runner.interpreter()
    if missing_map_coverage(interp) is not None:
        interp = await runner.interpreter(refresh=True)
        if (failure := missing_map_coverage(interp)) is not None:
            raise failure
    return interp


async def plan_affected(
    runner: Runner, params: SelectionParams, interp: Interpreter, work_dir: Path, timeout: float | None = None
) -> AffectedPlan:
    """Collect ``params``' selection (a collect-only pytest writing into ``work_dir``,
    killed after ``timeout`` seconds, default the server's ``--max-timeout``; the caller
    holds a pytest slot) and pick the affected tests from the map
    (``domain.affected.select_affected``). Raises ``ToolFailure`` as ``run_status``
    says for the collect run."""
    env = child_env()
    parts = await configuration(interp, runner.root, env)
    fingerprint = config_fingerprint(parts)
    work_dir.mkdir(exist_ok=True)
    records = work_dir / RECORDS_FILE
    argv = discover_argv(params, interp, work_dir)
    max_timeout = runner.config.max_timeout_s
    outcome = await runner.run_pytest(argv, timeout or max_timeout)
    run_events = await anyio.to_thread.run_sync(read_run_events, records, runner.root)
    run_status(outcome, argv, run_events, timeout or max_timeout, max_timeout)
    total, _, _, collected = await anyio.to_thread.run_sync(partial(read_collected, records, 0, 1 << 62))
    summary = await runner.summarize_records(records, Budgets(max_failures=0), outcome, argv)
    path = map_path(runner.artifacts_base, runner.root, interp.python)

    def select() -> tuple[list[AffectedTest], Selection]:
        test_map, notice = open_map(path)
        with test_map:
            recorded = test_map.tests()
            before = json.loads(test_map.meta(CONFIG_PARTS_KEY) or "{}")

        def current(file: str) -> set[str]:
            blocks = read_blocks(runner.root, file)
            return blocks.fingerprints() if blocks is not None else set()

        tests, files = select_affected(collected, recorded, fingerprint, current, changed_parts(before, parts))
        return tests, selection_of(tests, total, files, notice)

    tests, selection = await anyio.to_thread.run_sync(select)
    session_s = run_events.session_duration_s
    return AffectedPlan(
        tests=tests,
        selection=selection,
        collected=collected,
        parts=parts,
        fingerprint=fingerprint,
        collect_argv=argv,
        collect_records=records,
        summary=summary,
        duration_s=round(session_s, 3) if session_s is not None else outcome.duration_s,
    )


RunInDir = Callable[..., Awaitable[tuple[ExecuteResult, float]]]
"""``app.execute.run_in_dir``: one run of ``execute_tests`` in a given run directory."""


async def execute_affected(
    runner: Runner,
    params: ExecuteParams,
    interp: Interpreter,
    timeout: float,
    progress: ProgressFn | None,
    run_in_dir: RunInDir,
) -> ExecuteResult:
    """``execute_tests`` with ``affected``: plan (``plan_affected``), then run only the
    affected tests under per-test coverage and refresh their map entries. With none
    affected (and no collection error to show), nothing runs: status ``no_tests``, exit
    code 5, the collect run's command and record file. ``timeout`` (seconds) bounds
    the collection and the run together. Raises ``ToolFailure`` as ``execute_tests``
    does; the map is then left as it was. ``run_in_dir``: the plain run's steps
    (``app.execute.run_in_dir``)."""

    async with runner.slots:
        run_dir = await anyio.to_thread.run_sync(runner.run_dirs.new)
        running = run_dir / RUNNING_MARKER
        running.touch()
        try:
            started = time.monotonic()
            plan = await plan_affected(runner, params, interp, run_dir / COLLECT_DIR, timeout)
            left = max(MIN_RUN_TIMEOUT_S, timeout - (time.monotonic() - started))
        except BaseException:
            with anyio.CancelScope(shield=True):
                shutil.rmtree(run_dir, ignore_errors=True)
            raise
        if not plan.tests and not plan.summary.collection_errors:
            running.unlink(missing_ok=True)
            await refresh_map(runner, params, interp, run_dir, plan)  # no test ran: the deleted ones leave
            return ExecuteResult(
                status="no_tests",
                exit_code=int(ExitCode.NO_TESTS_COLLECTED),
                duration_s=plan.duration_s,
                command=plan.collect_argv,
                report_path=str(plan.collect_records),
                summary=plan.summary,
                selection=plan.selection,
            )
        options = affected_argv(run_dir, (test.node_id for test in plan.tests))
        result, _ = await run_in_dir(runner, params, interp, left, progress, run_dir, options)
        data, outcomes = await refresh_map(runner, params, interp, run_dir, plan)
    update: dict[str, object] = {"selection": plan.selection}
    if not result.summary.ok:
        # the run recorded what each test ran: name the changed code the failing ones ran
        changed = await changed_lines(runner.root)
        if changed is not None:
            measured = await anyio.to_thread.run_sync(changed_contexts, data, runner.root, changed)
            suspects = await anyio.to_thread.run_sync(rank_in_root, runner.root, changed, measured, outcomes)
            update["suspects"] = suspects
            if suspects:
                update["summary"] = group_by_suspect(result.summary, suspects[0], params.budgets().max_examples)
    return result.model_copy(update=update)


async def refresh_map(
    runner: Runner, params: SelectionParams, interp: Interpreter, run_dir: Path, plan: AffectedPlan
) -> tuple[dict[str, dict[str, list[int]]], dict[str, str]]:
    """Write the entries of the tests that ran in ``run_dir`` (their outcome from its
    record file, their blocks from its coverage data) into the map, in one
    transaction; remove the tests the plan's collection covered but no longer found.
    Returns what it read: the run's map data (``run.affected.read_map_data``) and each
    test's outcome (``run.events.read_outcomes``)."""
    data = await read_map_data(interp.python, runner.root, child_env(), run_dir)
    outcomes = await anyio.to_thread.run_sync(read_outcomes, run_dir / RECORDS_FILE)

    def write() -> None:
        blocks = tests_blocks(data, runner.root, outcomes)
        ran = {node_id: (outcome, blocks[node_id]) for node_id, outcome in outcomes.items()}
        gone: list[str] = []
        path = map_path(runner.artifacts_base, runner.root, interp.python)
        test_map, _ = open_map(path)
        with test_map:
            if not params.markers and not params.keywords:
                collected = set(plan.collected)
                gone = [t for t in test_map.tests() if t not in collected and _in_scope(t, params.node_ids)]
            test_map.refresh(ran, plan.fingerprint, gone, {CONFIG_PARTS_KEY: json.dumps(plan.parts)})
        # the map holds what mattered of them
        shutil.rmtree(run_dir / MAP_DATA_DIR, ignore_errors=True)
        (run_dir / MAP_JSON).unlink(missing_ok=True)

    await anyio.to_thread.run_sync(write)
    return data, outcomes


def _in_scope(node_id: str, scope: list[str]) -> bool:
    """True when a collection of ``scope`` (node ids or paths; empty: the whole suite)
    would have collected ``node_id``."""
    if not scope:
        return True
    for given in scope:
        given = given.rstrip("/")
        if node_id == given or node_id.startswith(given + "::") or node_id.startswith(given + "/"):
            return True
    return False


async def discover_affected(runner: Runner, params: SelectionParams, work_dir: Path) -> AffectedPlan:
    """``discover_tests`` with ``affected``: the plan only (``plan_affected``), nothing
    runs. Raises ``ToolFailure`` (``coverage_missing`` too: the plan is what an
    affected run would do, and that needs coverage.py)."""
    interp = await interpreter_with_coverage(runner)
    async with runner.slots:
        return await plan_affected(runner, params, interp, work_dir)
