"""pytest plugin that pytest-mcp-server loads into the pytest runs it starts.

Not for users: the server adds this directory to the child's PYTHONPATH and passes
``-p pytest_mcp_server_events --mcp-records=FILE`` (and, for a test run,
``--mcp-stacks=FILE``). It imports nothing but pytest, the standard library and the
module beside it that it shares with the server (``pytest_mcp_server_shared``: hashes,
file names, format numbers) (and orjson, when the project's interpreter has it, in runs of more than
``ORJSON_AFTER_RECORDS`` tests: it encodes the complete reports faster; with
``--mcp-map-data``, its recorder module beside it, which needs coverage.py before Python
3.12, and the server asks for it only then), so it
works in any project interpreter (Python 3.8+, pytest 7+), whatever else is installed.

FILE is the run's one record stream: JSON lines in pytest-reportlog's format (pytest-dev's
``--report-log``: each report as ``pytest_report_to_serializable`` gives it, with its
``$report_type``), in this dialect (docs/SERVER.md, *The record file*):

* first ``{"$report_type": "SessionStart", "pytest_version", "root", "start"}`` (``root``:
  ``pytest.Config.rootpath``; ``start``: unix seconds), with ``"stack_dump_armed": true`` when
  the stack dump below is armed;
* each CollectReport that did not pass (collection errors, module-level skips), complete;
* ``{"$report_type": "CollectionFinish", "collected": N}`` (after -m/-k/--lf; with xdist,
  the first worker's count), and with --collect-only the collected node ids, in
  ``{"$report_type": "CollectedIds", "nodeids": [...]}`` lines of about
  ``COLLECTED_CHUNK_BYTES`` each;
* ``{"$report_type": "Deselected", "count": N}`` per ``pytest_deselected`` call;
* ``{"$report_type": "TestStart", "nodeid", "start"}`` when a test starts
  (``pytest_runtest_logstart``): the test running when a run is stopped;
* per test, when its teardown report arrives, its reports in order: setup (left out
  when it passed), call, any SubTestReports (pytest 9's built-in subtests; pytest writes
  them with ``_report_type``, renamed ``$report_type`` as pytest-reportlog does), teardown.
  A report that passed (outcome passed, no ``wasxfail``) is lean:
  ``{"$report_type", "nodeid", "when", "outcome": "passed", "duration"}`` (a subtest's
  keeps its ``_subtest.context``); the others are complete serialisations, their
  ``$report_type``, ``nodeid``, ``when`` and ``outcome`` first. (xdist's report of a
  test whose worker crashed, ``when`` ``???``, ends its test instead of a teardown: it is
  written as a failed ``call``, the test's last line.) A doctest's report (its string
  longrepr) has the invocation directory removed from the start of its location lines
  (``/root/pkg/mod.py:12: DocTestFailure`` -> ``pkg/mod.py:12: DocTestFailure``), as
  pytest writes paths in tracebacks. A complete report weighs at most ``REPORT_CAP``
  bytes of JSON, about: a larger one is cut, with ``text_bytes_cut`` and
  ``sections_bytes_cut`` saying what was (``_bounded_report``);
* ``{"$report_type": "WarningMessage", ...}`` per ``pytest_warning_recorded``, as
  pytest-reportlog writes it (``category``, ``filename``, ``lineno``, ``message``,
  ``when``, ``location``) plus ``nodeid``; the message is capped (``TEXT_CAP``);
* last ``{"$report_type": "SessionFinish", "exitstatus": N, "duration": S}``: ``S`` the
  session's seconds as pytest's last line measures them (``in 8.53s``: from the session's
  start to the end of the terminal summary).

Every line is written with one unbuffered write(2) (a test's reports together, in one),
compact, whole and on disk before the next test starts: the server follows the file
while the run goes on, and a killed pytest loses no line it wrote.

With ``--mcp-failures`` (every ``execute_tests`` run), the server's own record of the
last failures, FILE (``pytest_mcp_server_shared.FAILURES_FILE`` in the directory above the record file's: the
project's runs directory), replaces pytest's cache provider's (``--lf``'s ``cache/lastfailed`` and
``--nf``'s ``cache/nodeids``, which pytest rewrites into the project's ``.pytest_cache``
after every run): ``{"failed": [node ids]}``, updated as pytest's ``LFPlugin`` updates its
own (a test that fails or errors in any phase, or a module that fails to collect, is added;
one whose call passes or that is skipped is removed, a module that collects again gives
way to its tests; the tests that did not run keep their entries) and rewritten at the session's end when it changed.
pytest's ``lfplugin`` and ``nfplugin`` are then unregistered, unless the run's options (the
project's ``addopts``, say) use ``--lf``, ``--ff``, ``--nf`` or ``--sw``: those keep theirs.
The ``cache`` fixture and ``pytest.Config.cache`` stay. With ``--mcp-last-failed`` too, the
collected tests that are not in FILE are deselected (``pytest_deselected``, after -m/-k),
in each process that collects (xdist workers); when none of the collected tests is in it,
all run, as pytest's ``--lf`` does by default (``--lfnf=all``).

With ``--mcp-stacks=FILE``, ``faulthandler`` dumps every thread's stack into FILE on
``SIGUSR1`` (the server sends it when the run times out). In xdist workers the plugin
only arms that dump, into ``FILE.<worker pid>`` (the tests run there); the controller
sees every report and writes the records.

With ``--mcp-map-data=DIR`` (``execute_tests`` with ``affected``), every pytest process
(an xdist worker and its controller alike) records the lines of the project's files each
test runs, and those run outside any test, into its own file ``DIR/map.<pid>.jsonl``:
``pytest_mcp_server_recorder`` (sys.monitoring on Python 3.12+, coverage.py's C tracer
before), started before the project's conftest files are imported. pytest-cov, when the
project's options start it, is switched off as its ``--no-cov`` does.

With ``--mcp-skip=FILE`` (JSON: ``{"environment": {"<interpreter>": H, "<distributions>":
H}, "skip": [node ids]}``, what the test map found unchanged since those tests passed),
the collected tests named in ``skip`` are deselected (``pytest_deselected``), after -m/-k,
when this interpreter's environment hashes (``_environment``: its version and path, the
distributions on sys.path) are the ones given; otherwise nothing is (something the map
cannot see changed). Every process that collects (xdist workers each) then writes
``<FILE's directory>/collected.<pid>.json``: ``{"environment": {...}, "collected":
[node ids before that deselection]}``, from which the server names each test's reason.

On Linux it also guards against the server's sudden death (SIGKILL, a crash): pytest
asks the kernel for SIGHUP when its parent dies (``PR_SET_PDEATHSIG``) and then kills its
own process group, grandchildren included, and the run's processes that left the group
(they carry the run's ``PYTEST_MCP_SERVER_RUN`` token), so no orphan runs on. Only when
pytest leads its own process group (the server starts it so), never in xdist workers.
"""

