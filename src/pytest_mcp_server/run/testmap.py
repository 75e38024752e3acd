"""The per-test map of an ``affected`` call: for each test, the blocks it ran
(``domain.blocks``), its last outcome and the configuration fingerprint of that run,
in SQLite (the standard library's ``sqlite3``, WAL journal). A test's blocks are one
value, the ids of its ``blocks`` rows packed (``_pack``), not a row per test and block:
a test of a parser runs hundreds of functions, and rewriting 500 tests' rows one pair at
a time took seconds. It also keeps, per file the tests ran, its block fingerprints with
the file's ``stat`` when they were read (``files``), so that an unchanged file is not
parsed again on the next call.

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
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from pytest_mcp_server.domain.policy import MAP_BUSY_TIMEOUT_S
from pytest_mcp_server.domain.selection import RecordedTest

SCHEMA_VERSION = 5
"""The map's schema version, in its ``schema_version`` table; a map of another version is rebuilt."""
FORMAT_NAME = "pytest-mcp-server test map"
"""The ``format`` row of the ``meta`` table: what makes a SQLite file one of these maps."""
MAPS_DIR = "maps"
"""The artifacts directory's subdirectory holding the maps."""
IMPORT_ENTRY = "<import>"
"""The reserved ``tests`` row holding the function blocks run at import, on which every
test depends (kept once, not in each test's entry; no pytest node id has this form)."""
IMPORTED_MODULES_ENTRY = "<imported modules>"
"""The reserved ``tests`` row holding the module-level blocks of the files run at import:
a change there reaches the tests that ran code in a file importing it
(``domain.imports``), not every test."""
IMPORTING_ENTRY = "<import> "
"""The prefix of the reserved ``tests`` rows holding, per project module (``IMPORTING_ENTRY``
+ its relative path), the function blocks run while it was being imported: a change
there reaches the tests of the files importing that module (``domain.imports``)."""


def is_reserved(node_id: str) -> bool:
    """True for the map's own entries (``IMPORT_ENTRY``, ``IMPORTED_MODULES_ENTRY``,
    ``IMPORTING_ENTRY`` rows): no pytest node id starts with ``<``."""
    return node_id.startswith("<")


_SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE tests (
    id INTEGER PRIMARY KEY,
    node_id TEXT NOT NULL UNIQUE,
    outcome TEXT NOT NULL,
    config TEXT NOT NULL,
    blocks BLOB NOT NULL
);
CREATE TABLE blocks (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    UNIQUE (path, fingerprint)
);
CREATE TABLE files (
    path TEXT PRIMARY KEY,
    stat TEXT NOT NULL,
    fingerprints TEXT NOT NULL
);
"""


def map_path(artifacts_base: Path, root: Path, python: str) -> Path:
    """Where the map of ``root`` run by the interpreter ``python`` lives."""
    key = hashlib.sha256(f"{root}\0{python}".encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return artifacts_base / MAPS_DIR / f"{root.name or 'root'}-{key}.sqlite"


class MapUntrusted(Exception):
    """The file is not a map of this server's schema (the message says what it is)."""


