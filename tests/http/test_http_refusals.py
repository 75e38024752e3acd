"""What the HTTP transport refuses, with raw HTTP requests to the real server on 127.0.0.1:
a request without the bearer token or with a wrong one (401), a foreign ``Host`` (421,
DNS rebinding), a foreign ``Origin`` (403, a browser page of another site), an oversized
body (413) and a body that is not declared JSON (400). Each refused request is a
2026-07-28 ``tools/call`` of ``execute_tests`` that would run pytest: the fixture
project's conftest marks every pytest process it is imported in, and the marks directory
stays empty (the same request with the right headers does run pytest: the control).
A 2025-11-25 session beyond ``MAX_SESSIONS`` gets 503 while stateless calls are still
served; the ``localhost`` forms of the bound address are accepted as Host and Origin.

At start-up: a bind to a non-loopback address without a token, an unreadable or unusable
token, and HTTP options without ``--transport http`` end with exit status 2 and a message
saying why and what to do, before anything listens. The token is never written to the
server's stderr, never reaches the pytest run's environment, and never appears in an answer.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest
from helpers.http_support import (
    TOKEN,
    HttpServer,
    connect_http,
    http_server,
    initialize_body,
    json_headers,
    server_command,
    server_env,
)
from helpers.server_support import Project, run, text_of

from pytest_mcp_server.adapters.mcp.http_policy import TOKEN_ENV, HttpSettings
from pytest_mcp_server.domain.policy import MAX_NODE_ID_CHARS, MAX_NODE_IDS, MAX_REQUEST_BODY_BYTES, MAX_SESSIONS

MODERN = "2026-07-28"


def execute_call(arguments: dict | None = None) -> bytes:
    """A 2026-07-28 ``tools/call`` of ``execute_tests``: accepted, it runs pytest."""
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    params = {"name": "execute_tests", "arguments": arguments or {}, "_meta": meta}
    return json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}).encode()


def modern_headers(server: HttpServer, token: str | None = TOKEN, **extra: str) -> dict[str, str]:
    routing = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "execute_tests"}
    return json_headers(server, token, **routing, **extra)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One server (token required) for the refusals, on a project whose conftest marks
    every pytest process."""
    project = Project("every_outcome", tmp_path_factory.mktemp("refusals"))
    with http_server(project) as server:
        yield project, server


REFUSED = [
    pytest.param({"token": None}, 401, id="no token"),
    pytest.param({"token": "wrong-token-0123456789abcdef-XYZ"}, 401, id="wrong token"),
    pytest.param({"token": TOKEN[:-1]}, 401, id="token missing its last character"),
    pytest.param({"Host": "evil.example:80"}, 421, id="foreign Host"),
    pytest.param({"Host": "127.0.0.1:1"}, 421, id="Host with another port"),
    pytest.param({"Origin": "http://evil.example"}, 403, id="foreign Origin"),
    pytest.param({"Origin": "http://localhost:1"}, 403, id="Origin of another local port"),
    pytest.param({"Content-Type": "text/plain"}, 400, id="not JSON"),
]


@pytest.mark.parametrize("change, status", REFUSED)
def test_refused_requests_never_start_pytest(served, change, status):
    project, server = served
    token = change.pop("token", TOKEN) if "token" in change else TOKEN
    got, body = server.post(execute_call(), modern_headers(server, token, **change))
    assert got == status, body
    assert TOKEN.encode() not in body
    assert project.pytest_marks() == []


def test_oversized_body_is_refused_before_it_is_read(served):
    project, server = served
    padding = "x" * (MAX_REQUEST_BODY_BYTES + 1)
    got, _ = server.post(execute_call({"keywords": padding}), modern_headers(server))
    assert got == 413
    assert project.pytest_marks() == []


def test_the_body_limit_is_above_the_largest_call_validation_accepts():
    # every node id written as \uXXXX escapes, plus the envelope: still under the cap
    assert MAX_NODE_IDS * (MAX_NODE_ID_CHARS * 6 + 4) + 4096 < MAX_REQUEST_BODY_BYTES


def test_the_same_request_with_the_right_headers_runs_pytest(tmp_path):
    # the control of the refusals: this request does start pytest and answers
    project = Project("every_outcome", tmp_path)
    with http_server(project) as server:
        got, body = server.post(execute_call({"node_ids": ["tests/test_skips.py"]}), modern_headers(server))
    assert got == 200, body
    assert len(project.pytest_marks()) == 1
    assert b'"isError":false' in body.replace(b" ", b"")


def test_legacy_handshake_needs_the_token_and_a_local_host_and_origin(served):
    project, server = served
    got, _ = server.post(initialize_body(), json_headers(server, token=None))
    assert got == 401
    got, _ = server.post(initialize_body(), json_headers(server, Host="rebound.example:8765"))
    assert got == 421
    # the localhost forms of the bound address are the allowed Host and Origin
    port = server.host_port.rsplit(":", 1)[1]
    local = {"Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"}
    got, body = server.post(initialize_body(), json_headers(server, **local))
    assert got == 200 and b'"serverInfo"' in body, body


