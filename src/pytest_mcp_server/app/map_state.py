"""The test map before an ``affected`` run (``read_map_state``): which recorded tests
are unchanged since they passed, what changed (blocks, module-level code reached
through imports, configuration files), what the last full collection looked at, and
the selection the map makes before pytest starts (``selection_before_run``).

Blocking: files and SQLite; the callers run it in a worker thread.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from pytest_mcp_server.domain.blocks import changed_functions
from pytest_mcp_server.domain.coverage_answer import ChangedLines
from pytest_mcp_server.domain.imports import FileImports, ProjectFiles, file_imports, importers, opaque_files
from pytest_mcp_server.domain.nodeids import node_path
from pytest_mcp_server.domain.selection import RecordedTest, Selection, changed_blocks, select_affected, selection_of
from pytest_mcp_server.run.pytest_plugin.pytest_mcp_server_shared import ENVIRONMENT_PARTS, short_hash, stat_key
from pytest_mcp_server.run.recording import (
    changed_parts,
    config_file_parts,
    config_fingerprint,
    python_files,
    read_blocks,
)
from pytest_mcp_server.run.testmap import IMPORTED_MODULES_ENTRY, open_map

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
    """The map before a run: its ``recorded`` tests (with the files of theirs that
    changed), the configuration ``before`` (the last run's parts), the ``notice`` when
    it was rebuilt, the configuration files' parts ``now``
    (``run.recording.config_file_parts``), ``skip``: the recorded tests unchanged since
    they passed, under the last run's environment, ``read``: the files whose block
    fingerprints were read this call (the map's are used while a file's stat key is
    unchanged), path -> (stat key, fingerprints), for the map to keep, and
    ``import_changed``: the files of the function blocks run at import, with no module
    being imported, that changed (every test depends on those; those run while a module
    was imported reach its importers' tests through ``recorded``), and ``changed_files``: each file with a block no
    longer as the map holds it -> the fingerprints the map holds for it (``changed_code``
    names what changed there when there is no git diff), ``imports_cache``: the import
    graph as read this call (``import_reach``; JSON for the map's meta), and ``wide``:
    one line saying why every test depends on a change the import graph cannot follow;
    ``stats``: the stat key of every file whose fingerprints it used (checked again before
    an answer without pytest), ``last_collection``: what the last full collection looked
    at (``COLLECTION_KEY``), or None; ``full_next``: why this call must collect the whole
    suite without pinning the rootdir (``FULL_NEXT_KEY``), or None."""

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
    full_next: str | None = None

    @property
    def environment(self) -> dict[str, str]:
        """The interpreter's environment hashes of the last run (``ENVIRONMENT_PARTS``)."""
        return {name: self.before[name] for name in ENVIRONMENT_PARTS if name in self.before}


def read_map_state(root: Path, path: Path) -> MapState:
    """``MapState`` of the map at ``path`` for the project at ``root`` (blocking: files
    and SQLite). A test is skipped when ``domain.selection.select_affected``, given the
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
                    blocks = read_blocks(root, file, stat)
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
        # code run while a module was being imported: what changed reaches what imports that module
        ran_at_import = {
            module: {file for file, fingerprint in functions if fingerprint not in current(file)}
            for module, functions in test_map.importing().items()
        }
        importing_changed = {module: files for module, files in ran_at_import.items() if files}
        named = frozenset(modules_changed).union(*importing_changed.values())
        imports_cache: str | None = None
        wide: str | None = None
        reached: set[str] = set()
        if named:
            sources = sorted(set(modules_changed) | set(importing_changed))
            reached, opaque, imports_cache = import_reach(root, test_map.meta(IMPORTS_KEY), sources)
            if opaque:
                import_changed |= named
                wide = (
                    f"code run at import changed in {', '.join(sorted(named))} and the import graph cannot tell "
                    f"who imports it ({opaque[0]}{f' and {len(opaque) - 1} more' if len(opaque) > 1 else ''}): "
                    "every test depends on it"
                )
                reached = set()
        through = {i for i, (file, _) in blocks.items() if file in reached}
        recorded = test_map.tests(gone | through)
        before: dict[str, str] = orjson.loads(test_map.meta(CONFIG_PARTS_KEY) or "{}")
        last_collection = orjson.loads(test_map.meta(COLLECTION_KEY) or "null")
        full_next = test_map.meta(FULL_NEXT_KEY)
    if reached:
        # a test that ran an importer's code, or whose own file imports what changed: the
        # changed files are what changed for it
        importers_only = reached - {blocks[i][0] for i in gone}
        for node_id, entry in recorded.items():
            if entry.changed & importers_only or node_path(node_id) in reached:
                changed = (entry.changed - importers_only) | named
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
        full_next,
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
