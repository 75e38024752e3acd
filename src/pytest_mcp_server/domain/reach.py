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
from typing import Any, Literal

from pytest_mcp_server.domain.elements import COMPUTED, Element, ElementKind
from pytest_mcp_server.domain.imports import ProjectFiles
from pytest_mcp_server.domain.nodeids import node_function, node_path

Block = tuple[str, str]
"""A block as the map keeps it: (path relative to the root, fingerprint)."""

ImportScope = Literal["every_test", "importing"]
"""Who depends on code run at import that no test's context holds (``ImportKey``):

* ``every_test``: the function blocks run outside tests with no project module being
  imported (collection hooks, a ``conftest.py``'s import; before Python 3.12, all code
  run outside tests): every test;
* ``importing``: the function blocks run while one project module (``ImportKey.module``)
  was being imported: a change reaches the tests of the files importing that module."""


@dataclass(frozen=True, order=True)
class ImportKey:
    """The key of code run at import in the map: its ``scope`` and, for ``importing``,
    the ``module`` being imported (its path relative to the root)."""

    scope: ImportScope
    module: str = ""


EVERY_TEST = ImportKey("every_test")


def importing(module: str) -> ImportKey:
    """The key of the function blocks run while ``module`` (a relative path) was imported."""
    return ImportKey("importing", module)


@dataclass(frozen=True)
class BlockFacts:
    """What the map keeps of a block beside its fingerprint: the ``names`` its code refers
    to, how it reads a module's names by a computed name (``blind``: ``"path:line
    phrase"``, else None) and its qualified ``name`` (``domain.blocks.Block``)."""

    names: frozenset[str]
    blind: str | None = None
    name: str = ""


@dataclass(frozen=True)
class TestEntry:
    """A test as the map holds it: its last ``outcome`` (``engine.read_report``'s names),
    the configuration fingerprint of that run (``config``), the ids of the ``blocks`` it
    ran, the ``names`` it refers to beside its blocks' (its fixture closure, its class
    and function names), and ``pending``: the changed files an earlier call found
    reaching it, while it has not run since (``pending_rule``)."""

    __test__ = False  # not a pytest test class, whatever its name

    outcome: str
    config: str
    blocks: frozenset[int]
    names: frozenset[str] = frozenset()
    pending: frozenset[str] = frozenset()


@dataclass(frozen=True)
class MapSnapshot:
    """What the map holds, as the stages read it: ``blocks`` (id -> ``Block``), ``tests``
    (node id -> ``TestEntry``) and ``import_code`` (``ImportKey`` -> its blocks)."""

    blocks: Mapping[int, Block]
    tests: Mapping[str, TestEntry]
    import_code: Mapping[ImportKey, frozenset[Block]] = field(default_factory=dict)


@dataclass(frozen=True)
class ElementChange:
    """A module-level element of ``path`` (``domain.elements``) that is not as the map's
    tests last saw it: ``before``, as the map keeps it (None: new), ``now``, as the file
    holds it (None: gone). ``derived``: the element itself is as it was, but it reads a
    name whose value changed (``propagate``)."""

    @property
    def files(self) -> frozenset[str]:
        """The changed files the answer names for it: its causes, else its own file."""
        return self.causes or frozenset({self.path})

    path: str
    key: str
    before: Element | None
    now: Element | None
    derived: bool = False
    causes: frozenset[str] = frozenset()
    """The changed files it follows from (its own file when it changed itself)."""

    @property
    def versions(self) -> tuple[Element, ...]:
        """The element as it was and as it is (one of them when it is new or gone)."""
        return tuple(e for e in (self.before, self.now) if e is not None)

    @property
    def kind(self) -> ElementKind:
        """Its kind (the current one when it changed kind)."""
        return self.versions[-1].kind

    @property
    def names(self) -> frozenset[str]:
        """The names either version binds."""
        return frozenset().union(*(e.names for e in self.versions))


