"""pytest plugin that pytest-mcp-server loads into the pytest runs it starts.

Not for users: the server adds this directory to the child's PYTHONPATH and passes
``-p pytest_mcp_server_events --mcp-events=FILE`` (and, for a test run,
``--mcp-results=FILE --mcp-stacks=FILE``). It imports nothing but pytest and the
standard library (and orjson, when the project's interpreter has it, in runs of more
than ``ORJSON_AFTER_RECORDS`` tests: it encodes the per-test records faster), so it works
in any project interpreter (Python 3.8+, pytest 7+), whatever else is installed.

It appends one line per event to the events FILE, each with one unbuffered write, so
the server can follow it while the run goes on and a killed pytest loses no line it
wrote:

* ``c N``: N tests collected (after -m/-k/--lf deselection; with xdist, a worker's count);
* ``x N``: N collected tests deselected (``pytest_deselected``; one line per call);
* ``s <unix time> <node id>``: a test started (``pytest_runtest_logstart``);
* ``t <node id>``: that test finished (its teardown report arrived);
* ``w {json}``: a warning pytest recorded (``pytest_warning_recorded``): ``category``,
  ``message`` (capped), ``filename``, ``lineno``, ``nodeid``, ``when``;
* ``d``: the stack-dump signal is armed (see below);
* ``i "<node id>"``: a collected node id, JSON-encoded (only with --collect-only).

Node ids are JSON-encoded. With ``--mcp-results=FILE`` it also writes one JSON line per
finished test, shaped as a test of pytest-json-report (``{"test": {nodeid, outcome,
setup, call, teardown}}``), and one per collection error (``{"collector": {nodeid,
outcome, longrepr}}``), so the server can build the report of the tests that finished
when pytest never writes its own (a crash, a timeout): each record is written (one
unbuffered write) when its test's teardown report arrives, before the next test starts.
Long texts are capped (``TEXT_CAP``). With ``--mcp-stacks=FILE``, ``faulthandler`` dumps every thread's stack
into FILE on ``SIGUSR1`` (the server sends it when the run times out).

In xdist workers it only arms that dump, into ``FILE.<worker pid>`` (the tests run
there); the controller sees every report and writes the rest.

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
import signal
import sys
import time
from collections.abc import Callable, Sequence
from json.encoder import encode_basestring_ascii
from types import FrameType
from typing import IO, Any

import pytest

PR_SET_PDEATHSIG = 1
TEXT_CAP = 65536
"""Characters kept of a warning message, a longrepr or captured output in the files
written here (the head and the tail; the report engine cuts further)."""
_OUTCOMES = ("failed", "error", "skipped", "xfailed", "xpassed")
ORJSON_AFTER_RECORDS = 2000
"""Records written with the standard library's json before the plugin imports orjson (when
the project's interpreter has it). Importing orjson takes 5-15 ms and it saves about 5 us a
record (5 us -> 0.3 us), so it pays back only in runs of a few thousand tests."""
COLLECTED_CHUNK_BYTES = 65536
"""Bytes of ``i`` lines (collected node ids) written at once with --collect-only."""
STACK_DUMP_SIGNAL = "SIGUSR1"
"""The signal on which faulthandler dumps every thread's stack into the stacks file."""


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
    parser.addoption("--mcp-events", dest="mcp_events", default=None, help="(pytest-mcp-server internal)")
    parser.addoption("--mcp-results", dest="mcp_results", default=None, help="(pytest-mcp-server internal)")
    parser.addoption("--mcp-stacks", dest="mcp_stacks", default=None, help="(pytest-mcp-server internal)")


def _capped(text: str) -> str:
    if len(text) <= TEXT_CAP:
        return text
    half = TEXT_CAP // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut by pytest-mcp-server ...]\n{text[-half:]}"


def _stdlib_json_line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record) + "\n").encode("ascii")  # ensure_ascii: always ASCII


def _orjson_line_encoder() -> Callable[[dict[str, Any]], bytes] | None:
    # orjson when the project's interpreter has it (an old one lacks OPT_APPEND_NEWLINE)
    try:
        import orjson

        option = orjson.OPT_APPEND_NEWLINE
    except (ImportError, AttributeError):
        return None

    def orjson_line(record: dict[str, Any]) -> bytes:
        try:
            return orjson.dumps(record, option=option)
        except TypeError:  # orjson.JSONEncodeError: what json escapes (a lone surrogate in a message)
            return _stdlib_json_line(record)

    return orjson_line


def _write(file: IO[bytes], data: bytes) -> None:
    # an unbuffered file: each call is one write(2), on disk (page cache) when it returns,
    # so a crash or a kill loses nothing written before; a short write is continued
    while data:
        data = data[file.write(data) :]


