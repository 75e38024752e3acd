"""Streaming pytest report-log reader, the pure twin of ``rust/core/src/reportlog.rs``.

A report log (pytest-reportlog's ``--report-log=FILE``, and the server plugin's dialect of
it) is JSON lines: one object per line, each the dict pytest's
``pytest_report_to_serializable`` gives for a report, told apart by ``$report_type``. The
file is read line by line (orjson per line); only the tests still waiting for their
teardown report are held, each capped as docs/ENGINE.md (*Text capping*) says. A test's
reports become the phase data of a pytest-json-report entry, and ``TestEntries`` (the
pytest-json-report parser's) turns them into records, so a run answers the same from
either file. Rules: docs/ENGINE.md, *pytest report-log*.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import IO, Any

import orjson

from pytest_mcp_server.engine.models import ReportError

from .cut import chomp, is_chain_line, syntax_position
from .project import ProjectCode
from .pytest_json import TestEntries, _capped, _capped_text, _CrashData, _head_text, _PhaseData
from .record import HEADER, LOCATION, SYNTAX_POSITION, CollectionErrorRecord, Emit, ReprFrame, ReprFrames, TestRecord
from .text import ATTR_CAP, PY_WHITESPACE, U64_MAX, duration_us_from_float, py_strip
from .warnings import WarningGroups

_PHASES = ("setup", "call", "teardown")
_REPORT_OUTCOMES = ("passed", "failed", "skipped", "rerun")
# The deepest nesting of arrays/objects a line may have (the line's object is level 1):
# serde_json's recursion limit (128 levels fail), which the native reader keeps.
MAX_DEPTH = 127
# The largest count of bytes a report's ``text_bytes_cut``/``sections_bytes_cut`` may give
# (the plugin's per-report cut, docs/ENGINE.md *pytest report-log*): far above any file's
# size, and low enough that adding a test's counts up never overflows 64 bits.
CUT_BYTES_MAX = 1 << 53

# The line boundaries of Python's str.splitlines() (pytest's TerminalWriter._write_source uses it).
_SPLITLINES = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
# The width of pytest's terminal writer when it writes to a file (its fallback).
_WIDTH = 80
_ENTRY_SEP = "_ " * (_WIDTH // 2)
_FAIL_MARKER = ">   "
# "Captured stdout call" -> (kind, phase index)
_SECTION_NAMES = {
    f"Captured {kind} {when}": (kind, i) for kind in ("stdout", "stderr", "log") for i, when in enumerate(_PHASES)
}
# Finds the brackets outside strings (a string is matched whole); only used for lines
# with many brackets.
_BRACKETS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


class SessionFacts:
    """What a report log says about its session beyond the tests' records (docs/ENGINE.md,
    *Session*); the twin of ``SessionFacts`` in ``reportlog.rs``.

    ``exit_status``: SessionFinish ``exitstatus`` (None: the session never finished, or
    no status). ``collected``: the first CollectionFinish ``collected``. ``deselected``:
    the sum of the Deselected ``count``s. ``running``: tests started (TestStart) whose
    teardown report never came, node id -> ``start`` (unix seconds), in start order.
    ``stack_dump_armed``: SessionStart's ``stack_dump_armed`` is ``true``. ``warnings``:
    the WarningMessage records, grouped (``warnings.WarningGroups``).
    """

    __slots__ = ("exit_status", "collected", "deselected", "running", "stack_dump_armed", "warnings")

    def __init__(self, budgets: dict[str, int], project: ProjectCode | None) -> None:
        self.exit_status: int | None = None
        self.collected: int | None = None
        self.deselected = 0
        self.running: dict[str, float] = {}
        self.stack_dump_armed = False
        self.warnings = WarningGroups(budgets, project)

    def merge(self, other: SessionFacts) -> None:
        """``other``'s facts after these (a later file of the same summary): the highest
        exit status, counts added up, running tests and warnings after these."""
        statuses = [s for s in (self.exit_status, other.exit_status) if s is not None]
        self.exit_status = max(statuses) if statuses else None
        known = [n for n in (self.collected, other.collected) if n is not None]
        self.collected = min(sum(known), U64_MAX) if known else None
        self.deselected = min(self.deselected + other.deselected, U64_MAX)
        self.running.update(other.running)
        self.stack_dump_armed = self.stack_dump_armed or other.stack_dump_armed
        self.warnings.merge(other.warnings)

    def json(self) -> dict[str, Any]:
        """The summary's ``session`` object."""
        return {
            "exit_status": self.exit_status,
            "collected": self.collected,
            "deselected": self.deselected,
            "running": [{"node_id": n, "started": t} for n, t in self.running.items()],
            "stack_dump_armed": self.stack_dump_armed,
            "warnings": self.warnings.summary(),
        }