# Annotations stay unevaluated strings, so the ``X | None`` spellings below also work on Python 3.8.
from __future__ import annotations

import faulthandler
import json
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Generator, Sequence
from json.encoder import encode_basestring_ascii
from types import FrameType
from typing import IO, Any

import pytest

try:
    import pytest_mcp_server_shared as shared  # type: ignore[import-not-found]  # beside this file, on the child's path
except ImportError:  # imported as part of the server's package (the server's own tests)
    from . import pytest_mcp_server_shared as shared

PR_SET_PDEATHSIG = 1
TEXT_CAP = 65536
"""Characters kept of a warning's message in the record file (its head and tail), and of
each string of a report the report cap cuts (``REPORT_CAP``) at first."""
REPORT_CAP = 1 << 20
"""Bytes of JSON one complete report may write to the record file, about: weighed before
it is encoded, its strings as the standard library's encoder writes them (orjson's
UTF-8 is never longer), a number 24 bytes. pytest renders a value's repr into its report
whole wherever no truncation of its own applies (an exception's message,
``pytest.fail``'s text, captured output), so one failure could write hundreds of MB
(``_bounded_report``)."""
REPORT_ITEMS = 1000
"""Items kept of a list (its first and last halves) in a report the cap cuts, at first;
a dict below the report's own keys keeps its first ones, never fewer than
``_ITEMS_FLOOR`` (pytest's own objects in a report have fewer keys)."""
REPORT_DEPTH = 32
"""Levels of nesting kept in a report the cap cuts, the report itself the first: a list
or dict at this level is emptied (the report engine refuses a line nested deeper than
127; a user property can nest as deep as it likes)."""
_TEXT_FLOOR = 16
_ITEMS_FLOOR = 8
_REPORT_HEAD = ("$report_type", "nodeid", "when", "outcome")
"""A report's keys the cap never cuts (the node id stays whole: the server runs tests by it)."""
_REPORT_READ = (*_REPORT_HEAD, "location", "longrepr", "sections", "duration", "start", "stop", "wasxfail")
"""The keys a report keeps when even the smallest caps leave it too large (the others,
``keywords`` and ``user_properties``, are only the test's and the user's data)."""
ORJSON_AFTER_RECORDS = 2000
"""Tests recorded with the standard library's json before the plugin imports orjson (when
the project's interpreter has it). Importing orjson takes 5-15 ms and it saves several
microseconds per complete report, so it pays back only in runs of a few thousand tests.
(A passing test's lean lines are formatted without either.)"""
COLLECTED_CHUNK_BYTES = 65536
"""Bytes of node ids per ``CollectedIds`` line with --collect-only."""
STACK_DUMP_SIGNAL = "SIGUSR1"
"""The signal on which faulthandler dumps every thread's stack into the stacks file."""
_STAGES = ("setup", "call", "teardown")
_SURROGATE = re.compile("[\ud800-\udfff]")
_HELD_STAGES = ("setup", "call")  # a report of any other stage (teardown, xdist's ???) ends its test
_LEAN_TEST_REPORT = '{"$report_type":"TestReport","nodeid":%s,"when":"%s","outcome":"passed","duration":%r}\n'
_TEST_START = '{"$report_type":"TestStart","nodeid":%s,"start":%.3f}\n'


def _kill_escaped(token: str) -> None:
    # processes of this run that left the group (setsid) still carry the run's token
    me = os.getpid()
    marker = ("PYTEST_MCP_SERVER_RUN=" + token).encode()
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != me:
            try:
                with open(f"/proc/{name}/environ", "rb") as f:
                    if marker in f.read().split(b"\0"):
                        os.kill(int(name), signal.SIGKILL)
            except OSError:
                pass


def _kill_own_group(signum: int | None = None, frame: FrameType | None = None) -> None:
    token = os.environ.get("PYTEST_MCP_SERVER_RUN")
    if token:
        _kill_escaped(token)
    try:
        os.killpg(os.getpgid(0), signal.SIGKILL)
    except OSError:
        os._exit(1)


