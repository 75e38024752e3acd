//! The summary builder (docs/ENGINE.md, *The builder* and *Summary JSON*). Mirrored by
//! `SummaryBuilder` in `pure/summary.py`, which must write the same bytes.
//!
//! Memory stays constant apart from the capped lists: counts, the first `failures_listed`
//! failures and each group's first failure (only those shown get their traceback cut,
//! at the end), the group table (at most
//! [`MAX_TRACKED_GROUPS`] keys, each with its first `max_examples` node ids), the
//! `max_slowest` slowest tests and the first `max_collection_errors` collection errors.
//! Every record gets a sequence number (its index in input order), which orders
//! ties and lets [`SummaryBuilder::merge`] append another builder exactly.
//!
//! With a [`Selection`] (docs/ENGINE.md, *Selection*), counts and the duration stay the
//! whole report's, while failures, groups, collection errors, slowest and `omitted`
//! only take the selected tests and collection errors.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use indexmap::IndexMap;
use serde::Serialize;

use crate::budgets::Budgets;
use crate::cut::{
    capped, chomp, cut_traceback_for, fixture_location, is_ws, parse_location, says_message,
    shown_traceback_for, strip, syntax_position, DeepestFrames, FailureContext, FailureFrames,
    FrameLine, PathKinds,
};
use crate::doctest::read_doctest;
use crate::group::{fold_values, group_id, key_hash, normalize_capped, OTHER_GROUP_ID};
use crate::project::{display_path, ProjectCode};
use crate::record::{
    CollectionErrorRecord, Item, Outcome, Phase, ReprFrame, ReprFrames, SourceSpan, TestRecord,
};
use crate::reportlog::{CollectedFacts, CollectedPage, SessionFacts};
use crate::select::Selection;
use crate::text::decimal_u64;
use crate::warnings::WarningsJson;
use crate::Format;

/// Distinct group keys tracked; a failure with a new key past this joins `gother`.
pub const MAX_TRACKED_GROUPS: usize = 2_000;

// ---------------------------------------------------------------------------------
// Messages and exceptions (docs/ENGINE.md, *Messages and exceptions*).

/// The first line (split on `\n`) that is not blank, stripped.
fn first_meaningful_line(s: &str) -> Option<&str> {
    past_syntax_position(s.split('\n').map(strip).filter(|l| !l.is_empty()))
}

/// The first line that, stripped, starts with `E `: the rest, stripped (pytest's
/// explanation lines).
fn first_e_line(s: &str) -> Option<&str> {
    past_syntax_position(
        s.split('\n')
            .filter_map(|l| strip(l).strip_prefix("E ").map(strip)),
    )
}

/// The first of `lines`; when that is a syntax error's position (`File "p", line N`:
/// Python's report of a `SyntaxError`, its source line and caret follow), the first
/// later one that names an exception (`SyntaxError: '(' was never closed`) instead, if
/// any.
fn past_syntax_position<'a>(mut lines: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let first = lines.next()?;
    if syntax_position(first).is_none() {
        return Some(first);
    }
    Some(
        lines
            .find(|l| split_exception_prefix(l).is_some())
            .unwrap_or(first),
    )
}

/// `^([A-Za-z_][A-Za-z0-9_.]*): (.*)$` -> (exception, rest).
fn split_exception_prefix(line: &str) -> Option<(&str, &str)> {
    let b = line.as_bytes();
    if !b
        .first()
        .is_some_and(|&c| c.is_ascii_alphabetic() || c == b'_')
    {
        return None;
    }
    let mut i = 1;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
        i += 1;
    }
    (b.get(i) == Some(&b':') && b.get(i + 1) == Some(&b' ')).then(|| (&line[..i], &line[i + 2..]))
}

fn is_identifier(s: &str) -> bool {
    let b = s.as_bytes();
    b.first()
        .is_some_and(|&c| c.is_ascii_alphabetic() || c == b'_')
        && b[1..]
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
}

/// pytest's final location line `^\S.*:[0-9]+: ([A-Za-z_][A-Za-z0-9_.]*)$` -> group 1.
fn trailing_exception(line: &str) -> Option<&str> {
    let first = line.chars().next()?;
    if is_ws(first) {
        return None;
    }
    let sep = line.rfind(": ")?;
    let name = &line[sep + 2..];
    if !is_identifier(name) {
        return None;
    }
    let head = &line.as_bytes()[..sep];
    let digits_start = head
        .iter()
        .rposition(|b| !b.is_ascii_digit())
        .map_or(0, |p| p + 1);
    let colon = digits_start.checked_sub(1)?;
    (digits_start < head.len() && head[colon] == b':' && colon >= first.len_utf8()).then_some(name)
}

/// (exception, message line) of a failure or collection error, the line not yet
/// capped. An empty `exception` counts as none.
fn describe<'a>(
    exception: Option<&'a str>,
    message: Option<&'a str>,
    text: Option<&'a str>,
) -> (Option<&'a str>, &'a str) {
    let text = text.unwrap_or("");
    let line = message
        .and_then(|m| first_e_line(m).or_else(|| first_meaningful_line(m)))
        .or_else(|| first_e_line(text))
        .or_else(|| first_meaningful_line(text))
        .unwrap_or("");
    let (exception, line) = match exception.filter(|e| !e.is_empty()) {
        Some(e) => {
            let rest = line
                .strip_prefix(e)
                .and_then(|r| r.strip_prefix(": "))
                .unwrap_or(line);
            (Some(e), rest)
        }
        None => match split_exception_prefix(line) {
            Some((e, rest)) => (Some(e), rest),
            None => (
                text.rsplit('\n').map(chomp).find_map(trailing_exception),
                line,
            ),
        },
    };
    // A bare `raise ValueError` / `<failure type="java.lang.AssertionError"/>`: the
    // line only repeats the exception.
    if exception == Some(line) {
        return (exception, "");
    }
    (exception, line)
}

/// What the builder reads off a failure (docs/ENGINE.md, *Messages and exceptions*,
/// *Chained exceptions*): its exception and message line, and the frames it is located
/// and grouped by; all of its root cause when the root has a frame of project code
/// (and names its exception), else of the record.
struct Described<'a> {
    exception: Option<&'a str>,
    line: &'a str,
    frames: DeepestFrames<'a>,
}

impl<'a> Described<'a> {
    fn of(
        record: &'a TestRecord,
        text: &'a str,
        project: Option<&ProjectCode>,
        kinds: &mut PathKinds,
    ) -> Self {
        let FailureFrames { frames, root } = match &record.frames {
            Some(repr) => FailureFrames::of_data(repr, text, project, kinds),
            None => FailureFrames::of(text, project, kinds),
        };
        let (exception, line) = match root.map(|root| describe(None, None, Some(root))) {
            Some((Some(exception), line)) => (Some(exception), line),
            _ => describe(
                record.exception.as_deref(),
                record.message.as_deref(),
                Some(text),
            ),
        };
        Described {
            exception,
            line,
            frames,
        }
    }
}

/// The location from the last `path:N: ` line of `text` (see `cut::parse_location`).
fn location_from_text(text: &str) -> Option<(String, Option<u64>)> {
    text.rsplit('\n')
        .map(chomp)
        .find_map(parse_location)
        .map(|loc| (loc.path.to_owned(), Some(loc.line)))
}

/// Empty captured output is written as null.
fn non_empty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.is_empty())
}

// ---------------------------------------------------------------------------------
// State.

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    passed: u64,
    failed: u64,
    errors: u64,
    skipped: u64,
    xfailed: u64,
    xpassed: u64,
    flaky: u64,
    subtests_passed: u64,
    subtests_failed: u64,
    passed_with_failed_subtests: u64,
}

/// Examples of a group: (sequence number, node id), in input order. Exact-size (a group
/// of one failure holds one 24-byte entry and its id; there are up to
/// [`MAX_TRACKED_GROUPS`] groups).
type Examples = Vec<(u64, Box<str>)>;

/// Add the example `node_id` (sequence number `seq`) to `examples` if it has fewer than
/// `max`.
fn push_example(examples: &mut Examples, max: usize, seq: u64, node_id: &str) {
    if examples.len() < max {
        examples.reserve_exact(1);
        examples.push((seq, node_id.into()));
    }
}

/// Keep the first `max` examples of `into` and `from` together, in input order.
fn merge_examples(into: &mut Examples, from: Examples, max: usize) {
    if from.is_empty() || into.len() >= max && into.last().is_some_and(|l| l.0 < from[0].0) {
        return;
    }
    into.extend(from);
    into.sort_by_key(|e| e.0);
    into.truncate(max);
}

/// A group's key (docs/ENGINE.md, *Groups*): the exception (or ""), the frame or
/// assertion site (`path:line`) if any, and the normalised message ("" for a key by
/// frame), as the index holds it: one byte string, `exception 0xFF (0x01 at | 0x00) 0xFF
/// normalized`. 0xFF is never a byte of UTF-8, so distinct keys give distinct strings;
/// and one allocation is compared in one go (three strings behind an `Arc` cost a cache
/// miss each, on every failure).
fn encode_key(out: &mut Vec<u8>, exception: &str, at: Option<&str>, normalized: &str) {
    out.clear();
    out.extend_from_slice(exception.as_bytes());
    out.push(0xFF);
    match at {
        Some(at) => {
            out.push(0x01);
            out.extend_from_slice(at.as_bytes());
        }
        None => out.push(0x00),
    }
    out.push(0xFF);
    out.extend_from_slice(normalized.as_bytes());
}

/// A group's first failure (its lead but in the suspect's group: [`Group::lead_seq`]),
/// listed ahead of the others when the group is listed. Only
/// the listed groups' are written out, so most are kept unlisted: by where it can be
/// read again when its record has a [`SourceSpan`] (`Located`), else raw (`Pending`:
/// the record as read, its text capped by the parser); all within [`PENDING_BYTES`] for
/// the whole builder. Past that none is kept, and a listed group's first failure is read
/// again from its file ([`SummaryBuilder::missing_representatives`]).
#[derive(Debug)]
enum Representative {
    Listed(Box<ListedFailure>),
    Pending(Box<TestRecord>),
    Located(LocatedFailure),
    Missing,
}

/// A first failure kept by where it can be read again: its span, what its record says
/// (a hash), and the one field of it a listing shows that the parser took from outside
/// the span (a pytest-json path is made relative to the report's `root`). About 80
/// bytes, where the record with its strings took about 400 (benches/RESULTS.md,
/// section 8).
#[derive(Debug)]
struct LocatedFailure {
    span: SourceSpan,
    says: u64,
    path: Option<Box<str>>,
}

impl LocatedFailure {
    fn of(record: &TestRecord, span: SourceSpan) -> Self {
        LocatedFailure {
            span,
            says: what_it_says(record),
            path: record.path.as_deref().map(Box::from),
        }
    }

    /// The record `again`, read from the span, as the kept one: None when it does not
    /// say what the kept one said (the file changed since).
    fn take(&self, mut again: TestRecord) -> Option<TestRecord> {
        if what_it_says(&again) != self.says {
            return None;
        }
        again.path = self.path.as_deref().map(String::from);
        Some(again)
    }
}

/// A hash of what a failure's record says that a listing shows, apart from its texts
/// and the path [`LocatedFailure`] keeps: node id, outcome, phase, exception, message,
/// line, subtest and the bytes capped (its duration and flaky mark, to which a JUnit
/// retry's earlier attempts add, are counted as it is pushed and never listed).
/// SipHash-1-3 with fixed keys (std's `DefaultHasher`): 64 bits, so two different records
/// agree by chance once in 2^64.
fn what_it_says(record: &TestRecord) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (
        &record.node_id,
        record.outcome,
        record.phase,
        &record.exception,
        &record.message,
        record.line,
        &record.subtest,
        record.text_bytes_omitted,
        record.output_bytes_omitted,
    )
        .hash(&mut hasher);
    hasher.finish()
}

/// Bytes of unlisted first failures (records, their texts, outputs, ids) a builder
/// keeps for the groups it may list; the memory bound of docs/ENGINE.md, *The builder*.
const PENDING_BYTES: usize = 2 << 20;

/// The bytes a raw record holds (its strings).
fn record_bytes(record: &TestRecord) -> usize {
    let len = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    record.node_id.len()
        + len(&record.exception)
        + len(&record.message)
        + len(&record.text)
        + len(&record.path)
        + len(&record.stdout)
        + len(&record.stderr)
        + len(&record.log)
        + len(&record.subtest)
        + record.frames.as_ref().map_or(0, |f| {
            f.frames
                .iter()
                .map(|frame| frame.path.len() + std::mem::size_of::<ReprFrame>())
                .sum()
        })
}

