"""``execute_tests`` and ``discover_tests`` with ``affected``, in at most one pytest
process per call: read the per-test map (``app.map_state.read_map_state``: which
recorded tests are unchanged since they passed); answer without pytest when nothing can
fail (``app.collection_proof``); else run pytest on the test files the change reaches
with the unchanged tests deselected after collection and every selected test recorded,
then name each collected test's reason from what the run collected
(``select_from_run``) and refresh the map entries of the tests that ran
(``execute_affected``). ``discover_tests`` collects only (``discover_affected``).

The map (``run.testmap``) is keyed by root and interpreter and lives in the artifacts
directory. A run that fails as a tool error (timeout, crash, usage error) changes
nothing in it. Tests deleted from the suite leave it when a run's collection covered
them (no ``markers``/``keywords``, and their ids under the call's ``node_ids``).
"""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import orjson

from pytest_mcp_server.app.collection_proof import (
    RECOVERS,
    IdForm,
    Proven,
    answer_without_pytest,
    form_of,
    form_problem,
    last_full_collection,
    merged_collection,
    narrowed_files,
    nothing_can_fail,
    pinned_form,
    root_config_parts,
    rootdir_pins,
)
from pytest_mcp_server.app.map_state import (
    COLLECTION_KEY,
    CONFIG_PARTS_KEY,
    FULL_NEXT_KEY,
    IMPORTS_KEY,
    RECORDER_KEY,
    MapState,
    changed_code,
    collect_in_full_next,
    keep_reads,
    read_map_state,
    selection_before_run,
)
from pytest_mcp_server.app.runner import RunAnswer, Runner, regrouped, run_status
from pytest_mcp_server.domain.coverage_answer import ChangedLines
from pytest_mcp_server.domain.elements import Element
from pytest_mcp_server.domain.failures import ToolFailure
from pytest_mcp_server.domain.nodeids import node_path
from pytest_mcp_server.domain.selection import (
    AffectedTest,
    Selection,
    select_affected,
    selection_of,
)
from pytest_mcp_server.domain.suspects import spans_to_record
from pytest_mcp_server.domain.tools import ExecuteParams, ExecuteResult, SelectionParams
from pytest_mcp_server.engine.models import Budgets, ReportSummary
from pytest_mcp_server.run.argv import RECORDS_FILE, discover_argv
from pytest_mcp_server.run.coverage_run import rank_in_root
from pytest_mcp_server.run.events import ProgressFn
from pytest_mcp_server.run.git import changed_lines
from pytest_mcp_server.run.interpreter import Interpreter
from pytest_mcp_server.run.recording import (
    MAP_DATA_DIR,
    MapData,
    changed_contexts,
    changed_parts,
    config_fingerprint,
    missing_map_coverage,
    read_collected_file,
    read_map_data,
    skip_options,
    tests_blocks,
    write_line_spans,
)
from pytest_mcp_server.run.testmap import map_path, open_map


@dataclass
class AffectedPlan:
    """Which tests an affected pytest run selected and why: the ``tests`` with their
    reasons, its ``selection``, every ``collected`` node id (None when no process got
    to collect), the configuration ``parts`` and ``fingerprint`` to record, and the
    files' fingerprints read for it (``MapState.read``), the import graph to keep
    (``MapState.imports_cache``), and what the collection looked at and the environment
    it found (``run.recording.Collected``), kept after a full collection for
    ``answer_without_pytest``; ``form_problem``: why the run's node ids are not of the
    map's form (``app.collection_proof.form_problem``; the map is then left as it was),
    else None; ``config``: the root's configuration parts the collection's rootdir and ini
    file were found with (``app.collection_proof.root_config_parts``; a narrowed run's
    are the last full collection's); ``elements`` and ``pending``: ``MapState``'s, for the
    map to keep."""

    tests: list[AffectedTest]
    selection: Selection
    collected: list[str] | None
    parts: dict[str, str]
    fingerprint: str
    files: dict[str, tuple[str, set[str]]]
    imports_cache: str | None = None
    collection: dict[str, Any] | None = None
    environment: dict[str, str] | None = None
    narrowed: bool = False
    form_problem: str | None = None
    config: dict[str, str] | None = None
    elements: dict[str, tuple[str, tuple[Element, ...]] | None] = field(default_factory=dict)
    pending: dict[str, frozenset[str]] = field(default_factory=dict)


