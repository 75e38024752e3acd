"""What an ``affected`` call can know of the next collection without running it: the
last full collection the map recorded (``last_full_collection``), the proof that no
test can fail, so that no pytest starts (``nothing_can_fail``, ``answer_without_pytest``),
and the test files a run needs to collect when some tests are selected
(``narrowed_files``), with the recorded collection brought up to date after such a run
(``merged_collection``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import orjson

from pytest_mcp_server.app.map_state import MapState
from pytest_mcp_server.app.runner import Runner
from pytest_mcp_server.domain.nodeids import node_path
from pytest_mcp_server.domain.selection import selection_of
from pytest_mcp_server.domain.tools import ExecuteParams, ExecuteResult
from pytest_mcp_server.run.argv import RECORDS_FILE, execute_argv
from pytest_mcp_server.run.interpreter import Interpreter
from pytest_mcp_server.run.process import ProcessOutcome
from pytest_mcp_server.run.recording import (
    CollectionDelta,
    collection_delta,
    config_file_parts,
    stat_key,
)


def last_full_collection(state: MapState, params: ExecuteParams) -> tuple[dict[str, Any], CollectionDelta] | str:
    """The last full collection the map recorded and how a collection now could differ
    from it (``run.recording.collection_delta``), for a call that narrows nothing (no
    ``node_ids``, ``markers``, ``keywords``, ``last_failed``) on a map that was trusted
    and holds the suite as last collected in full; else why not. Blocking."""
    if params.node_ids or params.markers or params.keywords or params.last_failed:
        return "the call narrows the selection (node_ids, markers, keywords or last_failed)"
    last = state.last_collection
    if state.notice or last is None:
        return "no full collection recorded yet"
    if last["collection"].get("narrowing"):
        return f"{last['collection']['narrowing'][0]} in the options collects only some tests"
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
    files = {node_path(node_id) for node_id in state.recorded if node_id not in skipped}
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
    read = await runner.read_records(records, params.budgets(), ProcessOutcome(5, False, 0.0, "", ""), argv)
    summary = read.summary()
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


def merged_collection(last: dict[str, Any] | None, narrowed: dict[str, Any]) -> dict[str, Any] | None:
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
