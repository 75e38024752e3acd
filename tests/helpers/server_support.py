"""Helpers of the server tests: fixture projects, the real server over stdio, processes.

The server is always the real console entry (``python -m pytest_mcp_server``) started by
the SDK's own stdio client; nothing of pytest or of the transport is mocked.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import warnings
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import psutil
from mcp import Client, StdioServerParameters
from mcp.client.extension import ClientExtension

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MODES = ["legacy", "auto"]  # initialize handshake (2025-11-25) and mcp.Client's default (2026-07-28)
TYPED = ("--answer-view", "typed")
"""The server option of a test that reads the full typed result (the ``typed`` answer view,
for programs); a test of what an agent reads uses the default view."""


class Project:
    """A fixture project copied to a temporary directory, with its own artifacts and
    marks directories (outside the project)."""

    def __init__(self, name: str, tmp: Path) -> None:
        self.root = tmp / name
        shutil.copytree(FIXTURES / name, self.root)
        self.artifacts = tmp / f"{name}-artifacts"
        self.marks = tmp / f"{name}-marks"
        self.marks.mkdir()

    def params(self, *extra: str, env: dict[str, str] | None = None, root: Path | None = None) -> StdioServerParameters:
        """How the SDK's client starts the server for this project."""
        full_env = dict(os.environ)
        full_env["PYTEST_MCP_TEST_MARKS"] = str(self.marks)
        full_env.pop("VIRTUAL_ENV", None)
        full_env.update(env or {})
        args = ["-m", "pytest_mcp_server", "--root", str(root or self.root), "--artifacts-dir", str(self.artifacts)]
        return StdioServerParameters(command=sys.executable, args=[*args, *extra], env=full_env)

    def pytest_marks(self) -> list[dict]:
        """One entry per pytest process that imported the project's conftest."""
        out = []
        for path in sorted(self.marks.glob("pytest-*.json")):
            try:
                out.append(json.loads(path.read_text()))
            except ValueError:  # being written
                pass
        return out

    def child_pids(self) -> list[int]:
        """Pids of the grandchildren the slow tests started."""
        return [int(p.read_text()) for p in self.marks.glob("child-*.pid") if p.read_text().strip()]

    def clear_marks(self) -> None:
        for path in self.marks.iterdir():
            path.unlink()


@asynccontextmanager
async def connect(
    params: StdioServerParameters, mode: str, extensions: Sequence[ClientExtension] = ()
) -> AsyncIterator[Client]:
    """An SDK ``Client`` connected to the real server over stdio, in ``mode``, with the
    client ``extensions`` it opts in to."""
    async with Client(params, mode=mode, read_timeout_seconds=120, extensions=list(extensions) or None) as client:
        yield client


async def progress_delivered() -> None:
    """Let the progress callbacks of a finished call run. The SDK's client starts each
    ``notifications/progress`` callback as a task when the notification arrives, which is
    before the call's response; a call can return before its last callback has run, and a
    client closed right away may never run it. One short sleep lets them in."""
    await anyio.sleep(0.2)


async def still_serving(client: Client, mode: str) -> None:
    """Prove the server answers: ``ping`` on a legacy connection (2026-07-28 removed
    ping), ``tools/list`` on a modern one."""
    if mode == "legacy":
        with warnings.catch_warnings():  # the SDK warns that ping is gone at 2026-07-28
            warnings.simplefilter("ignore")
            await client.send_ping()
    else:
        assert len((await client.list_tools()).tools) == 3


def pid_alive(pid: int) -> bool:
    """True while ``pid`` is a live process (a zombie counts as dead), on every OS."""
    try:
        return psutil.Process(pid).status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except psutil.NoSuchProcess:
        return False


def wait_until_gone(pids: list[int], timeout: float = 20.0) -> list[int]:
    """Wait until no pid in ``pids`` is alive; return the ones still alive at the end."""
    deadline = time.monotonic() + timeout
    alive = [p for p in pids if pid_alive(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in alive if pid_alive(p)]
    return alive


async def wait_for(predicate, timeout: float = 60.0, what: str = "condition") -> None:
    """Poll ``predicate()`` until true; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await anyio.sleep(0.05)


def text_of(result) -> str:
    """The single text block of a tool result."""
    assert len(result.content) == 1, result.content
    assert result.content[0].type == "text"
    return result.content[0].text


def default_view(result) -> dict[str, Any]:
    """The structured content of a tool result in the default answer view (what a model
    that reads only the structured content reads), checked: ``answer`` first, equal to
    the text block, then the typed fields (docs/SERVER.md, *Answer views*)."""
    content = result.structured_content
    assert content is not None and list(content)[:1] == ["answer"], content
    assert content["answer"] == text_of(result)
    return content


def found_report(artifacts: Path, report_path: str) -> Path:
    """The one report file ``report_path`` (relative to a project's runs directory, as
    the answer views name it) is under ``artifacts``."""
    (found,) = (artifacts / "runs").glob(f"*/{report_path}")
    assert found.is_file() and found.name == "records.jsonl"
    return found


def run(fn, *args):
    """Run an async test body on asyncio."""
    return anyio.run(fn, *args)


def line_of(path: Path, needle: str) -> int:
    """1-based line of the first line of ``path`` containing ``needle``."""
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} not in {path}")


def git(root: Path, *args: str) -> str:
    """``git ARGS`` in ``root`` with a fixed identity and default branch (a commit needs
    no global git configuration); its stdout. Raises ``CalledProcessError`` on failure."""
    argv = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=main", *args]
    return subprocess.run(argv, cwd=root, check=True, capture_output=True, text=True).stdout


def committed_project(root: Path, files: dict[str, str], *, use_git: bool = True) -> Path:
    """A project at ``root`` holding ``files`` (path relative to it -> text; directories
    made as needed), committed as one commit of a new git repository (when
    ``use_git``); returns ``root``."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if use_git:
        git(root, "init", "-q")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "base")
    return root


def stdio_server(root: Path, artifacts: Path, *extra: str) -> StdioServerParameters:
    """The real server for ``root`` (its artifacts in ``artifacts``, outside it; further
    server options ``extra``), with this interpreter and the test run's environment
    (``VIRTUAL_ENV`` removed, as ``Project`` starts it)."""
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)
    args = ["-m", "pytest_mcp_server", "--root", str(root), "--artifacts-dir", str(artifacts), *extra]
    return StdioServerParameters(command=sys.executable, args=args, env=env)


def typed_stdio_server(root: Path, artifacts: Path, *extra: str) -> StdioServerParameters:
    """``stdio_server`` answering in the ``typed`` view (``TYPED``): for the tests that
    read the full typed result."""
    return stdio_server(root, artifacts, *TYPED, *extra)
