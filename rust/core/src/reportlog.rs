//! Streaming pytest report-log reader (docs/ENGINE.md, *pytest report-log*).
//!
//! A report log (pytest-reportlog's `--report-log=FILE`, and the server plugin's dialect
//! of it) is JSON lines: one object per line, each the dict pytest's
//! `pytest_report_to_serializable` gives for a report, told apart by `$report_type`.
//! The file is read line by line (serde_json per line); only the tests still waiting
//! for their teardown report are held, each capped as docs/ENGINE.md (*Text capping*)
//! says. A test's reports become the phase data of a pytest-json-report entry and go
//! through the same `TestEntries`, so a run answers the same from either file. Mirrored
//! by `pure/reportlog.py`; the parity tests check both on the same inputs.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read};

use indexmap::IndexMap;
use serde_json::{Map, Value};

use crate::budgets::Budgets;
use crate::cut::{chomp, is_chain_line, syntax_position};
use crate::error::{ErrorKind, ReportError};
use crate::project::ProjectCode;
use crate::pytest_json::{strip_root, Crash, Entry, EntryOutcome, PhaseData, TestEntries};
use crate::record::{
    CollectionErrorRecord, FrameKind, Item, Outcome, Phase, ReprFrame, ReprFrames, TestRecord,
};
use crate::text::{
    duration_us_from_f64, floor_char_boundary, is_py_whitespace, py_strip, HeadTail, ATTR_CAP,
};
use crate::warnings::WarningGroups;

/// What a report log says about its session beyond the tests' records (docs/ENGINE.md,
/// *Session*): the server's plugin writes it, pytest-reportlog some of it.
#[derive(Clone, Debug, Default)]
pub struct SessionFacts {
    /// SessionFinish `exitstatus` (None: the session never finished, or no status).
    pub exit_status: Option<i64>,
    /// The first CollectionFinish `collected`.
    pub collected: Option<u64>,
    /// The sum of the Deselected `count`s.
    pub deselected: u64,
    /// Tests started (TestStart) whose teardown report never came: node id -> `start`
    /// (unix seconds), in start order.
    pub running: IndexMap<String, f64>,
    /// SessionStart's `stack_dump_armed` is `true`.
    pub stack_dump_armed: bool,
    /// The WarningMessage records, grouped.
    pub warnings: WarningGroups,
}

impl SessionFacts {
    /// `other`'s facts after these (a later file of the same summary): the highest exit
    /// status, counts added up, running tests and warnings after these.
    pub fn merge(&mut self, other: SessionFacts, budgets: &Budgets) {
        self.exit_status = match (self.exit_status, other.exit_status) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.collected = match (self.collected, other.collected) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
        self.deselected = self.deselected.saturating_add(other.deselected);
        for (node_id, start) in other.running {
            self.running.insert(node_id, start);
        }
        self.stack_dump_armed |= other.stack_dump_armed;
        self.warnings.merge(other.warnings, budgets);
    }
}

/// What a caller asks of the collected node ids of report logs (the server plugin's
/// `CollectedIds` lines, written by a `--collect-only` run; docs/ENGINE.md, *Session*):
/// the page of ids `[offset, offset + limit)`, counted over the files in input order, and
/// at most `max_files` files listed with their counts. Without it no id is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CollectedPage {
    /// Ids before the page (0: the page starts with the first id).
    pub offset: u64,
    /// Ids in the page at most.
    pub limit: u64,
    /// Files listed with their test counts, the first ones in collection order.
    pub max_files: usize,
}

/// The collected node ids read so far for a [`CollectedPage`] (docs/ENGINE.md,
/// *Session*): the reader of each file adds its ids after the earlier files' ids, so
/// that the page is exact over the files in input order. Memory is the page's ids and
/// the files' paths, never every id: `total` and the counts are numbers.
#[derive(Clone, Debug)]
pub struct CollectedFacts {
    request: CollectedPage,
    /// Ids read (each string of a `nodeids` array, duplicates included).
    pub total: u64,
    /// Ids per file (a node id's path: what comes before its first `::`), the first
    /// `max_files` files in the order their first id came.
    pub files: IndexMap<String, u64>,
    /// The distinct files beyond `max_files` (counted in the summary, not listed).
    other_files: HashSet<String>,
    /// The ids of the page, in order, whole (an id cut short could not be run).
    pub page: Vec<String>,
}

impl CollectedFacts {
    /// Nothing read yet, for `request`.
    pub fn new(request: CollectedPage) -> Self {
        CollectedFacts {
            request,
            total: 0,
            files: IndexMap::new(),
            other_files: HashSet::new(),
            page: Vec::new(),
        }
    }

    /// The distinct files read that are not listed in `files`.
    pub fn files_omitted(&self) -> u64 {
        self.other_files.len() as u64
    }

    /// One more collected id: in the page when its place is, counted for its file.
    fn add(&mut self, node_id: &str) {
        let CollectedPage {
            offset,
            limit,
            max_files,
        } = self.request;
        // `total - offset < limit`, not `total < offset + limit`: no overflow near u64::MAX
        if self.total >= offset && self.total - offset < limit {
            self.page.push(node_id.to_owned());
        }
        self.total = self.total.saturating_add(1);
        let path = node_id.split_once("::").map_or(node_id, |(path, _)| path);
        if let Some(count) = self.files.get_mut(path) {
            *count += 1;
        } else if self.files.len() < max_files {
            self.files.insert(path.to_owned(), 1);
        } else if !self.other_files.contains(path) {
            self.other_files.insert(path.to_owned());
        }
    }
}

/// What a report log says about the whole run, beyond its records.
#[derive(Clone, Debug, Default)]
pub struct ReportlogEnd {
    /// The file ended in the middle of a line (no trailing newline, not valid JSON: a
    /// killed run); the complete lines were summarised.
    pub cut_last_line: bool,
    /// pytest's session time in integer microseconds, when the log has it
    /// (SessionFinish `duration`, else the last report `stop` minus the first `start`).
    pub session_duration_us: Option<u64>,
    /// What it says of its session (report logs only).
    pub session: Option<SessionFacts>,
}

