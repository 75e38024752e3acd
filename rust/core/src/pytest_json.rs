//! Streaming pytest-json-report parser (docs/ENGINE.md, *pytest-json-report*).
//!
//! A validating pull lexer (`lexer.rs`) walks the document once, in chunks; the parser
//! reads the top-level keys `root`, `exitcode`, `summary`, `collectors` and `tests` and
//! skips (while validating) everything else. A test object is read field by field and
//! only its capped texts are kept (`HeadTail`, first 64 KiB of a message), so memory does
//! not depend on the report or on the size of one test. Mirrored by
//! `pure/pytest_json/`; the parity tests check both on the same inputs.
//!
//! Errors: a JSON syntax error (or a broken limit: nesting, number range) is `malformed`
//! at once. A type error in the pytest-json-report structure is `malformed` too, but only
//! once the document is known to be a report (it has `exitcode` and `summary`); until
//! then it is held, so that other JSON documents (mocha, jest, ...) are `not_a_report`.

mod lexer;

use std::io::Read;

use crate::budgets::Budgets;
use crate::error::{ErrorKind, ReportError};
use crate::record::{
    CollectionErrorRecord, Item, Outcome, Phase, ReprFrames, SourceSpan, TestRecord,
};
use crate::text::{duration_us_from_f64, HeadTail, ATTR_CAP};

use lexer::{Capped, Discard, Fail, Key, Kind, Lexer, ShortStr, StrSink};

/// Parse a pytest-json-report document from `reader` (positioned at byte 0), handing each
/// record to `sink` in report order.
///
/// Errors (`ReportError`): `not_a_report` when the root is not an object or lacks
/// `exitcode`/`summary`; `malformed` for invalid JSON (positions are byte offsets) or a
/// wrong type where the format needs one; `unreadable` when reading fails.
pub fn parse_pytest_json<R: Read>(
    reader: R,
    path: &str,
    budgets: &Budgets,
    sink: &mut dyn FnMut(Item),
) -> Result<(), ReportError> {
    parse_pytest_json_session(reader, path, budgets, sink).map(|_| ())
}

/// One `tests` entry parsed again: `entry` gives the bytes of a [`SourceSpan`] of a
/// pytest-json-report file, parsed as the only entry of a report, with a read buffer of
/// `buffer` bytes at first; its record goes to `sink`. Errors as
/// [`parse_pytest_json`]'s, with offsets into that small document.
pub(crate) fn reparse_entry<R: Read>(
    entry: R,
    path: &str,
    budgets: &Budgets,
    sink: &mut dyn FnMut(Item),
    buffer: usize,
) -> Result<(), ReportError> {
    let document = (&b"{\"exitcode\": 1, \"summary\": {}, \"tests\": ["[..])
        .chain(entry)
        .chain(&b"]}"[..]);
    parse_buffered(document, path, budgets, sink, buffer).map(|_| ())
}

/// `parse_pytest_json`, also returning the report's top-level `duration` (pytest's
/// session time) in integer microseconds, or None without one.
pub fn parse_pytest_json_session<R: Read>(
    reader: R,
    path: &str,
    budgets: &Budgets,
    sink: &mut dyn FnMut(Item),
) -> Result<Option<u64>, ReportError> {
    parse_buffered(reader, path, budgets, sink, lexer::CHUNK)
}

/// [`parse_pytest_json_session`] with a read buffer of `buffer` bytes at first.
fn parse_buffered<R: Read>(
    reader: R,
    path: &str,
    budgets: &Budgets,
    sink: &mut dyn FnMut(Item),
    buffer: usize,
) -> Result<Option<u64>, ReportError> {
    let mut parser = Parser {
        lx: Lexer::with_buffer(reader, buffer),
        path,
        max_output_bytes: budgets.max_output_bytes,
        max_log_bytes: budgets.max_log_bytes,
        sink,
        entries: TestEntries::new(budgets.max_output_bytes, budgets.max_log_bytes),
        has_exitcode: false,
        has_summary: false,
        held_error: None,
        session_us: None,
    };
    parser.document()?;
    Ok(parser.session_us)
}

/// A test entry's `outcome`, with pytest-rerunfailures' `rerun`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum EntryOutcome {
    Final(Outcome),
    Rerun,
}

