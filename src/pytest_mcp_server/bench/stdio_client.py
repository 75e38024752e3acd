"""A minimal MCP client over stdio for the benchmarks: JSON-RPC 2.0 messages, one per
line, on the server's stdin and stdout (the MCP specification's stdio transport).

The benchmark drives the real server as any client would, without the SDK (the
``bench`` package imports only the engine, ``tests/server/test_layers.py``). It sends
``initialize``, ``notifications/initialized`` and ``tools/call`` requests and waits for
the response with the request's id; notifications from the server (progress, logs) are
skipped.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from collections.abc import Mapping
from typing import IO, Any

PROTOCOL_VERSION = "2025-06-18"
"""The protocol version offered in ``initialize`` (the server answers with the one it speaks)."""


class StdioClientError(RuntimeError):
    """The server answered with a JSON-RPC error, closed its stdout, or did not answer in time."""


class StdioClient:
    """One server process (``argv``, ``env``; its stderr to ``errlog``) and a session with it.

    Use as a context manager: the server's stdin is closed on exit and the process
    waited for (killed after 10 s)."""

    def __init__(self, argv: list[str], env: Mapping[str, str], errlog: IO[str]) -> None:
        self._proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog, env=dict(env), bufsize=0
        )
        self._lines: queue.Queue[bytes] = queue.Queue()
        self._next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._lines.put(line)
        self._lines.put(b"")  # end of output

    def _send(self, message: dict[str, Any]) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def request(self, method: str, params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send a request and return its ``result``. Raises ``StdioClientError`` on a
        JSON-RPC error, when the server closes its stdout, or after ``timeout_s`` seconds."""
        self._next_id += 1
        wanted = self._next_id
        self._send({"jsonrpc": "2.0", "id": wanted, "method": method, "params": params})
        while True:
            try:
                line = self._lines.get(timeout=timeout_s)
            except queue.Empty:
                raise StdioClientError(f"{method}: no answer within {timeout_s:g}s") from None
            if not line:
                raise StdioClientError(f"{method}: the server closed its stdout (exit {self._proc.poll()})")
            message = json.loads(line)
            if message.get("id") != wanted or "method" in message:
                continue  # a notification, or a request from the server
            if "error" in message:
                raise StdioClientError(f"{method}: {message['error'].get('message')}")
            result: dict[str, Any] = message["result"]
            return result

    def initialize(self, timeout_s: float) -> dict[str, Any]:
        """The ``initialize`` handshake; returns the server's answer."""
        info = {"name": "pytest-mcp-server-bench", "version": "1"}
        params = {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": info}
        result = self.request("initialize", params, timeout_s)
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    def call_tool(self, name: str, arguments: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """``tools/call``: the ``CallToolResult`` as JSON (``content``, ``structuredContent``, ``isError``)."""
        return self.request("tools/call", {"name": name, "arguments": arguments}, timeout_s)

    def __enter__(self) -> StdioClient:
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
