"""The MCP adapter: the only module that imports the MCP SDK.

It builds a low-level ``mcp.server.lowlevel.Server`` from the tool catalogue
(``catalogue.TOOLS``): ``tools/list`` lists each ``ToolSpec`` with its generated schemas,
and ``tools/call`` looks the tool up by name, parses its arguments, awaits its workflow
and answers with the result and its text (``to_mcp_result``) or with the
``ToolFailure`` as a tool error (``to_mcp_failure``), shaped for the call's answer view
(``views.choose_view``: ``--answer-view``, or with ``auto`` the view of the client named
by the ``initialize`` handshake's ``clientInfo`` or, in the 2026-07-28 era, the
request's ``_meta``: ``client_name``). It serves stdio (``run_stdio``) and
Streamable HTTP (``run_http``: the SDK's own app for the low-level server, served by
uvicorn, with the policy of ``http_policy``).

Both protocol eras are served by the SDK's dual-era loop: a client that opens with the
``initialize`` handshake (2025-11-25) and one that sends 2026-07-28 per-request
envelopes (``mcp.Client`` in its default mode).

A long ``execute_tests`` call of a 2026-07-28 client that opted in to the MCP Tasks
extension is answered with a task (``tasks.TasksExtension``, installed on the server with
``tasks.install_extension``): its run goes on in the server's lifespan, not in the
request, so a closed stream does not stop it.

Shutdown: stdin EOF ends the stdio loop, which cancels running tool calls; SIGTERM,
SIGINT and SIGHUP cancel the loop too. Over HTTP a call whose client disconnects is
cancelled (``until_client_disconnects``), and the signals stop every call in flight with
an answer before the server closes (``serve_http``). Cancelled calls kill their pytest
process group before they return (``process.run_process``); an ``atexit`` hook SIGKILLs
any group still listed.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import socket
import sys
from collections.abc import Awaitable, Iterator
from typing import Any, TypeVar

import anyio
import mcp.types as types
import uvicorn
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.types import CLIENT_INFO_META_KEY
from pydantic import BaseModel
from starlette.requests import Request as HttpRequest

from pytest_mcp_server.adapters.mcp.catalogue import (
    INSTRUCTIONS,
    TOOLS,
    TOOLS_BY_NAME,
    ToolSpec,
    input_schema,
    output_schema,
)
from pytest_mcp_server.adapters.mcp.http_policy import MCP_PATH, HttpSettings, token_matches
from pytest_mcp_server.adapters.mcp.structured import failure_fields, failure_structured
from pytest_mcp_server.adapters.mcp.tasks import TasksExtension, current_task, install_extension
from pytest_mcp_server.adapters.mcp.views import AnswerView, choose_view, view_content
from pytest_mcp_server.adapters.selection_text import render_failure_answer
from pytest_mcp_server.app.runner import Runner
from pytest_mcp_server.domain.config import ServerConfig, package_version
from pytest_mcp_server.domain.exits import CommandExit
from pytest_mcp_server.domain.failures import ToolFailure
from pytest_mcp_server.domain.policy import (
    ANSWER_FLUSH_S,
    MAX_CONNECTIONS,
    MAX_REQUEST_BODY_BYTES,
    MAX_SESSIONS,
    SERVER_NAME,
    SESSION_IDLE_TIMEOUT_S,
    SHUTDOWN_GRACE_S,
)
from pytest_mcp_server.run.events import ProgressFn
from pytest_mcp_server.run.process import kill_live_groups_now, platform_limits
from pytest_mcp_server.run.stacks import stack_dump_limits

logger = logging.getLogger("pytest_mcp_server")
T = TypeVar("T")


# --------------------------------------------------------------------------------------
# Translation


def to_mcp_tool(spec: ToolSpec[Any, Any]) -> types.Tool:
    """A tool of ``tools/list``, its schemas generated from the models."""
    return types.Tool(
        name=spec.name,
        description=spec.description,
        input_schema=input_schema(spec.params),
        output_schema=output_schema(spec.fields_model, spec.result),
        annotations=types.ToolAnnotations(
            read_only_hint=spec.read_only,
            destructive_hint=None if spec.read_only else False,
        ),
    )


def to_mcp_result(spec: ToolSpec[Any, Any], result: BaseModel, view: AnswerView) -> types.CallToolResult:
    """A domain result -> a ``CallToolResult`` in ``view``: the answer text
    (``spec.render``) as the one text block, and the structured content of the view
    (``views.view_content`` of ``spec.fields``, or ``spec.structured`` for ``typed``)."""
    answer = spec.render(result)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=answer)],
        structured_content=view_content(view, answer, spec.fields(result), lambda: spec.structured(result)),
        is_error=False,
    )


def to_mcp_failure(failure: ToolFailure, view: AnswerView) -> types.CallToolResult:
    """A ``ToolFailure`` -> a tool error (``is_error``) in ``view``: its answer text as
    the text block, and as structured content the view's (``failure_fields``, or the
    whole detail without nulls for ``typed``)."""
    detail = failure.detail
    answer = render_failure_answer(detail)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=answer)],
        structured_content=view_content(view, answer, failure_fields(detail), lambda: failure_structured(detail)),
        is_error=True,
    )


def client_name(ctx: Any) -> str | None:
    """The ``clientInfo.name`` of the client of a request: the ``initialize``
    handshake's (2025-11-25), or the request envelope's (2026-07-28, ``_meta``
    ``io.modelcontextprotocol/clientInfo``, which the SDK turns into the same
    ``client_params`` when the envelope also declares capabilities, as it must); None
    when the client sent none."""
    params = ctx.session.client_params
    if params is not None:
        name: object = params.client_info.name
    else:
        info = (ctx.meta or {}).get(CLIENT_INFO_META_KEY)
        name = info.get("name") if isinstance(info, dict) else None
    return name if isinstance(name, str) else None


def to_mcp_progress(ctx: Any) -> ProgressFn:
    """A progress callback that sends ``notifications/progress`` for this request (a
    no-op when the client sent no progress token)."""

    async def progress(done: int, total: int | None, _failing: int) -> None:
        message = f"{done} of {total} tests done" if total is not None else f"{done} tests done"
        await ctx.session.report_progress(float(done), float(total) if total is not None else None, message)

    return progress


CLIENT_GONE = "the client disconnected during the call; the call was stopped (its pytest run killed)"
SERVER_STOPPING = "the server is shutting down; the call was stopped (its pytest run killed); retry once it is back"


class InFlightCalls:
    """The tool calls being served, each stoppable, so that a shutdown answers them (an
    error saying the server stops) instead of cutting their connections."""

    def __init__(self) -> None:
        self._scopes: set[anyio.CancelScope] = set()
        self.stopping = False

    @contextlib.contextmanager
    def track(self) -> Iterator[None]:
        """Run the ``with`` body as one call; it is cancelled by ``stop_all`` (at once
        when the server is already stopping). The cancellation ends at this block."""
        with anyio.CancelScope() as scope:
            if self.stopping:
                scope.cancel()
            self._scopes.add(scope)
            try:
                yield
            finally:
                self._scopes.discard(scope)

    @property
    def busy(self) -> bool:
        """Whether a call is in flight."""
        return bool(self._scopes)

    def stop_all(self) -> None:
        """Cancel every call in flight and every later one."""
        self.stopping = True
        for scope in list(self._scopes):
            scope.cancel()

    async def wait_stopped(self, timeout_s: float) -> None:
        """Return once no call is in flight, or after ``timeout_s`` seconds."""
        with anyio.move_on_after(timeout_s):
            while self._scopes:
                await anyio.sleep(0.02)


async def until_client_disconnects(request: Any, call: Awaitable[T]) -> list[T]:
    """``[result of call]``, or ``[]`` when the HTTP client disconnected first: the call
    is then cancelled (a run kills its pytest process group on the way out).

    ``request`` is the call's HTTP request (``ctx.request``; None over stdio, where stdin
    EOF ends the session instead). The SDK cancels a 2026-07-28 call whose stream closes
    by itself; a 2025-11-25 call is not cancelled by a dropped stream (the spec lets a
    client resume it), but without an event store, which this server does not keep, a
    dropped stream cannot be resumed and its answer could never be delivered, so the run
    is stopped here too instead of holding a pytest slot until the session expires.
    """
    if not isinstance(request, HttpRequest):
        return [await call]
    done: list[T] = []
    failed: list[Exception] = []
    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            # uvicorn answers every receive() after a disconnect with http.disconnect,
            # so this watch and the SDK's own (SSE, 2026-07-28) both see it
            while (await request.receive())["type"] != "http.disconnect":
                pass
            logger.info("client disconnected during a call: stopping it")
            tg.cancel_scope.cancel()

        tg.start_soon(watch)
        try:
            done.append(await call)
        except Exception as exc:  # raised below as itself, not inside the task group's ExceptionGroup
            failed.append(exc)
        tg.cancel_scope.cancel()
    if failed:
        raise failed[0]
    return done


# --------------------------------------------------------------------------------------
# Server


def build_server(runner: Runner, answer_view: str = "auto", in_flight: InFlightCalls | None = None) -> Server[Any]:
    """The MCP server for one ``Runner`` (one project), answering in ``answer_view``
    (a value of ``views.ANSWER_VIEW_OPTIONS``: ``auto`` picks per client); its tool calls
    are tracked in ``in_flight`` when given (to stop them at shutdown)."""
    tools = [to_mcp_tool(spec) for spec in TOOLS]
    calls = in_flight or InFlightCalls()
    choose_view(answer_view, None)  # an unknown view fails here, not at the first call

    async def on_list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = TOOLS_BY_NAME.get(params.name)
        if spec is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"unknown tool {params.name!r}; tools: {', '.join(TOOLS_BY_NAME)}",
            )
        task = current_task()  # a call answered as a task (tasks.py): its run outlives the request's stream
        progress = task.progress_for(to_mcp_progress(ctx)) if task else to_mcp_progress(ctx)
        view = choose_view(answer_view, client_name(ctx))
        with calls.track():
            try:
                call = spec.handler(runner, spec.parse(params.arguments), progress)
                done = [await call] if task else await until_client_disconnects(ctx.request, call)
                if done:
                    return to_mcp_result(spec, done[0], view)
            except ToolFailure as failure:
                return to_mcp_failure(failure, view)
            except Exception as exc:  # a bug of ours: say so, keep serving
                logger.exception("tool %s failed", params.name)
                return to_mcp_failure(
                    ToolFailure(
                        "internal_error",
                        f"the server failed while handling {params.name}: {type(exc).__name__}: {exc}; "
                        "this is a bug in pytest-mcp-server, please report it",
                    ),
                    view,
                )
        if calls.stopping:
            raise MCPError(code=types.INTERNAL_ERROR, message=SERVER_STOPPING)
        # the client disconnected: nobody reads this answer, its stream is closed
        raise MCPError(code=types.CONNECTION_CLOSED, message=CLIENT_GONE)

    tasks = TasksExtension(runner, runner.config.task_after_s, runner.config.task_ttl_s)
    server = Server(
        SERVER_NAME,
        version=package_version(),
        instructions=INSTRUCTIONS,
        lifespan=tasks.lifespan,  # holds the runs of tasks
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
    if runner.config.tasks:  # MCP Tasks for long calls (tasks.py); without them every call blocks
        install_extension(server, tasks, on_call_tool)
    return server


STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name))
"""The signals that stop the server (both transports; those of them this OS has): calls are
stopped, groups killed. On Windows no receiver is installed (the event loop cannot take
signals there): Ctrl+C cancels every call, and each stops its run, as stdin's end does."""