def _stage(report: pytest.TestReport) -> dict[str, Any]:
    # the fields of a pytest-json-report stage that the report engine reads
    stage: dict[str, Any] = {"duration": report.duration, "outcome": report.outcome}
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        if crash is not None:
            stage["crash"] = {"path": crash.path, "lineno": crash.lineno, "message": _capped(crash.message)}
        if report.capstdout:
            stage["stdout"] = _capped(report.capstdout)
        if report.capstderr:
            stage["stderr"] = _capped(report.capstderr)
        longrepr = report.longreprtext
        if longrepr:
            stage["longrepr"] = _capped(longrepr)
    return stage


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


class _EventWriter:
    # Per test: one write(2) to the events file when it starts, and when it finished one
    # to the results file and one to the events file, each line whole and on disk before
    # the next test runs (the timeout and crash answers read them). The outcome hook is
    # asked only about reports that did not pass (see pytest_runtest_logreport).
    def __init__(self, config: pytest.Config, path: str, results: str | None, stacks: str | None) -> None:
        self.config = config
        self.file = open(path, "ab", buffering=0)
        self.collect_only = bool(config.getoption("collectonly", False))
        self.total_sent = False
        self.results = open(results, "ab", buffering=0) if results else None
        self.tests: dict[str, dict[str, Any]] = {}
        self.records_written = 0
        # json.loads reads both encoders' lines alike (orjson's are compact and UTF-8)
        self.json_line: Callable[[dict[str, Any]], bytes] = _stdlib_json_line
        self.stacks = _arm_stack_dump(stacks) if stacks else None
        if self.stacks is not None:
            _write(self.file, b"d\n")

    def _collected(self, n: int) -> None:
        if not self.total_sent:
            self.total_sent = True
            _write(self.file, b"c %d\n" % n)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._collected(len(session.items))
        if self.collect_only:
            chunk: list[str] = []
            size = 0
            for item in session.items:
                line = "i " + encode_basestring_ascii(item.nodeid) + "\n"
                chunk.append(line)
                size += len(line)
                if size >= COLLECTED_CHUNK_BYTES:
                    _write(self.file, "".join(chunk).encode("ascii"))
                    chunk, size = [], 0
            _write(self.file, "".join(chunk).encode("ascii"))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: Sequence[str]) -> None:
        self._collected(len(ids))

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        _write(self.file, b"x %d\n" % len(items))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed and self.results is not None:
            record = {"nodeid": report.nodeid, "outcome": "failed", "longrepr": _capped(report.longreprtext)}
            _write(self.results, self.json_line({"collector": record}))

    def pytest_runtest_logstart(self, nodeid: str, location: object) -> None:
        _write(self.file, f"s {time.time():.3f} {encode_basestring_ascii(nodeid)}\n".encode("ascii"))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        nodeid = report.nodeid  # a property: read once
        when = report.when
        if self.results is not None:
            test = self.tests.get(nodeid)
            if test is None:
                test = self.tests[nodeid] = {"nodeid": nodeid, "outcome": "passed"}
            # the test's outcome as pytest-json-report computes it: the last category that is
            # not a pass. A passed report that is no xpass has category "passed", "" or a
            # plugin's own ("subtests passed"), never one of _OUTCOMES: no need to ask the hook
            if not report.passed or hasattr(report, "wasxfail"):
                category = self.config.hook.pytest_report_teststatus(report=report, config=self.config)[0]
                if category in _OUTCOMES:  # not "subtests passed" and the like
                    test["outcome"] = category
            earlier = test.get(when)
            if earlier is None or report.failed or earlier["outcome"] != "failed":
                # a failed subtest's stage (same node id, "call") is not replaced by a later passing one
                test[when] = _stage(report)
        if when == "teardown":
            if self.results is not None:
                _write(self.results, self.json_line({"test": self.tests.pop(nodeid)}))
                self.records_written += 1
                if self.records_written == ORJSON_AFTER_RECORDS:
                    self.json_line = _orjson_line_encoder() or _stdlib_json_line
            _write(self.file, ("t " + encode_basestring_ascii(nodeid) + "\n").encode("ascii"))

    def pytest_warning_recorded(self, warning_message: Any, when: str, nodeid: str, location: object) -> None:
        record = {
            "category": warning_message.category.__name__,
            "message": _capped(str(warning_message.message)),
            "filename": warning_message.filename,
            "lineno": warning_message.lineno,
            "nodeid": nodeid,
            "when": when,
        }
        _write(self.file, b"w " + self.json_line(record))

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        _disarm_stack_dump(self.stacks)
        if self.results is not None:
            self.results.close()
        self.file.close()


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("mcp_events", None)
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
    writer = _EventWriter(config, path, config.getoption("mcp_results", None), config.getoption("mcp_stacks", None))
    config.pluginmanager.register(writer, "pytest-mcp-events")