def _guard_parent_death() -> None:
    if not sys.platform.startswith("linux") or os.getpgid(0) != os.getpid():
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
    except (OSError, AttributeError):
        return
    parent = os.getppid()
    signal.signal(signal.SIGHUP, _kill_own_group)
    if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGHUP), 0, 0, 0) != 0:
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        _kill_own_group()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--mcp-records", dest="mcp_records", default=None, help="(pytest-mcp-server internal)")
    parser.addoption("--mcp-stacks", dest="mcp_stacks", default=None, help="(pytest-mcp-server internal)")
    parser.addoption("--mcp-map-data", dest="mcp_map_data", default=None, help="(pytest-mcp-server internal)")
    parser.addoption("--mcp-skip", dest="mcp_skip", default=None, help="(pytest-mcp-server internal)")
    parser.addoption("--mcp-failures", dest="mcp_failures", action="store_true", help="(pytest-mcp-server internal)")
    parser.addoption(
        "--mcp-last-failed", dest="mcp_last_failed", action="store_true", help="(pytest-mcp-server internal)"
    )


_recording: Any = None  # the recorder's Recording of this process (--mcp-map-data)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> Generator[None, None, None]:
    # a wrapper: before every plugin's own hook (pytest-cov starts coverage.py in its), and
    # before the project's conftest files are imported, so their imports are recorded
    _start_recording(early_config)
    yield


def _start_recording(early_config: pytest.Config) -> None:
    global _recording
    directory = getattr(early_config.known_args_namespace, "mcp_map_data", None)
    if directory and _recording is None:
        if hasattr(early_config.known_args_namespace, "no_cov"):
            # pytest-cov's --no-cov, set before its own hook reads it: the project's --cov
            # measures a subset here (its fail_under would fail a green run), and before
            # Python 3.12 its coverage.py would pause the recorder's
            early_config.known_args_namespace.no_cov = True
        from pytest_mcp_server_recorder import Recording  # type: ignore[import-not-found]  # beside this file

        here = os.path.dirname(os.path.abspath(__file__))
        _recording = Recording(directory, str(early_config.invocation_params.dir), here)


def _site_dirs() -> list[str]:
    # the sys.path entries _environment lists, absolute: the server lists them again
    return [os.path.abspath(entry or ".") for entry in sys.path]


def _environment() -> dict[str, str]:
    # What the test map cannot see of this interpreter: its version and path, and the
    # distributions installed on sys.path (their ``*.dist-info``/``*.egg-info`` directory
    # names carry name and version).
    interpreter, distributions = shared.ENVIRONMENT_PARTS
    return {
        interpreter: shared.short_hash(sys.version, sys.executable),
        distributions: shared.distributions_hash(_site_dirs()),
    }


_FILE_HOOKS = ("pytest_collect_file", "pytest_collect_directory")
"""Hooks through which any plugin could make tests of files that are not test modules."""
_CONFTEST_HOOKS = ("pytest_pycollect_makeitem", "pytest_ignore_collect")
"""Hooks through which a conftest could make or hide tests by rules of its own (an installed
plugin's are part of the distributions the server fingerprints)."""


def _collection_hooks(config: pytest.Config) -> list[str]:
    # "hook in plugin" for each implementation other than pytest's own and this plugin's
    found = set()
    for name in (*_FILE_HOOKS, *_CONFTEST_HOOKS):
        hook = getattr(config.pluginmanager.hook, name, None)
        for impl in hook.get_hookimpls() if hook is not None else ():
            module = getattr(impl.plugin, "__name__", "") or type(impl.plugin).__module__
            if module.startswith("_pytest.") or impl.plugin_name == "pytest-mcp-affected":
                continue
            if name in _CONFTEST_HOOKS and not impl.plugin_name.endswith("conftest.py"):
                continue
            found.add(f"{name} in {impl.plugin_name}")
    return sorted(found)