fn entry_outcome(s: &str) -> Option<EntryOutcome> {
    Some(match s {
        // pytest 9's status word for a passed subtest, left as the entry's outcome when a
        // subtest report came last (docs/ENGINE.md, *Subtests*).
        "passed" | "subtests passed" => EntryOutcome::Final(Outcome::Passed),
        "failed" => EntryOutcome::Final(Outcome::Failed),
        "error" => EntryOutcome::Final(Outcome::Error),
        "skipped" => EntryOutcome::Final(Outcome::Skipped),
        "xfailed" => EntryOutcome::Final(Outcome::XFailed),
        "xpassed" => EntryOutcome::Final(Outcome::XPassed),
        "rerun" => EntryOutcome::Rerun,
        _ => return None,
    })
}

const PHASES: [(&str, Phase); 3] = [
    ("setup", Phase::Setup),
    ("call", Phase::Call),
    ("teardown", Phase::Teardown),
];

#[derive(Default)]
pub(crate) struct Crash {
    pub(crate) path: Option<String>,
    pub(crate) line: Option<u64>,
    pub(crate) message: Option<String>,
    pub(crate) message_dropped: u64,
}

/// What is kept of one phase object (`setup`, `call`, `teardown`).
#[derive(Default)]
pub(crate) struct PhaseData {
    pub(crate) duration_us: u64,
    pub(crate) failed: bool,
    pub(crate) longrepr: Option<(String, u64)>,
    /// The frames of a report log's structured `longrepr`, when `longrepr` is its whole
    /// text (docs/ENGINE.md, *Frames as data*).
    pub(crate) frames: Option<Box<ReprFrames>>,
    pub(crate) crash: Option<Crash>,
    pub(crate) stdout: Option<(String, u64)>,
    pub(crate) stderr: Option<(String, u64)>,
    /// The phase's log records as lines, tail-capped (docs/ENGINE.md, *Logs*).
    pub(crate) log: Option<(String, u64)>,
}

/// What is kept of one element of `tests`.
#[derive(Default)]
pub(crate) struct Entry {
    pub(crate) node_id: Option<String>,
    pub(crate) outcome: Option<EntryOutcome>,
    pub(crate) phases: [Option<PhaseData>; 3],
}

/// Earlier attempts (`rerun` entries) of the test whose next entry is awaited.
struct RerunChain {
    node_id: String,
    duration_us: u64,
}

struct Parser<'a, R: Read> {
    lx: Lexer<R>,
    path: &'a str,
    max_output_bytes: usize,
    max_log_bytes: usize,
    sink: &'a mut dyn FnMut(Item),
    /// The test entries (with the report's `root`, when present and within `ATTR_CAP`).
    entries: TestEntries,
    has_exitcode: bool,
    has_summary: bool,
    /// The first structural error, held until the document is known to be a report.
    held_error: Option<ReportError>,
    /// The report's `duration` in microseconds, when it has one.
    session_us: Option<u64>,
}

/// The reading of one object's known keys: before its first key or not, which of the
/// known keys (bits of their indexes, at most 32) were seen (the duplicate-key rule),
/// and whether the object still follows the format (`ok`: false after a repeated key,
/// a value of the wrong kind or what the caller marks; the error is reported and the
/// caller drops the object). Handed to `Parser::next_field` until it returns None.
struct Fields {
    first: bool,
    seen: u32,
    ok: bool,
}

impl Fields {
    /// For an object whose `{` was just consumed.
    fn new() -> Self {
        Fields {
            first: true,
            seen: 0,
            ok: true,
        }
    }
}

impl<'a, R: Read> Parser<'a, R> {
    fn fail(&self, fail: Fail) -> ReportError {
        match fail {
            Fail::Io(e) => ReportError::from_io(self.path, &e),
            Fail::Syntax { offset, what } => ReportError::new(
                ErrorKind::Malformed,
                self.path,
                format!(
                    "not valid JSON: {what}; the report is damaged or was cut short, \
                     regenerate it (pytest --json-report)"
                ),
            )
            .at(format!("byte {offset}")),
        }
    }

    fn is_report(&self) -> bool {
        self.has_exitcode && self.has_summary
    }

    /// A wrong type or value in the report's structure at byte `offset`: an error now if
    /// the document is a report, else held (docs/ENGINE.md: `not_a_report` wins for
    /// documents without `exitcode`/`summary`).
    fn structural(&mut self, offset: u64, what: String) -> Result<(), ReportError> {
        let err = ReportError::new(
            ErrorKind::Malformed,
            self.path,
            format!(
                "{what}; this does not follow the pytest-json-report format, \
                 regenerate the report with pytest --json-report"
            ),
        )
        .at(format!("byte {offset}"));
        if self.is_report() {
            return Err(err);
        }
        if self.held_error.is_none() {
            self.held_error = Some(err);
        }
        Ok(())
    }