/// The width of pytest's terminal writer when it writes to a file (its fallback).
const WIDTH: i64 = 80;
/// pytest's fail marker at the start of a traceback entry's failure lines.
const FAIL_MARKER: &str = ">   ";
const PHASE_NAMES: [&str; 3] = ["setup", "call", "teardown"];
/// The largest count of bytes a report's `text_bytes_cut`/`sections_bytes_cut` may give
/// (the plugin's per-report cut, docs/ENGINE.md *pytest report-log*): far above any
/// file's size, and low enough that adding a test's counts up never overflows 64 bits.
const CUT_BYTES_MAX: u64 = 1 << 53;
const OUTPUT_KINDS: [&str; 3] = ["stdout", "stderr", "log"];

/// Python's `str.splitlines()`.
fn py_splitlines(s: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let boundary = matches!(
            c,
            '\n' | '\r'
                | '\u{0b}'
                | '\u{0c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if !boundary {
            continue;
        }
        lines.push(&s[start..i]);
        let mut end = i + c.len_utf8();
        if c == '\r' {
            if let Some(&(j, '\n')) = chars.peek() {
                chars.next();
                end = j + 1;
            }
        }
        start = end;
    }
    if start < s.len() {
        lines.push(&s[start..]);
    }
    lines
}

/// A wrong type or value on a field the reader uses (the line number is added later).
struct Malformed(String);

type Res<T> = Result<T, Malformed>;

fn bad<T>(what: impl Into<String>) -> Res<T> {
    Err(Malformed(what.into()))
}

/// A test waiting for its teardown report.
#[derive(Default)]
struct PendingTest {
    /// The last non-passing status of its reports (None: none).
    category: Option<EntryOutcome>,
    phases: [Option<PhaseData>; 3],
    /// [kind][phase] -> (kept tail, bytes omitted), from the first report carrying it.
    outputs: [[Option<(String, u64)>; 3]; 3],
    failed_subtests: u64,
    has_call: bool,
    setup_not_passed: bool,
}

struct Reader<'a> {
    path: &'a str,
    sink: &'a mut dyn FnMut(Item),
    budgets: &'a Budgets,
    project: Option<&'a ProjectCode>,
    session: SessionFacts,
    /// Where the `CollectedIds` lines' ids go (None: no page was asked for).
    collected: Option<&'a mut CollectedFacts>,
    max_output_bytes: usize,
    max_log_bytes: usize,
    entries: TestEntries,
    pending: IndexMap<String, PendingTest>,
    seen_report_type: bool,
    finish_duration_us: Option<u64>,
    first_start: Option<f64>,
    last_stop: Option<f64>,
}

/// Read a pytest report log from `reader` (positioned at byte 0), handing each record to
/// `sink` in report order (a test at its teardown report); the end says what the log
/// says of its session (`SessionFacts`, its warnings grouped for `project`). With
/// `collected`, the ids of its `CollectedIds` lines are added to it, after those it
/// holds (the earlier files' ids).
///
/// Errors (`ReportError`): `malformed` (position `line N`) for a line that is not a JSON
/// object or a wrong type on a field the reader uses; `not_a_report` when no line has a
/// `$report_type`; `unreadable` when reading fails.
pub fn parse_reportlog<R: Read>(
    reader: R,
    path: &str,
    budgets: &Budgets,
    project: Option<&ProjectCode>,
    collected: Option<&mut CollectedFacts>,
    sink: &mut dyn FnMut(Item),
) -> Result<ReportlogEnd, ReportError> {
    let mut input = BufReader::with_capacity(1 << 16, reader);
    let mut r = Reader {
        path,
        sink,
        budgets,
        project,
        session: SessionFacts::default(),
        collected,
        max_output_bytes: budgets.max_output_bytes,
        max_log_bytes: budgets.max_log_bytes,
        entries: TestEntries::new(budgets.max_output_bytes, budgets.max_log_bytes),
        pending: IndexMap::new(),
        seen_report_type: false,
        finish_duration_us: None,
        first_start: None,
        last_stop: None,
    };
    let mut end = ReportlogEnd::default();
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    loop {
        buf.clear();
        let n = input
            .read_until(b'\n', &mut buf)
            .map_err(|e| ReportError::from_io(path, &e))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let mut raw: &[u8] = &buf;
        if line_no == 1 {
            raw = raw.strip_prefix(b"\xef\xbb\xbf").unwrap_or(raw);
        }
        if raw
            .iter()
            .all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        {
            continue;
        }
        let complete = raw.ends_with(b"\n");
        let value: Value = match serde_json::from_slice(raw) {
            Ok(v) => v,
            Err(e) => {
                if !complete {
                    end.cut_last_line = true;
                    break;
                }
                return Err(r.malformed(line_no, &format!("not valid JSON ({e})")));
            }
        };
        let Value::Object(obj) = value else {
            return Err(r.malformed(line_no, "a JSON value that is not an object"));
        };
        if let Err(Malformed(what)) = r.line(&obj) {
            return Err(r.malformed(line_no, &what));
        }
    }
    if !r.seen_report_type {
        return Err(ReportError::new(
            ErrorKind::NotAReport,
            path,
            "JSON lines without a \"$report_type\" key; pass a report log written by pytest --report-log",
        ));
    }
    r.finish();
    end.session_duration_us = r.session_duration_us();
    end.session = Some(std::mem::take(&mut r.session));
    Ok(end)
}