def element_changes(
    kept: Mapping[str, Iterable[Element]], now: Mapping[str, Iterable[Element]]
) -> tuple[ElementChange, ...]:
    """The elements of the files of ``kept`` (path -> the elements the map keeps) that
    differ from ``now`` (path -> the elements the file holds now; a file missing from it
    is gone): keys added, removed, or whose fingerprint changed."""
    out: list[ElementChange] = []
    for path in sorted(kept):
        before = {e.key: e for e in kept[path]}
        after = {e.key: e for e in now.get(path, ())}
        for key in sorted(before.keys() | after.keys()):
            old, new = before.get(key), after.get(key)
            if old is None or new is None or old.fingerprint != new.fingerprint:
                out.append(ElementChange(path, key, old, new))
    return tuple(out)


@dataclass(frozen=True)
class Changes:
    """What changed since the map's tests last ran (``changed_elements``): the ids of the
    test ``blocks`` whose fingerprint is no longer in their file; the files of changed
    code run at import for ``every_test``; per module, the files of changed code run
    while it was being imported (``importing``); the module-level ``elements`` changed
    (``element_changes``); and ``changed_files``: each file with a changed test block
    -> the fingerprints the map holds for it."""

    blocks: frozenset[int] = frozenset()
    every_test: frozenset[str] = frozenset()
    importing: Mapping[str, frozenset[str]] = field(default_factory=dict)
    elements: tuple[ElementChange, ...] = ()
    changed_files: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @property
    def import_sources(self) -> list[str]:
        """The modules whose import ran changed code, sorted (``importing_rule``)."""
        return sorted(self.importing)


def changed_elements(
    snapshot: MapSnapshot, current: Callable[[str], set[str]], elements: Iterable[ElementChange] = ()
) -> Changes:
    """The changes between the map (``snapshot``) and the files now: ``current(path)`` is
    the set of fingerprints of ``path``'s blocks as it is now (empty when it is gone),
    called at most once per path; ``elements``: the module-level elements changed
    (``element_changes`` of the files whose stat changed)."""
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
        importing=importing_changed,
        elements=tuple(elements),
        changed_files={path: frozenset(fingerprints) for path, fingerprints in by_file.items()},
    )


@dataclass(frozen=True)
class Importers:
    """What the import graph says of a changed file (``app.map_state``'s graph): the files
    that import it, directly or through others, it included (``reached``), and why the
    graph cannot tell what some file that ran imports (``opaque``, ``"path:line phrase"``,
    sorted; empty when it can: every test then depends on the change)."""

    reached: frozenset[str]
    opaque: tuple[str, ...] = ()


@dataclass(frozen=True)
class Reach:
    """Which recorded tests the changes reach: ``tests``, node id -> the changed files
    that reach it (only the tests reached); ``everyone``, the changed files every test
    depends on; ``wide``, one line saying why every test depends on a change the names
    and the import graph cannot follow (None when none); ``blind``, one line naming the
    code that made some tests depend on a change through imports rather than names."""

    tests: Mapping[str, frozenset[str]] = field(default_factory=dict)
    everyone: frozenset[str] = frozenset()
    wide: str | None = None
    blind: str | None = None

    def union(self, other: Reach) -> Reach:
        """Both reaches: each test's files added up, ``everyone`` too, the first lines."""
        tests = dict(self.tests)
        for node_id, files in other.tests.items():
            tests[node_id] = tests.get(node_id, frozenset()) | files
        return Reach(tests, self.everyone | other.everyone, self.wide or other.wide, self.blind or other.blind)