class _AffectedRun:
    # Registered only in the runs that ask for it: a test's context, the skipped tests,
    # and what the collection looked at (so the server can prove, next time, that a
    # collection would find nothing new without running pytest).
    def __init__(self, config: pytest.Config, recording: Any, skip_file: str | None) -> None:
        self.recording = recording
        self.skip_file = skip_file
        self.skip: set[str] = set()
        self.environment: dict[str, str] = {}
        self.apply = False
        self.seen: dict[str, str | None] = {}  # every path collection did not ignore -> its stat key then
        self.listings: dict[str, list[str]] = {}  # every directory collection did not ignore -> its names then
        self.modules: set[str] = set()
        self.errors: set[str] = set()  # test modules that could not be collected
        self.rootpath = str(config.rootpath)
        self.site_dirs: list[str] = []
        if skip_file:
            with open(skip_file, encoding="utf-8") as f:
                given = json.load(f)
            self.skip = set(given["skip"])
            self.site_dirs = _site_dirs()
            self.environment = _environment()
            self.apply = given.get("environment") == self.environment
            here = str(config.invocation_params.dir)
            for arg in config.args:
                path = os.path.join(here, arg.split("::", 1)[0])
                self.seen[path] = shared.stat_key(path)
                self._list(path)

    def _list(self, path: str) -> None:
        try:
            self.listings[path] = sorted(os.listdir(path))
        except OSError:  # not a directory
            pass

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_ignore_collect(self, collection_path: Any) -> Generator[None, Any, None]:
        # stat'ed before pytest lists a directory or reads a file (a change after is seen),
        # kept when collection did not ignore it (.pytest_cache changes on every run)
        path = str(collection_path)
        key = shared.stat_key(path) if self.skip_file and path not in self.seen else None
        outcome = yield
        if key is not None and not outcome.get_result():
            self.seen[path] = key
            if os.path.isdir(path):
                self._list(path)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collect_file(self, file_path: Any) -> None:
        path = str(file_path)
        if self.skip_file and path not in self.seen:
            self.seen[path] = shared.stat_key(path)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if self.recording is not None:
            self.recording.boundary(report.nodeid)
        path = report.nodeid
        if self.skip_file and "::" not in path and path.endswith(".py"):
            self.modules.add(os.path.join(self.rootpath, path))
            if report.failed:
                self.errors.add(os.path.join(self.rootpath, path))

    def _collection(self, config: pytest.Config) -> Any:  # shared.CollectionSnapshot
        executable = os.path.realpath(sys.executable)
        return {
            "dirs": self.listings,
            "python_files": list(config.getini("python_files")),
            "norecursedirs": list(config.getini("norecursedirs")),
            "doctest_glob": list(config.getoption("doctestglob", None) or ["test*.txt"]),
            "modules": {path: self.seen.get(path) for path in sorted(self.modules)},
            "errors": sorted(self.errors),
            "rootdir": self.rootpath,
            # what a later run pins (-c) so that its node ids keep this run's form
            "inifile": str(config.inipath) if config.inipath is not None else None,
            "hooks": _collection_hooks(config),
            "doctest_modules": bool(config.getoption("doctestmodules", False)),
            "pyargs": bool(config.getoption("pyargs", False)),
            # options (the project's addopts, say) that collect or keep only some tests
            "narrowing": [
                name
                for name, dest in (("--lf", "lf"), ("--sw", "stepwise"), ("--sw-skip", "stepwise_skip"))
                if config.getoption(dest, False)
            ],
            "interpreter": {"executable": executable, "stat": shared.stat_key(executable)},
            "site_dirs": self.site_dirs,
        }

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, None, None]:
        recording = self.recording
        if recording is None:
            yield
            return
        recording.fixtures(item.nodeid, getattr(item, "fixturenames", ()))
        recording.switch(item.nodeid, item.nodeid)
        try:
            yield
        finally:
            recording.switch("", item.nodeid)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        if not self.skip_file:
            return
        collected = [item.nodeid for item in items]
        out = os.path.join(os.path.dirname(self.skip_file), f"{shared.COLLECTED_PREFIX}{os.getpid()}.json")
        written = {"environment": self.environment, "collected": collected, "collection": self._collection(config)}
        with open(out, "w", encoding="utf-8") as f:
            json.dump(written, f)
        skip = self.skip
        if not self.apply or not skip:
            return
        kept = [item for item in items if item.nodeid not in skip]
        if len(kept) != len(items):
            config.hook.pytest_deselected(items=[item for item in items if item.nodeid in skip])
            items[:] = kept


_CACHE_PLUGINS = ("lfplugin", "nfplugin")
"""The plugins pytest's cache provider registers for ``--lf``/``--ff`` and ``--nf``; each
reads and rewrites its file in ``.pytest_cache`` on every run (``cache/nodeids`` holds
every node id of the suite)."""
_CACHE_OPTIONS = ("lf", "failedfirst", "newfirst", "stepwise", "stepwise_skip")
"""The destinations of ``--lf``, ``--ff``, ``--nf``, ``--sw`` and ``--sw-skip``: a run whose
options use one keeps pytest's own cache plugins."""


def _read_failures(path: str) -> dict[str, None]:
    # the server's record of the last failures; a missing or unreadable file is no failure
    try:
        with open(path, encoding="utf-8") as f:
            failed = json.load(f).get("failed", [])
    except (OSError, ValueError, AttributeError):
        return {}
    return dict.fromkeys(n for n in failed if isinstance(n, str)) if isinstance(failed, list) else {}


class _LastFailures:
    # The server's record of the last failures (--mcp-failures), kept by the process that
    # sees every report (the controller under xdist), written when the session ends.
    def __init__(self, path: str) -> None:
        self.path = path
        self.failed = _read_failures(path)
        self.before = list(self.failed)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.failed[report.nodeid] = None
        elif report.nodeid in self.failed:
            # a module that failed to collect and now collects: its tests take its place
            # (xdist sends no ``result`` over)
            del self.failed[report.nodeid]
            self.failed.update((node.nodeid, None) for node in getattr(report, "result", None) or ())

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            self.failed[report.nodeid] = None
        elif (report.when == "call" and report.passed) or report.skipped:
            if self.failed:
                self.failed.pop(report.nodeid, None)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if session.config.getoption("collectonly", False) or list(self.failed) == self.before:
            return
        partial = f"{self.path}.{os.getpid()}.tmp"
        try:
            with open(partial, "w", encoding="utf-8") as f:
                json.dump({"failed": list(self.failed)}, f)
            os.replace(partial, self.path)  # whole or not at all: a run killed here keeps the old record
        except OSError:
            pass


