"""The record plugin's side in the server: where the plugin is, how pytest loads it, and
how its record file is read while the run goes on and after it.

The plugin (``pytest_plugin/pytest_mcp_server_events.py``, whose docstring gives the
format) writes one JSON-lines file per run in pytest-reportlog's format: the session's
start and end, collection errors, tests collected and deselected, each test's start and
its reports, warnings, and with --collect-only the collected node ids. The report engine
summarises that file (``engine.summarize``); this module reads what the engine does not:
``EventFollower`` follows the file during a run for progress; ``read_collected`` reads a
collect-only run's node ids as a page; ``read_run_events`` reads a finished (or stopped)
run's file once (the test still running, warnings grouped, collected and deselected
counts, the session's duration and exit status); ``read_outcomes`` gives each finished
test's outcome (``repeat``).

Every reader streams the file in chunks and looks at each line's head only as far as it
needs (``LINE_HEAD_BYTES``): a failing test's line with megabytes of captured output is
never held whole.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii
from pathlib import Path

import anyio

from pytest_mcp_server.domain.policy import (
    MAX_FILES_LISTED,
    WARNING_GROUPS_LISTED,
    WARNING_LOCATIONS,
    WARNING_MESSAGE_CHARS,
    WARNING_TRACEBACK_FRAMES,
)
from pytest_mcp_server.domain.tools import WarningGroup, WarningsSummary
from pytest_mcp_server.engine import is_project_code, shown_path
from pytest_mcp_server.engine.models import ProjectCode

PLUGIN_DIR = Path(__file__).resolve().parent / "pytest_plugin"
"""Put first on the child's ``PYTHONPATH``; holds only the plugin, so nothing else of
the server becomes importable in the project's tests."""
PLUGIN_NAME = "pytest_mcp_server_events"
"""The plugin's module name, loaded with ``-p``."""
PROGRESS_INTERVAL_S = 0.25
"""Shortest time between two progress notifications, seconds."""
LINE_HEAD_BYTES = 1 << 20
"""Bytes of a record line the readers look at: every line they decode whole (a warning,
whose message the plugin caps; a chunk of collected node ids) is shorter; of a longer
line (a failure's complete report) only the head with its type, node id, stage and
outcome is needed."""
READ_CHUNK_BYTES = 4 << 20
"""Bytes read from the record file at once."""
_WARNING_KEYS_TRACKED = 10_000
# distinct warnings counted one by one; beyond, new ones are only counted (memory stays bounded)
_EXCEPTION_WARNINGS = ("PytestUnhandledThreadExceptionWarning", "PytestUnraisableExceptionWarning")

# The plugin writes every line compact, ``$report_type`` first, and a test report's
# ``nodeid``, ``when`` and ``outcome`` next, so a line's kind and test are read from its head.
_TYPE_PREFIX = b'{"$report_type":"'
_TEST_REPORT = re.compile(
    rb'\{"\$report_type":"(?:Sub)?TestReport","nodeid":("(?:[^"\\]|\\.)*"),"when":"([^"]*)","outcome":"([^"]*)"'
)
_TEST_START = re.compile(rb'\{"\$report_type":"TestStart","nodeid":("(?:[^"\\]|\\.)*"),"start":([-+.0-9eE]+)\}$')
_LEAN_TAIL = re.compile(rb',"duration":[-+.0-9eE]+\}$')
_ENDS_TEST = (b"teardown",)  # the report that ends its test

ProgressFn = Callable[[int, int | None], Awaitable[None]]
"""``await progress(done, total)``: tests finished so far and tests collected (None
until collection finished)."""


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


def _ascii_key(encoded: bytes) -> bytes:
    """A JSON string as the plugin's own encoder writes it (ASCII, ``\\u`` escapes): orjson
    writes a complete report's node id in UTF-8."""
    if encoded.isascii():
        return encoded
    return encode_basestring_ascii(json.loads(encoded)).encode("ascii")


