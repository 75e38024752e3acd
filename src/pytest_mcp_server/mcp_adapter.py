"""The MCP adapter: the only module that imports the MCP SDK.

It builds a low-level ``mcp.server.lowlevel.Server`` from the tool catalogue
(``tools.TOOLS``): ``tools/list`` lists each ``ToolSpec`` with its generated schemas,
and ``tools/call`` looks the tool up by name, parses its arguments, awaits its workflow
and answers with the result and its text (``to_mcp_result``) or with the
``ToolFailure`` as a tool error (``to_mcp_failure``). It serves stdio (``run_stdio``).

Both protocol eras are served by the SDK's dual-era loop: a client that opens with the
``initialize`` handshake (2025-11-25) and one that sends 2026-07-28 per-request
envelopes (``mcp.Client`` in its default mode).

Shutdown: stdin EOF ends the loop, which cancels running tool calls; SIGTERM, SIGINT and
SIGHUP cancel the loop too. Cancelled calls kill their pytest process group before they
return (``process.run_process``); an ``atexit`` hook SIGKILLs any group still listed.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import sys
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

from .config import SERVER_NAME, ServerConfig, package_version
from .events import ProgressFn
from .failures import ToolFailure
from .process import kill_live_groups_now
from .render import render_failure
from .tools import INSTRUCTIONS, TOOLS, TOOLS_BY_NAME, ToolSpec, input_schema, output_schema
from .workflows import Runner

logger = logging.getLogger("pytest_mcp_server")


# --------------------------------------------------------------------------------------
# Translation


def to_mcp_tool(spec: ToolSpec[Any, Any]) -> types.Tool:
    """A tool of ``tools/list``, its schemas generated from the domain models."""
    return types.Tool(
        name=spec.name,
        description=spec.description,
        input_schema=input_schema(spec.params),
        output_schema=output_schema(spec.result),
        annotations=types.ToolAnnotations(
            read_only_hint=spec.read_only,
            destructive_hint=None if spec.read_only else False,
        ),
    )


def to_mcp_result(result: BaseModel, text: str) -> types.CallToolResult:
    """A domain result -> a ``CallToolResult``: the model as ``structured_content`` and
    one compact text block for the model."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=result.model_dump(mode="json"),
        is_error=False,
    )


def to_mcp_failure(failure: ToolFailure) -> types.CallToolResult:
    """A ``ToolFailure`` -> a tool error (``is_error``) with the detail as
    ``structured_content`` (nulls left out) and its text."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=render_failure(failure.detail))],
        structured_content=failure.detail.model_dump(mode="json", exclude_none=True),
        is_error=True,
    )


def to_mcp_progress(ctx: Any) -> ProgressFn:
    """A progress callback that sends ``notifications/progress`` for this request (a
    no-op when the client sent no progress token)."""

    async def progress(done: int, total: int | None) -> None:
        message = f"{done} of {total} tests done" if total is not None else f"{done} tests done"
        await ctx.session.report_progress(float(done), float(total) if total is not None else None, message)

    return progress


# --------------------------------------------------------------------------------------
# Server


def build_server(runner: Runner) -> Server[Any]:
    """The MCP server for one ``Runner`` (one project)."""
    tools = [to_mcp_tool(spec) for spec in TOOLS]

    async def on_list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = TOOLS_BY_NAME.get(params.name)
        if spec is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"unknown tool {params.name!r}; tools: {', '.join(TOOLS_BY_NAME)}",
            )
        try:
            result = await spec.handler(runner, spec.parse(params.arguments), to_mcp_progress(ctx))
            return to_mcp_result(result, spec.render(result))
        except ToolFailure as failure:
            return to_mcp_failure(failure)
        except Exception as exc:  # a bug of ours: say so, keep serving
            logger.exception("tool %s failed", params.name)
            return to_mcp_failure(
                ToolFailure(
                    "internal_error",
                    f"the server failed while handling {params.name}: {type(exc).__name__}: {exc}; "
                    "this is a bug in pytest-mcp-server, please report it",
                )
            )

    return Server(
        SERVER_NAME,
        version=package_version(),
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )


async def serve_stdio(config: ServerConfig) -> None:
    """Serve MCP over stdin/stdout until stdin closes or a termination signal arrives.

    On SIGTERM/SIGINT/SIGHUP the running calls are cancelled (each kills its pytest
    process group and removes its files before returning), then the process exits at
    once with status 128 + signal: the SDK reads stdin in a worker thread that only a
    new line or EOF would wake.
    """
    runner = Runner(config)
    server = build_server(runner)
    stopped_by: list[int] = []
    async with anyio.create_task_group() as tg:

        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
                async for signum in signals:
                    logger.info("received %s, stopping", signal.Signals(signum).name)
                    stopped_by.append(signum)
                    tg.cancel_scope.cancel()
                    return

        if sys.platform != "win32":
            tg.start_soon(stop_on_signal)
        async with stdio_server() as (read_stream, write_stream):
            try:
                await server.run(read_stream, write_stream, server.create_initialization_options())
            finally:
                if stopped_by:  # every call has been cancelled and cleaned up by now
                    kill_live_groups_now()
                    logging.shutdown()
                    os._exit(128 + stopped_by[0])
        tg.cancel_scope.cancel()


def run_stdio(config: ServerConfig) -> int:
    """Run the stdio server (the ``serve`` command); returns the process exit status."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="pytest-mcp-server: %(message)s")
    atexit.register(kill_live_groups_now)
    try:
        anyio.run(serve_stdio, config)
    except KeyboardInterrupt:  # pragma: no cover - SIGINT before the receiver is installed
        pass
    finally:
        kill_live_groups_now()
    return 0
