"""The event plugin's side in the server: where the plugin is, how pytest loads it, and
how its events file is read.

The plugin (``_pytest_plugin/pytest_mcp_server_events.py``) appends one line per event
to a file: ``c N`` (N tests collected), ``t`` (a test finished), ``i "<node id>"`` (a
collected node id, with ``--collect-only``). ``EventFollower`` follows that file during a
run for progress; ``read_collected`` reads a collect-only run's node ids as a page.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

PLUGIN_DIR = Path(__file__).resolve().parent / "_pytest_plugin"
"""Put first on the child's ``PYTHONPATH``; holds only the plugin, so nothing else of
the server becomes importable in the project's tests."""
PLUGIN_NAME = "pytest_mcp_server_events"
"""The plugin's module name, loaded with ``-p``."""
PROGRESS_INTERVAL_S = 0.25
"""Shortest time between two progress notifications, seconds."""
MAX_FILES_LISTED = 500
"""Files listed with their test counts by ``read_collected`` (the others are counted)."""

ProgressFn = Callable[[int, int | None], Awaitable[None]]
"""``await progress(done, total)``: tests finished so far and tests collected (None
until collection finished)."""


class EventFollower:
    """Follows the event plugin's file: collected total and finished tests.

    ``poll()`` reads the lines appended since the last call (a partial last line waits
    for the next poll). ``follow(progress)`` polls until cancelled and reports progress
    at most every ``PROGRESS_INTERVAL_S``.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.total: int | None = None
        self.done = 0

    def poll(self) -> None:
        """Read the complete lines appended since the last poll (at most 1 MiB at once)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read(1 << 20)
        except FileNotFoundError:
            return
        end = data.rfind(b"\n")
        if end < 0:
            return
        self.offset += end + 1
        for line in data[:end].split(b"\n"):
            if line == b"t":
                self.done += 1
            elif line.startswith(b"c "):
                try:
                    self.total = int(line[2:])
                except ValueError:
                    pass

    async def follow(self, progress: ProgressFn) -> None:
        """Poll until cancelled; ``await progress(done, total)`` whenever they changed
        (once something was collected or finished)."""
        sent: tuple[int, int | None] = (-1, None)
        while True:
            await anyio.sleep(PROGRESS_INTERVAL_S)
            self.poll()
            state = (self.done, self.total)
            if state != sent and (self.total is not None or self.done):
                sent = state
                await progress(self.done, self.total)


def read_collected(events: Path, offset: int, limit: int) -> tuple[int, dict[str, int], int, list[str]]:
    """Stream the events file of a collect-only run: (total, tests per file (first
    ``MAX_FILES_LISTED`` files, in collection order), files not listed, node ids of the
    page ``[offset, offset+limit)``). Memory stays small for 100k-test suites."""
    total = 0
    files: dict[str, int] = {}
    other_files: set[str] = set()
    page: list[str] = []
    with open(events, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.startswith("i "):
                continue
            try:
                node_id = json.loads(line[2:])
            except ValueError:
                continue
            if offset <= total < offset + limit:
                page.append(node_id)
            total += 1
            path = node_id.split("::", 1)[0]
            if path in files:
                files[path] += 1
            elif len(files) < MAX_FILES_LISTED:
                files[path] = 1
            else:
                other_files.add(path)
    return total, files, len(other_files), page