def select_from_run(
    state: MapState,
    directory: Path,
    ran: list[str],
    narrowed: Sequence[str] = (),
    pinned: tuple[IdForm | None, bool] = (None, True),
) -> AffectedPlan:
    """The plan of the affected run that wrote into ``directory`` (blocking): each
    collected test's reason, by ``select_affected`` with the environment the plugin
    found. Its selection is the one the plugin made (the same rule on the same
    fingerprints). When no process collected, the tests that ran (``ran``) stand for
    the collection. When the run collected only the ``narrowed`` files
    (``narrowed_files``), the recorded tests of the other files count as collected and
    unselected: the selection's ``total`` stays the whole suite's. ``pinned``: the
    rootdir and ini file the map's tests were resolved with (None: not known), and
    whether the run collected in full without paths; a run that resolved others gets
    its ``form_problem``."""
    found = read_collected_file(directory)
    environment = found.environment if found is not None else state.environment
    collected = found.collected if found is not None else None
    parts = {**state.now, **environment}
    fingerprint = config_fingerprint(parts)
    among = collected if collected is not None else ran
    if narrowed and collected is not None:
        within = set(narrowed)
        among = collected + [t for t in state.recorded if node_path(t) not in within]
    differ = changed_parts(state.before, parts)
    tests, files = select_affected(among, state.recorded, fingerprint, differ, state.import_changed)
    notice = state.said
    selection = selection_of(tests, len(among), files, notice)
    collection = found.collection if found is not None else None
    problem = form_problem(pinned[0], form_of(collection), pinned[1])
    if problem is not None:
        notice = "; ".join(filter(None, [notice, f"{RECOVERS} ({problem})"]))
        selection = selection.model_copy(update={"notice": notice})
    config: dict[str, str] | None = root_config_parts(parts)
    if narrowed and collection is not None:
        collection = merged_collection(state.last_collection, collection)
        config = (state.last_collection or {}).get("config")
    return AffectedPlan(
        tests,
        selection,
        collected,
        parts,
        fingerprint,
        state.read,
        state.imports_cache,
        collection,
        environment,
        bool(narrowed),
        problem,
        config,
        state.elements,
        state.pending,
    )


async def interpreter_with_coverage(runner: Runner) -> Interpreter:
    """The project's interpreter, which must have coverage.py before Python 3.12 (its
    recorder there; probed again once before refusing); raises
    ``ToolFailure(coverage_missing)`` naming the install command."""
    interp = await runner.interpreter()
    if missing_map_coverage(interp) is not None:
        interp = await runner.interpreter(refresh=True)
        if (failure := missing_map_coverage(interp)) is not None:
            raise failure
    return interp


RunInDir = Callable[..., Awaitable[RunAnswer]]
"""``app.execute.run_in_dir``: one run of ``execute_tests`` in a given run directory."""