def log_platform_limits() -> None:
    """Log, once at start, each thing this OS does not let the server do (process
    control, the timeout's stack dump, stop signals): the start-up log says it, never a
    tool answer."""
    limits = [*platform_limits(), *stack_dump_limits()]
    if sys.platform == "win32":
        limits.append("Windows: SIGTERM and SIGHUP do not stop the server; close its stdin or press Ctrl+C")
    for limit in limits:
        logger.warning("%s", limit)


async def first_stop_signal() -> int:
    """Wait for the first of ``STOP_SIGNALS`` and return its number (logged at info)."""
    with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async for signum in signals:
            logger.info("received %s, stopping", signal.Signals(signum).name)
            return int(signum)
    raise AssertionError("unreachable: a signal receiver never ends")  # pragma: no cover


async def serve_stdio(config: ServerConfig, answer_view: str = "auto") -> None:
    """Serve MCP over stdin/stdout, answers in ``answer_view`` (``build_server``), until
    stdin closes or a termination signal arrives.

    On SIGTERM/SIGINT/SIGHUP the running calls are cancelled (each kills its pytest
    process group and removes its files before returning), then the process exits at
    once with status 128 + signal: the SDK reads stdin in a worker thread that only a
    new line or EOF would wake.
    """
    runner = Runner(config)
    server = build_server(runner, answer_view)
    stopped_by: list[int] = []
    async with anyio.create_task_group() as tg:

        async def stop_on_signal() -> None:
            stopped_by.append(await first_stop_signal())
            tg.cancel_scope.cancel()

        if sys.platform != "win32":
            tg.start_soon(stop_on_signal)
        async with stdio_server() as (read_stream, write_stream):
            try:
                await server.run(read_stream, write_stream, server.create_initialization_options())
            finally:
                with anyio.CancelScope(shield=True):
                    await runner.close()  # the idle warm spare
                if stopped_by:  # every call has been cancelled and cleaned up by now
                    kill_live_groups_now()
                    logging.shutdown()
                    os._exit(128 + stopped_by[0])
        tg.cancel_scope.cancel()


