//! Streaming JUnit XML parser (docs/ENGINE.md, *JUnit XML*, *Records*, *Text capping*).
//!
//! Bytes -> [`decode`] (byte order mark, XML declaration, ISO-8859-1/UTF-16 transcoding)
//! -> [`lexer`] (a streaming XML lexer that accepts what expat accepts, no DTDs) ->
//! [`Junit`] (testcase results -> records, retries merged). Memory is bounded by the
//! read buffer, the text caps per test and the names of the open elements, whatever
//! the size of the file. The pure twin is `src/pytest_mcp_server/pure/junit.py`.

mod decode;
mod lexer;
mod names;

use std::io::{Cursor, Read};

use crate::budgets::Budgets;
use crate::error::ReportError;
use crate::record::{CollectionErrorRecord, Item, Outcome, Phase, TestRecord};
use crate::text::{duration_us_from_text, HeadTail};

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
    mut reader: R,
    path: &str,
    budgets: &Budgets,
    sink: &mut dyn FnMut(Item),
) -> Result<(), ReportError> {
    let mut head = Vec::with_capacity(DECL_WINDOW);
    (&mut reader).take(DECL_WINDOW as u64).read_to_end(&mut head).map_err(|e| ReportError::from_io(path, &e))?;
    let whole = head.len() < DECL_WINDOW;
    let prologue = decode::read_prologue(path, &head, whole)?;
    let bom_len = prologue.bom_len;
    let rest = Cursor::new(head).chain(reader);
    // The byte order mark is skipped by reading past it.
    let mut rest = rest;
    let mut skipped = [0u8; 3];
    rest.read_exact(&mut skipped[..bom_len]).map_err(|e| ReportError::from_io(path, &e))?;
    let src: Box<dyn Read + '_> = match prologue.mode {
        Mode::Utf8 => Box::new(rest),
        Mode::Ascii => Box::new(decode::AsciiOnly::new(rest, bom_len as u64)),
        Mode::Latin1 => Box::new(decode::Latin1ToUtf8::new(rest)),
        Mode::Utf16Le => Box::new(decode::Utf16ToUtf8::new(rest, true)),
        Mode::Utf16Be => Box::new(decode::Utf16ToUtf8::new(rest, false)),
    };
    let file_offsets = prologue.mode.is_utf8_on_disk();
    let mut lexer = Lexer::new(src, path, prologue.decl_end, bom_len as u64, file_offsets);
    let mut junit = Junit { budgets, sink, suites: Vec::new(), case: None, held: None };
    lexer.run(&mut junit)?;
    junit.flush();
    Ok(())
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

/// An open `<testcase>`.
struct Case {
    depth: usize,
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
}

/// The previous test, held to merge retries (consecutive testcases with one node id).
struct Held {
    record: TestRecord,
    any_passed: bool,
    any_failed: bool,
}

struct Junit<'b, 's> {
    budgets: &'b Budgets,
    sink: &'s mut dyn FnMut(Item),
    /// Open `testsuite` elements outside testcases: (depth, name is "pytest").
    suites: Vec<(usize, bool)>,
    case: Option<Case>,
    held: Option<Held>,
}

impl Handler for Junit<'_, '_> {
    fn start(&mut self, elem: Elem, attrs: &Attrs, depth: usize) -> Result<(), ReportError> {
        let Some(case) = self.case.as_mut() else {
            match elem {
                Elem::Testsuite => self.suites.push((depth, attrs.get(Slot::Name) == Some("pytest"))),
                Elem::Testcase => self.case = Some(self.open_case(attrs, depth)),
                _ => {}
            }
            return Ok(());
        };
        if depth != case.depth + 1 {
            return Ok(());
        }
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
            }
            Elem::SystemErr => {
                case.capture = Capture::Stderr;
                case.capture_depth = depth;
            }
            _ => {}
        }
        Ok(())
    }

    fn end(&mut self, elem: Elem, depth: usize) -> Result<(), ReportError> {
        match self.case.as_mut() {
            Some(case) if depth == case.depth => {
                let case = self.case.take().expect("an open testcase");
                self.close_case(case);
            }
            Some(case) => {
                if case.capture != Capture::None && depth == case.capture_depth {
                    case.capture = Capture::None;
                }
            }
            None => {
                if elem == Elem::Testsuite && self.suites.last().is_some_and(|&(d, _)| d == depth) {
                    self.suites.pop();
                }
            }
        }
        Ok(())
    }

    #[inline]
    fn capturing(&self) -> bool {
        self.case.as_ref().is_some_and(|c| c.capture != Capture::None)
    }

    fn text(&mut self, s: &str) {
        if let Some(case) = self.case.as_mut() {
            match case.capture {
                Capture::Text => case.text.push(s),
                Capture::Stdout => case.stdout.push(s),
                Capture::Stderr => case.stderr.push(s),
                Capture::None => {}
            }
        }
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
        exception: if details { kind.filter(|k| !k.is_empty()).map(str::to_string) } else { None },
        message: if details { message.map(str::to_string) } else { None },
        message_omitted: if details { attrs.omitted(Slot::Message) } else { 0 },
    }
}

