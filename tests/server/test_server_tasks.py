"""MCP Tasks (SEP-2663) for long ``execute_tests`` calls, over real stdio and real HTTP.

The server is the real console entry; the client is the SDK's own, opting in with the
SDK's client extension API (``helpers.tasks_client.TasksClient``: it declares
``io.modelcontextprotocol/tasks`` in each request's capabilities and resolves a ``task``
answer by polling ``tasks/get``). Thresholds are small (``--task-after 0`` or ``0.5``) and
the fixture projects' tests sleep or hang, so a call becomes a task within a second.

Covered on both transports: a call that ends within the threshold and one whose timeout
ends it sooner stay plain; a longer one becomes a task, polled to the answer a blocking
call gives, and once its tests' durations are recorded the next such call is a task at
once; ``tasks/cancel`` mid-run interrupts pytest (no process left) and the task carries
what finished; a finished task expires by its TTL, its record file still read by
``summarize_report``; a restarted server answers ``tasks/get`` with the protocol's error;
a client without the opt-in, and a 2025-11-25 client, get blocking calls. Over stdio: a
repeated call cancelled starts no further run, a task's run ends with the server,
``--no-tasks``. The task store's bounds, directly. HTTP-only faults (a closed stream, the
token, ``--max-concurrent``, a killed client, SIGTERM) are in ``tests/http/test_http_tasks.py``.

Answers are read as an agent reads them, in the default answer view (``answer`` and the
typed fields); the cancelled repeated call's in the ``typed`` view, which counts its runs.
"""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime

import anyio
import mcp.types as types
import pytest
from helpers.http_support import HttpServer, connect_http, http_server
from helpers.server_support import (
    TYPED,
    Project,
    connect,
    default_view,
    found_report,
    pid_alive,
    run,
    text_of,
    wait_until_gone,
)
from helpers.tasks_client import (
    TASKS,
    CreatedTask,
    TasksClient,
    call_claimed,
    cancel_task,
    get_task,
    poll,
    task_result,
    update_task,
)
from mcp import Client
from mcp.shared.exceptions import MCPError

from pytest_mcp_server.adapters.mcp.tasks import Task, TaskStore
from pytest_mcp_server.domain.policy import TASK_ANSWERS_BYTES, TASKS_FORGOTTEN, TASKS_HELD
from pytest_mcp_server.domain.tools import ExecuteResult
from pytest_mcp_server.run.durations import durations_in

TRANSPORTS = ["stdio", "http"]
SLOW = {"node_ids": ["tests/test_slow.py"]}
STEP_S = {"SLOW_STEP_S": "0.15"}  # 8 steps: about 1.2 s


class Served:
    """The real server for ``project`` with ``options``, over one transport: over HTTP one
    server process for every client; over stdio a server per client (its stdin)."""

    def __init__(self, kind: str, project: Project, options: tuple[str, ...], env: dict[str, str] | None) -> None:
        self.kind = kind
        self.project = project
        self.options = options
        self.env = env
        self.http: HttpServer | None = None

    @asynccontextmanager
    async def client(self, mode: str = "auto", opt_in: bool = True) -> AsyncIterator[tuple[Client, TasksClient]]:
        """A client in ``mode``, opting in to tasks when ``opt_in``; and its extension."""
        tasks = TasksClient()
        extensions = [tasks] if opt_in else []
        if self.http is not None:
            async with connect_http(self.http.url, mode, extensions=extensions) as client:
                yield client, tasks
        else:
            async with connect(self.project.params(*self.options, env=self.env), mode, extensions) as client:
                yield client, tasks


@contextmanager
def served(kind: str, project: Project, *options: str, env: dict[str, str] | None = None) -> Iterator[Served]:
    server = Served(kind, project, options, env)
    if kind == "http":
        with http_server(project, *options, env=env) as http:
            server.http = http
            yield server
    else:
        yield server


def masked(text: str) -> str:
    """An answer's text without what differs between two runs of the same tests: times
    and run directories."""
    text = re.sub(r"\d+(\.\d+)?s\b", "<t>s", text)
    return re.sub(r"/runs/[^/\s]+/[^/\s]+/", "/runs/<run>/", text)


