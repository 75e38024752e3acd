//! Streaming JUnit XML parser (docs/ENGINE.md, *JUnit XML*, *Records*, *Text capping*).
//!
//! Bytes -> [`decode`] (byte order mark, XML declaration, ISO-8859-1/UTF-16 transcoding)
//! -> [`lexer`] (a streaming XML lexer that accepts what expat accepts, no DTDs) ->
//! [`Junit`] (testcase results -> records, retries merged). Memory is bounded by the
//! read buffer, the text caps per test and the names of the open elements, whatever
//! the size of the file. The pure twin is `src/pytest_mcp_server/engine/pure/junit/`.

mod decode;
mod lexer;
mod names;
mod sections;
mod subtests;

use std::io::{Cursor, Read};

use crate::budgets::Budgets;
use crate::error::ReportError;
use crate::record::{CollectionErrorRecord, Item, Outcome, Phase, SourceSpan, TestRecord};
use crate::text::{duration_us_from_f64, duration_us_from_text, HeadTail};

use decode::{Mode, DECL_WINDOW};
use lexer::{Attrs, Elem, Handler, Lexer, Slot};

/// pytest's `message` of a collection error (`_pytest/junitxml.py`, `append_collect_error`).
const COLLECTION_FAILURE: &str = "collection failure";
/// pytest's `<skipped>` message for an xfail-marked test that passed
/// (`_pytest/junitxml.py`, `append_failure`).
const XPASS_MESSAGE: &str = "xfail-marked test passes unexpectedly";

/// Parse a JUnit XML document from `reader` (positioned at byte 0), handing each record
/// to `sink` in report order.
///
/// Errors (`ReportError`): `malformed` (not well-formed XML, bad bytes for the encoding,
/// truncated), `forbidden` (`<!DOCTYPE` or another markup declaration), `not_a_report`
/// (root element not `testsuites`/`testsuite`), `unsupported_encoding`, `unreadable`
/// (I/O error). Positions are byte offsets. Records handed to `sink` before an error
/// stay handed.
pub fn parse_junit<R: Read>(
    reader: R,
    path: &str,
    budgets: &Budgets,
    sink: &mut dyn FnMut(Item),
) -> Result<(), ReportError> {
    parse_junit_buffered(reader, path, budgets, sink, lexer::CHUNK)
}

/// [`parse_junit`] with a read buffer of `buffer` bytes at first.
fn parse_junit_buffered<R: Read>(
    mut reader: R,
    path: &str,
    budgets: &Budgets,
    sink: &mut dyn FnMut(Item),
    buffer: usize,
) -> Result<(), ReportError> {
    let mut head = Vec::with_capacity(DECL_WINDOW);
    (&mut reader)
        .take(DECL_WINDOW as u64)
        .read_to_end(&mut head)
        .map_err(|e| ReportError::from_io(path, &e))?;
    let whole = head.len() < DECL_WINDOW;
    let prologue = decode::read_prologue(path, &head, whole)?;
    let bom_len = prologue.bom_len;
    let rest = Cursor::new(head).chain(reader);
    // The byte order mark is skipped by reading past it.
    let mut rest = rest;
    let mut skipped = [0u8; 3];
    rest.read_exact(&mut skipped[..bom_len])
        .map_err(|e| ReportError::from_io(path, &e))?;
    let src: Box<dyn Read + '_> = match prologue.mode {
        Mode::Utf8 => Box::new(rest),
        Mode::Ascii => Box::new(decode::AsciiOnly::new(rest, bom_len as u64)),
        Mode::Latin1 => Box::new(decode::Latin1ToUtf8::new(rest)),
        Mode::Utf16Le => Box::new(decode::Utf16ToUtf8::new(rest, true)),
        Mode::Utf16Be => Box::new(decode::Utf16ToUtf8::new(rest, false)),
    };
    let file_offsets = prologue.mode.is_utf8_on_disk();
    let mut lexer = Lexer::new(
        src,
        path,
        prologue.decl_end,
        bom_len as u64,
        file_offsets,
        buffer,
    );
    let mut junit = Junit::new(budgets, sink, file_offsets);
    lexer.run(&mut junit)?;
    junit.flush();
    Ok(())
}

