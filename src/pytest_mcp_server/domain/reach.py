"""The middle stages of an ``affected`` call's selection: what changed since the map's
tests last ran (``changed_elements``), and which tests each change reaches
(``reach``: one rule function per kind of change).

The stages, each a function over typed values (docs/SERVER.md, *Change-aware runs*):

1. diff: the files as they are now, read by ``app.map_state`` (each file's block
   fingerprints, ``domain.blocks``);
2. changed elements: ``changed_elements(snapshot, current)`` -> ``Changes``;
3. reach: ``reach(changes, snapshot, importers)`` -> ``Reach``, the union of ``RULES``
   (``importers``: what the import graph says of the changed files, ``domain.imports``,
   read by ``app.map_state`` only when a rule needs it);
4. selection: ``domain.selection.select_affected`` on ``recorded_tests(snapshot, reach)``;
5. plan: ``app.collection_proof`` (the proof that nothing can fail, the files to
   collect, the rootdir pins).

Dependency keys are typed (``ImportKey``): the code run at import that no test's context
holds is kept by the map under the key saying which tests depend on it, not under marker
node ids.

No I/O: the callers give the map's content and the current fingerprints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from pytest_mcp_server.domain.nodeids import node_path

Block = tuple[str, str]
"""A block as the map keeps it: (path relative to the root, fingerprint)."""

ImportScope = Literal["every_test", "module_level", "importing"]
"""Who depends on code run at import (``ImportKey``):

* ``every_test``: the function blocks run outside tests with no project module being
  imported (collection hooks, a ``conftest.py``'s import; before Python 3.12, all code
  run outside tests): every test;
* ``module_level``: the module-level blocks of the files run at import: a change reaches
  the tests of the files importing them (``importers_rule``);