def check_task_shape(state: dict, result_type: str) -> None:
    """A task as SEP-2663 gives it: its fields and their types."""
    assert state["resultType"] == result_type
    assert isinstance(state["taskId"], str) and len(state["taskId"]) >= 32
    assert state["status"] in ("working", "completed", "failed", "cancelled")
    for key in ("createdAt", "lastUpdatedAt"):
        assert state[key].endswith("Z") and datetime.fromisoformat(state[key].replace("Z", "+00:00"))
    assert isinstance(state["ttlMs"], int) and state["ttlMs"] > 0
    assert state["pollIntervalMs"] == 2000 and isinstance(state["statusMessage"], str)
    assert ("result" in state) == (state["status"] in ("completed", "cancelled"))
    assert ("error" in state) == (state["status"] == "failed")


def pytest_pids(project: Project) -> list[int]:
    return [m["pid"] for m in project.pytest_marks()] + project.child_pids()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_call_that_ends_within_the_threshold_or_its_timeout_is_answered_plainly(tmp_path, transport):
    project = Project("hangs", tmp_path)

    async def body(server: Served):
        async with server.client() as (client, _):
            quick = await call_claimed(client, "execute_tests", {"node_ids": ["tests/test_hangs.py::test_first"]})
            # a timeout below --task-after ends the call before it: never a task
            bounded = await call_claimed(
                client, "execute_tests", {"node_ids": ["tests/test_hangs.py::test_hangs"], "timeout_s": 2}
            )
            return quick, bounded

    with served(transport, project, "--task-after", "30") as server:
        quick, bounded = run(body, server)
    assert isinstance(quick, types.CallToolResult) and default_view(quick)["status"] == "passed"
    assert isinstance(bounded, types.CallToolResult) and bounded.is_error
    assert default_view(bounded)["kind"] == "timeout"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_long_call_becomes_a_task_polled_to_the_answer_a_blocking_call_gives(tmp_path, transport):
    project = Project("slow", tmp_path)

    async def body(server: Served):
        async with server.client() as (client, tasks):
            by_task = await client.call_tool("execute_tests", SLOW)  # resolved by polling tasks/get
            # its tests' durations are recorded now: the next such call is a task at once
            second = await call_claimed(client, "execute_tests", SLOW)
            assert isinstance(second, CreatedTask)
            second_states = await poll(client.session, second.task_id)
        async with server.client(opt_in=False) as (client, _):
            blocking = await client.call_tool("execute_tests", SLOW)
        return by_task, tasks.resolved, second, second_states, blocking

    with served(transport, project, "--task-after", "0.5", env=STEP_S) as server:
        by_task, resolved, second, second_states, blocking = run(body, server)

    ((created, states),) = resolved
    check_task_shape(created.model_dump(by_alias=True, mode="json"), "task")
    # not known to be long (nothing recorded yet): it ran 0.5 s without an answer first
    assert created.status == "working" and created.status_message.startswith("still running after 0.5s")
    for state in states:
        check_task_shape(state, "complete")
    assert [s["status"] for s in states[:-1]] == ["working"] * (len(states) - 1) and states[-1]["status"] == "completed"
    progress = [s["statusMessage"] for s in states if re.fullmatch(r"\d of 9 tests done", s["statusMessage"])]
    assert progress, [s["statusMessage"] for s in states]
    assert states[-1]["statusMessage"].startswith("PASSED 9 passed in ")
    # the task's result is the CallToolResult a blocking call answers
    assert default_view(by_task)["status"] == default_view(blocking)["status"] == "passed"
    assert default_view(by_task)["counts"] == default_view(blocking)["counts"] == {"total": 9, "passed": 9}
    assert masked(text_of(by_task)) == masked(text_of(blocking))
    assert set(default_view(by_task)) == set(default_view(blocking))
    assert second.status_message is not None and second.status_message.startswith("started: expected to take at least")
    assert second_states[-1]["status"] == "completed"
    assert second_states[-1]["result"]["structuredContent"]["status"] == "passed"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_tasks_cancel_interrupts_the_run_and_the_task_says_what_finished(tmp_path, transport):
    project = Project("hangs", tmp_path)

    async def body(server: Served):
        async with server.client() as (client, _):
            created = await call_claimed(client, "execute_tests", {})
            assert isinstance(created, CreatedTask)
            deadline = time.monotonic() + 60
            # the warm spare can reach the hanging test within --task-after: then the task is
            # created with "still running after 0.5s: 3 of 5 ..." and no later progress follows
            while not (await get_task(client.session, created.task_id))["statusMessage"].endswith(
                "3 of 5 tests done, 1 failing"
            ):
                assert time.monotonic() < deadline, "the run never reached its hanging test"
                await anyio.sleep(0.1)
            acknowledged = await cancel_task(client.session, created.task_id)
            states = await poll(client.session, created.task_id, timeout=30)
            again = await cancel_task(client.session, created.task_id)  # an ended task: acknowledged, nothing changes
            updated = await update_task(client.session, created.task_id, {"no-such-request": {"action": "accept"}})
            last = await get_task(client.session, created.task_id)
            report = states[-1]["result"]["structuredContent"]["report_path"]
            summary = await client.call_tool("summarize_report", {"paths": [report]})
            return acknowledged, states, again, updated, last, summary

    with served(transport, project, "--task-after", "0.5") as server:
        acknowledged, states, again, updated, last, summary = run(body, server)
        assert wait_until_gone(pytest_pids(project), timeout=5) == []  # killed before the task ended
    assert acknowledged["resultType"] == again["resultType"] == updated["resultType"] == "complete"
    final = states[-1]
    check_task_shape(final, "complete")
    assert final["status"] == "cancelled" and last["status"] == "cancelled"
    assert final["statusMessage"].startswith(
        "cancelled by tasks/cancel, pytest interrupted: INTERRUPTED 1 failed, 2 passed"
    )
    interrupted = default_view(task_result(final))
    assert interrupted["status"] == "interrupted" and interrupted["exit_code"] == 2
    assert interrupted["counts"] == {"total": 3, "passed": 2, "failed": 1}
    entries = [line for line in interrupted["answer"].splitlines() if line.startswith("- ")]
    assert entries == ["- FAILED tests/test_hangs.py::test_second_fails"], interrupted["answer"]
    # the tests that finished stay in the run's record file, which summarize_report reads
    record = found_report(project.artifacts, interrupted["report_path"])
    assert default_view(summary)["counts"] == interrupted["counts"]
    assert len(project.pytest_marks()) == 1
    # and their durations, the failing test's (a complete report) included, for the next estimate
    durations = durations_in(record)
    assert sorted(durations) == [
        f"tests/test_hangs.py::{name}" for name in ("test_first", "test_second_fails", "test_third")
    ]
    assert all(seconds > 0 for seconds in durations.values())


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_finished_task_expires_by_its_ttl_and_its_records_stay(tmp_path, transport):
    project = Project("hangs", tmp_path)
    args = {"node_ids": ["tests/test_hangs.py::test_first", "tests/test_hangs.py::test_second_fails"]}

    async def body(server: Served):
        async with server.client() as (client, _):
            created = await call_claimed(client, "execute_tests", args)  # --task-after 0: a task at once
            assert isinstance(created, CreatedTask)
            states = await poll(client.session, created.task_id)
            ended = states[-1]
            expires = (
                datetime.fromisoformat(ended["createdAt"].replace("Z", "+00:00")).timestamp() + ended["ttlMs"] / 1000
            )
            await anyio.sleep(max(0.0, expires - time.time()) + 0.2)
            with pytest.raises(MCPError) as expired:
                await get_task(client.session, created.task_id)
            report = ended["result"]["structuredContent"]["report_path"]
            summary = await client.call_tool("summarize_report", {"paths": [report]})
            return created, ended, expired.value, summary

    with served(transport, project, "--task-after", "0", "--task-ttl", "1") as server:
        created, ended, expired, summary = run(body, server)
    assert created.status_message is not None and created.status_message.startswith(
        "started: expected to take at least 0s"
    )
    assert ended["status"] == "completed" and ended["result"]["isError"] is False
    # kept 1 s after the run ended: the TTL counts from the task's creation
    ran_s = (
        datetime.fromisoformat(ended["lastUpdatedAt"].replace("Z", "+00:00"))
        - datetime.fromisoformat(ended["createdAt"].replace("Z", "+00:00"))
    ).total_seconds()
    assert ended["ttlMs"] == pytest.approx((ran_s + 1) * 1000, abs=2)
    report = ended["result"]["structuredContent"]["report_path"]
    assert expired.error.code == types.INVALID_PARAMS
    assert expired.error.message.startswith("Failed to retrieve task: Task has expired; the tests it ran are in ")
    assert report in expired.error.message and "summarize_report" in expired.error.message
    assert default_view(summary)["counts"] == {"total": 2, "passed": 1, "failed": 1}


