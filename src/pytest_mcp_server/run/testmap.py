"""The per-test map of an ``affected`` call: for each test, the blocks it ran
(``domain.blocks``), its last outcome and the configuration fingerprint of that run,
in SQLite (the standard library's ``sqlite3``, WAL journal). A test's blocks are one
value, the ids of its ``blocks`` rows packed (``_pack``), not a row per test and block:
a test of a parser runs hundreds of functions, and rewriting 500 tests' rows one pair at
a time took seconds. It also keeps, per file the tests ran, its block fingerprints with
the file's ``stat`` when they were read (``files``), so that an unchanged file is not
parsed again on the next call, and the code run at import that no test's context holds,
under typed keys (``import_code``: ``domain.reach.ImportKey``, which says who depends on
it).

One file per project root and interpreter (``map_path``: ``<artifacts>/maps/<root
name>-<hash of root and interpreter>.sqlite``), never in the project. Every change is
one transaction (``BEGIN IMMEDIATE``: two runs on one root take turns, a busy one
waits up to ``MAP_BUSY_TIMEOUT_S``), so a killed run leaves the map as it was before.

A file that is not such a map (not SQLite, another program's database, a schema
version this server does not know, a broken page) is never trusted: ``open_map``
removes it and starts an empty map, and says so in one line (the ``notice``).
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from array import array
from collections.abc import Collection, Iterable, Iterator, Mapping
from pathlib import Path

import orjson

from pytest_mcp_server.domain.elements import Element
from pytest_mcp_server.domain.policy import MAP_BUSY_TIMEOUT_S, MAP_READ_TIMEOUT_S
from pytest_mcp_server.domain.reach import EVERY_TEST, Block, BlockFacts, ImportKey, MapSnapshot, TestEntry

SCHEMA_VERSION = 7
"""The map's schema version, in its ``schema_version`` table; a map of another version is rebuilt."""
FORMAT_NAME = "pytest-mcp-server test map"
"""The ``format`` row of the ``meta`` table: what makes a SQLite file one of these maps."""
MAPS_DIR = "maps"
"""The artifacts directory's subdirectory holding the maps."""
_SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE tests (
    id INTEGER PRIMARY KEY,
    node_id TEXT NOT NULL UNIQUE,
    outcome TEXT NOT NULL,
    config TEXT NOT NULL,
    blocks BLOB NOT NULL,
    names TEXT NOT NULL DEFAULT '',
    pending TEXT NOT NULL DEFAULT ''
);
CREATE TABLE blocks (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    names TEXT NOT NULL DEFAULT '',
    blind TEXT,
    qualname TEXT NOT NULL DEFAULT '',
    UNIQUE (path, fingerprint)
);
CREATE TABLE element_files (
    path TEXT PRIMARY KEY,
    stat TEXT NOT NULL,
    elements BLOB NOT NULL
);
CREATE TABLE files (
    path TEXT PRIMARY KEY,
    stat TEXT NOT NULL,
    fingerprints TEXT NOT NULL
);
CREATE TABLE import_code (
    scope TEXT NOT NULL,
    module TEXT NOT NULL,
    blocks BLOB NOT NULL,
    PRIMARY KEY (scope, module)
);
"""


def map_path(artifacts_base: Path, root: Path, python: str) -> Path:
    """Where the map of ``root`` run by the interpreter ``python`` lives."""
    key = hashlib.sha256(f"{root}\0{python}".encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return artifacts_base / MAPS_DIR / f"{root.name or 'root'}-{key}.sqlite"


class MapUntrusted(Exception):
    """The file is not a map of this server's schema (the message says what it is)."""