impl Reader<'_> {
    fn malformed(&self, line_no: u64, what: &str) -> ReportError {
        ReportError::new(
            ErrorKind::Malformed,
            self.path,
            format!(
                "line {line_no}: {what}; this does not follow pytest's report-log format, \
                 regenerate it (pytest --report-log)"
            ),
        )
        .at(format!("line {line_no}"))
    }

    fn emit(&mut self, record: TestRecord) {
        (self.sink)(Item::Test(record));
    }

    fn line(&mut self, obj: &Map<String, Value>) -> Res<()> {
        let kind = match obj.get("$report_type").or_else(|| obj.get("_report_type")) {
            Some(k) => k,
            None => return Ok(()),
        };
        let Value::String(kind) = kind else {
            return bad("$report_type must be a string");
        };
        self.seen_report_type = true;
        match kind.as_str() {
            "TestReport" => self.test_report(obj),
            "SubTestReport" => self.subtest_report(obj),
            "CollectReport" => self.collect_report(obj),
            "SessionStart" => {
                self.session.stack_dump_armed =
                    obj.get("stack_dump_armed") == Some(&Value::Bool(true));
                match obj.get("root") {
                    None | Some(Value::Null) => {}
                    Some(Value::String(root)) => {
                        // A root beyond the cap could strip a wrong prefix: then none is.
                        self.entries.root = (root.len() <= ATTR_CAP).then(|| root.clone());
                    }
                    Some(_) => return bad("SessionStart root must be a string"),
                }
                Ok(())
            }
            "SessionFinish" => {
                if let Some(d) = number(obj, "duration", "SessionFinish")? {
                    self.finish_duration_us = Some(duration_us_from_f64(d));
                }
                if let Some(status) = integer(obj, "exitstatus", "SessionFinish")? {
                    self.session.exit_status = Some(status);
                }
                Ok(())
            }
            "TestStart" => {
                let node_id = required_string(obj, "nodeid", "TestStart")?;
                let Some(start) = number(obj, "start", "TestStart")? else {
                    return bad("TestStart has no number \"start\"");
                };
                let node_id = head(node_id, ATTR_CAP).to_owned();
                self.session.running.insert(node_id, start);
                Ok(())
            }
            "Deselected" => {
                match integer(obj, "count", "Deselected")? {
                    Some(n) if n >= 0 => {
                        self.session.deselected =
                            self.session.deselected.saturating_add(n.unsigned_abs());
                    }
                    _ => return bad("Deselected count must be an integer >= 0"),
                }
                Ok(())
            }
            "CollectionFinish" => {
                match integer(obj, "collected", "CollectionFinish")? {
                    Some(n) if n >= 0 => {
                        self.session.collected.get_or_insert(n.unsigned_abs());
                    }
                    _ => return bad("CollectionFinish collected must be an integer >= 0"),
                }
                Ok(())
            }
            "CollectedIds" => {
                let Some(Value::Array(node_ids)) = obj.get("nodeids") else {
                    return bad("CollectedIds nodeids must be an array");
                };
                if let Some(collected) = self.collected.as_deref_mut() {
                    // a value that is not a string is no node id: skipped
                    for node_id in node_ids {
                        if let Value::String(node_id) = node_id {
                            collected.add(node_id);
                        }
                    }
                }
                Ok(())
            }
            "WarningMessage" => self.warning(obj),
            _ => Ok(()),
        }
    }

    /// A WarningMessage (pytest-reportlog's, the plugin's): `category` a string or null
    /// (a `Warning`), `message` a string, `filename` and `lineno` a string and an
    /// integer or null (then no location).
    fn warning(&mut self, obj: &Map<String, Value>) -> Res<()> {
        let category = match obj.get("category") {
            None | Some(Value::Null) => "Warning",
            Some(Value::String(s)) => s.as_str(),
            Some(_) => return bad("WarningMessage category must be a string"),
        };
        let message = required_string(obj, "message", "WarningMessage")?;
        let filename = match obj.get("filename") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(_) => return bad("WarningMessage filename must be a string"),
        };
        let lineno = integer(obj, "lineno", "WarningMessage")?;
        let location = filename.zip(lineno);
        self.session
            .warnings
            .add(category, message, location, self.budgets, self.project);
        Ok(())
    }

    fn test_report(&mut self, obj: &Map<String, Value>) -> Res<()> {
        let node_id = required_string(obj, "nodeid", "TestReport")?;
        let when = required_string(obj, "when", "TestReport")?;
        let outcome = required_string(obj, "outcome", "TestReport")?;
        let Some(index) = PHASE_NAMES.iter().position(|p| *p == when) else {
            return bad("TestReport when must be setup, call or teardown");
        };
        if !matches!(outcome, "passed" | "failed" | "skipped" | "rerun") {
            return bad("TestReport outcome must be passed, failed, skipped or rerun");
        }
        let duration = number(obj, "duration", "TestReport")?;
        self.times(obj)?;
        let node_id = head(node_id, ATTR_CAP);
        let category = status(when, outcome, obj.contains_key("wasxfail"));
        let mut phase = PhaseData {
            duration_us: duration.map_or(0, duration_us_from_f64),
            failed: outcome == "failed",
            ..PhaseData::default()
        };
        let text_cut = cut_bytes(obj.get("text_bytes_cut"), "TestReport text_bytes_cut")?;
        let sections_cut = sections_cut(obj)?;
        if outcome == "failed" {
            let Longrepr {
                text,
                crash,
                frames,
            } = longrepr(obj.get("longrepr"), true)?;
            if let Some(text) = text {
                let text = if matches!(obj.get("longrepr"), Some(Value::String(_))) {
                    relative_locations(&text, node_id)
                } else {
                    text
                };
                let (kept, omitted) = capped_text(&text);
                // a cut text is not the whole rendering the frames belong to
                phase.frames = frames.filter(|_| omitted == 0);
                phase.longrepr = Some((kept, omitted + text_cut));
            }
            phase.crash = crash;
        }
        let sections = sections(obj)?;
        let test = self.pending.entry(node_id.to_owned()).or_default();
        if category.is_some() {
            test.category = category;
        }
        test.phases[index] = Some(phase);
        if index == 1 {
            test.has_call = true;
        } else if index == 0 && outcome != "passed" {
            test.setup_not_passed = true;
        }
        for (kind, phase_index, name, content) in sections {
            let slot = &mut test.outputs[kind][phase_index];
            if slot.is_some() || content.is_empty() {
                continue;
            }
            let cut = sections_cut.get(name).copied().unwrap_or(0);
            let (kept, omitted) = if kind == 2 {
                // pytest strips the log section; pytest-json-report ends every record
                // with a newline, the last one too
                let mut ht = HeadTail::for_output(self.max_log_bytes);
                ht.push(content);
                if !content.ends_with('\n') {
                    ht.push("\n");
                }
                ht.finish()
            } else {
                let mut ht = HeadTail::for_output(self.max_output_bytes);
                ht.push(content);
                ht.finish()
            };
            *slot = Some((kept, omitted + cut));
        }
        if index == 2 {
            self.session.running.shift_remove(node_id);
            let test = self
                .pending
                .shift_remove(node_id)
                .expect("the test was just inserted");
            self.complete(node_id.to_owned(), test);
        }
        Ok(())
    }

    /// A test whose reports are all in: one entry for `TestEntries`.
    fn complete(&mut self, node_id: String, test: PendingTest) {
        let mut phases = test.phases;
        for (kind, outputs) in test.outputs.into_iter().enumerate() {
            for (index, value) in outputs.into_iter().enumerate() {
                let Some(value) = value else { continue };
                // a phase known only from a later report's sections gets an empty one
                let phase = phases[index].get_or_insert_with(PhaseData::default);
                match kind {
                    0 => phase.stdout = Some(value),
                    1 => phase.stderr = Some(value),
                    _ => phase.log = Some(value),
                }
            }
        }
        let mut passed_with_failed_subtests = false;
        let outcome = match test.category {
            Some(o) => o,
            None if test.failed_subtests > 0 => {
                // pytest counted it passed although subtests failed (unittest's subTest):
                // listed failed with pytest's wording (docs/ENGINE.md, *Subtests*)
                let n = test.failed_subtests;
                let call = phases[1].get_or_insert_with(PhaseData::default);
                call.failed = true;
                call.longrepr = Some((String::new(), 0));
                call.crash = Some(Crash {
                    message: Some(format!(
                        "contains {n} failed subtest{}",
                        if n > 1 { "s" } else { "" }
                    )),
                    ..Crash::default()
                });
                passed_with_failed_subtests = true;
                EntryOutcome::Final(Outcome::Failed)
            }
            None => EntryOutcome::Final(Outcome::Passed),
        };
        let mut entry = Entry {
            node_id: Some(node_id),
            outcome: Some(outcome),
            phases,
        };
        let sink = &mut self.sink;
        self.entries
            .push(&mut entry, passed_with_failed_subtests, &mut |record| {
                sink(Item::Test(record))
            });
    }

    fn subtest_report(&mut self, obj: &Map<String, Value>) -> Res<()> {
        let node_id = required_string(obj, "nodeid", "SubTestReport")?;
        let outcome = required_string(obj, "outcome", "SubTestReport")?;
        if !matches!(outcome, "passed" | "failed" | "skipped" | "rerun") {
            return bad("SubTestReport outcome must be passed, failed, skipped or rerun");
        }
        let label = subtest_label(obj.get("_subtest.context"))?;
        self.times(obj)?;
        let node_id = head(node_id, ATTR_CAP).to_owned();
        if outcome == "passed" && !obj.contains_key("wasxfail") {
            self.emit(TestRecord {
                node_id,
                outcome: Some(Outcome::Passed),
                subtest: Some(label),
                ..TestRecord::default()
            });
        } else if outcome == "failed" {
            let text_cut = cut_bytes(obj.get("text_bytes_cut"), "SubTestReport text_bytes_cut")?;
            let Longrepr {
                text,
                crash,
                frames,
            } = longrepr(obj.get("longrepr"), true)?;
            self.pending
                .entry(node_id.clone())
                .or_default()
                .failed_subtests += 1;
            let mut record = TestRecord {
                node_id,
                outcome: Some(Outcome::Failed),
                phase: Some(Phase::Call),
                subtest: Some(label),
                ..TestRecord::default()
            };
            if let Some(text) = text {
                let (kept, omitted) = capped_text(&text);
                record.text = Some(kept);
                record.text_bytes_omitted = omitted + text_cut;
                record.frames = frames.filter(|_| omitted == 0);
            }
            if let Some(crash) = crash {
                record.message = crash.message;
                record.text_bytes_omitted += crash.message_dropped;
                record.path = crash
                    .path
                    .as_deref()
                    .map(|p| strip_root(p, self.entries.root.as_deref()).to_string());
                record.line = crash.line;
            }
            self.emit(record);
        }
        Ok(())
    }

    fn collect_report(&mut self, obj: &Map<String, Value>) -> Res<()> {
        let node_id = required_string(obj, "nodeid", "CollectReport")?;
        let outcome = required_string(obj, "outcome", "CollectReport")?;
        if outcome != "failed" {
            return Ok(());
        }
        let text_cut = cut_bytes(obj.get("text_bytes_cut"), "CollectReport text_bytes_cut")?;
        let text = longrepr(obj.get("longrepr"), false)?.text;
        let mut record = CollectionErrorRecord {
            path: head(node_id, ATTR_CAP).to_owned(),
            ..CollectionErrorRecord::default()
        };
        if let Some(text) = text {
            let (kept, omitted) = capped_text(&text);
            record.text = Some(kept);
            record.text_bytes_omitted = omitted + text_cut;
        }
        (self.sink)(Item::CollectionError(record));
        Ok(())
    }

    /// The first `start` and last `stop` of the reports.
    fn times(&mut self, obj: &Map<String, Value>) -> Res<()> {
        let start = number(obj, "start", "report")?;
        let stop = number(obj, "stop", "report")?;
        if self.first_start.is_none() {
            self.first_start = start;
        }
        if stop.is_some() {
            self.last_stop = stop;
        }
        Ok(())
    }

    /// The end of the file: tests whose teardown never came (a killed run) are emitted
    /// when they ran (a call report, or a setup that did not pass).
    fn finish(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        for (node_id, test) in pending {
            if test.has_call || test.setup_not_passed {
                self.complete(node_id, test);
            }
        }
        if let Some(record) = self.entries.end() {
            self.emit(record);
        }
    }

    fn session_duration_us(&self) -> Option<u64> {
        if self.finish_duration_us.is_some() {
            return self.finish_duration_us;
        }
        match (self.first_start, self.last_stop) {
            (Some(start), Some(stop)) => Some(duration_us_from_f64(stop - start)),
            _ => None,
        }
    }
}