def test_sessions_beyond_the_limit_are_refused_and_stateless_calls_still_served(tmp_path):
    project = Project("every_outcome", tmp_path)
    with http_server(project) as server:
        statuses = [server.post(initialize_body(), json_headers(server))[0] for _ in range(MAX_SESSIONS + 1)]
        stateless, _ = server.post(execute_call({"node_ids": ["tests/test_skips.py"]}), modern_headers(server))
    assert statuses == [200] * MAX_SESSIONS + [503]
    assert stateless == 200 and len(project.pytest_marks()) == 1


def test_the_token_is_never_logged_inherited_or_answered(tmp_path):
    project = Project("every_outcome", tmp_path)
    test_file = project.root / "tests" / "test_env.py"
    test_file.write_text(
        "import os\n\n"
        "def test_env():\n"
        f"    leaked = [k for k, v in os.environ.items() if {TOKEN!r} in v or k == {TOKEN_ENV!r}]\n"
        "    assert not leaked, leaked\n"
    )

    async def body(url):
        async with connect_http(url, "auto") as client:
            return await client.call_tool("execute_tests", {"node_ids": ["tests/test_env.py"]})

    with http_server(project) as server:
        result = run(body, server.url)
        server.post(execute_call(), modern_headers(server, token=TOKEN + "x"))  # a wrong guess, logged or not
    assert result.structured_content["counts"]["passed"] == 1, text_of(result)
    assert TOKEN not in text_of(result)
    assert TOKEN not in json.dumps(result.structured_content)
    assert TOKEN not in server.stderr_text()


def start_refused(project: Project, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        server_command(project, *extra), env=server_env(project, env), capture_output=True, text=True, timeout=60
    )


def test_non_loopback_bind_without_token_is_refused_at_start(tmp_path):
    project = Project("every_outcome", tmp_path)
    for host in ("0.0.0.0", "::", "192.0.2.10"):
        proc = start_refused(project, "--host", host)
        assert proc.returncode == 2, proc
        assert "--host" in proc.stderr and "not a loopback address" in proc.stderr
        assert "--token-file" in proc.stderr and TOKEN_ENV in proc.stderr and "127.0.0.1" in proc.stderr
        assert "listening" not in proc.stderr
    assert project.pytest_marks() == []


@pytest.mark.parametrize(
    "args, env, message",
    [
        (["--token-file", "{missing}"], {}, "--token-file: cannot read"),
        (["--token-file", "{short}"], {}, "fewer than 16"),
        ([], {TOKEN_ENV: "has space in it 0123456789"}, f"${TOKEN_ENV}: the token holds characters"),
        ([], {TOKEN_ENV: ""}, f"${TOKEN_ENV}: the token is empty"),
        (["--host", "devbox.example"], {}, "--host: 'devbox.example' is not an IP address"),
        (["--allow-host", "a b"], {}, "--allow-host"),
    ],
)
def test_unusable_http_options_are_refused_at_start(tmp_path, args, env, message):
    project = Project("every_outcome", tmp_path)
    (tmp_path / "short").write_text("abc\n")
    args = [a.format(missing=tmp_path / "missing", short=tmp_path / "short") for a in args]
    proc = start_refused(project, *args, env=env)
    assert proc.returncode == 2, proc
    assert message in proc.stderr and "listening" not in proc.stderr
    assert "abc" not in proc.stderr  # a token's value is never echoed


def test_a_port_in_use_is_refused_at_start(tmp_path):
    project = Project("every_outcome", tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = start_refused(project, "--port", str(port))  # the later --port wins over the helper's 0
    assert proc.returncode == 2, proc
    assert f"cannot listen on 127.0.0.1 port {port}" in proc.stderr and "--port 0" in proc.stderr


def test_http_options_need_the_http_transport(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_mcp_server", "--root", str(tmp_path), "--port", "9"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "--port: only applies with --transport http" in proc.stderr


def test_allowed_hosts_and_origins_are_the_bound_address_and_its_localhost_forms():
    assert HttpSettings(host="127.0.0.1").allowed_hosts(8765) == ["127.0.0.1:8765", "localhost:8765"]
    assert HttpSettings(host="::1").allowed_hosts(9) == ["[::1]:9", "localhost:9"]
    assert HttpSettings(host="localhost").host == "127.0.0.1"
    wide = HttpSettings(host="0.0.0.0", token=TOKEN, allow_hosts=("devbox", "ci.example:443"))
    assert wide.allowed_hosts(8765) == ["127.0.0.1:8765", "localhost:8765", "devbox", "devbox:*", "ci.example:443"]
    assert wide.allowed_origins(8765) == [
        "http://127.0.0.1:8765",
        "http://localhost:8765",
        "http://devbox",
        "https://devbox",
        "http://devbox:*",
        "https://devbox:*",
        "http://ci.example:443",
        "https://ci.example:443",
    ]
    assert "**" in repr(wide) and TOKEN not in repr(wide)