class TestMap:
    """An open map (``open_map``, or ``read_only_map`` for reading only); close it with
    ``close`` (or use it as a context manager). Not shared between threads."""

    __test__ = False  # not a pytest test class, whatever its name

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self.connection = connection
        self.path = path

    def __enter__(self) -> TestMap:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection."""
        self.connection.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self.connection.execute("BEGIN IMMEDIATE")
        try:
            yield self.connection
        except BaseException:
            self.connection.execute("ROLLBACK")
            raise
        self.connection.execute("COMMIT")

    @contextlib.contextmanager
    def reading(self) -> Iterator[TestMap]:
        """One read transaction: what is read inside it is one version of the map."""
        self.connection.execute("BEGIN")
        try:
            yield self
        finally:
            self.connection.execute("ROLLBACK")

    def entries(self, node_ids: Collection[str]) -> dict[str, array[int]]:
        """The ids of the blocks each test of ``node_ids`` ran (ascending), for those the
        map holds."""
        wanted = set(node_ids)
        rows = self.connection.execute("SELECT node_id, blocks FROM tests")
        return {node_id: _unpack(packed) for node_id, packed in rows if node_id in wanted}

    def blocks(self) -> dict[int, Block]:
        """Every block the tests ran: id -> ``(path, fingerprint)``."""
        return {row[0]: (row[1], row[2]) for row in self.connection.execute("SELECT id, path, fingerprint FROM blocks")}

    def snapshot(self) -> MapSnapshot:
        """What the map holds, for the selection's stages (``domain.reach``): its blocks,
        its tests with the ids of the blocks each ran, and the code run at import by key."""
        blocks = self.blocks()
        tests = {
            node_id: TestEntry(
                outcome,
                config,
                frozenset(_unpack(packed)),
                frozenset(names.split()),
                frozenset(orjson.loads(pending)) if pending else frozenset(),
            )
            for node_id, outcome, config, packed, names, pending in self.connection.execute(
                "SELECT node_id, outcome, config, blocks, names, pending FROM tests"
            )
        }
        return MapSnapshot(blocks, tests, self.import_code(blocks))

    def block_facts(self) -> dict[int, BlockFacts]:
        """Each block's ``BlockFacts`` (the names its code refers to; how it reads names
        computed at run time): read only when a module-level change needs them."""
        rows = self.connection.execute("SELECT id, names, blind, qualname FROM blocks")
        return {i: BlockFacts(frozenset(names.split()), blind, qualname) for i, names, blind, qualname in rows}

    def qualnames(self, block_ids: Iterable[int]) -> dict[int, str]:
        """The qualified name of each block of ``block_ids`` (``domain.blocks.Block.name``)."""
        out: dict[int, str] = {}
        for i in block_ids:
            row = self.connection.execute("SELECT qualname FROM blocks WHERE id = ?", (i,)).fetchone()
            if row is not None:
                out[i] = str(row[0])
        return out

    def element_stats(self) -> dict[str, str]:
        """Each file whose module-level elements the map keeps -> its stat key when they
        were read."""
        return {path: stat for path, stat in self.connection.execute("SELECT path, stat FROM element_files")}

    def elements(self, paths: Iterable[str] | None = None) -> dict[str, tuple[Element, ...]]:
        """The module-level elements the map keeps of ``paths`` (all files: None)."""
        if paths is None:
            rows = self.connection.execute("SELECT path, elements FROM element_files").fetchall()
        else:
            rows = [
                row
                for path in paths
                for row in self.connection.execute("SELECT path, elements FROM element_files WHERE path = ?", (path,))
            ]
        return {path: tuple(Element.from_json(e) for e in orjson.loads(data)) for path, data in rows}

    def node_ids(self) -> set[str]:
        """The node ids of the tests in the map."""
        return {row[0] for row in self.connection.execute("SELECT node_id FROM tests")}

    def import_code(self, blocks: Mapping[int, Block] | None = None) -> dict[ImportKey, frozenset[Block]]:
        """The code run at import that no test's context holds, by key, as the runs so far
        recorded it (``refresh``); ``blocks``: ``blocks()`` when the caller has it."""
        known = self.blocks() if blocks is None else blocks
        rows = self.connection.execute("SELECT scope, module, blocks FROM import_code")
        return {
            ImportKey(scope, module): frozenset(known[i] for i in _unpack(packed)) for scope, module, packed in rows
        }

    def files(self) -> dict[str, tuple[str, frozenset[str]]]:
        """Each file's block fingerprints as last read: path -> (its stat key then, the
        fingerprints)."""
        rows = self.connection.execute("SELECT path, stat, fingerprints FROM files")
        return {path: (stat, frozenset(fingerprints.split())) for path, stat, fingerprints in rows}

    def meta(self, key: str) -> str | None:
        """A ``meta`` value, or None."""
        row = self.connection.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def refresh(
        self,
        ran: Mapping[str, tuple[str, Iterable[Block]]],
        config: str,
        *,
        gone: Iterable[str] = (),
        meta: Mapping[str, str | None] | None = None,
        files: Mapping[str, tuple[str, Iterable[str]]] | None = None,
        import_code: Mapping[ImportKey, Mapping[str, Iterable[Block]]] | None = None,
        dropped: Iterable[ImportKey] = (),
        vanished: Iterable[str] = (),
        whole_collection: bool = True,
        names: Mapping[str, Iterable[str]] | None = None,
        facts: Mapping[Block, BlockFacts] | None = None,
        elements: Mapping[str, tuple[str, Iterable[Element]] | None] | None = None,
        pending: Mapping[str, Iterable[str]] | None = None,
    ) -> None:
        """In one transaction: each test of ``ran`` (node id -> (outcome, its blocks))
        gets exactly that entry, with ``config``; the tests of ``gone`` (no longer in the
        suite) leave the map; ``meta`` rows are set (None: removed); ``files`` (path ->
        (stat key, block fingerprints) as read this call) are kept; ``import_code`` (key
        -> per file, the blocks this run recorded for that key) replaces each key's
        blocks of those files, the other files' stay (a run that imported less does not
        forget them); an ``importing`` key's blocks are replaced whole (what this run's
        import of the module ran); ``EVERY_TEST`` only adds when the run collected only
        some files (``whole_collection`` False: the collection hooks it did not run for
        the other files ran what they ran before); the keys of ``dropped`` are removed,
        and the blocks of the files of ``vanished`` (no longer in the project: nothing can
        run them again, and kept they would read as changed at every call) leave every key;
        blocks no test or key refers to any more are removed, and the files without
        blocks. ``names``: the names each test of ``ran`` refers to beside its blocks';
        ``facts``: the facts of the blocks written (a block's never change: its
        fingerprint is its code); ``elements``: per file, the stat key and module-level
        elements to keep from now on (None: forget the file); ``pending``: the tests that
        did not run whose pending files are set (a test of ``ran`` has none)."""
        gone = list(gone)
        leaving = set(gone)  # a test both run and gone leaves the map
        entries = {n: (outcome, set(blocks)) for n, (outcome, blocks) in ran.items() if n not in leaving}
        with self._transaction() as con:
            known_blocks = self.blocks()
            old_code = self.import_code(known_blocks)
            code = dict(old_code)
            for key, given in (import_code or {}).items():
                if not given:
                    continue
                if key.scope == "importing":  # what this run's import of the module ran, whole
                    code[key] = frozenset().union(*given.values())
                    continue
                replace = whole_collection or key != EVERY_TEST
                kept = {block for block in code.get(key, ()) if not replace or block[0] not in given}
                code[key] = frozenset(kept.union(*given.values()))
            for key in dropped:
                code.pop(key, None)
            gone_files = set(vanished)
            if gone_files:
                code = {key: frozenset(b for b in blocks if b[0] not in gone_files) for key, blocks in code.items()}
            block_ids = {block: block_id for block_id, block in known_blocks.items()}
            all_blocks = {block for _, blocks in entries.values() for block in blocks}.union(*code.values())
            new_blocks = [block for block in all_blocks if block not in block_ids]
            if new_blocks:
                known = facts or {}
                empty = BlockFacts(frozenset())
                last = max(known_blocks, default=0)
                con.executemany(
                    "INSERT INTO blocks (path, fingerprint, names, blind, qualname) VALUES (?, ?, ?, ?, ?)",
                    (
                        (block[0], block[1], " ".join(sorted(fact.names)), fact.blind, fact.name)
                        for block in new_blocks
                        for fact in [known.get(block, empty)]
                    ),
                )
                # a new row's id is past every id there was (SQLite's rowid without AUTOINCREMENT)
                rows = con.execute("SELECT id, path, fingerprint FROM blocks WHERE id > ?", (last,))
                block_ids.update({(path, fingerprint): block_id for block_id, path, fingerprint in rows})
            # the blocks that lost a reference: the rewritten and gone tests' old ones, the
            # code run at import no longer kept; only those may now be referenced by nothing
            lost: set[int] = set()
            for node_id in [*entries, *gone]:
                row = con.execute("SELECT blocks FROM tests WHERE node_id = ?", (node_id,)).fetchone()
                if row is not None:
                    lost.update(_unpack(row[0]))
            for key, blocks in old_code.items():
                if code.get(key) != blocks:
                    lost.update(block_ids[block] for block in blocks)
            test_names = names or {}
            packed_entries = {
                node_id: [block_ids[block] for block in blocks] for node_id, (_, blocks) in entries.items()
            }
            con.executemany(
                "INSERT INTO tests (node_id, outcome, config, blocks, names, pending) VALUES (?, ?, ?, ?, ?, '') "
                "ON CONFLICT (node_id) DO UPDATE SET outcome = excluded.outcome, config = excluded.config, "
                "blocks = excluded.blocks, names = excluded.names, pending = ''",
                (
                    (
                        node_id,
                        outcome,
                        config,
                        _pack(packed_entries[node_id]),
                        " ".join(sorted(set(test_names.get(node_id, ())))),
                    )
                    for node_id, (outcome, _) in entries.items()
                ),
            )
            con.executemany(
                "UPDATE tests SET pending = ? WHERE node_id = ?",
                (
                    (orjson.dumps(sorted(set(files))).decode() if files else "", node_id)
                    for node_id, files in (pending or {}).items()
                    if node_id not in entries
                ),
            )
            _write_elements(con, elements or {})
            con.executemany("DELETE FROM tests WHERE node_id = ?", ((node_id,) for node_id in gone))
            con.execute("DELETE FROM import_code")
            con.executemany(
                "INSERT INTO import_code (scope, module, blocks) VALUES (?, ?, ?)",
                (
                    (key.scope, key.module, _pack(block_ids[block] for block in blocks))
                    for key, blocks in code.items()
                    if blocks
                ),
            )
            for ids in packed_entries.values():
                lost.difference_update(ids)
            for blocks in code.values():
                lost.difference_update(block_ids[block] for block in blocks)
            if lost:  # whether another test still refers to them: every entry read
                for (packed,) in con.execute("SELECT blocks FROM tests"):
                    lost.difference_update(_unpack(packed))
                    if not lost:
                        break
            con.executemany("DELETE FROM blocks WHERE id = ?", ((i,) for i in lost))
            con.executemany(
                "INSERT INTO files (path, stat, fingerprints) VALUES (?, ?, ?) "
                "ON CONFLICT (path) DO UPDATE SET stat = excluded.stat, fingerprints = excluded.fingerprints",
                ((path, stat, " ".join(sorted(fps))) for path, (stat, fps) in (files or {}).items()),
            )
            con.execute("DELETE FROM files WHERE path NOT IN (SELECT path FROM blocks)")
            _set_meta(con, meta or {})

    def keep(
        self,
        files: Mapping[str, tuple[str, Iterable[str]]],
        meta: Mapping[str, str | None],
        elements: Mapping[str, tuple[str, Iterable[Element]] | None] | None = None,
    ) -> None:
        """In one transaction: the files of ``files`` (path -> (stat key, block
        fingerprints) as read) that the map has blocks of get those as their last read,
        the ``meta`` rows are set, and the ``elements`` kept as ``refresh`` keeps them;
        no test's entry changes."""
        with self._transaction() as con:
            _write_elements(con, elements or {})
            con.executemany(
                "INSERT INTO files (path, stat, fingerprints) SELECT ?, ?, ? "
                "WHERE EXISTS (SELECT 1 FROM blocks WHERE blocks.path = ?) "
                "ON CONFLICT (path) DO UPDATE SET stat = excluded.stat, fingerprints = excluded.fingerprints",
                ((path, stat, " ".join(sorted(fps)), path) for path, (stat, fps) in files.items()),
            )
            _set_meta(con, meta)


