"""pytest plugin that pytest-mcp-server loads into the pytest runs it starts.

Not for users: the server adds this directory to the child's PYTHONPATH and passes
``-p pytest_mcp_server_events --mcp-events=FILE`` (and, for a test run,
``--mcp-results=FILE --mcp-stacks=FILE``). It imports nothing but pytest and the
standard library, so it works in any project interpreter (Python 3.8+, pytest 7+),
whatever else is installed.

It appends one line per event to the events FILE (line-buffered, so the server can
follow it while the run goes on):

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
when pytest never writes its own (a crash, a timeout). Long texts are capped
(``TEXT_CAP``). With ``--mcp-stacks=FILE``, ``faulthandler`` dumps every thread's stack
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
from collections.abc import Sequence
from types import FrameType
from typing import IO, Any

import pytest

PR_SET_PDEATHSIG = 1
TEXT_CAP = 65536
"""Characters kept of a warning message, a longrepr or captured output in the files
written here (the head and the tail; the report engine cuts further)."""
_OUTCOMES = ("failed", "error", "skipped", "xfailed", "xpassed")
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
    def __init__(self, config: pytest.Config, path: str, results: str | None, stacks: str | None) -> None:
        self.config = config
        self.file = open(path, "a", encoding="utf-8", buffering=1)
        self.collect_only = bool(config.getoption("collectonly", False))
        self.total_sent = False
        self.results = open(results, "a", encoding="utf-8") if results else None
        self.tests: dict[str, dict[str, Any]] = {}
        self.stacks = _arm_stack_dump(stacks) if stacks else None
        if self.stacks is not None:
            self.file.write("d\n")

    def _collected(self, n: int) -> None:
        if not self.total_sent:
            self.total_sent = True
            self.file.write(f"c {n}\n")

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._collected(len(session.items))
        if self.collect_only:
            write = self.file.write
            for item in session.items:
                write("i " + json.dumps(item.nodeid) + "\n")
            self.file.flush()

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: Sequence[str]) -> None:
        self._collected(len(ids))

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        self.file.write(f"x {len(items)}\n")

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed and self.results is not None:
            record = {"nodeid": report.nodeid, "outcome": "failed", "longrepr": _capped(report.longreprtext)}
            self.results.write(json.dumps({"collector": record}) + "\n")
            self.results.flush()

    def pytest_runtest_logstart(self, nodeid: str, location: object) -> None:
        self.file.write(f"s {time.time():.3f} {json.dumps(nodeid)}\n")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.results is not None:
            # the test's outcome as pytest-json-report computes it: the last category that is not a pass
            test = self.tests.setdefault(report.nodeid, {"nodeid": report.nodeid, "outcome": "passed"})
            category = self.config.hook.pytest_report_teststatus(report=report, config=self.config)[0]
            if category in _OUTCOMES:  # not "subtests passed" and the like
                test["outcome"] = category
            if report.failed or test.get(report.when, {}).get("outcome") != "failed":
                # a failed subtest's stage (same node id, "call") is not replaced by a later passing one
                test[report.when] = _stage(report)
        if report.when == "teardown":
            if self.results is not None:
                self.results.write(json.dumps({"test": self.tests.pop(report.nodeid)}) + "\n")
                self.results.flush()
            self.file.write(f"t {json.dumps(report.nodeid)}\n")

    def pytest_warning_recorded(self, warning_message: Any, when: str, nodeid: str, location: object) -> None:
        record = {
            "category": warning_message.category.__name__,
            "message": _capped(str(warning_message.message)),
            "filename": warning_message.filename,
            "lineno": warning_message.lineno,
            "nodeid": nodeid,
            "when": when,
        }
        self.file.write("w " + json.dumps(record) + "\n")

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