    /// Check the type of the next value; on a mismatch, report it and skip the value.
    /// Returns true when the value has the wanted kind (and is still to be read).
    fn expect_kind(
        &mut self,
        wanted: Kind,
        what: &dyn Fn() -> String,
    ) -> Result<bool, ReportError> {
        let kind = self.lx.kind().map_err(|f| self.fail(f))?;
        if kind == wanted {
            return Ok(true);
        }
        let offset = self.lx.offset();
        self.structural(
            offset,
            format!("{} must be {}, not {}", what(), wanted.name(), kind.name()),
        )?;
        self.skip()?;
        Ok(false)
    }

    fn skip(&mut self) -> Result<(), ReportError> {
        self.lx.skip_value().map_err(|f| self.fail(f))
    }

    fn string_into<S: StrSink>(&mut self, sink: &mut S) -> Result<(), ReportError> {
        self.lx.string(sink).map_err(|f| self.fail(f))
    }

    /// The next known key of the object being read, as an index into `known` (at most
    /// 32 names): only its first occurrence, whose value is next; None at the object's
    /// closing `}` (consumed). Other keys are skipped with their values. A known key
    /// seen before in this object is a structural error named after `whose` (e.g.
    /// "tests[3]"): reported at the value's offset, the value skipped and `fields.ok`
    /// set to false. Errors: syntax and I/O errors of the lexer; a structural error
    /// once the document is known to be a report.
    fn next_field(
        &mut self,
        known: &[&str],
        whose: &dyn Fn() -> String,
        fields: &mut Fields,
    ) -> Result<Option<usize>, ReportError> {
        loop {
            match self
                .lx
                .next_key(known, &mut fields.first)
                .map_err(|f| self.fail(f))?
            {
                Key::End => return Ok(None),
                Key::Other => self.skip()?,
                Key::Known(i) => {
                    let bit = 1u32 << i;
                    if fields.seen & bit == 0 {
                        fields.seen |= bit;
                        return Ok(Some(i));
                    }
                    fields.ok = false;
                    let offset = self.lx.offset();
                    self.structural(
                        offset,
                        format!("{} has the key {:?} twice", whose(), known[i]),
                    )?;
                    self.skip()?;
                }
            }
        }
    }

    /// `expect_kind` for the value of a field (`what` names it); a mismatch breaks the
    /// object (`fields.ok`).
    fn field_kind(
        &mut self,
        wanted: Kind,
        what: &dyn Fn() -> String,
        fields: &mut Fields,
    ) -> Result<bool, ReportError> {
        let right = self.expect_kind(wanted, what)?;
        fields.ok &= right;
        Ok(right)
    }

    /// At the end of an object (which started at byte `start`): the first required key
    /// not present (name, present) is a structural error, unless the object is already
    /// broken.
    fn require(
        &mut self,
        start: u64,
        whose: &dyn Fn() -> String,
        fields: &mut Fields,
        present: &[(&str, bool)],
    ) -> Result<(), ReportError> {
        for &(name, has) in present {
            if fields.ok && !has {
                fields.ok = false;
                self.structural(start, format!("{} has no {name:?}", whose()))?;
            }
        }
        Ok(())
    }

    fn next_element(&mut self, first: &mut bool) -> Result<bool, ReportError> {
        self.lx.next_element(first).map_err(|f| self.fail(f))
    }

    fn emit(&mut self, item: Item) {
        if self.held_error.is_none() {
            (self.sink)(item);
        }
    }

