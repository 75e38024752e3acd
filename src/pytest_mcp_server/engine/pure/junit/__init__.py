"""Streaming JUnit XML parser of the pure backend (docs/ENGINE.md, *JUnit XML*).

Mirrors ``rust/core/src/junit.rs``: the same records for every valid file, the same
error kind for every invalid one. XML well-formedness is expat's (``xml.parsers.expat``
fed in 256 KiB chunks, no DTD ever read); the byte order mark, the XML declaration and
the encoding are checked first (``decode.py``, as the native ``junit/decode.rs``), and
the file is transcoded to UTF-8 before expat sees it. Memory stays bounded: expat gets
the file in chunks, character data arrives in pieces (``buffer_text``), the kept texts
are capped while they stream (``HeadTail``), and a guard between the decoder and expat
(``lexer.py``'s ``_Guard``) keeps expat from holding a huge start tag: it refuses one
with more than ``MAX_ATTRIBUTES`` attributes and gives expat only the head of an
over-long attribute value, checking and counting the rest itself.

The modules mirror ``rust/core/src/junit/``: ``decode``, ``lexer`` (expat plays the
lexer; the module holds the guard and the attribute rules), ``sections`` and
``subtests``; ``names.rs`` (expat's name tables for the native lexer) has no pure twin,
expat applies them itself. This module holds what ``junit.rs`` holds: the expat
handlers that turn testcases into records, node ids, retries.
"""

from __future__ import annotations

from typing import IO
from xml.parsers import expat

from pytest_mcp_server.engine.models import ReportError

from ..record import SEVERITY, CollectionErrorRecord, Emit, TestRecord
from ..text import HeadTail, duration_us_from_text
from .decode import DECL_WINDOW, _DecodeError, _decoder, _read_prologue
from .lexer import _DECLARATIONS, CHUNK, MAX_ATTRIBUTES, _attr, _cap_attr, _Guard, _GuardError, _too_many_attributes
from .sections import _Sections
from .subtests import _CaseSubtests, _parent_message, is_parent_marker

# pytest's markers (``_pytest/junitxml.py``: ``append_collect_error``, ``append_failure``).
COLLECTION_FAILURE = "collection failure"
XPASS_MESSAGE = "xfail-marked test passes unexpectedly"
_RESULT_TAGS = frozenset(("failure", "error", "skipped"))


def parse_junit(f: IO[bytes], path: str, budgets: dict[str, int], emit: Emit) -> None:
    """Parse a JUnit XML document from binary file ``f`` (at byte 0), calling ``emit``
    with each ``TestRecord`` / ``CollectionErrorRecord`` in report order.

    Raises ``ReportError`` with kind ``malformed`` (not well-formed, bad bytes for the
    encoding, truncated), ``forbidden`` (``<!DOCTYPE`` or another markup declaration),
    ``not_a_report`` (root not ``testsuites``/``testsuite``), ``unsupported_encoding``
    or ``unreadable``; the position is ``line L, column C`` (expat's, in the text as
    UTF-8) or ``byte N``.
    """
    head = _read(f, path, DECL_WINDOW)
    mode, bom_len = _read_prologue(path, head, whole=len(head) < DECL_WINDOW)
    _Parser(f, path, budgets, emit, mode).run(head[bom_len:])


def _read(f: IO[bytes], path: str, n: int) -> bytes:
    try:
        return f.read(n)
    except OSError as exc:
        raise ReportError.from_os_error(path, exc) from None


# --- records (mirrors junit.rs) ---------------------------------------------------------