def run_stdio(config: ServerConfig, answer_view: str = "auto") -> int:
    """Run the stdio server (the ``serve`` command), answers in ``answer_view``
    (``build_server``); returns the process exit status."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="pytest-mcp-server: %(message)s")
    log_platform_limits()
    atexit.register(kill_live_groups_now)
    try:
        anyio.run(serve_stdio, config, answer_view)
    except KeyboardInterrupt:  # pragma: no cover - SIGINT before the receiver is installed
        pass
    finally:
        kill_live_groups_now()
    return CommandExit.OK


# --------------------------------------------------------------------------------------
# Streamable HTTP


class BearerTokenVerifier:
    """The SDK's ``TokenVerifier`` for one static bearer token (``--token-file`` or
    ``$PYTEST_MCP_SERVER_TOKEN``): a request's token is accepted when it equals the
    server's (``http_policy.token_matches``, constant time), else refused with 401 by
    the SDK's ``RequireAuthMiddleware``. The token is never logged."""

    def __init__(self, token: str) -> None:
        self._token = token

    def __repr__(self) -> str:  # never show the token
        return f"{type(self).__name__}(token=**********)"

    async def verify_token(self, token: str) -> AccessToken | None:
        """An ``AccessToken`` (client ``bearer``, no scopes, no expiry) for the server's
        token, None for any other."""
        if not token_matches(token, self._token):
            return None
        return AccessToken(token="**********", client_id="bearer", scopes=[])