    fn document(&mut self) -> Result<(), ReportError> {
        self.lx.skip_bom().map_err(|f| self.fail(f))?;
        match self.lx.peek().map_err(|f| self.fail(f))? {
            Some(b'{') => {}
            Some(b) => {
                let what = if b == b'[' {
                    "an array".to_string()
                } else {
                    format!("{:?}", char::from(b))
                };
                return Err(ReportError::new(
                    ErrorKind::NotAReport,
                    self.path,
                    format!(
                        "the JSON document starts with {what}, not an object; \
                         pass a pytest-json-report file (pytest --json-report)"
                    ),
                )
                .at(format!("byte {}", self.lx.offset())));
            }
            None => {
                return Err(ReportError::new(
                    ErrorKind::NotAReport,
                    self.path,
                    "the file is empty; expected a pytest-json-report file",
                ))
            }
        }
        self.lx.begin_object().map_err(|f| self.fail(f))?;
        let mut fields = Fields::new();
        const KEYS: [&str; 6] = [
            "exitcode",
            "summary",
            "root",
            "collectors",
            "tests",
            "duration",
        ];
        let whose = || "the report object".to_string();
        while let Some(key) = self.next_field(&KEYS, &whose, &mut fields)? {
            match key {
                0 => {
                    self.has_exitcode = true;
                    self.exitcode()?;
                }
                1 => {
                    self.has_summary = true;
                    if self.expect_kind(Kind::Object, &|| "summary".to_string())? {
                        self.skip()?;
                    }
                }
                2 => self.root_key()?,
                3 => self.collectors()?,
                4 => self.tests()?,
                _ => {
                    if self.expect_kind(Kind::Number, &|| "duration".to_string())? {
                        let n = self.lx.number().map_err(|f| self.fail(f))?;
                        self.session_us = Some(duration_us_from_f64(n.value));
                    }
                }
            }
            if self.is_report() {
                if let Some(err) = self.held_error.take() {
                    return Err(err);
                }
            }
        }
        if !self.is_report() {
            let missing: Vec<&str> = [
                ("exitcode", self.has_exitcode),
                ("summary", self.has_summary),
            ]
            .iter()
            .filter(|(_, has)| !has)
            .map(|(k, _)| *k)
            .collect();
            return Err(ReportError::new(
                ErrorKind::NotAReport,
                self.path,
                format!(
                    "a JSON object without the pytest-json-report key(s) {}; \
                     pass a report written by pytest --json-report",
                    missing.join(" and ")
                ),
            ));
        }
        if let Some(err) = self.held_error.take() {
            return Err(err);
        }
        self.lx.expect_end().map_err(|f| self.fail(f))
    }

    fn exitcode(&mut self) -> Result<(), ReportError> {
        if !self.expect_kind(Kind::Number, &|| "exitcode".to_string())? {
            return Ok(());
        }
        let offset = self.lx.offset();
        let n = self.lx.number().map_err(|f| self.fail(f))?;
        if !n.is_integer {
            self.structural(offset, "exitcode must be an integer".to_string())?;
        }
        Ok(())
    }

    fn root_key(&mut self) -> Result<(), ReportError> {
        if !self.expect_kind(Kind::String, &|| "root".to_string())? {
            return Ok(());
        }
        let mut root = Capped::new(ATTR_CAP);
        self.string_into(&mut root)?;
        // A root cut at the cap could strip a wrong prefix: then none is stripped.
        self.entries.root = if root.dropped == 0 {
            Some(root.text)
        } else {
            None
        };
        Ok(())
    }

    fn collectors(&mut self) -> Result<(), ReportError> {
        if !self.expect_kind(Kind::Array, &|| "collectors".to_string())? {
            return Ok(());
        }
        self.lx.begin_array().map_err(|f| self.fail(f))?;
        let mut first = true;
        let mut index = 0u64;
        while self.next_element(&mut first)? {
            self.collector(index)?;
            index += 1;
        }
        Ok(())
    }

    /// One element of `collectors`: a failed one becomes a `CollectionErrorRecord`.
    fn collector(&mut self, index: u64) -> Result<(), ReportError> {
        let whose = || format!("collectors[{index}]");
        if !self.expect_kind(Kind::Object, &whose)? {
            return Ok(());
        }
        let start = self.lx.offset();
        self.lx.begin_object().map_err(|f| self.fail(f))?;
        let mut fields = Fields::new();
        let mut node_id: Option<String> = None;
        let mut outcome: Option<bool> = None; // Some(failed?)
        let mut longrepr: Option<(String, u64)> = None;
        const KEYS: [&str; 3] = ["nodeid", "outcome", "longrepr"];
        while let Some(key) = self.next_field(&KEYS, &whose, &mut fields)? {
            let field = || format!("collectors[{index}].{}", KEYS[key]);
            if !self.field_kind(Kind::String, &field, &mut fields)? {
                continue;
            }
            match key {
                0 => {
                    let mut s = Capped::new(ATTR_CAP);
                    self.string_into(&mut s)?;
                    node_id = Some(s.text);
                }
                1 => {
                    let mut s = ShortStr::new();
                    self.string_into(&mut s)?;
                    outcome = Some(s.get() == Some("failed"));
                }
                _ => {
                    let mut text = HeadTail::for_text();
                    self.string_into(&mut text)?;
                    longrepr = Some(text.finish());
                }
            }
        }
        let present = [
            ("nodeid", node_id.is_some()),
            ("outcome", outcome.is_some()),
        ];
        self.require(start, &whose, &mut fields, &present)?;
        if fields.ok && outcome == Some(true) {
            let (text, text_bytes_omitted) = match longrepr {
                Some((t, n)) => (Some(t), n),
                None => (None, 0),
            };
            self.emit(Item::CollectionError(CollectionErrorRecord {
                path: node_id.unwrap_or_default(),
                exception: None,
                message: None,
                text,
                text_bytes_omitted,
            }));
        }
        Ok(())
    }

