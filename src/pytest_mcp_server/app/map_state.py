"""The test map before an ``affected`` run (``read_map_state``): the diff stage (the
files as they are now, ``FileReader``) and the I/O the pure stages need
(``domain.reach``: changed elements and reach; ``import_reach``: the import graph),
giving which recorded tests are unchanged since they passed, what the last full
collection looked at, and the selection the map makes before pytest starts
(``selection_before_run``).

Blocking: files and SQLite; the callers run it in a worker thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from pytest_mcp_server.domain.blocks import changed_functions
from pytest_mcp_server.domain.coverage_answer import ChangedLines
from pytest_mcp_server.domain.imports import FileImports, ProjectFiles, file_imports, importers, opaque_files
from pytest_mcp_server.domain.reach import Importers, Reach, changed_elements, reach
from pytest_mcp_server.domain.selection import (
    RecordedTest,
    Selection,
    recorded_tests,
    select_affected,
    selection_of,
)
from pytest_mcp_server.run.pytest_plugin.pytest_mcp_server_shared import ENVIRONMENT_PARTS, short_hash, stat_key
from pytest_mcp_server.run.recording import (
    changed_parts,
    config_file_parts,
    config_fingerprint,
    python_files,
    read_blocks,
)
from pytest_mcp_server.run.testmap import open_map

CONFIG_PARTS_KEY = "config_parts"
"""The map's ``meta`` row holding the last run's configuration parts (JSON), to name what changed."""
COLLECTION_KEY = "collection"
"""The map's ``meta`` row holding what the last full collection looked at (JSON:
``{"collection": run.recording.Collected.collection, "environment": ..., "total": N}``)."""
IMPORTS_KEY = "imports"
"""The map's ``meta`` row holding the project's import graph as last read (``import_reach``)."""
FULL_NEXT_KEY = "full_collection_next"
"""The map's ``meta`` row saying why the next affected call must collect the whole suite
without pinning the rootdir (pytest refused the last call's command line, or resolved
another rootdir or ini file); removed by the next run that refreshes the map."""


@dataclass
class MapState:
    """The map before a run (``read_map_state``), built with keywords:

    * ``recorded``: its tests, each with the changed files that reach it;
    * ``reached``: the reach stage's answer (``domain.reach.Reach``: the tests reached,
      the files every test depends on, why the import graph was blind);
    * ``before``: the last run's configuration parts; ``now``: the configuration files'
      parts now (``run.recording.config_file_parts``);
    * ``notice``: when the map was rebuilt, why;
    * ``skip``: the recorded tests unchanged since they passed, under the last run's
      environment;
    * ``read``: the files whose block fingerprints were read this call (the map's are
      used while a file's stat key is unchanged), path -> (stat key, fingerprints), for
      the map to keep; ``stats``: the stat key of every file whose fingerprints it used
      (checked again before an answer without pytest);
    * ``changed_files``: each file with a block no longer as the map holds it -> the
      fingerprints the map holds for it (``changed_code`` names what changed there when
      there is no git diff);
    * ``imports_cache``: the import graph as read this call (``import_reach``; JSON for
      the map's meta), or None;
    * ``last_collection``: what the last full collection looked at (``COLLECTION_KEY``),
      or None; ``full_next``: why this call must collect the whole suite without pinning
      the rootdir (``FULL_NEXT_KEY``), or None."""

    recorded: dict[str, RecordedTest]
    reached: Reach = field(default_factory=Reach)
    before: dict[str, str] = field(default_factory=dict)
    now: dict[str, str] = field(default_factory=dict)
    notice: str | None = None
    skip: list[str] = field(default_factory=list)
    read: dict[str, tuple[str, set[str]]] = field(default_factory=dict)
    stats: dict[str, str | None] = field(default_factory=dict)
    changed_files: Mapping[str, frozenset[str]] = field(default_factory=dict)
    imports_cache: str | None = None
    last_collection: dict[str, Any] | None = None
    full_next: str | None = None

    @property
    def environment(self) -> dict[str, str]:
        """The interpreter's environment hashes of the last run (``ENVIRONMENT_PARTS``)."""
        return {name: self.before[name] for name in ENVIRONMENT_PARTS if name in self.before}

    @property
    def import_changed(self) -> frozenset[str]:
        """The changed files every test depends on (``Reach.everyone``)."""
        return self.reached.everyone

    @property
    def wide(self) -> str | None:
        """Why every test depends on a change the import graph cannot follow, or None."""
        return self.reached.wide


class FileReader:
    """The diff stage's reads: the block fingerprints of each file as it is now, from the
    map's ``files`` (path -> (stat key, fingerprints) as last read) while the file's stat
    key is unchanged, else parsed (``run.recording.read_blocks``); ``stats`` and ``read``
    as ``MapState`` keeps them."""

    def __init__(self, root: Path, known: Mapping[str, tuple[str, frozenset[str]]]) -> None:
        self.root = root
        self.known = known
        self.stats: dict[str, str | None] = {}
        self.read: dict[str, tuple[str, set[str]]] = {}

    def current(self, file: str) -> set[str]:
        """The fingerprints of ``file``'s blocks now (empty when it is gone)."""
        stat = self.stats[file] = stat_key(self.root / file)  # before reading: a write in between changes it again
        cached = self.known.get(file)
        if stat is not None and cached is not None and cached[0] == stat:
            return set(cached[1])
        blocks = read_blocks(self.root, file, stat)
        fingerprints = blocks.fingerprints() if blocks is not None else set()
        if stat is not None and blocks is not None:
            self.read[file] = (stat, fingerprints)
        return fingerprints


def read_map_state(root: Path, path: Path) -> MapState:
    """``MapState`` of the map at ``path`` for the project at ``root`` (blocking: files
    and SQLite): the diff (``FileReader``), the changed elements
    (``domain.reach.changed_elements``), the import graph when a change needs it
    (``import_reach``), the reach (``domain.reach.reach``); a test is skipped when
    ``domain.selection.select_affected``, given the last run's environment, would not
    select it."""
    test_map, notice = open_map(path)
    with test_map:
        snapshot = test_map.snapshot()
        files = FileReader(root, test_map.files())
        changes = changed_elements(snapshot, files.current)
        importers: Importers | None = None
        imports_cache: str | None = None
        if changes.import_sources:
            importers, imports_cache = import_reach(root, test_map.meta(IMPORTS_KEY), changes.import_sources)
        before: dict[str, str] = orjson.loads(test_map.meta(CONFIG_PARTS_KEY) or "{}")
        last_collection = orjson.loads(test_map.meta(COLLECTION_KEY) or "null")
        full_next = test_map.meta(FULL_NEXT_KEY)
    reached = reach(changes, snapshot, importers)
    state = MapState(
        recorded=recorded_tests(snapshot, reached),
        reached=reached,
        before=before,
        now=config_file_parts(root),
        notice=notice,
        read=files.read,
        stats=files.stats,
        changed_files=changes.changed_files,
        imports_cache=imports_cache,
        last_collection=last_collection,
        full_next=full_next,
    )
    if state.recorded and len(state.environment) == len(ENVIRONMENT_PARTS):
        expected = config_fingerprint({**state.now, **state.environment})
        chosen, _ = select_affected(list(state.recorded), state.recorded, expected, import_changed=state.import_changed)
        selected = {test.node_id for test in chosen}
        state.skip = [node_id for node_id in state.recorded if node_id not in selected]
    return state


def import_reach(root: Path, cached: str | None, changed: list[str]) -> tuple[Importers, str]:
    """What the import graph says of ``changed`` (paths relative to ``root``;
    ``domain.reach.Importers``): the project's files that import one of them, directly or
    through other files, they included (``domain.imports``), and the reasons the graph
    cannot tell what some file imports (``opaque_files``; every test then depends on
    ``changed``); and the graph as read now, as JSON for the map's meta.

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

    def read(path: str) -> bytes | None:
        try:
            return (root / path).read_bytes()
        except OSError:
            return None

    project = ProjectFiles(files, read)
    graph: dict[str, FileImports] = {}
    for path, stat in files.items():
        entry = known.get(path)
        # the file's edges hold while it and the files it read (a star import's package) are as they were
        if (
            entry is not None
            and len(entry) == 5
            and entry[0] == stat
            and all(files.get(r) == k for r, k in entry[4].items())
        ):
            graph[path] = FileImports(frozenset(entry[1]), entry[2], entry[3], frozenset(entry[4]))
            continue
        try:
            graph[path] = file_imports(path, (root / path).read_bytes(), project)
        except OSError as exc:
            graph[path] = FileImports(frozenset(), f"{path} could not be read ({exc.strerror})")
    written = {
        path: [files[path], sorted(i.targets), i.opaque, i.parsed, {r: files.get(r) for r in sorted(i.reads)}]
        for path, i in graph.items()
    }
    cache = orjson.dumps({"listing": listing, "files": written}).decode()
    # a changed file that does not parse imports nothing: it fails wherever it is imported
    # (its importers are found through their own edges)
    blind = {path: i for path, i in graph.items() if i.parsed or path not in changed}
    reached = importers(graph, changed, opaque_imports_all=False)
    return Importers(frozenset(reached), tuple(opaque_files(blind))), cache


def changed_code(root: Path, changed_files: Mapping[str, frozenset[str]]) -> ChangedLines:
    """The functions of ``changed_files`` (``MapState.changed_files``) whose fingerprints
    the map does not hold (``domain.blocks.changed_functions``: edited or added), as
    ``ChangedLines``: what stands for a git diff outside git."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    for path, recorded in sorted(changed_files.items()):
        now = read_blocks(root, path)
        if now is not None and (found := changed_functions(now, recorded)):
            ranges[path] = found
    return ChangedLines(ranges=ranges)


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


def keep_reads(path: Path, state: MapState) -> None:
    """Keep in the map at ``path`` what ``read_map_state`` read that it did not hold: the
    block fingerprints of the files read this call (with their stat keys) and the import
    graph, when there is any; one transaction. For a call that runs no pytest (a run's
    refresh keeps them itself)."""
    if not state.read and state.imports_cache is None:
        return
    test_map, _ = open_map(path)
    with test_map:
        test_map.keep(state.read, {IMPORTS_KEY: state.imports_cache} if state.imports_cache is not None else {})


def collect_in_full_next(path: Path, why: str) -> None:
    """Mark the map at ``path`` so that the next affected call collects the whole suite
    without pinning the rootdir, saying ``why`` (``FULL_NEXT_KEY``); nothing else in it
    changes."""
    test_map, _ = open_map(path)
    with test_map:
        test_map.keep({}, {FULL_NEXT_KEY: why})