/// One `testcase` element parsed again: `case` gives the bytes of a [`SourceSpan`] of a
/// JUnit file, parsed inside a `testsuite` like its own (named `pytest` or not), with a
/// read buffer of `buffer` bytes at first; its records go to `sink` (the case's own
/// last, after any subtest records). Errors as [`parse_junit`]'s, with offsets into that
/// small document.
pub(crate) fn reparse_case<R: Read>(
    case: R,
    in_pytest_suite: bool,
    path: &str,
    budgets: &Budgets,
    sink: &mut dyn FnMut(Item),
    buffer: usize,
) -> Result<(), ReportError> {
    let open: &[u8] = if in_pytest_suite {
        b"<testsuite name=\"pytest\">"
    } else {
        b"<testsuite>"
    };
    let document = open.chain(case).chain(&b"</testsuite>"[..]);
    parse_junit_buffered(document, path, budgets, sink, buffer)
}

/// The result element that decides a testcase so far (the first of the worst kind).
struct Chosen {
    outcome: Outcome,
    phase: Option<Phase>,
    collection: bool,
    exception: Option<String>,
    message: Option<String>,
    message_omitted: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Capture {
    None,
    Text,
    Stdout,
    Stderr,
}

/// The open `<testcase>` (at most one: a testcase inside a testcase is an ordinary
/// element of the outer one). Its buffers are reused from case to case.
struct Case {
    open: bool,
    depth: usize,
    /// The offset of the case's `<testcase`.
    start: u64,
    pytest_suite: bool,
    classname: String,
    name: String,
    file: Option<String>,
    line: Option<String>,
    duration_us: u64,
    chosen: Option<Chosen>,
    flaky_result: bool,
    capture: Capture,
    capture_depth: usize,
    text: HeadTail,
    stdout: HeadTail,
    stderr: HeadTail,
    /// What the case says of its subtests (see `subtests.rs`).
    subtests: subtests::CaseSubtests,
    /// pytest's captured-output sections of the open `system-out`/`system-err`.
    sections: sections::Sections,
    /// Captured log records (the `Captured Log` sections), tail-capped.
    log: HeadTail,
}

/// What the held test's attempts were (retries merge: consecutive testcases with one
/// node id).
struct HeldAttempts {
    any_passed: bool,
    any_failed: bool,
}

struct Junit<'b, 's> {
    budgets: &'b Budgets,
    sink: &'s mut dyn FnMut(Item),
    /// Open `testsuite` elements outside testcases: (depth, name is "pytest").
    suites: Vec<(usize, bool)>,
    case: Case,
    /// The previous test, held to merge retries; it is built here in place and moved
    /// once, into the sink (a record is 256 bytes, and most tests are passed ones).
    held: Option<TestRecord>,
    held_attempts: HeldAttempts,
    /// The node id of the case being closed, as UTF-8 (reused buffer).
    node_id: Vec<u8>,
    /// The node id prefix (all but the name) of the last case and what it was made of:
    /// consecutive cases mostly share their classname, so it is rarely rebuilt.
    prefix: Vec<u8>,
    prefix_of: (String, Option<String>, bool),
    /// The lexer's offsets are file offsets: a failure's record says where its case is
    /// ([`SourceSpan`]).
    spans: bool,
}

impl<'b, 's> Junit<'b, 's> {
    fn new(budgets: &'b Budgets, sink: &'s mut dyn FnMut(Item), spans: bool) -> Self {
        Junit {
            budgets,
            sink,
            suites: Vec::new(),
            case: Case {
                open: false,
                depth: 0,
                start: 0,
                pytest_suite: false,
                classname: String::new(),
                name: String::new(),
                file: None,
                line: None,
                duration_us: 0,
                chosen: None,
                flaky_result: false,
                capture: Capture::None,
                capture_depth: 0,
                text: HeadTail::new(0, 0),
                stdout: HeadTail::for_output(budgets.max_output_bytes),
                stderr: HeadTail::for_output(budgets.max_output_bytes),
                subtests: subtests::CaseSubtests::default(),
                sections: sections::Sections::default(),
                log: HeadTail::for_output(budgets.max_log_bytes),
            },
            held: None,
            held_attempts: HeldAttempts {
                any_passed: false,
                any_failed: false,
            },
            node_id: Vec::new(),
            prefix: Vec::new(),
            prefix_of: (String::new(), None, false),
            spans,
        }
    }
}

impl Handler for Junit<'_, '_> {
    fn start(
        &mut self,
        elem: Elem,
        attrs: &mut Attrs,
        depth: usize,
        at: u64,
    ) -> Result<(), ReportError> {
        if !self.case.open {
            match elem {
                Elem::Testsuite => self
                    .suites
                    .push((depth, attrs.get(Slot::Name) == Some("pytest"))),
                Elem::Testcase => self.open_case(attrs, depth, at),
                _ => {}
            }
            return Ok(());
        }
        if elem == Elem::Property && depth == self.case.depth + 2 && self.case.pytest_suite {
            self.case.subtests.read_property(attrs);
            return Ok(());
        }
        if depth != self.case.depth + 1 {
            return Ok(());
        }
        if elem == Elem::Failure {
            self.failure_starts();
        }
        let case = &mut self.case;
        match elem {
            Elem::Failure | Elem::Error | Elem::Skipped => {
                let chosen = result_of(elem, attrs);
                let worse = !matches!(&case.chosen, Some(c) if c.outcome.severity() >= chosen.outcome.severity());
                if worse {
                    if chosen.outcome.is_problem() {
                        case.text = HeadTail::for_text();
                        case.capture = Capture::Text;
                        case.capture_depth = depth;
                    }
                    case.chosen = Some(chosen);
                }
            }
            Elem::FlakyFailure | Elem::FlakyError => case.flaky_result = true,
            Elem::SystemOut => {
                case.capture = Capture::Stdout;
                case.capture_depth = depth;
                case.sections.begin(sections::Stream::Out);
            }
            Elem::SystemErr => {
                case.capture = Capture::Stderr;
                case.capture_depth = depth;
                case.sections.begin(sections::Stream::Err);
            }
            _ => {}
        }
        Ok(())
    }