    fn tests(&mut self) -> Result<(), ReportError> {
        if !self.expect_kind(Kind::Array, &|| "tests".to_string())? {
            return Ok(());
        }
        self.lx.begin_array().map_err(|f| self.fail(f))?;
        let mut first = true;
        let mut index = 0u64;
        // One entry, filled in place for each element (an entry is ~700 bytes: moving it
        // through returns cost more than reading most tests).
        let mut entry = Entry::default();
        while self.next_element(&mut first)? {
            let start = self.lx.offset();
            if self.test_entry(index, &mut entry)? {
                let span = SourceSpan {
                    start,
                    end: self.lx.offset(),
                    in_pytest_suite: false,
                    file: 0,
                };
                let Parser {
                    entries,
                    sink,
                    held_error,
                    ..
                } = self;
                entries.push(&mut entry, false, &mut |mut record| {
                    if held_error.is_none() {
                        // The entry's own record (a rerun chain it ends has no texts).
                        if record.text.is_some() {
                            record.source = Some(span);
                        }
                        sink(Item::Test(record));
                    }
                });
            }
            index += 1;
        }
        // The retry rule never looks past the end of the array.
        if let Some(record) = self.entries.end() {
            self.emit(Item::Test(record));
        }
        Ok(())
    }

    /// One element of `tests`, read into `entry`; false if it broke the format (the error
    /// is reported or held).
    fn test_entry(&mut self, index: u64, entry: &mut Entry) -> Result<bool, ReportError> {
        let whose = || format!("tests[{index}]");
        if !self.expect_kind(Kind::Object, &whose)? {
            return Ok(false);
        }
        let start = self.lx.offset();
        self.lx.begin_object().map_err(|f| self.fail(f))?;
        let mut fields = Fields::new();
        entry.node_id = None;
        entry.outcome = None;
        entry.phases = [None, None, None];
        const KEYS: [&str; 5] = ["nodeid", "outcome", "setup", "call", "teardown"];
        while let Some(key) = self.next_field(&KEYS, &whose, &mut fields)? {
            let field = || format!("tests[{index}].{}", KEYS[key]);
            match key {
                0 => {
                    if self.field_kind(Kind::String, &field, &mut fields)? {
                        let mut s = Capped::new(ATTR_CAP);
                        self.string_into(&mut s)?;
                        entry.node_id = Some(s.text);
                    }
                }
                1 => {
                    if self.field_kind(Kind::String, &field, &mut fields)? {
                        let offset = self.lx.offset();
                        let mut s = ShortStr::new();
                        self.string_into(&mut s)?;
                        entry.outcome = s.get().and_then(entry_outcome);
                        if entry.outcome.is_none() {
                            fields.ok = false;
                            self.structural(
                                offset,
                                format!(
                                    "tests[{index}].outcome must be one of passed, failed, error, skipped, \
                                     xfailed, xpassed, rerun"
                                ),
                            )?;
                        }
                    }
                }
                _ => {
                    // Details are only kept for failures; the outcome usually comes first.
                    let want_details = !matches!(
                        entry.outcome,
                        Some(EntryOutcome::Rerun)
                            | Some(EntryOutcome::Final(
                                Outcome::Passed
                                    | Outcome::Skipped
                                    | Outcome::XFailed
                                    | Outcome::XPassed
                            ))
                    );
                    // in place; a broken phase breaks the entry, which is then dropped
                    let data = entry.phases[key - 2].insert(PhaseData::default());
                    if !self.phase(&field, want_details, data)? {
                        fields.ok = false;
                    }
                }
            }
        }
        let present = [
            ("nodeid", entry.node_id.is_some()),
            ("outcome", entry.outcome.is_some()),
        ];
        self.require(start, &whose, &mut fields, &present)?;
        Ok(fields.ok)
    }