/// The bytes a kept representative counts against [`PENDING_BYTES`]: a raw record its
/// strings; a located one its own size.
fn kept_bytes(representative: &Representative) -> usize {
    match representative {
        Representative::Pending(record) => record_bytes(record),
        Representative::Located(located) => {
            std::mem::size_of::<LocatedFailure>() + located.path.as_ref().map_or(0, |p| p.len())
        }
        Representative::Listed(_) | Representative::Missing => 0,
    }
}

/// Copy a record's text and outputs into exact-size strings before it is kept raw. The
/// parser's text buffers start at 4 KiB and double, so a short failure kept as it came
/// would hold several times the bytes [`PENDING_BYTES`] counts; a copy (not
/// `shrink_to_fit`, which leaves the buffer's tail behind as heap the process has
/// touched) gives the whole buffer back to the next test's text. At 1 GB this is
/// about 1.3 MB less peak RSS (benches/RESULTS.md, section 8).
fn exact_strings(record: &mut TestRecord) {
    let strings = [
        &mut record.text,
        &mut record.stdout,
        &mut record.stderr,
        &mut record.log,
    ];
    for s in strings.into_iter().flatten() {
        if s.capacity() > s.len() + SPARE_BYTES_KEPT {
            *s = s.as_str().to_owned();
        }
    }
}

/// Spare capacity a kept raw string may have without being copied (a copy costs more
/// than the bytes it gives back).
const SPARE_BYTES_KEPT: usize = 64;

impl Representative {
    fn listed(&self) -> Option<&ListedFailure> {
        match self {
            Representative::Listed(f) => Some(f),
            _ => None,
        }
    }
}

#[derive(Debug)]
struct Group {
    /// The suspect's group only: its assertion sites ([`Sites`]).
    sites: Option<Box<Sites>>,
    /// The hash of its key (the key itself is in the index).
    hash: u64,
    count: u64,
    first_seq: u64,
    /// The sequence number of its lead, the failure that labels it (docs/ENGINE.md,
    /// *Groups*, label): its first failure's, unless [`SummaryBuilder::settle_leads`]
    /// found another in its [`Sites`].
    lead_seq: u64,
    examples: Examples,
    /// The lead, listed ahead of the others; its exception, normalised message and
    /// location are the group's, the message worked out only once the group is listed
    /// ([`ListedFailure::group_message`]).
    representative: Representative,
}

/// The assertion sites of the suspect's group (docs/ENGINE.md, *Groups*): the key
/// hashes its failures had without the suspect, each with its tally ([`SiteTally`]),
/// and each one's first failure (site, sequence number, node id), named first among
/// the group's examples (the first `max_examples` sites).
#[derive(Debug, Default)]
struct Sites {
    tally: HashMap<u64, SiteTally, crate::text::FastHash>,
    leads: Vec<(u64, u64, Box<str>)>,
}

/// The failures of one assertion site of the suspect's group: how many, the first one's
/// sequence number, and their exception (`""` for none; the site's key holds it).
#[derive(Debug)]
struct SiteTally {
    count: u64,
    first_seq: u64,
    exception: Box<str>,
}

impl Sites {
    /// The same sites for a builder whose sequence numbers start `offset` later.
    fn shifted(mut self, offset: u64) -> Self {
        for tally in self.tally.values_mut() {
            tally.first_seq += offset;
        }
        for lead in &mut self.leads {
            lead.1 += offset;
        }
        self
    }

    /// The sequence number of the group's lead (docs/ENGINE.md, *Groups*, label): the
    /// first failure of the site with the most failures among those of the exception
    /// most of the sites' failures have (`DocTestFailure` only when no failure has
    /// another), ties going to the one seen first. None without sites.
    fn lead_seq(&self) -> Option<u64> {
        // exception -> (failures, first sequence number)
        let mut exceptions: HashMap<&str, (u64, u64)> = HashMap::new();
        for tally in self.tally.values() {
            let e = exceptions.entry(&tally.exception).or_insert((0, u64::MAX));
            e.0 += tally.count;
            e.1 = e.1.min(tally.first_seq);
        }
        let others = exceptions.keys().any(|&e| e != DOCTEST_FAILURE);
        let most_then_first = |a: &(u64, u64), b: &(u64, u64)| a.0.cmp(&b.0).then(b.1.cmp(&a.1));
        let (&label, _) = exceptions
            .iter()
            .filter(|(&e, _)| !others || e != DOCTEST_FAILURE)
            .max_by(|a, b| most_then_first(a.1, b.1))?;
        self.tally
            .values()
            .filter(|t| &*t.exception == label)
            .map(|t| (t.count, t.first_seq))
            .max_by(most_then_first)
            .map(|(_, first_seq)| first_seq)
    }

    /// Count one failure (sequence number `seq`, of `node_id`, exception `exception`)
    /// of the site `site`: a new site is tracked while there are fewer than
    /// [`SITES_TRACKED`], and named first among the examples while there are fewer
    /// than `max_examples` leads.
    fn count(&mut self, site: u64, exception: &str, seq: u64, node_id: &str, max_examples: usize) {
        if let Some(tally) = self.tally.get_mut(&site) {
            tally.count += 1;
        } else if self.tally.len() < SITES_TRACKED {
            let exception = exception.into();
            self.tally.insert(
                site,
                SiteTally {
                    count: 1,
                    first_seq: seq,
                    exception,
                },
            );
            if self.leads.len() < max_examples {
                self.leads.push((site, seq, node_id.into()));
            }
        }
    }

    /// Add the sites of a later builder (their sequence numbers already shifted), as if
    /// their failures were counted after these: new sites in the order their first
    /// failures came, within [`SITES_TRACKED`].
    fn absorb(&mut self, theirs: Sites, max_examples: usize) {
        let mut tallies: Vec<(u64, SiteTally)> = theirs.tally.into_iter().collect();
        tallies.sort_unstable_by_key(|(_, t)| t.first_seq);
        // A new site while the leads are not full is among their leads: theirs are their
        // first `max_examples` sites, and those here are all leads.
        let ids: HashMap<u64, Box<str>> = theirs
            .leads
            .into_iter()
            .map(|(site, _, id)| (site, id))
            .collect();
        for (site, tally) in tallies {
            if let Some(mine) = self.tally.get_mut(&site) {
                mine.count += tally.count;
            } else if self.tally.len() < SITES_TRACKED {
                if let (true, Some(id)) = (self.leads.len() < max_examples, ids.get(&site)) {
                    self.leads.push((site, tally.first_seq, id.clone()));
                }
                self.tally.insert(site, tally);
            }
        }
    }
}

/// Assertion sites of the suspect's group told apart; beyond, a new site's failure is an
/// example like the others.
pub const SITES_TRACKED: usize = 10_000;

impl Group {
    /// Its examples as listed: each assertion site's first failure first (the suspect's
    /// group), then the others in report order, at most `max`.
    fn listed_examples(&self, max: usize) -> Vec<&str> {
        let Some(sites) = &self.sites else {
            return self.examples.iter().map(|e| &*e.1).collect();
        };
        let mut out: Vec<&str> = Vec::with_capacity(max);
        let leads = sites.leads.iter().map(|l| &*l.2);
        for id in leads.chain(self.examples.iter().map(|e| &*e.1)) {
            if out.len() == max {
                break;
            }
            if !out.contains(&id) {
                out.push(id);
            }
        }
        out
    }
}

/// Distinct group keys of `gother` counted, at most: its message says how many causes
/// it folded (`N other causes`, or `more than N` past this; docs/ENGINE.md, *Groups*).
pub const OTHER_CAUSES_COUNTED: usize = 10_000;

#[derive(Debug)]
struct OtherGroup {
    count: u64,
    first_seq: u64,
    examples: Examples,
    representative: Representative,
    /// The key hashes of the causes folded, up to [`OTHER_CAUSES_COUNTED`].
    causes: HashSet<u64, crate::text::FastHash>,
    /// A cause not in `causes` came when it was full.
    more_causes: bool,
}

impl Default for OtherGroup {
    fn default() -> Self {
        OtherGroup {
            count: 0,
            first_seq: 0,
            examples: Vec::new(),
            representative: Representative::Missing,
            causes: HashSet::default(),
            more_causes: false,
        }
    }
}

impl OtherGroup {
    /// Count the cause with key hash `hash` as folded here.
    fn fold_cause(&mut self, hash: u64) {
        if self.causes.len() < OTHER_CAUSES_COUNTED {
            self.causes.insert(hash);
        } else if !self.causes.contains(&hash) {
            self.more_causes = true;
        }
    }

    /// `N other causes` (`1 other cause`; `more than N other causes` past the count
    /// kept).
    fn message(&self) -> String {
        let n = self.causes.len();
        let more = if self.more_causes { "more than " } else { "" };
        let plural = if n == 1 && !self.more_causes { "" } else { "s" };
        format!("{more}{n} other cause{plural}")
    }

    /// Count one failure (sequence number `seq`) of a cause folded here.
    fn count_one(&mut self, seq: u64, node_id: &str, max_examples: usize) {
        let example = match self.examples.len() < max_examples {
            true => vec![(seq, node_id.into())],
            false => Vec::new(),
        };
        self.absorb(1, seq, example, max_examples, Representative::Missing);
    }

    fn absorb(
        &mut self,
        count: u64,
        first_seq: u64,
        examples: Examples,
        max_examples: usize,
        representative: Representative,
    ) {
        if self.count == 0 || first_seq < self.first_seq {
            self.first_seq = first_seq;
            self.representative = match representative {
                Representative::Listed(mut r) => {
                    r.group = GroupRef::Other;
                    Representative::Listed(r)
                }
                other => other,
            };
        }
        self.count += count;
        merge_examples(&mut self.examples, examples, max_examples);
    }
}

