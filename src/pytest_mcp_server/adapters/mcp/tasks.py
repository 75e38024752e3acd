"""The MCP Tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663, 2026-07-28): a long
``execute_tests`` call of a client that opted in is answered with a task, which the
client polls with ``tasks/get`` until it carries the call's ``CallToolResult``.

What the SDK offers, and what this module builds around it. ``mcp`` 2.3.0 implements no
Tasks (its PR #3005 is not released), but ships the extension API an extension is made
of (``mcp.server.extension``: ``Extension`` with its ``methods`` and its ``tools/call``
interceptor, ``MethodBinding``, ``compose_tool_call_handler``). Only ``MCPServer`` takes
extensions; this server is a low-level ``Server``, so ``install_extension`` does for it
what ``MCPServer(extensions=[...])`` does (the methods registered per protocol version,
the capability advertised, the interceptor folded around ``on_call_tool``). The runs of
tasks live in the server's lifespan (``TasksExtension.lifespan``), not in a request.
The seam, for the day the SDK ships Tasks (PR #3005, ``mcp.server.tasks.Tasks``, an
``Extension`` too): its extension replaces ``TaskStore``, ``Task``'s wire shapes and the
``tasks/*`` methods, and ``install_extension`` gives way to the SDK's own; this module
keeps the decision of which call becomes a task and when (``intercept_tool_call``,
``_expect``), and ``on_call_tool`` keeps its two-line hook (``current_task``).

Which calls become tasks (docs/SERVER.md, *Tasks*): ``execute_tests`` on a 2026-07-28
request whose capabilities declare the extension (the SDK's client sends them in each
request's ``_meta``), when the server's ``--task-after`` threshold can be reached (the
call's timeout is not below it, or no pytest slot is free) and fewer than
``--max-concurrent`` tasks are working (beyond that a call waits for a slot, as before).
A call that the tests' recorded durations (``run.durations``) say will take at least the
threshold is answered with its task at once; any other is run and answered plainly if it
ends within the threshold, else with its task then. Every other call is answered as
before, blocking.

A task's run goes on when the request's stream closes (the point of a task); it stops
on ``tasks/cancel`` (as Ctrl-C: ``run.process.Interrupt``, its answer then says what
finished), at shutdown, and with the server. Tasks are held in memory only: bounded in
number and bytes (``TASKS_HELD``, ``TASK_ANSWERS_BYTES``), each answer kept
``--task-ttl`` seconds after its run ended; the run's record file stays in its run
directory, where ``summarize_report`` reads it. Under a bearer token a task answers only
the client it was created for (the token's client id).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import anyio
import anyio.abc
import mcp.types as types
import orjson
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding, RequestHandler, compose_tool_call_handler
from mcp.server.lowlevel import Server
from mcp.server.mcpserver.server import require_client_extension
from mcp.shared.exceptions import MCPError
from mcp_types.methods import serialize_server_result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from pytest_mcp_server.adapters.mcp.catalogue import TOOLS_BY_NAME
from pytest_mcp_server.app.runner import Runner
from pytest_mcp_server.domain.failures import ToolFailure
from pytest_mcp_server.domain.policy import (
    TASK_ANSWERS_BYTES,
    TASK_POLL_S,
    TASKS_FORGOTTEN,
    TASKS_HELD,
)
from pytest_mcp_server.domain.tools import ExecuteParams
from pytest_mcp_server.run.durations import RecordedDurations
from pytest_mcp_server.run.events import ProgressFn
from pytest_mcp_server.run.process import Interrupt, interruptible

logger = logging.getLogger("pytest_mcp_server")

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
"""The extension's identifier (SEP-2663), in capabilities and errors."""
TASK_TOOLS = frozenset({"execute_tests"})
"""The tools whose calls may become tasks: the others answer within seconds."""
MS_PER_S = 1000
TaskStatus = Literal["working", "completed", "failed", "cancelled"]


class TaskIdParams(types.RequestParams):
    """The params of ``tasks/get``, ``tasks/update`` and ``tasks/cancel``: ``taskId``; other
    keys (``tasks/update``'s ``inputResponses``) are ignored: no run asks the client for
    input, so every response answers a request that is not outstanding."""

    task_id: str


