"""The event plugin's side in the server: where the plugin is, how pytest loads it, and
how its files are read.

The plugin (``pytest_plugin/pytest_mcp_server_events.py``, whose docstring gives the
line formats) appends one line per event to the events file: tests collected,
deselected, started and finished, warnings, collected node ids (``--collect-only``).
``EventFollower`` follows that file during a run for progress; ``read_collected`` reads a
collect-only run's node ids as a page; ``read_run_events`` reads a finished run's file
once (the test still running, warnings grouped, deselected count).
``write_partial_report`` turns the plugin's per-test records into a pytest-json-report
file of the tests that finished, for the report engine, when pytest wrote no report of
its own (it was killed, or crashed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from pytest_mcp_server.domain.tools import WarningGroup, WarningsSummary

PLUGIN_DIR = Path(__file__).resolve().parent / "pytest_plugin"
"""Put first on the child's ``PYTHONPATH``; holds only the plugin, so nothing else of
the server becomes importable in the project's tests."""
PLUGIN_NAME = "pytest_mcp_server_events"
"""The plugin's module name, loaded with ``-p``."""
PROGRESS_INTERVAL_S = 0.25
"""Shortest time between two progress notifications, seconds."""
MAX_FILES_LISTED = 500
"""Files listed with their test counts by ``read_collected`` (the others are counted)."""
WARNING_GROUPS_LISTED = 5
"""Distinct warnings listed in an answer (the others are counted in ``omitted``)."""
WARNING_LOCATIONS = 3
"""Distinct ``path:line`` kept per listed warning."""
WARNING_MESSAGE_CHARS = 200
"""Characters kept of a warning's message (its first line)."""
WARNING_TRACEBACK_FRAMES = 3
"""Frames kept of the traceback an exception warning (thread, ``__del__``) carries."""
_WARNING_KEYS_TRACKED = 10_000
# distinct warnings counted one by one; beyond, new ones are only counted (memory stays bounded)
_EXCEPTION_WARNINGS = ("PytestUnhandledThreadExceptionWarning", "PytestUnraisableExceptionWarning")

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
            if line.startswith(b"t "):
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


@dataclass
class RunEvents:
    """What the events file of a test run says once the run ended.

    ``running``: tests started and not finished, node id -> start (unix time, seconds),
    in start order (with xdist, several). ``deselected``: tests deselected.
    ``warnings``: the warnings grouped (``WarningsSummary``).
    """

    running: dict[str, float] = field(default_factory=dict)
    deselected: int = 0
    warnings: WarningsSummary = field(default_factory=WarningsSummary)


def read_run_events(events: Path, root: Path) -> RunEvents:
    """Read a test run's events file once, line by line (memory stays bounded: finished
    tests are forgotten, distinct warnings beyond an internal limit only counted).
    ``root``: the project root, to which warning paths are made relative. A missing
    file reads as no events."""
    result = RunEvents()
    groups: dict[tuple[str, str, str], _WarningTally] = {}
    total = 0
    untracked: set[tuple[str, str, str]] = set()
    running: dict[str, float] = {}
    try:
        f = open(events, encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return result
    with f:
        for line in f:
            tag, _, rest = line.rstrip("\n").partition(" ")
            try:
                # node ids stay JSON-encoded until the end: a 100k-test run decodes only the unfinished
                if tag == "s":
                    started, _, node = rest.partition(" ")
                    running[node] = float(started)
                elif tag == "t":
                    running.pop(rest, None)
                elif tag == "x":
                    result.deselected += int(rest)
                elif tag == "w":
                    total += 1
                    tally = _WarningTally.of(json.loads(rest), root)
                    known = groups.get(tally.key)
                    if known is not None:
                        known.add(tally)
                    elif len(groups) < _WARNING_KEYS_TRACKED:
                        groups[tally.key] = tally
                    elif len(untracked) < _WARNING_KEYS_TRACKED:
                        untracked.add(tally.key)
            except (ValueError, TypeError, KeyError, AttributeError):
                continue  # a line cut by a killed pytest, or not ours
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
    def of(cls, record: dict[str, object], root: Path) -> _WarningTally:
        category = str(record["category"])
        text = str(record["message"])
        message = _first_line(text)
        location = f"{_relative(str(record['filename']), root)}:{record['lineno']}"
        traceback = None
        key = (category, message, "")
        if category in _EXCEPTION_WARNINGS:
            # pytest's own file is the warning's location: the traceback says where it happened
            traceback, where, exception = _cut_traceback(text, root)
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


def _relative(path: str, root: Path) -> str:
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return path


_TB_FRAME = re.compile(r'^  File "(?P<path>.*)", line (?P<line>\d+), in (?P<name>.*)$')


def _cut_traceback(text: str, root: Path) -> tuple[str | None, str | None, str]:
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
            relative = _relative(path, root)
            code = lines[i + 1].strip() if i + 1 < len(lines) and lines[i + 1].startswith("    ") else ""
            frames.append((f"{relative}:{frame['line']} in {frame['name']}", code, relative != path))
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


def write_partial_report(results: Path, dest: Path, root: Path) -> bool:
    """Write ``dest``, a pytest-json-report document of the tests the event plugin saw
    finish (its ``--mcp-results`` file ``results``: one JSON line per finished test or
    collection error), for the report engine. Streams: memory holds one line at a
    time (and the collection errors). Returns False (and writes nothing) when no test
    finished and nothing failed to collect. A line cut by a killed pytest is skipped."""
    collectors: list[str] = []
    wrote = False
    try:
        src = open(results, encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return False
    with src, open(dest, "w", encoding="utf-8") as out:
        out.write('{"created": 0, "duration": 0, "exitcode": 2, "root": ' + json.dumps(str(root)))
        out.write(', "environment": {}, "summary": {}, "tests": [')
        for line in src:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if not isinstance(record, dict):
                continue
            if "test" in record:
                out.write(("," if wrote else "") + json.dumps(record["test"]))
                wrote = True
            elif "collector" in record:
                collectors.append(json.dumps(record["collector"]))
        out.write('], "collectors": [' + ",".join(collectors) + "]}")
    if not wrote and not collectors:
        dest.unlink(missing_ok=True)
        return False
    return True


def read_outcomes(results: Path) -> dict[str, str]:
    """Each test the event plugin saw finish, from its ``--mcp-results`` file: node id
    -> outcome (pytest-json-report's names: ``passed``, ``failed``, ``error``,
    ``skipped``, ``xfailed``, ``xpassed``), in finishing order. Streams the file (one line
    in memory at a time); collection errors, lines cut by a killed pytest and a missing
    file are skipped (a missing file reads as no test)."""
    outcomes: dict[str, str] = {}
    try:
        src = open(results, encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return outcomes
    with src:
        for line in src:
            try:
                test = json.loads(line)["test"]
                outcomes[str(test["nodeid"])] = str(test["outcome"])
            except (ValueError, TypeError, KeyError):
                continue
    return outcomes