/// Which group a failure is in.
/// pytest's failure of a test whose subtests failed, and only that (`contains 2 failed
/// subtests`; docs/ENGINE.md, *Subtests*).
fn is_subtests_marker(message: &str) -> bool {
    let Some(rest) = message.strip_prefix("contains ") else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && matches!(&rest[digits..], " failed subtest" | " failed subtests")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GroupRef {
    Tracked(usize),
    Other,
}

#[derive(Clone, Debug)]
struct ListedFailure {
    seq: u64,
    node_id: String,
    subtest: Option<String>,
    outcome: Outcome,
    phase: Option<Phase>,
    exception: Option<String>,
    message: String,
    message_in_traceback: bool,
    location: Option<(String, Option<u64>)>,
    traceback: String,
    traceback_omitted: u64,
    stdout: Option<String>,
    stderr: Option<String>,
    log: Option<String>,
    /// What the parser's caps dropped of this failure's text and message, and of its
    /// captured output and log (docs/ENGINE.md, *Text capping*).
    text_bytes_omitted: u64,
    output_bytes_omitted: u64,
    group: GroupRef,
    /// A group's first failure: its message normalised, the group's message
    /// (docs/ENGINE.md, *Groups*); None for the other failures.
    group_message: Option<String>,
}

/// One of the first `failures_listed` failures as pushed: its record (text included,
/// strings exact-size), sequence number and group.
#[derive(Debug)]
struct EarlyFailure {
    seq: u64,
    group: GroupRef,
    record: Box<TestRecord>,
}

#[derive(Debug)]
struct ListedCollectionError {
    path: String,
    exception: Option<String>,
    message: String,
    location: Option<(String, Option<u64>)>,
    traceback: String,
    traceback_omitted: u64,
    text_bytes_omitted: u64,
}

#[derive(Debug)]
struct Slow {
    duration_us: u64,
    seq: u64,
    node_id: String,
}

/// A cause found outside the report (docs/ENGINE.md, *Groups*, the suspect): the
/// changed code that `node_ids`, the failing tests, all ran. A failure of one of them
/// with no frame of the project's code under test (its location test code, or none), or
/// a doctest's wrong value, joins one group keyed by `key`, whatever its message.
#[derive(Debug, Clone)]
pub struct SuspectGroup {
    pub key: String,
    pub node_ids: HashSet<String>,
}

/// The exception of a doctest's wrong value (pytest's `doctest` plugin; *Doctests*).
const DOCTEST_FAILURE: &str = "DocTestFailure";

/// Accumulates records (in input order) into a summary. See the module docs.
#[derive(Debug)]
pub struct SummaryBuilder {
    budgets: Budgets,
    group_limit: usize,
    /// Records pushed so far (the next sequence number).
    seq: u64,
    counts: Counts,
    duration_us: u64,
    failures_total: u64,
    /// The first `failures_listed` failures, in report order, raw: only those shown are
    /// cut, at the end (about half: the listed groups' first failures come first).
    failures: Vec<EarlyFailure>,
    groups: Vec<Group>,
    /// Encoded key ([`encode_key`]) -> index in `groups`.
    group_index: HashMap<Box<[u8]>, usize, crate::text::FastHash>,
    /// The encoded key of the failure being grouped, its buffer reused: most failures
    /// join a group that exists, and then the lookup allocates nothing.
    scratch_key: Vec<u8>,
    /// The `path:line` of the failure being grouped (reused buffer).
    scratch_at: String,
    other: OtherGroup,
    collection_total: u64,
    collection_errors: Vec<ListedCollectionError>,
    /// Largest first, ties by sequence number.
    slowest: Vec<Slow>,
    text_bytes_omitted: u64,
    output_bytes_omitted: u64,
    /// The selection, if any, and which of its entries matched a failing/erroring test
    /// or a collection error (one flag per entry).
    selection: Option<Arc<Selection>>,
    matched: Vec<bool>,
    /// The project's own code (docs/ENGINE.md, *Project code*); None: the path-pattern rule.
    project: Option<Arc<ProjectCode>>,
    /// The cause found outside the report, if any ([`SuspectGroup`]).
    suspect: Option<Arc<SuspectGroup>>,
    /// The node id and group of the last failed subtest listed (a parent that only says
    /// its subtests failed joins that group).
    last_subtest: Option<(String, GroupRef)>,
    /// The files whose last line was cut (a report log of a killed run), input order.
    truncated: Vec<String>,
    /// pytest's session times of the files that have one, and their tests' sum (the
    /// others count their tests' sum: docs/ENGINE.md, *Summary JSON*).
    known_session_us: u64,
    known_tests_us: u64,
    /// What each frame path is, remembered across failures.
    kinds: PathKinds,
    /// Bytes held by `Representative::Pending` and `Located` records (at most
    /// [`PENDING_BYTES`]; [`kept_bytes`]).
    pending_bytes: usize,
    /// The place in the input list of the file being pushed, when its failures' source
    /// spans are kept instead of their texts ([`reading_spans_of`](Self::reading_spans_of)).
    span_file: Option<usize>,
    /// The groups holding a raw first failure, oldest first.
    pending_order: std::collections::VecDeque<usize>,
    /// While first failures are read again: sequence number -> group index.
    recovering: HashMap<u64, usize>,
    /// What the report logs said of their sessions (None: no report log).
    session: Option<SessionFacts>,
    /// Each test's outcome by node id, in report order, the first `max_outcomes` tests.
    outcomes: IndexMap<String, &'static str>,
    /// The report logs' collected ids read for a page (None: no page asked for).
    collected: Option<CollectedFacts>,
}

impl SummaryBuilder {
    /// The sum of the durations pushed so far (saturating), microseconds.
    pub fn tests_duration_us(&self) -> u64 {
        self.duration_us
    }

    /// The file pushed since `tests_duration_us()` was `file_start_us` ran for
    /// `session_us` (pytest's session time; None when the report does not say: then its
    /// tests' sum counts). `duration_s` adds up the files' times (docs/ENGINE.md,
    /// *Summary JSON*); a builder never told counts the sum of all durations.
    pub fn end_file(&mut self, session_us: Option<u64>, file_start_us: u64) {
        if let Some(us) = session_us {
            self.known_session_us = self.known_session_us.saturating_add(us);
            self.known_tests_us = self
                .known_tests_us
                .saturating_add(self.duration_us.saturating_sub(file_start_us));
        }
    }

    /// Say that the file `path` ended in the middle of a line (listed in `truncated`).
    pub fn note_truncated(&mut self, path: &str) {
        self.truncated.push(path.to_owned());
    }

    /// An empty builder with these budgets.
    pub fn new(budgets: &Budgets) -> Self {
        Self::with_group_limit(budgets, MAX_TRACKED_GROUPS)
    }

    /// An empty builder tracking at most `group_limit` distinct groups (tests use a
    /// small limit to reach `gother`).
    pub fn with_group_limit(budgets: &Budgets, group_limit: usize) -> Self {
        SummaryBuilder {
            budgets: budgets.clone(),
            group_limit,
            seq: 0,
            counts: Counts::default(),
            duration_us: 0,
            failures_total: 0,
            failures: Vec::new(),
            groups: Vec::new(),
            group_index: HashMap::default(),
            scratch_key: Vec::new(),
            scratch_at: String::new(),
            other: OtherGroup::default(),
            last_subtest: None,
            truncated: Vec::new(),
            known_session_us: 0,
            known_tests_us: 0,
            collection_total: 0,
            collection_errors: Vec::new(),
            slowest: Vec::new(),
            text_bytes_omitted: 0,
            output_bytes_omitted: 0,
            selection: None,
            matched: Vec::new(),
            project: None,
            suspect: None,
            kinds: PathKinds::default(),
            pending_bytes: 0,
            pending_order: std::collections::VecDeque::new(),
            span_file: None,
            recovering: HashMap::new(),
            session: None,
            outcomes: IndexMap::new(),
            collected: None,
        }
    }

    /// The project this builder decides library code by (None: the path-pattern rule).
    pub fn project(&self) -> Option<&ProjectCode> {
        self.project.as_deref()
    }

    /// What the file just pushed (a report log) said of its session, after the earlier
    /// files'.
    pub fn add_session(&mut self, facts: SessionFacts) {
        match &mut self.session {
            Some(known) => known.merge(facts, &self.budgets),
            None => self.session = Some(facts),
        }
    }

    /// True when merging this builder into an earlier one would not be exact: some
    /// failure joined `gother`, the suspect's group tracks as many sites as it can (a
    /// later failure at a site the earlier builder knows would not be counted), or some
    /// warning was only counted (see [`groups_overflowed`](Self::groups_overflowed)).
    pub fn overflowed(&self) -> bool {
        self.groups_overflowed()
            || self.groups.iter().any(|g| {
                g.sites
                    .as_ref()
                    .is_some_and(|sites| sites.tally.len() >= SITES_TRACKED)
            })
            || self
                .session
                .as_ref()
                .is_some_and(|s| s.warnings.overflowed())
    }

    /// Keep `node_id`'s outcome (the last one given wins, in the place of the first),
    /// within `max_outcomes` tests.
    fn note_outcome(&mut self, node_id: &str, outcome: Outcome) {
        let max = self.budgets.max_outcomes;
        if max == 0 {
            return;
        }
        if let Some(known) = self.outcomes.get_mut(node_id) {
            *known = outcome.as_str();
        } else if self.outcomes.len() < max {
            self.outcomes.insert(node_id.to_owned(), outcome.as_str());
        }
    }

    /// The records pushed from now on are read from the `file`-th input file: a failure
    /// whose record has a [`SourceSpan`] is kept, if it may be listed, without its texts,
    /// which [`recover_located`](Self::recover_located) reads again from the file before
    /// [`finish`](Self::finish). Without this call texts are kept.
    pub fn reading_spans_of(&mut self, file: usize) {
        self.span_file = Some(file);
    }

    /// This builder, deciding library code, locations and group keys by `project`
    /// (docs/ENGINE.md, *Project code*); call it before the first push.
    pub fn for_project(mut self, project: Arc<ProjectCode>) -> Self {
        self.project = Some(project);
        self
    }

    /// This builder, grouping the failures `suspect` explains as one (docs/ENGINE.md,
    /// *Groups*); call it before the first push.
    pub fn with_suspect(mut self, suspect: Arc<SuspectGroup>) -> Self {
        self.suspect = Some(suspect);
        self
    }

    /// This builder, keeping the page `request` of the report logs' collected node ids
    /// (the session's `collected_ids`: docs/ENGINE.md, *Session*). The files must then be
    /// read into it one after the other, in input order ([`take_collected`]); such a
    /// builder is never merged.
    ///
    /// [`take_collected`]: Self::take_collected
    pub fn collecting(mut self, request: CollectedPage) -> Self {
        self.collected = Some(CollectedFacts::new(request));
        self
    }

    /// The collected ids read so far (None: no page asked for), out of the builder while
    /// the next file's reader adds its own to them; give them back with
    /// [`put_collected`](Self::put_collected).
    pub fn take_collected(&mut self) -> Option<CollectedFacts> {
        self.collected.take()
    }

    /// The collected ids `take_collected` gave, with the file's added.
    pub fn put_collected(&mut self, collected: Option<CollectedFacts>) {
        self.collected = collected;
    }

    /// This builder, listing only what `selection` selects (docs/ENGINE.md,
    /// *Selection*); call it before the first push.
    pub fn selecting(mut self, selection: Arc<Selection>) -> Self {
        self.matched = vec![false; selection.len()];
        self.selection = Some(selection);
        self
    }

    /// True when `id` is listed: no selection, or some entry selects it (and then every
    /// such entry is marked matched).
    fn select_marking(&mut self, id: &str) -> bool {
        match &self.selection {
            None => true,
            Some(selection) => {
                let matched = &mut self.matched;
                selection.visit_matches(id, |i| matched[i] = true)
            }
        }
    }

    /// True when some failure joined `gother` because the group table was full. Then
    /// [`merge`](Self::merge) of this builder into an earlier one is not exact (the
    /// keys of those failures are not kept): feed its records again instead.
    pub fn groups_overflowed(&self) -> bool {
        self.other.count > 0
    }

    /// Add one record, in report order.
    pub fn push(&mut self, item: Item) {
        let seq = self.seq;
        self.seq += 1;
        match item {
            Item::Test(record) => self.push_test(record, seq),
            Item::CollectionError(record) => self.push_collection_error(record),
        }
    }

    fn push_test(&mut self, record: TestRecord, seq: u64) {
        let outcome = record.outcome();
        if record.subtest.is_some() {
            self.push_subtest(record, seq);
            return;
        }
        self.counts.passed_with_failed_subtests += u64::from(record.passed_with_failed_subtests);
        self.note_outcome(&record.node_id, outcome);
        match outcome {
            Outcome::Passed => self.counts.passed += 1,
            Outcome::Failed => self.counts.failed += 1,
            Outcome::Error => self.counts.errors += 1,
            Outcome::Skipped => self.counts.skipped += 1,
            Outcome::XFailed => self.counts.xfailed += 1,
            Outcome::XPassed => self.counts.xpassed += 1,
        }
        self.counts.flaky += u64::from(record.flaky);
        self.duration_us = self.duration_us.saturating_add(record.duration_us);
        if outcome.is_problem() {
            if self.select_marking(&record.node_id) {
                self.push_failure(record, seq);
            }
        } else {
            self.consider_slow(record.duration_us, seq, record.node_id);
        }
    }

    /// One subtest report (docs/ENGINE.md, *Subtests*): counted apart from the tests; a
    /// failed one is listed like a failure of its test, never among the slowest.
    fn push_subtest(&mut self, record: TestRecord, seq: u64) {
        if !record.outcome().is_problem() {
            self.counts.subtests_passed += 1;
            return;
        }
        self.counts.subtests_failed += 1;
        self.duration_us = self.duration_us.saturating_add(record.duration_us);
        if self.select_marking(&record.node_id) {
            self.push_failure(record, seq);
        }
    }

    fn consider_slow(&mut self, duration_us: u64, seq: u64, node_id: String) {
        let cap = self.budgets.max_slowest;
        if duration_us == 0 || cap == 0 {
            return;
        }
        // Later records lose ties, so only a strictly larger duration gets in once full.
        if self.slowest.len() == cap && self.slowest[cap - 1].duration_us >= duration_us {
            return;
        }
        // Checked last: the cheap tests above turn most records away.
        if self
            .selection
            .as_ref()
            .is_some_and(|s| !s.selects(&node_id))
        {
            return;
        }
        let at = self
            .slowest
            .partition_point(|s| s.duration_us >= duration_us);
        self.slowest.insert(
            at,
            Slow {
                duration_us,
                seq,
                node_id,
            },
        );
        self.slowest.truncate(cap);
    }

    fn push_failure(&mut self, mut record: TestRecord, seq: u64) {
        self.failures_total += 1;
        self.text_bytes_omitted = self
            .text_bytes_omitted
            .saturating_add(record.text_bytes_omitted);
        self.output_bytes_omitted = self
            .output_bytes_omitted
            .saturating_add(record.output_bytes_omitted);
        read_doctest(&mut record);
        let text = record.text.take().unwrap_or_default();
        let project = self.project.clone();
        let failure = Described::of(&record, &text, project.as_deref(), &mut self.kinds);
        let (exception, line) = (failure.exception, failure.line);
        let group = match &self.last_subtest {
            // a test whose failure only says its subtests failed: the cause is theirs
            Some((node_id, group))
                if record.subtest.is_none()
                    && exception.is_none()
                    && *node_id == record.node_id
                    && is_subtests_marker(line) =>
            {
                let group = *group;
                self.join_group(group, seq, &record.node_id);
                group
            }
            _ => self.add_to_group(exception, line, &failure.frames, seq, &record.node_id),
        };
        if record.subtest.is_some() {
            self.last_subtest = Some((record.node_id.clone(), group));
        }
        let new_group = match group {
            GroupRef::Tracked(i) => self.groups[i].first_seq == seq,
            GroupRef::Other => self.other.first_seq == seq,
        };
        if new_group && group == GroupRef::Other {
            let listed = self.listed(&record, seq, &failure, &text, group);
            self.other.representative = Representative::Listed(Box::new(listed));
        }
        let early = self.failures.len() < self.budgets.failures_listed;
        let first_of_tracked = match group {
            GroupRef::Tracked(i) => new_group.then_some(i),
            GroupRef::Other => None,
        };
        if !early && first_of_tracked.is_none() {
            if record.subtest.is_none() {
                self.consider_slow(record.duration_us, seq, record.node_id);
            }
            return;
        }
        if record.subtest.is_none() {
            self.consider_slow(record.duration_us, seq, record.node_id.clone());
        }
        let span = match (self.span_file, record.source) {
            (Some(file), Some(span)) => Some(SourceSpan { file, ..span }),
            _ => None,
        };
        if let (Some(i), Some(span)) = (first_of_tracked, span) {
            // It can be read again, if its group is listed: keep where and what it says.
            let kept = Representative::Located(LocatedFailure::of(&record, span));
            self.keep_representative(i, kept);
            if !early {
                return;
            }
        }
        record.text = Some(text);
        exact_strings(&mut record);
        if let (Some(i), None) = (first_of_tracked, span) {
            // Cut only if its group is listed: keep the record raw while there is room.
            let raw = match early {
                true => record.clone(),
                false => std::mem::take(&mut record),
            };
            self.keep_representative(i, Representative::Pending(Box::new(raw)));
        }
        if early {
            // Cut only if it is shown.
            let record = Box::new(record);
            self.failures.push(EarlyFailure { seq, group, record });
        }
    }

    /// Keep `kept` as the first failure of group `i` if there is room for it within
    /// [`PENDING_BYTES`] (made by dropping older ones), else none.
    fn keep_representative(&mut self, i: usize, kept: Representative) {
        let bytes = kept_bytes(&kept);
        if self.pending_bytes + bytes > PENDING_BYTES {
            self.evict_pending(bytes);
        }
        self.groups[i].representative = if self.pending_bytes + bytes <= PENDING_BYTES {
            self.pending_bytes += bytes;
            self.pending_order.push_back(i);
            kept
        } else {
            Representative::Missing
        };
    }

    /// A failure as listed: its location (the deepest frame of project code, else the
    /// record's, else the text's last location line) and its cut traceback.
    fn listed(
        &self,
        record: &TestRecord,
        seq: u64,
        failure: &Described<'_>,
        text: &str,
        group: GroupRef,
    ) -> ListedFailure {
        let exception = failure.exception;
        let reported = record.path.as_deref().map(|path| (path, record.line));
        let (location, traceback, traceback_omitted) = self.located_and_cut(
            text,
            failure.frames.code,
            reported,
            Some((&record.node_id, exception, record.frames.as_deref())),
        );
        let message = capped(failure.line, self.budgets.max_message_chars);
        let message_in_traceback = says_message(&traceback, exception, &message);
        ListedFailure {
            seq,
            node_id: record.node_id.clone(),
            subtest: record.subtest.clone(),
            outcome: record.outcome(),
            phase: record.phase,
            exception: exception.map(str::to_owned),
            message,
            message_in_traceback,
            location,
            traceback,
            traceback_omitted,
            stdout: non_empty(record.stdout.clone()),
            stderr: non_empty(record.stderr.clone()),
            log: non_empty(record.log.clone()),
            text_bytes_omitted: record.text_bytes_omitted,
            output_bytes_omitted: record.output_bytes_omitted,
            group,
            group_message: None,
        }
    }

    /// `listed`, its message line `line` (not capped), as its group's first failure.
    fn as_first_of_group(&self, mut listed: ListedFailure, line: &str) -> ListedFailure {
        listed.group_message = Some(normalize_capped(line, self.budgets.max_message_chars));
        listed
    }

    /// Where a failure or collection error happened and its cut traceback (lines, lines
    /// omitted): the deepest project frame `code`, else the report's own `reported`
    /// path and line, else the text's last location line, else a fixture lookup error's
    /// closing line ([`fixture_location`]); the path as shown
    /// (`display_path`). `failure`: a failure's (node id, exception, frames as data), whose traceback is
    /// also tidied by the shown-traceback rules ([`shown_traceback_for`]); None for a
    /// collection error (its traceback is only cut).
    fn located_and_cut(
        &self,
        text: &str,
        code: Option<FrameLine<'_>>,
        reported: Option<(&str, Option<u64>)>,
        failure: Option<(&str, Option<&str>, Option<&ReprFrames>)>,
    ) -> (Option<(String, Option<u64>)>, String, u64) {
        let project = self.project.as_deref();
        let shown = |path: &str| display_path(path, project).into_owned();
        let location = match (code, reported) {
            (Some((path, line)), _) => Some((shown(path), Some(line))),
            (None, Some((path, line))) => Some((shown(path), line)),
            (None, None) => location_from_text(text)
                .or_else(|| {
                    fixture_location(text).map(|(path, line)| (path.to_owned(), Some(line)))
                })
                .map(|(path, line)| (shown(&path), line)),
        };
        let b = &self.budgets;
        let (traceback, omitted) = match failure {
            None => cut_traceback_for(
                text,
                b.max_traceback_lines,
                b.max_line_chars,
                b.max_frame_context_lines,
                project,
            ),
            Some((node_id, exception, frames)) => shown_traceback_for(
                text,
                b.max_traceback_lines,
                b.max_line_chars,
                b.max_frame_context_lines,
                project,
                FailureContext {
                    node_id,
                    location: location.as_ref().map(|(path, line)| (path.as_str(), *line)),
                    exception,
                    frames,
                },
            ),
        };
        (location, traceback, omitted)
    }

    /// `path:line` of a frame, its path as shown, appended to `out` (without `format!`:
    /// this runs once per failure).
    fn write_frame_at(&self, out: &mut String, frame: FrameLine<'_>) {
        out.push_str(&display_path(frame.0, self.project.as_deref()));
        out.push(':');
        out.push_str(decimal_u64(frame.1, &mut [0u8; 24]));
    }

    /// Count one more failure in `group` (an existing group, or `gother`).
    fn join_group(&mut self, group: GroupRef, seq: u64, node_id: &str) {
        let max_examples = self.budgets.max_examples;
        match group {
            GroupRef::Tracked(i) => {
                let group = &mut self.groups[i];
                group.count += 1;
                push_example(&mut group.examples, max_examples, seq, node_id);
            }
            GroupRef::Other => self.other.count_one(seq, node_id, max_examples),
        }
    }

    /// The suspect's group key for a failure of `node_id` it explains: one of its tests
    /// with no frame of the project's code under test, or a doctest's wrong value.
    fn suspect_key(
        &self,
        node_id: &str,
        exception: Option<&str>,
        frames: &DeepestFrames<'_>,
    ) -> Option<String> {
        let suspect = self.suspect.as_ref()?;
        let explained = !frames.under_test || exception == Some(DOCTEST_FAILURE);
        (explained && suspect.node_ids.contains(node_id))
            .then(|| format!("\0suspect {}", suspect.key))
    }

    /// Count a failure in its group (creating it, or `gother` when the table is full).
    /// The key (docs/ENGINE.md, *Groups*) is a fingerprint: the exception and the
    /// innermost frame of the project's code under test, else of its tests; without a
    /// frame, the normalised message (the whole line normalised, then capped like a
    /// message) with its values folded. A group lists its first failure's normalised
    /// message, worked out only if the group is listed ([`Self::as_first_of_group`]).
    fn add_to_group(
        &mut self,
        exception: Option<&str>,
        message: &str,
        frames: &DeepestFrames<'_>,
        seq: u64,
        node_id: &str,
    ) -> GroupRef {
        let max_message_chars = self.budgets.max_message_chars;
        let exception = exception.unwrap_or("");
        let mut at = std::mem::take(&mut self.scratch_at);
        at.clear();
        let (at, folded) = match frames.key {
            // a fingerprint: the exception and where it was raised in the project's code
            // (its code under test first, else the test), whatever the values in the message
            Some(frame) => {
                self.write_frame_at(&mut at, frame);
                (Some(at), String::new())
            }
            // no frame: the message is all there is, its values folded
            None => {
                let line = normalize_capped(message, max_message_chars);
                self.scratch_at = at;
                (None, fold_values(&line))
            }
        };
        let group = match self.suspect_key(node_id, Some(exception), frames) {
            // the suspect's group, whatever its message or assertion site (the key it had)
            Some(key) => {
                let site = key_hash(Some(exception), &folded, at.as_deref());
                self.group_of("", Some(&key), "", seq, node_id, Some((site, exception)))
            }
            None => self.group_of(exception, at.as_deref(), &folded, seq, node_id, None),
        };
        if let Some(at) = at {
            self.scratch_at = at;
        }
        group
    }

    /// Count a failure in the group of key (`exception`, `at`, `folded`), creating it
    /// (or `gother` when the table is full); `site`: the hash of the key it had and its
    /// exception, when the key is the suspect's (its group names each site's first
    /// failure first, and is labelled by its sites: [`Sites::lead_seq`]).
    fn group_of(
        &mut self,
        exception: &str,
        at: Option<&str>,
        folded: &str,
        seq: u64,
        node_id: &str,
        site: Option<(u64, &str)>,
    ) -> GroupRef {
        let mut key = std::mem::take(&mut self.scratch_key);
        encode_key(&mut key, exception, at, folded);
        let max_examples = self.budgets.max_examples;
        let found = self.group_index.get(key.as_slice()).copied();
        let index = match found {
            Some(index) => index,
            None if self.groups.len() < self.group_limit => {
                self.new_group(&key, exception, folded, at, seq)
            }
            None => {
                self.other.fold_cause(key_hash(Some(exception), folded, at));
                self.other.count_one(seq, node_id, max_examples);
                self.scratch_key = key;
                return GroupRef::Other;
            }
        };
        self.scratch_key = key;
        let group = &mut self.groups[index];
        group.count += 1;
        push_example(&mut group.examples, max_examples, seq, node_id);
        if let Some((site, exception)) = site {
            let sites = group.sites.get_or_insert_with(Box::default);
            sites.count(site, exception, seq, node_id, max_examples);
        }
        GroupRef::Tracked(index)
    }

    /// Track a new group under `key`; its index. Out of line and cold (at most
    /// [`MAX_TRACKED_GROUPS`] times a run): the code of every failure's path stays small.
    #[cold]
    #[inline(never)]
    fn new_group(
        &mut self,
        key: &[u8],
        exception: &str,
        folded: &str,
        at: Option<&str>,
        seq: u64,
    ) -> usize {
        let hash = key_hash(Some(exception), folded, at);
        self.groups.push(Group {
            sites: None,
            hash,
            count: 0,
            first_seq: seq,
            lead_seq: seq,
            examples: Vec::new(),
            representative: Representative::Missing,
        });
        self.group_index.insert(key.into(), self.groups.len() - 1);
        self.groups.len() - 1
    }

    fn push_collection_error(&mut self, record: CollectionErrorRecord) {
        self.counts.errors += 1;
        if !self.select_marking(&record.path) {
            return;
        }
        self.collection_total += 1;
        self.text_bytes_omitted = self
            .text_bytes_omitted
            .saturating_add(record.text_bytes_omitted);
        if self.collection_errors.len() < self.budgets.max_collection_errors {
            // described, located and cut like a failure (its text is pytest's short-style
            // traceback): a chained one by its root cause (docs/ENGINE.md, *Chained exceptions*)
            let text = record.text.unwrap_or_default();
            let project = self.project.clone();
            let FailureFrames { frames, root } =
                FailureFrames::of(&text, project.as_deref(), &mut self.kinds);
            let (exception, line) = match root.map(|root| describe(None, None, Some(root))) {
                Some((Some(exception), line)) => (Some(exception), line),
                _ => describe(
                    record.exception.as_deref(),
                    record.message.as_deref(),
                    Some(&text),
                ),
            };
            let (exception, message) = (
                exception.map(str::to_owned),
                capped(line, self.budgets.max_message_chars),
            );
            let code = frames.code;
            let (location, traceback, traceback_omitted) =
                self.located_and_cut(&text, code, None, None);
            self.collection_errors.push(ListedCollectionError {
                path: record.path,
                exception,
                message,
                location,
                traceback,
                traceback_omitted,
                text_bytes_omitted: record.text_bytes_omitted,
            });
        }
    }

    /// Append `other`, whose records come after this builder's in input order; the
    /// result equals pushing all records into one builder, provided
    /// `other.groups_overflowed()` is false (else its `gother` failures, whose keys
    /// are gone, stay in `gother` even when this builder tracks their key).
    pub fn merge(&mut self, other: SummaryBuilder) {
        // A page of collected ids is exact only when the files are read in order into one
        // builder (`collecting`): such builders are never merged.
        debug_assert!(self.collected.is_none() && other.collected.is_none());
        let offset = self.seq;
        let max_examples = self.budgets.max_examples;
        self.seq += other.seq;
        let c = other.counts;
        self.counts.passed += c.passed;
        self.counts.failed += c.failed;
        self.counts.errors += c.errors;
        self.counts.skipped += c.skipped;
        self.counts.xfailed += c.xfailed;
        self.counts.xpassed += c.xpassed;
        self.counts.flaky += c.flaky;
        self.counts.subtests_passed += c.subtests_passed;
        self.counts.subtests_failed += c.subtests_failed;
        self.counts.passed_with_failed_subtests += c.passed_with_failed_subtests;
        self.duration_us = self.duration_us.saturating_add(other.duration_us);
        self.truncated.extend(other.truncated.iter().cloned());
        if let Some(facts) = other.session {
            self.add_session(facts);
        }
        for (node_id, outcome) in other.outcomes {
            if let Some(known) = self.outcomes.get_mut(&node_id) {
                *known = outcome;
            } else if self.outcomes.len() < self.budgets.max_outcomes {
                self.outcomes.insert(node_id, outcome);
            }
        }
        self.known_session_us = self.known_session_us.saturating_add(other.known_session_us);
        self.known_tests_us = self.known_tests_us.saturating_add(other.known_tests_us);
        self.text_bytes_omitted = self
            .text_bytes_omitted
            .saturating_add(other.text_bytes_omitted);
        self.output_bytes_omitted = self
            .output_bytes_omitted
            .saturating_add(other.output_bytes_omitted);
        for (mine, theirs) in self.matched.iter_mut().zip(&other.matched) {
            *mine |= theirs;
        }

        // Groups, in other's first-appearance order: the order sequential pushes
        // would have met their keys.
        let shift = |examples: Examples| -> Examples {
            examples.into_iter().map(|(s, n)| (s + offset, n)).collect()
        };
        // A representative moved here: seq shifted, a raw one kept while there is room.
        let mut pending_bytes = self.pending_bytes;
        let mut moved = |representative: Representative, group: GroupRef| match representative {
            Representative::Listed(mut f) => {
                f.seq += offset;
                f.group = group;
                Representative::Listed(f)
            }
            kept @ (Representative::Pending(_) | Representative::Located(_)) => {
                let bytes = kept_bytes(&kept);
                if pending_bytes + bytes <= PENDING_BYTES {
                    pending_bytes += bytes;
                    kept
                } else {
                    Representative::Missing
                }
            }
            Representative::Missing => Representative::Missing,
        };
        let mut remap: Vec<GroupRef> = Vec::with_capacity(other.groups.len());
        // the other builder's keys, by group
        let mut keys: Vec<Option<Box<[u8]>>> = vec![None; other.groups.len()];
        for (key, index) in other.group_index {
            keys[index] = Some(key);
        }
        for (group, key) in other.groups.into_iter().zip(keys) {
            let key = key.expect("every tracked group is in the index");
            let examples = shift(group.examples);
            if let Some(&index) = self.group_index.get(&key) {
                let mine = &mut self.groups[index];
                mine.count += group.count;
                merge_examples(&mut mine.examples, examples, max_examples);
                if let Some(theirs) = group.sites {
                    // as if read after these
                    let sites = mine.sites.get_or_insert_with(Box::default);
                    sites.absorb(theirs.shifted(offset), max_examples);
                }
                remap.push(GroupRef::Tracked(index));
            } else if self.groups.len() < self.group_limit {
                let index = self.groups.len();
                self.group_index.insert(key, index);
                self.groups.push(Group {
                    sites: group.sites.map(|sites| Box::new(sites.shifted(offset))),
                    first_seq: group.first_seq + offset,
                    lead_seq: group.lead_seq + offset,
                    examples,
                    representative: moved(group.representative, GroupRef::Tracked(index)),
                    ..group
                });
                remap.push(GroupRef::Tracked(index));
            } else {
                self.other.fold_cause(group.hash);
                self.other.absorb(
                    group.count,
                    group.first_seq + offset,
                    examples,
                    max_examples,
                    moved(group.representative, GroupRef::Other),
                );
                remap.push(GroupRef::Other);
            }
        }
        if other.other.count > 0 {
            let o = other.other;
            for &hash in &o.causes {
                self.other.fold_cause(hash);
            }
            self.other.more_causes |= o.more_causes;
            self.other.absorb(
                o.count,
                o.first_seq + offset,
                shift(o.examples),
                max_examples,
                moved(o.representative, GroupRef::Other),
            );
        }
        self.pending_bytes = pending_bytes;

        self.failures_total += other.failures_total;
        let room = self
            .budgets
            .failures_listed
            .saturating_sub(self.failures.len());
        for mut failure in other.failures.into_iter().take(room) {
            failure.seq += offset;
            failure.group = match failure.group {
                GroupRef::Tracked(index) => remap[index],
                GroupRef::Other => GroupRef::Other,
            };
            self.failures.push(failure);
        }

        self.collection_total += other.collection_total;
        let room = self
            .budgets
            .max_collection_errors
            .saturating_sub(self.collection_errors.len());
        self.collection_errors
            .extend(other.collection_errors.into_iter().take(room));

        for slow in other.slowest {
            self.consider_slow(slow.duration_us, slow.seq + offset, slow.node_id);
        }
    }

    /// Make room for `bytes` of raw first failures by dropping those of groups that still
    /// have one failure, oldest first (a group that never grew is the least likely to be
    /// listed; a dropped one that is listed after all is read again). Groups that grew
    /// keep theirs.
    #[cold]
    #[inline(never)]
    fn evict_pending(&mut self, bytes: usize) {
        while self.pending_bytes + bytes > PENDING_BYTES {
            let Some(i) = self.pending_order.pop_front() else {
                break;
            };
            let group = &mut self.groups[i];
            if group.count > 1 {
                // It keeps its record for good (counts only grow): out of the queue, so
                // that no later eviction walks past it again.
                continue;
            }
            let dropped = std::mem::replace(&mut group.representative, Representative::Missing);
            self.pending_bytes -= kept_bytes(&dropped);
        }
    }

    /// The groups a summary lists, in order (largest first, ties by first appearance;
    /// `gother` takes part): (count, first seq, group), and how many there are in all.
    fn listed_order(&self) -> (Vec<(u64, u64, GroupRef)>, u64) {
        let mut order: Vec<(u64, u64, GroupRef)> = self
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| (g.count, g.first_seq, GroupRef::Tracked(i)))
            .collect();
        if self.other.count > 0 {
            order.push((self.other.count, self.other.first_seq, GroupRef::Other));
        }
        let total = order.len() as u64;
        // First appearances differ, so this is a total order: the `max_groups` first are
        // picked out, then only they are sorted (a report can have thousands of groups).
        let largest_first =
            |a: &(u64, u64, GroupRef), b: &(u64, u64, GroupRef)| b.0.cmp(&a.0).then(a.1.cmp(&b.1));
        let listed = self.budgets.max_groups;
        if listed == 0 {
            order.clear();
        } else if order.len() > listed {
            order.select_nth_unstable_by(listed - 1, largest_first);
            order.truncate(listed);
        }
        order.sort_by(largest_first);
        (order, total)
    }

    /// The sequence number of `group`'s lead (its first failure but in the suspect's
    /// group, once [`settle_leads`](Self::settle_leads) ran).
    fn lead_seq(&self, group: GroupRef) -> u64 {
        match group {
            GroupRef::Tracked(i) => self.groups[i].lead_seq,
            GroupRef::Other => self.other.first_seq,
        }
    }

    /// Label each group with sites by its lead (docs/ENGINE.md, *Groups*, label;
    /// [`Sites::lead_seq`]): when that is not its first failure, its first failure
    /// kept is given up for the lead, taken from the first failures kept raw when it is
    /// one of them, else read again from the files
    /// ([`missing_representatives`](Self::missing_representatives)). Call it after the
    /// last push or merge; calling it again changes nothing.
    fn settle_leads(&mut self) {
        for i in 0..self.groups.len() {
            let group = &self.groups[i];
            let Some(lead) = group.sites.as_ref().and_then(|sites| sites.lead_seq()) else {
                continue;
            };
            if lead == group.lead_seq {
                continue;
            }
            let kept = self.failures.iter().find(|f| f.seq == lead);
            let representative = match kept {
                Some(f) => Representative::Pending(f.record.clone()),
                None => Representative::Missing,
            };
            let bytes = kept_bytes(&representative);
            let group = &mut self.groups[i];
            group.lead_seq = lead;
            let dropped = std::mem::replace(&mut group.representative, representative);
            self.pending_bytes = self.pending_bytes - kept_bytes(&dropped) + bytes;
        }
    }

    fn representative(&self, group: GroupRef) -> &Representative {
        match group {
            GroupRef::Tracked(i) => &self.groups[i].representative,
            GroupRef::Other => &self.other.representative,
        }
    }

    fn representative_mut(&mut self, group: GroupRef) -> &mut Representative {
        match group {
            GroupRef::Tracked(i) => &mut self.groups[i].representative,
            GroupRef::Other => &mut self.other.representative,
        }
    }

    /// A raw failure, listed (as its group's first failure when `first_of_group`).
    fn listed_from(
        &mut self,
        record: &TestRecord,
        seq: u64,
        group: GroupRef,
        first_of_group: bool,
    ) -> ListedFailure {
        let text = record.text.as_deref().unwrap_or("");
        let project = self.project.clone();
        let failure = Described::of(record, text, project.as_deref(), &mut self.kinds);
        let listed = self.listed(record, seq, &failure, text, group);
        match first_of_group {
            true => self.as_first_of_group(listed, failure.line),
            false => listed,
        }
    }

    /// Read the listed groups' first failures kept by their spans again: `read` returns
    /// the record a [`SourceSpan`] holds (None when it cannot be read). A record read
    /// that does not say what the kept one said ([`what_it_says`]: the file changed) is
    /// not taken, and that first failure is missing
    /// ([`missing_representatives`](Self::missing_representatives)). Call it after the
    /// last push or merge.
    pub fn recover_located(&mut self, read: &mut dyn FnMut(&SourceSpan) -> Option<TestRecord>) {
        self.settle_leads();
        let (order, _) = self.listed_order();
        for (_, _, group) in order {
            let slot = self.representative_mut(group);
            if !matches!(slot, Representative::Located(_)) {
                continue;
            }
            let Representative::Located(located) = std::mem::replace(slot, Representative::Missing)
            else {
                unreachable!("checked just above")
            };
            let again = read(&located.span).map(|mut again| {
                read_doctest(&mut again);
                again
            });
            if let Some(record) = again.and_then(|again| located.take(again)) {
                *self.representative_mut(group) = Representative::Pending(Box::new(record));
            }
        }
    }

    /// True when a listed group's first failure was not kept (more raw first failures
    /// than [`PENDING_BYTES`]) or could not be read again from its span, or its lead is
    /// another failure the builder did not keep (`settle_leads`): then feed every
    /// file again, in order, to [`recover`](Self::recover) before
    /// [`finish`](Self::finish). One still kept without its texts
    /// ([`recover_located`](Self::recover_located) not called) is read that way too.
    pub fn missing_representatives(&mut self) -> bool {
        self.settle_leads();
        let (order, _) = self.listed_order();
        for (_, _, group) in order {
            let lead_seq = self.lead_seq(group);
            let slot = self.representative_mut(group);
            if matches!(slot, Representative::Located(_)) {
                *slot = Representative::Missing;
            }
            if matches!(slot, Representative::Missing) {
                let index = match group {
                    GroupRef::Tracked(i) => i,
                    GroupRef::Other => usize::MAX,
                };
                self.recovering.insert(lead_seq, index);
            }
        }
        !self.recovering.is_empty()
    }

    /// The `seq`-th record of the input again (counting from 0 over all files, as
    /// pushed): a listed group's missing first failure (or lead) is taken from it.
    pub fn recover(&mut self, seq: u64, item: Item) {
        let Some(&index) = self.recovering.get(&seq) else {
            return;
        };
        let Item::Test(mut record) = item else {
            return;
        };
        let group = if index == usize::MAX {
            GroupRef::Other
        } else {
            GroupRef::Tracked(index)
        };
        read_doctest(&mut record);
        record.text.get_or_insert_with(String::new);
        let listed = self.listed_from(&record, seq, group, true);
        *self.representative_mut(group) = Representative::Listed(Box::new(listed));
    }

    /// The canonical summary JSON bytes (docs/ENGINE.md, *Summary JSON*).
    pub fn finish(mut self, format: Format, files: &[String]) -> Vec<u8> {
        self.settle_leads();
        // The listed groups' raw leads are cut now (only theirs).
        let (order, groups_total) = self.listed_order();
        for &(_, _, group) in &order {
            let lead_seq = self.lead_seq(group);
            let representative =
                std::mem::replace(self.representative_mut(group), Representative::Missing);
            *self.representative_mut(group) = match representative {
                Representative::Pending(record) => Representative::Listed(Box::new(
                    self.listed_from(&record, lead_seq, group, true),
                )),
                other => other,
            };
        }
        // Failures: one lead per listed group (largest first), then the first
        // others in report order, within failures_listed; only those others are cut.
        let firsts = order
            .iter()
            .filter_map(|&(_, _, group)| self.representative(group).listed())
            .take(self.budgets.failures_listed);
        let shown: std::collections::HashSet<u64> = firsts.map(|f| f.seq).collect();
        let room = self.budgets.failures_listed - shown.len();
        let early = std::mem::take(&mut self.failures);
        let others: Vec<ListedFailure> = early
            .iter()
            .filter(|f| !shown.contains(&f.seq))
            .take(room)
            .map(|f| self.listed_from(&f.record, f.seq, f.group, false))
            .collect();
        let b = &self.budgets;
        let c = self.counts;
        let counts = CountsJson {
            total: c.passed + c.failed + c.errors + c.skipped + c.xfailed + c.xpassed,
            passed: c.passed,
            failed: c.failed,
            errors: c.errors,
            skipped: c.skipped,
            xfailed: c.xfailed,
            xpassed: c.xpassed,
            flaky: c.flaky,
            subtests_passed: c.subtests_passed,
            subtests_failed: c.subtests_failed,
            passed_with_failed_subtests: c.passed_with_failed_subtests,
        };

        let groups: Vec<GroupJson<'_>> = order
            .iter()
            .map(|&(count, _, group)| match group {
                GroupRef::Tracked(i) => {
                    let g = &self.groups[i];
                    // A listed group's lead is listed (unless it was lost with
                    // a file that changed while it was read: no exception nor message).
                    let listed = g.representative.listed();
                    GroupJson {
                        id: group_id(g.hash),
                        count,
                        exception: listed.and_then(|f| f.exception.as_deref()),
                        message: listed
                            .and_then(|f| f.group_message.clone())
                            .unwrap_or_default(),
                        location: location_json(&g.representative),
                        examples: g.listed_examples(self.budgets.max_examples),
                    }
                }
                GroupRef::Other => GroupJson {
                    id: OTHER_GROUP_ID.to_owned(),
                    count,
                    exception: None,
                    message: self.other.message(),
                    location: location_json(&self.other.representative),
                    examples: self.other.examples.iter().map(|e| &*e.1).collect(),
                },
            })
            .collect();

        let mut listed: Vec<&ListedFailure> = order
            .iter()
            .filter_map(|&(_, _, group)| self.representative(group).listed())
            .take(b.failures_listed)
            .collect();
        listed.extend(&others);
        let mut failures: Vec<FailureJson<'_>> = listed
            .iter()
            .map(|f| FailureJson {
                node_id: &f.node_id,
                subtest: f.subtest.as_deref(),
                outcome: f.outcome.as_str(),
                phase: f.phase.map(Phase::as_str),
                exception: f.exception.as_deref(),
                message: &f.message,
                message_in_traceback: f.message_in_traceback,
                location: f
                    .location
                    .as_ref()
                    .map(|(path, line)| LocationJson { path, line: *line }),
                traceback: &f.traceback,
                traceback_lines_omitted: f.traceback_omitted,
                stdout: f.stdout.as_deref(),
                stderr: f.stderr.as_deref(),
                log: f.log.as_deref(),
                text_bytes_omitted: f.text_bytes_omitted,
                output_bytes_omitted: f.output_bytes_omitted,
                group: match f.group {
                    GroupRef::Tracked(i) => group_id(self.groups[i].hash),
                    GroupRef::Other => OTHER_GROUP_ID.to_owned(),
                },
                same_as: None,
            })
            .collect();
        mark_repeats(&mut failures);

        let summary = SummaryJson {
            format: format.as_str(),
            files,
            counts,
            duration_s: self
                .known_session_us
                .saturating_add(self.duration_us.saturating_sub(self.known_tests_us))
                as f64
                / 1e6,
            tests_duration_s: self.duration_us as f64 / 1e6,
            failures,
            groups,
            collection_errors: self
                .collection_errors
                .iter()
                .map(|e| CollectionErrorJson {
                    path: &e.path,
                    exception: e.exception.as_deref(),
                    message: &e.message,
                    location: e
                        .location
                        .as_ref()
                        .map(|(path, line)| LocationJson { path, line: *line }),
                    traceback: &e.traceback,
                    traceback_lines_omitted: e.traceback_omitted,
                    text_bytes_omitted: e.text_bytes_omitted,
                })
                .collect(),
            slowest: self
                .slowest
                .iter()
                .map(|s| SlowJson {
                    node_id: &s.node_id,
                    duration_s: s.duration_us as f64 / 1e6,
                })
                .collect(),
            omitted: OmittedJson {
                failures: self.failures_total - listed.len() as u64,
                groups: groups_total - order.len() as u64,
                collection_errors: self.collection_total - self.collection_errors.len() as u64,
                traceback_lines: listed.iter().map(|f| f.traceback_omitted).sum::<u64>()
                    + self
                        .collection_errors
                        .iter()
                        .map(|e| e.traceback_omitted)
                        .sum::<u64>(),
                output_bytes: self.output_bytes_omitted,
                text_bytes: self.text_bytes_omitted,
            },
            unmatched: self
                .selection
                .as_ref()
                .map_or_else(Vec::new, |s| s.unmatched(&self.matched)),
            truncated: &self.truncated,
            session: self.session.as_ref().map(|s| SessionJson {
                exit_status: s.exit_status,
                collected: s.collected,
                deselected: s.deselected,
                running: s
                    .running
                    .iter()
                    .map(|(node_id, started)| RunningJson {
                        node_id,
                        started: *started,
                    })
                    .collect(),
                stack_dump_armed: s.stack_dump_armed,
                warnings: s.warnings.json(b),
                collected_ids: self.collected.as_ref().map(|c| CollectedIdsJson {
                    total: c.total,
                    files: &c.files,
                    files_omitted: c.files_omitted(),
                    page: &c.page,
                }),
            }),
            outcomes: (b.max_outcomes > 0).then_some(&self.outcomes),
        };
        serde_json::to_vec(&summary).expect("a summary always serialises")
    }
}

