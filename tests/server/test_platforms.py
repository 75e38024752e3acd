"""The server where POSIX-only parts of Python are missing, as on Windows: every module of
the package imports, and a real server answers real calls.

The server runs in a Python process that first hides what Windows lacks
(``WINDOWS_LIKE``): the modules ``fcntl``, ``termios``, ``resource``, ``pwd``, ``grp``,
``pty`` and ``tty`` cannot be imported by the package's modules (``builtins.__import__``
refuses them to an importer of the package, also when they are in ``sys.modules``, which
a meta-path finder would not see; third-party libraries keep their own platform code),
and the
signals ``SIGHUP``, ``SIGUSR1``, ``SIGUSR2``, ``SIGQUIT``, ``SIGALRM``, ``SIGKILL`` and the
functions ``os.killpg``, ``os.getpgid``, ``os.setsid``, ``os.fork``, ``os.pread`` are
deleted. With those hidden it imports every module of the package (``pkgutil``) and the
two plugin files loaded into pytest. Then ``SIGKILL`` and the ``os`` functions come back
(the calls run on Linux, where the POSIX path of ``run.process`` and psutil's kill use
them; on Windows psutil ends a process with ``TerminateProcess``), while ``SIGHUP`` and
``SIGUSR1`` stay hidden for the whole session: the stop signals and the timeout's stack
dump are looked up at run time too. The SDK's stdio client then makes two real calls:
the demo project's failing run, and a run that times out with a grandchild that ignores
SIGTERM and a great-grandchild that left the process group (``setsid``): both are gone
after the answer. ``sys.platform`` stays ``linux`` (the standard library reads it at
import), so the Windows branches themselves run only on Windows, in the workflow's smoke
test (``scripts/smoke_installed.py``).
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path

import anyio
from helpers.server_support import Project, default_view, pid_alive, run, text_of, wait_until_gone
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo_project"

WINDOWS_LIKE = r"""
import builtins, importlib, importlib.util, os, pkgutil, signal, sys
from pathlib import Path

POSIX_ONLY_MODULES = ("fcntl", "termios", "resource", "pwd", "grp", "pty", "tty")
HIDDEN_SIGNALS = ("SIGHUP", "SIGUSR1", "SIGUSR2", "SIGQUIT", "SIGALRM", "SIGKILL")
HIDDEN_OS = ("killpg", "getpgid", "setsid", "fork", "pread")
KEPT_HIDDEN = ("SIGHUP", "SIGUSR1")

real_import = builtins.__import__

def import_as_on_windows(name, globals=None, locals=None, fromlist=(), level=0):
    # an import statement of the package's code (the plugin files' too) cannot reach a
    # POSIX-only module, even one already in sys.modules; third-party libraries keep
    # their own platform code (psutil's Linux backend imports resource, the SDK's stdio fcntl)
    importer = (globals or {}).get("__name__") or ""
    if level == 0 and name.partition(".")[0] in POSIX_ONLY_MODULES and importer.startswith("pytest_mcp_server"):
        raise ModuleNotFoundError(f"No module named {name!r} (hidden from {importer}: as on Windows)", name=name)
    return real_import(name, globals, locals, fromlist, level)

builtins.__import__ = import_as_on_windows
saved = {name: getattr(signal, name) for name in HIDDEN_SIGNALS}
saved_os = {name: getattr(os, name) for name in HIDDEN_OS}
for name in HIDDEN_SIGNALS:
    delattr(signal, name)
for name in HIDDEN_OS:
    delattr(os, name)

import pytest_mcp_server

names = [m.name for m in pkgutil.walk_packages(pytest_mcp_server.__path__, "pytest_mcp_server.")]
for name in names:
    if not name.endswith("__main__"):  # runs the console script
        importlib.import_module(name)
plugin_dir = Path(pytest_mcp_server.__file__).parent / "run" / "pytest_plugin"
plugins = sorted(plugin_dir.glob("*.py"))
sys.path.insert(0, str(plugin_dir))  # as on the child's PYTHONPATH: the plugins import their shared module by name
for path in plugins:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
sys.path.remove(str(plugin_dir))
print(f"windows-like: imported {len(names)} modules and {len(plugins)} plugin files", file=sys.stderr, flush=True)

for name, value in saved.items():
    if name not in KEPT_HIDDEN:
        setattr(signal, name, value)
for name, value in saved_os.items():
    setattr(os, name, value)
from pytest_mcp_server.cli import main

sys.exit(main(sys.argv[1:]))
"""

ESCAPEE = "hang/test_hang.py::test_hangs_with_an_escapee"


def _windows_like_server(root: Path, artifacts: Path, marks: Path) -> StdioServerParameters:
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)
    env["PYTEST_MCP_TEST_MARKS"] = str(marks)
    args = ["-c", WINDOWS_LIKE, "--root", str(root), "--artifacts-dir", str(artifacts)]
    return StdioServerParameters(command=sys.executable, args=args, env=env)


def test_every_module_imports_without_posix_only_parts_and_a_real_call_answers(tmp_path):
    demo = tmp_path / "demo"
    shutil.copytree(DEMO, demo)
    log = tmp_path / "server.log"

    async def body():
        with log.open("w") as errlog:
            params = _windows_like_server(demo, tmp_path / "artifacts", tmp_path)
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                return await client.call_tool("execute_tests", {})

    result = run(body)
    assert not result.is_error, result.content
    answer = default_view(result)  # as an agent reads it
    assert answer["status"] == "failed"
    counts = answer["counts"]
    assert counts == {"total": 14, "passed": 5, "failed": 3, "errors": 2, "skipped": 2, "xfailed": 1, "xpassed": 1}
    logged = log.read_text()
    assert "windows-like: imported" in logged, logged
    # what the OS lacks is said at start, in the log, and never in an answer
    assert "no SIGUSR1 on this OS" in logged, logged
    assert "SIGUSR1" not in text_of(result)


def test_a_timed_out_run_leaves_no_process_without_posix_only_signals(tmp_path):
    """The timeout path with no SIGUSR1 (no stack dump asked for): pytest, its grandchild
    that ignores SIGTERM and the great-grandchild that left the group are all gone."""
    slow = Project("slow", tmp_path)

    async def body():
        with open(os.devnull, "w") as errlog:
            params = _windows_like_server(slow.root, slow.artifacts, slow.marks)
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                return await client.call_tool("execute_tests", {"node_ids": [ESCAPEE], "timeout_s": 4})

    try:
        result = anyio.run(body)
        assert result.is_error
        assert default_view(result)["kind"] == "timeout"
        pids = [mark["pid"] for mark in slow.pytest_marks()] + slow.child_pids()
        assert len(pids) == 3, pids  # pytest, the grandchild, the escapee
        assert wait_until_gone(pids, timeout=10) == []
    finally:
        for pid in [mark["pid"] for mark in slow.pytest_marks()] + slow.child_pids():
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
