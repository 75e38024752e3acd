"""The server under load and faults, over real stdio: no pytest process may outlive its
run, and the server keeps serving.

Every server here is the installed console script ``pytest-mcp-server --root DIR``,
started by the MCP SDK's own stdio client (``mcp.client.stdio.stdio_client`` +
``ClientSession``); the projects are written into a temporary directory by the test.
Each project's ``conftest.py`` notes the pid (and parent pid: the server) of every pytest
process, and the tests' grandchildren note theirs, so "no process left" is checked
pid by pid with psutil (``pid_alive``: a zombie counts as gone).

Covered: 8 clients at once each running a suite while one of them disconnects mid-run;
one server with two runs, one cancelled while the other finishes; SIGTERM to the server
mid-run with two runs whose grandchildren ignore SIGTERM (SIGTERM with one run, SIGKILL
to the server and a great-grandchild that left the process group with ``setsid`` are in
test_server_safety.py); a test that prints 1 GB to the terminal and one whose
1 GB of captured output ends up in the report (the server's peak RSS stays flat); the
project's interpreter missing, not executable, broken, hanging or removed mid-session.
Waits use generous timeouts (hang bounds, not speed assertions). The two longest checks
(1 GB of captured output into the report, an interpreter that never answers the
60 s probe) run only with ``--soak``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from helpers import strategies
from helpers.server_support import TYPED, pid_alive, wait_for, wait_until_gone
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

SERVER = Path(sys.executable).with_name("pytest-mcp-server")
# Over a minute each: run with --soak (docs/RELIABILITY.md), not in the quick suite.
soak_only = pytest.mark.skipif(not strategies.SOAK_MINUTES, reason="long (over a minute): runs with --soak=MINUTES")
pytestmark = pytest.mark.skipif(
    not SERVER.exists(), reason=f"the console script is not installed next to {sys.executable}"
)

CONFTEST = """
import json, os, time
_marks = os.environ.get("FAULTS_MARKS")
if _marks:
    with open(os.path.join(_marks, "pytest-%d.json" % os.getpid()), "w") as _f:
        json.dump({"pid": os.getpid(), "ppid": os.getppid(), "pgid": os.getpgid(0), "start": time.time()}, _f)
"""

SUITE = """
import time, pytest

@pytest.mark.parametrize("i", range(6))
def test_pass(i):
    time.sleep(0.2)

def test_fail():
    assert 1 + 1 == 3

@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")

def test_error(broken):
    pass

def test_skip():
    pytest.skip("not today")

@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False
"""
SUITE_COUNTS = {"total": 10, "passed": 6, "failed": 1, "errors": 1, "skipped": 1, "xfailed": 1}
"""The suite's counts as an answer gives them: ``total`` and the non-zero counts."""

# Grandchildren: "stubborn" ignores SIGTERM and notes its pid.
HANG = '''
import os, subprocess, sys, time

MARKS = os.environ.get("FAULTS_MARKS", "")
CHILD = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
marks = sys.argv[2]
def note():
    with open(os.path.join(marks, "child-%d.pid" % os.getpid()), "w") as f:
        f.write(str(os.getpid()))
note()
time.sleep(300)
"""

def test_hangs_with_stubborn_children():
    subprocess.Popen([sys.executable, "-c", CHILD, "stubborn", MARKS])
    time.sleep(300)
'''

LOUD = """
import os

GB = 1 << 30
CHUNK = (b"y" * 1023 + b"\\n") * 1024  # 1 MB

def test_prints_1_gb_to_the_terminal(capsys):
    with capsys.disabled():  # straight to pytest's stdout: the pipe the server reads
        for _ in range(GB // len(CHUNK)):
            os.write(1, CHUNK)

def test_fails_after_printing_1_gb_captured():
    # captured by pytest: the 1 GB ends up in the report the server summarises
    fd = os.dup(1)
    try:
        for _ in range(GB // len(CHUNK)):
            os.write(1, CHUNK)
    finally:
        os.close(fd)
    assert False, "printed 1 GB"
"""