// ---------------------------------------------------------------------------------
// The JSON shapes: fields in the documented key order.

#[derive(Serialize)]
struct SummaryJson<'a> {
    format: &'a str,
    files: &'a [String],
    counts: CountsJson,
    duration_s: f64,
    tests_duration_s: f64,
    failures: Vec<FailureJson<'a>>,
    groups: Vec<GroupJson<'a>>,
    collection_errors: Vec<CollectionErrorJson<'a>>,
    slowest: Vec<SlowJson<'a>>,
    omitted: OmittedJson,
    unmatched: Vec<&'a str>,
    truncated: &'a [String],
    session: Option<SessionJson<'a>>,
    outcomes: Option<&'a IndexMap<String, &'static str>>,
}

#[derive(Serialize)]
struct SessionJson<'a> {
    exit_status: Option<i64>,
    collected: Option<u64>,
    deselected: u64,
    running: Vec<RunningJson<'a>>,
    stack_dump_armed: bool,
    warnings: WarningsJson<'a>,
    collected_ids: Option<CollectedIdsJson<'a>>,
}

#[derive(Serialize)]
struct CollectedIdsJson<'a> {
    total: u64,
    files: &'a IndexMap<String, u64>,
    files_omitted: u64,
    page: &'a [String],
}

#[derive(Serialize)]
struct RunningJson<'a> {
    node_id: &'a str,
    started: f64,
}