def _write_elements(con: sqlite3.Connection, elements: Mapping[str, tuple[str, Iterable[Element]] | None]) -> None:
    """Keep each file's stat key and module-level elements (None: forget the file),
    inside the caller's transaction."""
    for path, version in elements.items():
        if version is None:
            con.execute("DELETE FROM element_files WHERE path = ?", (path,))
        else:
            data = orjson.dumps([e.to_json() for e in version[1]])
            con.execute(
                "INSERT INTO element_files (path, stat, elements) VALUES (?, ?, ?) "
                "ON CONFLICT (path) DO UPDATE SET stat = excluded.stat, elements = excluded.elements",
                (path, version[0], data),
            )


def _set_meta(con: sqlite3.Connection, meta: Mapping[str, str | None]) -> None:
    """Set the ``meta`` rows of ``meta`` (key -> value; None removes the row), inside the
    caller's transaction."""
    con.executemany(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        ((key, value) for key, value in meta.items() if value is not None),
    )
    con.executemany("DELETE FROM meta WHERE key = ?", ((key,) for key, value in meta.items() if value is None))


def _pack(block_ids: Iterable[int]) -> bytes:
    """Block ids as the ``tests.blocks`` value: sorted, 4-byte unsigned integers in this
    machine's byte order (the map never leaves the machine that wrote it)."""
    return array("I", sorted(block_ids)).tobytes()


