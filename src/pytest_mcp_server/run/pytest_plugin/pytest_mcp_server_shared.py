"""What pytest-mcp-server's plugin and the server both know: the hashes and stat keys
both sides compute, the names of the files they hand each other, the format numbers of
those files, and the type of the collection snapshot the plugin writes.

Standard library only, Python 3.8+: the plugin, loaded into the project's pytest with
this directory on ``PYTHONPATH``, imports it by name (``import pytest_mcp_server_shared``)
and nothing of the server; the server imports the same file as
``pytest_mcp_server.run.pytest_plugin.pytest_mcp_server_shared``. A test checks that
both sides use it (``tests/affected/test_shared_module.py``).
"""

# Annotations stay unevaluated strings, so the ``X | None`` spellings below also work on Python 3.8.
from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from typing import TypedDict

HASH_CHARS = 16
"""Hex digits kept of a SHA-256 fingerprint (``short_hash``)."""
ENVIRONMENT_PARTS = ("<interpreter>", "<distributions>")
"""The configuration parts the plugin hashes in the project's interpreter (``short_hash``
of its version and path; ``distributions_hash`` of its ``sys.path``)."""
SKIP_FILE = "skip.json"
"""The run directory's file naming the tests to deselect and the environment hashes they
hold for (the plugin's ``--mcp-skip``): JSON ``{"environment": {...}, "skip": [node ids]}``."""
COLLECTED_PREFIX = "collected."
"""The files the plugin writes next to ``SKIP_FILE``, one per collecting process:
``collected.<pid>.json`` (``CollectedFile``)."""
COLLECTED_GLOB = COLLECTED_PREFIX + "*.json"
"""The pattern of those files."""
MAP_FILE_PREFIX = "map."
"""The recorder's files in the ``--mcp-map-data`` directory, one per process: ``map.<pid>.jsonl``."""
MAP_FILE_GLOB = MAP_FILE_PREFIX + "*.jsonl"
"""The pattern of those files."""
RECORDER_FORMAT = 4
"""The format number of the recorder's files (their first line's ``format``)."""
LINE_SPANS_FILE = "line_spans.json"
"""The file the server writes into the ``--mcp-map-data`` directory before the run: JSON
``{absolute path: null | [[first, last], ...]}``, where the recorder writes the lines a
function runs rather than its entry (the changed code, whose lines the suspects of a
failure are ranked by): ``null``, every function of the file; a list, the functions whose
``co_firstlineno`` lies in one of the spans (inclusive). Elsewhere a function's run may be
written as its entry (the recorder module's docstring)."""
IMPORTING = "<import> "
"""The prefix of the recorder's context of lines run outside tests while a project module
was being imported, before the module's absolute path (no node id starts with ``<``)."""
FAILURES_FILE = "last_failures.json"
"""The server's record of the last failures, in the project's runs directory (the
directory above a run's record file): JSON ``{"failed": [node ids]}``."""


def short_hash(*values: str) -> str:
    """The first ``HASH_CHARS`` hex digits of SHA-256 over ``values`` joined by NUL."""
    return hashlib.sha256("\0".join(values).encode("utf-8", "surrogateescape")).hexdigest()[:HASH_CHARS]


def stat_key(path: str | os.PathLike[str]) -> str | None:
    """What says a file is unchanged without reading it: its size, modification and
    change times (ns) and inode, as one string; None when it cannot be stat'ed. The
    change time moves on every write and cannot be set back, unlike the modification
    time (``touch -d``, archive extraction)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"


def distributions_hash(entries: Iterable[str]) -> str:
    """The ``<distributions>`` part: ``short_hash`` of the ``*.dist-info``/``*.egg-info``
    names in the directories ``entries`` (``sys.path`` entries, absolute), sorted. A
    directory listing per entry, not ``importlib.metadata`` (which reads every
    distribution's metadata: ~90 ms for 130)."""
    names: list[str] = []
    for entry in entries:
        try:
            with os.scandir(entry) as listing:
                names.extend(e.name for e in listing if e.name.endswith((".dist-info", ".egg-info")))
        except OSError:
            continue
    return short_hash(*sorted(names))


class InterpreterFacts(TypedDict):
    """The interpreter a collection ran under: its executable's real path and
    ``stat_key``."""

    executable: str
    stat: str | None


class CollectionSnapshot(TypedDict):
    """What a collection looked at, as the plugin writes it (``CollectedFile``'s
    ``collection``), for the server to prove later that a collection would find the same
    tests: ``dirs``, absolute path -> the names in it then; ``modules``, each test
    module's absolute path -> its ``stat_key`` then; ``errors``, the modules that failed
    to collect; ``rootdir`` and ``inifile``, pytest's ``pytest.Config.rootpath`` and
    ``pytest.Config.inipath`` (None: none); ``python_files``, ``norecursedirs``,
    ``doctest_glob``: pytest's patterns; ``hooks``, the plugins' and conftests'
    collection hooks (``"hook in plugin"``); ``doctest_modules``, ``pyargs``; ``narrowing``,
    the options that collect or keep only some tests (``--lf``, ``--sw``, ``--sw-skip``);
    ``interpreter``; ``site_dirs``, the ``sys.path`` entries ``distributions_hash`` lists."""

    dirs: dict[str, list[str]]
    python_files: list[str]
    norecursedirs: list[str]
    doctest_glob: list[str]
    modules: dict[str, str | None]
    errors: list[str]
    rootdir: str
    inifile: str | None
    hooks: list[str]
    doctest_modules: bool
    pyargs: bool
    narrowing: list[str]
    interpreter: InterpreterFacts
    site_dirs: list[str]


class CollectedFile(TypedDict):
    """A ``collected.<pid>.json`` file: the interpreter's ``environment`` hashes
    (``ENVIRONMENT_PARTS``), every ``collected`` node id (after ``-m``/``-k``, before the
    skip) and the ``collection``."""

    environment: dict[str, str]
    collected: list[str]
    collection: CollectionSnapshot