#[derive(Serialize)]
struct CountsJson {
    total: u64,
    passed: u64,
    failed: u64,
    errors: u64,
    skipped: u64,
    xfailed: u64,
    xpassed: u64,
    flaky: u64,
    subtests_passed: u64,
    subtests_failed: u64,
    passed_with_failed_subtests: u64,
}

#[derive(Serialize)]
struct LocationJson<'a> {
    path: &'a str,
    line: Option<u64>,
}

#[derive(Serialize)]
struct FailureJson<'a> {
    node_id: &'a str,
    subtest: Option<&'a str>,
    outcome: &'static str,
    phase: Option<&'static str>,
    exception: Option<&'a str>,
    message: &'a str,
    message_in_traceback: bool,
    location: Option<LocationJson<'a>>,
    traceback: &'a str,
    traceback_lines_omitted: u64,
    stdout: Option<&'a str>,
    stderr: Option<&'a str>,
    log: Option<&'a str>,
    text_bytes_omitted: u64,
    output_bytes_omitted: u64,
    group: String,
    same_as: Option<&'a str>,
}

// ---------------------------------------------------------------------------------
// Repeated failures (docs/ENGINE.md, *Failures*, `same_as`).

/// Sets `same_as` of each listed failure that is the first of its group in `failures`
/// (the list's order) and whose shown texts ([`shown_shape`]) are those of an earlier
/// such failure: that failure's node id (the first one with the shape), unless it is the
/// failure's own (another subtest of the same test: a pointer to itself says nothing).
/// A later failure of a group is never marked: a reader names it by its group's entry.
fn mark_repeats<'a>(failures: &mut [FailureJson<'a>]) {
    let mut groups_seen: HashSet<String> = HashSet::new();
    let mut first_by_shape: HashMap<[Option<String>; 6], &'a str> = HashMap::new();
    for failure in failures.iter_mut() {
        if !groups_seen.insert(failure.group.clone()) {
            continue;
        }
        let first = *first_by_shape
            .entry(shown_shape(failure))
            .or_insert(failure.node_id);
        if first != failure.node_id {
            failure.same_as = Some(first);
        }
    }
}