class TestMap:
    """An open map (``open_map``); close it with ``close`` (or use it as a context
    manager). Not shared between threads."""

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

    def blocks(self) -> dict[int, tuple[str, str]]:
        """Every block the tests ran: id -> ``(path, fingerprint)``."""
        return {row[0]: (row[1], row[2]) for row in self.connection.execute("SELECT id, path, fingerprint FROM blocks")}

    def tests(self, changed: Iterable[int] = ()) -> dict[str, RecordedTest]:
        """Every test's entry: node id -> ``RecordedTest``, its ``changed`` files those of
        the blocks of ``changed`` (block ids, ``domain.selection.changed_blocks``) it ran."""
        wanted = set(changed)
        paths = {i: path for i, (path, _) in self.blocks().items() if i in wanted} if wanted else {}
        out: dict[str, RecordedTest] = {}
        for node_id, outcome, config, packed in self.connection.execute(
            "SELECT node_id, outcome, config, blocks FROM tests"
        ):
            if is_reserved(node_id):
                continue
            hit = wanted.intersection(_unpack(packed)) if wanted else ()
            out[node_id] = RecordedTest(outcome=outcome, config=config, changed=frozenset(paths[i] for i in hit))
        return out

    def entries(self) -> dict[str, tuple[str, frozenset[tuple[str, str]]]]:
        """Every entry as stored, the import entry included: node id -> (outcome, its
        blocks as ``(path, fingerprint)``)."""
        blocks = self.blocks()
        rows = self.connection.execute("SELECT node_id, outcome, blocks FROM tests")
        return {node_id: (outcome, frozenset(blocks[i] for i in _unpack(packed))) for node_id, outcome, packed in rows}

    def node_ids(self) -> set[str]:
        """The node ids of the tests in the map."""
        return {row[0] for row in self.connection.execute("SELECT node_id FROM tests") if not is_reserved(row[0])}

    def importing(self) -> dict[str, frozenset[tuple[str, str]]]:
        """Per project module (relative path), the function blocks run while it was being
        imported (``IMPORTING_ENTRY`` rows), as ``(path, fingerprint)``."""
        blocks = self.blocks()
        rows = self.connection.execute(
            "SELECT node_id, blocks FROM tests WHERE substr(node_id, 1, ?) = ?",
            (len(IMPORTING_ENTRY), IMPORTING_ENTRY),
        )
        return {
            node_id[len(IMPORTING_ENTRY) :]: frozenset(blocks[i] for i in _unpack(packed)) for node_id, packed in rows
        }

    def at_import(self, entry: str = IMPORT_ENTRY) -> frozenset[tuple[str, str]]:
        """The function blocks run at import (``entry`` ``IMPORTED_MODULES_ENTRY``: the
        module-level blocks of the files run at import), ``(path, fingerprint)``, as the
        runs so far recorded them (``refresh``)."""
        row = self.connection.execute("SELECT blocks FROM tests WHERE node_id = ?", (entry,)).fetchone()
        if row is None:
            return frozenset()
        blocks = self.blocks()
        return frozenset(blocks[i] for i in _unpack(row[0]))

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
        ran: Mapping[str, tuple[str, Iterable[tuple[str, str]]]],
        config: str,
        gone: Iterable[str] = (),
        meta: Mapping[str, str | None] | None = None,
        files: Mapping[str, tuple[str, Iterable[str]]] | None = None,
        at_import: Mapping[str, Iterable[tuple[str, str]]] | None = None,
        imported_modules: Mapping[str, Iterable[tuple[str, str]]] | None = None,
        importing: Mapping[str, Iterable[tuple[str, str]]] | None = None,
        whole_collection: bool = True,
    ) -> None:
        """In one transaction: each test of ``ran`` (node id -> (outcome, its blocks as
        ``(path, fingerprint)``)) gets exactly that entry, with ``config``; the tests
        of ``gone`` (no longer in the suite) leave the map; ``meta`` rows are set (None:
        removed);
        ``files`` (path -> (stat key, block fingerprints) as read this call) are kept;
        ``at_import`` (path -> the function blocks run at import in this run) replaces
        those files' blocks of the import entry, the other files' stay (a run that
        imported less does not forget them); blocks no test refers to any more are
        removed, and the files without blocks. ``imported_modules`` (path -> its module
        block, for the files run at import) is kept in the same way. ``importing``
        (module -> the function blocks run while it was being imported in this run)
        replaces those modules' ``IMPORTING_ENTRY`` rows; to drop a module's row, name
        the row in ``gone``. A run that collected only some files (``whole_collection``
        False) adds to the import entry and replaces nothing there: the collection hooks
        it did not run for the other files ran what they ran before."""
        entries = {node_id: (outcome, set(blocks)) for node_id, (outcome, blocks) in ran.items()}
        for module, blocks in (importing or {}).items():
            entries[IMPORTING_ENTRY + module] = ("passed", set(blocks))
        with self._transaction() as con:
            for entry, given in ((IMPORT_ENTRY, at_import), (IMPORTED_MODULES_ENTRY, imported_modules)):
                if given:
                    replace = whole_collection or entry != IMPORT_ENTRY
                    kept = {block for block in self.at_import(entry) if not replace or block[0] not in given}
                    entries[entry] = ("passed", kept.union(*given.values()))
            all_blocks = {block for _, blocks in entries.values() for block in blocks}
            con.executemany("INSERT OR IGNORE INTO blocks (path, fingerprint) VALUES (?, ?)", all_blocks)
            block_ids = {block: block_id for block_id, block in self.blocks().items()}
            con.executemany(
                "INSERT INTO tests (node_id, outcome, config, blocks) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (node_id) DO UPDATE SET "
                "outcome = excluded.outcome, config = excluded.config, blocks = excluded.blocks",
                (
                    (node_id, outcome, config, _pack(block_ids[block] for block in blocks))
                    for node_id, (outcome, blocks) in entries.items()
                ),
            )
            con.executemany("DELETE FROM tests WHERE node_id = ?", ((node_id,) for node_id in gone))
            referenced: set[int] = set()
            for (packed,) in con.execute("SELECT blocks FROM tests"):
                referenced.update(_unpack(packed))
            con.executemany(
                "DELETE FROM blocks WHERE id = ?", ((i,) for i in block_ids.values() if i not in referenced)
            )
            con.executemany(
                "INSERT INTO files (path, stat, fingerprints) VALUES (?, ?, ?) "
                "ON CONFLICT (path) DO UPDATE SET stat = excluded.stat, fingerprints = excluded.fingerprints",
                ((path, stat, " ".join(sorted(fps))) for path, (stat, fps) in (files or {}).items()),
            )
            con.execute("DELETE FROM files WHERE path NOT IN (SELECT path FROM blocks)")
            _set_meta(con, meta or {})

    def keep(self, files: Mapping[str, tuple[str, Iterable[str]]], meta: Mapping[str, str | None]) -> None:
        """In one transaction: the files of ``files`` (path -> (stat key, block
        fingerprints) as read) that the map has blocks of get those as their last read,
        and the ``meta`` rows are set; no test's entry changes."""
        with self._transaction() as con:
            con.executemany(
                "INSERT INTO files (path, stat, fingerprints) SELECT ?, ?, ? "
                "WHERE EXISTS (SELECT 1 FROM blocks WHERE blocks.path = ?) "
                "ON CONFLICT (path) DO UPDATE SET stat = excluded.stat, fingerprints = excluded.fingerprints",
                ((path, stat, " ".join(sorted(fps)), path) for path, (stat, fps) in files.items()),
            )
            _set_meta(con, meta)


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
        con.execute("PRAGMA foreign_keys = ON")
        con.execute("PRAGMA journal_mode = WAL")
        con.execute("PRAGMA synchronous = NORMAL")
    except sqlite3.DatabaseError:
        con.close()
        raise
    return con


def _check(con: sqlite3.Connection) -> None:
    """Raise ``MapUntrusted`` unless ``con`` is a map of ``SCHEMA_VERSION``."""
    tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not {"schema_version", "meta", "tests", "blocks", "files"} <= tables:
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