    /// A phase object, read into `data` (empty); false if it broke the format.
    fn phase(
        &mut self,
        whose: &dyn Fn() -> String,
        want_details: bool,
        data: &mut PhaseData,
    ) -> Result<bool, ReportError> {
        if !self.expect_kind(Kind::Object, whose)? {
            return Ok(false);
        }
        let start = self.lx.offset();
        self.lx.begin_object().map_err(|f| self.fail(f))?;
        let mut fields = Fields::new();
        let (mut has_duration, mut has_outcome) = (false, false);
        const KEYS: [&str; 7] = [
            "duration", "outcome", "longrepr", "crash", "stdout", "stderr", "log",
        ];
        while let Some(key) = self.next_field(&KEYS, whose, &mut fields)? {
            let field = || format!("{}.{}", whose(), KEYS[key]);
            if key == 6 {
                // Lenient: a `log` of another shape is ignored (it never decides a test).
                if want_details && self.lx.kind().map_err(|f| self.fail(f))? == Kind::Array {
                    data.log = Some(self.log_records()?);
                } else {
                    self.skip()?;
                }
                continue;
            }
            let wanted = match key {
                0 => Kind::Number,
                3 => Kind::Object,
                _ => Kind::String,
            };
            if !self.field_kind(wanted, &field, &mut fields)? {
                continue;
            }
            match key {
                0 => {
                    let n = self.lx.number().map_err(|f| self.fail(f))?;
                    data.duration_us = duration_us_from_f64(n.value);
                    has_duration = true;
                }
                1 => {
                    let mut s = ShortStr::new();
                    self.string_into(&mut s)?;
                    data.failed = s.get() == Some("failed");
                    has_outcome = true;
                }
                2 => {
                    if want_details {
                        let mut text = HeadTail::for_text();
                        self.string_into(&mut text)?;
                        data.longrepr = Some(text.finish());
                    } else {
                        self.string_into(&mut Discard)?;
                    }
                }
                3 => match self.crash(&field, want_details)? {
                    Some(crash) => data.crash = Some(crash),
                    None => fields.ok = false,
                },
                _ => {
                    let kept = if want_details {
                        let mut out = HeadTail::for_output(self.max_output_bytes);
                        self.string_into(&mut out)?;
                        Some(out.finish())
                    } else {
                        self.string_into(&mut Discard)?;
                        None
                    };
                    if key == 4 {
                        data.stdout = kept;
                    } else {
                        data.stderr = kept;
                    }
                }
            }
        }
        let present = [("duration", has_duration), ("outcome", has_outcome)];
        self.require(start, whose, &mut fields, &present)?;
        Ok(fields.ok)
    }

    /// A phase's `log` array (at its `[`): each record object with string `levelname`,
    /// `name`, `filename`, `msg` (each capped at `ATTR_CAP`) and integer `lineno` becomes
    /// one line as pytest prints it; other elements give nothing. (kept tail, bytes
    /// omitted) of the lines within `max_log_bytes`.
    fn log_records(&mut self) -> Result<(String, u64), ReportError> {
        const KEYS: [&str; 5] = ["levelname", "name", "filename", "lineno", "msg"];
        self.lx.begin_array().map_err(|f| self.fail(f))?;
        let mut out = HeadTail::for_output(self.max_log_bytes);
        let mut first = true;
        while self.next_element(&mut first)? {
            if self.lx.kind().map_err(|f| self.fail(f))? != Kind::Object {
                self.skip()?;
                continue;
            }
            self.lx.begin_object().map_err(|f| self.fail(f))?;
            let mut first_key = true;
            let mut seen = 0u32;
            let mut texts: [Option<String>; 5] = Default::default();
            let mut lineno: Option<i64> = None;
            loop {
                let i = match self
                    .lx
                    .next_key(&KEYS, &mut first_key)
                    .map_err(|f| self.fail(f))?
                {
                    Key::End => break,
                    Key::Known(i) if seen & (1 << i) == 0 => i,
                    _ => {
                        self.skip()?;
                        continue;
                    }
                };
                seen |= 1 << i;
                let kind = self.lx.kind().map_err(|f| self.fail(f))?;
                if i == 3 && kind == Kind::Number {
                    let n = self.lx.number().map_err(|f| self.fail(f))?;
                    lineno = n.is_integer.then_some(n.int_value);
                } else if i != 3 && kind == Kind::String {
                    let mut s = Capped::new(ATTR_CAP);
                    self.string_into(&mut s)?;
                    texts[i] = Some(s.text);
                } else {
                    self.skip()?;
                }
            }
            if let ([Some(level), Some(name), Some(file), None, Some(msg)], Some(line)) =
                (&texts, lineno)
            {
                out.push(&format!("{level:<8} {name}:{file}:{line} {msg}\n"));
            }
        }
        Ok(out.finish())
    }