@pytest.mark.parametrize("transport", ["http"])  # a stdio server lives as long as its one client
def test_a_restarted_server_forgets_its_tasks_but_not_their_records(tmp_path, transport):
    project = Project("hangs", tmp_path)

    async def first(server: Served) -> tuple[str, dict]:
        async with server.client() as (client, _):
            created = await call_claimed(
                client, "execute_tests", {"node_ids": ["tests/test_hangs.py::test_second_fails"]}
            )
            assert isinstance(created, CreatedTask)
            return created.task_id, (await poll(client.session, created.task_id))[-1]

    async def second(server: Served, task_id: str):
        async with server.client() as (client, _):
            with pytest.raises(MCPError) as unknown:
                await get_task(client.session, task_id)
            with pytest.raises(MCPError) as unknown_cancel:
                await cancel_task(client.session, task_id)
            return unknown.value, unknown_cancel.value, await client.call_tool("summarize_report", {})

    with served(transport, project, "--task-after", "0") as server:
        task_id, ended = run(first, server)
    with served(transport, project, "--task-after", "0") as server:
        unknown, unknown_cancel, summary = run(second, server, task_id)
    assert ended["status"] == "completed"
    for error in (unknown, unknown_cancel):
        assert error.error.code == types.INVALID_PARAMS
        assert error.error.message.startswith("Failed to retrieve task: Task not found")
    # the run's records outlive the server: summarize_report reads the last run's
    answered = default_view(task_result(ended))
    assert default_view(summary)["counts"] == answered["counts"] == {"total": 1, "failed": 1}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_client_without_the_opt_in_or_of_2025_11_25_gets_blocking_calls(tmp_path, transport):
    project = Project("hangs", tmp_path)
    args = {"node_ids": ["tests/test_hangs.py::test_first"]}

    async def body(server: Served):
        async with server.client(opt_in=False) as (client, _):
            plain = await call_claimed(client, "execute_tests", args)
            assert client.server_capabilities.extensions == {TASKS: {}}
            with pytest.raises(MCPError) as undeclared:
                await get_task(client.session, "any")
        async with server.client(mode="legacy") as (client, _):
            legacy = await client.call_tool("execute_tests", args)
            legacy_extensions = client.server_capabilities.extensions
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with pytest.raises(MCPError) as legacy_get:
                    await get_task(client.session, "any")
        return plain, undeclared.value, legacy, legacy_extensions, legacy_get.value

    with served(transport, project, "--task-after", "0") as server:
        plain, undeclared, legacy, legacy_extensions, legacy_get = run(body, server)
    # --task-after 0 makes every call of a client that opted in a task; these did not opt in
    assert isinstance(plain, types.CallToolResult) and default_view(plain)["status"] == "passed"
    assert undeclared.error.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert undeclared.error.data == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
    # 2025-11-25 has no such extension: not advertised, no tasks/* methods, the call blocks
    assert default_view(legacy)["status"] == "passed" and legacy_extensions is None
    assert legacy_get.error.code == types.METHOD_NOT_FOUND


