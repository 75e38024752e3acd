"""``execute_tests`` and ``discover_tests`` with ``affected``, in one pytest process per
call: read the per-test map (``read_map_state``: which recorded tests are unchanged
since they passed), run pytest with those deselected after collection and every
selected test measured, then name each collected test's reason from what the run
collected (``select_from_run``) and refresh the map entries of the tests that ran
(``execute_affected``). ``discover_tests`` collects only (``discover_affected``).

The map (``run.testmap``) is keyed by root and interpreter and lives in the artifacts
directory. A run that fails as a tool error (timeout, crash, usage error) changes
nothing in it. Tests deleted from the suite leave it when a run's collection covered
them (no ``markers``/``keywords``, and their ids under the call's ``node_ids``).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import orjson

from pytest_mcp_server.app.runner import Runner, run_status
from pytest_mcp_server.domain.affected import (
    AffectedTest,
    RecordedTest,
    Selection,
    changed_blocks,
    select_affected,
    selection_of,
)
from pytest_mcp_server.domain.blocks import changed_functions
from pytest_mcp_server.domain.coverage import ChangedLines
from pytest_mcp_server.domain.failures import ToolFailure
from pytest_mcp_server.domain.imports import FileImports, ProjectFiles, file_imports, importers, opaque_files
from pytest_mcp_server.domain.suspects import group_by_suspect
from pytest_mcp_server.domain.tools import ExecuteParams, ExecuteResult, SelectionParams
from pytest_mcp_server.engine.models import Budgets, ReportSummary
from pytest_mcp_server.run.affected import (
    ENVIRONMENT_PARTS,
    MAP_DATA_DIR,
    CollectionDelta,
    MapData,
    changed_contexts,
    changed_parts,
    collection_delta,
    config_file_parts,
    config_fingerprint,
    missing_map_coverage,
    python_files,
    read_blocks,
    read_collected_file,
    read_map_data,
    short_hash,
    skip_options,
    stat_key,
    tests_blocks,
)
from pytest_mcp_server.run.argv import RECORDS_FILE, discover_argv, execute_argv
from pytest_mcp_server.run.coverage import rank_in_root
from pytest_mcp_server.run.events import ProgressFn, read_outcomes, read_run_events
from pytest_mcp_server.run.git import changed_lines
from pytest_mcp_server.run.interpreter import Interpreter
from pytest_mcp_server.run.process import ProcessOutcome
from pytest_mcp_server.run.testmap import IMPORTED_MODULES_ENTRY, map_path, open_map

CONFIG_PARTS_KEY = "config_parts"
"""The map's ``meta`` row holding the last run's configuration parts (JSON), to name what changed."""
COLLECTION_KEY = "collection"
"""The map's ``meta`` row holding what the last full collection looked at (JSON:
``{"collection": run.affected.Collected.collection, "environment": ..., "total": N}``)."""
IMPORTS_KEY = "imports"
"""The map's ``meta`` row holding the project's import graph as last read (``import_reach``)."""


@dataclass
class MapState:
    """The map before a run: its ``recorded`` tests (with the files of theirs that
    changed), the configuration ``before`` (the last run's parts), the ``notice`` when
    it was rebuilt, the configuration files' parts ``now``
    (``run.affected.config_file_parts``), ``skip``: the recorded tests unchanged since
    they passed, under the last run's environment, ``read``: the files whose block
    fingerprints were read this call (the map's are used while a file's stat key is
    unchanged), path -> (stat key, fingerprints), for the map to keep, and
    ``import_changed``: the files of the function blocks run at import that changed
    (every test depends on those), and ``changed_files``: each file with a block no
    longer as the map holds it -> the fingerprints the map holds for it (``changed_code``
    names what changed there when there is no git diff), ``imports_cache``: the import
    graph as read this call (``import_reach``; JSON for the map's meta), and ``wide``:
    one line saying why every test depends on a change the import graph cannot follow;
    ``stats``: the stat key of every file whose fingerprints it used (checked again before
    an answer without pytest), ``last_collection``: what the last full collection looked
    at (``COLLECTION_KEY``), or None."""

    recorded: dict[str, RecordedTest]
    before: dict[str, str]
    notice: str | None
    now: dict[str, str]
    skip: list[str]
    read: dict[str, tuple[str, set[str]]]
    import_changed: frozenset[str]
    changed_files: dict[str, set[str]]
    imports_cache: str | None = None
    wide: str | None = None
    stats: dict[str, str | None] = dataclasses.field(default_factory=dict)
    last_collection: dict[str, Any] | None = None

    @property
    def environment(self) -> dict[str, str]:
        """The interpreter's environment hashes of the last run (``ENVIRONMENT_PARTS``)."""
        return {name: self.before[name] for name in ENVIRONMENT_PARTS if name in self.before}


@dataclass
class AffectedPlan:
    """Which tests an affected pytest run selected and why: the ``tests`` with their
    reasons, its ``selection``, every ``collected`` node id (None when no process got
    to collect), the configuration ``parts`` and ``fingerprint`` to record, and the
    files' fingerprints read for it (``MapState.read``), the import graph to keep
    (``MapState.imports_cache``), and what the collection looked at and the environment
    it found (``run.affected.Collected``), kept after a full collection for
    ``answer_without_pytest``."""

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


def read_map_state(root: Path, path: Path) -> MapState:
    """``MapState`` of the map at ``path`` for the project at ``root`` (blocking: files
    and SQLite). A test is skipped when ``domain.affected.select_affected``, given the
    last run's environment, would not select it."""
    fingerprints: dict[str, set[str]] = {}
    read: dict[str, tuple[str, set[str]]] = {}
    test_map, notice = open_map(path)
    with test_map:
        known = test_map.files()

        stats: dict[str, str | None] = {}

        def current(file: str) -> set[str]:
            if file not in fingerprints:
                stat = stats[file] = stat_key(root / file)  # before reading: a write in between changes it again
                cached = known.get(file)
                if stat is not None and cached is not None and cached[0] == stat:
                    fingerprints[file] = set(cached[1])
                else:
                    blocks = read_blocks(root, file)
                    fingerprints[file] = blocks.fingerprints() if blocks is not None else set()
                    if stat is not None and blocks is not None:
                        read[file] = (stat, fingerprints[file])
            return fingerprints[file]

        blocks = test_map.blocks()
        gone = changed_blocks(blocks, current)
        at_import = test_map.at_import()
        import_changed = frozenset(file for file, fingerprint in at_import if fingerprint not in current(file))
        modules = test_map.at_import(IMPORTED_MODULES_ENTRY)
        modules_changed = sorted({file for file, fingerprint in modules if fingerprint not in current(file)})
        imports_cache: str | None = None
        wide: str | None = None
        reached: set[str] = set()
        if modules_changed:
            reached, opaque, imports_cache = import_reach(root, test_map.meta(IMPORTS_KEY), modules_changed)
            if opaque:
                import_changed |= frozenset(modules_changed)
                wide = (
                    f"module-level code changed in {', '.join(modules_changed)} and the import graph cannot tell "
                    f"who imports it ({opaque[0]}{f' and {len(opaque) - 1} more' if len(opaque) > 1 else ''}): "
                    "every test depends on it"
                )
                reached = set()
        through = {i for i, (file, _) in blocks.items() if file in reached}
        recorded = test_map.tests(gone | through)
        before: dict[str, str] = orjson.loads(test_map.meta(CONFIG_PARTS_KEY) or "{}")
        last_collection = orjson.loads(test_map.meta(COLLECTION_KEY) or "null")
    if through:  # a test that ran an importer's code: the changed module is what changed for it
        importers_only = reached - {blocks[i][0] for i in gone}
        for node_id, entry in recorded.items():
            if entry.changed & importers_only:
                changed = (entry.changed - importers_only) | frozenset(modules_changed)
                recorded[node_id] = dataclasses.replace(entry, changed=changed)
    changed_files: dict[str, set[str]] = {blocks[i][0]: set() for i in gone}
    for file, fingerprint in blocks.values():
        if file in changed_files:
            changed_files[file].add(fingerprint)
    state = MapState(
        recorded,
        before,
        notice,
        config_file_parts(root),
        [],
        read,
        import_changed,
        changed_files,
        imports_cache,
        wide,
        stats,
        last_collection,
    )
    if recorded and len(state.environment) == len(ENVIRONMENT_PARTS):
        expected = config_fingerprint({**state.now, **state.environment})
        selected, _ = select_affected(list(recorded), recorded, expected, import_changed=import_changed)
        chosen = {test.node_id for test in selected}
        state.skip = [node_id for node_id in recorded if node_id not in chosen]
    return state


def import_reach(root: Path, cached: str | None, changed: list[str]) -> tuple[set[str], list[str], str]:
    """The project's files that import one of ``changed`` (paths relative to ``root``),
    directly or through other files, ``changed`` included (``domain.imports``); the
    reasons the graph cannot tell what some file imports (``opaque_files``; every test
    then depends on ``changed``); and the graph as read now, as JSON for the map's meta.

    ``cached`` is that JSON from the last call: a file's imports are read again only
    when its stat key changed, and all of them when the set of files changed (a new
    file can change what a name resolves to)."""
    files = python_files(root)
    listing = short_hash(*sorted(files))
    known: dict[str, list[Any]] = {}
    if cached:
        given = orjson.loads(cached)
        if given.get("listing") == listing:
            known = given["files"]
    project = ProjectFiles(files)
    graph: dict[str, FileImports] = {}
    for path, stat in files.items():
        entry = known.get(path)
        if entry is not None and entry[0] == stat:
            graph[path] = FileImports(frozenset(entry[1]), entry[2], entry[3])
            continue
        try:
            graph[path] = file_imports(path, (root / path).read_bytes(), project)
        except OSError as exc:
            graph[path] = FileImports(frozenset(), f"{path} could not be read ({exc.strerror})")
    written = {path: [files[path], sorted(i.targets), i.opaque, i.parsed] for path, i in graph.items()}
    cache = orjson.dumps({"listing": listing, "files": written}).decode()
    # a changed file that does not parse imports nothing: it fails wherever it is imported
    # (its importers are found through their own edges)
    blind = {path: i for path, i in graph.items() if i.parsed or path not in changed}
    return importers(graph, changed, opaque_imports_all=False), opaque_files(blind), cache


def changed_code(root: Path, changed_files: dict[str, set[str]]) -> ChangedLines:
    """The functions of ``changed_files`` (``MapState.changed_files``) whose fingerprints
    the map does not hold (``domain.blocks.changed_functions``: edited or added), as
    ``ChangedLines``: what stands for a git diff outside git."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    for path, recorded in sorted(changed_files.items()):
        now = read_blocks(root, path)
        if now is not None and (found := changed_functions(now, recorded)):
            ranges[path] = found
    return ChangedLines(ranges=ranges)


def select_from_run(state: MapState, directory: Path, ran: list[str], narrowed: Sequence[str] = ()) -> AffectedPlan:
    """The plan of the affected run that wrote into ``directory`` (blocking): each
    collected test's reason, by ``select_affected`` with the environment the plugin
    found. Its selection is the one the plugin made (the same rule on the same
    fingerprints). When no process collected, the tests that ran (``ran``) stand for
    the collection. When the run collected only the ``narrowed`` files
    (``narrowed_files``), the recorded tests of the other files count as collected and
    unselected: the selection's ``total`` stays the whole suite's."""
    found = read_collected_file(directory)
    environment = found.environment if found is not None else state.environment
    collected = found.collected if found is not None else None
    parts = {**state.now, **environment}
    fingerprint = config_fingerprint(parts)
    among = collected if collected is not None else ran
    if narrowed and collected is not None:
        within = set(narrowed)
        among = collected + [t for t in state.recorded if t.split("::", 1)[0] not in within]
    differ = changed_parts(state.before, parts)
    tests, files = select_affected(among, state.recorded, fingerprint, differ, state.import_changed)
    notice = "; ".join(filter(None, [state.notice, state.wide])) or None
    selection = selection_of(tests, len(among), files, notice)
    collection = found.collection if found is not None else None
    if narrowed and collection is not None:
        collection = _merged_collection(state.last_collection, collection)
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
    )


def _merged_collection(last: dict[str, Any] | None, narrowed: dict[str, Any]) -> dict[str, Any] | None:
    """The last full collection brought up to date by a collection of a few test files
    (``narrowed``): their modules' stat keys replace the recorded ones, a new module's
    name joins its directory's listing, and its collection errors are the files' own."""
    if last is None:
        return None
    merged = dict(last["collection"])
    modules = dict(merged.get("modules") or {})
    dirs = {d: list(names) for d, names in (merged.get("dirs") or {}).items()}
    for path, key in (narrowed.get("modules") or {}).items():
        modules[path] = key
        directory, name = os.path.split(path)
        if directory in dirs and name not in dirs[directory]:
            dirs[directory] = sorted([*dirs[directory], name])
    merged["modules"] = modules
    merged["dirs"] = dirs
    errors = set(merged.get("errors") or ()) - set(narrowed.get("modules") or ())
    merged["errors"] = sorted(errors | set(narrowed.get("errors") or ()))
    return merged


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
    """``execute_tests`` with ``affected``: one pytest run (``run_in_dir``, the plain
    run's steps, within ``timeout`` seconds) that deselects the tests the map found
    unchanged since they passed and records what the others run; then the map entries
    of the tests that ran are refreshed, and on failures the changed code they ran is
    named (``suspects``). With none affected, pytest collects and runs nothing: status
    ``no_tests``, exit code 5. Raises ``ToolFailure`` as ``execute_tests`` does; the map
    is then left as it was."""
    path = map_path(runner.artifacts_base, runner.root, interp.python)
    async with runner.slots:  # the map as the call before this one left it
        state = await anyio.to_thread.run_sync(read_map_state, runner.root, path)
        run_dir = await anyio.to_thread.run_sync(runner.run_dirs.new)
        options = skip_options(run_dir, state.skip, state.environment, measure=True)
        found = await anyio.to_thread.run_sync(last_full_collection, state, params)
        unproven = await anyio.to_thread.run_sync(nothing_can_fail, runner.root, state, found)
        if unproven is None:
            return await answer_without_pytest(runner, params, interp, state, run_dir, options)
        narrowed = narrowed_files(runner.root, state, found)
        run_params = params.model_copy(update={"node_ids": narrowed}) if narrowed else params
        try:
            result, _ = await run_in_dir(runner, run_params, interp, timeout, progress, run_dir, options)
        except ToolFailure as failure:  # a timeout, a crash: the answer still says what was selected
            selection = await anyio.to_thread.run_sync(selection_before_run, state)
            failure.detail = failure.detail.model_copy(update={"selection": selection})
            raise
        outcomes = await anyio.to_thread.run_sync(read_outcomes, run_dir / RECORDS_FILE)
        plan = await anyio.to_thread.run_sync(select_from_run, state, run_dir, list(outcomes), narrowed)
        data = await refresh_map(runner, run_params, interp, run_dir, plan, outcomes)
    selection = plan.selection
    if data.problems:
        said = f"the test map was left as it was: {data.problems[0]}"
        selection = selection.model_copy(update={"notice": "; ".join(filter(None, [selection.notice, said]))})
    if not selection.selected:
        selection = selection.model_copy(update={"pytest_started": unproven})
    update: dict[str, object] = {"selection": selection}
    if narrowed and plan.collected is not None:
        # the tests of the files left uncollected were deselected by the map all the same
        update["deselected"] = result.deselected + selection.total - len(plan.collected)
    if not result.summary.ok:
        # the run recorded what each test ran: name the changed code the failing ones ran
        changed = await changed_lines(runner.root)
        if changed is None:  # no git: the functions the map saw change stand for the diff
            changed = await anyio.to_thread.run_sync(changed_code, runner.root, state.changed_files)
        if changed.touched():
            measured = await anyio.to_thread.run_sync(changed_contexts, data.lines, runner.root, changed)
            suspects = await anyio.to_thread.run_sync(rank_in_root, runner.root, changed, measured, outcomes)
            update["suspects"] = suspects
            if suspects:
                update["summary"] = group_by_suspect(result.summary, suspects[0], params.budgets().max_examples)
    return result.model_copy(update=update)


def selection_before_run(state: MapState) -> Selection:
    """The selection the map made before pytest started (for an answer without a run's
    collection: a timeout, a crash): the recorded tests it selected, with their reasons,
    of the suite as last collected in full (else as recorded); new tests are not known."""
    fingerprint = config_fingerprint({**state.now, **state.environment})
    differ = changed_parts(state.before, {**state.now, **state.environment})
    tests, files = select_affected(list(state.recorded), state.recorded, fingerprint, differ, state.import_changed)
    total = (state.last_collection or {}).get("total") or len(state.recorded)
    notice = "; ".join(filter(None, [state.notice, state.wide])) or None
    return selection_of(tests, total, files, notice)


def last_full_collection(state: MapState, params: ExecuteParams) -> tuple[dict[str, Any], CollectionDelta] | str:
    """The last full collection the map recorded and how a collection now could differ
    from it (``run.affected.collection_delta``), for a call that narrows nothing (no
    ``node_ids``, ``markers``, ``keywords``, ``last_failed``) on a map that was trusted
    and holds the suite as last collected in full; else why not. Blocking."""
    if params.node_ids or params.markers or params.keywords or params.last_failed:
        return "the call narrows the selection (node_ids, markers, keywords or last_failed)"
    last = state.last_collection
    if state.notice or last is None:
        return "no full collection recorded yet"
    if len(state.recorded) != last.get("total"):
        return "the map does not hold the suite as last collected in full"
    collection = last["collection"]
    if collection.get("errors"):
        return f"a test module could not be collected last time: {collection['errors'][0]}"
    return last, collection_delta(collection, last.get("environment") or {})


def nothing_can_fail(root: Path, state: MapState, found: tuple[dict[str, Any], CollectionDelta] | str) -> str | None:
    """Why an affected call must start pytest although it may select nothing; None when
    the map, the files' fingerprints and the configuration prove that no test can fail:
    the last full collection is known (``found``: ``last_full_collection``'s), no
    recorded test is selected (none ran changed code, none failed last time, the
    configuration files as they were), and a collection now would find the same tests
    (no new or changed test module, nothing blocking: ``CollectionDelta``); then every
    file whose fingerprints were used is stat'ed again (a write during the check is
    seen). Blocking."""
    if isinstance(found, str):
        return found
    delta = found[1]
    if not state.recorded or len(state.skip) != len(state.recorded) or state.import_changed or state.wide:
        return "tests are affected"
    if delta.blocked is not None:
        return delta.blocked
    if delta.modules:
        return f"a test module is new or changed: {delta.modules[0]}"
    for file, key in state.stats.items():
        if stat_key(root / file) != key:
            return f"{file} changed during the check"
    if config_file_parts(root) != state.now:
        return "a configuration file changed during the check"
    return None


def narrowed_files(root: Path, state: MapState, found: tuple[dict[str, Any], CollectionDelta] | str) -> list[str]:
    """The test files an affected run needs to collect (relative to ``root``): those
    holding the selected recorded tests, the new and changed test modules; empty when
    only a full collection will do (``found`` is a reason, the delta is blocked, every
    test depends on the change, pytest's rootdir is not the root, or nothing is left to
    collect). The tests of the other files are unchanged since they last passed:
    collecting them would only deselect them."""
    if isinstance(found, str):
        return []
    last, delta = found
    if delta.blocked is not None or state.import_changed or state.wide or not state.recorded:
        return []
    if last["collection"].get("rootdir") != str(root) or len(state.skip) == 0:
        return []  # node ids are relative to pytest's rootdir; with no test skipped every file is needed
    skipped = set(state.skip)
    files = {node_id.split("::", 1)[0] for node_id in state.recorded if node_id not in skipped}
    prefix = os.path.join(str(root), "")
    for path in delta.modules:
        if not path.startswith(prefix):
            return []
        files.add(path[len(prefix) :].replace(os.sep, "/"))
    return sorted(files)


async def answer_without_pytest(
    runner: Runner, params: ExecuteParams, interp: Interpreter, state: MapState, run_dir: Path, options: list[str]
) -> ExecuteResult:
    """The answer of an affected call that ``nothing_can_fail`` proved: status
    ``no_tests``, exit code 5, every test of the suite deselected, as a pytest run that
    deselected everything would answer; its record file (``RECORDS_FILE`` in ``run_dir``,
    for ``summarize_report``) says so in the plugin's dialect. ``command`` is the argv
    that pytest would have run; ``duration_s`` 0 (no session)."""
    total = len(state.recorded)
    records = run_dir / RECORDS_FILE
    lines = [
        {
            "$report_type": "SessionStart",
            "pytest_version": ".".join(map(str, interp.pytest_version)),
            "root": str(runner.root),
        },
        {"$report_type": "CollectionFinish", "collected": total},
        {"$report_type": "Deselected", "count": total},
        {"$report_type": "SessionFinish", "exitstatus": 5, "duration": 0.0},
    ]
    await anyio.Path(records).write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    argv = execute_argv(params, interp, run_dir, options)
    summary = await runner.summarize_records(records, params.budgets(), ProcessOutcome(5, False, 0.0, "", ""), argv)
    selection = selection_of([], total, {}, None)
    return ExecuteResult(
        status="no_tests",
        exit_code=5,
        duration_s=0.0,
        command=argv,
        report_path=str(records),
        summary=summary,
        deselected=total,
        selection=selection,
    )


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
    as it was. Returns the run's map data (``run.affected.read_map_data``; empty when no
    test ran)."""
    data = await anyio.to_thread.run_sync(read_map_data, run_dir) if outcomes else MapData()

    def write() -> None:
        if data.problems:
            return
        recorded = {node_id: outcome for node_id, outcome in outcomes.items() if node_id not in data.unrecorded}
        blocks, at_import, imported_modules = tests_blocks(data.lines, runner.root, recorded)
        ran = {node_id: (outcome, blocks[node_id]) for node_id, outcome in recorded.items()}
        gone: list[str] = list(data.unrecorded)
        path = map_path(runner.artifacts_base, runner.root, interp.python)
        test_map, _ = open_map(path)
        with test_map:
            filtered = params.markers or params.keywords or getattr(params, "last_failed", False)
            if plan.collected is not None and not filtered:
                collected = set(plan.collected)
                gone += [t for t in test_map.node_ids() if t not in collected and _in_scope(t, params.node_ids)]
            meta = {CONFIG_PARTS_KEY: orjson.dumps(plan.parts).decode()}
            if plan.imports_cache is not None:
                meta[IMPORTS_KEY] = plan.imports_cache
            full = not params.node_ids or plan.narrowed
            if plan.collected is not None and plan.collection is not None and not filtered and full:
                total = plan.selection.total
                last = {"collection": plan.collection, "environment": plan.environment, "total": total}
                meta[COLLECTION_KEY] = orjson.dumps(last).decode()
            test_map.refresh(ran, plan.fingerprint, gone, meta, plan.files, at_import, imported_modules)
        # the map holds what mattered of them
        shutil.rmtree(run_dir / MAP_DATA_DIR, ignore_errors=True)

    await anyio.to_thread.run_sync(write)
    return data


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
        argv = discover_argv(params, interp, work_dir) + skip_options(
            work_dir, state.skip, state.environment, measure=False
        )
        max_timeout = runner.config.max_timeout_s
        outcome = await runner.run_pytest(argv, max_timeout)
        records = work_dir / RECORDS_FILE
        run_events = await anyio.to_thread.run_sync(read_run_events, records, runner.project())
        run_status(outcome, argv, run_events, max_timeout, max_timeout)
        summary = await runner.summarize_records(records, Budgets(max_failures=0), outcome, argv)
    plan = await anyio.to_thread.run_sync(partial(select_from_run, state, work_dir, []))
    session_s = run_events.session_duration_s
    duration = round(session_s, 3) if session_s is not None else outcome.duration_s
    return DiscoveredPlan(plan, summary, duration)