// -- fields --------------------------------------------------------------------------

/// The first `cap` bytes of `s`, cut back to a character boundary.
fn head(s: &str, cap: usize) -> &str {
    &s[..floor_char_boundary(s, cap)]
}

/// (head within `cap`, bytes dropped).
fn head_dropped(s: &str, cap: usize) -> (String, u64) {
    let kept = head(s, cap);
    (kept.to_owned(), (s.len() - kept.len()) as u64)
}

fn capped_text(s: &str) -> (String, u64) {
    let mut ht = HeadTail::for_text();
    ht.push(s);
    ht.finish()
}

fn required_string<'v>(obj: &'v Map<String, Value>, key: &str, whose: &str) -> Res<&'v str> {
    match obj.get(key) {
        None | Some(Value::Null) => bad(format!("{whose} has no string {key:?}")),
        Some(Value::String(s)) => Ok(s),
        Some(_) => bad(format!("{whose} {key} must be a string")),
    }
}

fn number(obj: &Map<String, Value>, key: &str, whose: &str) -> Res<Option<f64>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(Some(n.as_f64().unwrap_or(0.0))),
        Some(_) => bad(format!("{whose} {key} must be a number")),
    }
}

/// An integer field (in i64's range); None when absent or null.
fn integer(obj: &Map<String, Value>, key: &str, whose: &str) -> Res<Option<i64>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) if n.is_i64() => Ok(n.as_i64()),
        Some(_) => bad(format!("{whose} {key} must be an integer")),
    }
}