@dataclass
class ReachInput:
    """What the rules read besides the changes: the map's ``snapshot``; ``importers(path)``,
    the import graph's answer for one changed file (the caller reads the graph once, when
    a rule first asks); ``facts``, each block's ``BlockFacts`` (read only when a
    module-level element changed); ``elements``, the module-level elements of every
    file the map keeps as they are now (what a changed name propagates through);
    ``splits_imports``: whether the recorder told each module's import apart
    (sys.monitoring); before Python 3.12 it could not, and any module's import is taken
    to have run project code; ``fixtures``: (path, qualified name) -> the names a
    fixture is requested by, for the fixtures of the files whose stat changed (as kept
    and as they are now); ``qualnames``: the qualified name of each changed block;
    ``resolve(importer, dotted)``: the project files an import in ``importer`` of
    ``dotted`` (leading dots: relative) may load (the caller reads the project's files
    when a rule first asks)."""

    snapshot: MapSnapshot
    importers: Callable[[str], Importers]
    facts: Mapping[int, BlockFacts] = field(default_factory=dict)
    elements: Mapping[str, tuple[Element, ...]] = field(default_factory=dict)
    splits_imports: bool = True
    fixtures: Mapping[tuple[str, str], frozenset[str]] = field(default_factory=dict)
    qualnames: Mapping[int, str] = field(default_factory=dict)
    resolve: Callable[[str, str], frozenset[str]] = lambda importer, dotted: frozenset()
    _test_files: frozenset[str] | None = None

    @property
    def test_files(self) -> frozenset[str]:
        """The files holding the map's tests."""
        if self._test_files is None:
            self._test_files = frozenset(node_path(node_id) for node_id in self.snapshot.tests)
        return self._test_files

    def role(self, path: str) -> FileRole:
        """What pytest makes of the file: ``conftest``, ``test`` (it holds tests), ``source``."""
        if path == "conftest.py" or path.endswith("/conftest.py"):
            return "conftest"
        return "test" if path in self.test_files else "source"

    def import_ran_code(self, path: str) -> bool:
        """Whether the module's import ran project functions (so a change to a statement
        that calls project code may have done more than bind its names)."""
        return not self.splits_imports or bool(self.snapshot.import_code.get(importing(path)))


FileRole = Literal["conftest", "test", "source"]
"""What pytest makes of a file (``ReachInput.role``)."""


Rule = Callable[[Changes, ReachInput], Reach]
"""A reach rule: one kind of change -> the tests it reaches."""


def blocks_rule(changes: Changes, given: ReachInput) -> Reach:
    """A test reaches the files of the changed blocks it ran (its own test function, the
    functions it ran, the module-level code it ran during the test)."""
    if not changes.blocks:
        return Reach()
    snapshot = given.snapshot
    tests: dict[str, frozenset[str]] = {}
    for node_id, entry in snapshot.tests.items():
        if hit := entry.blocks & changes.blocks:
            tests[node_id] = frozenset(snapshot.blocks[i][0] for i in hit)
    return Reach(tests)


def every_test_rule(changes: Changes, given: ReachInput) -> Reach:
    """Changed code run at import with no project module being imported reaches every
    test."""
    return Reach(everyone=changes.every_test)


def fixtures_rule(changes: Changes, given: ReachInput) -> Reach:
    """A fixture's changed code reaches every test whose fixture closure holds it
    (pytest's ``item.fixturenames``), not only the one whose context ran it: a session-
    or module-scoped fixture runs once, for the first test that asks."""
    requested: dict[frozenset[str], set[str]] = {}
    for i in changes.blocks:
        path = given.snapshot.blocks[i][0]
        names = given.fixtures.get((path, given.qualnames.get(i, "")))
        if names:
            requested.setdefault(names, set()).add(path)
    tests: dict[str, frozenset[str]] = {}
    for node_id, entry in given.snapshot.tests.items():
        for names, files in requested.items():
            if entry.names & names:
                tests[node_id] = tests.get(node_id, frozenset()) | files
    return Reach(tests)


def pending_rule(changes: Changes, given: ReachInput) -> Reach:
    """A change an earlier call found reaching a test that has not run since still
    reaches it (the map's elements were brought up to date then)."""
    return Reach({node_id: e.pending for node_id, e in given.snapshot.tests.items() if e.pending})