def test_a_cancelled_repeated_call_starts_no_further_run(tmp_path):
    project = Project("hangs", tmp_path)

    async def body(server: Served):
        async with server.client() as (client, _):
            created = await call_claimed(client, "execute_tests", {"repeat": 3})
            assert isinstance(created, CreatedTask)
            while "3 of " not in (await get_task(client.session, created.task_id))["statusMessage"]:
                await anyio.sleep(0.1)
            await cancel_task(client.session, created.task_id)
            return (await poll(client.session, created.task_id))[-1]

    with served("stdio", project, *TYPED, "--task-after", "0") as server:
        final = run(body, server)
    assert final["status"] == "cancelled"
    answer = ExecuteResult.model_validate(final["result"]["structuredContent"])
    assert answer.runs == 1 and answer.status == "interrupted"
    assert len(project.pytest_marks()) == 1


def test_a_tasks_run_ends_with_its_stdio_server(tmp_path):
    project = Project("hangs", tmp_path)

    async def body(server: Served) -> None:
        async with server.client() as (client, _):
            created = await call_claimed(client, "execute_tests", {"node_ids": ["tests/test_hangs.py::test_hangs"]})
            assert isinstance(created, CreatedTask)
            while not project.pytest_marks():
                assert (await get_task(client.session, created.task_id))["status"] == "working"
                await anyio.sleep(0.1)
        # the client closed the server's stdin: the server stopped, and the task's run with it

    with served("stdio", project, "--task-after", "0") as server:
        run(body, server)
    pids = pytest_pids(project)
    assert len(pids) == 1 and wait_until_gone(pids, timeout=20) == []
    assert not any(pid_alive(p) for p in pids)