class _LastFailedOnly:
    # --mcp-last-failed: keep the collected tests the record names (in every process that
    # collects: xdist's workers collect, its controller does not)
    def __init__(self, path: str) -> None:
        self.failed = _read_failures(path)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        # a module that failed to collect last time runs all its tests now that it collects
        if report.passed and report.nodeid in self.failed:
            self.failed.update((node.nodeid, None) for node in report.result)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        kept = [item for item in items if item.nodeid in self.failed]
        if kept and len(kept) != len(items):
            config.hook.pytest_deselected(items=[item for item in items if item.nodeid not in self.failed])
            items[:] = kept


def _configure_failures(config: pytest.Config, path: str) -> None:
    """The server's record of failures instead of pytest's cache plugins (when the run's
    options do not use them), and, with --mcp-last-failed, only the tests it names."""
    if not any(config.getoption(dest, False) for dest in _CACHE_OPTIONS):
        for name in _CACHE_PLUGINS:
            if config.pluginmanager.get_plugin(name) is not None:
                config.pluginmanager.unregister(name=name)
    if config.getoption("mcp_last_failed", False):
        config.pluginmanager.register(_LastFailedOnly(path), "pytest-mcp-last-failed")
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(_LastFailures(path), "pytest-mcp-failures")


def _stop_recording() -> None:
    global _recording
    if _recording is not None:
        recording, _recording = _recording, None
        recording.finish()


def _capped(text: str) -> str:
    if len(text) <= TEXT_CAP:
        return text
    half = TEXT_CAP // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut by pytest-mcp-server ...]\n{text[-half:]}"


class _TooLarge(Exception):
    pass


def _fits(record: dict[str, Any], cap: int) -> bool:
    """Whether ``record``'s JSON weighs at most ``cap`` bytes, about (``REPORT_CAP``), and
    nests at most ``REPORT_DEPTH`` levels; stops weighing at the first byte over."""
    try:
        _weigh(record, cap, 1)
    except _TooLarge:
        return False
    return True


def _weigh(value: Any, room: int, depth: int) -> int:
    # the room left after ``value`` (raises _TooLarge when none is); anything JSON writes
    # with str() (a user property's object) weighs too much: its size is unknown until cut
    kind = type(value)
    if kind is str:
        if len(value) > room:  # its JSON is at least as long: not encoded
            raise _TooLarge
        room -= len(encode_basestring_ascii(value))
    elif kind is list or kind is tuple:
        if depth > REPORT_DEPTH:
            raise _TooLarge
        room -= 2
        for item in value:
            room = _weigh(item, room - 1, depth + 1)
    elif kind is dict:
        if depth > REPORT_DEPTH:
            raise _TooLarge
        room -= 2
        for key, item in value.items():
            room = _weigh(item, _weigh(key, room - 2, depth + 1), depth + 1)
    elif value is None or kind is bool or kind is float or (kind is int and -(10**18) < value < 10**18):
        room -= 24
    else:
        raise _TooLarge
    if room < 0:
        raise _TooLarge
    return room