fn is_int(v: &Value) -> bool {
    matches!(v, Value::Number(n) if n.is_i64() || n.is_u64())
}

/// Python's truth value of a JSON value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// A count of bytes the record plugin cut (`text_bytes_cut`, a value of
/// `sections_bytes_cut`): an integer from 0 to `CUT_BYTES_MAX`; absent or null, 0.
fn cut_bytes(value: Option<&Value>, what: &str) -> Res<u64> {
    match value {
        None | Some(Value::Null) => Ok(0),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(count) if count <= CUT_BYTES_MAX => Ok(count),
            _ => bad(format!("{what} must be an integer from 0 to 2^53")),
        },
        Some(_) => bad(format!("{what} must be an integer from 0 to 2^53")),
    }
}

/// A report's `sections_bytes_cut`: section name -> bytes the record plugin cut of that
/// section (absent or null: none).
fn sections_cut(obj: &Map<String, Value>) -> Res<IndexMap<&str, u64>> {
    let mut cut = IndexMap::new();
    match obj.get("sections_bytes_cut") {
        None | Some(Value::Null) => {}
        Some(Value::Object(counts)) => {
            for (name, count) in counts {
                cut.insert(
                    name.as_str(),
                    cut_bytes(Some(count), "each of TestReport sections_bytes_cut")?,
                );
            }
        }
        Some(_) => return bad("TestReport sections_bytes_cut must be an object"),
    }
    Ok(cut)
}

/// A report's `[kind][phase]` output sections: (kind index, phase index, name, content).
fn sections(obj: &Map<String, Value>) -> Res<Vec<(usize, usize, &str, &str)>> {
    let mut found = Vec::new();
    let list = match obj.get("sections") {
        None | Some(Value::Null) => return Ok(found),
        Some(Value::Array(list)) => list,
        Some(_) => return bad("sections must be an array"),
    };
    for section in list {
        let (Value::Array(pair), true) = (section, true) else {
            return bad("each of sections must be a [name, content] array of strings");
        };
        let [Value::String(name), Value::String(content)] = pair.as_slice() else {
            return bad("each of sections must be a [name, content] array of strings");
        };
        let Some(rest) = name.strip_prefix("Captured ") else {
            continue;
        };
        let Some((kind, when)) = rest.split_once(' ') else {
            continue;
        };
        let (Some(k), Some(p)) = (
            OUTPUT_KINDS.iter().position(|x| *x == kind),
            PHASE_NAMES.iter().position(|x| *x == when),
        ) else {
            continue;
        };
        found.push((k, p, name.as_str(), content.as_str()));
    }
    Ok(found)
}

/// A report's status word as pytest (with its skipping plugin) gives it; None for a
/// passing report (pytest-json-report keeps the last non-passing one as the outcome).
fn status(when: &str, outcome: &str, wasxfail: bool) -> Option<EntryOutcome> {
    if wasxfail {
        if outcome == "skipped" {
            return Some(EntryOutcome::Final(Outcome::XFailed));
        }
        if outcome == "passed" {
            return Some(EntryOutcome::Final(Outcome::XPassed));
        }
    }
    match outcome {
        "failed" if when == "call" => Some(EntryOutcome::Final(Outcome::Failed)),
        "failed" => Some(EntryOutcome::Final(Outcome::Error)),
        "skipped" => Some(EntryOutcome::Final(Outcome::Skipped)),
        "rerun" => Some(EntryOutcome::Rerun),
        _ => None,
    }
}

/// pytest 9's subtest description: `[msg] (k=v, ...)`, `(<subtest>)` when empty; `""`
/// without a context object.
fn subtest_label(context: Option<&Value>) -> Res<String> {
    let ctx = match context {
        None | Some(Value::Null) => return Ok(String::new()),
        Some(Value::Object(ctx)) => ctx,
        Some(_) => return bad("_subtest.context must be an object"),
    };
    let msg = match ctx.get("msg") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => return bad("_subtest.context msg must be a string or null"),
    };
    let kwargs = match ctx.get("kwargs") {
        None | Some(Value::Null) => None,
        Some(Value::Object(k)) => Some(k),
        Some(_) => return bad("_subtest.context kwargs must be an object"),
    };
    let mut parts = Vec::new();
    if let Some(msg) = msg {
        parts.push(format!("[{msg}]"));
    }
    if let Some(kwargs) = kwargs.filter(|k| !k.is_empty()) {
        let mut pairs = Vec::with_capacity(kwargs.len());
        for (k, v) in kwargs {
            let Value::String(v) = v else {
                return bad("_subtest.context kwargs values must be strings");
            };
            pairs.push(format!("{k}={v}"));
        }
        parts.push(format!("({})", pairs.join(", ")));
    }
    let label = if parts.is_empty() {
        "(<subtest>)".to_owned()
    } else {
        parts.join(" ")
    };
    Ok(head(&label, ATTR_CAP).to_owned())
}

// -- longrepr ----------------------------------------------------------------------------

