"""Recording and reading what each test ran, for ``affected`` calls.

One pytest process per call: the server's plugin records, in every pytest process,
the lines of the project's files each test runs (``--mcp-map-data``: the plugin's
recorder, sys.monitoring on Python 3.12+ and coverage.py's C tracer before, one file
per process under ``<run_dir>/map``) and deselects the tests the map found unchanged
since they passed (``--mcp-skip``, ``skip_options``), after collection, unless the
interpreter or its installed distributions changed (the plugin hashes them; the server
compares). Each collecting process writes the collected node ids and those hashes
(``read_collected_file``). After the run the server reads the recorders' files
(``read_map_data``: per file, the lines each context ran, xdist workers' files merged)
and ``tests_blocks`` turns lines into blocks (``domain.blocks``).

What else the map cannot see is fingerprinted here (``config_file_parts``): which
``conftest.py`` files there are under the root, and pytest's configuration files at the
root.
"""

from __future__ import annotations

import configparser
import fnmatch
import hashlib
import os
import threading
import tomllib
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from pytest_mcp_server.domain.blocks import Block, FileBlocks, file_blocks
from pytest_mcp_server.domain.coverage_answer import ChangedLines, relative_path
from pytest_mcp_server.domain.elements import Element
from pytest_mcp_server.domain.failures import ToolFailure
from pytest_mcp_server.domain.nodeids import node_function, node_names
from pytest_mcp_server.domain.policy import BLOCKS_KEPT, MONITORING_PYTHON
from pytest_mcp_server.domain.reach import EVERY_TEST, BlockFacts, ImportKey, importing
from pytest_mcp_server.engine.coverage_reports import LineContexts
from pytest_mcp_server.run.events import PLUGIN_DIR
from pytest_mcp_server.run.interpreter import Interpreter
from pytest_mcp_server.run.pytest_plugin.pytest_mcp_server_shared import (
    COLLECTED_GLOB,
    HASH_CHARS,
    IMPORTING,
    LINE_SPANS_FILE,
    MAP_FILE_GLOB,
    RECORDER_FORMAT,
    SKIP_FILE,
    distributions_hash,
    short_hash,
    stat_key,
)

MAP_DATA_DIR = "map"
"""The run directory's subdirectory where each pytest process's recorder writes its file."""
IMPORTING_CONTEXT = IMPORTING
"""The prefix of the recorder's context of lines run while a project module was being
imported, outside tests (the shared module's ``IMPORTING``), before the module's
absolute path."""
CONFIG_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg", ".coveragerc")
"""pytest's configuration files at the root (pytest's docs, *Configuration file formats*),
and coverage.py's own (its ``source`` and ``omit`` decide what the recorder measures
before Python 3.12)."""
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".tox", ".nox", ".venv", "venv"})
"""Directories never searched for ``conftest.py`` (besides hidden ones and virtualenvs)."""


def missing_map_coverage(interp: Interpreter) -> ToolFailure | None:
    """``ToolFailure(coverage_missing)`` naming the interpreter and the install command
    when it is older than Python 3.12 and lacks coverage.py (its recorder there; from
    3.12 the recorder is sys.monitoring's and needs nothing); else None."""
    if interp.has_coverage or interp.version >= MONITORING_PYTHON:
        return None
    return ToolFailure(
        "coverage_missing",
        f"affected needs coverage.py in the project's interpreter {interp.python} (Python "
        f"{'.'.join(map(str, interp.version)) or 'before 3.12'}, where the per-test recorder is coverage.py's C "
        f"tracer), which lacks it; install it there ({interp.python} -m pip install coverage), run the project on "
        "Python 3.12 or newer, or run with affected=false",
    )