def _bounded_report(record: dict[str, Any]) -> dict[str, Any]:
    """A complete report cut to ``REPORT_CAP``: the same keys and shapes, each string
    longer than the cut's size keeping its head and tail around ``[... N bytes cut by
    pytest-mcp-server ...]``, each captured output section (``sections``: ``[name,
    content]``) its last characters (the engine reads output tails), each list its first
    and last items, a list or dict at the ``REPORT_DEPTH``-th level emptied. The sizes start
    at ``TEXT_CAP`` characters and ``REPORT_ITEMS`` items and shrink (a quarter, a half)
    until the report fits; at the smallest (``_TEXT_FLOOR``, ``_ITEMS_FLOOR``) only the
    keys a reader needs stay (``_REPORT_READ``). The node id and the report's kind, phase
    and outcome are never cut.

    What the engine shows that the cut left out is counted on the report (written only
    when not 0): ``text_bytes_cut``, the UTF-8 bytes cut from its ``longrepr`` (the
    traceback, the crash message), and ``sections_bytes_cut``, per section name the bytes
    cut from the head of that name's first section (the one a reader takes). What is cut
    from other keys (``keywords``, ``user_properties``) is not counted: no reader shows
    them."""
    chars, items = TEXT_CAP, REPORT_ITEMS
    while True:
        bounded = _BoundedReport(chars, items, count=False).report(record)
        if _fits(bounded, REPORT_CAP) or (chars, items) == (_TEXT_FLOOR, _ITEMS_FLOOR):
            break
        chars, items = max(chars // 4, _TEXT_FLOOR), max(items // 2, _ITEMS_FLOOR)
    keys = None if _fits(bounded, REPORT_CAP) else _REPORT_READ
    cut = _BoundedReport(chars, items, count=True)
    bounded = cut.report({k: v for k, v in record.items() if keys is None or k in keys})
    if cut.text_bytes:
        bounded["text_bytes_cut"] = cut.text_bytes
    if cut.sections_bytes:
        bounded["sections_bytes_cut"] = cut.sections_bytes
    return bounded


class _BoundedReport:
    # One cut of a report at the sizes ``chars`` and ``items`` (``_bounded_report``);
    # ``count``: the bytes cut are counted (a pass that only tries sizes does not: counting
    # walks what is cut)
    def __init__(self, chars: int, items: int, count: bool) -> None:
        self.chars = chars
        self.items = items
        self.count = count
        self.text_bytes = 0
        self.sections_bytes: dict[str, int] = {}
        self.dropped = 0  # bytes cut by the value being cut now

    def report(self, record: dict[str, Any]) -> dict[str, Any]:
        bounded: dict[str, Any] = {}
        for key, value in record.items():
            self.dropped = 0
            if key in _REPORT_HEAD:
                bounded[key] = value
            elif key == "sections" and type(value) in (list, tuple):
                bounded[key] = self.sections(value)
            else:
                bounded[key] = self.value(value, 2)
                if key == "longrepr":
                    self.text_bytes += self.dropped
        return bounded

    def sections(self, sections: Sequence[Any]) -> list[Any]:
        kept = []
        for section in self.kept_items(sections):
            if type(section) in (list, tuple) and len(section) == 2 and all(type(x) is str for x in section):
                name, content = section
                tail = content[-self.chars :] if len(content) > self.chars else content
                if self.count and name not in self.sections_bytes and len(tail) < len(content):
                    self.sections_bytes[name] = _utf8_bytes(content[: len(content) - len(tail)])
                kept.append([self.value(name, 3), tail])
            else:
                kept.append(self.value(section, 3))
        return kept

    def kept_items(self, values: Sequence[Any]) -> Sequence[Any]:
        if len(values) <= self.items:
            return values
        half = self.items // 2
        if self.count:
            self.dropped += sum(_text_bytes(v) for v in values[half : len(values) - half])
        return [*values[:half], *values[len(values) - half :]]

    def value(self, value: Any, depth: int) -> Any:
        kind = type(value)
        if kind is str:
            if len(value) <= self.chars:
                return value
            half = self.chars // 2
            dropped = _utf8_bytes(value[half : len(value) - half]) if self.count else 0
            self.dropped += dropped
            return f"{value[:half]}[... {dropped} bytes cut by pytest-mcp-server ...]{value[len(value) - half :]}"
        if kind is list or kind is tuple:
            if depth >= REPORT_DEPTH:
                self.dropped += _text_bytes(value) if self.count else 0
                return []
            return [self.value(item, depth + 1) for item in self.kept_items(value)]
        if kind is dict:
            if depth >= REPORT_DEPTH:
                self.dropped += _text_bytes(value) if self.count else 0
                return {}
            pairs = list(value.items())
            if len(pairs) > self.items:  # never fewer than _ITEMS_FLOOR: pytest's own dicts stay whole
                if self.count:
                    self.dropped += sum(_text_bytes(k) + _text_bytes(v) for k, v in pairs[self.items :])
                pairs = pairs[: self.items]
            return {k: self.value(v, depth + 1) for k, v in pairs}
        if value is None or kind is bool or kind is float or (kind is int and -(10**18) < value < 10**18):
            return value
        try:
            text = str(value)  # what json writes of it (default=str)
        except Exception as exc:  # noqa: BLE001 - a user's object: any __str__ may raise
            text = f"<{kind.__name__} object: str() raised {type(exc).__name__}>"
        return self.value(text, depth)


def _utf8_bytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _text_bytes(value: Any, depth: int = 0) -> int:
    # the UTF-8 bytes of the strings in ``value`` (what a reader would have rendered of
    # it), down to ``REPORT_DEPTH`` levels below it
    kind = type(value)
    if kind is str:
        return _utf8_bytes(value)
    if depth >= REPORT_DEPTH:
        return 0
    if kind is list or kind is tuple:
        return sum(_text_bytes(v, depth + 1) for v in value)
    if kind is dict:
        return sum(_text_bytes(k, depth + 1) + _text_bytes(v, depth + 1) for k, v in value.items())
    return 0


def _without_lone_surrogates(value: Any) -> Any:
    # JSON readers that follow RFC 8259 strictly (orjson, serde_json: the report engine)
    # refuse a \udXXX escape that is not half of a pair, which json writes for a str holding
    # a lone surrogate (an exception message from undecodable bytes): written as the text
    # "\udce9" instead (a str never holds a valid pair: those are one code point)
    if isinstance(value, str):
        return _SURROGATE.sub(_surrogate_as_text, value)
    if isinstance(value, dict):
        return {_without_lone_surrogates(k): _without_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_without_lone_surrogates(v) for v in value]
    return value


def _surrogate_as_text(match: re.Match[str]) -> str:
    return match.group().encode("utf-8", "backslashreplace").decode("ascii")


def _json_string(text: str) -> str:
    """``text`` as a JSON string, ASCII (the C encoder), a lone surrogate written as text."""
    encoded = encode_basestring_ascii(text)
    if "\\ud" in encoded:  # an astral character's pair, or a lone surrogate
        encoded = encode_basestring_ascii(_without_lone_surrogates(text))
    return encoded


def _stdlib_json_line(record: dict[str, Any]) -> bytes:
    # compact as orjson's; ensure_ascii: always ASCII; str() what JSON cannot hold (a user
    # property's object), as pytest-reportlog does
    line = json.dumps(record, separators=(",", ":"), default=str)
    if "\\ud" in line:  # an astral character's pair, or a lone surrogate
        line = json.dumps(_without_lone_surrogates(record), separators=(",", ":"), default=str)
    return (line + "\n").encode("ascii")


def _orjson_line_encoder() -> Callable[[dict[str, Any]], bytes] | None:
    # orjson when the project's interpreter has it (an old one lacks OPT_APPEND_NEWLINE)
    try:
        import orjson

        option = orjson.OPT_APPEND_NEWLINE
    except (ImportError, AttributeError):
        return None

    def orjson_line(record: dict[str, Any]) -> bytes:
        try:
            return orjson.dumps(record, option=option, default=str)
        except TypeError:  # orjson.JSONEncodeError: what json escapes (a lone surrogate in a message)
            return _stdlib_json_line(record)

    return orjson_line


def _is_doctest(report: pytest.CollectReport | pytest.TestReport) -> bool:
    """True for the report of a doctest item: pytest's ``DoctestItem`` reports its
    location's name as ``[doctest] <name>`` (also after xdist sent it over)."""
    location = getattr(report, "location", None)
    name = location[2] if isinstance(location, tuple) and len(location) == 3 else None
    return isinstance(name, str) and name.startswith("[doctest] ")


def _write(file: IO[bytes], data: bytes) -> None:
    # an unbuffered file: each call is one write(2), on disk (page cache) when it returns,
    # so a crash or a kill loses nothing written before; a short write is continued
    written = file.write(data)
    while written is not None and written < len(data):
        data = data[written:]
        written = file.write(data)


def _arm_stack_dump(path: str) -> IO[str] | None:
    # faulthandler writes from its C signal handler, so the dump comes even when the test
    # is stuck in native code holding the GIL
    if not hasattr(signal, STACK_DUMP_SIGNAL):
        return None
    stacks = open(path, "w", encoding="utf-8")
    faulthandler.register(getattr(signal, STACK_DUMP_SIGNAL), file=stacks, all_threads=True)
    return stacks


def _disarm_stack_dump(stacks: IO[str] | None) -> None:
    if stacks is not None:
        faulthandler.unregister(getattr(signal, STACK_DUMP_SIGNAL))
        stacks.close()


class _RecordWriter:
    # Per test: one write(2) when it starts (TestStart) and one when its teardown report
    # arrives (all its reports), each line whole and on disk before the next test runs.
    # A passing report is formatted by hand (the C string encoder for its node id): no
    # serialisation hook, no dict, no json encoder.
    def __init__(self, config: pytest.Config, path: str, stacks: str | None) -> None:
        self.config = config
        self.file = open(path, "ab", buffering=0)
        self.collect_only = bool(config.getoption("collectonly", False))
        self.collected_sent = False
        self.session_started: float | None = None  # perf_counter at the session's start
        self.summary_duration: float | None = None  # the session's time at the end of the terminal summary
        self.session_finished = False
        self.early: list[bytes] = []  # lines recorded before the session started (config-time warnings)
        self.pending: dict[str, list[bytes]] = {}  # node id -> its reports' lines until its teardown
        self.tests_written = 0
        self.running = ("", "")  # the node id of the test that started last, and its JSON string
        # json.loads reads both encoders' lines alike (orjson's are UTF-8, json's ASCII)
        self.json_line: Callable[[dict[str, Any]], bytes] = _stdlib_json_line
        self.stacks = _arm_stack_dump(stacks) if stacks else None
        # pytest writes a doctest's location lines (``/abs/pkg/mod.py:12: DocTestFailure``) with the
        # absolute path, where its tracebacks write paths relative to the invocation directory
        here = re.escape(os.path.join(str(config.invocation_params.dir), ""))
        self.doctest_locations = re.compile(f"(?m)^{here}(?=[^\n]*:[0-9]+: )")

    def _line(self, line: bytes) -> None:
        if self.session_started is None:
            self.early.append(line)
        elif not self.session_finished:  # SessionFinish stays the last line (a warning at exit is dropped)
            _write(self.file, line)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        start = {
            "$report_type": "SessionStart",
            "pytest_version": pytest.__version__,
            "root": str(self.config.rootpath),
            "start": time.time(),
        }
        if self.stacks is not None:
            start["stack_dump_armed"] = True
        self.session_started = time.perf_counter()
        _write(self.file, _stdlib_json_line(start) + b"".join(self.early))
        self.early = []

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_terminal_summary(self) -> Generator[None, None, None]:
        # the terminal reporter prints its last line ("in 8.53s") right after this hook
        yield
        self.summary_duration = self._duration()

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> Generator[None, None, None]:
        # outermost: after the terminal reporter's summary line, whose time it repeats
        yield
        duration = self.summary_duration if self.summary_duration is not None else self._duration()
        finish = {"$report_type": "SessionFinish", "exitstatus": int(session.exitstatus), "duration": duration}
        self._line(_stdlib_json_line(finish))
        self.session_finished = True

    def _duration(self) -> float:
        # the terminal reporter's own clock when it has one (recent pytest: an Instant taken in
        # its trylast pytest_sessionstart), so the figure is the one its last line printed
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        start = getattr(reporter, "_session_start", None)
        if start is not None and hasattr(start, "elapsed"):
            try:
                return float(start.elapsed().seconds)
            except (AttributeError, TypeError, ValueError):
                pass
        started = self.session_started if self.session_started is not None else time.perf_counter()
        return time.perf_counter() - started

    def _collected(self, n: int) -> None:
        if not self.collected_sent:
            self.collected_sent = True
            self._line(b'{"$report_type":"CollectionFinish","collected":%d}\n' % n)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._collected(len(session.items))
        if self.collect_only:
            chunk: list[str] = []
            size = 0
            for item in session.items:
                encoded = _json_string(item.nodeid)
                chunk.append(encoded)
                size += len(encoded) + 1
                if size >= COLLECTED_CHUNK_BYTES:
                    self._collected_ids(chunk)
                    chunk, size = [], 0
            if chunk:
                self._collected_ids(chunk)

    def _collected_ids(self, encoded: list[str]) -> None:
        self._line(('{"$report_type":"CollectedIds","nodeids":[' + ",".join(encoded) + "]}\n").encode("ascii"))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: Sequence[str]) -> None:
        self._collected(len(ids))

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        self._line(b'{"$report_type":"Deselected","count":%d}\n' % len(items))

    def _complete(self, report: pytest.CollectReport | pytest.TestReport) -> bytes:
        data = self.config.hook.pytest_report_to_serializable(config=self.config, report=report)
        if "_report_type" in data:  # a subtest report (pytest 9, pytest-subtests), as pytest-reportlog renames it
            data["$report_type"] = data.pop("_report_type")
        head = {"$report_type": data.pop("$report_type"), "nodeid": data.pop("nodeid")}
        for key in ("when", "outcome"):
            if key in data:
                head[key] = data.pop(key)
        if head.get("when") not in (None, *_STAGES):
            head["when"] = "call"  # xdist's report of a test whose worker crashed (``???``): its last line
        longrepr = data.get("longrepr")
        if isinstance(longrepr, str) and _is_doctest(report):
            data["longrepr"] = self.doctest_locations.sub("", longrepr)
        head.update(data)
        if not _fits(head, REPORT_CAP):
            head = _bounded_report(head)
        return self.json_line(head)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if not report.passed:
            self._line(self._complete(report))

    def pytest_runtest_logstart(self, nodeid: str, location: object) -> None:
        encoded = _json_string(nodeid)
        self.running = (nodeid, encoded)  # the node id of its reports, encoded once
        self._line((_TEST_START % (encoded, time.time())).encode("ascii"))

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # last: the report as pytest counted it (pytest 9's terminal reporter marks a passed
        # test whose subtests failed failed, in the report itself: "contains 2 failed subtests").
        # The hot path (a plain TestReport that passed) reads attributes without raising
        # AttributeError (hasattr's cost) and formats its line with one %.
        when = report.when
        plain = type(report) is pytest.TestReport
        if plain:
            lean = report.outcome == "passed" and "wasxfail" not in report.__dict__
        else:
            lean = report.outcome == "passed" and not hasattr(report, "wasxfail")
        if lean:
            if plain:
                if when == "setup":
                    return  # a passed setup is left out
                nodeid = report.nodeid  # a property: read once
                running, encoded = self.running
                if nodeid != running:  # with xdist, reports of several tests interleave
                    encoded = _json_string(nodeid)
                line = (_LEAN_TEST_REPORT % (encoded, when, report.duration)).encode("ascii")
            else:
                nodeid = report.nodeid
                context = getattr(report, "context", None)
                record: dict[str, Any] = {"$report_type": "TestReport", "nodeid": nodeid, "when": when}
                record["outcome"] = "passed"
                record["duration"] = report.duration
                if context is not None:  # a passed subtest: lean, with what names it
                    record["$report_type"] = "SubTestReport"
                    record["_subtest.context"] = {"msg": context.msg, "kwargs": dict(context.kwargs)}
                elif when == "setup":
                    return
                line = self.json_line(record)
        else:
            nodeid = report.nodeid
            line = self._complete(report)
        if when in _HELD_STAGES:
            lines = self.pending.get(nodeid)
            if lines is None:
                self.pending[nodeid] = [line]
            else:
                lines.append(line)
            return
        lines = self.pending.pop(nodeid, None)
        if lines is None:
            self._line(line)
        else:
            lines.append(line)
            self._line(b"".join(lines))
        self.tests_written += 1
        if self.tests_written == ORJSON_AFTER_RECORDS:
            self.json_line = _orjson_line_encoder() or _stdlib_json_line

    def pytest_warning_recorded(self, warning_message: Any, when: str, nodeid: str, location: object) -> None:
        category = warning_message.category
        record = {
            "$report_type": "WarningMessage",
            "category": category.__name__ if category else None,
            "filename": warning_message.filename,
            "lineno": warning_message.lineno,
            "message": _capped(str(warning_message.message)),
            "when": when,
            "location": location,
            "nodeid": nodeid,
        }
        self._line(self.json_line(record))

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        _disarm_stack_dump(self.stacks)
        self.file.close()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    _stop_recording()


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    skip = config.getoption("mcp_skip", None)
    if _recording is not None or skip:
        config.pluginmanager.register(_AffectedRun(config, _recording, skip), "pytest-mcp-affected")
    path = config.getoption("mcp_records", None)
    if path and config.getoption("mcp_failures", False):
        _configure_failures(
            config, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(path))), shared.FAILURES_FILE)
        )
    if not path:
        return
    if hasattr(config, "workerinput"):
        # an xdist worker runs the tests: it dumps its own stacks, into FILE.<its pid>
        stacks = config.getoption("mcp_stacks", None)
        if stacks:
            worker_stacks = _arm_stack_dump(f"{stacks}.{os.getpid()}")
            if worker_stacks is not None:
                config.add_cleanup(lambda: _disarm_stack_dump(worker_stacks))
        return
    _guard_parent_death()
    writer = _RecordWriter(config, path, config.getoption("mcp_stacks", None))
    config.pluginmanager.register(writer, "pytest-mcp-records")