class Project:
    """A project written into ``tmp`` (its own marks and artifacts directories)."""

    def __init__(self, tmp: Path, name: str = "proj") -> None:
        self.root = tmp / name
        (self.root / "tests").mkdir(parents=True)
        (self.root / "hang").mkdir()
        (self.root / "loud").mkdir()
        (self.root / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
        (self.root / "conftest.py").write_text(CONFTEST)
        (self.root / "tests" / "test_suite.py").write_text(textwrap.dedent(SUITE))
        (self.root / "hang" / "test_hang.py").write_text(textwrap.dedent(HANG))
        (self.root / "loud" / "test_loud.py").write_text(textwrap.dedent(LOUD))
        self.marks = tmp / f"{name}-marks"
        self.marks.mkdir()
        self.artifacts = tmp / f"{name}-artifacts"

    def params(self, *extra: str, marks: Path | None = None) -> StdioServerParameters:
        env = dict(os.environ)
        env.pop("VIRTUAL_ENV", None)
        env["FAULTS_MARKS"] = str(marks or self.marks)
        args = ["--root", str(self.root), "--artifacts-dir", str(self.artifacts), *extra]
        return StdioServerParameters(command=str(SERVER), args=args, env=env)

    def pytest_marks(self, marks: Path | None = None) -> list[dict]:
        out = []
        for path in sorted((marks or self.marks).glob("pytest-*.json")):
            try:
                out.append(json.loads(path.read_text()))
            except ValueError:  # being written
                pass
        return out

    def child_pids(self, marks: Path | None = None) -> list[int]:
        return [int(t) for p in (marks or self.marks).glob("child-*.pid") if (t := p.read_text().strip())]


@asynccontextmanager
async def session(params: StdioServerParameters):
    """An initialised SDK ``ClientSession`` over the server's stdio."""
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                yield s


def _reap_leftovers(pids: list[int]) -> None:
    """After a failed assertion, do not leave test processes behind on the machine."""
    for pid in pids:
        if pid_alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def run(body, timeout: float):
    """Run the async ``body`` on asyncio; fail (not hang) after ``timeout`` seconds."""

    async def bounded():
        with anyio.fail_after(timeout):
            return await body()

    return anyio.run(bounded)


def counts(result) -> dict:
    """The counts of a run's answer (the default view: ``total`` and the non-zero ones)."""
    assert not result.is_error, result.content
    return dict(result.structured_content["counts"])


def peak_rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))


# --------------------------------------------------------------------------------------
# Load


def test_eight_clients_at_once_while_one_disconnects_mid_run(tmp_path):
    """8 stdio clients (8 servers) run suites at once on the same project; one of them
    drops its connection while its run has stubborn grandchildren: that server and all
    its processes go, the 7 others answer correctly, and nothing is left at the end."""
    project = Project(tmp_path)
    marks = [tmp_path / f"marks-{i}" for i in range(8)]
    for m in marks:
        m.mkdir()
    results: dict[int, object] = {}
    dropped: dict[str, list[int]] = {}

    async def runner(i: int) -> None:
        async with session(project.params(marks=marks[i])) as s:
            results[i] = await s.call_tool("execute_tests", {"node_ids": ["tests"], "timeout_s": 600})

    async def disconnector() -> None:
        m = marks[7]
        async with session(project.params(marks=m)) as s:
            async with anyio.create_task_group() as tg:

                async def call():
                    try:
                        await s.call_tool(
                            "execute_tests", {"node_ids": ["hang/test_hang.py::test_hangs_with_stubborn_children"]}
                        )
                    except Exception:  # the connection goes away
                        pass

                tg.start_soon(call)
                await wait_for(
                    lambda: project.pytest_marks(m) and project.child_pids(m),
                    what="the hanging run and its grandchild",
                    timeout=240,
                )
                dropped["server"] = [project.pytest_marks(m)[0]["ppid"]]
                tg.cancel_scope.cancel()
        # leaving the context closes the server's stdin: the client is gone
        dropped["pids"] = [x["pid"] for x in project.pytest_marks(m)] + project.child_pids(m)

    async def body():
        async with anyio.create_task_group() as tg:
            for i in range(7):
                tg.start_soon(runner, i)
            tg.start_soon(disconnector)

    all_pids: list[int] = []
    try:
        run(body, 900)
        for i in range(7):
            all_pids += [x["ppid"] for x in project.pytest_marks(marks[i])] + [
                x["pid"] for x in project.pytest_marks(marks[i])
            ]
        all_pids += dropped["server"] + dropped["pids"]
        assert wait_until_gone(dropped["server"] + dropped["pids"], timeout=30) == [], (
            "the disconnected client's server or its processes survived"
        )
        for i in range(7):
            assert counts(results[i]) == SUITE_COUNTS, i
        assert wait_until_gone(all_pids, timeout=30) == []
    finally:
        _reap_leftovers(all_pids + [p for m in marks for p in project.child_pids(m)])