* ``importing``: the function blocks run while one project module (``ImportKey.module``)
  was being imported: a change reaches the tests of the files importing that module."""


@dataclass(frozen=True, order=True)
class ImportKey:
    """The key of code run at import in the map: its ``scope`` and, for ``importing``,
    the ``module`` being imported (its path relative to the root)."""

    scope: ImportScope
    module: str = ""


EVERY_TEST = ImportKey("every_test")
MODULE_LEVEL = ImportKey("module_level")


def importing(module: str) -> ImportKey:
    """The key of the function blocks run while ``module`` (a relative path) was imported."""
    return ImportKey("importing", module)


@dataclass(frozen=True)
class TestEntry:
    """A test as the map holds it: its last ``outcome`` (``engine.read_report``'s names),
    the configuration fingerprint of that run (``config``) and the ids of the ``blocks``
    it ran."""

    __test__ = False  # not a pytest test class, whatever its name

    outcome: str
    config: str
    blocks: frozenset[int]


@dataclass(frozen=True)
class MapSnapshot:
    """What the map holds, as the stages read it: ``blocks`` (id -> ``Block``), ``tests``
    (node id -> ``TestEntry``) and ``import_code`` (``ImportKey`` -> its blocks)."""

    blocks: Mapping[int, Block]
    tests: Mapping[str, TestEntry]
    import_code: Mapping[ImportKey, frozenset[Block]] = field(default_factory=dict)


@dataclass(frozen=True)
class Changes:
    """What changed since the map's tests last ran (``changed_elements``): the ids of the
    test ``blocks`` whose fingerprint is no longer in their file; the files of changed
    code run at import for ``every_test``; the files whose ``module_level`` code, run at
    import, changed; per module, the files of changed code run while it was being
    imported (``importing``); and ``changed_files``: each file with a changed test block
    -> the fingerprints the map holds for it."""

    blocks: frozenset[int] = frozenset()
    every_test: frozenset[str] = frozenset()
    module_level: frozenset[str] = frozenset()
    importing: Mapping[str, frozenset[str]] = field(default_factory=dict)
    changed_files: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @property
    def through_imports(self) -> frozenset[str]:
        """The changed files whose change reaches tests through imports: the files of
        changed module-level code and of changed code run while a module was imported."""
        return self.module_level.union(*self.importing.values())

    @property
    def import_sources(self) -> list[str]:
        """The files whose importers the import graph must find (``importers_rule``):
        the files of changed module-level code and the modules whose import ran changed
        code, sorted."""
        return sorted(self.module_level | set(self.importing))


def changed_elements(snapshot: MapSnapshot, current: Callable[[str], set[str]]) -> Changes:
    """The changes between the map (``snapshot``) and the files now: ``current(path)`` is
    the set of fingerprints of ``path``'s blocks as it is now (empty when it is gone),
    called at most once per path."""
    known: dict[str, set[str]] = {}

    def now(path: str) -> set[str]:
        if path not in known:
            known[path] = current(path)
        return known[path]

    blocks = frozenset(i for i, (path, fingerprint) in snapshot.blocks.items() if fingerprint not in now(path))

    def changed_files(key: ImportKey) -> frozenset[str]:
        return frozenset(
            path for path, fingerprint in snapshot.import_code.get(key, ()) if fingerprint not in now(path)
        )

    importing_changed: dict[str, frozenset[str]] = {}
    for key in sorted(snapshot.import_code):
        if key.scope == "importing" and (files := changed_files(key)):
            importing_changed[key.module] = files
    by_file: dict[str, set[str]] = {snapshot.blocks[i][0]: set() for i in blocks}
    for path, fingerprint in snapshot.blocks.values():
        if path in by_file:
            by_file[path].add(fingerprint)
    return Changes(
        blocks=blocks,
        every_test=changed_files(EVERY_TEST),
        module_level=changed_files(MODULE_LEVEL),
        importing=importing_changed,
        changed_files={path: frozenset(fingerprints) for path, fingerprints in by_file.items()},
    )


@dataclass(frozen=True)
class Importers:
    """What the import graph says of the files ``Changes.import_sources`` names
    (``app.map_state.import_reach``): the files that import one of them, directly or
    through others, they included (``reached``), and why the graph cannot tell what some
    file imports (``opaque``, ``"path:line phrase"``, sorted; empty when it can)."""

    reached: frozenset[str]
    opaque: tuple[str, ...] = ()


@dataclass(frozen=True)
class Reach:
    """Which recorded tests the changes reach: ``tests``, node id -> the changed files
    that reach it (only the tests reached); ``everyone``, the changed files every test
    depends on; ``wide``, one line saying why every test depends on a change the import
    graph cannot follow (None when none)."""

    tests: Mapping[str, frozenset[str]] = field(default_factory=dict)
    everyone: frozenset[str] = frozenset()
    wide: str | None = None

    def union(self, other: Reach) -> Reach:
        """Both reaches: each test's files added up, ``everyone`` too, the first ``wide``."""
        tests = dict(self.tests)
        for node_id, files in other.tests.items():
            tests[node_id] = tests.get(node_id, frozenset()) | files
        return Reach(tests, self.everyone | other.everyone, self.wide or other.wide)


Rule = Callable[[Changes, MapSnapshot, "Importers | None"], Reach]
"""A reach rule: one kind of change -> the tests it reaches."""


def blocks_rule(changes: Changes, snapshot: MapSnapshot, importers: Importers | None) -> Reach:
    """A test reaches the files of the changed blocks it ran (its own test function, the
    functions and module-level code it ran)."""
    if not changes.blocks:
        return Reach()
    tests: dict[str, frozenset[str]] = {}
    for node_id, entry in snapshot.tests.items():
        if hit := entry.blocks & changes.blocks:
            tests[node_id] = frozenset(snapshot.blocks[i][0] for i in hit)
    return Reach(tests)


def every_test_rule(changes: Changes, snapshot: MapSnapshot, importers: Importers | None) -> Reach:
    """Changed code run at import with no project module being imported reaches every
    test."""
    return Reach(everyone=changes.every_test)


def importers_rule(changes: Changes, snapshot: MapSnapshot, importers: Importers | None) -> Reach:
    """Changed module-level code of a file, and changed code run while a module was
    imported, reach the tests that ran code in a file importing it (directly or through
    others, ``importers``), and the tests of those files; every test when the import
    graph cannot tell who imports it (``importers.opaque``), with the reason in
    ``Reach.wide``."""
    named = changes.through_imports
    if not named or importers is None:
        return Reach()
    if importers.opaque:
        first, more = importers.opaque[0], len(importers.opaque) - 1
        wide = (
            f"code run at import changed in {', '.join(sorted(named))} and the import graph cannot tell "
            f"who imports it ({first}{f' and {more} more' if more else ''}): every test depends on it"
        )
        return Reach(everyone=named, wide=wide)
    reached = importers.reached
    through = frozenset(i for i, (path, _) in snapshot.blocks.items() if path in reached)
    tests = {
        node_id: named
        for node_id, entry in snapshot.tests.items()
        if entry.blocks & through or node_path(node_id) in reached
    }
    return Reach(tests)


RULES: tuple[Rule, ...] = (blocks_rule, every_test_rule, importers_rule)
"""The reach rules, each for one kind of change (``Changes``' fields)."""


def reach(changes: Changes, snapshot: MapSnapshot, importers: Importers | None, rules: Iterable[Rule] = RULES) -> Reach:
    """The union of what each rule reaches."""
    found = Reach()
    for rule in rules:
        found = found.union(rule(changes, snapshot, importers))
    return found