class _UvicornServer(uvicorn.Server):
    """uvicorn's server without its own signal handlers: ``serve_http`` handles SIGTERM,
    SIGINT and SIGHUP itself (uvicorn would re-raise the signal after its shutdown, ending
    the process before the runs' process groups are known to be gone)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def bind_http_socket(http: HttpSettings) -> socket.socket:
    """A TCP socket bound to ``http.host``/``http.port`` (port 0: a free one, picked by
    the system), not yet listening. Raises ``OSError`` (address in use, not available)."""
    family = socket.AF_INET6 if ":" in http.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        if sys.platform == "win32":  # there SO_REUSEADDR would let another process take the port
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_EXCLUSIVEADDRUSE, 1)
        else:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((http.host, http.port))
    except OSError:
        sock.close()
        raise
    return sock  # not inheritable (PEP 446): no pytest run holds the server's port


def build_http_app(server: Server[Any], http: HttpSettings, port: int) -> Any:
    """The SDK's Streamable HTTP app (``Server.streamable_http_app``, a Starlette app) at
    ``/mcp`` for the server bound to ``port``, with every protection given explicitly:
    ``TransportSecuritySettings`` (Host/Origin allow-lists: 421 for a foreign Host, 403
    for a foreign Origin, 400 for a POST whose Content-Type is not JSON), the body limit
    (413), the session limit (503) and idle timeout, and, with a token, the SDK's bearer
    authentication (401 without the token)."""
    token = http.token.get_secret_value() if http.token is not None else None
    return server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=False,  # SSE: progress notifications reach the client during a run
        stateless_http=False,  # 2025-11-25 clients get sessions; 2026-07-28 requests are stateless anyway
        max_request_body_size=MAX_REQUEST_BODY_BYTES,
        session_idle_timeout=SESSION_IDLE_TIMEOUT_S,
        max_sessions=MAX_SESSIONS,
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=http.allowed_hosts(port),
            allowed_origins=http.allowed_origins(port),
        ),
        host=http.host,
        # The SDK wants an issuer for its auth settings; with no authorization server
        # provider and no resource URL it only installs the bearer check.
        auth=AuthSettings(issuer_url=http.endpoint_url(port), resource_server_url=None) if token else None,
        token_verifier=BearerTokenVerifier(token) if token else None,
    )


async def serve_http(config: ServerConfig, http: HttpSettings, sock: socket.socket, answer_view: str = "auto") -> int:
    """Serve MCP over Streamable HTTP on ``sock`` (bound by ``bind_http_socket``), answers
    in ``answer_view`` (``build_server``), until a termination signal arrives; returns
    the exit status (128 + the signal).

    Prints ``listening on http://HOST:PORT/mcp`` on stderr once connections are accepted.
    All clients share one ``Runner``, so ``--max-concurrent`` bounds the runs of all of
    them. On SIGTERM/SIGINT/SIGHUP: every call in flight (and any later one) is stopped:
    it kills its pytest process group, removes its files and answers with an error saying
    the server stops; then the listener closes, open streams end and the sessions with
    them (each stage given at most ``SHUTDOWN_GRACE_S``).
    """
    in_flight = InFlightCalls()
    runner = Runner(config)
    server = build_server(runner, answer_view, in_flight)
    port = sock.getsockname()[1]
    app = build_http_app(server, http, port)
    uv = _UvicornServer(
        uvicorn.Config(
            app,
            lifespan="on",
            log_level="warning",
            access_log=False,
            proxy_headers=False,  # no X-Forwarded-* trust: the server is reached directly
            server_header=False,
            limit_concurrency=MAX_CONNECTIONS,
            timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        )
    )
    stopped_by: list[int] = []
    async with anyio.create_task_group() as tg:

        async def stop_on_signal() -> None:
            signum = await first_stop_signal()
            stopped_by.append(signum)
            # the calls first: each kills its run and answers, so no stream is cut
            had_calls = in_flight.busy
            in_flight.stop_all()
            await in_flight.wait_stopped(SHUTDOWN_GRACE_S)
            if had_calls:
                await anyio.sleep(ANSWER_FLUSH_S)  # their answers leave before the streams close
            # uvicorn's own exit path: sse-starlette hooks it to end its streams
            uv.handle_exit(signum, None)

        async def announce_when_listening() -> None:
            while not uv.started:
                await anyio.sleep(0.01)
            print(f"listening on {http.endpoint_url(port)}", file=sys.stderr, flush=True)

        if sys.platform != "win32":
            tg.start_soon(stop_on_signal)
        tg.start_soon(announce_when_listening)
        try:
            await uv.serve(sockets=[sock])
        finally:
            with anyio.CancelScope(shield=True):
                await runner.close()  # the idle warm spare
        tg.cancel_scope.cancel()
    return 128 + stopped_by[0] if stopped_by else 0


def run_http(config: ServerConfig, http: HttpSettings, answer_view: str = "auto") -> int:
    """Run the Streamable HTTP server (``serve --transport http``), answers in
    ``answer_view`` (``build_server``); returns the process exit status:
    ``CommandExit.USAGE`` when the address cannot be bound, else ``serve_http``'s."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="pytest-mcp-server: %(message)s")
    try:
        sock = bind_http_socket(http)
    except OSError as exc:
        print(
            f"{SERVER_NAME}: error: --host/--port: cannot listen on {http.host} port {http.port}: "
            f"{exc.strerror or exc}; choose another port (--port 0 picks a free one) or address",
            file=sys.stderr,
        )
        return CommandExit.USAGE
    log_platform_limits()
    atexit.register(kill_live_groups_now)
    try:
        return anyio.run(serve_http, config, http, sock, answer_view)
    except KeyboardInterrupt:  # pragma: no cover - SIGINT before the receiver is installed
        return 128 + signal.SIGINT
    finally:
        kill_live_groups_now()