    fn end(&mut self, elem: Elem, depth: usize, after: u64) -> Result<(), ReportError> {
        if self.case.open {
            if depth == self.case.depth {
                self.close_case(after);
            } else if self.case.capture != Capture::None && depth == self.case.capture_depth {
                if self.case.capture != Capture::Text {
                    let Case {
                        sections,
                        stdout,
                        stderr,
                        log,
                        ..
                    } = &mut self.case;
                    sections.end(&mut |stream, t| route(stream, t, stdout, stderr, log));
                }
                self.case.capture = Capture::None;
            }
        } else if elem == Elem::Testsuite && self.suites.last().is_some_and(|&(d, _)| d == depth) {
            self.suites.pop();
        }
        Ok(())
    }

    #[inline]
    fn capturing(&self) -> bool {
        self.case.open && self.case.capture != Capture::None
    }

    fn text(&mut self, s: &str) {
        match self.case.capture {
            Capture::Text => self.case.text.push(s),
            Capture::Stdout | Capture::Stderr => {
                let Case {
                    sections,
                    stdout,
                    stderr,
                    log,
                    ..
                } = &mut self.case;
                sections.push(s, &mut |stream, t| route(stream, t, stdout, stderr, log));
            }
            Capture::None => {}
        }
    }
}

/// Text of a captured-output section to its stream.
fn route(
    stream: sections::Stream,
    text: &str,
    stdout: &mut HeadTail,
    stderr: &mut HeadTail,
    log: &mut HeadTail,
) {
    match stream {
        sections::Stream::Out => stdout.push(text),
        sections::Stream::Err => stderr.push(text),
        sections::Stream::Log => log.push(text),
    }
}

/// What one `failure`/`error`/`skipped` element says.
fn result_of(elem: Elem, attrs: &Attrs) -> Chosen {
    let message = attrs.get(Slot::Message);
    let kind = attrs.get(Slot::Type);
    let (outcome, phase, collection) = match elem {
        Elem::Failure => (Outcome::Failed, Some(Phase::Call), false),
        Elem::Error => {
            let m = message.unwrap_or("");
            let phase = if m.starts_with("failed on setup") {
                Some(Phase::Setup)
            } else if m.starts_with("failed on teardown") {
                Some(Phase::Teardown)
            } else {
                None
            };
            (Outcome::Error, phase, message == Some(COLLECTION_FAILURE))
        }
        _ if message == Some(XPASS_MESSAGE) => (Outcome::XPassed, None, false),
        _ if kind == Some("pytest.xfail") => (Outcome::XFailed, None, false),
        _ => (Outcome::Skipped, None, false),
    };
    let details = outcome.is_problem();
    Chosen {
        outcome,
        phase,
        collection,
        exception: if details {
            kind.filter(|k| !k.is_empty()).map(str::to_string)
        } else {
            None
        },
        message: if details {
            message.map(|m| unwrap_phase_message(m).to_string())
        } else {
            None
        },
        message_omitted: if details {
            attrs.omitted(Slot::Message)
        } else {
            0
        },
    }
}

/// pytest writes a setup/teardown error's message as `failed on setup with "<reason>"`
/// (`_pytest/junitxml.py`, `append_error`); the reason alone is the message, so that
/// errors of different causes do not share one group.
fn unwrap_phase_message(m: &str) -> &str {
    for prefix in ["failed on setup with \"", "failed on teardown with \""] {
        if let Some(rest) = m.strip_prefix(prefix) {
            return rest.strip_suffix('"').unwrap_or(rest);
        }
    }
    m
}

fn set_optional(slot: &mut Option<String>, value: Option<&str>) {
    match (slot.as_mut(), value) {
        (Some(buf), Some(v)) => {
            buf.clear();
            buf.push_str(v);
        }
        (None, Some(v)) => *slot = Some(v.to_string()),
        (_, None) => *slot = None,
    }
}

impl Junit<'_, '_> {
    fn open_case(&mut self, attrs: &mut Attrs, depth: usize, at: u64) {
        let pytest_suite = self.suites.last().is_some_and(|&(_, pytest)| pytest);
        let case = &mut self.case;
        case.open = true;
        case.depth = depth;
        case.start = at;
        case.pytest_suite = pytest_suite;
        attrs.take_into(Slot::Classname, &mut case.classname);
        attrs.take_into(Slot::Name, &mut case.name);
        set_optional(&mut case.file, attrs.get(Slot::File));
        set_optional(&mut case.line, attrs.get(Slot::Line));
        case.duration_us = attrs.get(Slot::Time).map_or(0, duration_us_fast);
        case.chosen = None;
        case.flaky_result = false;
        case.capture = Capture::None;
        case.subtests.clear();
    }