def test_no_tasks_turns_them_off(tmp_path):
    project = Project("hangs", tmp_path)

    async def body(server: Served):
        async with server.client() as (client, _):
            answer = await call_claimed(client, "execute_tests", {"node_ids": ["tests/test_hangs.py::test_first"]})
            with pytest.raises(MCPError) as get:
                await get_task(client.session, "any")
            return client.server_capabilities.extensions, answer, get.value

    with served("stdio", project, "--no-tasks") as server:
        extensions, answer, get = run(body, server)
    assert not extensions
    assert isinstance(answer, types.CallToolResult) and default_view(answer)["status"] == "passed"
    assert get.error.code == types.METHOD_NOT_FOUND


def finished_task(number: int, owner: str | None = None, answer_bytes: int = 10) -> Task:
    task = Task(task_id=f"task-{number}", owner=owner, created=time.time(), ttl_s=3600, keep_s=3600)
    task.status = "completed"
    task.answer_bytes = answer_bytes
    task.report_path = f"/runs/{number}/records.jsonl"
    return task


def test_the_task_store_is_bounded_in_number_and_bytes_and_by_ttl():
    run(store_bounds)  # a task holds anyio objects: made in an event loop


async def store_bounds() -> None:
    store = TaskStore()
    for number in range(TASKS_HELD + 3):
        task = finished_task(number)
        store.add(task)
        store.ended(task)
    # the oldest finished tasks were forgotten; their ids still say where their records are
    for number in range(3):
        with pytest.raises(MCPError, match=rf"Task has expired; the tests it ran are in /runs/{number}/records.jsonl"):
            store.find(f"task-{number}", None)
    assert store.find(f"task-{TASKS_HELD + 2}", None).task_id == f"task-{TASKS_HELD + 2}"
    # answers beyond TASK_ANSWERS_BYTES: the older go, the newest stays however large
    big = TaskStore()
    for number in range(3):
        task = finished_task(number, answer_bytes=TASK_ANSWERS_BYTES // 2 + 1)
        big.add(task)
        big.ended(task)
    with pytest.raises(MCPError, match="Task has expired"):
        big.find("task-1", None)
    assert big.find("task-2", None).task_id == "task-2"
    # another client's task is not found, as an unknown one
    owned = TaskStore()
    owned.add(finished_task(7, owner="bearer"))
    with pytest.raises(MCPError, match="Task not found"):
        owned.find("task-7", "someone-else")
    # a TTL that passed: expired on the next access
    stale = finished_task(8)
    stale.created -= 7200
    owned.add(stale)
    with pytest.raises(MCPError, match="Task has expired"):
        owned.find("task-8", None)
    assert TASKS_FORGOTTEN >= TASKS_HELD
