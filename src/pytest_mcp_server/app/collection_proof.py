"""What an ``affected`` call can know of the next collection without running it: the
last full collection the map recorded (``last_full_collection``), the proof that no
test can fail, so that no pytest starts (``nothing_can_fail``, ``answer_without_pytest``),
and the test files a run needs to collect when some tests are selected
(``narrowed_files``), with the recorded collection brought up to date after such a run
(``merged_collection``); the rootdir and ini file every run resolves (``IdForm``,
``rootdir_pins``, ``form_problem``).

**One rootdir, one node id.** pytest finds its rootdir and ini file from the arguments
it is given (pytest's docs, *Initialization: determining rootdir and configfile*): the
common ancestor of the paths, then the first directory from there upwards holding
``pytest.ini``, ``.pytest.ini``, ``pyproject.toml``, ``tox.ini`` or ``setup.cfg``. A
project whose ``tests/`` holds its own ``pytest.ini`` gets the root from a plain
``pytest`` and ``tests/`` from ``pytest tests/test_x.py``, and node ids of two forms.
A full collection (no path given: what ``pytest`` in the root resolves) records its
rootdir and ini file; every later run that gives pytest paths pins them, ``-c <ini
file>`` (pytest then takes its directory as the rootdir) or, with no ini file,
``--rootdir``, while the root's configuration files are as they were then. Each run's
collection says what it resolved; one that differs from the pinned form stores nothing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import orjson

from pytest_mcp_server.app.map_state import MapState
from pytest_mcp_server.app.runner import Runner
from pytest_mcp_server.domain.nodeids import node_path
from pytest_mcp_server.domain.selection import selection_of
from pytest_mcp_server.domain.tools import ExecuteParams, ExecuteResult
from pytest_mcp_server.run.argv import RECORDS_FILE, execute_argv
from pytest_mcp_server.run.interpreter import Interpreter
from pytest_mcp_server.run.process import ProcessOutcome
from pytest_mcp_server.run.pytest_plugin.pytest_mcp_server_shared import stat_key
from pytest_mcp_server.run.recording import (
    CONFIG_FILES,
    CollectionDelta,
    collection_delta,
    config_file_parts,
)

PYTEST_CONFIG_NAMES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
"""The files pytest looks for in each directory when it finds its ini file (pytest's docs,
*Initialization: determining rootdir and configfile*)."""
RECOVERS = "the test map was left as it was; the next affected call collects the whole suite"
"""What an answer adds when a run's node ids could not be trusted to be the map's form."""


@dataclass(frozen=True)
class IdForm:
    """The rootdir and ini file pytest resolved in a run (``inifile`` None: none): node
    ids are relative to the rootdir, and the ini file holds the options."""

    rootdir: str
    inifile: str | None

    def __str__(self) -> str:
        return f"rootdir {self.rootdir}, ini file {self.inifile or 'none'}"


def form_of(collection: Mapping[str, Any] | None) -> IdForm | None:
    """The ``IdForm`` a collection recorded (``run.recording.Collected.collection``), or
    None when it recorded none."""
    if not collection or not isinstance(collection.get("rootdir"), str):
        return None
    inifile = collection.get("inifile")
    return IdForm(collection["rootdir"], inifile if isinstance(inifile, str) else None)


def root_config_parts(parts: Mapping[str, str]) -> dict[str, str]:
    """The parts of ``parts`` (``run.recording.config_file_parts``'s names) that are
    pytest's and coverage.py's files at the root, conftest files left out: what decides
    the rootdir and ini file of a plain ``pytest`` in the root."""
    return {name: value for name, value in parts.items() if name in CONFIG_FILES}


def pinned_form(root: Path, state: MapState) -> IdForm | None:
    """The rootdir and ini file a run of the map's tests must resolve: the last full
    collection's, while the root's configuration files are as they were then and its
    ini file is still there; None when there is none to trust (no full collection yet,
    a changed configuration, the last call's command line refused)."""
    last = state.last_collection
    if last is None or state.full_next is not None:
        return None
    form = form_of(last.get("collection"))
    if form is None or last.get("config") != root_config_parts(state.now):
        return None
    if form.inifile is not None and not os.path.isfile(form.inifile):
        return None
    return form if os.path.isdir(form.rootdir) else None


def rootdir_pins(form: IdForm | None) -> list[str]:
    """pytest's options that make a run given paths resolve ``form``: ``-c <ini file>``
    (its directory is then the rootdir; ``--rootdir`` too when the rootdir is not it),
    ``--rootdir`` alone when there is no ini file. ``--rootdir`` is left out when its
    path holds ``$`` (pytest expands variables in it); the run's own collection then says
    what it resolved (``form_problem``)."""
    if form is None:
        return []
    pins: list[str] = []
    if form.inifile is not None:
        pins += ["-c", form.inifile]
    if (form.inifile is None or os.path.dirname(form.inifile) != form.rootdir) and "$" not in form.rootdir:
        pins.append(f"--rootdir={form.rootdir}")
    return pins


def form_problem(expected: IdForm | None, found: IdForm | None, full: bool) -> str | None:
    """Why a run's node ids are not of the map's form: it resolved ``found`` where the
    map's tests were resolved as ``expected`` (the last full collection's); None when
    they agree, when there is nothing to compare, or when the run collected in full
    without paths (``full``: it resolved what a plain ``pytest`` does, the form from now
    on)."""
    if full or expected is None or found is None or found == expected:
        return None
    return f"pytest resolved {found} where the map's tests are of {expected}"


@dataclass(frozen=True)
class Proven:
    """The proof holds: no test can fail since the map's tests last ran, and a collection
    now would find the same tests (``nothing_can_fail``)."""


@dataclass(frozen=True)
class Unproven:
    """The proof does not hold, and why (one line, for ``Selection.pytest_started``)."""

    reason: str


Proof = Proven | Unproven
"""``nothing_can_fail``'s answer."""


@dataclass(frozen=True)
class LastCollection:
    """The last full collection the map recorded (``record``: ``COLLECTION_KEY``'s JSON:
    ``collection``, ``environment``, ``total``, ``config``) and how a collection now
    could differ from it (``delta``)."""

    record: dict[str, Any]
    delta: CollectionDelta


def last_full_collection(state: MapState, params: ExecuteParams) -> LastCollection | Unproven:
    """The last full collection the map recorded and how a collection now could differ
    from it (``run.recording.collection_delta``), for a call that narrows nothing (no
    ``node_ids``, ``markers``, ``keywords``, ``last_failed``) on a map that was trusted
    and holds the suite as last collected in full; else why not. Blocking."""
    if params.node_ids or params.markers or params.keywords or params.last_failed:
        return Unproven("the call narrows the selection (node_ids, markers, keywords or last_failed)")
    if state.full_next is not None:
        return Unproven(state.full_next)
    last = state.last_collection
    if state.notice or last is None:
        return Unproven("no full collection recorded yet")
    if last["collection"].get("narrowing"):
        return Unproven(f"{last['collection']['narrowing'][0]} in the options collects only some tests")
    if len(state.recorded) != last.get("total"):
        return Unproven("the map does not hold the suite as last collected in full")
    collection = last["collection"]
    if collection.get("errors"):
        return Unproven(f"a test module could not be collected last time: {collection['errors'][0]}")
    return LastCollection(last, collection_delta(collection, last.get("environment") or {}))


def nothing_can_fail(root: Path, state: MapState, found: LastCollection | Unproven) -> Proof:
    """``Proven`` when the map, the files' fingerprints and the configuration prove that
    no test can fail: the last full collection is known (``found``:
    ``last_full_collection``'s), no recorded test is selected (none ran changed code,
    none failed last time, the configuration files as they were), and a collection now
    would find the same tests (no new or changed test module, nothing blocking:
    ``CollectionDelta``); then every file whose fingerprints were used is stat'ed again
    (a write during the check is seen). Else ``Unproven`` with why an affected call must
    start pytest although it may select nothing. Blocking."""
    if isinstance(found, Unproven):
        return found
    delta = found.delta
    if not state.recorded or len(state.skip) != len(state.recorded) or state.import_changed or state.wide:
        return Unproven("tests are affected")
    if delta.blocked is not None:
        return Unproven(delta.blocked)
    if delta.modules:
        return Unproven(f"a test module is new or changed: {delta.modules[0]}")
    for file, key in state.stats.items():
        if stat_key(root / file) != key:
            return Unproven(f"{file} changed during the check")
    if config_file_parts(root) != state.now:
        return Unproven("a configuration file changed during the check")
    return Proven()


def narrowed_files(root: Path, state: MapState, found: LastCollection | Unproven) -> list[str]:
    """The test files an affected run needs to collect (relative to ``root``): those
    holding the selected recorded tests, the new and changed test modules; empty when
    only a full collection will do (``found`` is a reason, the delta is blocked, every
    test depends on the change, pytest's rootdir is not the root, or nothing is left to
    collect). The tests of the other files are unchanged since they last passed:
    collecting them would only deselect them. Only when the run can be pinned to the
    last full collection's rootdir and ini file (``pinned_form``); without an ini file,
    not when a directory between the root and a file holds one of pytest's configuration
    file names (pytest would read it)."""
    if isinstance(found, Unproven):
        return []
    delta = found.delta
    if delta.blocked is not None or state.import_changed or state.wide or not state.recorded:
        return []
    form = pinned_form(root, state)
    if form is None or form.rootdir != str(root) or len(state.skip) == 0:
        return []  # node ids are relative to pytest's rootdir; with no test skipped every file is needed
    skipped = set(state.skip)
    files = {node_path(node_id) for node_id in state.recorded if node_id not in skipped}
    prefix = os.path.join(str(root), "")
    for path in delta.modules:
        if not path.startswith(prefix):
            return []
        files.add(path[len(prefix) :].replace(os.sep, "/"))
    if form.inifile is None and any(_config_between(root, file) for file in files):
        return []
    return sorted(files)


def _config_between(root: Path, file: str) -> bool:
    """Whether a directory of ``file``'s path below ``root`` holds a file named as one of
    pytest's configuration files."""
    parts = file.split("/")[:-1]
    return any(
        (root.joinpath(*parts[:depth]) / name).exists()
        for depth in range(1, len(parts) + 1)
        for name in PYTEST_CONFIG_NAMES
    )


async def answer_without_pytest(
    runner: Runner, params: ExecuteParams, interp: Interpreter, state: MapState, run_dir: Path, options: list[str]
) -> ExecuteResult:
    """The answer of an affected call that ``nothing_can_fail`` proved: status
    ``no_tests``, exit code 5, every test of the suite deselected, as a pytest run that
    deselected everything would answer; its record file (``RECORDS_FILE`` in ``run_dir``,
    for ``summarize_report``) says so in the plugin's dialect. ``command`` is the argv
    that pytest would have run; ``duration_s`` 0 (no session)."""
    total = len(state.recorded)
    records = run_dir / RECORDS_FILE
    lines = [
        {
            "$report_type": "SessionStart",
            "pytest_version": ".".join(map(str, interp.pytest_version)),
            "root": str(runner.root),
        },
        {"$report_type": "CollectionFinish", "collected": total},
        {"$report_type": "Deselected", "count": total},
        {"$report_type": "SessionFinish", "exitstatus": 5, "duration": 0.0},
    ]
    await anyio.Path(records).write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    argv = execute_argv(params, interp, run_dir, options)
    read = await runner.read_records(records, params.budgets(), ProcessOutcome(5, False, 0.0, "", ""), argv)
    summary = read.summary()
    selection = selection_of([], total, {}, None)
    return ExecuteResult(
        status="no_tests",
        exit_code=5,
        duration_s=0.0,
        command=argv,
        report_path=str(records),
        summary=summary,
        deselected=total,
        selection=selection,
    )


def merged_collection(last: dict[str, Any] | None, narrowed: dict[str, Any]) -> dict[str, Any] | None:
    """The last full collection brought up to date by a collection of a few test files
    (``narrowed``): their modules' stat keys replace the recorded ones, a new module's
    name joins its directory's listing, and its collection errors are the files' own."""
    if last is None:
        return None
    merged = dict(last["collection"])
    modules = dict(merged.get("modules") or {})
    dirs = {d: list(names) for d, names in (merged.get("dirs") or {}).items()}
    for path, key in (narrowed.get("modules") or {}).items():
        modules[path] = key
        directory, name = os.path.split(path)
        if directory in dirs and name not in dirs[directory]:
            dirs[directory] = sorted([*dirs[directory], name])
    merged["modules"] = modules
    merged["dirs"] = dirs
    errors = set(merged.get("errors") or ()) - set(narrowed.get("modules") or ())
    merged["errors"] = sorted(errors | set(narrowed.get("errors") or ()))
    return merged
