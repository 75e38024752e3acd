"""The record plugin's side in the server: where the plugin is, how pytest loads it, and
how its record file is followed while the run goes on.

The plugin (``pytest_plugin/pytest_mcp_server_events.py``, whose docstring gives the
format) writes one JSON-lines file per run in pytest-reportlog's format: the session's
start and end, collection errors, tests collected and deselected, each test's start and
its reports, warnings, and with --collect-only the collected node ids. Once the run
ended, the report engine reads that file in one pass (``engine.read_report``: the
summary, the test still running, warnings, counts, the session's end, each test's
outcome, a collect-only run's page of node ids). This module only follows it while the
run goes on: ``EventFollower`` for progress, and ``stack_dump_armed`` before the stack
dump is asked for.

The follower streams the file in chunks and looks at each line's head only as far as it
needs (``LINE_HEAD_BYTES``): a failing test's line with megabytes of captured output is
never held whole.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import anyio

PLUGIN_DIR = Path(__file__).resolve().parent / "pytest_plugin"
"""Put first on the child's ``PYTHONPATH``; holds only the plugin, so nothing else of
the server becomes importable in the project's tests."""
PLUGIN_NAME = "pytest_mcp_server_events"
"""The plugin's module name, loaded with ``-p``."""
PROGRESS_INTERVAL_S = 0.25
"""Shortest time between two progress notifications, seconds."""
LINE_HEAD_BYTES = 1 << 20
"""Bytes of a record line the follower looks at: every line it decodes whole (the
SessionStart, a CollectionFinish) is far shorter; of a longer line (a failure's complete
report) only the head with its type, node id, stage and outcome is needed."""
READ_CHUNK_BYTES = 4 << 20
"""Bytes read from the record file at once."""

# The plugin writes every line compact, ``$report_type`` first, and a test report's
# ``nodeid``, ``when`` and ``outcome`` next, so a line's kind and test are read from its head.
_TYPE_PREFIX = b'{"$report_type":"'
_TEST_REPORT = re.compile(
    rb'\{"\$report_type":"(?:Sub)?TestReport","nodeid":("(?:[^"\\]|\\.)*"),"when":"([^"]*)","outcome":"([^"]*)"'
)
_ENDS_TEST = (b"teardown",)  # the report that ends its test

ProgressFn = Callable[[int, int | None, int], Awaitable[None]]
"""``await progress(done, total, failing)``: tests finished so far, tests collected (None
until collection finished), and of the finished tests those with a failed report (a
failure or an error, in any phase)."""


class RecordLines:
    """The complete lines appended to a record file since the last ``read``, each as
    (its first ``LINE_HEAD_BYTES``, whether that is the whole line); a partial last line
    waits for the next read, and the rest of a longer line is skipped unread into memory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self._partial = b""  # the head of the line being read
        self._cut = False  # ... and whether it is longer than that head

    def read(self, max_bytes: int = READ_CHUNK_BYTES) -> list[tuple[bytes, bool]]:
        """Read at most ``max_bytes`` more; returns the lines they complete, in order
        (empty at the end of the file or when it does not exist)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read(max_bytes)
        except FileNotFoundError:
            return []
        self.offset += len(data)
        lines: list[tuple[bytes, bool]] = []
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            piece = data[start:end]
            start = end + 1
            if self._partial or self._cut:
                whole = not self._cut and len(self._partial) + len(piece) <= LINE_HEAD_BYTES
                head = self._partial + piece[: LINE_HEAD_BYTES - len(self._partial)]
                self._partial, self._cut = b"", False
                lines.append((head, whole))
            elif len(piece) > LINE_HEAD_BYTES:
                lines.append((piece[:LINE_HEAD_BYTES], False))
            else:
                lines.append((piece, True))
        rest = data[start:]
        if rest:
            room = LINE_HEAD_BYTES - len(self._partial)
            self._cut = self._cut or len(rest) > room
            self._partial += rest[: max(room, 0)]
        return lines

    def __iter__(self) -> Iterator[tuple[bytes, bool]]:
        """Every complete line from the current offset to the end of the file."""
        while True:
            before = self.offset
            lines = self.read()
            yield from lines
            if self.offset == before:
                return


def record_type(line: bytes) -> bytes:
    """A record line's ``$report_type`` (``b"TestReport"``), or ``b""`` for a line that is
    not one of the plugin's (cut by a killed pytest, or not JSON)."""
    if not line.startswith(_TYPE_PREFIX):
        return b""
    end = line.find(b'"', len(_TYPE_PREFIX))
    return line[len(_TYPE_PREFIX) : end] if end > 0 else b""


def _json(line: bytes, whole: bool) -> dict[str, object] | None:
    if not whole:
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class EventFollower:
    """Follows a run's record file: collected total, finished tests and failing ones.

    ``poll()`` reads the lines appended since the last call (a partial last line waits
    for the next poll). ``follow(progress)`` polls until cancelled and reports progress
    at most every ``PROGRESS_INTERVAL_S``; ``report(progress)`` once more after the run
    ends, so that the last notification counts every test (the follower is cancelled
    when the process exits, often before its last poll).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines = RecordLines(path)
        self.total: int | None = None
        self.done = 0
        self.failing = 0
        self._last_failing: bytes | None = None  # a test's reports are written together: count it once
        self._sent: tuple[int, int | None, int] = (-1, None, 0)

    def poll(self) -> None:
        """Read the complete lines appended since the last poll (at most ``READ_CHUNK_BYTES``)."""
        for line, whole in self.lines.read():
            kind = record_type(line)
            if kind == b"TestReport":
                match = _TEST_REPORT.match(line)
                if match and match[3] == b"failed" and match[1] != self._last_failing:
                    self.failing += 1
                    self._last_failing = match[1]
                if match and match[2] in _ENDS_TEST:
                    self.done += 1
            elif kind == b"CollectionFinish" and self.total is None:
                record = _json(line, whole)
                if record is not None and isinstance(record.get("collected"), int):
                    self.total = int(record["collected"])  # type: ignore[call-overload]

    async def follow(self, progress: ProgressFn) -> None:
        """``report(progress)`` every ``PROGRESS_INTERVAL_S`` until cancelled."""
        while True:
            await anyio.sleep(PROGRESS_INTERVAL_S)
            await self.report(progress)

    async def report(self, progress: ProgressFn) -> None:
        """Poll; ``await progress(done, total, failing)`` when they changed since the last report
        (once something was collected or finished). A report counts as sent only once
        ``progress`` returned: the follower is cancelled when pytest exits, possibly in
        the middle of sending its last count, which the report after the run sends again."""
        self.poll()
        state = (self.done, self.total, self.failing)
        if state != self._sent and (self.total is not None or self.done):
            await progress(self.done, self.total, self.failing)
            self._sent = state


def stack_dump_armed(records: Path) -> bool:
    """True when the record file's first line (the plugin's ``SessionStart``) says the
    stack dump is armed: the dump signal may then be sent (else it would kill pytest)."""
    try:
        with open(records, "rb") as f:
            first = f.readline(LINE_HEAD_BYTES)
    except OSError:
        return False
    record = _json(first.rstrip(b"\n"), first.endswith(b"\n")) if record_type(first) == b"SessionStart" else None
    return record is not None and record.get("stack_dump_armed") is True