def test_one_server_keeps_serving_when_one_of_two_runs_is_cancelled(tmp_path):
    project = Project(tmp_path)

    async def body():
        async with session(project.params("--max-concurrent", "2")) as s:
            done = {}
            async with anyio.create_task_group() as tg:

                async def good():
                    done["good"] = await s.call_tool("execute_tests", {"node_ids": ["tests"]})

                tg.start_soon(good)
                async with anyio.create_task_group() as inner:

                    async def hanging():
                        await s.call_tool(
                            "execute_tests", {"node_ids": ["hang/test_hang.py::test_hangs_with_stubborn_children"]}
                        )

                    inner.start_soon(hanging)
                    await wait_for(lambda: project.child_pids(), what="the stubborn grandchild", timeout=120)
                    inner.cancel_scope.cancel()  # notifications/cancelled for that request only
            after = await s.call_tool("execute_tests", {"node_ids": ["tests/test_suite.py::test_fail"]})
            return done["good"], after

    try:
        good, after = run(body, 600)
        assert counts(good) == SUITE_COUNTS
        assert counts(after)["failed"] == 1
        pids = [m["pid"] for m in project.pytest_marks()] + project.child_pids()
        assert wait_until_gone(pids, timeout=30) == []
    finally:
        _reap_leftovers(project.child_pids())


# --------------------------------------------------------------------------------------
# Faults


def test_sigterm_to_the_server_mid_run_leaves_no_process(tmp_path):
    """Two runs at once, each with a grandchild that ignores SIGTERM; SIGTERM to the
    server: the server exits and every process of both runs is gone."""
    project = Project(tmp_path)

    async def body():
        async with session(project.params("--max-concurrent", "2")) as s:
            async with anyio.create_task_group() as tg:
                for _ in range(2):

                    async def call():
                        try:
                            await s.call_tool(
                                "execute_tests", {"node_ids": ["hang/test_hang.py::test_hangs_with_stubborn_children"]}
                            )
                        except Exception:
                            pass

                    tg.start_soon(call)
                await wait_for(
                    lambda: len(project.pytest_marks()) == 2 and len(project.child_pids()) == 2,
                    what="two runs and their grandchildren",
                    timeout=120,
                )
                server = project.pytest_marks()[0]["ppid"]
                os.kill(server, signal.SIGTERM)
                assert wait_until_gone([server], timeout=30) == [], "the server ignored SIGTERM"
                tg.cancel_scope.cancel()
            return server

    try:
        run(body, 600)
        pids = [m["pid"] for m in project.pytest_marks()] + project.child_pids()
        assert len(pids) == 4
        assert wait_until_gone(pids, timeout=30) == []
    finally:
        _reap_leftovers(project.child_pids())


@pytest.mark.parametrize(
    ("node_id", "status"),
    [
        pytest.param("loud/test_loud.py::test_prints_1_gb_to_the_terminal", "passed", id="terminal"),
        pytest.param(
            "loud/test_loud.py::test_fails_after_printing_1_gb_captured",
            "failed",
            id="captured-into-the-report",
            marks=soak_only,
        ),
    ],
)
def test_a_test_that_prints_1_gb_leaves_the_server_memory_flat(tmp_path, node_id, status):
    project = Project(tmp_path)

    async def body():
        async with session(project.params(*TYPED)) as s:
            warm = await s.call_tool("execute_tests", {"node_ids": ["tests/test_suite.py::test_skip"]})
            server = project.pytest_marks()[0]["ppid"]
            before = peak_rss_kb(server)
            loud = await s.call_tool("execute_tests", {"node_ids": [node_id], "timeout_s": 900})
            return warm, server, before, peak_rss_kb(server), loud

    warm, server, before, after, loud = run(body, 1200)
    assert not warm.is_error
    assert not loud.is_error, loud.content
    res = loud.structured_content
    assert res["status"] == status
    if status == "failed":
        f = res["summary"]["failures"][0]
        assert "printed 1 GB" in f["message"]
        assert res["summary"]["omitted"]["output_bytes"] >= (1 << 30) - (1 << 20)
    assert after - before < 64 * 1024, f"the server's peak RSS grew by {(after - before) // 1024} MB"