/// What a reader shows in full of a failure, with what differs between copies of one
/// test body left out: `exception`, `message`, `traceback`, `stdout`, `stderr` and `log`,
/// each (null stays null) with the failure's own file (its node id before the first
/// `::`) written `<file>`, then each run of ASCII digits written `N`. Compared as a
/// whole, field by field, so no text can pass for another field's.
fn shown_shape(failure: &FailureJson<'_>) -> [Option<String>; 6] {
    let own_file = failure.node_id.split("::").next().unwrap_or("");
    let shape = |text: &str| {
        let text = if own_file.is_empty() {
            text.to_owned()
        } else {
            text.replace(own_file, "<file>")
        };
        Some(digits_as_n(&text))
    };
    [
        failure.exception.and_then(shape),
        shape(failure.message),
        shape(failure.traceback),
        failure.stdout.and_then(shape),
        failure.stderr.and_then(shape),
        failure.log.and_then(shape),
    ]
}

/// `text` with each run of ASCII digits (`0`-`9`, no other Unicode digit) written `N`.
fn digits_as_n(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_run = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !in_run {
                out.push('N');
            }
            in_run = true;
        } else {
            out.push(c);
            in_run = false;
        }
    }
    out
}

#[derive(Serialize)]
struct GroupJson<'a> {
    id: String,
    count: u64,
    exception: Option<&'a str>,
    message: String,
    location: Option<LocationJson<'a>>,
    examples: Vec<&'a str>,
}