def skip_options(directory: Path, skip: Iterable[str], environment: Mapping[str, str], *, measure: bool) -> list[str]:
    """The plugin's options of an affected pytest run in ``directory`` (created): deselect
    the tests of ``skip`` (node ids) when the interpreter's environment hashes are
    ``environment`` (``ENVIRONMENT_PARTS``; the map's, from its last run), written to
    ``directory/skip.json``; with ``measure``, record what each test runs into
    ``directory/map``."""
    directory.mkdir(exist_ok=True)
    skip_file = directory / SKIP_FILE
    skip_file.write_bytes(orjson.dumps({"environment": dict(environment), "skip": list(skip)}))
    options = [f"--mcp-skip={skip_file}"]
    if measure:
        data_dir = directory / MAP_DATA_DIR
        data_dir.mkdir(exist_ok=True)
        options.insert(0, f"--mcp-map-data={data_dir}")
    return options


def write_line_spans(directory: Path, spans: Mapping[str, Sequence[tuple[int, int]] | None]) -> None:
    """Name to the recorder of an affected run in ``directory`` (``skip_options``'s, with
    ``measure``) where it writes the lines functions run rather than their entries
    (``LINE_SPANS_FILE`` in its ``map`` subdirectory): absolute path -> None (every
    function of the file) or the ``(first, last)`` spans whose functions' lines it writes
    (``domain.suspects.spans_to_record``). Elsewhere a function's run may be written as its
    entry (the recorder module's docstring). Without the file, entries everywhere."""
    data = {path: None if found is None else [list(span) for span in found] for path, found in spans.items()}
    (directory / MAP_DATA_DIR / LINE_SPANS_FILE).write_bytes(orjson.dumps(data))


@dataclass(frozen=True)
class Collected:
    """What the plugin wrote at collection (``read_collected_file``): the interpreter's
    ``environment`` hashes (``ENVIRONMENT_PARTS``), every ``collected`` node id (after
    -m/-k, before the skip) and ``collection``: what the collection looked at, for
    ``collection_delta`` (``dirs``: absolute path -> the names in it then; ``modules``:
    absolute path -> stat key then; ``errors``: the modules that failed to collect;
    ``rootdir`` and ``inifile`` (pytest's ``pytest.Config.rootpath``, ``pytest.Config.inipath``);
    ``python_files``, ``norecursedirs``, ``doctest_glob``: pytest's
    patterns; ``hooks``: the plugins' and conftests' collection hooks;
    ``doctest_modules``, ``pyargs``, ``narrowing`` (``--lf``, ``--sw`` among the
    options); ``interpreter``: the executable's real path and stat key; ``site_dirs``:
    the ``sys.path`` entries listed for distributions)."""

    environment: dict[str, str]
    collected: list[str]
    collection: dict[str, Any] | None


def read_collected_file(directory: Path) -> Collected | None:
    """What the plugin wrote at collection in ``directory`` (``COLLECTED_GLOB``, any one
    file: xdist workers collect alike). None when no process collected."""
    for path in sorted(directory.glob(COLLECTED_GLOB)):
        try:
            written = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue  # a worker killed while writing it; another one's may be whole
        return Collected(dict(written["environment"]), list(written["collected"]), written.get("collection"))
    return None


def _collectable(name: str, directory: str, collection: Mapping[str, Any]) -> bool:
    """Whether a new entry ``name`` of ``directory`` could hold tests for pytest: a
    directory its ``norecursedirs`` does not skip (``__pycache__`` aside), a ``.py``
    file its ``python_files`` match or a ``conftest.py``/``__init__.py``, a file the
    doctest glob matches (pytest's own rules: ``fnmatch`` on the name, on the whole path
    for a pattern holding a separator)."""
    path = os.path.join(directory, name)

    def matches(patterns: Iterable[str]) -> bool:
        return any(fnmatch.fnmatch(path if os.sep in p or "/" in p else name, p) for p in patterns)

    if os.path.isdir(path):
        return name != "__pycache__" and not matches(collection.get("norecursedirs") or ())
    if name.endswith(".py"):
        return name in ("conftest.py", "__init__.py") or matches(collection.get("python_files") or ())
    return matches(collection.get("doctest_glob") or ())