# --------------------------------------------------------------------------------------
# The project's interpreter


def _broken(tmp_path: Path, name: str, script: str) -> Path:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return path


BROKEN = [
    pytest.param(lambda t: t / "nowhere" / "python", "missing", id="missing"),
    pytest.param(lambda t: (t / "notexec").write_text("") or (t / "notexec"), "not-executable", id="not-executable"),
    pytest.param(
        lambda t: _broken(t, "crashes", 'echo "Fatal Python error: init_fs_encoding" >&2\nexit 1\n'),
        "exit-1",
        id="fails-to-start",
    ),
    pytest.param(lambda t: _broken(t, "segv", "kill -SEGV $$\n"), "sigsegv", id="segfaults"),
    pytest.param(lambda t: _broken(t, "garbage", "echo 'not json at all'\nexit 0\n"), "garbage", id="prints-garbage"),
    pytest.param(lambda t: t, "directory", id="a-directory"),
]


@pytest.mark.parametrize(("make", "what"), BROKEN)
def test_a_missing_or_broken_interpreter_is_a_clear_error(tmp_path, make, what):
    """The server refuses the option at start (exit 2 with a message) or answers the
    tool call with a clear error naming the interpreter; it never hangs or crashes."""
    project = Project(tmp_path)
    python = make(tmp_path)

    async def body():
        async with session(project.params("--python", str(python))) as s:
            first = await s.call_tool("execute_tests", {"node_ids": ["tests/test_suite.py::test_fail"]})
            tools = await s.list_tools()
            return first, tools

    try:
        first, tools = run(body, 180)
    except Exception as exc:  # the server refused to start: it must have said why
        import subprocess

        proc = subprocess.run(
            [str(SERVER), "--root", str(project.root), "--python", str(python)],
            input="",
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 2, (exc, proc)
        assert "--python" in proc.stderr, proc.stderr
        return
    assert first.is_error, first.content
    detail = first.structured_content
    assert detail["kind"] == "pytest_missing", detail
    assert str(python) in detail["answer"] and "--python" in detail["answer"]
    assert len(tools.tools) == 3  # still serving
    assert project.pytest_marks() == []


@soak_only
def test_a_hanging_interpreter_is_a_clear_error(tmp_path):
    """An interpreter that never answers the probe: a ``pytest_missing`` error after the
    probe timeout (60 s), and the server keeps serving."""
    project = Project(tmp_path)
    python = _broken(tmp_path, "hangs", "sleep 600\n")

    async def body():
        async with session(project.params("--python", str(python))) as s:
            first = await s.call_tool("execute_tests", {"node_ids": ["tests/test_suite.py::test_fail"]})
            return first, await s.list_tools()

    first, tools = run(body, 240)
    assert first.is_error and first.structured_content["kind"] == "pytest_missing"
    assert str(python) in first.structured_content["answer"]
    assert len(tools.tools) == 3


def test_the_interpreter_removed_mid_session_is_a_clear_error_and_comes_back(tmp_path):
    """A venv deleted between two runs: the second call is a clear error (not a crash or
    a hang); restored, the third call runs again."""
    import venv

    project = Project(tmp_path)
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True, system_site_packages=True).create(env_dir)
    python = env_dir / "bin" / "python"
    moved = tmp_path / "venv-moved"

    async def body():
        async with session(project.params("--python", str(python))) as s:
            first = await s.call_tool("execute_tests", {"node_ids": ["tests/test_suite.py::test_fail"]})
            env_dir.rename(moved)
            second = await s.call_tool("execute_tests", {"node_ids": ["tests/test_suite.py::test_fail"]})
            moved.rename(env_dir)
            third = await s.call_tool("execute_tests", {"node_ids": ["tests/test_suite.py::test_fail"]})
            return first, second, third

    first, second, third = run(body, 300)
    assert counts(first)["failed"] == 1
    assert second.is_error, second.content
    assert str(python) in second.structured_content["answer"], second.structured_content
    assert counts(third)["failed"] == 1