/// The location of a group's representative, if any.
fn location_json(representative: &Representative) -> Option<LocationJson<'_>> {
    let (path, line) = representative.listed()?.location.as_ref()?;
    Some(LocationJson { path, line: *line })
}

#[derive(Serialize)]
struct CollectionErrorJson<'a> {
    path: &'a str,
    exception: Option<&'a str>,
    message: &'a str,
    location: Option<LocationJson<'a>>,
    traceback: &'a str,
    traceback_lines_omitted: u64,
    text_bytes_omitted: u64,
}

#[derive(Serialize)]
struct SlowJson<'a> {
    node_id: &'a str,
    duration_s: f64,
}

#[derive(Serialize)]
struct OmittedJson {
    failures: u64,
    groups: u64,
    collection_errors: u64,
    traceback_lines: u64,
    output_bytes: u64,
    text_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn test(node_id: &str, outcome: Outcome, duration_us: u64) -> TestRecord {
        TestRecord {
            node_id: node_id.into(),
            outcome: Some(outcome),
            duration_us,
            ..Default::default()
        }
    }

    fn failure(node_id: &str, message: &str, text: &str) -> Item {
        Item::Test(TestRecord {
            message: Some(message.into()),
            text: Some(text.into()),
            phase: Some(Phase::Call),
            ..test(node_id, Outcome::Failed, 1_000)
        })
    }

    fn finish_value(builder: SummaryBuilder) -> Value {
        serde_json::from_slice(&builder.finish(Format::Junit, &["r.xml".to_string()])).unwrap()
    }

