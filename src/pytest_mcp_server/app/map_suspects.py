"""A plain call's suspects from the test map: ``execute_tests`` without ``affected`` and
without ``coverage`` records nothing, but when an earlier affected call left a map of
this root and interpreter, its answer names the changed code that the failing tests
ran as the map last recorded them, and groups the failures of the top suspect as one
(``app.runner.regrouped``).

The run stays a plain one (no recorder, no option of the map's on its argv). Only after
it, and only when a test failed: the lines changed since ``HEAD`` (``run.git``; outside
git, the functions whose fingerprints the map does not hold, ``app.map_state.changed_code``),
the map read only (``run.testmap.read_only_map``: it never changes, and a call writing
it neither waits for this read nor makes it wait), the changed files' hunks
(``domain.suspects.changed_hunks``) ranked over this run's outcomes
(``domain.suspects.rank_recorded``). No map, an unreadable one, or one that holds none
of the failing tests: no suspects, and nothing said.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from functools import partial
from pathlib import Path

import anyio

from pytest_mcp_server.app.map_state import changed_code
from pytest_mcp_server.app.runner import RunAnswer, Runner, regrouped
from pytest_mcp_server.domain.blocks import FileBlocks
from pytest_mcp_server.domain.coverage_answer import ChangedLines
from pytest_mcp_server.domain.policy import SUSPECTS_LISTED
from pytest_mcp_server.domain.suspects import (
    FAILING_OUTCOMES,
    RecordedRuns,
    Suspect,
    changed_hunks,
    rank_recorded,
)
from pytest_mcp_server.domain.tools import ExecuteParams, ExecuteResult
from pytest_mcp_server.run.git import changed_lines
from pytest_mcp_server.run.interpreter import Interpreter
from pytest_mcp_server.run.pytest_plugin.pytest_mcp_server_shared import stat_key
from pytest_mcp_server.run.recording import read_blocks
from pytest_mcp_server.run.testmap import TestMap, map_path, read_only_map


def recorded_map(runner: Runner, interp: Interpreter) -> Path | None:
    """The map file of this root and ``interp`` (``run.testmap.map_path``) when one
    exists (a stat: what a plain call pays before its run), else None."""
    path = map_path(runner.artifacts_base, runner.root, interp.python)
    return path if path.is_file() else None


async def with_map_suspects(runner: Runner, params: ExecuteParams, answer: RunAnswer, path: Path) -> ExecuteResult:
    """``answer`` (a plain run's, each test's outcome read) with the suspects the map at
    ``path`` gives (``map_suspects``) and its summary regrouped by the top one; the
    result as it was when there are none to name."""
    result = answer.result
    suspects = await map_suspects(runner, path, answer.outcomes)
    if suspects is None:
        return result
    update: dict[str, object] = {"suspects": suspects}
    if suspects:  # failures with no cause frame that ran the top suspect: one cause
        again = await regrouped(runner, Path(result.report_path), params.budgets(), suspects[0])
        update["summary"] = again or result.summary
    return result.model_copy(update=update)


async def map_suspects(runner: Runner, path: Path, outcomes: Mapping[str, str]) -> list[Suspect] | None:
    """The changed code the failing tests of a plain run (``outcomes``: node id ->
    outcome of every test) ran as the map at ``path`` last recorded them, best first,
    at most ``SUSPECTS_LISTED``; [] when they ran none of it; None when no test failed,
    nothing changed, or the map is missing, unreadable or holds none of the failing
    tests. Never raises for the map."""
    if not any(outcome in FAILING_OUTCOMES for outcome in outcomes.values()):
        return None
    changed = await changed_lines(runner.root)
    return await anyio.to_thread.run_sync(partial(suspects_from_map, runner.root, path, changed, outcomes))


def suspects_from_map(
    root: Path, path: Path, changed: ChangedLines | None, outcomes: Mapping[str, str]
) -> list[Suspect] | None:
    """``map_suspects``'s reading and ranking (blocking: SQLite and the changed files).
    ``changed``: the git diff, None outside git (the functions the map saw change then
    stand for it)."""
    test_map = read_only_map(path)
    if test_map is None:
        return None
    try:
        with test_map, test_map.reading():
            return _rank_from(test_map, root, changed, outcomes)
    except sqlite3.Error:
        return None


def _rank_from(
    test_map: TestMap, root: Path, changed: ChangedLines | None, outcomes: Mapping[str, str]
) -> list[Suspect] | None:
    """``suspects_from_map`` inside the map's read transaction."""
    entries = test_map.entries(outcomes)
    failing = [node_id for node_id in entries if outcomes[node_id] in FAILING_OUTCOMES]
    if not failing:
        return None
    blocks = test_map.blocks()
    if changed is None:  # no git: the functions whose fingerprints the map does not hold
        ran = {blocks[i][0] for node_id in failing for i in entries[node_id] if i in blocks}
        files = test_map.files()
        stale = {p: fps for p, (stat, fps) in files.items() if p in ran and stat_key(root / p) != stat}
        changed = changed_code(root, stale)
    if not changed.touched():
        return None
    # a file no test ran when the map recorded them holds no suspect
    known = set(test_map.element_stats()) | {file for file, _ in blocks.values()}
    sources: dict[str, str] = {}
    parsed: dict[str, FileBlocks] = {}
    for file in changed.touched():
        if file not in known or not file.endswith(".py"):
            continue
        found = read_blocks(root, file)
        try:
            text = (root / file).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if found is not None:
            sources[file], parsed[file] = text, found
    hunks = changed_hunks(changed, sources, parsed)
    # the blocks of the changed files, by qualified name (their fingerprints changed with the edit)
    names = test_map.qualnames(i for i, (file, _) in blocks.items() if file in parsed)
    wanted = frozenset().union(*(h.names for h in hunks if h.function is None))
    facts = test_map.block_facts() if wanted else {}
    functions: dict[tuple[str, str], set[str]] = {}
    readers: dict[str, set[str]] = {}
    for node_id, ids in entries.items():
        for i in names.keys() & ids:
            functions.setdefault((blocks[i][0], names[i]), set()).add(node_id)
        if wanted:  # a module-level change: the tests whose recorded code refers to a name it binds
            for name in set().union(*(facts[i].names & wanted for i in ids if i in facts)):
                readers.setdefault(name, set()).add(node_id)
    by_block = {block: i for i, block in blocks.items()}
    at_import = frozenset(
        (file, names[by_block[(file, fp)]])
        for code in test_map.import_code(blocks).values()
        for file, fp in code
        if by_block.get((file, fp)) in names
    )
    recorded = RecordedRuns(
        {key: frozenset(tests) for key, tests in functions.items()},
        {name: frozenset(tests) for name, tests in readers.items()},
        at_import,
    )
    return rank_recorded(hunks, recorded, outcomes, SUSPECTS_LISTED)
