"""pytest plugin that pytest-mcp-server loads into the pytest runs it starts.

Not for users: the server adds this directory to the child's PYTHONPATH and passes
``-p pytest_mcp_server_events --mcp-events=FILE``. It imports nothing but pytest, so it
works in any project interpreter (Python 3.8+, pytest 7+), whatever else is installed.

It appends one line per event to FILE (line-buffered, so the server can follow it while
the run goes on):

* ``c N``: N tests collected (after -m/-k/--lf deselection; with xdist, a worker's count);
* ``t``: one test finished (its teardown report arrived; with xdist, in the controller);
* ``i "<node id>"``: a collected node id, JSON-encoded (only with --collect-only).

In xdist workers it does nothing: the controller sees every report.

On Linux it also guards against the server's sudden death (SIGKILL, a crash): pytest
asks the kernel for SIGHUP when its parent dies (``PR_SET_PDEATHSIG``) and then kills its
own process group, grandchildren included, and the run's processes that left the group
(they carry the run's ``PYTEST_MCP_SERVER_RUN`` token), so no orphan runs on. Only when
pytest leads its own process group (the server starts it so), never in xdist workers.
"""

# Annotations stay unevaluated strings, so the ``X | None`` spellings below also work on Python 3.8.
from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Sequence
from types import FrameType

import pytest

PR_SET_PDEATHSIG = 1


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


class _EventWriter:
    def __init__(self, path: str, collect_only: bool) -> None:
        self.file = open(path, "a", encoding="utf-8", buffering=1)
        self.collect_only = collect_only
        self.total_sent = False

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

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown":
            self.file.write("t\n")

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.file.close()


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("mcp_events", None)
    if not path or hasattr(config, "workerinput"):
        return
    _guard_parent_death()
    config.pluginmanager.register(_EventWriter(path, config.getoption("collectonly", False)), "pytest-mcp-events")