class CollectedFacts:
    """The collected node ids read so far for a page (docs/ENGINE.md, *Session*); the
    twin of ``CollectedFacts`` in ``reportlog.rs``. The reader of each file adds its
    ``CollectedIds`` lines' ids after the earlier files' ids, so that the page is exact
    over the files in input order. Memory is the page's ids and the files' paths.

    ``offset``, ``limit``: the page ``[offset, offset + limit)``; ``max_files``: files
    listed. ``total``: ids read (duplicates included). ``files``: ids per file (a node
    id's path, before its first ``::``), the first ``max_files`` files in the order their
    first id came. ``other_files``: the distinct files beyond them. ``page``: the ids of
    the page, in order, whole (an id cut short could not be run).
    """

    __slots__ = ("offset", "limit", "max_files", "total", "files", "other_files", "page")

    def __init__(self, offset: int, limit: int, max_files: int) -> None:
        self.offset = offset
        self.limit = limit
        self.max_files = max_files
        self.total = 0
        self.files: dict[str, int] = {}
        self.other_files: set[str] = set()
        self.page: list[str] = []

    def add(self, node_id: str) -> None:
        """One more collected id: in the page when its place is, counted for its file."""
        if self.offset <= self.total < self.offset + self.limit:
            self.page.append(node_id)
        self.total = min(self.total + 1, U64_MAX)
        path = node_id.partition("::")[0]
        if path in self.files:
            self.files[path] += 1
        elif len(self.files) < self.max_files:
            self.files[path] = 1
        else:
            self.other_files.add(path)

    def json(self) -> dict[str, Any]:
        """The session's ``collected_ids`` object."""
        return {"total": self.total, "files": self.files, "files_omitted": len(self.other_files), "page": self.page}


@dataclass(slots=True)
class ReportlogEnd:
    """What a report log says about the whole run, beyond its records.

    ``cut_last_line``: the file ended in the middle of a line (no trailing newline, not
    valid JSON: a killed run); the complete lines were summarised.
    ``session_duration_us``: pytest's session time in integer microseconds, when the log
    has it (SessionFinish ``duration``, else the last report ``stop`` minus the first
    ``start``); None otherwise. ``session``: what it says of its session.
    """

    cut_last_line: bool = False
    session_duration_us: int | None = None
    session: SessionFacts | None = None


class _Malformed(Exception):
    pass


class _Test:
    """A test waiting for its teardown report."""

    __slots__ = ("category", "phases", "outputs", "failed_subtests", "has_call", "setup_not_passed")

    def __init__(self) -> None:
        self.category = ""  # the last non-passing status of its reports ("" none)
        self.phases: list[_PhaseData | None] = [None, None, None]
        # (kind, phase index) -> (kept tail, bytes omitted), from the first report with it
        self.outputs: dict[tuple[str, int], tuple[str, int]] = {}
        self.failed_subtests = 0
        self.has_call = False
        self.setup_not_passed = False


def parse_reportlog(
    f: IO[bytes],
    path: str,
    budgets: dict[str, int],
    emit: Emit,
    project: ProjectCode | None = None,
    collected: CollectedFacts | None = None,
) -> ReportlogEnd:
    """Read a pytest report log from ``f`` (binary, at byte 0), calling ``emit`` with each
    ``TestRecord`` / ``CollectionErrorRecord`` in report order (a test at its teardown).

    ``budgets`` needs ``max_output_bytes``, ``max_log_bytes`` and the warning budgets
    (``max_warning_*``). With ``collected``, the ids of the ``CollectedIds`` lines are
    added to it, after those it holds (the earlier files' ids). Returns a
    ``ReportlogEnd``, with what the log says of its session
    (its warnings grouped for ``project``). Raises ``ReportError``: ``malformed`` (naming the line) for a line
    that is not a JSON object, or a wrong type on a field the reader uses;
    ``not_a_report`` when no line has a ``$report_type``. Rules: docs/ENGINE.md,
    *pytest report-log*; the native reader (``reportlog.rs``) gives the same records.
    """
    reader = _Reader(path, budgets, emit, project, collected)
    line_no = 0
    end = ReportlogEnd()
    for raw in f:
        line_no += 1
        if line_no == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        if not raw.strip(b" \t\r\n"):
            continue
        try:
            obj = orjson.loads(raw)
            problem = None
        except orjson.JSONDecodeError as exc:
            problem = f"not valid JSON ({exc.msg})"
        if problem is None and _too_deep(raw):
            problem = f"not valid JSON (arrays/objects nested deeper than {MAX_DEPTH} levels)"
        if problem is not None:
            if not raw.endswith(b"\n"):
                end.cut_last_line = True
                break
            raise reader.malformed(line_no, problem)
        if type(obj) is not dict:
            raise reader.malformed(line_no, "a JSON value that is not an object")
        try:
            reader.line(obj)
        except _Malformed as exc:
            raise reader.malformed(line_no, str(exc)) from None
    if not reader.seen_report_type:
        raise ReportError(
            "not_a_report",
            path,
            'JSON lines without a "$report_type" key; pass a report log written by pytest --report-log',
        )
    reader.finish()
    end.session_duration_us = reader.session_duration_us()
    end.session = reader.session
    return end