async def execute_affected(
    runner: Runner,
    params: ExecuteParams,
    interp: Interpreter,
    timeout: float,
    progress: ProgressFn | None,
    run_in_dir: RunInDir,
) -> ExecuteResult:
    """``execute_tests`` with ``affected``: one pytest run (``run_in_dir``, the plain
    run's steps, within ``timeout`` seconds) that deselects the tests the map found
    unchanged since they passed and records what the others run; then the map entries
    of the tests that ran are refreshed, and on failures the changed code they ran is
    named (``suspects``). With none affected, no test runs: status ``no_tests``, exit
    code 5, answered without pytest when ``nothing_can_fail`` proves the collection
    unchanged, else by a run that collects and deselects every test. Raises
    ``ToolFailure`` as ``execute_tests`` does; the map is then left as it was."""
    path = map_path(runner.artifacts_base, runner.root, interp.python)
    async with runner.slots:  # the map as the call before this one left it
        state = await anyio.to_thread.run_sync(read_map_state, runner.root, path)
        run_dir = await anyio.to_thread.run_sync(runner.run_dirs.new)
        options = skip_options(run_dir, state.skip, state.environment, measure=True)
        found = await anyio.to_thread.run_sync(last_full_collection, state, params)
        proof = await anyio.to_thread.run_sync(nothing_can_fail, runner.root, state, found)
        if isinstance(proof, Proven):
            # what this call read stays in the map: the next call need not read it again
            await anyio.to_thread.run_sync(keep_reads, path, state)
            return await answer_without_pytest(runner, params, interp, state, run_dir, options)
        # what changed since HEAD, before the run: the functions holding it are recorded line
        # by line (a failure's suspects are ranked by their lines), and the suspects take it from here
        changed = await changed_lines(runner.root)
        if changed is None:  # no git: the functions the map saw change stand for the diff
            changed = await anyio.to_thread.run_sync(changed_code, runner.root, state.changed_files)
        spans = await anyio.to_thread.run_sync(line_spans, runner.root, changed)
        await anyio.to_thread.run_sync(write_line_spans, run_dir, spans)
        narrowed = narrowed_files(runner.root, state, found)
        run_params = params.model_copy(update={"node_ids": narrowed}) if narrowed else params
        # a run given paths resolves the rootdir and ini file of the last full collection
        if run_params.node_ids:
            options += rootdir_pins(await anyio.to_thread.run_sync(pinned_form, runner.root, state))
        expected = form_of((state.last_collection or {}).get("collection"))
        try:
            answer = await run_in_dir(runner, run_params, interp, timeout, progress, run_dir, options, outcomes=True)
        except ToolFailure as failure:  # a timeout, a crash: the answer still says what was selected
            selection = await anyio.to_thread.run_sync(selection_before_run, state)
            changes: dict[str, object] = {"selection": selection}
            if failure.kind == "usage_error":
                # the arguments pinned or narrowed may be what pytest refused: the next call does without them
                why = "pytest refused the last call's command line"
                await anyio.to_thread.run_sync(collect_in_full_next, path, why)
                changes["message"] = f"{failure.detail.message.rstrip('.')}; {RECOVERS}"
            failure.detail = failure.detail.model_copy(update=changes)
            raise
        result, outcomes = answer.result, answer.outcomes
        full = not run_params.node_ids
        plan = await anyio.to_thread.run_sync(
            partial(select_from_run, state, run_dir, list(outcomes), narrowed, (expected, full))
        )
        data = await refresh_map(runner, run_params, interp, run_dir, plan, outcomes)
    selection = plan.selection
    if data.problems:
        said = f"the test map was left as it was: {data.problems[0]}"
        selection = selection.model_copy(update={"notice": "; ".join(filter(None, [selection.notice, said]))})
    if not selection.selected:
        selection = selection.model_copy(update={"pytest_started": proof.reason})
    update: dict[str, object] = {"selection": selection}
    if narrowed and plan.collected is not None:
        # the tests of the files left uncollected were deselected by the map all the same
        update["deselected"] = result.deselected + selection.total - len(plan.collected)
    if not result.summary.ok:
        # the run recorded what each test ran: name the changed code the failing ones ran
        if changed.touched():
            measured = await anyio.to_thread.run_sync(changed_contexts, data.lines, runner.root, changed)
            suspects = await anyio.to_thread.run_sync(rank_in_root, runner.root, changed, measured, outcomes)
            update["suspects"] = suspects
            if suspects:
                again = await regrouped(runner, Path(result.report_path), params.budgets(), suspects[0])
                update["summary"] = again or result.summary
    return result.model_copy(update=update)


async def refresh_map(
    runner: Runner,
    params: SelectionParams,
    interp: Interpreter,
    run_dir: Path,
    plan: AffectedPlan,
    outcomes: dict[str, str],
) -> MapData:
    """Write the entries of the tests that ran in ``run_dir`` (``outcomes``: node id ->
    outcome, from its record file; their blocks from its recorders' files) into the map,
    in one transaction; remove the tests the plan's collection covered but no longer
    found. When the recording cannot be trusted (``MapData.problems``), the map is left
    as it was. Returns the run's map data (``run.recording.read_map_data``; empty when no
    test ran)."""
    data = await anyio.to_thread.run_sync(read_map_data, run_dir) if outcomes else MapData()
    path = map_path(runner.artifacts_base, runner.root, interp.python)
    if plan.form_problem is not None:  # node ids of another form: none of them is stored
        await anyio.to_thread.run_sync(collect_in_full_next, path, plan.form_problem)
        return data

    def write() -> None:
        if data.problems:
            return
        recorded = {node_id: outcome for node_id, outcome in outcomes.items() if node_id not in data.unrecorded}
        blocks = tests_blocks(data.lines, runner.root, recorded, data.fixtures)
        ran = {node_id: (outcome, blocks.tests[node_id]) for node_id, outcome in recorded.items()}
        gone: list[str] = list(data.unrecorded)
        test_map, _ = open_map(path)
        with test_map:
            # a module no longer there is imported by no one: its key would stay changed for good
            import_code = test_map.import_code()
            dropped = [key for key in import_code if key.module and not (runner.root / key.module).is_file()]
            # nor is a file no longer there run at import by anyone (a deleted conftest's hooks)
            vanished = {
                path for blocks in import_code.values() for path, _ in blocks if not (runner.root / path).is_file()
            }
            filtered = params.markers or params.keywords or getattr(params, "last_failed", False)
            # a collection of only some tests (--lf in the project's options): those it did not find are not gone
            options = (plan.collection or {}).get("narrowing")
            if plan.collected is not None and not filtered and not options:
                collected = set(plan.collected)
                gone += [t for t in test_map.node_ids() if t not in collected and _in_scope(t, params.node_ids)]
            meta: dict[str, str | None] = {CONFIG_PARTS_KEY: orjson.dumps(plan.parts).decode(), FULL_NEXT_KEY: None}
            if data.recorders:
                meta[RECORDER_KEY] = data.recorders[0]
            # the files first run now are compared from now on; the others as this call read them
            known = test_map.element_stats()
            elements = {p: v for p, v in blocks.elements.items() if p not in known} | plan.elements
            if plan.imports_cache is not None:
                meta[IMPORTS_KEY] = plan.imports_cache
            full = not params.node_ids or plan.narrowed
            if plan.collected is not None and plan.collection is not None and not filtered and full:
                total = plan.selection.total
                last = {"collection": plan.collection, "environment": plan.environment, "total": total}
                last["config"] = plan.config  # what the rootdir and ini file were found with
                meta[COLLECTION_KEY] = orjson.dumps(last).decode()
            test_map.refresh(
                ran,
                plan.fingerprint,
                gone=gone,
                meta=meta,
                files={**blocks.read, **plan.files},
                import_code=blocks.import_code(),
                dropped=dropped,
                vanished=vanished,
                whole_collection=not params.node_ids and not plan.narrowed,
                names=blocks.names,
                facts=blocks.facts,
                elements=elements,
                pending=plan.pending,
            )
        # the map holds what mattered of them
        shutil.rmtree(run_dir / MAP_DATA_DIR, ignore_errors=True)

    await anyio.to_thread.run_sync(write)
    return data