def node_id(classname: str, name: str, file: str, pytest_suite: bool) -> str:
    """The pytest-style node id of a testcase (docs/ENGINE.md, *JUnit XML*, rules 1-3)."""
    path = file[2:] if file.startswith("./") else file
    if path.endswith(".py"):
        module = path[:-3].replace("/", ".").replace("\\", ".")
        if classname == module:
            return f"{path}::{name}"
        if classname.startswith(module + "."):
            return f"{path}::{classname[len(module) + 1 :].replace('.', '::')}::{name}"
    if pytest_suite and classname:
        segments = classname.split(".")
        modules = len(segments)
        while modules > 0 and segments[modules - 1][:1].isascii() and segments[modules - 1][:1].isupper():
            modules -= 1
        if modules > 0:
            classes = "".join(f"::{s}" for s in segments[modules:])
            return "/".join(segments[:modules]) + ".py" + classes + f"::{name}"
    return f"{classname}::{name}" if classname else name


def collection_error_path(classname: str, name: str, file: str, pytest_suite: bool) -> str:
    """The path of a collection error: the name by rule 2's module rule (pytest's suite,
    empty classname), the node id when there is a classname, else the name."""
    if classname:
        return node_id(classname, name, file, pytest_suite)
    if pytest_suite and name:
        return name.replace(".", "/") + ".py"
    return name


def _parse_line(s: str | None) -> int | None:
    if not s or not (s.isascii() and s.isdigit()):
        return None
    n = int(s)
    return n if n < 2**64 else None


_PHASE_MESSAGE_PREFIXES = ('failed on setup with "', 'failed on teardown with "')


def _unwrap_phase_message(message: str) -> str:
    """pytest writes a setup/teardown error's message as ``failed on setup with "<reason>"``
    (``_pytest/junitxml.py``, ``append_error``); the reason alone is the message, so that
    errors of different causes do not share one group (twin of ``unwrap_phase_message``)."""
    for prefix in _PHASE_MESSAGE_PREFIXES:
        if message.startswith(prefix):
            rest = message[len(prefix) :]
            return rest[:-1] if rest.endswith('"') else rest
    return message


class _Chosen:
    """The result element that decides a testcase so far (the first of the worst kind)."""

    __slots__ = ("outcome", "phase", "collection", "exception", "message", "message_omitted")

    def __init__(self, tag: str, attrs: dict[str, str], dropped: int = 0) -> None:
        message = attrs.get("message")
        message_omitted = 0
        if message is not None:
            message, message_omitted = _cap_attr(message)
            # Bytes of an over-long message the guard kept from expat.
            message_omitted += dropped
        kind = _attr(attrs, "type")
        self.collection = False
        self.phase = None
        if tag == "failure":
            self.outcome, self.phase = "failed", "call"
        elif tag == "error":
            self.outcome = "error"
            m = message or ""
            if m.startswith("failed on setup"):
                self.phase = "setup"
            elif m.startswith("failed on teardown"):
                self.phase = "teardown"
            self.collection = message == COLLECTION_FAILURE
        elif message == XPASS_MESSAGE:
            self.outcome = "xpassed"
        elif kind == "pytest.xfail":
            self.outcome = "xfailed"
        else:
            self.outcome = "skipped"
        details = self.outcome in ("failed", "error")
        self.exception = (kind or None) if details else None
        self.message = _unwrap_phase_message(message) if details and message is not None else None
        self.message_omitted = message_omitted if details else 0


class _Case:
    """An open ``<testcase>``."""

    __slots__ = (
        "depth",
        "pytest_suite",
        "classname",
        "name",
        "file",
        "line",
        "duration_us",
        "chosen",
        "flaky_result",
        "capture",
        "capture_depth",
        "text",
        "stdout",
        "stderr",
        "subtests",
        "sections",
        "log",
    )

    def __init__(self, attrs: dict[str, str], depth: int, pytest_suite: bool, max_output_bytes: int) -> None:
        self.depth = depth
        self.pytest_suite = pytest_suite
        self.classname = _attr(attrs, "classname") or ""
        self.name = _attr(attrs, "name") or ""
        self.file = _attr(attrs, "file")
        self.line = _attr(attrs, "line")
        time = _attr(attrs, "time")
        self.duration_us = 0 if time is None else duration_us_from_text(time, True)
        self.chosen: _Chosen | None = None
        self.flaky_result = False
        self.capture: HeadTail | _Sections | None = None
        self.capture_depth = 0
        self.text = HeadTail(0, 0)
        self.stdout = HeadTail.for_output(max_output_bytes)
        self.stderr = HeadTail.for_output(max_output_bytes)
        self.subtests = _CaseSubtests()
        self.sections: _Sections | None = None  # made at the first system-out/system-err
        self.log: HeadTail | None = None