def _json(line: bytes, whole: bool) -> dict[str, object] | None:
    if not whole:
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class EventFollower:
    """Follows a run's record file: collected total and finished tests.

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
        self._sent: tuple[int, int | None] = (-1, None)

    def poll(self) -> None:
        """Read the complete lines appended since the last poll (at most ``READ_CHUNK_BYTES``)."""
        for line, whole in self.lines.read():
            kind = record_type(line)
            if kind == b"TestReport":
                match = _TEST_REPORT.match(line)
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
        """Poll; ``await progress(done, total)`` when they changed since the last report
        (once something was collected or finished). A report counts as sent only once
        ``progress`` returned: the follower is cancelled when pytest exits, possibly in
        the middle of sending its last count, which the report after the run sends again."""
        self.poll()
        state = (self.done, self.total)
        if state != self._sent and (self.total is not None or self.done):
            await progress(self.done, self.total)
            self._sent = state


def read_collected(records: Path, offset: int, limit: int) -> tuple[int, dict[str, int], int, list[str]]:
    """Stream the record file of a collect-only run (its ``CollectedIds`` lines):
    (total, tests per file (first ``MAX_FILES_LISTED`` files, in collection order), files
    not listed, node ids of the page ``[offset, offset+limit)``). Memory stays small for
    100k-test suites."""
    total = 0
    files: dict[str, int] = {}
    other_files: set[str] = set()
    page: list[str] = []
    for line, whole in RecordLines(records):
        if record_type(line) != b"CollectedIds":
            continue
        record = _json(line, whole)
        node_ids = record.get("nodeids") if record is not None else None
        if not isinstance(node_ids, list):
            continue
        for node_id in node_ids:
            if not isinstance(node_id, str):
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


@dataclass
class RunEvents:
    """What the record file of a run says once the run ended (or was stopped).

    ``running``: tests started and not finished, node id -> start (unix time, seconds),
    in start order (with xdist, several). ``deselected``: tests deselected.
    ``warnings``: the warnings grouped (``WarningsSummary``). ``collected``: tests
    collected (None when collection did not finish). ``finished``: tests whose reports
    were all written. ``collection_errors``: collectors that failed.
    ``stack_dump_armed``: the plugin armed the stack dump (its ``SessionStart`` says so).
    ``session_duration_s`` and ``exit_status``: from pytest's
    ``SessionFinish`` (the session's seconds as its last line gives them, and its exit
    status), None when the session did not finish (a kill, a crash).
    """

    running: dict[str, float] = field(default_factory=dict)
    deselected: int = 0
    warnings: WarningsSummary = field(default_factory=WarningsSummary)
    collected: int | None = None
    finished: int = 0
    collection_errors: int = 0
    stack_dump_armed: bool = False
    session_duration_s: float | None = None
    exit_status: int | None = None


def read_run_events(records: Path, project: ProjectCode) -> RunEvents:
    """Read a run's record file once (memory stays bounded: finished tests are
    forgotten, distinct warnings beyond an internal limit only counted, long lines read
    to their head). ``project``: the project's code, by which warning paths are shown
    and a warning's traceback keeps the project's frames, as the engine shows and
    classifies frames (``engine.shown_path``, ``engine.is_project_code``). A missing file
    reads as no events; a line cut by a killed pytest, or not the plugin's, is skipped."""
    result = RunEvents()
    groups: dict[tuple[str, str, str], _WarningTally] = {}
    total = 0
    untracked: set[tuple[str, str, str]] = set()
    running: dict[bytes, float] = {}  # node ids stay JSON-encoded: a 100k-test run decodes only the unfinished
    for line, whole in RecordLines(records):
        kind = record_type(line)
        try:
            if kind == b"TestReport" or kind == b"SubTestReport":
                match = _TEST_REPORT.match(line)
                if match and match[2] in _ENDS_TEST:
                    running.pop(_ascii_key(match[1]), None)
                    result.finished += 1
            elif kind == b"TestStart":
                match = _TEST_START.match(line)
                if match:
                    running[_ascii_key(match[1])] = float(match[2])
            elif kind == b"CollectReport":
                if line.startswith(b'{"$report_type":"CollectReport","nodeid":') and b',"outcome":"failed"' in line:
                    result.collection_errors += 1
            elif kind == b"WarningMessage":
                record = _json(line, whole)
                if record is None:
                    continue
                total += 1
                tally = _WarningTally.of(record, project)
                known = groups.get(tally.key)
                if known is not None:
                    known.add(tally)
                elif len(groups) < _WARNING_KEYS_TRACKED:
                    groups[tally.key] = tally
                elif len(untracked) < _WARNING_KEYS_TRACKED:
                    untracked.add(tally.key)
            elif kind in (b"Deselected", b"CollectionFinish", b"SessionStart", b"SessionFinish"):
                record = _json(line, whole)
                if record is None:
                    continue
                if kind == b"Deselected":
                    result.deselected += int(record["count"])  # type: ignore[call-overload]
                elif kind == b"CollectionFinish":
                    if result.collected is None:
                        result.collected = int(record["collected"])  # type: ignore[call-overload]
                elif kind == b"SessionStart":
                    result.stack_dump_armed = record.get("stack_dump_armed") is True
                else:
                    result.session_duration_s = float(record["duration"])  # type: ignore[arg-type]
                    result.exit_status = int(record["exitstatus"])  # type: ignore[call-overload]
        except (ValueError, TypeError, KeyError, AttributeError):
            continue
    for encoded, start in running.items():
        try:
            result.running[json.loads(encoded)] = start
        except ValueError:
            continue
    listed = [g.model() for g in list(groups.values())[:WARNING_GROUPS_LISTED]]
    omitted = max(0, len(groups) - WARNING_GROUPS_LISTED) + len(untracked)
    result.warnings = WarningsSummary(total=total, groups=listed, omitted=omitted)
    return result