@dataclass(frozen=True)
class CollectionDelta:
    """How a collection now could differ from the last full one (``collection_delta``):
    ``blocked``, why only a full collection can tell (None when nothing says so), and
    ``modules``, the test modules (absolute paths) that are new or changed since, whose
    tests a collection of them alone finds."""

    blocked: str | None
    modules: list[str]


def collection_delta(collection: Mapping[str, Any], environment: Mapping[str, str]) -> CollectionDelta:
    """What a collection now could find beyond the last full one, which looked at
    ``collection`` (``Collected.collection``) under ``environment``. Blocked (only a full
    collection can tell) when a plugin or conftest hooks collection, doctest modules or
    ``--pyargs`` are on, the interpreter's executable or the distributions on its path
    changed, a directory collection listed is gone or holds a new directory, conftest,
    ``__init__.py`` or doctest file pytest could collect (``_collectable``), or a test
    module was removed. Otherwise the new test modules (new ``python_files`` matches)
    and the changed ones (their stat). Blocking (stats and listings)."""
    if collection.get("hooks"):
        return CollectionDelta(f"a plugin or conftest hooks collection ({collection['hooks'][0]})", [])
    if collection.get("doctest_modules"):
        return CollectionDelta("--doctest-modules collects doctests from every module", [])
    if collection.get("pyargs"):
        return CollectionDelta("--pyargs collects from installed packages", [])
    if collection.get("narrowing"):
        return CollectionDelta(f"{collection['narrowing'][0]} in the options collects only some tests", [])
    interpreter = collection.get("interpreter") or {}
    if not interpreter or stat_key(Path(interpreter["executable"])) != interpreter["stat"]:
        return CollectionDelta("the interpreter's executable changed", [])
    if distributions_hash(collection.get("site_dirs") or ()) != environment.get("<distributions>"):
        return CollectionDelta("the installed distributions changed", [])
    modules: list[str] = []
    for directory, names in (collection.get("dirs") or {}).items():
        try:
            now = os.listdir(directory)
        except OSError:
            return CollectionDelta(f"a directory collection lists is gone: {directory}", [])
        known = set(names)
        for name in sorted(now):
            path = os.path.join(directory, name)
            if name in known or not _collectable(name, directory, collection):
                continue
            if not name.endswith(".py") or name in ("conftest.py", "__init__.py") or os.path.isdir(path):
                return CollectionDelta(f"a new file or directory where pytest collects: {path}", [])
            modules.append(path)
    for path, key in (collection.get("modules") or {}).items():
        now_key = stat_key(Path(path))
        if now_key is None:
            return CollectionDelta(f"a test module was removed: {path}", [])
        if now_key != key:
            modules.append(path)
    return CollectionDelta(None, sorted(set(modules)))


@dataclass
class MapData:
    """What the recorders of one run wrote (``read_map_data``): ``lines``, per file
    (absolute path) the lines each context ran (a test's node id; ``""``: outside any
    test), a negative number ``-N`` for a function it entered whose definition starts
    on line ``N`` (``domain.blocks.FileBlocks.owners_of``), merged over the run's
    processes (a line ran in a context when it did in any);
    ``recorders``: the recorders that wrote them (``sys.monitoring``, ``coverage.py``);
    ``problems``: why the recording cannot be trusted, one line each (empty when it can);
    ``unrecorded``: the tests whose lines are incomplete -> why (their entries leave the
    map, so they run again next time); ``fixtures``: each test's fixture closure (pytest's
    ``item.fixturenames``)."""

    lines: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    recorders: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    unrecorded: dict[str, str] = field(default_factory=dict)
    fixtures: dict[str, list[str]] = field(default_factory=dict)