def _too_deep(raw: bytes) -> bool:
    """Whether the line nests arrays/objects deeper than MAX_DEPTH (cheap unless the line
    has more than MAX_DEPTH brackets)."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return False
    depth = 0
    for m in _BRACKETS.finditer(raw):
        c = m.group()
        if c == b"[" or c == b"{":
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif c == b"]" or c == b"}":
            depth -= 1
    return False


class _Reader:
    """The state of one report log: the tests waiting for their teardown, in order of
    their first report."""

    def __init__(
        self,
        path: str,
        budgets: dict[str, int],
        emit: Emit,
        project: ProjectCode | None,
        collected: CollectedFacts | None,
    ) -> None:
        self.path = path
        self.session = SessionFacts(budgets, project)
        # Where the CollectedIds lines' ids go (None: no page was asked for).
        self.collected = collected
        self.emit = emit
        self.max_output_bytes = budgets["max_output_bytes"]
        self.max_log_bytes = budgets["max_log_bytes"]
        self.entries = TestEntries(emit, self.max_output_bytes, self.max_log_bytes)
        self.pending: dict[str, _Test] = {}
        self.seen_report_type = False
        self.finish_duration_us: int | None = None
        self.first_start: float | None = None
        self.last_stop: float | None = None

    def malformed(self, line_no: int, what: str) -> ReportError:
        return ReportError(
            "malformed",
            self.path,
            f"line {line_no}: {what}; this does not follow pytest's report-log format, "
            "regenerate it (pytest --report-log)",
            f"line {line_no}",
        )

    # -- lines ------------------------------------------------------------------------

    def line(self, obj: dict[str, Any]) -> None:
        if "$report_type" in obj:
            kind = obj["$report_type"]
        elif "_report_type" in obj:
            kind = obj["_report_type"]  # pytest 9's subtest reports, unrenamed
        else:
            return
        if type(kind) is not str:
            raise _Malformed("$report_type must be a string")
        self.seen_report_type = True
        if kind == "TestReport":
            self.test_report(obj)
        elif kind == "SubTestReport":
            self.subtest_report(obj)
        elif kind == "CollectReport":
            self.collect_report(obj)
        elif kind == "SessionStart":
            self.session.stack_dump_armed = obj.get("stack_dump_armed") is True
            root = obj.get("root")
            if root is not None:
                if type(root) is not str:
                    raise _Malformed("SessionStart root must be a string")
                # A root beyond the cap could strip a wrong prefix: then none is.
                self.entries.root = root if len(root.encode("utf-8", "surrogatepass")) <= ATTR_CAP else None
        elif kind == "SessionFinish":
            duration = _number(obj, "duration", "SessionFinish")
            if duration is not None:
                self.finish_duration_us = duration_us_from_float(duration)
            status = _integer(obj, "exitstatus", "SessionFinish")
            if status is not None:
                self.session.exit_status = status
        elif kind == "TestStart":
            node_id = _string(obj, "nodeid", "TestStart", required=True)
            start = _number(obj, "start", "TestStart")
            if start is None:
                raise _Malformed('TestStart has no number "start"')
            assert node_id is not None
            self.session.running[_head_text(node_id, ATTR_CAP)[0]] = start
        elif kind == "Deselected":
            count = _integer(obj, "count", "Deselected")
            if count is None or count < 0:
                raise _Malformed("Deselected count must be an integer >= 0")
            self.session.deselected = min(self.session.deselected + count, U64_MAX)
        elif kind == "CollectionFinish":
            collected = _integer(obj, "collected", "CollectionFinish")
            if collected is None or collected < 0:
                raise _Malformed("CollectionFinish collected must be an integer >= 0")
            if self.session.collected is None:
                self.session.collected = collected
        elif kind == "CollectedIds":
            node_ids = obj.get("nodeids")
            if type(node_ids) is not list:
                raise _Malformed("CollectedIds nodeids must be an array")
            if self.collected is not None:
                for node_id in node_ids:
                    if type(node_id) is str:  # a value that is not a string is no node id: skipped
                        self.collected.add(node_id)
        elif kind == "WarningMessage":
            self.warning(obj)

    def warning(self, obj: dict[str, Any]) -> None:
        """A WarningMessage (pytest-reportlog's, the plugin's): ``category`` a string or
        null (a ``Warning``), ``message`` a string, ``filename`` and ``lineno`` a string
        and an integer or null (then no location)."""
        category = obj.get("category")
        if category is None:
            category = "Warning"
        elif type(category) is not str:
            raise _Malformed("WarningMessage category must be a string")
        message = _string(obj, "message", "WarningMessage", required=True)
        assert message is not None
        filename = _string(obj, "filename", "WarningMessage")
        lineno = _integer(obj, "lineno", "WarningMessage")
        location = (filename, lineno) if filename is not None and lineno is not None else None
        self.session.warnings.add(category, message, location)

    def test_report(self, obj: dict[str, Any]) -> None:
        node_id = _string(obj, "nodeid", "TestReport", required=True)
        when = _string(obj, "when", "TestReport", required=True)
        outcome = _string(obj, "outcome", "TestReport", required=True)
        assert node_id is not None and when is not None and outcome is not None
        if when not in _PHASES:
            raise _Malformed("TestReport when must be setup, call or teardown")
        if outcome not in _REPORT_OUTCOMES:
            raise _Malformed("TestReport outcome must be passed, failed, skipped or rerun")
        duration = _number(obj, "duration", "TestReport")
        self.times(obj)
        node_id = _head_text(node_id, ATTR_CAP)[0]
        test = self.pending.get(node_id)
        if test is None:
            test = self.pending[node_id] = _Test()
        index = _PHASES.index(when)
        category = _status(when, outcome, "wasxfail" in obj)
        if category:
            test.category = category
        phase: _PhaseData = {
            "duration_us": duration_us_from_float(duration) if duration is not None else 0,
            "failed": outcome == "failed",
        }
        text_cut = _cut_bytes(obj.get("text_bytes_cut"), "TestReport text_bytes_cut")
        sections_cut = _sections_cut(obj)
        if outcome == "failed":
            text, crash, frames = _longrepr(obj.get("longrepr"), stripped=True)
            if text is not None:
                if type(obj.get("longrepr")) is str:
                    text = relative_locations(text, node_id)
                kept, omitted = _capped_text(text)
                if frames is not None and omitted == 0:  # a cut text is not their text
                    phase["frames"] = frames
                phase["longrepr"] = (kept, omitted + text_cut)
            if crash:
                phase["crash"] = crash
        test.phases[index] = phase
        if when == "call":
            test.has_call = True
        elif when == "setup" and outcome != "passed":
            test.setup_not_passed = True
        self.sections(obj, test, sections_cut)
        if when == "teardown":
            self.session.running.pop(node_id, None)
            del self.pending[node_id]
            self.complete(node_id, test)

    def sections(self, obj: dict[str, Any], test: _Test, cut: dict[str, int]) -> None:
        """Keep the captured output sections of the test (the first report carrying one
        gives it: a report carries the sections of the phases before it too), each with
        the bytes the record plugin cut of it (``cut``, by section name) counted as
        omitted."""
        sections = obj.get("sections")
        if sections is None:
            return
        if type(sections) is not list:
            raise _Malformed("sections must be an array")
        for section in sections:
            if type(section) is not list or len(section) != 2 or type(section[0]) is not str:
                raise _Malformed("each of sections must be a [name, content] array of strings")
            name, content = section
            if type(content) is not str:
                raise _Malformed("each of sections must be a [name, content] array of strings")
            key = _SECTION_NAMES.get(name)
            if key is None or key in test.outputs or not content:
                continue
            if key[0] == "log":
                # pytest strips the log section; pytest-json-report ends every record
                # with a newline, the last one too
                kept, omitted = _capped(content if content.endswith("\n") else content + "\n", 0, self.max_log_bytes)
            else:
                kept, omitted = _capped(content, 0, self.max_output_bytes)
            test.outputs[key] = (kept, omitted + cut.get(name, 0))

    def complete(self, node_id: str, test: _Test) -> None:
        """A test whose reports are all in: one entry for ``TestEntries``."""
        phases = test.phases
        for (kind, index), value in test.outputs.items():
            phase = phases[index]
            if phase is None:  # a phase known only from a later report's sections
                phase = phases[index] = {"duration_us": 0, "failed": False}
            if kind == "stdout":
                phase["stdout"] = value
            elif kind == "stderr":
                phase["stderr"] = value
            else:
                phase["log"] = value
        outcome = test.category or "passed"
        if outcome == "passed" and test.failed_subtests:
            # pytest counted it passed although subtests failed (unittest's subTest):
            # listed failed with pytest's wording (docs/ENGINE.md, *Subtests*)
            n = test.failed_subtests
            call = phases[1]
            if call is None:
                call = phases[1] = {"duration_us": 0, "failed": False}
            call["failed"] = True
            call["longrepr"] = ("", 0)
            call["crash"] = {"message": (f"contains {n} failed subtest{'s' if n > 1 else ''}", 0)}
            self.entries.push(node_id, "failed", phases, passed_with_failed_subtests=True)
            return
        self.entries.push(node_id, outcome, phases)

    def subtest_report(self, obj: dict[str, Any]) -> None:
        node_id = _string(obj, "nodeid", "SubTestReport", required=True)
        outcome = _string(obj, "outcome", "SubTestReport", required=True)
        assert node_id is not None and outcome is not None
        if outcome not in _REPORT_OUTCOMES:
            raise _Malformed("SubTestReport outcome must be passed, failed, skipped or rerun")
        label = _subtest_label(obj.get("_subtest.context"))
        self.times(obj)
        node_id = _head_text(node_id, ATTR_CAP)[0]
        if outcome == "passed" and "wasxfail" not in obj:
            self.emit(TestRecord(node_id=node_id, outcome="passed", subtest=label))
        elif outcome == "failed":
            test = self.pending.get(node_id)
            if test is None:
                test = self.pending[node_id] = _Test()
            test.failed_subtests += 1
            record = TestRecord(node_id=node_id, outcome="failed", phase="call", subtest=label)
            text_cut = _cut_bytes(obj.get("text_bytes_cut"), "SubTestReport text_bytes_cut")
            text, crash, frames = _longrepr(obj.get("longrepr"), stripped=True)
            if text is not None:
                record.text, omitted = _capped_text(text)
                record.frames = frames if omitted == 0 else None
                record.text_bytes_omitted = omitted + text_cut
            if crash:
                if "message" in crash:
                    record.message, dropped = crash["message"]
                    record.text_bytes_omitted += dropped
                if "path" in crash:
                    record.path = _strip_root(crash["path"][0], self.entries.root)
                record.line = crash.get("line")
            self.emit(record)

    def collect_report(self, obj: dict[str, Any]) -> None:
        node_id = _string(obj, "nodeid", "CollectReport", required=True)
        outcome = _string(obj, "outcome", "CollectReport", required=True)
        assert node_id is not None and outcome is not None
        if outcome != "failed":
            return
        text_cut = _cut_bytes(obj.get("text_bytes_cut"), "CollectReport text_bytes_cut")
        text = _longrepr(obj.get("longrepr"), stripped=False)[0]
        record = CollectionErrorRecord(path=_head_text(node_id, ATTR_CAP)[0])
        if text is not None:
            record.text, omitted = _capped_text(text)
            record.text_bytes_omitted = omitted + text_cut
        self.emit(record)

    def times(self, obj: dict[str, Any]) -> None:
        """The first ``start`` and last ``stop`` of the reports (the session time when the
        log has no SessionFinish ``duration``)."""
        start = _number(obj, "start", "report")
        stop = _number(obj, "stop", "report")
        if start is not None and self.first_start is None:
            self.first_start = start
        if stop is not None:
            self.last_stop = stop

    def finish(self) -> None:
        """The end of the file: tests whose teardown never came (a killed run) are
        emitted when they ran (a call report, or a setup that did not pass)."""
        for node_id, test in self.pending.items():
            if test.has_call or test.setup_not_passed:
                self.complete(node_id, test)
        self.pending.clear()
        self.entries.end()

    def session_duration_us(self) -> int | None:
        if self.finish_duration_us is not None:
            return self.finish_duration_us
        if self.first_start is not None and self.last_stop is not None:
            return duration_us_from_float(self.last_stop - self.first_start)
        return None


def _strip_root(path: str, root: str | None) -> str:
    from .pytest_json import _strip_root as strip

    return strip(path, root)


# -- fields ---------------------------------------------------------------------------


def _string(obj: dict[str, Any], key: str, whose: str, required: bool = False) -> str | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise _Malformed(f"{whose} has no string {key!r}")
        return None
    if type(value) is not str:
        raise _Malformed(f"{whose} {key} must be a string")
    return value


def _integer(obj: dict[str, Any], key: str, whose: str) -> int | None:
    """An integer field (in i64's range); None when absent or null."""
    value = obj.get(key)
    if value is None:
        return None
    if type(value) is not int or not -(2**63) <= value < 2**63:
        raise _Malformed(f"{whose} {key} must be an integer")
    return value


def _cut_bytes(value: Any, what: str) -> int:
    """A count of bytes the record plugin cut (``text_bytes_cut``, a value of
    ``sections_bytes_cut``): an integer from 0 to ``CUT_BYTES_MAX``; absent or null, 0."""
    if value is None:
        return 0
    if type(value) is not int or not 0 <= value <= CUT_BYTES_MAX:
        raise _Malformed(f"{what} must be an integer from 0 to 2^53")
    return value


def _sections_cut(obj: dict[str, Any]) -> dict[str, int]:
    """A report's ``sections_bytes_cut``: section name -> bytes the record plugin cut of
    that section (absent or null: none)."""
    value = obj.get("sections_bytes_cut")
    if value is None:
        return {}
    if type(value) is not dict:
        raise _Malformed("TestReport sections_bytes_cut must be an object")
    return {name: _cut_bytes(count, "each of TestReport sections_bytes_cut") for name, count in value.items()}


def _number(obj: dict[str, Any], key: str, whose: str) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if type(value) is not int and type(value) is not float:
        raise _Malformed(f"{whose} {key} must be a number")
    return float(value)


def _status(when: str, outcome: str, wasxfail: bool) -> str:
    """A report's status word as pytest (with its skipping plugin) gives it; "" for a
    passing setup/teardown and a passing call (pytest-json-report keeps the last
    non-passing one as the test's outcome)."""
    if wasxfail:
        if outcome == "skipped":
            return "xfailed"
        if outcome == "passed":
            return "xpassed"
    if outcome == "failed":
        return "failed" if when == "call" else "error"
    if outcome == "skipped":
        return "skipped"
    if outcome == "rerun":
        return "rerun"
    return ""


def _subtest_label(context: Any) -> str:
    """pytest 9's subtest description: ``[msg] (k=v, ...)``, ``(<subtest>)`` when empty;
    ``""`` without a context object."""
    if context is None:
        return ""
    if type(context) is not dict:
        raise _Malformed("_subtest.context must be an object")
    msg = context.get("msg")
    kwargs = context.get("kwargs")
    if msg is not None and type(msg) is not str:
        raise _Malformed("_subtest.context msg must be a string or null")
    if kwargs is not None and type(kwargs) is not dict:
        raise _Malformed("_subtest.context kwargs must be an object")
    parts = []
    if msg is not None:
        parts.append(f"[{msg}]")
    if kwargs:
        for v in kwargs.values():
            if type(v) is not str:
                raise _Malformed("_subtest.context kwargs values must be strings")
        parts.append("(" + ", ".join(f"{k}={v}" for k, v in kwargs.items()) + ")")
    return _head_text(" ".join(parts) or "(<subtest>)", ATTR_CAP)[0]


# -- longrepr ---------------------------------------------------------------------------


def relative_locations(text: str, node_id: str) -> str:
    """A string longrepr's location lines made relative: a line that starts with ``/``
    and holds ``/<path>:<ASCII digits>: `` (``<path>`` the node id's file, before its
    first ``::``) keeps what follows that first ``/``. pytest writes a doctest's location
    lines with the absolute path (``/root/pkg/mod.py:12: DocTestFailure``) where its
    tracebacks write paths relative to the invocation directory; the server's plugin
    strips them when it writes, pytest-reportlog does not. Lines split on ``\n`` only."""
    path = node_id.split("::", 1)[0]
    marker = "/" + path + ":"
    if not path or marker not in text:
        return text
    lines = text.split("\n")
    for n, line in enumerate(lines):
        if not line.startswith("/"):
            continue
        at = line.find(marker)
        if at < 0:
            continue
        end = start = at + len(marker)
        while end < len(line) and "0" <= line[end] <= "9":
            end += 1
        if end > start and line.startswith(": ", end):
            lines[n] = line[at + 1 :]
    return "\n".join(lines)


def _longrepr(value: Any, stripped: bool) -> tuple[str | None, _CrashData, ReprFrames | None]:
    """A report's ``longrepr`` -> (text as pytest prints it, crash data, frames).

    A string is the text (``stripped``: as ``report.longreprtext`` strips it); a skip's
    ``[path, lineno, reason]`` gives the reason as the crash message; the structured form
    is rendered as pytest's ``toterminal`` writes it and stripped, its ``reprcrash`` the
    crash (path, lineno, message), its entries the frames (None when an entry holds them
    only as text: a native-style one; docs/ENGINE.md, *Frames as data*)."""
    crash: _CrashData = {}
    if value is None:
        return None, crash, None
    if type(value) is str:
        return (py_strip(value) if stripped else value), crash, None
    if type(value) is list:
        if len(value) == 3 and type(value[2]) is str:
            crash["message"] = _head_text(value[2], ATTR_CAP)
        return None, crash, None
    if type(value) is not dict:
        raise _Malformed("longrepr must be a string, an array, an object or null")
    if "reprcrash" not in value or "reprtraceback" not in value:
        return None, crash, None
    reprcrash = value["reprcrash"]
    if reprcrash is not None:
        path, lineno, message = _fileloc(reprcrash, "longrepr.reprcrash")
        crash["path"] = _head_text(path, ATTR_CAP)
        crash["message"] = _head_text(message, ATTR_CAP)
        if lineno >= 0:
            crash["line"] = lineno
    out: list[str] = []
    frames: _FramesSoFar | None = _FramesSoFar()
    root: tuple[int, int, int] | None = None  # (piece, offset in it, frames before it)
    chain = value.get("chain")
    if chain:
        if type(chain) is not list:
            raise _Malformed("longrepr.chain must be an array or null")
        for element in chain:
            if type(element) is not list or len(element) != 3:
                raise _Malformed("each longrepr.chain element must be [reprtraceback, reprcrash, description]")
            tb, element_crash, description = element
            if element_crash is not None:
                _fileloc(element_crash, "longrepr.chain reprcrash")
            frames = _render_traceback(out, tb, frames)
            if description is not None:
                if type(description) is not str:
                    raise _Malformed("a longrepr.chain description must be a string or null")
                out.append("\n")
                if frames is not None:
                    for at in _chain_lines_in(description):
                        frames.boundaries.append((len(out), at, True))
                        if root is None:
                            root = (len(out), at, len(frames.frames))
                out.append(description + "\n")
    else:
        frames = _render_traceback(out, value["reprtraceback"], frames)
    sections = value.get("sections")
    if sections is not None:
        if type(sections) is not list:
            raise _Malformed("longrepr.sections must be an array")
        for section in sections:
            if type(section) is not list or len(section) != 3 or not all(type(x) is str for x in section):
                raise _Malformed("each longrepr.sections element must be [name, content, sep] strings")
            name, content, sep = section
            out.append(_sep(sep, name) + "\n")
            out.append(content + "\n")
    rendered = "".join(out)
    text = py_strip(rendered)
    if frames is None:
        return text, crash, None
    return text, crash, frames.finish(out, rendered, root)


class _FramesSoFar:
    """The frames of a longrepr being rendered (``_entry_frames``), each where its line
    starts in the text written so far: (index of the piece of ``out`` it starts, offset
    in that piece); and the separator and chain lines' (piece, offset, is a chain line).
    The twin of ``FramesSoFar`` in ``rust/core/src/reportlog.rs``."""

    __slots__ = ("boundaries", "frames")

    def __init__(self) -> None:
        self.frames: list[tuple[str, int, int, int, str]] = []
        self.boundaries: list[tuple[int, int, bool]] = []

    def finish(self, out: list[str], rendered: str, root: tuple[int, int, int] | None) -> ReprFrames:
        """The frames of ``py_strip(rendered)`` (``rendered`` is ``out`` joined): offsets
        become line numbers of the stripped text."""
        piece_at = [0]
        for piece in out:
            piece_at.append(piece_at[-1] + len(piece))
        starts = [0]
        at = rendered.find("\n")
        while at >= 0:
            starts.append(at + 1)
            at = rendered.find("\n", at + 1)
        lead = len(rendered) - len(rendered.lstrip(PY_WHITESPACE))
        lead_line = bisect_right(starts, lead) - 1

        def line_of(piece: int, offset: int) -> int:
            return bisect_right(starts, piece_at[piece] + offset) - 1 - lead_line

        return ReprFrames(
            frames=[
                ReprFrame(path, line, line_of(piece, offset), kind) for path, line, piece, offset, kind in self.frames
            ],
            boundaries=[(line_of(piece, offset), chain) for piece, offset, chain in self.boundaries],
            # the root's text ends where its chain line starts, in the stripped text
            root=None if root is None else (root[2], piece_at[root[0]] + root[1] - lead),
        )


def _chain_lines_in(description: str) -> list[int]:
    """The offsets in ``description`` of its chain lines (``The above exception was
    ...``), in order."""
    found = []
    at = 0
    for line in description.split("\n"):
        if is_chain_line(chomp(line)):
            found.append(at)
        at += len(line) + 1
    return found


def _fileloc(value: Any, whose: str) -> tuple[str, int, str]:
    if type(value) is not dict:
        raise _Malformed(f"{whose} must be an object or null")
    path, lineno, message = value.get("path"), value.get("lineno"), value.get("message")
    if type(path) is not str or type(lineno) is not int or type(message) is not str:
        raise _Malformed(f"{whose} needs string path, integer lineno and string message")
    return path, lineno, message


def _sep(sepchar: str, title: str | None) -> str:
    """pytest's ``TerminalWriter.sep`` line at 80 columns (without its newline)."""
    size = max(len(sepchar), 1)
    if title is not None:
        n = max((_WIDTH - len(title) - 2) // (2 * size), 1)
        fill = sepchar * n
        line = f"{fill} {title} {fill}"
    else:
        line = sepchar * (_WIDTH // size)
    tail = sepchar.rstrip(PY_WHITESPACE)
    if len(line) + len(tail) <= _WIDTH:
        line += tail
    return line


def _render_traceback(out: list[str], tb: Any, frames: _FramesSoFar | None) -> _FramesSoFar | None:
    """``ReprTraceback.toterminal``; returns ``frames`` with each entry's frames
    appended (``_entry_frames``), or None from an entry that holds them only as text on."""
    if type(tb) is not dict:
        raise _Malformed("a reprtraceback must be an object")
    entries = tb.get("reprentries")
    if type(entries) is not list:
        raise _Malformed("reprtraceback.reprentries must be an array")
    parsed = [_entry(e) for e in entries]
    for i, (style, render, data) in enumerate(parsed):
        if style == "long":
            out.append("\n")
        written = render(out)
        if data is None:  # a native-style entry: its frames are text
            frames = None
        elif frames is not None:
            _entry_frames(frames, *data, written)
        if i < len(parsed) - 1:
            next_style = parsed[i + 1][0]
            if style == "long" or (style == "short" and next_style == "long"):
                if frames is not None:
                    frames.boundaries.append((len(out), 0, False))
                out.append(_ENTRY_SEP + "\n")
    extraline = tb.get("extraline")
    if extraline is not None and type(extraline) is not str:
        raise _Malformed("reprtraceback.extraline must be a string or null")
    if extraline:
        out.append(extraline + "\n")
    return frames


def _string_list(value: Any, whose: str) -> list[str]:
    if type(value) is not list or not all(type(x) is str for x in value):
        raise _Malformed(f"{whose} must be an array of strings")
    return value


def _entry(entry: Any) -> tuple[str, Any, tuple[list[str], str, tuple[str, int, str] | None] | None]:
    """A reprentries element -> (style, a function writing it that returns where it
    wrote its lines (``_Written``), what its frames come from: (lines, style, file
    location), None for a native-style entry, whose frames are text)."""
    if type(entry) is not dict or type(entry.get("data")) is not dict or type(entry.get("type")) is not str:
        raise _Malformed("each reprentries element must be {type: string, data: object}")
    kind, data = entry["type"], entry["data"]
    if kind == "ReprEntryNative":
        lines = _string_list(data.get("lines"), "ReprEntryNative lines")
        return "native", lambda out: out.append("".join(lines)), None
    if kind != "ReprEntry":
        return "", lambda out: (None, []), ([], "", None)  # a kind this reader does not know writes nothing
    lines = _string_list(data.get("lines"), "ReprEntry lines")
    style = data.get("style")
    if type(style) is not str:
        raise _Malformed("ReprEntry style must be a string")
    funcargs = data.get("reprfuncargs")
    args: list[tuple[str, str]] | None = None
    if funcargs:
        if type(funcargs) is not dict or type(funcargs.get("args")) is not list:
            raise _Malformed("ReprEntry reprfuncargs must be {args: [[name, value], ...]}")
        args = []
        for arg in funcargs["args"]:
            if type(arg) is not list or len(arg) != 2 or type(arg[0]) is not str or type(arg[1]) is not str:
                raise _Malformed("each reprfuncargs arg must be [name, value] strings")
            args.append((arg[0], arg[1]))
    reprlocals = data.get("reprlocals")
    local_lines: list[str] | None = None
    if reprlocals:
        if type(reprlocals) is not dict:
            raise _Malformed("ReprEntry reprlocals must be {lines: [...]}")
        local_lines = _string_list(reprlocals.get("lines"), "ReprEntry reprlocals lines")
    fileloc = data.get("reprfileloc")
    loc: tuple[str, int, str] | None = _fileloc(fileloc, "ReprEntry reprfileloc") if fileloc else None

    def render(out: list[str]) -> _Written:
        at_loc = None
        if style == "short":
            if loc is not None:
                at_loc = len(out)
                _write_fileloc(out, loc)
            at_lines = _write_entry_lines(out, lines, style)
            if local_lines is not None:
                out.extend(" " * 8 + line + "\n" for line in local_lines)
            return at_loc, at_lines
        if args is not None:
            _write_funcargs(out, args)
        at_lines = _write_entry_lines(out, lines, style)
        if local_lines is not None:
            out.append("\n")
            out.extend(line + "\n" for line in local_lines)
        if loc is not None:
            if lines:
                out.append("\n")
            at_loc = len(out)
            _write_fileloc(out, loc)
        return at_loc, at_lines

    return style, render, (lines, style, loc)


# Where an entry's lines went (``_entry``'s writer): the index of the piece of ``out``
# that starts its file location line, and of each of its lines written as a line of its
# own (None: not one).
_Written = tuple[int | None, list[int | None]]


def _entry_frames(
    frames: _FramesSoFar, lines: list[str], style: str, loc: tuple[str, int, str] | None, written: _Written
) -> None:
    """Append an entry's frames to ``frames`` in the order its text shows them
    (``written``: where its lines went): a short-style entry's file location heads it,
    another's ends it; the syntax error positions of its exception lines (``E     File
    "t.py", line 2``) are where those lines are. The twin of ``entry_frames`` in
    ``rust/core/src/reportlog.rs``."""
    at_loc, at_lines = written
    short = style == "short"
    location: list[tuple[str, int, int, int, str]] = []
    if loc is not None and at_loc is not None and "\n" not in loc[0] and 0 <= loc[1] <= U64_MAX:
        location = [(loc[0], loc[1], at_loc, 0, HEADER if short else LOCATION)]
    if short:
        frames.frames.extend(location)
    for line, at in zip(lines, at_lines, strict=False):
        if at is None or "\n" in line or not line.startswith("E "):
            continue
        position = syntax_position(chomp(line[2:]))
        if position is not None:
            frames.frames.append((position[0], position[1], at, 0, SYNTAX_POSITION))
    if not short:
        frames.frames.extend(location)


def _write_fileloc(out: list[str], loc: tuple[str, int, str]) -> None:
    path, lineno, message = loc
    i = message.find("\n")
    if i != -1:
        message = message[:i]
    out.append(f"{path}:{lineno}: {message}\n")


def _write_funcargs(out: list[str], args: list[tuple[str, str]]) -> None:
    if not args:
        return
    so_far = ""
    for name, value in args:
        ns = f"{name} = {value}"
        if len(ns) + len(so_far) + 2 > _WIDTH:
            if so_far:
                out.append(so_far + "\n")
            so_far = ns
        elif so_far:
            so_far += ", " + ns
        else:
            so_far = ns
    if so_far:
        out.append(so_far + "\n")
    out.append("\n")


def _write_entry_lines(out: list[str], lines: list[str], style: str) -> list[int | None]:
    """``ReprEntry._write_entry_lines`` without markup: source lines re-split as
    ``str.splitlines`` does (a form feed in a source line splits it), failure lines as is.
    Returns where each of ``lines`` went: the index of the piece of ``out`` written in its
    place (the ``i``-th source line written for the ``i``-th source line: re-splitting can
    move what it says), None when no line was."""
    written: list[int | None] = [None] * len(lines)
    if not lines:
        return written
    if style == "value":
        for j, line in enumerate(lines):
            written[j] = len(out)
            out.append(line + "\n")
        return written
    indents: list[str] = []
    source: list[str] = []
    failure: list[str] = []
    for index, line in enumerate(lines):
        if line.startswith(_FAIL_MARKER):
            failure = lines[index:]
            break
        indents.append(line[:4])
        source.append(line[4:])
    joined = "\n".join(source)
    split = _splitlines(joined)
    for j, (indent, line) in enumerate(zip(indents, split, strict=False)):
        written[j] = len(out)
        out.append(indent + line + "\n")
    failure_start = len(lines) - len(failure)
    for j, line in enumerate(failure, failure_start):
        written[j] = len(out)
        out.append(line + "\n")
    return written


def _splitlines(s: str) -> list[str]:
    """Python's ``str.splitlines()``."""
    if not s:
        return []
    parts = _SPLITLINES.split(s)
    if parts[-1] == "":  # s ended with a line boundary
        parts.pop()
    return parts