def _iso(unix_s: float) -> str:
    """An ISO 8601 UTC timestamp with milliseconds (``2026-10-19T10:30:00.123Z``)."""
    return datetime.fromtimestamp(unix_s, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def progress_text(done: int, total: int | None, failing: int) -> str:
    """A working task's status message: ``412 of 2,013 tests done, 3 failing`` (failing:
    a failure or an error in any phase)."""
    text = f"{done:,} of {total:,} tests done" if total is not None else f"{done:,} tests done"
    return text + (f", {failing:,} failing" if failing else "")


@dataclass(eq=False)
class Task:
    """One task: what ``tasks/get`` reports of it, and the handles that stop its run.

    Times are unix seconds. ``ttl_s`` counts from ``created``; ``answer`` is the call's
    ``CallToolResult`` as sent (JSON), ``error`` the JSON-RPC error of a call that raised
    one. ``owner``: the bearer token's client id under HTTP authentication, else None.
    ``announced``: the client was given the task (before that, the call may still be
    answered plainly, and its progress goes to the request)."""

    task_id: str
    owner: str | None
    created: float
    ttl_s: float
    keep_s: float
    status: TaskStatus = "working"
    status_message: str = "no test has finished yet"
    updated: float = 0.0
    answer: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    report_path: str | None = None
    answer_bytes: int = 0
    announced: bool = False
    cancel_requested: bool = False
    interrupted: bool = False  # tasks/cancel stopped the work (not only asked after it ended)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    interrupt: Interrupt = field(default_factory=Interrupt)
    finished: anyio.Event = field(default_factory=anyio.Event)
    result: HandlerResult = None  # the call's own result, for a call answered plainly after all

    def __post_init__(self) -> None:
        self.updated = self.created

    def expired(self, now: float) -> bool:
        """Whether the task's TTL has passed (a working task never expires)."""
        return self.status != "working" and now >= self.created + self.ttl_s

    def progress_for(self, request_progress: ProgressFn) -> ProgressFn:
        """The progress callback of the task's run: its status message, and while the
        task is not announced, the request's own progress notifications."""

        async def progress(done: int, total: int | None, failing: int) -> None:
            self.status_message = progress_text(done, total, failing)
            self.updated = time.time()
            if not self.announced:
                await request_progress(done, total, failing)

        return progress

    def view(self, result_type: str) -> dict[str, Any]:
        """The task as SEP-2663 gives it: ``CreateTaskResult`` (``result_type`` ``task``) or
        ``GetTaskResult`` (``complete``, with ``result`` or ``error`` once it ended; a
        cancelled task carries the answer of its stopped run as ``result`` too)."""
        out: dict[str, Any] = {
            "resultType": result_type,
            "taskId": self.task_id,
            "status": self.status,
            "statusMessage": self.status_message,
            "createdAt": _iso(self.created),
            "lastUpdatedAt": _iso(self.updated),
            "ttlMs": round(self.ttl_s * MS_PER_S),
            "pollIntervalMs": round(TASK_POLL_S * MS_PER_S),
        }
        if self.answer is not None and self.status in ("completed", "cancelled"):
            out["result"] = self.answer
        if self.error is not None and self.status == "failed":
            out["error"] = self.error
        return out


_CURRENT_TASK: ContextVar[Task | None] = ContextVar("pytest_mcp_server_task", default=None)


def current_task() -> Task | None:
    """The task the current ``tools/call`` runs as (set by ``TasksExtension`` for the run
    it starts), None for a plain call. Its run must not stop when the request's stream
    closes, and its progress goes to the task (``Task.progress_for``)."""
    return _CURRENT_TASK.get()


class TaskStore:
    """The tasks held in memory, oldest first: at most ``TASKS_HELD``, their answers at
    most ``TASK_ANSWERS_BYTES`` together (the oldest finished ones forgotten first, the
    newest always kept); expired ones forgotten on the next access. Forgotten ids are
    remembered (``TASKS_FORGOTTEN``) with their run's record file."""

    def __init__(self) -> None:
        self._tasks: OrderedDict[str, Task] = OrderedDict()
        self._forgotten: OrderedDict[str, str | None] = OrderedDict()
        self._bytes = 0

    def working(self) -> int:
        """Tasks whose run has not ended."""
        return sum(1 for task in self._tasks.values() if task.status == "working")

    def add(self, task: Task) -> None:
        """Hold ``task``, forgetting the oldest finished ones beyond ``TASKS_HELD``."""
        self._sweep(time.time())
        self._tasks[task.task_id] = task
        self._trim()

    def drop(self, task: Task) -> None:
        """Forget ``task`` without a trace (a call answered plainly after all)."""
        if self._tasks.pop(task.task_id, None) is not None:
            self._bytes -= task.answer_bytes

    def ended(self, task: Task) -> None:
        """Account for ``task``'s answer, now that its run ended."""
        if task.task_id in self._tasks:
            self._bytes += task.answer_bytes
            self._trim()

    def find(self, task_id: str, owner: str | None) -> Task:
        """The task ``task_id`` of ``owner``. Raises ``MCPError`` (invalid params, SEP-2663's
        error for an unknown id) when there is none, it expired, or it is another
        client's (said as not found: no client learns of another's tasks)."""
        self._sweep(time.time())
        task = self._tasks.get(task_id)
        if task is not None and task.owner == owner:
            return task
        if task is None and task_id in self._forgotten:
            path = self._forgotten[task_id]
            where = (
                f"; the tests it ran are in {path} (summarize_report with paths=[{orjson.dumps(path).decode()}])"
                if path
                else ""
            )
            raise MCPError(code=types.INVALID_PARAMS, message=f"Failed to retrieve task: Task has expired{where}")
        raise MCPError(
            code=types.INVALID_PARAMS,
            message="Failed to retrieve task: Task not found (no task of this server has this id; "
            "tasks do not outlive a server restart, their runs' records do: summarize_report)",
        )

    def _forget(self, task: Task) -> None:
        del self._tasks[task.task_id]
        self._bytes -= task.answer_bytes
        self._forgotten[task.task_id] = task.report_path
        while len(self._forgotten) > TASKS_FORGOTTEN:
            self._forgotten.popitem(last=False)

    def _sweep(self, now: float) -> None:
        for task in [t for t in self._tasks.values() if t.expired(now)]:
            self._forget(task)

    def _trim(self) -> None:
        finished = [t for t in self._tasks.values() if t.status != "working"]
        while finished and (len(self._tasks) > TASKS_HELD or (self._bytes > TASK_ANSWERS_BYTES and len(finished) > 1)):
            self._forget(finished.pop(0))


def _owner() -> str | None:
    """Who asks: the bearer token's client id under HTTP authentication, else None."""
    token = get_access_token()
    return token.client_id if token is not None else None


def _opted_in(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether this request's client capabilities declare the extension (on 2026-07-28,
    those of the request's own ``_meta``)."""
    capabilities = ctx.session.client_capabilities
    return bool(capabilities and capabilities.extensions and TASKS_EXTENSION in capabilities.extensions)


@dataclass(frozen=True)
class Expectation:
    """How long a call's run will take: ``at_least_s`` (the tests' recorded durations),
    ``at_most_s`` (its timeout, once it has a pytest slot), seconds."""

    at_least_s: float
    at_most_s: float


class TasksExtension(Extension):
    """The Tasks extension for one ``Runner``: the ``tools/call`` interceptor that makes
    long ``execute_tests`` calls tasks, ``tasks/get``, ``tasks/update`` and
    ``tasks/cancel``, and the lifespan that holds the tasks' runs. ``task_after_s``: the
    threshold (``--task-after``); ``keep_s``: how long an answer is kept after its run
    ended (``--task-ttl``), seconds."""

    identifier = TASKS_EXTENSION

    def __init__(self, runner: Runner, task_after_s: float, keep_s: float) -> None:
        self.runner = runner
        self.task_after_s = task_after_s
        self.keep_s = keep_s
        self.store = TaskStore()
        self._durations = RecordedDurations(runner.run_dirs)
        self._durations_lock = anyio.Lock()
        self._runs: anyio.abc.TaskGroup | None = None

    @contextlib.asynccontextmanager
    async def lifespan(self, _server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        """The server's lifespan: the task group the tasks' runs live in, cancelled when the
        server stops (each run kills its pytest process group on the way out)."""
        async with anyio.create_task_group() as runs:
            self._runs = runs
            try:
                yield {}
            finally:
                self._runs = None
                runs.cancel_scope.cancel()

    def methods(self) -> Sequence[MethodBinding]:
        """``tasks/get``, ``tasks/update``, ``tasks/cancel``, at 2026-07-28 only (earlier
        protocol versions answer ``Method not found``)."""
        modern = frozenset(MODERN_PROTOCOL_VERSIONS)
        return [
            MethodBinding("tasks/get", TaskIdParams, self._get, protocol_versions=modern),
            MethodBinding("tasks/update", TaskIdParams, self._update, protocol_versions=modern),
            MethodBinding("tasks/cancel", TaskIdParams, self._cancel, protocol_versions=modern),
        ]

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> HandlerResult:
        require_client_extension(ctx, TASKS_EXTENSION)
        return self.store.find(params.task_id, _owner()).view("complete")

    async def _update(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> HandlerResult:
        require_client_extension(ctx, TASKS_EXTENSION)
        self.store.find(params.task_id, _owner())
        return {"resultType": "complete"}

    async def _cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> HandlerResult:
        require_client_extension(ctx, TASKS_EXTENSION)
        task = self.store.find(params.task_id, _owner())
        if task.status == "working" and not task.cancel_requested:
            task.cancel_requested = True
            task.interrupted = task.interrupt.live > 0 or task.interrupt.started == 0
            task.interrupt.request()  # the running pytest ends as on Ctrl-C, saying what finished
            if task.interrupt.started == 0:
                task.scope.cancel()  # no pytest started yet (waiting for a slot): nothing to report
            task.updated = time.time()
        return {"resultType": "complete"}

    async def intercept_tool_call(
        self, params: types.CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Answer a long ``execute_tests`` call of a client that opted in with a task (see
        the module docstring); any other call goes on as a plain call."""
        spec = TOOLS_BY_NAME.get(params.name)
        if (
            spec is None
            or spec.name not in TASK_TOOLS
            or ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS
            or not _opted_in(ctx)
            or self._runs is None
            or self.store.working() >= self.runner.config.max_concurrent
        ):
            return await call_next(ctx)
        try:
            parsed = spec.parse(params.arguments)
        except ToolFailure:
            return await call_next(ctx)  # refused at once, as a plain call
        expected = await self._expect(parsed)
        if expected.at_most_s < self.task_after_s and self.runner.slots.value > 0:
            return await call_next(ctx)  # its timeout ends it before the threshold, and a slot is free
        now = time.time()
        task = Task(
            task_id=secrets.token_urlsafe(24),
            owner=_owner(),
            created=now,
            ttl_s=expected.at_most_s + self.keep_s,
            keep_s=self.keep_s,
        )
        self.store.add(task)
        self._runs.start_soon(self._run, task, ctx, call_next)
        if expected.at_least_s >= self.task_after_s:
            task.status_message = (
                f"started: expected to take at least {expected.at_least_s:.3g}s (its tests' recorded durations)"
            )
            return self._announce(task)
        try:
            with anyio.move_on_after(self.task_after_s):
                await task.finished.wait()
        except BaseException:  # the request was cancelled (its stream closed) before it got the task
            task.scope.cancel()
            self.store.drop(task)
            raise
        if task.finished.is_set():
            self.store.drop(task)  # answered within the threshold: a plain call after all
            if task.error is not None:
                raise MCPError(code=task.error["code"], message=task.error["message"], data=task.error.get("data"))
            if task.result is None:  # the server stopped the run
                raise MCPError(code=types.INTERNAL_ERROR, message="the server stopped the call (it is shutting down)")
            return task.result
        task.status_message = f"still running after {self.task_after_s:g}s: {task.status_message}"
        return self._announce(task)

    def _announce(self, task: Task) -> dict[str, Any]:
        task.announced = True
        task.updated = time.time()
        return task.view("task")

    async def _expect(self, params: ExecuteParams) -> Expectation:
        """How long the call of ``params`` will take: at most its timeout (pytest's time,
        all runs of a ``repeat`` together); at least what its tests took when they last ran
        (on ``workers`` workers, ``repeat`` times), when the call names which tests run (no
        ``markers``, ``keywords``, ``last_failed`` or ``affected``, which run an unknown
        part of them)."""
        config = self.runner.config
        at_most = min(params.timeout_s or config.max_timeout_s, config.max_timeout_s)
        if params.markers or params.keywords or params.last_failed or params.affected:
            return Expectation(0.0, at_most)
        async with self._durations_lock:
            await anyio.to_thread.run_sync(self._durations.refresh)
            recorded = self._durations.at_least(params.node_ids)
        return Expectation(min(recorded * params.repeat / (params.workers or 1), at_most), at_most)

    async def _run(self, task: Task, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> None:
        """The task's call, in the lifespan's task group: ``on_call_tool`` sees the task
        (``current_task``); its answer, error or cancellation becomes the task's status."""
        _CURRENT_TASK.set(task)
        try:
            with task.scope, interruptible(task.interrupt):
                try:
                    self._complete(task, ctx.protocol_version, await call_next(ctx))
                except MCPError as exc:
                    self._end(task, "failed", error=exc.error.model_dump(mode="json", exclude_none=True))
                except Exception as exc:  # a bug of ours: the task says so, the server goes on
                    logger.exception("task %s failed", task.task_id)
                    error = types.ErrorData(code=types.INTERNAL_ERROR, message=f"{type(exc).__name__}: {exc}")
                    self._end(task, "failed", error=error.model_dump(mode="json", exclude_none=True))
            if task.status == "working":  # cancelled before pytest started
                task.status_message = "cancelled by tasks/cancel before pytest started"
                self._end(task, "cancelled")
        finally:
            task.finished.set()
            self.store.ended(task)

    def _complete(self, task: Task, version: str, result: HandlerResult) -> None:
        """End ``task`` with the call's ``result``: its answer as sent at ``version``."""
        if not task.announced:
            task.result = result  # the call may still be answered plainly (within the threshold)
        if not isinstance(result, types.CallToolResult):
            self._end(task, "completed")
            return
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        task.answer = serialize_server_result("tools/call", version, dumped)
        task.answer_bytes = len(orjson.dumps(task.answer))
        structured = result.structured_content or {}
        path = structured.get("report_path")
        task.report_path = path if isinstance(path, str) else None
        first = result.content[0] if result.content else None
        verdict = first.text.partition("\n")[0] if isinstance(first, types.TextContent) else ""
        if task.cancel_requested and task.interrupted:
            task.status_message = f"cancelled by tasks/cancel, pytest interrupted: {verdict}"
            self._end(task, "cancelled")
        else:
            task.status_message = verdict
            self._end(task, "completed")

    def _end(self, task: Task, status: TaskStatus, error: dict[str, Any] | None = None) -> None:
        now = time.time()
        task.status = status
        task.error = error
        if error is not None:
            task.status_message = str(error.get("message", ""))
        task.updated = now
        task.ttl_s = now - task.created + task.keep_s


def install_extension(server: Server[Any], extension: Extension, call_tool: RequestHandler) -> None:
    """Apply ``extension`` to the low-level ``server`` as ``MCPServer(extensions=[...])``
    applies one to its own: its methods registered (each limited to its protocol
    versions), its settings advertised in the server's capabilities (the protocol's
    ``extensions`` field, the SDK's ``mcp.types.ServerCapabilities.extensions``), its
    ``tools/call`` interceptor folded around ``call_tool`` (the server's handler,
    ``compose_tool_call_handler``). Raises ``ValueError`` when a method is already served."""
    for binding in extension.methods():
        if server.get_request_handler(binding.method) is not None:
            raise ValueError(f"{binding.method} is already served; an extension's methods are additive")
        server.add_request_handler(binding.method, binding.params_type, _version_gated(binding))
    server.extensions[extension.identifier] = extension.settings()
    server.add_request_handler(
        "tools/call", types.CallToolRequestParams, compose_tool_call_handler([extension], call_tool)
    )


def _version_gated(binding: MethodBinding) -> RequestHandler:
    """``binding``'s handler, answering ``Method not found`` outside its protocol versions
    (as ``MCPServer`` gates an extension's method)."""
    versions = binding.protocol_versions
    if versions is None:
        return binding.handler

    async def gated(ctx: ServerRequestContext[Any, Any], params: Any) -> HandlerResult:
        if ctx.protocol_version not in versions:
            raise MCPError(code=types.METHOD_NOT_FOUND, message="Method not found", data=binding.method)
        return await binding.handler(ctx, params)

    return gated
