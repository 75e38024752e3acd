"""Streaming pytest-json-report parser, the pure twin of ``rust/core/src/pytest_json.rs``.

The document is read once with ijson's event parser (the yajl2_c backend when it is
installed), so memory does not grow with the report: only the test being read is held,
with its texts capped as docs/ENGINE.md (*Text capping*) says. ijson hands whole strings,
so ``_CheckedReader`` (``lexer.py``, with the other byte-level rules of the native
``pytest_json/lexer.rs``) cuts the middle out of a string too long to be kept whole before
yajl sees it (validating and counting what it drops); the parser adds the count where
the capped value is used. Memory is a few MB whatever the size of one string.

JSON validity must match the native lexer exactly. yajl deviates from RFC 8259 in two
ways, which ``_CheckedReader`` corrects before yajl sees the bytes: it decodes a lone
surrogate escape (``\\ud800``) to ``?`` instead of failing, and it takes vertical tab and
form feed for whitespace. ``use_float=True`` makes yajl refuse integers beyond
±(2^63-1) and numbers that overflow a double, the documented range limits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import IO, Any, TypedDict

import ijson

from pytest_mcp_server.engine.models import ReportError

from ..record import CollectionErrorRecord, Emit, ReprFrames, TestRecord
from ..text import ATTR_CAP, TEXT_HEAD, TEXT_TAIL, HeadTail, duration_us_from_float
from .lexer import _READ_SIZE, MAX_DEPTH, _CheckedReader, _CutString, _with_dropped

try:  # the C backend: fast, and the one whose behaviour the parity tests pin down
    _ijson = ijson.get_backend("yajl2_c")
except ImportError:  # pragma: no cover - wheels without the C extension
    _ijson = ijson

_FINAL_OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
_PROBLEMS = ("failed", "error")
_PHASES = ("setup", "call", "teardown")
# The keys read in each object, with the ijson event their value must start with (None:
# the caller checks). Any other key is skipped, duplicates of it too.
_REPORT_KINDS = {
    "exitcode": None,
    "duration": "number",
    "summary": None,
    "root": "string",
    "collectors": "start_array",
    "tests": "start_array",
}
_COLLECTOR_KINDS = {"nodeid": "string", "outcome": "string", "longrepr": "string"}
_TEST_KINDS = {"nodeid": "string", "outcome": "string", **dict.fromkeys(_PHASES, "start_map")}
_PHASE_KINDS = {
    "duration": "number",
    "outcome": "string",
    "longrepr": "string",
    "crash": "start_map",
    "stdout": "string",
    "stderr": "string",
    "log": None,  # lenient: a log of another shape is ignored (it never decides a test)
}
_LOG_RECORD_KEYS = ("levelname", "name", "filename", "lineno", "msg")
_CRASH_KINDS = {"path": "string", "lineno": "number", "message": "string"}


class _Malformed(Exception):
    """A JSON syntax error (or a broken limit) found by this module: ``what`` at ``offset``."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


_KIND = {
    "start_map": "an object",
    "start_array": "an array",
    "string": "a string",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}