def _unpack(packed: bytes) -> array[int]:
    """The block ids ``_pack`` packed."""
    ids = array("I")
    ids.frombytes(packed)
    return ids


def _connect(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(path, timeout=MAP_BUSY_TIMEOUT_S, isolation_level=None)  # transactions are explicit
    try:
        con.execute("PRAGMA journal_mode = WAL")
        con.execute("PRAGMA synchronous = NORMAL")
    except sqlite3.DatabaseError:
        con.close()
        raise
    return con


def _check(con: sqlite3.Connection) -> None:
    """Raise ``MapUntrusted`` unless ``con`` is a map of ``SCHEMA_VERSION``."""
    tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not {"schema_version", "meta", "tests", "blocks", "files", "import_code", "element_files"} <= tables:
        raise MapUntrusted("another program's SQLite database")
    fmt = con.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    if fmt is None or fmt[0] != FORMAT_NAME:
        raise MapUntrusted("another program's SQLite database")
    versions = [row[0] for row in con.execute("SELECT version FROM schema_version")]
    if versions != [SCHEMA_VERSION]:
        raise MapUntrusted(
            f"schema version {versions[0] if versions else 'missing'}, this server reads {SCHEMA_VERSION}"
        )
    problem = con.execute("PRAGMA quick_check").fetchone()
    if problem is None or problem[0] != "ok":
        raise MapUntrusted(f"damaged ({problem[0] if problem else 'no answer to quick_check'})")


def _create(con: sqlite3.Connection) -> None:
    """Create the schema in the empty database of ``con`` (unless another run did first)."""
    con.execute("BEGIN IMMEDIATE")
    if con.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
        con.execute("COMMIT")  # another run created it meanwhile: ``_check`` reads it
        return
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            con.execute(statement)
    con.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
    con.execute("INSERT INTO meta (key, value) VALUES ('format', ?)", (FORMAT_NAME,))
    con.execute("COMMIT")


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def open_map(path: Path) -> tuple[TestMap, str | None]:
    """Open the map at ``path`` (its directory is created), creating it when absent.

    Returns the map and a one-line notice when the file was not a map this server
    trusts (``_check``) and was rebuilt empty, else None. Raises ``OSError`` or
    ``sqlite3.Error`` only when a fresh map cannot be created either."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        con = _connect(path)
        try:
            _create(con)  # a new (empty) file gets the schema; an existing one is left as it is
            _check(con)
            return TestMap(con, path), None
        except BaseException:
            con.close()
            raise
    except MapUntrusted as exc:
        why = str(exc)
    except sqlite3.DatabaseError as exc:
        why = f"not readable as SQLite ({exc})"
    _remove(path)
    con = _connect(path)
    _create(con)
    return TestMap(con, path), f"the test map {path} was {why}; rebuilt empty (every test runs as no_map)"


def read_only_map(path: Path) -> TestMap | None:
    """The map at ``path`` opened for reading only (SQLite's ``mode=ro``: nothing in it
    can change, and nothing is created or removed), for a plain call
    (``app.map_suspects``); None, quietly, when there is no file there, or it is not a
    map of ``SCHEMA_VERSION``, or it cannot be read. A reader of a WAL database neither
    waits for a call writing it nor makes that call wait; SQLite's rare exclusive moments
    (recovery after a crash) are waited for up to ``MAP_READ_TIMEOUT_S``. Read inside
    ``TestMap.reading``."""
    if not path.is_file():
        return None
    try:
        uri = f"{path.absolute().as_uri()}?mode=ro"
        con = sqlite3.connect(uri, uri=True, timeout=MAP_READ_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        fmt = con.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
        versions = [row[0] for row in con.execute("SELECT version FROM schema_version")]
    except sqlite3.Error:
        con.close()
        return None
    if fmt is None or fmt[0] != FORMAT_NAME or versions != [SCHEMA_VERSION]:
        con.close()
        return None
    return TestMap(con, path)