@dataclass
class _WarningTally:
    key: tuple[str, str, str]
    category: str
    message: str
    locations: list[str]
    traceback: str | None
    count: int = 1

    @classmethod
    def of(cls, record: dict[str, object], project: ProjectCode) -> _WarningTally:
        category = str(record["category"])
        text = str(record["message"])
        message = _first_line(text)
        location = f"{shown_path(str(record['filename']), project)}:{record['lineno']}"
        traceback = None
        key = (category, message, "")
        if category in _EXCEPTION_WARNINGS:
            # pytest's own file is the warning's location: the traceback says where it happened
            traceback, where, exception = _cut_traceback(text, project)
            location = where or location
            key = (category, exception, location)
        return cls(key, category, message, [location], traceback)

    def add(self, other: _WarningTally) -> None:
        self.count += 1
        if other.locations[0] not in self.locations and len(self.locations) < WARNING_LOCATIONS:
            self.locations.append(other.locations[0])

    def model(self) -> WarningGroup:
        return WarningGroup(
            category=self.category,
            message=self.message,
            count=self.count,
            locations=self.locations,
            traceback=self.traceback,
        )


def _first_line(text: str) -> str:
    line = text.strip().split("\n", 1)[0].strip()
    return line if len(line) <= WARNING_MESSAGE_CHARS else line[: WARNING_MESSAGE_CHARS - 3] + "..."


_TB_FRAME = re.compile(r'^  File "(?P<path>.*)", line (?P<line>\d+), in (?P<name>.*)$')