    /// The case ends at offset `after`.
    fn close_case(&mut self, after: u64) {
        let case = &mut self.case;
        case.open = false;
        case.capture = Capture::None;
        let mut chosen = case.chosen.take();
        // Take the text, leaving an empty one (no allocation) for the next case.
        let mut text = std::mem::replace(&mut case.text, HeadTail::new(0, 0));
        let file = case.file.as_deref().unwrap_or("");
        if let Some(chosen) = chosen.as_ref().filter(|c| c.collection) {
            let (text, omitted) = text.finish();
            let record = CollectionErrorRecord {
                path: collection_error_path(&case.classname, &case.name, file, case.pytest_suite),
                exception: chosen.exception.clone(),
                // pytest's "collection failure" is a marker, not a message: the builder
                // takes the message from the text (its `E ` line).
                message: None,
                text: Some(text),
                text_bytes_omitted: omitted,
            };
            clear_output(&mut self.case);
            self.flush();
            (self.sink)(Item::CollectionError(record));
            return;
        }
        let passed_with_failed_subtests = self.close_subtests(&mut chosen, &mut text);
        self.build_node_id();
        let outcome = chosen.as_ref().map_or(Outcome::Passed, |c| c.outcome);
        let case = &self.case;
        let duration_us = case.duration_us;
        let flaky = case.flaky_result && !outcome.is_problem();
        let chosen = chosen.filter(|c| c.outcome.is_problem());
        let retry = self
            .held
            .as_ref()
            .is_some_and(|held| same_id(held.node_id.as_bytes(), &self.node_id));
        let record = if retry {
            let held = self.held.as_mut().expect("checked just above");
            let attempts = &mut self.held_attempts;
            attempts.any_passed |= outcome == Outcome::Passed;
            attempts.any_failed |= outcome.is_problem();
            // this attempt replaces the held one; the durations add up
            let record = TestRecord {
                node_id: std::mem::take(&mut held.node_id),
                outcome: Some(outcome),
                duration_us: held.duration_us.saturating_add(duration_us),
                flaky: held.flaky || flaky || (attempts.any_passed && attempts.any_failed),
                passed_with_failed_subtests,
                ..TestRecord::default()
            };
            *held = record;
            held
        } else {
            self.flush();
            self.held_attempts = HeldAttempts {
                any_passed: outcome == Outcome::Passed,
                any_failed: outcome.is_problem(),
            };
            self.held.insert(TestRecord {
                node_id: into_string(self.node_id.clone()),
                outcome: Some(outcome),
                duration_us,
                flaky,
                passed_with_failed_subtests,
                ..TestRecord::default()
            })
        };
        let span = self.spans.then_some(SourceSpan {
            start: self.case.start,
            end: after,
            in_pytest_suite: self.case.pytest_suite,
            file: 0,
        });
        match chosen {
            Some(chosen) => {
                fill_failure(&mut self.case, self.budgets, record, chosen, text);
                record.source = span;
            }
            // Only a failure keeps its output: the buffers stay for the next case.
            None => clear_output(&mut self.case),
        }
    }