def _through_importers(given: ReachInput, path: str, named: frozenset[str], what: str) -> Reach:
    """The tests that ran code in a file importing ``path`` (directly or through others),
    and the tests of those files, each reached by ``named``; every test when the import
    graph cannot tell who imports it, saying why (``what``: the change, for that line)."""
    importers = given.importers(path)
    if importers.opaque and given.role(path) != "test":  # a computed import loads no test module
        first, more = importers.opaque[0], len(importers.opaque) - 1
        wide = (
            f"{what} changed in {path} and the import graph cannot tell who imports it "
            f"({first}{f' and {more} more' if more else ''}): every test depends on it"
        )
        return Reach(everyone=named, wide=wide)
    reached = importers.reached
    snapshot = given.snapshot
    through = frozenset(i for i, (file, _) in snapshot.blocks.items() if file in reached)
    return Reach(
        {
            node_id: named
            for node_id, entry in snapshot.tests.items()
            if entry.blocks & through or node_path(node_id) in reached
        }
    )


def importing_rule(changes: Changes, given: ReachInput) -> Reach:
    """Changed code run while a module was imported reaches the tests that ran code in a
    file importing that module, and the tests of those files."""
    found = Reach()
    for module in changes.import_sources:
        found = found.union(_through_importers(given, module, changes.importing[module], "code run at import"))
    return found


# -- module-level elements: the queries the element rules make ----------------------


@dataclass(frozen=True)
class ReadersOf:
    """The tests that refer to one of ``names`` (in the code they ran, their fixture
    closure, their own class and function names)."""

    names: frozenset[str]


@dataclass(frozen=True)
class RanClassCode:
    """The tests that ran a function of the class ``owner`` (qualified name) of ``path``."""

    path: str
    owner: str


@dataclass(frozen=True)
class DocReaders:
    """Doctests of ``path``, and the tests that read docstrings (``DOC_READERS``) and
    refer to one of ``names`` or ran code of ``path``."""

    path: str
    names: frozenset[str]


@dataclass(frozen=True)
class TestsUnder:
    """The tests of the file ``prefix``, or of the files below the directory ``prefix``
    (``""``: every test)."""

    __test__ = False  # not a pytest test class, whatever its name

    prefix: str


@dataclass(frozen=True)
class ThroughImporters:
    """The tests that ran code in a file importing ``path`` and the tests of those files
    (``why``: what made the names unable to decide)."""

    path: str
    why: str


Query = ReadersOf | RanClassCode | DocReaders | TestsUnder | ThroughImporters
"""What an element rule asks for (``ELEMENT_RULES``)."""

DOC_READERS = frozenset({"__doc__", "getdoc", "help", "render_doc", "getcomments"})
"""Names through which code reads docstrings (``__doc__``, ``inspect.getdoc``,
``pydoc.help``/``render_doc``)."""
CONFTEST_NAMES = frozenset({"pytest_plugins", "collect_ignore", "collect_ignore_glob"})
"""Names of a ``conftest.py`` that pytest reads (pytest's docs, *conftest.py*): a change
reaches every test."""
TEST_MODULE_NAMES = frozenset({"pytestmark", "__test__", "pytest_plugins"})
"""Names of a test module that pytest reads for all its tests."""


def _scope(path: str) -> str:
    """The directory a ``conftest.py`` applies to (``""``: the root)."""
    return path.rpartition("/")[0]


def _calls_project(element: Element, project: ProjectFiles) -> bool:
    return any(root == "" or project.named(root) for root in element.calls)


ElementRule = Callable[[ElementChange, ReachInput, "ProjectFiles"], tuple[Query, ...]]
"""An element rule: one kind of changed element -> what reaches the tests it can change."""


def _pytest_reads(change: ElementChange, given: ReachInput) -> tuple[Query, ...] | None:
    """What pytest itself reads of a conftest or a test module: hooks, autouse fixtures,
    its own names (``CONFTEST_NAMES``, ``TEST_MODULE_NAMES``); None for anything else."""
    role = given.role(change.path)
    if role == "source":
        return None
    versions = change.versions
    hook = any(e.hook for e in versions) or any(n.startswith("pytest_") for n in change.names)
    if role == "conftest":
        if hook or change.names & CONFTEST_NAMES:
            return (TestsUnder(""),)
        if any(e.autouse for e in versions):
            return (TestsUnder(_scope(change.path)),)
        return None
    if hook or any(e.autouse for e in versions) or change.names & TEST_MODULE_NAMES:
        return (TestsUnder(change.path),)
    return None