def read_map_data(run_dir: Path) -> MapData:
    """Read the recorders' files of the run in ``run_dir`` (``<run_dir>/map/map.*.jsonl``:
    the plugin's recorder module, ``pytest_mcp_server_recorder``). A file of another
    format, not ended (its process was killed), or with unreadable lines is a problem,
    as is each ``problem`` line a recorder wrote. Blocking; never raises."""
    data = MapData()
    data_dir = run_dir / MAP_DATA_DIR
    # the recorder writes each context's lines sorted, once per process: a list is kept
    # as it came, and only a context two processes wrote (xdist workers' imports) merged
    merged: dict[str, dict[str, list[int]]] = {}
    both: set[tuple[str, str]] = set()
    for path in sorted(data_dir.glob(MAP_FILE_GLOB)) if data_dir.is_dir() else []:
        try:
            records = [orjson.loads(line) for line in path.read_bytes().splitlines()]
        except (OSError, orjson.JSONDecodeError) as exc:
            data.problems.append(f"the recorder's file {path.name} could not be read ({exc})")
            continue
        if not records or records[0].get("format") != RECORDER_FORMAT:
            data.problems.append(f"the recorder's file {path.name} is not of format {RECORDER_FORMAT}")
            continue
        data.recorders.append(str(records[0].get("recorder")))
        paths: dict[int, str] = {}
        for record in records[1:]:
            if "context" in record:
                context = str(record["context"])
                for number, lines in record["lines"]:
                    per = merged.setdefault(paths[number], {})
                    known = per.get(context)
                    if known is None:
                        per[context] = lines
                    else:
                        per[context] = known + lines
                        both.add((paths[number], context))
            elif "file" in record:
                paths[int(record["file"])] = str(record["path"])
            elif "fixtures" in record:
                data.fixtures[str(record["fixtures"])] = [str(name) for name in record["names"]]
            elif "unrecorded" in record:
                data.unrecorded[str(record["unrecorded"])] = str(record["why"])
            elif "problem" in record:
                data.problems.append(str(record["problem"]))
        if records[-1].get("end") is not True:
            data.problems.append(f"the recorder of pytest process {records[0].get('pid')} did not finish its file")
    for file, context in both:
        merged[file][context] = sorted(set(merged[file][context]))
    data.lines = merged
    return data


def changed_contexts(
    data: dict[str, dict[str, list[int]]], root: Path, changed: ChangedLines
) -> dict[str, LineContexts]:
    """The map data of a run (``read_map_data``: per file, the lines each context ran)
    for the changed files only, as ``LineContexts`` keyed by the path relative to
    ``root``. The data names only the lines that ran: ``complete`` is False, and the
    ranking adds the lines the source's statements start on (``domain.suspects``)."""
    out: dict[str, LineContexts] = {}
    touched = set(changed.touched())
    for path, per_context in data.items():
        relative = relative_path(path, os.fspath(root))
        if relative not in touched:
            continue
        contexts: dict[int, list[str]] = {}
        for context, lines in per_context.items():
            outside = "" if context.startswith(IMPORTING_CONTEXT) else context  # an import is outside tests
            for line in lines:
                # a function's entry, not a line (the functions holding the change are written line by line)
                if line < 0:
                    continue
                if outside not in contexts.setdefault(line, []):
                    contexts[line].append(outside)
        out[relative] = LineContexts(
            executable=frozenset(contexts), contexts={k: tuple(v) for k, v in contexts.items()}, complete=False
        )
    return out


_PARSED: OrderedDict[tuple[str, str], FileBlocks] = OrderedDict()
"""Parsed blocks by (absolute path, stat key), the newest last (at most ``BLOCKS_KEPT``)."""
_PARSED_LOCK = threading.Lock()  # calls read blocks in worker threads, two at once


def read_blocks(root: Path, path: str, stat: str | None = None) -> FileBlocks | None:
    """The blocks of ``root/path`` as it is now; None when it cannot be read. ``stat``:
    its stat key taken before (else taken here): a file whose key is that of a file
    parsed before is not read again (``BLOCKS_KEPT``; the key changes with any write)."""
    full = root / path
    key = stat if stat is not None else stat_key(full)
    if key is not None:
        with _PARSED_LOCK:
            known = _PARSED.get((str(full), key))
            if known is not None:
                _PARSED.move_to_end((str(full), key))
                return known
    try:
        content = full.read_bytes()
    except OSError:
        return None
    blocks = file_blocks(content, python=path.endswith(".py"), path=path)
    if key is not None:
        with _PARSED_LOCK:
            _PARSED[(str(full), key)] = blocks
            while len(_PARSED) > BLOCKS_KEPT:
                _PARSED.popitem(last=False)
    return blocks