    /// Put the open case's node id in `self.node_id` (the prefix is rebuilt only when
    /// the classname, file or suite kind changed since the last case).
    fn build_node_id(&mut self) {
        let case = &self.case;
        let file = case.file.as_deref().unwrap_or("");
        let (cached_classname, cached_file, cached_pytest) = &mut self.prefix_of;
        if *cached_classname != case.classname
            || *cached_file != case.file
            || *cached_pytest != case.pytest_suite
        {
            self.prefix.clear();
            write_node_prefix(&mut self.prefix, &case.classname, file, case.pytest_suite);
            cached_classname.clone_from(&case.classname);
            cached_file.clone_from(&case.file);
            *cached_pytest = case.pytest_suite;
        }
        self.node_id.clear();
        self.node_id.extend_from_slice(&self.prefix);
        self.node_id.extend_from_slice(case.name.as_bytes());
    }

    fn flush(&mut self) {
        if let Some(record) = self.held.take() {
            (self.sink)(Item::Test(record));
        }
    }
}

/// `a == b` for node ids, their last 8 bytes compared first: consecutive tests mostly
/// differ only there (`test_x[1]`, `test_x[2]`), after a long common prefix.
#[inline]
fn same_id(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n >= 8 {
        let last = |s: &[u8]| u64::from_ne_bytes(s[n - 8..].try_into().expect("8 bytes"));
        if last(a) != last(b) {
            return false;
        }
    }
    a == b
}

/// A failed/error record's details: its result, its text, and the case's captured
/// output (taken, leaving empty buffers for the next case).
fn fill_failure(
    case: &mut Case,
    budgets: &Budgets,
    record: &mut TestRecord,
    chosen: Chosen,
    text: HeadTail,
) {
    let take = |buf: &mut HeadTail, max: usize| {
        if buf.is_empty() {
            (String::new(), 0)
        } else {
            std::mem::replace(buf, HeadTail::for_output(max)).finish()
        }
    };
    let (out, out_omitted) = take(&mut case.stdout, budgets.max_output_bytes);
    let (err, err_omitted) = take(&mut case.stderr, budgets.max_output_bytes);
    let (log, log_omitted) = take(&mut case.log, budgets.max_log_bytes);
    let (text, text_omitted) = text.finish();
    let file = case.file.as_deref().unwrap_or("");
    record.phase = chosen.phase;
    record.exception = chosen.exception;
    record.message = chosen.message;
    record.text = Some(text);
    record.path = location_path(file);
    record.line = case.line.as_deref().and_then(parse_line);
    record.stdout = (!out.is_empty()).then_some(out);
    record.stderr = (!err.is_empty()).then_some(err);
    record.log = (!log.is_empty()).then_some(log);
    record.text_bytes_omitted = text_omitted + chosen.message_omitted;
    record.output_bytes_omitted = out_omitted + err_omitted + log_omitted;
}

/// Forget the case's captured output, keeping its buffers (for the next case).
fn clear_output(case: &mut Case) {
    case.stdout.clear();
    case.stderr.clear();
    case.log.clear();
}

/// `time` in seconds -> microseconds, as `duration_us_from_text(_, true)`, with a fast
/// path for the usual plain `digits[.digits]` of at most 15 digits: then `m / 10^k`
/// (both exact doubles) is one correctly rounded division, the value `str::parse`
/// gives (Clinger's fast path).
fn duration_us_fast(s: &str) -> u64 {
    const POW10: [f64; 16] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    ];
    let mut mantissa: u64 = 0;
    let mut digits = 0usize;
    let mut fraction_digits = 0usize;
    let mut seen_dot = false;
    for &c in s.as_bytes() {
        match c {
            b'0'..=b'9' => {
                mantissa = mantissa.wrapping_mul(10).wrapping_add((c - b'0') as u64);
                digits += 1;
                fraction_digits += seen_dot as usize;
            }
            b'.' if !seen_dot => seen_dot = true,
            _ => return duration_us_from_text(s, true),
        }
    }
    if digits == 0 || digits > 15 {
        return duration_us_from_text(s, true);
    }
    duration_us_from_f64(mantissa as f64 / POW10[fraction_digits])
}

