"""Smoke test of an installed pytest-mcp-server (a wheel or sdist install, not the checkout).

    python scripts/smoke_installed.py path/to/examples

Run it with the interpreter of the environment under test, on Linux, macOS or Windows;
the console script is taken from that environment's scripts directory
(``bin``/``Scripts``), and that environment needs pytest (the demo project's tests run
with it). ``examples`` is the checkout's ``examples/`` directory (``reports/demo.junit.xml``
and ``demo_project/``). Checks, in order, and stops at the first failure with exit status
1 and a line saying what failed:

1. ``pytest-mcp-server --version`` prints ``pytest-mcp-server <version>``;
2. ``pytest-mcp-server summarize DEMO`` exits 1 (the demo has failures) and its first line
   is the verdict ``FAILED 3 failed, 6 passed, 2 errors, 2 skipped, 1 xfailed in ...``;
3. the native backend is the one in use: ``engine.native_available()`` is True, backend
   ``auto`` resolves to ``native``, and the package and its extension are imported from
   the environment, not from a source checkout on ``sys.path``; the extension exports
   exactly the functions its stub (``engine/_native.pyi``) declares (no test-only
   function ships);
4. without the ``bench`` extra (rich not importable), ``pytest-mcp-server bench reports``
   exits 2 and names the install command;
5. the server over stdio, driven by the MCP SDK's own client: ``execute_tests`` on a copy
   of the demo project answers, in the default answer view (what an agent's model
   reads), status ``failed`` with its exact counts and a text that starts with the
   ``FAILED`` verdict, the same text as the structured content's ``answer``; then
   ``execute_tests`` with ``timeout_s`` on a test that starts a grandchild ignoring
   SIGTERM and a process that left the run's process group and tree (a new session on
   POSIX, a detached process on Windows) is a ``timeout`` tool error, and afterwards
   none of those processes runs (psutil).

Used by ``.ci/run`` (Linux), ``scripts/check_wheel`` (Linux, Python 3.11-3.13),
``.github/workflows/ci.yml`` (Linux, macOS, Windows) and
``.github/workflows/release.yml`` (every built wheel on its own platform).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any, NoReturn

VERDICT = "FAILED 3 failed, 6 passed, 2 errors, 2 skipped, 1 xfailed in "
BENCH_HINT = "pip install rich"
DEMO_COUNTS = {"total": 14, "passed": 5, "failed": 3, "errors": 2, "skipped": 2, "xfailed": 1, "xpassed": 1}
"""The demo project's counts as the default answer view gives them (``counts``: ``total``
and the non-zero counts; each test once, by its worst outcome)."""
CALL_TIMEOUT_S = 120
"""Seconds any one step may take before the smoke test fails (a hang bound, not a speed check)."""
RUN_TIMEOUT_S = 5
"""``timeout_s`` of the run that must time out."""

# A test that starts a grandchild ignoring SIGTERM and, through a process that exits, one
# that left the run's process group and tree; each notes its pid in $SMOKE_MARKS.
HANGING_TEST = '''
import os, subprocess, sys, time

MARKS = os.environ["SMOKE_MARKS"]
CHILD = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
if sys.argv[1] == "leave":
    # start a process out of the run's group and tree, then exit: it is re-parented
    if sys.platform == "win32":
        flags = subprocess.DETACHED_PROCESS | subprocess.CREATE_NEW_PROCESS_GROUP
        subprocess.Popen([sys.executable, "-c", sys.argv[3]], creationflags=flags)
    else:
        subprocess.Popen([sys.executable, "-c", sys.argv[3]], start_new_session=True)
    sys.exit(0)
with open(os.path.join(sys.argv[2], "child-%d.pid" % os.getpid()), "w") as f:
    f.write(str(os.getpid()))
time.sleep(300)
"""
ESCAPEE = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(os.path.join(os.environ["SMOKE_MARKS"], "child-%d.pid" % os.getpid()), "w") as f:
    f.write(str(os.getpid()))
time.sleep(300)
"""


def test_hangs_with_children():
    subprocess.Popen([sys.executable, "-c", CHILD, "stubborn", MARKS])
    subprocess.Popen([sys.executable, "-c", CHILD, "leave", MARKS, ESCAPEE])
    while len(os.listdir(MARKS)) < 2:
        time.sleep(0.05)
    time.sleep(300)
'''


def _fail(what: str) -> NoReturn:
    print(f"smoke_installed: FAILED: {what}", file=sys.stderr)
    sys.exit(1)


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=CALL_TIMEOUT_S)


def _alive(pids: list[int]) -> list[int]:
    import psutil

    alive = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
                alive.append(pid)
        except psutil.NoSuchProcess:
            pass
    return alive


def _marked_pids(marks: Path) -> list[int]:
    return [int(text) for path in marks.glob("child-*.pid") if (text := path.read_text().strip())]


async def _calls(exe: str, demo: Path, hanging: Path, artifacts: Path, marks: Path) -> tuple[Any, Any]:
    """The two ``execute_tests`` calls, each through a server of its own over stdio."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"} | {"SMOKE_MARKS": str(marks)}
    results = []
    for root, arguments in ((demo, {}), (hanging, {"timeout_s": RUN_TIMEOUT_S})):
        args = ["--root", str(root), "--python", sys.executable, "--artifacts-dir", str(artifacts)]
        params = StdioServerParameters(command=exe, args=args, env=env)
        with anyio.fail_after(CALL_TIMEOUT_S):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                results.append(await session.call_tool("execute_tests", arguments))
    return results[0], results[1]


