"""Helpers of the HTTP transport tests: the real server as a subprocess listening on
127.0.0.1 (``--transport http --port 0``, its URL read from the readiness line), the SDK's
Streamable HTTP client connected to it, and raw HTTP requests for the refusals.

Nothing is mocked: the server is ``python -m pytest_mcp_server`` serving a fixture project
copied to a temporary directory (``server_support.Project``).
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from urllib.parse import urlsplit

import httpx2
from mcp import Client
from mcp.client.extension import ClientExtension
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

from helpers.server_support import Project

TOKEN = "test-token-0123456789abcdef-XYZ"
READY = re.compile(r"^listening on (http://\S+)$")
# A request body as the SDK's client sends it to open a 2025-11-25 session.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


class HttpServer:
    """A running server: its process, endpoint URL and everything it wrote on stderr
    (``stderr_text()``; read by a thread so the pipe never fills)."""

    def __init__(self, proc: subprocess.Popen[bytes], url: str, lines: list[str]) -> None:
        self.proc = proc
        self.url = url
        self._lines = lines

    @property
    def host_port(self) -> str:
        """``127.0.0.1:PORT``: the Host header the server expects."""
        return urlsplit(self.url).netloc

    def stderr_text(self) -> str:
        return "".join(self._lines)

    def post(self, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        """One raw POST to the endpoint, ``headers`` as given (``Host`` included when
        given); returns (status, body)."""
        parts = urlsplit(self.url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        try:
            conn.putrequest("POST", parts.path, skip_host="Host" in headers, skip_accept_encoding=True)
            for name, value in headers.items():
                conn.putheader(name, value)
            conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()


def server_command(project: Project, *extra: str) -> list[str]:
    """The argv of the HTTP server for ``project`` on a free port of 127.0.0.1."""
    return [
        sys.executable,
        "-m",
        "pytest_mcp_server",
        "--root",
        str(project.root),
        "--artifacts-dir",
        str(project.artifacts),
        "--transport",
        "http",
        "--port",
        "0",
        *extra,
    ]


def server_env(project: Project, env: dict[str, str] | None = None) -> dict[str, str]:
    """The server's environment: the project's marks directory, no virtualenv, ``env``."""
    full = dict(os.environ)
    full["PYTEST_MCP_TEST_MARKS"] = str(project.marks)
    full.pop("VIRTUAL_ENV", None)
    full.pop("PYTEST_MCP_SERVER_TOKEN", None)
    full.update(env or {})
    return full


@contextmanager
def http_server(
    project: Project, *extra: str, token: str | None = TOKEN, env: dict[str, str] | None = None
) -> Iterator[HttpServer]:
    """Start the server for ``project`` (with ``token`` in ``$PYTEST_MCP_SERVER_TOKEN``
    unless None), wait for its readiness line (60 s at most), yield it; SIGTERM it (then
    SIGKILL) on exit."""
    full_env = server_env(project, env)
    if token is not None:
        full_env["PYTEST_MCP_SERVER_TOKEN"] = token
    proc = subprocess.Popen(server_command(project, *extra), env=full_env, stderr=subprocess.PIPE)
    lines: list[str] = []
    ready = threading.Event()
    found: list[str] = []

    def drain() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            line = raw.decode(errors="replace")
            lines.append(line)
            match = READY.match(line.strip())
            if match and not found:
                found.append(match.group(1))
                ready.set()
        ready.set()  # the server ended before it was ready

    threading.Thread(target=drain, daemon=True).start()
    try:
        ready.wait(60)
        assert found, f"no readiness line; exit status {proc.poll()}, stderr: {''.join(lines)}"
        yield HttpServer(proc, found[0], lines)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@asynccontextmanager
async def connect_http(
    url: str,
    mode: str,
    token: str | None = TOKEN,
    extensions: Sequence[ClientExtension] = (),
    client_info: Implementation | None = None,
) -> AsyncIterator[Client]:
    """An SDK ``Client`` over the SDK's Streamable HTTP client transport, in ``mode``
    (``legacy``: the 2025-11-25 handshake and session; ``auto``: 2026-07-28 envelopes),
    sending ``Authorization: Bearer <token>`` unless ``token`` is None, with the client
    ``extensions`` it opts in to, and naming itself ``client_info`` (None: the SDK's
    default)."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else None
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http_client:
        transport = streamable_http_client(url, http_client=http_client)
        opted = list(extensions) or None
        async with Client(
            transport, mode=mode, read_timeout_seconds=120, extensions=opted, client_info=client_info
        ) as client:
            yield client


def json_headers(server: HttpServer, token: str | None = TOKEN, **extra: str) -> dict[str, str]:
    """The headers of a well-formed JSON-RPC POST to ``server`` (``extra`` overrides,
    e.g. ``Origin``; ``Host`` may be replaced the same way)."""
    headers = {
        "Host": server.host_port,
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    headers.update(extra)
    return headers


def initialize_body() -> bytes:
    return json.dumps(INITIALIZE).encode()


def wait_exit(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> int:
    """The exit status of ``proc`` once it ended (fails the test after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None:
        if time.monotonic() > deadline:
            raise AssertionError(f"process {proc.pid} still running after {timeout}s")
        time.sleep(0.05)
    return proc.returncode