def parse_pytest_json(
    f: IO[bytes],
    path: str,
    budgets: dict[str, int],
    emit: Emit,
) -> int | None:
    """Parse a pytest-json-report document from ``f`` (binary, at byte 0), calling ``emit``
    with each ``TestRecord`` / ``CollectionErrorRecord`` in report order. Returns the
    report's ``duration`` (pytest's session time) in integer microseconds, or None
    without one.

    ``budgets`` needs ``max_output_bytes`` (bytes of stdout/stderr tail kept per test) and
    ``max_log_bytes`` (bytes of captured log lines kept per test).
    Raises ``ReportError``: ``not_a_report`` when the root is not an object or lacks
    ``exitcode``/``summary``; ``malformed`` for invalid JSON or a wrong type where the
    format needs one; ``unreadable`` when reading fails. Rules: docs/ENGINE.md,
    *pytest-json-report*; the native parser (``pytest_json.rs``) gives the same records.
    """
    reader = _CheckedReader(f, budgets["max_output_bytes"])
    parser = _Parser(reader, path, budgets["max_output_bytes"], emit, budgets["max_log_bytes"])
    try:
        # Find the first byte that is not whitespace; whitespace is not handed to ijson.
        head = b""
        while True:
            chunk = reader.read(_READ_SIZE)
            head = chunk.lstrip(b" \t\r\n")
            if head or not chunk:
                break
        if head[:1] != b"{":
            if head:
                offset = reader.handed_on - len(head)
            elif reader.violation is not None:  # it cut the input at the first byte: no '{' either
                offset = reader.violation[0]
            else:
                raise ReportError("not_a_report", path, "the file is empty; expected a pytest-json-report file")
            what = (
                "an array"
                if head[:1] == b"["
                else repr(head[:1].decode("latin-1"))
                if head
                else "a byte that is not JSON"
            )
            raise ReportError(
                "not_a_report",
                path,
                f"the JSON document starts with {what}, not an object; "
                "pass a pytest-json-report file (pytest --json-report)",
                f"byte {offset}",
            )
        reader.unread(head)
        events = _ijson.basic_parse(reader, use_float=True)
        parser.run(events)
        return parser.session_us
    except _Malformed as exc:
        raise parser.malformed(exc.what) from None
    except StopIteration:  # ijson raises on a premature end; this is a safety net
        raise parser.malformed("the input ends inside the document (truncated file?)") from None
    except (ijson.JSONError, UnicodeDecodeError) as exc:
        if reader.violation is not None:
            raise parser.malformed(reader.violation[1], reader.violation[0]) from None
        raise parser.malformed(_yajl_reason(exc)) from None
    except OSError as exc:
        raise ReportError.from_os_error(path, exc) from None