def _cannot_decide(change: ElementChange, given: ReachInput, why: str) -> tuple[Query, ...]:
    """A change the names cannot bound: a conftest's reaches the tests below it, any
    other file's the tests of its importers."""
    if given.role(change.path) == "conftest":
        return (TestsUnder(_scope(change.path)),)
    return (ThroughImporters(change.path, why),)


def binding_rule(change: ElementChange, given: ReachInput, project: ProjectFiles) -> tuple[Query, ...]:
    """A module-level name (an assignment, an import, a ``def``'s header) reaches the
    tests that refer to it; when the statement calls project code and the module's
    import ran project functions, what the call did cannot be told: the tests of its
    importers."""
    special = _pytest_reads(change, given)
    if special is not None:
        return special
    # an object a method of which it called at import (app.route, cli.command): reached through it
    mutated = {
        name
        for e in change.versions
        for name, _, module in (m.partition("@") for m in e.mutates)
        if not module or project.named(module)
    }
    queries: tuple[Query, ...] = (ReadersOf(change.names | mutated),)
    calling = [e for e in change.versions if _calls_project(e, project)]
    if calling and given.import_ran_code(change.path):
        why = f"{change.path}:{calling[-1].line} calls project code at import"
        return queries + _cannot_decide(change, given, why)
    # importing a project module no test ever ran runs its module-level code: what that does is unseen
    for element in () if change.derived else change.versions:
        for dotted in element.imports:
            if any(not project.named_path(f) for f in given.resolve(change.path, dotted)):
                why = f"{change.path}:{element.line} imports {dotted}, which no test ran"
                return queries + _cannot_decide(change, given, why)
    return queries


def class_rule(change: ElementChange, given: ReachInput, project: ProjectFiles) -> tuple[Query, ...]:
    """A class's header or a statement of its body reaches the tests that ran the class's
    code or refer to the class or the attribute it binds."""
    owner = change.versions[-1].owner
    return binding_rule(change, given, project) + (RanClassCode(change.path, owner),)


def export_rule(change: ElementChange, given: ReachInput, project: ProjectFiles) -> tuple[Query, ...]:
    """A name entering or leaving ``__all__`` changes what a star import forwards: the
    tests that refer to that name."""
    return (ReadersOf(change.names),)


def doc_rule(change: ElementChange, given: ReachInput, project: ProjectFiles) -> tuple[Query, ...]:
    """A docstring reaches the doctests of its file and the tests that read docstrings
    and refer to its owner or ran code of its file."""
    return (DocReaders(change.path, change.names - {"__doc__"}),)


def effect_rule(change: ElementChange, given: ReachInput, project: ProjectFiles) -> tuple[Query, ...]:
    """A statement run for its effects, a star import, an ``__all__`` built at run time:
    what it changes cannot be told from names."""
    why = change.versions[-1].why
    special = _pytest_reads(change, given)
    return (special or ()) + _cannot_decide(change, given, why)


ELEMENT_RULES: dict[ElementKind, ElementRule] = {
    "binding": binding_rule,
    "function": binding_rule,
    "class": class_rule,
    "export": export_rule,
    "doc": doc_rule,
    "star": effect_rule,
    "effect": effect_rule,
}
"""One rule per element kind (``domain.elements``' key producers)."""
BINDING_KINDS = frozenset({"binding", "function", "class", "export"})
"""Kinds whose names a reader of them refers to (``propagate``)."""