def line_spans(root: Path, changed: ChangedLines) -> dict[str, list[tuple[int, int]] | None]:
    """Where an affected run records the lines functions run rather than their entries
    (``run.recording.write_line_spans``): for each file ``changed`` touches (git's diff,
    else the functions the map saw change: what a failure's suspects are ranked by), by
    absolute path, the spans of the functions holding its changes
    (``domain.suspects.spans_to_record``), or None (every function) for a new file and
    for one that cannot be read. Elsewhere a function's run is written as its entry,
    which gives the map the same blocks (tests/affected/test_recorder_entries.py)."""
    out: dict[str, list[tuple[int, int]] | None] = {}
    for path in changed.touched():
        try:
            source = (root / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            out[str(root / path)] = None
            continue
        out[str(root / path)] = spans_to_record(changed, path, source)
    return out


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


@dataclass
class DiscoveredPlan:
    """``discover_affected``'s answer: the ``plan``, the collect-only run's ``summary``
    (its collection errors) and its ``duration_s``."""

    plan: AffectedPlan
    summary: ReportSummary
    duration_s: float


async def discover_affected(runner: Runner, params: SelectionParams, work_dir: Path) -> DiscoveredPlan:
    """``discover_tests`` with ``affected``: what an affected run would select, from a
    collect-only pytest in ``work_dir``, nothing run. Raises ``ToolFailure`` as
    ``run_status`` says for the collect run, and ``coverage_missing`` (the plan is what
    an affected run would do, and that needs coverage.py)."""
    interp = await interpreter_with_coverage(runner)
    path = map_path(runner.artifacts_base, runner.root, interp.python)
    async with runner.slots:
        state = await anyio.to_thread.run_sync(read_map_state, runner.root, path)
        work_dir.mkdir(exist_ok=True)
        options = skip_options(work_dir, state.skip, state.environment, measure=False)
        if params.node_ids:
            options += rootdir_pins(await anyio.to_thread.run_sync(pinned_form, runner.root, state))
        expected = form_of((state.last_collection or {}).get("collection"))
        argv = discover_argv(params, interp, work_dir, options)
        max_timeout = runner.config.max_timeout_s
        outcome = await runner.run_pytest(argv, max_timeout)
        records = work_dir / RECORDS_FILE
        read = await runner.read_records(records, Budgets(failures_listed=0), outcome, argv)
        run_status(outcome, argv, read.session, max_timeout, max_timeout)
        summary = read.summary()
    plan = await anyio.to_thread.run_sync(
        partial(select_from_run, state, work_dir, [], pinned=(expected, not params.node_ids))
    )
    session_s = read.session_s()
    duration = round(session_s, 3) if session_s is not None else outcome.duration_s
    return DiscoveredPlan(plan, summary, duration)