/// A string longrepr's location lines made relative: a line that starts with `/` and
/// holds `/<path>:<ASCII digits>: ` (`<path>` the node id's file, before its first
/// `::`) keeps what follows that first `/`. pytest writes a doctest's location lines
/// with the absolute path; the server's plugin strips them, pytest-reportlog does not.
/// Lines split on `\n` only. Mirrors `relative_locations` in `pure/reportlog.py`.
fn relative_locations(text: &str, node_id: &str) -> String {
    let path = node_id.split("::").next().unwrap_or("");
    let marker = format!("/{path}:");
    if path.is_empty() || !text.contains(&marker) {
        return text.to_owned();
    }
    let lines: Vec<&str> = text
        .split('\n')
        .map(|line| {
            if !line.starts_with('/') {
                return line;
            }
            let Some(at) = line.find(&marker) else {
                return line;
            };
            let start = at + marker.len();
            let digits = line[start..].bytes().take_while(u8::is_ascii_digit).count();
            if digits > 0 && line[start + digits..].starts_with(": ") {
                &line[at + 1..]
            } else {
                line
            }
        })
        .collect();
    lines.join("\n")
}

/// What a report's `longrepr` says: its text as pytest prints it, its crash, and the
/// frames of a structured one (docs/ENGINE.md, *Frames as data*).
#[derive(Default)]
struct Longrepr {
    text: Option<String>,
    crash: Option<Crash>,
    frames: Option<Box<ReprFrames>>,
}

/// A report's `longrepr` -> its text, crash and frames ([`Longrepr`]).
///
/// A string is the text (`stripped`: as `report.longreprtext` strips it); a skip's
/// `[path, lineno, reason]` gives the reason as the crash message; the structured form
/// is rendered as pytest's `toterminal` writes it (80 columns) and stripped, its
/// `reprcrash` the crash, its entries the frames (none when an entry holds them only
/// as text: a native-style one). Mirrors `_longrepr` in `pure/reportlog.py`.
fn longrepr(value: Option<&Value>, stripped: bool) -> Res<Longrepr> {
    let value = match value {
        None | Some(Value::Null) => return Ok(Longrepr::default()),
        Some(Value::String(s)) => {
            let text = if stripped { py_strip(s) } else { s.as_str() };
            return Ok(Longrepr {
                text: Some(text.to_owned()),
                ..Longrepr::default()
            });
        }
        Some(Value::Array(list)) => {
            if let [_, _, Value::String(reason)] = list.as_slice() {
                let (message, dropped) = head_dropped(reason, ATTR_CAP);
                return Ok(Longrepr {
                    crash: Some(Crash {
                        message: Some(message),
                        message_dropped: dropped,
                        ..Crash::default()
                    }),
                    ..Longrepr::default()
                });
            }
            return Ok(Longrepr::default());
        }
        Some(Value::Object(obj)) => obj,
        Some(_) => return bad("longrepr must be a string, an array, an object or null"),
    };
    let (Some(reprcrash), Some(reprtraceback)) =
        (value.get("reprcrash"), value.get("reprtraceback"))
    else {
        return Ok(Longrepr::default());
    };
    let mut crash = None;
    if !reprcrash.is_null() {
        let (path, lineno, message) = fileloc(reprcrash, "longrepr.reprcrash")?;
        let (message, message_dropped) = head_dropped(message, ATTR_CAP);
        crash = Some(Crash {
            path: Some(head(path, ATTR_CAP).to_owned()),
            line: lineno.as_u64(),
            message: Some(message),
            message_dropped,
        });
    }
    let mut out = String::new();
    let mut frames = Some(FramesSoFar::default());
    let mut root = None;
    let chain = value.get("chain").unwrap_or(&Value::Null);
    if truthy(chain) {
        let Value::Array(chain) = chain else {
            return bad("longrepr.chain must be an array or null");
        };
        for element in chain {
            let Some([tb, element_crash, description]) = element.as_array().map(Vec::as_slice)
            else {
                return bad(
                    "each longrepr.chain element must be [reprtraceback, reprcrash, description]",
                );
            };
            if !element_crash.is_null() {
                fileloc(element_crash, "longrepr.chain reprcrash")?;
            }
            render_traceback(&mut out, tb, &mut frames)?;
            match description {
                Value::Null => {}
                Value::String(d) => {
                    out.push('\n');
                    if let Some(so_far) = &mut frames {
                        for at in chain_lines_in(d) {
                            let at = out.len() + at;
                            so_far.boundaries.push((at, true));
                            root.get_or_insert((at, so_far.frames.len()));
                        }
                    }
                    out.push_str(d);
                    out.push('\n');
                }
                _ => return bad("a longrepr.chain description must be a string or null"),
            }
        }
    } else {
        render_traceback(&mut out, reprtraceback, &mut frames)?;
    }
    match value.get("sections") {
        None | Some(Value::Null) => {}
        Some(Value::Array(sections)) => {
            for section in sections {
                let Some([Value::String(name), Value::String(content), Value::String(sep)]) =
                    section.as_array().map(Vec::as_slice)
                else {
                    return bad(
                        "each longrepr.sections element must be [name, content, sep] strings",
                    );
                };
                out.push_str(&sep_line(sep, name));
                out.push('\n');
                out.push_str(content);
                out.push('\n');
            }
        }
        Some(_) => return bad("longrepr.sections must be an array"),
    }
    let text = py_strip(&out);
    let lead = text.as_ptr() as usize - out.as_ptr() as usize;
    let frames = frames.map(|frames| Box::new(frames.finish(&out, lead, root)));
    Ok(Longrepr {
        text: Some(text.to_owned()),
        crash,
        frames,
    })
}

/// The byte offsets in `description` of its chain lines (`The above exception was
/// ...`), in order.
fn chain_lines_in(description: &str) -> Vec<usize> {
    let mut at = 0;
    let mut found = Vec::new();
    for line in description.split('\n') {
        if is_chain_line(chomp(line)) {
            found.push(at);
        }
        at += line.len() + 1;
    }
    found
}

/// (path, lineno, message) of a file location object.
fn fileloc<'v>(value: &'v Value, whose: &str) -> Res<(&'v str, &'v serde_json::Number, &'v str)> {
    let Value::Object(obj) = value else {
        return bad(format!("{whose} must be an object or null"));
    };
    match (obj.get("path"), obj.get("lineno"), obj.get("message")) {
        (
            Some(Value::String(path)),
            Some(lineno @ Value::Number(n)),
            Some(Value::String(message)),
        ) if is_int(lineno) => Ok((path, n, message)),
        _ => bad(format!(
            "{whose} needs string path, integer lineno and string message"
        )),
    }
}