    /// A `crash` object (`path`, `lineno`, `message`, each optional); None if it broke
    /// the format.
    fn crash(
        &mut self,
        whose: &dyn Fn() -> String,
        want_details: bool,
    ) -> Result<Option<Crash>, ReportError> {
        self.lx.begin_object().map_err(|f| self.fail(f))?;
        let mut fields = Fields::new();
        let mut crash = Crash::default();
        const KEYS: [&str; 3] = ["path", "lineno", "message"];
        while let Some(key) = self.next_field(&KEYS, whose, &mut fields)? {
            let field = || format!("{}.{}", whose(), KEYS[key]);
            let wanted = if key == 1 { Kind::Number } else { Kind::String };
            if !self.field_kind(wanted, &field, &mut fields)? {
                continue;
            }
            match key {
                0 => {
                    let mut s = Capped::new(ATTR_CAP);
                    if want_details {
                        self.string_into(&mut s)?;
                        crash.path = Some(s.text);
                    } else {
                        self.string_into(&mut Discard)?;
                    }
                }
                1 => {
                    let offset = self.lx.offset();
                    let n = self.lx.number().map_err(|f| self.fail(f))?;
                    if !n.is_integer {
                        fields.ok = false;
                        self.structural(offset, format!("{} must be an integer", field()))?;
                    } else if n.int_value >= 0 {
                        crash.line = Some(n.int_value as u64);
                    }
                }
                _ => {
                    if want_details {
                        let mut s = Capped::new(ATTR_CAP);
                        self.string_into(&mut s)?;
                        crash.message = Some(s.text);
                        crash.message_dropped = s.dropped;
                    } else {
                        self.string_into(&mut Discard)?;
                    }
                }
            }
        }
        Ok(if fields.ok { Some(crash) } else { None })
    }
}

/// Test entries (node id, outcome, phase data) -> `TestRecord`s: the retry rule, the
/// phase, the details of the first failed phase, the outputs joined in phase order
/// (docs/ENGINE.md, *pytest-json-report*). Shared by the pytest-json-report parser and
/// the report-log reader (`reportlog.rs`), which builds the same phase data. Mirrored by
/// `TestEntries` in `pure/pytest_json/__init__.py`.
pub(crate) struct TestEntries {
    max_output_bytes: usize,
    max_log_bytes: usize,
    /// The report's root directory, removed from crash paths (None: none).
    pub(crate) root: Option<String>,
    chain: Option<RerunChain>,
}

impl TestEntries {
    pub(crate) fn new(max_output_bytes: usize, max_log_bytes: usize) -> Self {
        TestEntries {
            max_output_bytes,
            max_log_bytes,
            root: None,
            chain: None,
        }
    }

    /// The end of the entries: a pending `rerun` chain is a test that passed.
    pub(crate) fn end(&mut self) -> Option<TestRecord> {
        self.chain.take().map(passed_after_reruns)
    }