def _cut_traceback(text: str, project: ProjectCode) -> tuple[str | None, str | None, str]:
    """(the end of the last Python traceback in ``text``: its last
    ``WARNING_TRACEBACK_FRAMES`` frames, the project's preferred, and its exception line;
    ``path:line`` of the innermost project frame (else the innermost frame); the
    exception line). The traceback is None when ``text`` holds none."""
    start = text.rfind("Traceback (most recent call last):")
    if start < 0:
        return None, None, _first_line(text)
    frames: list[tuple[str, str, bool]] = []  # (frame line, code line, in the project)
    exception = ""
    lines = text[start:].split("\n")[1:]
    for i, line in enumerate(lines):
        frame = _TB_FRAME.match(line)
        if frame:
            path = frame["path"]
            code = lines[i + 1].strip() if i + 1 < len(lines) and lines[i + 1].startswith("    ") else ""
            shown = f"{shown_path(path, project)}:{frame['line']} in {frame['name']}"
            frames.append((shown, code, is_project_code(path, project)))
        elif line and not line.startswith(" "):
            exception = _first_line(line)
            break
    own = [f for f in frames if f[2]]
    kept = (own or frames)[-WARNING_TRACEBACK_FRAMES:]
    out: list[str] = []
    for where, code, _ in kept:
        out.append(where)
        if code:
            out.append("    " + code)
    out.append(exception)
    innermost = kept[-1][0].rsplit(" in ", 1)[0] if kept else None
    return "\n".join(out), innermost, exception


def stack_dump_armed(records: Path) -> bool:
    """True when the record file's first line (the plugin's ``SessionStart``) says the
    stack dump is armed: the dump signal may then be sent (else it would kill pytest)."""
    try:
        with open(records, "rb") as f:
            first = f.readline(64 * 1024)
    except OSError:
        return False
    record = _json(first.rstrip(b"\n"), first.endswith(b"\n")) if record_type(first) == b"SessionStart" else None
    return record is not None and record.get("stack_dump_armed") is True


# pytest-json-report's outcome of a test from one of its reports: the test's is the last that is not a pass
def _report_outcome(kind: bytes, when: str, outcome: str, xfail: bool) -> str | None:
    if kind == b"SubTestReport":
        return "failed" if outcome == "failed" else None  # a failed subtest fails its test
    if outcome == "failed":
        return "error" if when in ("setup", "teardown") else "failed"
    if outcome == "skipped":
        return "xfailed" if xfail else "skipped"
    if outcome == "passed" and xfail:
        return "xpassed"
    return None  # passed, or a plugin's own (pytest-rerunfailures' rerun: a later report settles it)


def read_outcomes(records: Path) -> dict[str, str]:
    """Each test the record file says finished: node id -> outcome (pytest-json-report's
    names: ``passed``, ``failed``, ``error``, ``skipped``, ``xfailed``, ``xpassed``), in
    finishing order. Streams the file (a passed report is read from its head; only the
    others are decoded); collection errors, lines cut by a killed pytest and a missing
    file are skipped (a missing file reads as no test). A test whose teardown report
    never came (a stopped run, an xdist worker that crashed) is among them, after the
    others, when it ran: a call report, or a setup that did not pass (as the report
    engine reads it)."""
    outcomes: dict[str, str] = {}
    current: dict[bytes, str] = {}  # encoded node id -> the outcome so far, until its teardown
    ran: dict[bytes, None] = {}  # ... of those (in order), the ones that ran (a call, or a setup that did not pass)
    for line, whole in RecordLines(records):
        kind = record_type(line)
        if kind != b"TestReport" and kind != b"SubTestReport":
            continue
        match = _TEST_REPORT.match(line)
        if match is None:
            continue
        key, when, outcome = _ascii_key(match[1]), match[2].decode(), match[3].decode()
        xfail = False
        if not (outcome == "passed" and whole and _LEAN_TAIL.match(line, match.end())):
            record = _json(line, whole)
            xfail = record is not None and "wasxfail" in record
        category = _report_outcome(kind, when, outcome, xfail)
        so_far = current.setdefault(key, "passed")
        if category is not None:
            current[key] = category
        if when == "call" and kind == b"TestReport" or when == "setup" and outcome != "passed":
            ran[key] = None
        if when == "teardown":
            ran.pop(key, None)
            _add_outcome(outcomes, key, current.pop(key, so_far))
    for key in ran:
        _add_outcome(outcomes, key, current[key])
    return outcomes


def _add_outcome(outcomes: dict[str, str], encoded: bytes, outcome: str) -> None:
    try:
        outcomes[json.loads(encoded)] = outcome
    except ValueError:
        pass