Blocks = set[tuple[str, str]]
"""Blocks as ``(path relative to the root, fingerprint)``."""


@dataclass
class RunBlocks:
    """The blocks of one run's map data (``tests_blocks``): ``tests``, node id -> the
    blocks it ran; ``names``, node id -> the names it refers to beside its blocks' (its
    fixture closure, its class and function names); ``at_import``, per file, its function
    blocks run outside tests with no project module being imported; ``importing``, per
    project module (relative path), the function blocks run while it was being imported;
    ``facts``, each block's ``BlockFacts``; ``elements``, per file that ran, its stat key
    before the read and its module-level elements (``domain.elements``); ``read``, the
    files read for this, path -> (stat key before the read, block fingerprints), for the
    map to keep (the next call reads none of them again while its stat is unchanged)."""

    tests: dict[str, Blocks]
    at_import: dict[str, Blocks]
    importing: dict[str, Blocks]
    names: dict[str, frozenset[str]] = field(default_factory=dict)
    facts: dict[tuple[str, str], BlockFacts] = field(default_factory=dict)
    elements: dict[str, tuple[str, tuple[Element, ...]]] = field(default_factory=dict)
    read: dict[str, tuple[str, set[str]]] = field(default_factory=dict)

    def import_code(self) -> dict[ImportKey, dict[str, Blocks]]:
        """The code run at import, by the map's keys (``run.testmap.TestMap.refresh``):
        per key, per file, its blocks."""
        code: dict[ImportKey, dict[str, Blocks]] = {EVERY_TEST: self.at_import}
        for module, blocks in self.importing.items():
            code[importing(module)] = {module: blocks}
        return code


def _importing_module(context: str, root_prefix: str) -> str | None:
    """The module (relative path) whose import context ``context`` is, or None for the
    empty context, a module outside the root, or a ``conftest.py`` (its import shapes
    every test below it: counted as every test's)."""
    if not context.startswith(IMPORTING_CONTEXT):
        return None
    absolute = context[len(IMPORTING_CONTEXT) :]
    if not absolute.startswith(root_prefix) or os.path.basename(absolute) == "conftest.py":
        return None
    return absolute[len(root_prefix) :].replace(os.sep, "/")