impl Junit<'_, '_> {
    fn open_case(&self, attrs: &Attrs, depth: usize) -> Case {
        Case {
            depth,
            pytest_suite: self.suites.last().is_some_and(|&(_, pytest)| pytest),
            classname: attrs.get(Slot::Classname).unwrap_or("").to_string(),
            name: attrs.get(Slot::Name).unwrap_or("").to_string(),
            file: attrs.get(Slot::File).map(str::to_string),
            line: attrs.get(Slot::Line).map(str::to_string),
            duration_us: attrs.get(Slot::Time).map_or(0, |t| duration_us_from_text(t, true)),
            chosen: None,
            flaky_result: false,
            capture: Capture::None,
            capture_depth: 0,
            text: HeadTail::new(0, 0),
            stdout: HeadTail::for_output(self.budgets.max_output_bytes),
            stderr: HeadTail::for_output(self.budgets.max_output_bytes),
        }
    }

    fn close_case(&mut self, case: Case) {
        let file = case.file.as_deref().unwrap_or("");
        let Case { chosen, text, stdout, stderr, flaky_result, duration_us, .. } = case;
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
            self.flush();
            (self.sink)(Item::CollectionError(record));
            return;
        }
        let node_id = node_id(&case.classname, &case.name, file, case.pytest_suite);
        let outcome = chosen.as_ref().map_or(Outcome::Passed, |c| c.outcome);
        let mut record = TestRecord {
            node_id,
            outcome: Some(outcome),
            duration_us,
            flaky: flaky_result && !outcome.is_problem(),
            ..TestRecord::default()
        };
        if let Some(chosen) = chosen.filter(|c| c.outcome.is_problem()) {
            let (text, text_omitted) = text.finish();
            let (out, out_omitted) = stdout.finish();
            let (err, err_omitted) = stderr.finish();
            record.phase = chosen.phase;
            record.exception = chosen.exception;
            record.message = chosen.message;
            record.text = Some(text);
            record.path = location_path(file);
            record.line = case.line.as_deref().and_then(parse_line);
            record.stdout = (!out.is_empty()).then_some(out);
            record.stderr = (!err.is_empty()).then_some(err);
            record.text_bytes_omitted = text_omitted + chosen.message_omitted;
            record.output_bytes_omitted = out_omitted + err_omitted;
        }
        self.push_test(record);
    }

    /// Merge `record` into the held test when it retries it, else emit the held one.
    fn push_test(&mut self, record: TestRecord) {
        let passed = record.outcome() == Outcome::Passed;
        let failed = record.outcome().is_problem();
        match self.held.as_mut() {
            Some(held) if held.record.node_id == record.node_id => {
                held.any_passed |= passed;
                held.any_failed |= failed;
                let duration_us = held.record.duration_us.saturating_add(record.duration_us);
                let flaky = held.record.flaky || record.flaky || (held.any_passed && held.any_failed);
                held.record = TestRecord { duration_us, flaky, ..record };
            }
            _ => {
                self.flush();
                self.held = Some(Held { record, any_passed: passed, any_failed: failed });
            }
        }
    }

    fn flush(&mut self) {
        if let Some(held) = self.held.take() {
            (self.sink)(Item::Test(held.record));
        }
    }
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
    // Rule 1: a `.py` file attribute anchors the path.
    let path = file.strip_prefix("./").unwrap_or(file);
    if let Some(stem) = path.strip_suffix(".py") {
        let module: String = stem.chars().map(|c| if c == '/' || c == '\\' { '.' } else { c }).collect();
        if classname == module {
            return format!("{path}::{name}");
        }
        if let Some(rest) = classname.strip_prefix(module.as_str()).and_then(|r| r.strip_prefix('.')) {
            return format!("{path}::{}::{name}", rest.replace('.', "::"));
        }
    }
    // Rule 2: pytest's dotted classname; trailing capitalised segments are classes.
    if pytest_suite && !classname.is_empty() {
        let segments: Vec<&str> = classname.split('.').collect();
        let classes =
            segments.iter().rev().take_while(|s| s.as_bytes().first().is_some_and(u8::is_ascii_uppercase)).count();
        let modules = segments.len() - classes;
        if modules > 0 {
            let mut id = String::with_capacity(classname.len() + name.len() + 8);
            id.push_str(&segments[..modules].join("/"));
            id.push_str(".py");
            for class in &segments[modules..] {
                id.push_str("::");
                id.push_str(class);
            }
            id.push_str("::");
            id.push_str(name);
            return id;
        }
    }
    // Rule 3.
    if classname.is_empty() {
        name.to_string()
    } else {
        format!("{classname}::{name}")
    }
}

/// The path of a collection error: with an empty classname, the name (pytest writes the
/// module's dotted path there) converted by rule 2's module rule in pytest's suite;
/// with a classname (a class that failed to collect), the node id of rules 1-3.
pub fn collection_error_path(classname: &str, name: &str, file: &str, pytest_suite: bool) -> String {
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