/// pytest's `TerminalWriter.sep` line with a title, at 80 columns (without its newline).
fn sep_line(sepchar: &str, title: &str) -> String {
    let size = sepchar.chars().count().max(1) as i64;
    let title_len = title.chars().count() as i64;
    let n = (WIDTH - title_len - 2).div_euclid(2 * size).max(1) as usize;
    let fill = sepchar.repeat(n);
    let mut line = format!("{fill} {title} {fill}");
    let tail = sepchar.trim_end_matches(is_py_whitespace);
    if (line.chars().count() + tail.chars().count()) as i64 <= WIDTH {
        line.push_str(tail);
    }
    line
}

/// One parsed traceback entry.
enum ReprEntry<'v> {
    Native(Vec<&'v str>),
    Entry {
        lines: Vec<&'v str>,
        style: &'v str,
        args: Option<Vec<(&'v str, &'v str)>>,
        locals: Option<Vec<&'v str>>,
        loc: Option<(&'v str, &'v serde_json::Number, &'v str)>,
    },
    Unknown,
}

impl ReprEntry<'_> {
    fn style(&self) -> &str {
        match self {
            ReprEntry::Native(_) => "native",
            ReprEntry::Entry { style, .. } => style,
            ReprEntry::Unknown => "",
        }
    }
}

fn string_list<'v>(value: Option<&'v Value>, whose: &str) -> Res<Vec<&'v str>> {
    let Some(Value::Array(list)) = value else {
        return bad(format!("{whose} must be an array of strings"));
    };
    list.iter()
        .map(|v| match v {
            Value::String(s) => Ok(s.as_str()),
            _ => bad(format!("{whose} must be an array of strings")),
        })
        .collect()
}

fn parse_entry(entry: &Value) -> Res<ReprEntry<'_>> {
    let (Some(Value::String(kind)), Some(Value::Object(data))) = (
        entry.as_object().and_then(|e| e.get("type")),
        entry.as_object().and_then(|e| e.get("data")),
    ) else {
        return bad("each reprentries element must be {type: string, data: object}");
    };
    if kind == "ReprEntryNative" {
        return Ok(ReprEntry::Native(string_list(
            data.get("lines"),
            "ReprEntryNative lines",
        )?));
    }
    if kind != "ReprEntry" {
        return Ok(ReprEntry::Unknown); // a kind this reader does not know writes nothing
    }
    let lines = string_list(data.get("lines"), "ReprEntry lines")?;
    let Some(Value::String(style)) = data.get("style") else {
        return bad("ReprEntry style must be a string");
    };
    let mut args = None;
    if let Some(funcargs) = data.get("reprfuncargs").filter(|v| truthy(v)) {
        let Some(Value::Array(list)) = funcargs.as_object().and_then(|f| f.get("args")) else {
            return bad("ReprEntry reprfuncargs must be {args: [[name, value], ...]}");
        };
        let mut parsed = Vec::with_capacity(list.len());
        for arg in list {
            let Some([Value::String(name), Value::String(value)]) =
                arg.as_array().map(Vec::as_slice)
            else {
                return bad("each reprfuncargs arg must be [name, value] strings");
            };
            parsed.push((name.as_str(), value.as_str()));
        }
        args = Some(parsed);
    }
    let mut locals = None;
    if let Some(reprlocals) = data.get("reprlocals").filter(|v| truthy(v)) {
        let Value::Object(reprlocals) = reprlocals else {
            return bad("ReprEntry reprlocals must be {lines: [...]}");
        };
        locals = Some(string_list(
            reprlocals.get("lines"),
            "ReprEntry reprlocals lines",
        )?);
    }
    let loc = match data.get("reprfileloc").filter(|v| truthy(v)) {
        Some(v) => Some(fileloc(v, "ReprEntry reprfileloc")?),
        None => None,
    };
    Ok(ReprEntry::Entry {
        lines,
        style,
        args,
        locals,
        loc,
    })
}

/// `ReprTraceback.toterminal`; each entry's frames are appended to `frames`, which
/// becomes None at an entry that holds them only as text.
fn render_traceback(out: &mut String, tb: &Value, frames: &mut Option<FramesSoFar>) -> Res<()> {
    let Value::Object(tb) = tb else {
        return bad("a reprtraceback must be an object");
    };
    let Some(Value::Array(entries)) = tb.get("reprentries") else {
        return bad("reprtraceback.reprentries must be an array");
    };
    let parsed = entries.iter().map(parse_entry).collect::<Res<Vec<_>>>()?;
    for (i, entry) in parsed.iter().enumerate() {
        let style = entry.style();
        if style == "long" {
            out.push('\n');
        }
        let written = render_entry(out, entry);
        entry_frames(entry, &written, frames);
        if let Some(next) = parsed.get(i + 1) {
            if style == "long" || (style == "short" && next.style() == "long") {
                if let Some(frames) = frames {
                    frames.boundaries.push((out.len(), false));
                }
                out.push_str(&"_ ".repeat((WIDTH / 2) as usize));
                out.push('\n');
            }
        }
    }
    match tb.get("extraline") {
        None | Some(Value::Null) => {}
        Some(Value::String(extra)) => {
            if !extra.is_empty() {
                out.push_str(extra);
                out.push('\n');
            }
        }
        Some(_) => return bad("reprtraceback.extraline must be a string or null"),
    }
    Ok(())
}

/// The frames of a longrepr being rendered, each where its line starts in the text
/// written so far (a byte offset), and the separator and chain lines' offsets.
#[derive(Default)]
struct FramesSoFar {
    frames: Vec<(String, u64, usize, FrameKind)>,
    boundaries: Vec<(usize, bool)>,
}

impl FramesSoFar {
    /// The frames of `text`, the stripped rendering whose first byte was at `lead` of
    /// `out`: offsets become line numbers of `text`.
    fn finish(self, out: &str, lead: usize, root: Option<(usize, usize)>) -> ReprFrames {
        let mut starts = vec![0];
        starts.extend(memchr::memchr_iter(b'\n', out.as_bytes()).map(|i| i + 1));
        let lead_line = starts.partition_point(|&s| s <= lead) - 1;
        let line_of = |offset: usize| starts.partition_point(|&s| s <= offset) - 1 - lead_line;
        ReprFrames {
            frames: self
                .frames
                .into_iter()
                .map(|(path, line, at, kind)| ReprFrame {
                    path,
                    line,
                    at: line_of(at),
                    kind,
                })
                .collect(),
            boundaries: self
                .boundaries
                .into_iter()
                .map(|(at, chain)| (line_of(at), chain))
                .collect(),
            // the root's text ends where its chain line starts, in the stripped text
            root: root.map(|(at, n)| (n, at - lead)),
        }
    }
}