def propagate(changes: Changes, given: ReachInput) -> tuple[tuple[ElementChange, ...], bool]:
    """The changed elements and those whose value follows from a changed name: a
    module-level element (of any file the map keeps) that reads a changed name is
    changed in turn (one that reads names by a computed name: when its own file
    changed), and so on; so is every element that calls project code of a
    module whose import ran project functions reading a changed name. Returns them,
    and whether code run at import for every test reads a changed name (every test then
    depends on the change)."""
    out = list(changes.elements)
    direct = frozenset(c.path for c in out)
    seen = {(c.path, c.key) for c in out}
    changed = set().union(*(c.names for c in out if c.kind in BINDING_KINDS)) if out else set()
    readers: dict[str, list[tuple[str, Element]]] = {}
    computed: list[tuple[str, Element]] = []
    for path, elements in given.elements.items():
        for element in elements:
            if COMPUTED in element.reads:
                computed.append((path, element))
            for name in element.reads:
                readers.setdefault(name, []).append((path, element))
    ids = {block: i for i, block in given.snapshot.blocks.items()}
    import_reads = {
        key: frozenset().union(*(given.facts.get(ids.get(b, -1), _NO_FACTS).names for b in blocks))
        for key, blocks in given.snapshot.import_code.items()
    }
    everyone = False
    todo = sorted(changed)

    def derive(path: str, element: Element) -> None:
        if (path, element.key) in seen:
            return
        seen.add((path, element.key))
        change = ElementChange(path, element.key, element, element, derived=True, causes=direct)
        out.append(change)
        if element.kind in BINDING_KINDS:
            for name in element.names - changed:
                changed.add(name)
                todo.append(name)

    while True:
        while todo:
            name = todo.pop()
            for path, element in readers.get(name, ()):
                derive(path, element)
            # code reading its module's names by a computed name (globals(), sys.modules[__name__])
            # reads what changed in its own file
            touched = {c.path for c in out}
            for path, element in computed:
                if path in touched:
                    derive(path, element)
        for key, names in import_reads.items():
            if not names & changed:
                continue
            if key == EVERY_TEST:
                everyone = True
            for element in given.elements.get(key.module, ()) if key.scope == "importing" else ():
                if element.calls:
                    derive(key.module, element)
        if not todo:
            return tuple(out), everyone


_NO_FACTS = BlockFacts(frozenset())


def elements_rule(changes: Changes, given: ReachInput) -> Reach:
    """Changed module-level elements (``domain.elements``), with those their changed
    names reach (``propagate``), through one rule per kind (``ELEMENT_RULES``); code
    run at import for every test that reads a changed name reaches every test."""
    if not changes.elements:
        return Reach()
    found, everyone = propagate(changes, given)
    project = ProjectFiles({path for path, _ in given.snapshot.blocks.values()} | set(given.elements))
    asked: dict[Query, set[str]] = {}
    for change in found:
        for query in ELEMENT_RULES[change.kind](change, given, project):
            asked.setdefault(query, set()).update(change.files)
    direct = frozenset(c.path for c in changes.elements)
    reached = _answer(asked, given)
    if everyone:
        reached = reached.union(Reach(everyone=direct))
    return reached.union(_blind_readers(found, given))


def _blind_readers(found: Iterable[ElementChange], given: ReachInput) -> Reach:
    """The tests that ran code reading a module's names by a computed name (``getattr``
    with a computed name, ``globals()``...) may read any changed name: each depends on
    the changes of the files it reaches through imports (``ThroughImporters``)."""
    blind = {i: f.blind for i, f in given.facts.items() if f.blind}
    if not blind:
        return Reach()
    tests = {n for n, e in given.snapshot.tests.items() if e.blocks & blind.keys()}
    if not tests:
        return Reach()
    first = sorted(blind.values())[0]
    paths = {c.path: c.files for c in found if c.kind in BINDING_KINDS}
    reached = _answer({ThroughImporters(path, first): set(files) for path, files in paths.items()}, given)
    kept = {node_id: files for node_id, files in reached.tests.items() if node_id in tests}
    everyone = reached.everyone
    if everyone:  # the graph cannot bound it: the blind tests, not every test
        kept = {n: kept.get(n, frozenset()) | everyone for n in tests}
    line = (
        f"{first} reads names computed at run time: the tests that ran it depend on module-level "
        "changes through imports"
    )
    return Reach(kept, blind=line if kept else None)