def check_server(exe: str, examples: Path) -> None:
    """Step 5 (see the module docstring)."""
    import anyio

    if importlib.util.find_spec("pytest") is None:
        _fail(f"pytest is not installed in {sys.prefix}: the demo project's tests need it (pip install pytest)")
    with tempfile.TemporaryDirectory(prefix="smoke-installed-") as tmp:
        work = Path(tmp)
        demo = work / "demo_project"
        shutil.copytree(examples / "demo_project", demo)
        hanging = work / "hanging"
        (hanging / "tests").mkdir(parents=True)
        (hanging / "tests" / "test_hang.py").write_text(textwrap.dedent(HANGING_TEST), encoding="utf-8")
        marks = work / "marks"
        marks.mkdir()
        try:
            failing, timed_out = anyio.run(_calls, exe, demo, hanging, work / "artifacts", marks)
        except TimeoutError:
            _fail(f"the server did not answer within {CALL_TIMEOUT_S} s")
        if failing.is_error or failing.structured_content is None:
            _fail(f"execute_tests on the demo project failed: {failing.content}")
        answer = failing.structured_content
        text = failing.content[0].text if failing.content else ""
        if answer.get("status") != "failed" or answer.get("counts") != DEMO_COUNTS:
            _fail(f"execute_tests on the demo project: status {answer.get('status')}, counts {answer.get('counts')}")
        if not text.startswith("FAILED 3 failed, 5 passed, 2 errors"):
            _fail(f"execute_tests' text does not start with the verdict: {text[:200]!r}")
        if answer.get("answer") != text:
            _fail(f"the structured content's answer is not the text: {str(answer.get('answer'))[:200]!r}")
        print(f"ok: execute_tests over stdio: {text.splitlines()[0]}")

        pids = _marked_pids(marks)
        try:
            kind = (timed_out.structured_content or {}).get("kind")
            if not timed_out.is_error or kind != "timeout":
                _fail(f"execute_tests with timeout_s={RUN_TIMEOUT_S} was not a timeout error: {timed_out.content}")
            if len(pids) != 2:
                _fail(f"the hanging test noted {len(pids)} processes, not 2 (its grandchild and the escapee)")
            deadline = time.monotonic() + 10
            while _alive(pids) and time.monotonic() < deadline:
                time.sleep(0.1)
            if _alive(pids):
                _fail(f"processes of the timed-out run still run: {_alive(pids)}")
        finally:
            import psutil

            for pid in _alive(pids):
                psutil.Process(pid).kill()
        print("ok: a timed-out run's grandchild (ignoring SIGTERM) and escapee are gone")


def main(argv: list[str]) -> int:
    """Run the checks on the examples directory ``argv[0]``; returns 0 when all pass
    (exits 1 otherwise)."""
    if len(argv) != 1 or not (Path(argv[0]) / "reports" / "demo.junit.xml").is_file():
        _fail("usage: smoke_installed.py EXAMPLES_DIR (the checkout's examples/, with reports/demo.junit.xml)")
    examples = Path(argv[0]).resolve()
    demo = str(examples / "reports" / "demo.junit.xml")
    scripts = sysconfig.get_path("scripts")
    exe = shutil.which("pytest-mcp-server", path=scripts)
    if exe is None:
        _fail(f"the console script pytest-mcp-server is not in {scripts}")

    proc = _run([exe, "--version"])
    if proc.returncode != 0 or not proc.stdout.startswith("pytest-mcp-server "):
        _fail(f"--version exited {proc.returncode}: {proc.stdout!r} {proc.stderr!r}")
    print(f"ok: {proc.stdout.strip()}")

    proc = _run([exe, "summarize", demo])
    first = proc.stdout.splitlines()[0] if proc.stdout else ""
    if proc.returncode != 1 or not first.startswith(VERDICT):
        _fail(f"summarize {demo} exited {proc.returncode} (expected 1) with {first!r}; stderr {proc.stderr!r}")
    print(f"ok: summarize exits 1: {first}")

    from pytest_mcp_server import engine

    site_dirs = {Path(sysconfig.get_paths()[key]).resolve() for key in ("purelib", "platlib")}
    native_spec = importlib.util.find_spec("pytest_mcp_server.engine._native")
    origin = Path(native_spec.origin).resolve() if native_spec and native_spec.origin else None
    if not engine.native_available() or engine.resolve_backend("auto") != "native":
        _fail(f"the native backend is not in use (extension found at {origin})")
    for path in (Path(engine.__file__).resolve(), origin):
        if path is None or not site_dirs & set(path.parents):
            _fail(f"{path} is not in the environment's site-packages: a source checkout shadows the install")
    print(f"ok: native backend in use ({origin})")
    from pytest_mcp_server.engine import _native

    stub = Path(engine.__file__).with_name("_native.pyi")
    declared = {
        node.name for node in ast.parse(stub.read_text(encoding="utf-8")).body if isinstance(node, ast.FunctionDef)
    }
    exported = {name for name in dir(_native) if not name.startswith("_")}
    if not declared or exported != declared:
        _fail(f"the extension exports {sorted(exported)}, its stub {stub} declares {sorted(declared)}")
    print(f"ok: the extension exports {sorted(exported)} only, as its stub declares")

    if importlib.util.find_spec("rich") is None:
        proc = _run([exe, "bench", "reports"])
        if proc.returncode != 2 or BENCH_HINT not in proc.stderr:
            _fail(f"bench without the extra exited {proc.returncode}: {proc.stderr!r}")
        print("ok: bench without the extra exits 2 naming the install command")
    else:
        print("note: rich is installed here; the bench-without-extra check was not run")

    check_server(exe, examples)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