class _Stop(Exception):
    """Carries a ``ReportError`` out of an expat handler."""

    def __init__(self, error: ReportError) -> None:
        self.error = error


class _Parser:
    def __init__(self, f: IO[bytes], path: str, budgets: dict[str, int], emit: Emit, mode: str) -> None:
        self.f = f
        self.path = path
        self.emit = emit
        self.max_output_bytes = budgets["max_output_bytes"]
        self.max_log_bytes = budgets["max_log_bytes"]
        self.decode = _decoder(mode)
        self.mode = mode
        self.guard = _Guard(self.feed)
        self.depth = 0
        self.root_seen = False
        self.suites: list[tuple[int, bool]] = []
        self.case: _Case | None = None
        self.held: TestRecord | None = None
        self.held_passed = False
        self.held_failed = False
        # The chunk being fed to expat and the bytes before it (to look at where
        # expat stopped: a declaration keyword starts at most a few bytes back).
        self.current = b""
        self.current_base = 0
        self.tail = b""
        self.fed = 0
        self.ahead = b""
        # Where the prolog token after the last complete one starts.
        self.prolog_end = 0

        p = expat.ParserCreate("UTF-8")
        p.buffer_text = True
        p.buffer_size = 64 * 1024
        p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        p.StartElementHandler = self.start
        p.EndElementHandler = self.end
        p.CharacterDataHandler = self.characters
        p.StartDoctypeDeclHandler = self.doctype
        # Sees each prolog token, so '<!DOCTYPE' is refused even when what follows is
        # broken (expat would report that first); dropped at the root element.
        p.DefaultHandler = self.prolog_token
        self.p = p

    # -- feeding

    def run(self, first: bytes) -> None:
        pending = first
        read_size = CHUNK
        while True:
            # Read one chunk ahead to know when the current one is the last.
            self.ahead = _read(self.f, self.path, read_size)
            final = not self.ahead
            try:
                data = self.decode(pending, final)
            except _DecodeError as exc:
                self.push(exc.valid, False)
                raise ReportError(
                    "malformed",
                    self.path,
                    f"{exc.message}; regenerate the report or fix its encoding",
                    f"byte {self.guard.pos} of the text decoded to UTF-8",
                ) from None
            if self.guard.pos == 0 and data[1:2] == b"\x00":
                # expat would take '<' NUL for UTF-16 without a byte order mark and
                # switch encodings; the rules say UTF-8 here, where NUL is not allowed.
                raise ReportError(
                    "malformed",
                    self.path,
                    "control character U+0000, which XML does not allow (UTF-16 needs a byte order mark); "
                    "regenerate the report or fix its encoding",
                    "byte 1",
                )
            if self.guard.pos == 0 and self.mode in ("utf-16-le", "utf-16-be") and data.startswith(b"\xef\xbb\xbf"):
                # A U+FEFF after the UTF-16 byte order mark is a character before the
                # root (native: text before the root element); in UTF-8 expat would skip
                # it as a byte order mark.
                raise ReportError(
                    "malformed",
                    self.path,
                    "not well-formed XML: text before the root element (a second byte order mark, U+FEFF); "
                    "the report is corrupted, regenerate it",
                    "byte 0 of the text decoded to UTF-8",
                )
            chunk_start = self.fed
            self.push(data, final)
            if final:
                break
            pending = self.ahead
            # expat 2.5 rescans an unfinished token from its start at every call, so a
            # huge token (a long comment) fed in fixed chunks costs quadratic time; while
            # no event happens, read ever larger chunks. Not while the guard reads the
            # markup itself: expat gets little of it, and memory stays bounded.
            if self.guard.mode == "careful":
                read_size = CHUNK
            elif self.p.CurrentByteIndex < chunk_start:
                read_size = min(read_size * 2, 64 * 1024 * 1024)
            else:
                read_size = CHUNK
        self.flush()

    def push(self, data: bytes, final: bool) -> None:
        """Decoded text to expat, through the guard."""
        try:
            self.guard.push(data, final)
        except _GuardError as exc:
            raise ReportError(
                "malformed", self.path, exc.message, f"byte {exc.offset} of the text decoded to UTF-8"
            ) from None

    def feed(self, data: bytes, final: bool) -> None:
        self.tail = self.current[-64:] if len(self.current) >= 64 else (self.tail + self.current)[-64:]
        self.current = data
        self.current_base = self.fed
        self.fed += len(data)
        try:
            self.p.Parse(data, final)
        except _Stop as stop:
            raise stop.error from None
        except expat.ExpatError as exc:
            raise self.expat_error(exc) from None

    def expat_error(self, exc: expat.ExpatError) -> ReportError:
        where = f"line {exc.lineno}, column {exc.offset + 1}"
        if self.guard.drops:
            # Expat's lines and columns do not count the bytes the guard dropped.
            at = self.guard.expat_to_text(self.p.ErrorByteIndex)
            if at is not None:
                where = f"byte {at} of the text decoded to UTF-8"
        window = self.tail + self.current
        window_base = self.current_base - len(self.tail)
        at = self.p.ErrorByteIndex - window_base
        # A declaration keyword is 'forbidden' only where markup can start; anywhere
        # else (an attribute value, inside a tag, after a broken '<!') the earlier
        # error makes the file 'malformed' (ENGINE.md). Where markup starts: before
        # the root, right after the last complete prolog token (expat may only fail a
        # few bytes into '<!DOCTYPE...'); at the '<' expat stops at for junk after the
        # root or a file that ends inside markup; else just before where expat stopped,
        # after a '<!' that opened markup (when it stops at the '<' itself, that '<'
        # was not allowed there).
        if not self.root_seen:
            start = self.prolog_end - window_base
        elif exc.code in (
            expat.errors.codes[expat.errors.XML_ERROR_JUNK_AFTER_DOC_ELEMENT],
            expat.errors.codes[expat.errors.XML_ERROR_UNCLOSED_TOKEN],
        ):
            start = at
        else:
            start = at - 2
        if 0 <= start < len(window) and window[start : start + 2] == b"<!":
            ahead = self.peek(window, start, 10)
            for keyword in _DECLARATIONS:
                if ahead[2:].startswith(keyword):
                    return self.forbidden(keyword.decode(), where)
        message = expat.ErrorString(exc.code)
        return ReportError(
            "malformed",
            self.path,
            f"not well-formed XML: {message}; the report is corrupted or was cut off, regenerate it",
            where,
        )

    def peek(self, window: bytes, start: int, n: int) -> bytes:
        """``n`` bytes of the decoded text at ``window`` offset ``start``, reading on if
        needed (the parse is over: the decoder's state no longer matters)."""
        while len(window) - start < n:
            raw = self.ahead or _read(self.f, self.path, 64)
            self.ahead = b""
            if not raw:
                break
            try:
                window += self.decode(raw, False)
            except _DecodeError as exc:
                window += exc.valid
                break
        return window[start : start + n]

    def forbidden(self, keyword: str, where: str) -> ReportError:
        return ReportError(
            "forbidden",
            self.path,
            f"the file contains '<!{keyword}': DTDs and entity declarations are refused (they enable XXE and "
            "billion-laughs attacks); JUnit reports never need one, remove it",
            where,
        )

    def position(self) -> str:
        return f"line {self.p.CurrentLineNumber}, column {self.p.CurrentColumnNumber + 1}"

    # -- expat handlers

    def doctype(self, *args: object) -> None:
        raise _Stop(self.forbidden("DOCTYPE", self.position()))

    def prolog_token(self, data: str) -> None:
        # Raw bytes (no conversion from UTF-8), so the token ends this many bytes on.
        self.prolog_end = self.p.CurrentByteIndex + len(data.encode("utf-8"))
        if data.startswith("<!"):
            for keyword in _DECLARATIONS:
                if data[2:].startswith(keyword.decode()):
                    raise _Stop(self.forbidden(keyword.decode(), self.position()))

    def start(self, name: str, attrs: dict[str, str]) -> None:
        if len(attrs) > MAX_ATTRIBUTES:
            raise _Stop(ReportError("malformed", self.path, _too_many_attributes(name), self.position()))
        dropped = self.guard.omitted.pop(self.p.CurrentByteIndex, None) if self.guard.omitted else None
        self.depth += 1
        depth = self.depth
        if not self.root_seen:
            self.root_seen = True
            self.p.DefaultHandler = None
            if name not in ("testsuites", "testsuite"):
                raise _Stop(
                    ReportError(
                        "not_a_report",
                        self.path,
                        f"the root element is <{name}>, not <testsuites> or <testsuite>: this XML file is not a "
                        "JUnit report (NUnit, TRX and xUnit.net files need converting to JUnit XML first)",
                        self.position(),
                    )
                )
        case = self.case
        if case is None:
            if name == "testsuite":
                self.suites.append((depth, _attr(attrs, "name") == "pytest"))
            elif name == "testcase":
                pytest_suite = bool(self.suites) and self.suites[-1][1]
                self.case = _Case(attrs, depth, pytest_suite, self.max_output_bytes)
            return
        if name == "property" and depth == case.depth + 2 and case.pytest_suite:
            case.subtests.read_property(attrs)
            return
        if depth != case.depth + 1:
            return
        if name == "failure" and case.pytest_suite:
            self.failure_starts(case)
        if name in _RESULT_TAGS:
            chosen = _Chosen(name, attrs, dropped.get("message", 0) if dropped else 0)
            if case.chosen is None or SEVERITY[chosen.outcome] > SEVERITY[case.chosen.outcome]:
                if chosen.outcome in ("failed", "error"):
                    case.text = HeadTail.for_text()
                    case.capture = case.text
                    case.capture_depth = depth
                case.chosen = chosen
        elif name in ("flakyFailure", "flakyError"):
            case.flaky_result = True
        elif name == "system-out" or name == "system-err":
            if case.sections is None:
                case.log = HeadTail.for_output(self.max_log_bytes)
                case.sections = _Sections(case.stdout, case.stderr, case.log)
            case.sections.begin("out" if name == "system-out" else "err")
            case.capture = case.sections
            case.capture_depth = depth

    def end(self, name: str) -> None:
        depth = self.depth
        self.depth -= 1
        case = self.case
        if case is not None:
            if depth == case.depth:
                self.case = None
                self.close_case(case)
            elif case.capture is not None and depth == case.capture_depth:
                if case.capture is case.sections:
                    case.sections.end()
                case.capture = None
        elif name == "testsuite" and self.suites and self.suites[-1][0] == depth:
            self.suites.pop()

    def characters(self, data: str) -> None:
        case = self.case
        if case is not None and case.capture is not None:
            case.capture.push(data)

    # -- records

    def close_case(self, case: _Case) -> None:
        file = case.file or ""
        chosen = case.chosen
        if chosen is not None and chosen.collection:
            text, omitted = case.text.finish()
            error_record = CollectionErrorRecord(
                path=collection_error_path(case.classname, case.name, file, case.pytest_suite),
                exception=chosen.exception,
                # pytest's "collection failure" is a marker, not a message: the builder
                # takes the message from the text (its `E ` line).
                message=None,
                text=text,
                text_bytes_omitted=omitted,
            )
            self.flush()
            self.emit(error_record)
            return
        chosen, passed_with_failed_subtests = self.close_subtests(case, chosen)
        outcome = "passed" if chosen is None else chosen.outcome
        problem = outcome in ("failed", "error")
        record = TestRecord(
            node_id=node_id(case.classname, case.name, file, case.pytest_suite),
            outcome=outcome,
            duration_us=case.duration_us,
            flaky=case.flaky_result and not problem,
            passed_with_failed_subtests=passed_with_failed_subtests,
        )
        if problem:
            assert chosen is not None  # only a result element makes a test fail or error
            text, text_omitted = case.text.finish()
            out, out_omitted = case.stdout.finish()
            err, err_omitted = case.stderr.finish()
            log, log_omitted = case.log.finish() if case.log is not None else ("", 0)
            location = file[2:] if file.startswith("./") else file
            record.phase = chosen.phase
            record.exception = chosen.exception
            record.message = chosen.message
            record.text = text
            record.path = location or None
            record.line = _parse_line(case.line)
            record.stdout = out or None
            record.stderr = err or None
            record.log = log or None
            record.text_bytes_omitted = text_omitted + chosen.message_omitted
            record.output_bytes_omitted = out_omitted + err_omitted + log_omitted
        self.push_test(record)

    # -- subtests (docs/ENGINE.md, *Subtests*; twin of rust/core/src/junit/subtests.rs)

    def failure_starts(self, case: _Case) -> None:
        """A ``<failure>`` starts: when the case's current result is a failure, that one
        was a subtest (pytest writes the parent's own failure last); emit it."""
        case.subtests.failures += 1
        if case.chosen is not None and case.chosen.outcome == "failed":
            previous = case.chosen
            case.chosen = None
            self.emit_failed_subtest(case, previous, case.text)
            case.text = HeadTail(0, 0)

    def emit_failed_subtest(self, case: _Case, chosen: _Chosen, text: HeadTail) -> None:
        subtests = case.subtests
        label = subtests.labels.popleft() if subtests.labels else ""
        subtests.failed += 1
        body, omitted = text.finish()
        record = TestRecord(
            node_id=node_id(case.classname, case.name, case.file or "", case.pytest_suite),
            outcome="failed",
            phase=chosen.phase,
            exception=chosen.exception,
            message=chosen.message,
            text=body,
            text_bytes_omitted=omitted + chosen.message_omitted,
            subtest=label,
        )
        self.flush()
        self.emit(record)

    def close_subtests(self, case: _Case, chosen: _Chosen | None) -> tuple[_Chosen | None, bool]:
        """At the case's end: emit its last failed subtest (if the last failure is one)
        and its passed subtests; give back the parent's result (a failure ``contains N
        failed subtests`` when pytest counted it passed; then ``case.text`` is emptied)
        and whether pytest counted it passed."""
        subtests = case.subtests
        pytest_passed = (
            case.pytest_suite
            and chosen is not None
            and chosen.outcome == "failed"
            and (subtests.failures >= 2 or bool(subtests.labels))
            and not (chosen.message is not None and is_parent_marker(chosen.message))
        )
        if pytest_passed:
            assert chosen is not None
            self.emit_failed_subtest(case, chosen, case.text)
            case.text = HeadTail.for_text()
            chosen = _Chosen("failure", {"message": _parent_message(subtests.failed)})
        if subtests.passed:
            self.flush()
            parent = node_id(case.classname, case.name, case.file or "", case.pytest_suite)
            for _ in range(subtests.passed):
                self.emit(TestRecord(node_id=parent, outcome="passed", subtest=""))
        return chosen, pytest_passed

    def push_test(self, record: TestRecord) -> None:
        """Merge a retry (same node id as the held test) or emit the held test."""
        passed = record.outcome == "passed"
        failed = record.outcome in ("failed", "error")
        held = self.held
        if held is not None and held.node_id == record.node_id:
            self.held_passed |= passed
            self.held_failed |= failed
            record.duration_us = min(held.duration_us + record.duration_us, 2**64 - 1)
            record.flaky = held.flaky or record.flaky or (self.held_passed and self.held_failed)
            self.held = record
            return
        self.flush()
        self.held, self.held_passed, self.held_failed = record, passed, failed

    def flush(self) -> None:
        if self.held is not None:
            self.emit(self.held)
            self.held = None