def _answer(asked: Mapping[Query, set[str]], given: ReachInput) -> Reach:
    """The tests each query reaches, with the changed files that asked it."""
    snapshot = given.snapshot
    tests: dict[str, set[str]] = {}
    found = Reach()

    def add(node_id: str, files: Iterable[str]) -> None:
        tests.setdefault(node_id, set()).update(files)

    names = {q: files for q, files in asked.items() if isinstance(q, ReadersOf)}
    for node_id, hit in _readers({q: q.names for q in names}, given).items():
        add(node_id, set().union(*(names[q] for q in hit)))
    docs = {q: files for q, files in asked.items() if isinstance(q, DocReaders)}
    if docs:
        readers = _readers({d: DOC_READERS for d in docs}, given)
        owners = _readers({d: d.names for d in docs}, given)
        for node_id, entry in snapshot.tests.items():
            path, function = node_function(node_id)
            ran = {snapshot.blocks[i][0] for i in entry.blocks}
            for d, files in docs.items():
                doctest = path == d.path and function is None
                if doctest or (d in readers.get(node_id, ()) and (d in owners.get(node_id, ()) or d.path in ran)):
                    add(node_id, files)
    classes = {q: files for q, files in asked.items() if isinstance(q, RanClassCode)}
    if classes:
        by_block: dict[int, set[RanClassCode]] = {}
        for i, (path, _) in snapshot.blocks.items():
            name = given.facts.get(i, _NO_FACTS).name
            for c in classes:
                if path == c.path and name.startswith(c.owner + "."):
                    by_block.setdefault(i, set()).add(c)
        for node_id, entry in snapshot.tests.items():
            for i in entry.blocks & by_block.keys():
                for c in by_block[i]:
                    add(node_id, classes[c])
    for query, files in asked.items():
        if isinstance(query, TestsUnder):
            for node_id in snapshot.tests:
                path = node_path(node_id)
                if not query.prefix or path == query.prefix or path.startswith(query.prefix + "/"):
                    add(node_id, files)
        elif isinstance(query, ThroughImporters):
            found = found.union(_through_importers(given, query.path, frozenset(files), "module-level code"))
    return found.union(Reach({node_id: frozenset(files) for node_id, files in tests.items()}))


def _readers(queries: Mapping[Any, frozenset[str]], given: ReachInput) -> dict[str, set[Any]]:
    """Per test, the queries (each a set of names) it refers to a name of: through the
    names of the blocks it ran (``facts``) or its own (``TestEntry.names``). One pass
    over the tests for all queries."""
    by_name: dict[str, set[Any]] = {}
    for q, names in queries.items():
        for name in names:
            by_name.setdefault(name, set()).add(q)
    if not by_name:
        return {}
    wanted = by_name.keys()
    by_block: dict[int, set[Any]] = {}
    for i, facts in given.facts.items():
        for name in facts.names & wanted:
            by_block.setdefault(i, set()).update(by_name[name])
    out: dict[str, set[Any]] = {}
    for node_id, entry in given.snapshot.tests.items():
        hit: set[Any] = set()
        for i in entry.blocks & by_block.keys():
            hit |= by_block[i]
        for name in entry.names & wanted:
            hit |= by_name[name]
        if hit:
            out[node_id] = hit
    return out


RULES: tuple[Rule, ...] = (blocks_rule, fixtures_rule, every_test_rule, importing_rule, pending_rule, elements_rule)
"""The reach rules, each for one kind of change (``Changes``' fields)."""


def reach(changes: Changes, given: ReachInput, rules: Iterable[Rule] = RULES) -> Reach:
    """The union of what each rule reaches."""
    found = Reach()
    for rule in rules:
        found = found.union(rule(changes, given))
    return found