/// Append `entry`'s frames to `frames` in the order its text shows them (`written`:
/// where its lines went): a short-style entry's file location heads it, another's ends
/// it; the syntax error positions of its exception lines ([`syntax_position`] after `E
/// `) are where those lines are. A native-style entry's frames are lines of text:
/// `frames` becomes None.
fn entry_frames(entry: &ReprEntry<'_>, written: &Written, frames: &mut Option<FramesSoFar>) {
    let ReprEntry::Entry {
        lines, style, loc, ..
    } = entry
    else {
        if let ReprEntry::Native(_) = entry {
            *frames = None;
        }
        return;
    };
    let Some(frames) = frames else { return };
    let short = *style == "short";
    let location = loc
        .filter(|(path, _, _)| !path.contains('\n'))
        .zip(written.loc)
        .and_then(|((path, lineno, _), at)| {
            let kind = if short {
                FrameKind::Header
            } else {
                FrameKind::Location
            };
            Some(((*path).to_owned(), lineno.as_u64()?, at, kind))
        });
    if short {
        frames.frames.extend(location.clone());
    }
    for (line, at) in lines.iter().zip(&written.lines) {
        let (Some(at), false) = (at, line.contains('\n')) else {
            continue;
        };
        if let Some((path, n)) = line
            .strip_prefix("E ")
            .and_then(|rest| syntax_position(chomp(rest)))
        {
            frames
                .frames
                .push((path.to_owned(), n, *at, FrameKind::SyntaxPosition));
        }
    }
    if !short {
        frames.frames.extend(location);
    }
}

/// Where [`render_entry`] wrote an entry: the byte offsets in `out` of its file location
/// line, and of each of its `lines` written as a line of its own (None: not one).
#[derive(Default)]
struct Written {
    loc: Option<usize>,
    lines: Vec<Option<usize>>,
}

fn render_entry(out: &mut String, entry: &ReprEntry<'_>) -> Written {
    let ReprEntry::Entry {
        lines,
        style,
        args,
        locals,
        loc,
    } = entry
    else {
        if let ReprEntry::Native(lines) = entry {
            for line in lines {
                out.push_str(line);
            }
        }
        return Written::default();
    };
    let mut written = Written::default();
    if *style == "short" {
        if let Some(loc) = loc {
            written.loc = Some(out.len());
            write_fileloc(out, loc);
        }
        written.lines = write_entry_lines(out, lines, style);
        if let Some(locals) = locals {
            for line in locals {
                out.push_str("        ");
                out.push_str(line);
                out.push('\n');
            }
        }
        return written;
    }
    if let Some(args) = args {
        write_funcargs(out, args);
    }
    written.lines = write_entry_lines(out, lines, style);
    if let Some(locals) = locals {
        out.push('\n');
        for line in locals {
            out.push_str(line);
            out.push('\n');
        }
    }
    if let Some(loc) = loc {
        if !lines.is_empty() {
            out.push('\n');
        }
        written.loc = Some(out.len());
        write_fileloc(out, loc);
    }
    written
}

fn write_fileloc(out: &mut String, (path, lineno, message): &(&str, &serde_json::Number, &str)) {
    let message = message.split('\n').next().unwrap_or("");
    out.push_str(&format!("{path}:{lineno}: {message}\n"));
}

fn write_funcargs(out: &mut String, args: &[(&str, &str)]) {
    if args.is_empty() {
        return;
    }
    let mut so_far = String::new();
    let mut so_far_len = 0usize;
    for (name, value) in args {
        let ns = format!("{name} = {value}");
        let ns_len = ns.chars().count();
        if (ns_len + so_far_len + 2) as i64 > WIDTH {
            if !so_far.is_empty() {
                out.push_str(&so_far);
                out.push('\n');
            }
            so_far = ns;
            so_far_len = ns_len;
        } else if !so_far.is_empty() {
            so_far.push_str(", ");
            so_far.push_str(&ns);
            so_far_len += 2 + ns_len;
        } else {
            so_far = ns;
            so_far_len = ns_len;
        }
    }
    if !so_far.is_empty() {
        out.push_str(&so_far);
        out.push('\n');
    }
    out.push('\n');
}

/// `ReprEntry._write_entry_lines` without markup: source lines re-split as
/// `str.splitlines` does, failure lines as is. Returns where each of `lines` went: the
/// byte offset in `out` of the line written in its place (the `i`-th source line
/// written for the `i`-th source line: re-splitting can move what it says), None when
/// no line was.
fn write_entry_lines(out: &mut String, lines: &[&str], style: &str) -> Vec<Option<usize>> {
    let mut written = vec![None; lines.len()];
    if lines.is_empty() {
        return written;
    }
    if style == "value" {
        for (line, at) in lines.iter().zip(&mut written) {
            *at = Some(out.len());
            out.push_str(line);
            out.push('\n');
        }
        return written;
    }
    let mut indents = Vec::new();
    let mut source = Vec::new();
    let mut failure: &[&str] = &[];
    for (index, line) in lines.iter().enumerate() {
        if line.starts_with(FAIL_MARKER) {
            failure = &lines[index..];
            break;
        }
        let split = line.char_indices().nth(4).map_or(line.len(), |(i, _)| i);
        indents.push(&line[..split]);
        source.push(&line[split..]);
    }
    let joined = source.join("\n");
    for ((indent, line), at) in indents.iter().zip(py_splitlines(&joined)).zip(&mut written) {
        *at = Some(out.len());
        out.push_str(indent);
        out.push_str(line);
        out.push('\n');
    }
    let failure_start = lines.len() - failure.len();
    for (line, at) in failure.iter().zip(&mut written[failure_start..]) {
        *at = Some(out.len());
        out.push_str(line);
        out.push('\n');
    }
    written
}

#[cfg(test)]
mod tests;