def tests_blocks(
    data: dict[str, dict[str, list[int]]],
    root: Path,
    ran: Iterable[str],
    fixtures: Mapping[str, Iterable[str]] | None = None,
) -> RunBlocks:
    """The blocks each test of ``ran`` (node ids) depends on, as ``(path, fingerprint)``
    (paths relative to ``root``), from ``read_map_data``'s ``data`` and ``fixtures``
    (node id -> its fixture closure), and the blocks run outside tests (``RunBlocks``):

    * per test: for each file inside the root where the test's context ran lines, the
      blocks owning those lines and the functions it entered (``domain.blocks.FileBlocks.owners_of``;
      the module-level block only when it ran module-level lines: a module it imported
      during the test); its own test function's block (a
      test file the project's coverage configuration leaves out, or a doctest: all of
      its file's blocks, since its fixtures and helpers ran unmeasured). A module-level
      change reaches it through the names it refers to (``names``, and its blocks'
      ``facts``: ``domain.reach``), not through the file;
    * importing: per project module whose import ran lines outside any test (helpers
      called at its module level, decorators), the function blocks owning them. A
      change there reaches the tests of the files importing that module and the tests
      that ran code in them (``domain.imports``), not every test;
    * at import: per file that ran lines outside any test with no project module being
      imported (collection hooks, a ``conftest.py``'s import, Python before 3.12, whose
      recorder cannot tell imports apart), the function blocks owning them. They may
      shape any test, so every test depends on them; the map keeps them once
      (``domain.reach.EVERY_TEST``), not in every test's entry;
    * elements: per file that ran lines, its module-level elements as read now.
    """
    root_prefix = os.path.join(str(root), "")
    plugin_prefix = os.path.join(str(PLUGIN_DIR), "")
    cache: dict[str, FileBlocks | None] = {}
    read: dict[str, tuple[str, set[str]]] = {}
    facts: dict[tuple[str, str], BlockFacts] = {}
    elements: dict[str, tuple[str, tuple[Element, ...]]] = {}

    def blocks_of(path: str) -> FileBlocks | None:
        if path not in cache:
            stat = stat_key(root / path)  # before reading: a write in between changes it again
            cache[path] = found = read_blocks(root, path, stat)
            if stat is not None and found is not None:
                read[path] = (stat, found.fingerprints())
                elements[path] = (stat, found.elements)
        return cache[path]

    def add(path: str, block: Block, into: set[tuple[str, str]]) -> None:
        into.add((path, block.fingerprint))
        if (path, block.fingerprint) not in facts:
            blind = f"{path}:{block.blind[len('line:') :]}" if block.blind else None
            facts[(path, block.fingerprint)] = BlockFacts(block.names, blind, block.name)

    by_context: dict[str, dict[str, list[int]]] = {}
    for absolute, contexts in data.items():
        if not absolute.startswith(root_prefix) or absolute.startswith(plugin_prefix):
            continue  # installed packages are the configuration's part; the server's plugin is not the project
        relative = absolute[len(root_prefix) :].replace(os.sep, "/")
        for context, lines in contexts.items():
            by_context.setdefault(context, {})[relative] = lines
    measured = {path for files in by_context.values() for path in files}
    at_import: dict[str, Blocks] = {}
    importing_blocks: dict[str, Blocks] = {}
    for context, files in by_context.items():
        if context and not context.startswith(IMPORTING_CONTEXT):
            continue
        module = _importing_module(context, root_prefix)
        for path, lines in files.items():
            blocks = blocks_of(path)
            if blocks is None:
                continue
            # every file run outside tests gets its entry, empty or not: the map replaces what it held for it
            at_import.setdefault(path, set())
            into = at_import[path] if module is None else importing_blocks.setdefault(module, set())
            for block in blocks.owners_of(lines):
                if block.first:
                    add(path, block, into)
    out: dict[str, Blocks] = {}
    names: dict[str, frozenset[str]] = {}
    for node_id in ran:
        found: set[tuple[str, str]] = set()
        for path, lines in by_context.get(node_id, {}).items():
            blocks = blocks_of(path)
            if blocks is not None:
                for block in blocks.owners_of(lines):
                    add(path, block, found)
        path, function = node_function(node_id)
        own = blocks_of(path)
        if own is not None:
            own_block = own.named(function) if function else None
            if path not in measured or own_block is None:
                for each in [own.module, *own.functions]:
                    add(path, each, found)
            else:
                add(path, own_block, found)
        out[node_id] = found
        names[node_id] = frozenset([*node_names(node_id), *((fixtures or {}).get(node_id, ()))])
    for path in measured:
        blocks_of(path)  # its elements: what a module-level change there is compared with
    return RunBlocks(out, at_import, importing_blocks, names, facts, elements, read)


def _project_dirs(root: Path) -> Iterable[tuple[str, list[str]]]:
    """``os.walk`` of ``root``: each directory and its file names, hidden directories,
    virtualenvs and ``SKIPPED_DIRS`` left out."""
    for directory, dirs, files in os.walk(root):
        dirs[:] = [
            d
            for d in dirs
            if d not in SKIPPED_DIRS
            and not d.startswith(".")
            and not os.path.exists(os.path.join(directory, d, "pyvenv.cfg"))
        ]
        yield directory, files


