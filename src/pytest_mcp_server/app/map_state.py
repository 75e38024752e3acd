"""The test map before an ``affected`` run (``read_map_state``): the diff stage (the
files as they are now, ``FileReader``) and the I/O the pure stages need
(``domain.reach``: changed elements and reach; ``ImportGraph``: the import graph),
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
from pytest_mcp_server.domain.elements import Element
from pytest_mcp_server.domain.imports import FileImports, ProjectFiles, file_imports, importers, opaque_files
from pytest_mcp_server.domain.reach import (
    RULES,
    BlockFacts,
    Importers,
    Reach,
    ReachInput,
    changed_elements,
    element_changes,
    elements_rule,
    pending_rule,
)
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
"""The map's ``meta`` row holding the project's import graph as last read (``ImportGraph``)."""
RECORDER_KEY = "recorder"
"""The map's ``meta`` row naming the recorder of its last run (``sys.monitoring``,
``coverage.py``: the latter cannot tell each module's import apart)."""
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
    * ``imports_cache``: the import graph as read this call (``ImportGraph``; JSON for
      the map's meta), or None;
    * ``last_collection``: what the last full collection looked at (``COLLECTION_KEY``),
      or None; ``full_next``: why this call must collect the whole suite without pinning
      the rootdir (``FULL_NEXT_KEY``), or None;
    * ``elements``: the module-level elements of the files whose stat changed, as they
      are now (path -> (stat key, elements); None: the file is gone), for the map to keep
      from now on; ``pending``: the tests a module-level change reaches (node id -> the
      changed files), kept in the map for those that do not run this call."""

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
    elements: dict[str, tuple[str, tuple[Element, ...]] | None] = field(default_factory=dict)
    pending: dict[str, frozenset[str]] = field(default_factory=dict)

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

    @property
    def said(self) -> str | None:
        """The selection's notice: the map rebuilt, the import graph blind, code that
        reads names computed at run time (one line each, ``; ``-joined), or None."""
        return "; ".join(filter(None, [self.notice, self.reached.wide, self.reached.blind])) or None


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
    and SQLite): the diff (``FileReader``, and the module-level elements of the files
    whose stat changed), the changed elements (``domain.reach.changed_elements``), the
    reach (``domain.reach.RULES``, the import graph read when a rule asks:
    ``ImportGraph``); a test is skipped when ``domain.selection.select_affected``, given
    the last run's environment, would not select it."""
    test_map, notice = open_map(path)
    with test_map:
        snapshot = test_map.snapshot()
        files = FileReader(root, test_map.files())
        element_stats = {file: (stat, stat_key(root / file)) for file, stat in test_map.element_stats().items()}
        stale = {file for file, (then, now_stat) in element_stats.items() if then != now_stat}
        kept = test_map.elements(stale)
        elements_now: dict[str, tuple[str, tuple[Element, ...]] | None] = {}
        for file in stale:
            stat = stat_key(root / file)  # before reading: a write in between changes it again
            blocks = read_blocks(root, file, stat) if stat is not None else None
            elements_now[file] = (stat, blocks.elements) if stat is not None and blocks is not None else None
        now = {file: version[1] for file, version in elements_now.items() if version is not None}
        changes = changed_elements(snapshot, files.current, element_changes(kept, now))
        facts: Mapping[int, BlockFacts] = {}
        current: dict[str, tuple[Element, ...]] = {}
        if changes.elements:
            facts = test_map.block_facts()
            current = {**test_map.elements(), **now}
            for file, version in elements_now.items():
                if version is None:
                    current.pop(file, None)
        ran = frozenset({file for file, _ in snapshot.blocks.values()} | set(element_stats))
        # the fixtures of the changed files, as kept and as they are now (a changed fixture's closure)
        fixtures = {
            (file, e.key): e.names for file, elements in [*kept.items(), *now.items()] for e in elements if e.fixture
        }
        qualnames = test_map.qualnames(changes.blocks) if fixtures else {}
        graph = ImportGraph(root, test_map.meta(IMPORTS_KEY), ran)
        before: dict[str, str] = orjson.loads(test_map.meta(CONFIG_PARTS_KEY) or "{}")
        last_collection = orjson.loads(test_map.meta(COLLECTION_KEY) or "null")
        full_next = test_map.meta(FULL_NEXT_KEY)
        splits_imports = test_map.meta(RECORDER_KEY) != "coverage.py"
    given = ReachInput(snapshot, graph.importers, facts, current, splits_imports, fixtures, qualnames, graph.resolve)
    parts = {rule: rule(changes, given) for rule in RULES}
    reached = Reach()
    for part in parts.values():
        reached = reached.union(part)
    # what a module-level change reached stays with each test until it runs: the map's
    # elements are brought up to date by this call
    carried = parts[elements_rule].union(parts[pending_rule])
    pending = dict(carried.tests)
    if carried.everyone:
        pending = {n: pending.get(n, frozenset()) | carried.everyone for n in snapshot.tests}
    state = MapState(
        recorded=recorded_tests(snapshot, reached),
        reached=reached,
        before=before,
        now=config_file_parts(root),
        notice=notice,
        read=files.read,
        stats={**files.stats, **{file: now_stat for file, (_, now_stat) in element_stats.items()}},
        changed_files=changes.changed_files,
        imports_cache=graph.cache,
        last_collection=last_collection,
        full_next=full_next,
        elements=elements_now,
        pending=pending,
    )
    if state.recorded and len(state.environment) == len(ENVIRONMENT_PARTS):
        expected = config_fingerprint({**state.now, **state.environment})
        chosen, _ = select_affected(list(state.recorded), state.recorded, expected, import_changed=state.import_changed)
        selected = {test.node_id for test in chosen}
        state.skip = [node_id for node_id in state.recorded if node_id not in selected]
    return state


class ImportGraph:
    """The project's import graph (``domain.imports``), read when a reach rule first asks
    for a file's importers; ``cache`` is then the graph as read, as JSON for the map's
    meta (else None).

    ``cached`` is that JSON from the last call: a file's imports are read again only
    when its stat key changed, and all of them when the set of files changed (a new
    file can change what a name resolves to). ``ran``: the files the map knows ran (a
    computed import in a file that never ran loads nothing)."""

    def __init__(self, root: Path, cached: str | None, ran: frozenset[str]) -> None:
        self.root = root
        self.cached = cached
        self.ran = ran
        self.cache: str | None = None
        self.graph: dict[str, FileImports] | None = None
        self.project: ProjectFiles | None = None
        self.answers: dict[str, Importers] = {}

    def importers(self, changed: str) -> Importers:
        """The files importing ``changed`` (it included), and why the graph cannot tell
        what some file that ran imports."""
        if changed not in self.answers:
            graph = self._read()
            reached = importers(graph, [changed])
            # a changed file that does not parse imports nothing: it fails wherever it is imported
            # (its importers are found through their own edges); one that never ran imports nothing
            blind = {p: i for p, i in graph.items() if (i.parsed or p != changed) and p in self.ran}
            self.answers[changed] = Importers(frozenset(reached), tuple(opaque_files(blind)))
        return self.answers[changed]

    def resolve(self, importer: str, dotted: str) -> frozenset[str]:
        """The project files an import of ``dotted`` in ``importer`` may load
        (``domain.imports.ProjectFiles.resolve``)."""
        self._read()
        assert self.project is not None
        return self.project.resolve(importer, dotted)

    def _read(self) -> dict[str, FileImports]:
        if self.graph is not None:
            return self.graph
        root = self.root
        files = python_files(root)
        listing = short_hash(*sorted(files))
        known: dict[str, list[Any]] = {}
        if self.cached:
            given = orjson.loads(self.cached)
            if given.get("listing") == listing:
                known = given["files"]

        def read(path: str) -> bytes | None:
            try:
                return (root / path).read_bytes()
            except OSError:
                return None

        project = self.project = ProjectFiles(files, read)
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
        self.cache = orjson.dumps({"listing": listing, "files": written}).decode()
        self.graph = graph
        return graph


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
    return selection_of(tests, total, files, state.said)


def keep_reads(path: Path, state: MapState) -> None:
    """Keep in the map at ``path`` what ``read_map_state`` read that it did not hold: the
    block fingerprints of the files read this call (with their stat keys), the
    module-level elements of the files whose stat changed, and the import graph, when
    there is any; one transaction. For a call that runs no pytest, which proved that no
    test can fail (so no module-level change reached a test; a run's refresh keeps them
    itself)."""
    if not state.read and state.imports_cache is None and not state.elements:
        return
    test_map, _ = open_map(path)
    with test_map:
        meta: dict[str, str | None] = {IMPORTS_KEY: state.imports_cache} if state.imports_cache is not None else {}
        test_map.keep(state.read, meta, state.elements)


def collect_in_full_next(path: Path, why: str) -> None:
    """Mark the map at ``path`` so that the next affected call collects the whole suite
    without pinning the rootdir, saying ``why`` (``FULL_NEXT_KEY``); nothing else in it
    changes."""
    test_map, _ = open_map(path)
    with test_map:
        test_map.keep({}, {FULL_NEXT_KEY: why})