    #[test]
    fn messages_and_exceptions_follow_the_documented_sources() {
        let d = |e: Option<&'static str>, m: Option<&'static str>, t: Option<&'static str>| {
            let (e, m) = describe(e, m, t);
            (e.map(str::to_owned), m.to_owned())
        };
        // The record's message, exception prefix split off.
        assert_eq!(
            d(
                None,
                Some("\n  AssertionError: assert 'a' == 'b'\n  - b\n"),
                None
            ),
            (Some("AssertionError".into()), "assert 'a' == 'b'".into())
        );
        // A known exception's prefix is removed once.
        assert_eq!(
            d(Some("KeyError"), Some("KeyError: 'x'"), None),
            (Some("KeyError".into()), "'x'".into())
        );
        assert_eq!(
            d(Some("java.lang.AssertionError"), Some("expected:<1>"), None).1,
            "expected:<1>"
        );
        // Old pytest writes the whole long representation in `message`: its E line wins.
        let long = "self = <X>\n\n>       f()\nE   ValueError: bad\n\nx.py:3: ValueError";
        assert_eq!(
            d(None, Some(long), None),
            (Some("ValueError".into()), "bad".into())
        );
        // No message: the first E line of the text, then pytest's last location line.
        let text = "    def test():\n>       assert 1 == 2\nE       assert 1 == 2\n\ntests/t.py:2: AssertionError\r\n";
        assert_eq!(
            d(None, None, Some(text)),
            (Some("AssertionError".into()), "assert 1 == 2".into())
        );
        // A line that only repeats the exception leaves an empty message.
        assert_eq!(
            d(None, None, Some("E   ValueError\n\nx.py:3: ValueError")),
            (Some("ValueError".into()), "".into())
        );
        assert_eq!(
            d(
                Some("java.lang.Error"),
                None,
                Some("java.lang.Error\n\tat x")
            ),
            (Some("java.lang.Error".into()), "".into())
        );
        // Neither: the first meaningful line of the text, no exception.
        assert_eq!(
            d(None, Some("  "), Some("\n boom \n")),
            (None, "boom".into())
        );
        assert_eq!(d(None, None, None), (None, String::new()));
        assert_eq!(trailing_exception("a:1: X"), Some("X"));
        assert_eq!(trailing_exception(":1: X"), None);
        assert_eq!(trailing_exception(" a:1: X"), None);
        assert_eq!(trailing_exception("a:1: X Y"), None);
    }

    #[test]
    fn a_small_run_gives_the_expected_summary() {
        let budgets = Budgets {
            failures_listed: 2,
            max_groups: 2,
            max_examples: 2,
            max_slowest: 3,
            ..Budgets::default()
        };
        let mut b = SummaryBuilder::new(&budgets);
        b.push(Item::Test(test("t::pass_fast", Outcome::Passed, 10)));
        b.push(Item::Test(test("t::pass_slow", Outcome::Passed, 2_500_000)));
        b.push(failure(
            "t::a",
            "ConnectionError: refused after 3 retries",
            "",
        ));
        b.push(Item::Test(TestRecord {
            flaky: true,
            ..test("t::flaky", Outcome::Passed, 2_500_000)
        }));
        b.push(failure(
            "t::b",
            "KeyError: 'x'",
            "E   KeyError\n\nt.py:9: KeyError",
        ));
        b.push(failure(
            "t::c",
            "ConnectionError: refused after 12 retries",
            "",
        ));
        b.push(failure(
            "t::d",
            "ConnectionError: refused after 1 retries",
            "",
        ));
        b.push(Item::Test(test("t::skip", Outcome::Skipped, 0)));
        b.push(failure("t::e", "OSError: disk full", ""));
        b.push(Item::CollectionError(CollectionErrorRecord {
            path: "tests/test_bad.py".into(),
            text: Some("E   ImportError: no module named x\n".into()),
            ..Default::default()
        }));
        let v = finish_value(b);
        assert_eq!(
            v["counts"],
            json!({"total": 10, "passed": 3, "failed": 5, "errors": 1, "skipped": 1, "xfailed": 0, "xpassed": 0, "flaky": 1,
                   "subtests_passed": 0, "subtests_failed": 0, "passed_with_failed_subtests": 0})
        );
        assert_eq!(v["tests_duration_s"], json!(5.005010));
        let (conn_id, _) =
            crate::group::group_key(Some("ConnectionError"), "refused after 3 retries", None);
        // The KeyError is keyed by its frame (t.py is project code, not test code).
        assert_eq!(
            v["groups"],
            json!([
                {"id": conn_id, "count": 3, "exception": "ConnectionError", "message": "refused after <n> retries",
                 "location": null, "examples": ["t::a", "t::c"]},
                {"id": crate::group::group_key(Some("KeyError"), "", Some("t.py:9")).0, "count": 1,
                 "exception": "KeyError", "message": "'x'", "location": {"path": "t.py", "line": 9},
                 "examples": ["t::b"]},
            ])
        );
        assert_eq!(v["failures"].as_array().unwrap().len(), 2);
        assert_eq!(
            v["failures"][1]["location"],
            json!({"path": "t.py", "line": 9})
        );
        // pytest's closing `t.py:9: KeyError` says the location and exception the failure
        // lists: the shown traceback leaves it out (docs/ENGINE.md, *Traceback cutting*)
        assert_eq!(v["failures"][1]["traceback"], "E   KeyError");
        assert_eq!(v["failures"][1]["traceback_lines_omitted"], 0);
        assert_eq!(v["failures"][0]["location"], Value::Null);
        assert_eq!(v["failures"][0]["group"], conn_id);
        assert_eq!(
            v["collection_errors"],
            json!([{"path": "tests/test_bad.py", "exception": "ImportError", "message": "no module named x",
                     "location": null, "traceback": "E   ImportError: no module named x",
                     "traceback_lines_omitted": 0, "text_bytes_omitted": 0}])
        );
        assert_eq!(
            v["slowest"],
            json!([
                {"node_id": "t::pass_slow", "duration_s": 2.5},
                {"node_id": "t::flaky", "duration_s": 2.5},
                {"node_id": "t::a", "duration_s": 0.001},
            ])
        );
        assert_eq!(
            v["omitted"],
            json!({"failures": 3, "groups": 1, "collection_errors": 0, "traceback_lines": 0, "output_bytes": 0, "text_bytes": 0})
        );
    }

    #[test]
    fn subtests_count_apart_and_each_failed_one_is_listed_with_its_label() {
        let mut b = SummaryBuilder::new(&Budgets::default());
        let subtest = |outcome, label: &str, text: &str| TestRecord {
            subtest: Some(label.into()),
            text: Some(text.into()),
            ..test("t.py::T::test_even", outcome, 0)
        };
        b.push(Item::Test(subtest(Outcome::Passed, "(i=0)", "")));
        b.push(Item::Test(subtest(
            Outcome::Failed,
            "(i=1)",
            "E   AssertionError: 1 is odd\n\nt.py:13: AssertionError",
        )));
        b.push(Item::Test(TestRecord {
            message: Some("contains 1 failed subtest".into()),
            passed_with_failed_subtests: true,
            ..test("t.py::T::test_even", Outcome::Failed, 7)
        }));
        b.push(Item::CollectionError(CollectionErrorRecord {
            path: "tests/test_x.py".into(),
            text: Some("tests/test_x.py:3: in <module>\n    import pkg\npkg/__init__.py:3: in load\n    raise ValueError(\"bad\")\nE   ValueError: bad".into()),
            ..Default::default()
        }));
        let v = finish_value(b);
        assert_eq!(
            v["counts"],
            json!({"total": 2, "passed": 0, "failed": 1, "errors": 1, "skipped": 0, "xfailed": 0, "xpassed": 0, "flaky": 0,
                   "subtests_passed": 1, "subtests_failed": 1, "passed_with_failed_subtests": 1})
        );
        let failures = v["failures"].as_array().unwrap();
        assert_eq!(failures.len(), 2);
        assert_eq!(failures[0]["subtest"], "(i=1)");
        assert_eq!(failures[0]["message"], "1 is odd");
        assert_eq!(failures[0]["location"], json!({"path": "t.py", "line": 13}));
        assert_eq!(failures[1]["subtest"], Value::Null);
        assert_eq!(failures[1]["message"], "contains 1 failed subtest");
        // The test that only says its subtest failed is counted in that subtest's group.
        assert_eq!(failures[1]["group"], failures[0]["group"]);
        assert_eq!(v["groups"].as_array().unwrap().len(), 1);
        assert_eq!(v["groups"][0]["count"], 2);
        // A subtest is never among the slowest: only its test is.
        assert_eq!(
            v["slowest"],
            json!([{"node_id": "t.py::T::test_even", "duration_s": 7e-6}])
        );
        assert_eq!(
            v["collection_errors"][0]["location"],
            json!({"path": "pkg/__init__.py", "line": 3})
        );
        assert_eq!(v["collection_errors"][0]["exception"], "ValueError");
    }

    #[test]
    fn key_order_and_number_forms_are_the_documented_ones() {
        let mut b = SummaryBuilder::new(&Budgets::default());
        b.push(Item::Test(test("a", Outcome::Passed, 1)));
        b.end_file(Some(3), 0);
        let out = String::from_utf8(b.finish(Format::PytestJson, &["x.json".into()])).unwrap();
        assert_eq!(
            out,
            r#"{"format":"pytest-json","files":["x.json"],"counts":{"total":1,"passed":1,"failed":0,"errors":0,"skipped":0,"xfailed":0,"xpassed":0,"flaky":0,"subtests_passed":0,"subtests_failed":0,"passed_with_failed_subtests":0},"duration_s":3e-6,"tests_duration_s":1e-6,"failures":[],"groups":[],"collection_errors":[],"slowest":[{"node_id":"a","duration_s":1e-6}],"omitted":{"failures":0,"groups":0,"collection_errors":0,"traceback_lines":0,"output_bytes":0,"text_bytes":0},"unmatched":[],"truncated":[],"session":null,"outcomes":null}"#
        );
        // Forms orjson writes for the same doubles (checked against orjson 3.x).
        for (us, text) in [
            (0u64, "0.0"),
            (123, "0.000123"),
            (1_500_000, "1.5"),
            (u64::MAX, "18446744073709.55"),
        ] {
            assert_eq!(serde_json::to_string(&(us as f64 / 1e6)).unwrap(), text);
        }
    }

    /// Records with every kind of content, so that merging touches every list.
    fn varied_records() -> Vec<Item> {
        let mut items = Vec::new();
        for i in 0..60u64 {
            let item = match i % 7 {
                0 | 3 => failure(
                    &format!("t::f{i}"),
                    &format!("ConnectionError: host {}.0.0.1 refused", i % 5 + 1),
                    "E  x\n\nt.py:1: ConnectionError",
                ),
                1 => failure(
                    &format!("t::g{i}"),
                    &format!("Error{}: boom", i % 11),
                    "boom",
                ),
                2 => Item::CollectionError(CollectionErrorRecord {
                    path: format!("c{i}.py"),
                    ..Default::default()
                }),
                4 => Item::Test(TestRecord {
                    flaky: i % 2 == 0,
                    ..test(&format!("t::p{i}"), Outcome::Passed, (i * 37) % 11)
                }),
                5 => Item::Test(TestRecord {
                    text_bytes_omitted: i,
                    output_bytes_omitted: 2 * i,
                    stdout: Some(format!("out{i}")),
                    ..test(&format!("t::e{i}"), Outcome::Error, 7)
                }),
                _ => Item::Test(test(&format!("t::s{i}"), Outcome::Skipped, i % 4)),
            };
            items.push(item);
        }
        items
    }

    fn budgets_for_merge() -> Budgets {
        Budgets {
            failures_listed: 9,
            max_groups: 4,
            max_examples: 2,
            max_slowest: 4,
            max_collection_errors: 3,
            ..Budgets::default()
        }
    }

    #[test]
    fn a_selection_lists_only_its_records_and_merges_exactly() {
        let entries: Vec<String> = [
            "t::f3", "t::g1", "c2.py", "t::e5", "t::p4", "nothing", "t::f3",
        ]
        .iter()
        .map(|e| e.to_string())
        .collect();
        let selection = Arc::new(Selection::new(&entries));
        let budgets = budgets_for_merge();
        let files = ["a".to_string()];
        let mut whole = SummaryBuilder::new(&budgets).selecting(Arc::clone(&selection));
        varied_records().into_iter().for_each(|r| whole.push(r));
        let expected = whole.finish(Format::Junit, &files);
        let v: Value = serde_json::from_slice(&expected).unwrap();
        let ids = |key: &str, field: &str| -> Vec<String> {
            v[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x[field].as_str().unwrap().to_owned())
                .collect()
        };
        assert_eq!(ids("failures", "node_id"), ["t::g1", "t::f3", "t::e5"]);
        assert_eq!(ids("collection_errors", "path"), ["c2.py"]);
        assert_eq!(v["unmatched"], json!(["t::p4", "nothing"]));
        assert_eq!(v["counts"]["total"], json!(60));
        for cut in [0, 3, 4, 30, 59] {
            let mut first = SummaryBuilder::new(&budgets).selecting(Arc::clone(&selection));
            let mut second = SummaryBuilder::new(&budgets).selecting(Arc::clone(&selection));
            for (k, record) in varied_records().into_iter().enumerate() {
                if k < cut {
                    first.push(record);
                } else {
                    second.push(record);
                }
            }
            first.merge(second);
            assert_eq!(
                first.finish(Format::Junit, &files),
                expected,
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn merge_equals_pushing_everything_into_one_builder() {
        let budgets = budgets_for_merge();
        for limit in [MAX_TRACKED_GROUPS, 6] {
            let mut whole = SummaryBuilder::with_group_limit(&budgets, limit);
            varied_records().into_iter().for_each(|r| whole.push(r));
            let expected = whole.finish(Format::Junit, &["a".into(), "b".into(), "c".into()]);
            let mut checked = 0;
            let mut overflowed_by_merging = false;
            for (cut1, cut2) in [
                (0, 0),
                (0, 60),
                (1, 2),
                (5, 40),
                (20, 21),
                (33, 59),
                (60, 60),
                (13, 47),
                (20, 40),
                (15, 35),
                (25, 45),
                (22, 41),
            ] {
                let mut parts: Vec<SummaryBuilder> = Vec::new();
                for (k, record) in varied_records().into_iter().enumerate() {
                    let part = usize::from(k >= cut1) + usize::from(k >= cut2);
                    while parts.len() <= part {
                        parts.push(SummaryBuilder::with_group_limit(&budgets, limit));
                    }
                    parts[part].push(record);
                }
                let mut parts = parts.into_iter();
                let mut merged = parts.next().unwrap();
                let first_overflowed = merged.groups_overflowed();
                let mut exact = true;
                for part in parts {
                    exact &= !part.groups_overflowed();
                    merged.merge(part);
                }
                if exact {
                    checked += 1;
                    overflowed_by_merging |= !first_overflowed && merged.groups_overflowed();
                    let got = merged.finish(Format::Junit, &["a".into(), "b".into(), "c".into()]);
                    assert_eq!(
                        String::from_utf8(got).unwrap(),
                        String::from_utf8(expected.clone()).unwrap()
                    );
                }
            }
            assert!(
                checked >= 5,
                "limit {limit}: only {checked} splits were exact"
            );
            assert_eq!(
                overflowed_by_merging,
                limit == 6,
                "merging into a full table is exercised"
            );
        }
        // The small limit does overflow: `gother` is exercised.
        let mut whole = SummaryBuilder::with_group_limit(&budgets, 6);
        varied_records().into_iter().for_each(|r| whole.push(r));
        assert!(whole.groups_overflowed());
    }

    /// A doctest's wrong value, then assertion failures at sites of several sizes, all
    /// explained by one changed line (docs/ENGINE.md, *Groups*, label).
    fn suspect_records() -> Vec<Item> {
        let doctest = |name: &str, line: u64| {
            let text = format!(
                "00{line} >>> {name}(1)\nExpected:\n    1\nGot:\n    2\n\npkg/m.py:{line}: DocTestFailure"
            );
            failure(&format!("pkg/m.py::pkg.m.{name}"), "", &text)
        };
        let assertion = |test: &str, line: u64| {
            let text = format!(
                "    def t():\n>       assert f() == 1\nE       assert 2 == 1\n\ntests/test_m.py:{line}: AssertionError"
            );
            failure(&format!("tests/test_m.py::{test}"), "", &text)
        };
        let mut items = vec![doctest("a", 3), doctest("b", 9), assertion("one", 5)];
        items.extend((0..3).map(|i| assertion(&format!("pair[{i}]"), 8)));
        items.push(assertion("two", 11));
        items.push(Item::Test(test("tests/test_m.py::ok", Outcome::Passed, 5)));
        items.extend((3..5).map(|i| assertion(&format!("pair[{i}]"), 8)));
        items
    }

    #[test]
    fn the_suspects_group_is_labelled_by_its_most_common_site_merged_or_not() {
        let budgets = Budgets {
            failures_listed: 4,
            ..Budgets::default()
        };
        let ids: HashSet<String> = suspect_records()
            .iter()
            .filter_map(|item| match item {
                Item::Test(r) if r.outcome() == Outcome::Failed => Some(r.node_id.clone()),
                _ => None,
            })
            .collect();
        let suspect = Arc::new(SuspectGroup {
            key: "pkg/m.py:1".into(),
            node_ids: ids,
        });
        let builder = || SummaryBuilder::new(&budgets).with_suspect(Arc::clone(&suspect));
        let lead = "tests/test_m.py::pair[0]";
        // The lead is one of the first failures kept: no second pass.
        let mut whole = builder();
        suspect_records().into_iter().for_each(|r| whole.push(r));
        assert!(!whole.missing_representatives());
        let expected = finish_value(whole);
        assert_eq!(expected["failures"][0]["node_id"], lead);
        assert_eq!(expected["groups"][0]["exception"], "AssertionError");
        assert_eq!(expected["groups"][0]["location"]["line"], 8);
        assert_eq!(expected["groups"][0]["count"], 9);
        // Merged at every split: the same summary.
        for cut in 1..suspect_records().len() {
            let (mut first, mut second) = (builder(), builder());
            for (k, item) in suspect_records().into_iter().enumerate() {
                match k < cut {
                    true => first.push(item),
                    false => second.push(item),
                }
            }
            first.merge(second);
            assert!(!first.missing_representatives(), "split at {cut}");
            assert_eq!(finish_value(first), expected, "split at {cut}");
        }
        // With one failure listed, the lead is not kept: it is read again.
        let one = Budgets {
            failures_listed: 1,
            ..Budgets::default()
        };
        let mut short = SummaryBuilder::new(&one).with_suspect(Arc::clone(&suspect));
        suspect_records().into_iter().for_each(|r| short.push(r));
        assert!(short.missing_representatives());
        for (seq, item) in suspect_records().into_iter().enumerate() {
            short.recover(seq as u64, item);
        }
        let recovered = finish_value(short);
        assert_eq!(recovered["failures"][0]["node_id"], lead);
        assert_eq!(recovered["groups"], expected["groups"]);
    }

    #[test]
    fn gother_counts_the_causes_it_folds_up_to_a_cap() {
        let mut other = OtherGroup::default();
        other.fold_cause(7);
        other.fold_cause(7);
        assert_eq!(other.message(), "1 other cause");
        other.fold_cause(8);
        assert_eq!(other.message(), "2 other causes");
        for hash in 0..OTHER_CAUSES_COUNTED as u64 {
            other.fold_cause(hash);
        }
        // 0..10_000 holds 7 and 8: exactly the cap, nothing past it yet
        assert_eq!(other.message(), "10000 other causes");
        other.fold_cause(3);
        assert_eq!(other.message(), "10000 other causes");
        other.fold_cause(u64::MAX);
        assert_eq!(other.message(), "more than 10000 other causes");
    }

    #[test]
    fn a_group_first_failure_whose_texts_repeat_an_earlier_one_but_for_numbers_and_its_file_is_same_as_it(
    ) {
        // One check copied into two modules with other values (one group per assertion
        // site), a different check, and a second case of the first module's test.
        let text = |file: &str, a: u32, b: u32| {
            format!(
                "    def test_sum():\n>       assert sum([{a}, 2]) == {b}\nE       assert {} == {b}\n\n{file}:2: AssertionError",
                a + 2
            )
        };
        let mut b = SummaryBuilder::new(&Budgets::default());
        b.push(failure(
            "tests/test_a.py::test_sum[1]",
            "assert 3 == 4",
            &text("tests/test_a.py", 1, 4),
        ));
        b.push(failure(
            "tests/test_b.py::test_sum",
            "assert 4 == 5",
            &text("tests/test_b.py", 2, 5),
        ));
        b.push(failure(
            "tests/test_c.py::test_other",
            "assert 5 == 1",
            "    def test_other():\n>       assert len([1, 2]) == 1\nE       assert 2 == 1\n\ntests/test_c.py:2: AssertionError",
        ));
        b.push(failure(
            "tests/test_a.py::test_sum[2]",
            "assert 4 == 4",
            &text("tests/test_a.py", 2, 4),
        ));
        let v = finish_value(b);
        let listed: Vec<(&str, &Value)> = v["failures"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (f["node_id"].as_str().unwrap(), &f["same_as"]))
            .collect();
        assert_eq!(
            listed,
            [
                ("tests/test_a.py::test_sum[1]", &Value::Null),
                (
                    "tests/test_b.py::test_sum",
                    &json!("tests/test_a.py::test_sum[1]")
                ),
                // another traceback
                ("tests/test_c.py::test_other", &Value::Null),
                // the same texts but for numbers, in the first failure's group: never
                ("tests/test_a.py::test_sum[2]", &Value::Null),
            ]
        );
        // the key follows `group`, last
        let keys: Vec<&String> = v["failures"][1].as_object().unwrap().keys().collect();
        assert_eq!(
            keys[keys.len() - 2..],
            [&"group".to_string(), &"same_as".to_string()]
        );
    }

    #[test]
    fn only_ascii_digits_are_numbers_to_a_repeat() {
        assert_eq!(digits_as_n("x12 y3.45z"), "xN yN.Nz");
        // an Arabic-Indic digit is text (Python's `\d` would take it: the pure twin does not)
        assert_eq!(digits_as_n("a\u{663}1"), "a\u{663}N");
    }
}