def _yajl_reason(exc: Exception) -> str:
    """The first line of a yajl/ijson error (yajl appends a picture of the context)."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0].removeprefix("b'").strip()


class _Fields:
    """The known keys of one object whose ``{`` was just read, in document order, up to
    its end: iterating yields ``(key, event, value)`` (the value's first ijson event)
    for the first occurrence of each key of ``kinds`` whose value starts with the event
    ``kinds[key]`` (any, for None); the caller reads or skips the value. Other keys are
    skipped with their values. A key seen again, or a value of the wrong kind, is a
    structural error naming ``whose`` (e.g. ``"tests[3]"``; ``"tests[3].outcome must
    be a string, not null"``, with ``prefix`` "tests[3]."): reported (raised or held,
    see ``_Parser.structural``), the value skipped, and ``ok`` set to False, as
    ``require`` does for its error and the caller for its own; the caller drops a
    broken object. A string value the reader cut comes as a ``_CutString`` (with the
    dropped count). Iterating raises ``_Malformed`` / ijson errors for invalid JSON and
    ``ReportError`` for a structural error in a report.
    """

    __slots__ = ("_parser", "_kinds", "whose", "_prefix", "ok")

    def __init__(self, parser: _Parser, kinds: Mapping[str, str | None], whose: str, prefix: str) -> None:
        self._parser = parser
        self._kinds = kinds
        self.whose = whose
        self._prefix = prefix
        self.ok = True

    def __iter__(self) -> Iterator[tuple[str, str, Any]]:
        parser = self._parser
        kinds = self._kinds
        nxt = parser._next
        reader = parser.reader
        seen: set[str] = set()
        while True:
            ev, key = nxt()
            if ev == "end_map":
                parser.depth -= 1
                return
            ev, value = nxt()
            if ev == "start_map" or ev == "start_array":
                parser.opened()
            wanted = kinds.get(key, "")
            if wanted == "":  # not a key read here
                parser.skip(ev)
            elif key in seen:
                self.ok = False
                parser.structural(f"{self.whose} has the key {key!r} twice")
                parser.skip(ev)
            else:
                seen.add(key)
                if wanted is not None and ev != wanted:
                    self.ok = False
                    # expect() calls the lambda before the loop moves on, so key is this one's
                    parser.expect(ev, wanted, lambda: self._prefix + key)  # noqa: B023
                    continue
                # Set only while the last event came from the read of a cut string's
                # tail, which gives no other event: this value is that string.
                if reader.last_cut is not None and ev == "string":
                    value = _with_dropped(value, reader.last_cut)
                yield key, ev, value

    def require(self, *present: tuple[str, bool]) -> None:
        """At the end of the object: the first required key not present (name, present)
        is reported, unless the object is already broken."""
        for name, has in present:
            if self.ok and not has:
                self.ok = False
                self._parser.structural(f"{self.whose} has no {name!r}")


class _CrashData(TypedDict, total=False):
    """What is kept of a phase's ``crash`` object: ``line`` (>= 0), and ``path`` and
    ``message`` as (head, bytes dropped) when details are wanted."""

    line: int
    path: tuple[str, int]
    message: tuple[str, int]


class _PhaseData(TypedDict, total=False):
    """What is kept of a phase object. An accepted phase has ``duration_us`` (integer
    microseconds) and ``failed``; when details are wanted, the texts come as (kept text,
    bytes omitted): ``longrepr`` head and tail capped, ``stdout``/``stderr`` tail capped."""

    duration_us: int
    failed: bool
    crash: _CrashData
    longrepr: tuple[str, int]
    frames: ReprFrames  # a report log's structured longrepr's, when longrepr is its whole text
    stdout: tuple[str, int]
    stderr: tuple[str, int]
    log: tuple[str, int]


class TestEntries:
    """Test entries (node id, outcome, phase data) -> ``TestRecord``s: the retry rule, the
    phase, the details of the first failed phase, the outputs joined in phase order
    (docs/ENGINE.md, *pytest-json-report*). Shared by the pytest-json-report parser and
    the report-log reader (``reportlog.py``), which builds the same phase data.

    ``root``: the report's root directory, removed from crash paths (None: none).
    """

    __test__ = False  # not a pytest test class

    def __init__(self, emit: Emit, max_output_bytes: int, max_log_bytes: int) -> None:
        self.emit = emit
        self.max_output_bytes = max_output_bytes
        self.max_log_bytes = max_log_bytes
        self.root: str | None = None
        self.chain: tuple[str, int] | None = None  # (node id, duration_us) of rerun entries

    def push(
        self,
        node_id: str,
        outcome: str,
        phases: list[_PhaseData | None],
        passed_with_failed_subtests: bool = False,
    ) -> None:
        """Turn a test entry into a record, applying the retry rule to ``rerun`` entries.

        ``phases``: setup, call, teardown (None: absent). ``passed_with_failed_subtests``
        is set on the record (the report-log reader's unittest parents, docs/ENGINE.md,
        *Subtests*)."""
        duration_us = 0
        for p in phases:
            if p is not None:
                duration_us = _saturating_add(duration_us, p["duration_us"])
        earlier = None
        if self.chain is not None:
            if self.chain[0] == node_id:
                earlier = self.chain
            else:
                self.emit(_passed_after_reruns(self.chain))
            self.chain = None
        if outcome == "rerun":
            previous = earlier[1] if earlier else 0
            self.chain = (node_id, _saturating_add(previous, duration_us))
            return
        failed = next((i for i, p in enumerate(phases) if p is not None and p["failed"]), None)
        record = TestRecord(
            node_id=node_id,
            outcome=outcome,
            phase=_PHASES[failed] if failed is not None else None,
            duration_us=duration_us,
            passed_with_failed_subtests=passed_with_failed_subtests,
        )
        if earlier is not None:
            # Earlier attempts were reruns (non-passing): flaky if this one passed.
            record.duration_us = _saturating_add(duration_us, earlier[1])
            record.flaky = outcome == "passed"
        if outcome in _PROBLEMS:
            if failed is not None:
                p = phases[failed]
                assert p is not None  # failed indexes a phase that is present
                if "longrepr" in p:
                    record.text, omitted = p["longrepr"]
                    record.text_bytes_omitted += omitted
                    record.frames = p.get("frames")
                crash = p.get("crash")
                if crash is not None:
                    if "message" in crash:
                        record.message, dropped = crash["message"]
                        record.text_bytes_omitted += dropped
                    if "path" in crash:
                        record.path = _strip_root(crash["path"][0], self.root)
                    record.line = crash.get("line")
            present = [p for p in phases if p is not None]
            record.stdout, out_omitted = _join_output([p.get("stdout") for p in present], self.max_output_bytes)
            record.stderr, err_omitted = _join_output([p.get("stderr") for p in present], self.max_output_bytes)
            record.log, log_omitted = _join_output([p.get("log") for p in present], self.max_log_bytes)
            record.output_bytes_omitted = out_omitted + err_omitted + log_omitted
        self.emit(record)

    def end(self) -> None:
        """The end of the entries: a pending ``rerun`` chain is a test that passed."""
        if self.chain is not None:
            self.emit(_passed_after_reruns(self.chain))
            self.chain = None


class _Parser:
    """The state of one parse: identity keys seen, the held structural error, the
    pending rerun chain (docs/ENGINE.md, *pytest-json-report*)."""

    def __init__(
        self, reader: _CheckedReader, path: str, max_output_bytes: int, emit: Emit, max_log_bytes: int = 0
    ) -> None:
        self.reader = reader
        self.path = path
        self.max_output_bytes = max_output_bytes
        self.max_log_bytes = max_log_bytes
        self._emit = emit
        self.depth = 0
        self.entries = TestEntries(self.emit, max_output_bytes, max_log_bytes)
        self.has_exitcode = False
        self.has_summary = False
        self.session_us: int | None = None
        self.held_error: ReportError | None = None
        # ijson's next (event, value); set by run(). Values are Any: their type follows the event.
        self._next: Callable[[], tuple[str, Any]]

    # -- errors ---------------------------------------------------------------------

    def malformed(self, what: str, offset: int | None = None) -> ReportError:
        return ReportError(
            "malformed",
            self.path,
            f"not valid JSON: {what}; the report is damaged or was cut short, regenerate it (pytest --json-report)",
            f"byte {self.reader.handed_on if offset is None else offset}",
        )

    def is_report(self) -> bool:
        return self.has_exitcode and self.has_summary

    def structural(self, what: str) -> None:
        """A wrong type or value in the report structure: raised now if the document is
        a report, else held (``not_a_report`` wins for other JSON documents)."""
        err = ReportError(
            "malformed",
            self.path,
            f"{what}; this does not follow the pytest-json-report format, "
            "regenerate the report with pytest --json-report",
            f"byte {self.reader.handed_on}",
        )
        if self.is_report():
            raise err
        if self.held_error is None:
            self.held_error = err

    # -- events ---------------------------------------------------------------------

    def event(self) -> tuple[str, object]:
        """The next ijson event, keeping ``depth`` (the nesting limit is checked here)."""
        ev, value = self._next()
        if ev == "start_map" or ev == "start_array":
            self.opened()
        elif ev == "end_map" or ev == "end_array":
            self.depth -= 1
        return ev, value

    def opened(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Malformed(f"arrays/objects nested deeper than {MAX_DEPTH} levels")

    def skip(self, ev: str) -> None:
        """Skip the value that starts with event ``ev`` (ijson validates it)."""
        if ev != "start_map" and ev != "start_array":
            return
        # The hot loop of the pure parser: events of ignored values, kept lean.
        nxt = self._next
        depth = self.depth
        outer = depth - 1
        while depth > outer:
            ev = nxt()[0]
            if ev == "start_map" or ev == "start_array":
                depth += 1
                if depth > MAX_DEPTH:
                    self.depth = depth
                    raise _Malformed(f"arrays/objects nested deeper than {MAX_DEPTH} levels")
            elif ev == "end_map" or ev == "end_array":
                depth -= 1
        self.depth = depth

    def expect(self, ev: str, wanted: str, what: Callable[[], str]) -> bool:
        """True if the value starting with ``ev`` is of event kind ``wanted``; else report
        it, skip it and return False."""
        if ev == wanted:
            return True
        self.structural(f"{what()} must be {_KIND[wanted]}, not {_KIND[ev]}")
        self.skip(ev)
        return False

    def items(self) -> Iterator[tuple[str, Any]]:
        """The first events of the elements of the array just opened."""
        nxt = self._next
        while True:
            first = nxt()
            ev = first[0]
            if ev == "end_array":
                self.depth -= 1
                return
            if ev == "start_map" or ev == "start_array":
                self.opened()
            yield first

    def emit(self, record: TestRecord | CollectionErrorRecord) -> None:
        if self.held_error is None:
            self._emit(record)

    # -- the document -------------------------------------------------------------

    def run(self, events: Iterable[tuple[str, Any]]) -> None:
        self._next = iter(events).__next__
        ev, _ = self.event()
        if ev != "start_map":  # the first byte was '{', so this cannot happen
            raise _Malformed("the document is not an object")
        for key, ev, value in _Fields(self, _REPORT_KINDS, "the report object", ""):
            if key == "exitcode":
                self.has_exitcode = True
                if self.expect(ev, "number", lambda: "exitcode") and type(value) is not int:
                    self.structural("exitcode must be an integer")
            elif key == "duration":
                self.session_us = duration_us_from_float(float(value))
            elif key == "summary":
                self.has_summary = True
                if self.expect(ev, "start_map", lambda: "summary"):
                    self.skip(ev)
            elif key == "root":
                # A root cut at the cap could strip a wrong prefix: then none is.
                cut = type(value) is _CutString or len(value.encode("utf-8")) > ATTR_CAP
                self.entries.root = None if cut else value
            elif key == "collectors":
                self.collectors(ev)
            else:
                self.tests(ev)
            if self.is_report() and self.held_error is not None:
                raise self.held_error
        if not self.is_report():
            missing = " and ".join(
                k for k, has in (("exitcode", self.has_exitcode), ("summary", self.has_summary)) if not has
            )
            raise ReportError(
                "not_a_report",
                self.path,
                f"a JSON object without the pytest-json-report key(s) {missing}; "
                "pass a report written by pytest --json-report",
            )
        if self.held_error is not None:
            raise self.held_error
        # ijson checks what follows the root (trailing garbage) when asked for more.
        try:
            self._next()
        except StopIteration:
            pass
        else:  # pragma: no cover - ijson allows one top-level value only
            raise _Malformed("more data after the end of the JSON document")
        if self.reader.violation is not None:
            raise self.malformed(self.reader.violation[1], self.reader.violation[0])

    def collectors(self, ev: str) -> None:
        if not self.expect(ev, "start_array", lambda: "collectors"):
            return
        for index, (ev, _) in enumerate(self.items()):
            self.collector(index, ev)

    def collector(self, index: int, ev: str) -> None:
        """One element of ``collectors``; a failed one becomes a CollectionErrorRecord."""
        whose = f"collectors[{index}]"
        if not self.expect(ev, "start_map", lambda: whose):
            return
        fields = _Fields(self, _COLLECTOR_KINDS, whose, whose + ".")
        values: dict[str, str] = {key: value for key, _, value in fields}
        fields.require(("nodeid", "nodeid" in values), ("outcome", "outcome" in values))
        if fields.ok and values["outcome"] == "failed":
            text, omitted = None, 0
            if "longrepr" in values:
                text, omitted = _capped_text(values["longrepr"])
            self.emit(
                CollectionErrorRecord(
                    path=_head_text(values["nodeid"], ATTR_CAP)[0], text=text, text_bytes_omitted=omitted
                )
            )

    def tests(self, ev: str) -> None:
        if not self.expect(ev, "start_array", lambda: "tests"):
            return
        for index, (ev, _) in enumerate(self.items()):
            entry = self.test_entry(index, ev)
            if entry is not None:
                self.entries.push(*entry)
        # The retry rule never looks past the end of the array.
        self.entries.end()

    def test_entry(self, index: int, ev: str) -> tuple[str, str, list[_PhaseData | None]] | None:
        """One element of ``tests`` -> (node id, outcome, phases) or None if it broke the
        format (the error is raised or held)."""
        whose = f"tests[{index}]"
        if not self.expect(ev, "start_map", lambda: whose):
            return None
        node_id: str | None = None
        outcome: str | None = None
        phases: list[_PhaseData | None] = [None, None, None]
        fields = _Fields(self, _TEST_KINDS, whose, whose + ".")
        for key, ev, value in fields:
            if key == "nodeid":
                node_id = _head_text(value, ATTR_CAP)[0]
            elif key == "outcome":
                if value == "subtests passed":
                    # pytest 9's status word for a passed subtest, left as the entry's
                    # outcome when a subtest report came last (docs/ENGINE.md, *Subtests*)
                    value = "passed"
                if value in _FINAL_OUTCOMES or value == "rerun":
                    outcome = value
                else:
                    fields.ok = False
                    self.structural(
                        f"{whose}.outcome must be one of passed, failed, error, skipped, xfailed, xpassed, rerun"
                    )
            else:
                want_details = outcome is None or outcome in _PROBLEMS
                phase = self.phase(f"{whose}.{key}", ev, want_details)
                if phase is None:
                    fields.ok = False
                else:
                    phases[_PHASES.index(key)] = phase
        fields.require(("nodeid", node_id is not None), ("outcome", outcome is not None))
        if not fields.ok:
            return None
        assert node_id is not None and outcome is not None  # require() found both
        return node_id, outcome, phases

    def phase(self, whose: str, ev: str, want_details: bool) -> _PhaseData | None:
        """A phase object -> dict of what is kept, or None if it broke the format."""
        if not self.expect(ev, "start_map", lambda: whose):
            return None
        data: _PhaseData = {}
        fields = _Fields(self, _PHASE_KINDS, whose, whose + ".")
        for key, ev, value in fields:
            if key == "log":
                if want_details and ev == "start_array":
                    data["log"] = self.log_records()
                else:
                    self.skip(ev)
            elif key == "duration":
                data["duration_us"] = duration_us_from_float(float(value))
            elif key == "outcome":
                data["failed"] = value == "failed"
            elif key == "crash":
                crash = self.crash(f"{whose}.crash", want_details)
                if crash is None:
                    fields.ok = False
                else:
                    data["crash"] = crash
            elif want_details:
                if key == "longrepr":
                    data["longrepr"] = _capped_text(value)
                elif key == "stdout":
                    data["stdout"] = _capped(value, 0, self.max_output_bytes)
                else:
                    data["stderr"] = _capped(value, 0, self.max_output_bytes)
        # Both are required, so an ok phase has "duration_us" and "failed".
        fields.require(("duration", "duration_us" in data), ("outcome", "failed" in data))
        return data if fields.ok else None

    def log_records(self) -> tuple[str, int]:
        """A phase's ``log`` array (just opened): each record object with string
        ``levelname``, ``name``, ``filename``, ``msg`` (each capped at ``ATTR_CAP``) and
        integer ``lineno`` becomes one line as pytest prints it; other elements give
        nothing. Returns (kept tail, bytes omitted) within ``max_log_bytes``
        (docs/ENGINE.md, *Logs*)."""
        out = HeadTail.for_output(self.max_log_bytes)
        for ev, _ in self.items():
            if ev != "start_map":
                self.skip(ev)
                continue
            found: dict[str, Any] = {}
            while True:
                ev, key = self.event()
                if ev == "end_map":
                    break
                ev, value = self.event()
                if key in found or key not in _LOG_RECORD_KEYS:
                    self.skip(ev)
                elif key == "lineno" and ev == "number":
                    found[key] = value if type(value) is int else None
                elif key != "lineno" and ev == "string":
                    found[key] = _head_text(str(value), ATTR_CAP)[0]
                else:
                    found[key] = None
                    self.skip(ev)
            if len(found) == len(_LOG_RECORD_KEYS) and all(v is not None for v in found.values()):
                out.push(
                    f"{found['levelname']:<8} {found['name']}:{found['filename']}:{found['lineno']} {found['msg']}\n"
                )
        return out.finish()

    def crash(self, whose: str, want_details: bool) -> _CrashData | None:
        """A ``crash`` object (``path``, ``lineno``, ``message``, each optional)."""
        crash: _CrashData = {}
        fields = _Fields(self, _CRASH_KINDS, whose, whose + ".")
        for key, _, value in fields:
            if key == "lineno":
                if type(value) is not int:
                    fields.ok = False
                    self.structural(f"{whose}.lineno must be an integer")
                elif value >= 0:
                    crash["line"] = value
            elif want_details:
                if key == "path":
                    crash["path"] = _head_text(value, ATTR_CAP)
                else:
                    crash["message"] = _head_text(value, ATTR_CAP)
        return crash if fields.ok else None


_U64_MAX = 2**64 - 1


def _saturating_add(a: int, b: int) -> int:
    return min(a + b, _U64_MAX)


def _passed_after_reruns(chain: tuple[str, int]) -> TestRecord:
    """A ``rerun`` chain not followed by an entry of the same node id: pytest-json-report
    keeps one entry per node id and leaves ``rerun`` when the last attempt passed."""
    return TestRecord(node_id=chain[0], outcome="passed", duration_us=chain[1], flaky=True)


def _head_text(s: str, cap: int) -> tuple[str, int]:
    """(the first ``cap`` bytes of ``s`` cut back to a character boundary, bytes dropped).

    For a ``_CutString`` the bytes the reader dropped count too (its kept head holds
    more than ``cap`` bytes, so the cut falls there)."""
    if len(s) * 4 <= cap:  # cannot exceed the cap: skip encoding
        return s, 0
    data = s.encode("utf-8")
    if len(data) <= cap:
        return s, 0
    cut = cap
    while cut > 0 and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    dropped = s.dropped if type(s) is _CutString else 0
    return data[:cut].decode("utf-8"), len(data) - cut + dropped


def _capped_text(s: str) -> tuple[str, int]:
    return _capped(s, TEXT_HEAD, TEXT_TAIL)


def _capped(s: str, head_cap: int, tail_cap: int) -> tuple[str, int]:
    """``HeadTail(head_cap, tail_cap)`` fed ``s`` then finished, without encoding all of a
    huge ``s`` at once: only its first ``head_cap`` and last ``tail_cap`` characters
    are encoded (each character is at least one byte), and its UTF-8 length
    is counted in slices. Same result as ``HeadTail`` (tested against it).

    A ``_CutString`` gives the result of the whole string: its kept head holds more
    than ``head_cap`` bytes and its kept tail at least ``tail_cap`` (``_CheckedReader``),
    so the cuts fall there, and the dropped bytes are added to the total."""
    cut_string = s if type(s) is _CutString else None
    if cut_string is None and (len(s) <= (head_cap + tail_cap) // 4 or len(s) <= 4096):
        ht = HeadTail(head_cap, tail_cap)
        ht.push(s)
        return ht.finish()
    if s.isascii():
        total = len(s)
    else:
        total = sum(len(s[i : i + _COUNT_SLICE].encode("utf-8")) for i in range(0, len(s), _COUNT_SLICE))
    if cut_string is not None:
        total += cut_string.dropped
    if total <= head_cap + tail_cap:
        return s, 0
    head = s[:head_cap].encode("utf-8")
    head_end = min(head_cap, len(head))
    while 0 < head_end < len(head) and (head[head_end] & 0xC0) == 0x80:
        head_end -= 1
    head = head[:head_end]
    tail = s[-tail_cap:].encode("utf-8") if tail_cap else b""
    start = max(len(tail) - tail_cap, 0)
    while start < len(tail) and (tail[start] & 0xC0) == 0x80:
        start += 1
    tail = tail[start:]
    omitted = total - len(head) - len(tail)
    if head_cap == 0:
        return tail.decode("utf-8"), omitted
    return head.decode("utf-8") + f"\n... [{omitted} bytes omitted]\n" + tail.decode("utf-8"), omitted


_COUNT_SLICE = 1 << 20


def _strip_root(path: str, root: str | None) -> str:
    """``path`` without the report's root directory prefix (``root`` + ``/`` or ``\\``)."""
    if not root or not path.startswith(root):
        return path
    rest = path[len(root) :]
    if root.endswith(("/", "\\")):
        return rest
    if rest.startswith(("/", "\\")):
        return rest[1:]
    return path


def _join_output(parts: list[tuple[str, int] | None], max_output_bytes: int) -> tuple[str | None, int]:
    """The phases' captured output in phase order, tail-capped as one text:
    (None if no phase had any, else the kept tail; bytes omitted)."""
    present = [p for p in parts if p is not None]
    if not present:
        return None, 0
    joined = HeadTail.for_output(max_output_bytes)
    omitted_before = 0
    for kept, omitted in present:
        # Each part already lost its head beyond the cap; the tail of the whole is the
        # tail of the kept parts, so only the counts need adding up.
        joined.push(kept)
        omitted_before += omitted
    text, omitted = joined.finish()
    return text, omitted + omitted_before
