"""MCP Tasks over Streamable HTTP: what only HTTP has. (The scenarios both transports
share are in ``tests/server/test_server_tasks.py``.)

Covered: a client that closes its connection once it has the task (the run goes on to
its end, and a new connection gets the answer); the bearer token (a ``tasks/get`` without
it is refused as any request is); ``--max-concurrent`` bounds the working tasks (the next
call waits for a slot, as a plain call); a client killed before it was given its task
(the run is killed, as a plain call's); SIGTERM with a task working (its run is killed,
the server exits). "No process left" is checked pid by pid (psutil), from the marks the
fixture projects' conftest and tests leave. Answers are read in the default answer view,
as an agent reads them.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import anyio
import mcp.types as types
from helpers.http_support import TOKEN, connect_http, http_server, json_headers, wait_exit
from helpers.server_support import Project, default_view, pid_alive, run, wait_for, wait_until_gone
from helpers.tasks_client import TASKS, CreatedTask, TasksClient, call_claimed, get_task, poll, task_result

TESTS = Path(__file__).resolve().parents[1]  # the helpers package is below it
HANG = "hang/test_hang.py::test_hangs_with_children"

# A client in its own process that opted in to tasks, killed while its call has not yet
# been given a task (the server waits --task-after seconds for an answer first).
CLIENT = f"""
import sys, anyio
sys.path.insert(0, {str(TESTS)!r})
from helpers.http_support import connect_http
from helpers.tasks_client import TasksClient, call_claimed

async def main():
    async with connect_http(sys.argv[1], "auto", extensions=[TasksClient()]) as client:
        await call_claimed(client, "execute_tests", {{"node_ids": [{HANG!r}]}})

anyio.run(main)
"""


def all_pids(project: Project) -> list[int]:
    return [m["pid"] for m in project.pytest_marks()] + project.child_pids()


def test_a_task_goes_on_when_its_client_closes_and_a_new_connection_gets_its_answer(tmp_path):
    project = Project("slow", tmp_path)

    async def body(url: str):
        async with connect_http(url, "auto", extensions=[TasksClient()]) as client:
            created = await call_claimed(client, "execute_tests", {"node_ids": ["tests/test_slow.py"]})
            assert isinstance(created, CreatedTask)
            await wait_for(lambda: bool(project.pytest_marks()), what="pytest to start")
        closed_at = time.time()  # the first client and its connections are closed; the run goes on
        await anyio.sleep(0.5)
        async with connect_http(url, "auto", extensions=[TasksClient()]) as client:
            return closed_at, await poll(client.session, created.task_id, timeout=60)

    with http_server(project, "--task-after", "0", env={"SLOW_STEP_S": "0.3"}) as server:
        closed_at, states = run(body, server.url)
        assert server.proc.poll() is None
    final = states[-1]
    assert final["status"] == "completed"
    ended_at = datetime.fromisoformat(final["lastUpdatedAt"].replace("Z", "+00:00")).timestamp()
    assert ended_at > closed_at  # it ended after its client had gone
    answer = default_view(task_result(final))
    assert answer["status"] == "passed" and answer["counts"] == {"total": 9, "passed": 9}  # every test ran
    assert len(project.pytest_marks()) == 1
    assert wait_until_gone(all_pids(project), timeout=20) == []


def test_a_tasks_requests_need_the_token_like_any_request(tmp_path):
    project = Project("hangs", tmp_path)

    async def body(url: str):
        async with connect_http(url, "auto", extensions=[TasksClient()]) as client:
            created = await call_claimed(client, "execute_tests", {"node_ids": ["tests/test_hangs.py::test_first"]})
            assert isinstance(created, CreatedTask)
            return created, await poll(client.session, created.task_id)

    with http_server(project, "--task-after", "0") as server:
        created, states = run(body, server.url)
        request = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tasks/get",
            "params": {
                "taskId": created.task_id,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
                },
            },
        }
        body_bytes = json.dumps(request).encode()
        refused = [
            server.post(body_bytes, json_headers(server, token=None)),
            server.post(body_bytes, json_headers(server, token=TOKEN[::-1])),
        ]
    assert states[-1]["status"] == "completed"
    for status, answer in refused:
        assert status == 401 and created.task_id.encode() not in answer


def test_at_most_max_concurrent_tasks_work_and_the_next_call_waits_as_a_plain_call(tmp_path):
    project = Project("slow", tmp_path)

    async def body(url: str):
        async with connect_http(url, "auto", extensions=[TasksClient()]) as client:
            first = await call_claimed(client, "execute_tests", {"node_ids": ["tests/test_slow.py"]})
            assert isinstance(first, CreatedTask)
            # one task works, --max-concurrent 1: this call is not a task, it waits for the slot
            second = await call_claimed(client, "execute_tests", {"node_ids": ["tests/test_slow.py::test_step[0]"]})
            first_state = await get_task(client.session, first.task_id)
            return second, first_state, await poll(client.session, first.task_id)

    with http_server(project, "--task-after", "0", "--max-concurrent", "1", env={"SLOW_STEP_S": "0.15"}) as server:
        second, first_state, first_states = run(body, server.url)
    assert isinstance(second, types.CallToolResult)
    assert default_view(second)["status"] == "passed"
    # it had waited for the task's run to end: the task had finished by then
    assert first_state["status"] == "completed" and first_states[-1]["status"] == "completed"
    marks = sorted(project.pytest_marks(), key=lambda m: m["start"])
    assert len(marks) == 2


def test_a_client_killed_before_it_got_its_task_has_its_run_killed(tmp_path):
    project = Project("slow", tmp_path)
    with http_server(project, "--task-after", "60") as server:
        client = subprocess.Popen([sys.executable, "-c", CLIENT, server.url])
        try:
            started = lambda: len(project.pytest_marks()) == 1 and len(project.child_pids()) == 2  # noqa: E731
            run(wait_for, started, 60.0, "pytest and its children")
        finally:
            client.kill()  # the connection drops while the server waits for the run's answer
            client.wait()
        assert wait_until_gone(all_pids(project), timeout=20) == []
        assert server.proc.poll() is None


def test_sigterm_with_a_task_working_kills_its_run_and_the_server_exits(tmp_path):
    project = Project("slow", tmp_path)

    async def body(url: str) -> str:
        async with connect_http(url, "auto", extensions=[TasksClient()]) as client:
            created = await call_claimed(client, "execute_tests", {"node_ids": [HANG]})
            assert isinstance(created, CreatedTask)
            await wait_for(lambda: len(project.child_pids()) == 2, what="pytest and its children")
            return created.task_id

    with http_server(project, "--task-after", "0") as server:
        run(body, server.url)
        server.proc.send_signal(signal.SIGTERM)
        status = wait_exit(server.proc)
    pids = all_pids(project)
    assert len(pids) == 3 and [p for p in pids if pid_alive(p)] == []  # killed before the server exited
    assert status == 128 + signal.SIGTERM
    assert "Traceback" not in server.stderr_text()