/// `file` without a leading `./`; None when empty.
fn location_path(file: &str) -> Option<String> {
    let p = file.strip_prefix("./").unwrap_or(file);
    (!p.is_empty()).then(|| p.to_string())
}

/// A `line` attribute: decimal digits only, fitting in 64 bits.
fn parse_line(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The pytest-style node id of a testcase (docs/ENGINE.md, *JUnit XML*, rules 1-3).
pub fn node_id(classname: &str, name: &str, file: &str, pytest_suite: bool) -> String {
    let mut id = Vec::new();
    write_node_prefix(&mut id, classname, file, pytest_suite);
    id.extend_from_slice(name.as_bytes());
    into_string(id)
}

/// A node id written by [`write_node_prefix`] and a name as a `String`.
fn into_string(bytes: Vec<u8>) -> String {
    debug_assert!(std::str::from_utf8(&bytes).is_ok());
    // SAFETY: `write_node_prefix` writes only whole `&str`s, ASCII literals, and ASCII bytes
    // in place of ASCII bytes of a `&str`, so the bytes are valid UTF-8.
    unsafe { String::from_utf8_unchecked(bytes) }
}

/// Push `s` with every `.` replaced by `with` (one byte, or `::`). A plain mapped copy:
/// these strings are short, and pushing piece by piece costs more.
#[inline]
fn push_replacing_dots(out: &mut Vec<u8>, s: &str, with: &'static [u8]) {
    if !s.contains('.') {
        out.extend_from_slice(s.as_bytes());
        return;
    }
    if with.len() == 1 {
        let start = out.len();
        out.extend_from_slice(s.as_bytes());
        for b in &mut out[start..] {
            if *b == b'.' {
                *b = with[0];
            }
        }
        return;
    }
    for (i, segment) in s.split('.').enumerate() {
        if i > 0 {
            out.extend_from_slice(with);
        }
        out.extend_from_slice(segment.as_bytes());
    }
}

/// [`node_id`] without the test name (everything before it) as UTF-8 into `out`,
/// without allocating. Only whole `&str`s, ASCII literals and ASCII bytes in place of
/// ASCII bytes are written, so `out` stays valid UTF-8.
fn write_node_prefix(out: &mut Vec<u8>, classname: &str, file: &str, pytest_suite: bool) {
    // Rule 1: a `.py` file attribute anchors the path; its module is the path with `/`
    // and `\` read as `.`.
    let path = file.strip_prefix("./").unwrap_or(file);
    if let Some(stem) = path.strip_suffix(".py") {
        let (c, m) = (classname.as_bytes(), stem.as_bytes());
        let module_matches = c.len() >= m.len()
            && c.iter()
                .zip(m)
                .all(|(&x, &y)| x == if y == b'/' || y == b'\\' { b'.' } else { y });
        if module_matches && (c.len() == m.len() || c[m.len()] == b'.') {
            out.extend_from_slice(path.as_bytes());
            out.extend_from_slice(b"::");
            if c.len() > m.len() {
                push_replacing_dots(out, &classname[m.len() + 1..], b"::");
                out.extend_from_slice(b"::");
            }
            return;
        }
    }
    // Rule 2: pytest's dotted classname; the trailing segments starting with an ASCII
    // capital are classes, the rest the module.
    if pytest_suite && !classname.is_empty() {
        let b = classname.as_bytes();
        let mut classes_start = b.len();
        loop {
            let end = if classes_start == b.len() {
                b.len()
            } else {
                classes_start - 1
            };
            let start = b[..end]
                .iter()
                .rposition(|&c| c == b'.')
                .map_or(0, |i| i + 1);
            if !b.get(start).is_some_and(u8::is_ascii_uppercase) || start == end {
                break;
            }
            classes_start = start;
            if start == 0 {
                break;
            }
        }
        if classes_start > 0 {
            let module_end = if classes_start == b.len() {
                b.len()
            } else {
                classes_start - 1
            };
            push_replacing_dots(out, &classname[..module_end], b"/");
            out.extend_from_slice(b".py");
            if classes_start < b.len() {
                out.extend_from_slice(b"::");
                push_replacing_dots(out, &classname[classes_start..], b"::");
            }
            out.extend_from_slice(b"::");
            return;
        }
    }
    // Rule 3.
    if !classname.is_empty() {
        out.extend_from_slice(classname.as_bytes());
        out.extend_from_slice(b"::");
    }
}

/// The path of a collection error: with an empty classname, the name (pytest writes the
/// module's dotted path there) converted by rule 2's module rule in pytest's suite;
/// with a classname (a class that failed to collect), the node id of rules 1-3.
pub fn collection_error_path(
    classname: &str,
    name: &str,
    file: &str,
    pytest_suite: bool,
) -> String {
    if !classname.is_empty() {
        return node_id(classname, name, file, pytest_suite);
    }
    if pytest_suite && !name.is_empty() {
        return format!("{}.py", name.replace('.', "/"));
    }
    name.to_string()
}

#[cfg(test)]
mod tests;