def config_files(root: Path) -> list[str]:
    """The configuration files the map cannot see into, relative to ``root``: every
    ``conftest.py`` under it (hidden directories, virtualenvs, ``SKIPPED_DIRS`` left
    out) and pytest's configuration files at the root, sorted."""
    found = [name for name in CONFIG_FILES if (root / name).is_file()]
    for directory, files in _project_dirs(root):
        if "conftest.py" in files:
            found.append(os.path.relpath(os.path.join(directory, "conftest.py"), root).replace(os.sep, "/"))
    return sorted(found)


def python_files(root: Path) -> dict[str, str]:
    """The project's Python files (``*.py`` under ``root``, as ``config_files`` walks it),
    relative path -> its ``stat_key`` (files that cannot be stat'ed left out)."""
    found: dict[str, str] = {}
    for directory, files in _project_dirs(root):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                key = stat_key(Path(path))
                if key is not None:
                    found[os.path.relpath(path, root).replace(os.sep, "/")] = key
    return found


def config_read(name: str, content: bytes) -> bytes:
    """What pytest and the recorder read of the configuration file ``name`` (a path
    relative to the root) whose bytes are ``content``: of ``pyproject.toml`` its
    ``[tool.pytest]`` (``ini_options`` included) and ``[tool.coverage]`` tables, of
    ``tox.ini`` its ``[pytest]`` and ``[coverage:*]`` sections, of ``setup.cfg`` its
    ``[tool:pytest]`` and ``[coverage:*]`` sections (pytest's docs, *Configuration file
    formats*; coverage.py's, *Configuration reference*), as canonical JSON; the whole
    content of any other file, and of one that does not parse. An edit to ``[project]``,
    ``[build-system]`` or another tool's table then changes no test's selection."""
    base = name.rsplit("/", 1)[-1]
    try:
        if name == "pyproject.toml":
            tool = tomllib.loads(content.decode("utf-8")).get("tool", {})
            read: object = {key: tool[key] for key in ("pytest", "coverage") if key in tool}
        elif name in ("tox.ini", "setup.cfg"):
            parser = configparser.RawConfigParser(strict=False)
            parser.read_string(content.decode("utf-8"))
            wanted = "pytest" if base == "tox.ini" else "tool:pytest"
            read = {
                section: dict(parser.items(section))
                for section in parser.sections()
                if section == wanted or section.startswith("coverage:")
            }
        else:
            return content
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, configparser.Error):
        return content
    return orjson.dumps(read, option=orjson.OPT_SORT_KEYS)


CONFTEST_PRESENT = "present"
"""A ``conftest.py``'s part: that it is there. What it holds is source, whose changes
reach tests as any module's do (its fixtures, its hooks: ``domain.reach``); a conftest
that appears or goes changes which fixtures and hooks apply where."""


def config_file_parts(root: Path) -> dict[str, str]:
    """The configuration parts the server fingerprints itself: each of ``config_files``
    -> the hash of what pytest and the recorder read of it (``config_read``;
    ``unreadable`` when it cannot be read); a ``conftest.py``'s is ``CONFTEST_PRESENT``.
    The plugin adds ``ENVIRONMENT_PARTS``."""
    out: dict[str, str] = {}
    for name in config_files(root):
        if name.rsplit("/", 1)[-1] == "conftest.py":
            out[name] = CONFTEST_PRESENT
            continue
        try:
            out[name] = hashlib.sha256(config_read(name, (root / name).read_bytes())).hexdigest()[:HASH_CHARS]
        except OSError:
            out[name] = "unreadable"
    return out


def config_fingerprint(parts: dict[str, str]) -> str:
    """One fingerprint of ``configuration``'s parts."""
    return short_hash(*(f"{name}={value}" for name, value in sorted(parts.items())))


def changed_parts(before: dict[str, str], now: dict[str, str]) -> list[str]:
    """The names of the parts that differ (added, removed or changed), sorted; the
    interpreter's and distributions' parts as ``the interpreter`` and ``installed
    distributions``."""
    names = {"<interpreter>": "the interpreter", "<distributions>": "installed distributions"}
    return sorted(names.get(k, k) for k in before.keys() | now.keys() if before.get(k) != now.get(k))
