"""The HTTP transport under load and faults: no pytest process may outlive its run.

Covered: 8 clients at once (both eras) against ``--max-concurrent 2``: every answer
right, never more than 2 pytest processes alive, nothing left running; a client process
killed mid-run (its connection drops without a goodbye) in both eras; SIGTERM to the
server with a run of each era in flight. The fixture project's conftest notes the pid of
every pytest process and its tests note their grandchildren's, so "no process left" is
checked pid by pid in /proc (a zombie counts as gone). Waits are hang bounds, not speed
assertions.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import anyio
from helpers.http_support import connect_http, http_server, wait_exit
from helpers.server_support import MODES, TYPED, Project, pid_alive, run, still_serving, wait_for, wait_until_gone
from mcp.shared.exceptions import MCPError

from pytest_mcp_server.domain.tools import ExecuteResult

HANG = "hang/test_hang.py::test_hangs_with_children"
TESTS = Path(__file__).resolve().parents[1]  # the helpers package is below it

# A client in its own process, so that it can be killed without closing anything.
CLIENT = f"""
import sys, anyio
sys.path.insert(0, {str(TESTS)!r})
from helpers.http_support import connect_http

async def main():
    async with connect_http(sys.argv[1], sys.argv[2]) as client:
        await client.call_tool("execute_tests", {{"node_ids": [{HANG!r}]}})

anyio.run(main)
"""


def all_pids(project: Project) -> list[int]:
    return [m["pid"] for m in project.pytest_marks()] + project.child_pids()


def started_with_children(project: Project, runs: int = 1) -> bool:
    return len(project.pytest_marks()) == runs and len(project.child_pids()) == 2 * runs


def test_eight_clients_share_max_concurrent_runs_and_leave_nothing_running(tmp_path):
    project = Project("slow", tmp_path)

    async def body(url):
        results: dict[int, ExecuteResult] = {}
        most_alive = 0

        async def one_client(i: int) -> None:
            async with connect_http(url, MODES[i % 2]) as client:
                answer = await client.call_tool("execute_tests", {"node_ids": ["tests/test_slow.py"]})
                results[i] = ExecuteResult.model_validate(answer.structured_content)

        async with anyio.create_task_group() as tg:
            for i in range(8):
                tg.start_soon(one_client, i)
            while len(results) < 8:
                most_alive = max(most_alive, sum(pid_alive(m["pid"]) for m in project.pytest_marks()))
                await anyio.sleep(0.02)
        return results, most_alive

    with http_server(project, "--max-concurrent", "2", *TYPED, env={"SLOW_STEP_S": "0.05"}) as server:
        results, most_alive = run(body, server.url)
        assert server.proc.poll() is None
    assert len(results) == 8
    for result in results.values():
        assert result.status == "passed" and result.summary.counts.passed == 9
    assert len(project.pytest_marks()) == 8 and most_alive <= 2
    assert len(project.child_pids()) == 8  # each run leaked a child on purpose
    assert wait_until_gone(all_pids(project), timeout=30) == []


def test_a_client_killed_mid_run_gets_its_run_killed_in_both_eras(tmp_path):
    project = Project("slow", tmp_path)

    async def serves_after(url: str, mode: str) -> None:
        async with connect_http(url, mode) as client:
            await still_serving(client, mode)

    with http_server(project) as server:
        for mode in MODES:
            project.clear_marks()
            client = subprocess.Popen([sys.executable, "-c", CLIENT, server.url, mode])
            try:
                run(wait_for, lambda: started_with_children(project), 60.0, "pytest and its children")
            finally:
                client.kill()  # no DELETE, no cancellation: the connection just drops
                client.wait()
            assert wait_until_gone(all_pids(project), timeout=20) == [], mode
            run(serves_after, server.url, mode)
        assert server.proc.poll() is None


def test_sigterm_mid_run_stops_the_server_and_kills_every_run(tmp_path):
    project = Project("slow", tmp_path)

    async def two_runs_then_sigterm(server) -> dict[str, str]:
        answers: dict[str, str] = {}
        async with anyio.create_task_group() as tg:
            for mode in MODES:

                async def call(mode: str = mode) -> None:
                    async with connect_http(server.url, mode) as client:
                        try:
                            await client.call_tool("execute_tests", {"node_ids": [HANG]})
                        except MCPError as exc:
                            answers[mode] = str(exc)

                tg.start_soon(call)
            await wait_for(lambda: started_with_children(project, runs=2), what="two runs and their children")
            server.proc.send_signal(signal.SIGTERM)
            await wait_for(lambda: server.proc.poll() is not None, timeout=30, what="the server to exit")
        return answers

    with http_server(project) as server:
        answers = run(two_runs_then_sigterm, server)
        status = wait_exit(server.proc)
    pids = all_pids(project)
    assert len(pids) == 6
    assert [p for p in pids if pid_alive(p)] == []  # killed before the server exited
    # each call was answered (not cut off) with the reason, and the runs' files removed
    assert set(answers) == set(MODES) and all("shutting down" in a for a in answers.values()), answers
    assert [run_dir for d in (project.artifacts / "runs").iterdir() for run_dir in d.iterdir()] == []
    assert status == 128 + signal.SIGTERM
    assert "Traceback" not in server.stderr_text()


def test_sigint_and_sighup_stop_an_idle_server_cleanly(tmp_path):
    project = Project("slow", tmp_path)
    for signum in (signal.SIGINT, signal.SIGHUP):
        with http_server(project) as server:
            server.proc.send_signal(signum)
            status = wait_exit(server.proc)
        assert status == 128 + signum
        assert "Traceback" not in server.stderr_text() and "KeyboardInterrupt" not in server.stderr_text()