    /// Turn a test entry into records (a rerun chain it ends, then its own), applying
    /// the retry rule to `rerun` entries. `passed_with_failed_subtests` is set on the
    /// record (the report-log reader's unittest parents, docs/ENGINE.md, *Subtests*).
    /// The records go to `emit`, in order; the entry is left emptied (taken from, not
    /// moved: it is reused for the next one).
    pub(crate) fn push(
        &mut self,
        entry: &mut Entry,
        passed_with_failed_subtests: bool,
        emit: &mut dyn FnMut(TestRecord),
    ) {
        let node_id = entry.node_id.take().unwrap_or_default();
        let duration_us = entry
            .phases
            .iter()
            .flatten()
            .fold(0u64, |acc, p| acc.saturating_add(p.duration_us));
        // An earlier rerun chain either continues with this entry or ends before it.
        let earlier = match self.chain.take() {
            Some(chain) if chain.node_id == node_id => Some(chain),
            Some(chain) => {
                emit(passed_after_reruns(chain));
                None
            }
            None => None,
        };
        let outcome = match entry.outcome {
            Some(EntryOutcome::Final(o)) => o,
            _ => {
                let previous = earlier.map_or(0, |c| c.duration_us);
                self.chain = Some(RerunChain {
                    node_id,
                    duration_us: previous.saturating_add(duration_us),
                });
                return;
            }
        };
        let failed_phase = (0..3).find(|&i| entry.phases[i].as_ref().is_some_and(|p| p.failed));
        let mut record = TestRecord {
            node_id,
            outcome: Some(outcome),
            phase: failed_phase.map(|i| PHASES[i].1),
            duration_us,
            passed_with_failed_subtests,
            ..TestRecord::default()
        };
        if let Some(chain) = earlier {
            // Earlier attempts were reruns (non-passing): flaky if this one passed.
            record.duration_us = record.duration_us.saturating_add(chain.duration_us);
            record.flaky = outcome == Outcome::Passed;
        }
        if outcome.is_problem() {
            let phases = &mut entry.phases;
            if let Some(i) = failed_phase {
                let p = phases[i].as_mut().expect("the failed phase is present");
                // moved, not copied: the entry is done with
                if let Some((text, omitted)) = p.longrepr.take() {
                    record.text = Some(text);
                    record.text_bytes_omitted += omitted;
                    record.frames = p.frames.take();
                }
                if let Some(crash) = &mut p.crash {
                    record.message = crash.message.take();
                    record.text_bytes_omitted += crash.message_dropped;
                    record.path = crash
                        .path
                        .as_deref()
                        .map(|p| strip_root(p, self.root.as_deref()).to_string());
                    record.line = crash.line;
                }
            }
            let (stdout, out_omitted) = join_output(
                phases
                    .iter()
                    .map(|p| p.as_ref().and_then(|p| p.stdout.as_ref())),
                self.max_output_bytes,
            );
            let (stderr, err_omitted) = join_output(
                phases
                    .iter()
                    .map(|p| p.as_ref().and_then(|p| p.stderr.as_ref())),
                self.max_output_bytes,
            );
            let (log, log_omitted) = join_output(
                phases
                    .iter()
                    .map(|p| p.as_ref().and_then(|p| p.log.as_ref())),
                self.max_log_bytes,
            );
            record.stdout = stdout;
            record.stderr = stderr;
            record.log = log;
            record.output_bytes_omitted = out_omitted + err_omitted + log_omitted;
        }
        emit(record);
    }
}

/// A `rerun` chain not followed by an entry of the same node id: pytest-json-report keeps
/// one entry per node id and leaves `rerun` when the last attempt passed.
fn passed_after_reruns(chain: RerunChain) -> TestRecord {
    TestRecord {
        node_id: chain.node_id,
        outcome: Some(Outcome::Passed),
        duration_us: chain.duration_us,
        flaky: true,
        ..TestRecord::default()
    }
}

/// `path` without the report's root directory prefix (`root` + `/` or `\`).
pub(crate) fn strip_root<'p>(path: &'p str, root: Option<&str>) -> &'p str {
    let Some(root) = root.filter(|r| !r.is_empty()) else {
        return path;
    };
    let Some(rest) = path.strip_prefix(root) else {
        return path;
    };
    if root.ends_with(['/', '\\']) {
        return rest;
    }
    rest.strip_prefix(['/', '\\']).unwrap_or(path)
}

/// The phases' captured output in phase order, tail-capped as one text:
/// (None if no phase had any, else the kept tail; bytes omitted).
fn join_output<'x>(
    parts: impl Iterator<Item = Option<&'x (String, u64)>>,
    max_output_bytes: usize,
) -> (Option<String>, u64) {
    let mut joined = HeadTail::for_output(max_output_bytes);
    let mut omitted_before = 0u64;
    let mut any = false;
    for (kept, omitted) in parts.flatten() {
        any = true;
        // Each part already lost its head beyond the cap; the tail of the whole is the
        // tail of the kept parts, so only the counts need adding up.
        joined.push(kept);
        omitted_before += omitted;
    }
    if !any {
        return (None, 0);
    }
    let (text, omitted) = joined.finish();
    (Some(text), omitted + omitted_before)
}

#[cfg(test)]
mod tests;
