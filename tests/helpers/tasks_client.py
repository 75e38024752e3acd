"""The client side of the MCP Tasks extension (SEP-2663), for the tests: an SDK client
extension (``mcp.client.extension``) that opts in to ``io.modelcontextprotocol/tasks``
and claims the ``task`` result shape of ``tools/call``, and the ``tasks/*`` requests sent
through the SDK's own session (``ClientSession.send_request``, which sets the
``Mcp-Name`` header SEP-2663 asks for over HTTP).

``mcp`` 2.3.0 ships no Tasks client, but its extension API lets a client opt in per
request and resolve a claimed result: ``Client(extensions=[TasksClient()])``'s
``call_tool`` then polls a task to its end and returns its ``CallToolResult``, and
``client.session.call_tool(..., allow_claimed=True)`` returns the ``CreatedTask`` itself.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar, Literal

import anyio
import mcp.types as types
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

TASKS = "io.modelcontextprotocol/tasks"
TERMINAL = ("completed", "failed", "cancelled")
_ANY_OBJECT = TypeAdapter(dict[str, Any])


class CreatedTask(types.Result):
    """A ``CreateTaskResult``: ``tools/call`` answered with a task."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None


class TaskIdParams(types.RequestParams):
    task_id: str


class GetTask(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param: ClassVar[str | None] = "taskId"


class CancelTask(types.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param: ClassVar[str | None] = "taskId"


class UpdateTaskParams(TaskIdParams):
    input_responses: dict[str, Any] = {}


class UpdateTask(types.Request[UpdateTaskParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    name_param: ClassVar[str | None] = "taskId"


async def get_task(session: ClientSession, task_id: str) -> dict[str, Any]:
    """``tasks/get``: the task as the server reports it (raises ``MCPError``)."""
    return await session.send_request(GetTask(params=TaskIdParams(task_id=task_id)), _ANY_OBJECT)


async def cancel_task(session: ClientSession, task_id: str) -> dict[str, Any]:
    """``tasks/cancel``: the server's acknowledgement."""
    return await session.send_request(CancelTask(params=TaskIdParams(task_id=task_id)), _ANY_OBJECT)


async def update_task(session: ClientSession, task_id: str, responses: dict[str, Any]) -> dict[str, Any]:
    """``tasks/update`` with ``inputResponses``: the server's acknowledgement."""
    request = UpdateTask(params=UpdateTaskParams(task_id=task_id, input_responses=responses))
    return await session.send_request(request, _ANY_OBJECT)


async def poll(session: ClientSession, task_id: str, timeout: float = 120.0) -> list[dict[str, Any]]:
    """Every ``tasks/get`` answer until the task ends (the last one is terminal), polling
    at the task's ``pollIntervalMs`` capped at 0.2 s (a test need not wait longer)."""
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while True:
        state = await get_task(session, task_id)
        seen.append(state)
        if state["status"] in TERMINAL:
            return seen
        if time.monotonic() > deadline:
            raise AssertionError(f"task {task_id} still {state['status']} after {timeout}s: {state}")
        await anyio.sleep(min(state.get("pollIntervalMs", 200) / 1000, 0.2))


def task_result(state: dict[str, Any]) -> types.CallToolResult:
    """The ``CallToolResult`` an ended task carries (``tasks/get``'s ``result``: a
    completed task's answer, or a cancelled one's of its stopped run)."""
    if "result" not in state:
        raise AssertionError(f"task ended without a result: {state}")
    return types.CallToolResult.model_validate(state["result"], by_name=False)


class TasksClient(ClientExtension):
    """Opts in to Tasks; a task answer is polled to its end (``resolved`` keeps each task
    resolved, its states in order)."""

    identifier = TASKS

    def __init__(self) -> None:
        self.resolved: list[tuple[CreatedTask, list[dict[str, Any]]]] = []

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self._resolve)]

    async def _resolve(self, created: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
        states = await poll(ctx.session, created.task_id)
        self.resolved.append((created, states))
        last = states[-1]
        if last["status"] == "failed":
            raise MCPError(code=last["error"]["code"], message=last["error"]["message"])
        return task_result(last)


async def call_claimed(client: Client, name: str, arguments: dict[str, Any]) -> CreatedTask | types.CallToolResult:
    """``tools/call`` answered as the server chose: the ``CreatedTask`` of a task, else the
    plain ``CallToolResult``."""
    result = await client.session.call_tool(name, arguments, allow_claimed=True)
    assert isinstance(result, CreatedTask | types.CallToolResult), result
    return result
