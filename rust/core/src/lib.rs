//! report-core: streaming summaries of JUnit XML, pytest-json-report and pytest report-log
//! files.
//!
//! The hot path of pytest-mcp-server, free of PyO3 so that `cargo test` and fuzzers
//! drive it directly. The rules are in `docs/ENGINE.md`; `src/pytest_mcp_server/engine/pure`
//! is the Python twin that must write the same bytes.
//!
//! Entry point: [`summarize_files`]. Memory does not grow with the report: files are
//! read in chunks, and only the capped lists of the summary are kept.

// Lints in the style of pyca/cryptography's crates: every `unsafe` block says why it is
// sound (`// SAFETY: ...`), and no pre-2018 idioms (elided lifetimes in paths, ...).
#![deny(rust_2018_idioms, clippy::undocumented_unsafe_blocks)]
#![deny(unsafe_op_in_unsafe_fn)]

mod budgets;
mod cut;
mod doctest;
mod error;
mod group;
mod junit;
mod project;
mod pytest_json;
mod record;
mod reportlog;
mod select;
#[cfg(test)]
mod span_tests;
mod summary;
mod text;
mod warnings;

// The public surface, and the only one: what the PyO3 binding (rust/binding/lib.rs), the
// benches (benches/core_bench.rs) and the fuzz targets (fuzz/) use, besides the items
// defined below. The modules stay private, so that their insides change freely.
pub use budgets::Budgets;
pub use cut::cut_traceback;
pub use error::ReportError;
pub use group::{group_key, normalize_message};
pub use junit::parse_junit;
pub use project::ProjectCode;
pub use pytest_json::parse_pytest_json;
pub use record::{Item, SourceSpan, TestRecord};
pub use reportlog::{parse_reportlog, CollectedFacts, CollectedPage, ReportlogEnd, SessionFacts};
pub use select::Selection;
pub use summary::{SummaryBuilder, SuspectGroup};

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;

use rayon::prelude::*;

use error::ErrorKind;

/// A report format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Junit,
    PytestJson,
    Reportlog,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Junit => "junit",
            Format::PytestJson => "pytest-json",
            Format::Reportlog => "reportlog",
        }
    }

    /// `"auto"` -> None; `"junit"`/`"pytest-json"`/`"reportlog"` -> Some; anything else -> Err.
    pub fn parse_choice(s: &str) -> Result<Option<Format>, String> {
        match s {
            "auto" => Ok(None),
            "junit" => Ok(Some(Format::Junit)),
            "pytest-json" => Ok(Some(Format::PytestJson)),
            "reportlog" => Ok(Some(Format::Reportlog)),
            other => Err(format!(
                "format must be 'auto', 'junit', 'pytest-json' or 'reportlog', not {other:?}"
            )),
        }
    }
}

/// Bytes read to sniff the format.
pub const SNIFF_BYTES: usize = 4096;

/// The key every line of a pytest report log has (docs/ENGINE.md, *Sniffing*).
const REPORT_TYPE_KEY: &[u8] = b"\"$report_type\"";

/// The format of a file from its first bytes (docs/ENGINE.md, *Sniffing*): `{` and a
/// first line (within `head`) with the key `"$report_type"` is a report log.
pub fn sniff(path: &str, head: &[u8]) -> Result<Format, ReportError> {
    let head = if head.starts_with(b"\xef\xbb\xbf") {
        &head[3..]
    } else if head.starts_with(b"\xff\xfe") || head.starts_with(b"\xfe\xff") {
        return Ok(Format::Junit);
    } else {
        head
    };
    let start = head
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'));
    match start.map(|i| (i, head[i])) {
        None => Err(ReportError::new(
            ErrorKind::NotAReport,
            path,
            "the file is empty; expected a JUnit XML, pytest-json-report or report-log file",
        )),
        Some((_, b'<')) => Ok(Format::Junit),
        Some((i, b'{')) => {
            let rest = &head[i..];
            let first_line = &rest[..memchr::memchr(b'\n', rest).unwrap_or(rest.len())];
            if memchr::memmem::find(first_line, REPORT_TYPE_KEY).is_some() {
                Ok(Format::Reportlog)
            } else {
                Ok(Format::PytestJson)
            }
        }
        Some((_, b)) => Err(ReportError::new(
            ErrorKind::NotAReport,
            path,
            format!(
                "the file starts with {:?}, not '<' (JUnit XML) or '{{' (pytest-json-report, \
                 report log); pass a JUnit XML, pytest-json-report or report-log file",
                char::from(b)
            ),
        )
        .at("byte 0")),
    }
}

/// One file's part of a summary: its format (once sniffed) and its builder or error.
struct FilePart {
    format: Option<Format>,
    result: Result<SummaryBuilder, ReportError>,
}

/// An empty builder for these budgets, selection, project and suspect.
fn new_builder(
    budgets: &Budgets,
    selection: Option<&Arc<Selection>>,
    project: Option<&Arc<ProjectCode>>,
    suspect: Option<&Arc<SuspectGroup>>,
) -> SummaryBuilder {
    let builder = SummaryBuilder::new(budgets);
    let builder = match suspect {
        Some(s) => builder.with_suspect(Arc::clone(s)),
        None => builder,
    };
    let builder = match selection {
        Some(s) => builder.selecting(Arc::clone(s)),
        None => builder,
    };
    match project {
        Some(p) => builder.for_project(Arc::clone(p)),
        None => builder,
    }
}

/// Parse the `index`-th input file into `builder` (after the records already in it).
fn summarize_into(
    index: usize,
    path: &str,
    wanted: Option<Format>,
    budgets: &Budgets,
    mut builder: SummaryBuilder,
) -> FilePart {
    let fail = |format, err| FilePart {
        format,
        result: Err(err),
    };
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) => return fail(None, ReportError::from_io(path, &e)),
    };
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    if let Err(e) = (&mut file).take(SNIFF_BYTES as u64).read_to_end(&mut head) {
        return fail(None, ReportError::from_io(path, &e));
    }
    let found = match sniff(path, &head) {
        Ok(f) => f,
        Err(e) => return fail(None, e),
    };
    if let Some(w) = wanted {
        if w != found {
            let expected = match w {
                Format::Junit => "a JUnit XML document",
                Format::PytestJson => "a pytest-json-report document",
                Format::Reportlog => "a pytest report log (JSON lines with \"$report_type\")",
            };
            return fail(
                None,
                ReportError::new(
                    ErrorKind::NotAReport,
                    path,
                    format!(
                        "expected {expected}, but the file looks like {}; check --format",
                        found.as_str()
                    ),
                ),
            );
        }
    }
    if let Err(e) = file.seek(SeekFrom::Start(0)) {
        return fail(Some(found), ReportError::from_io(path, &e));
    }
    let mut truncated = false;
    let file_start_us = builder.tests_duration_us();
    builder.reading_spans_of(index);
    let project = builder.project().cloned();
    let mut session = None;
    // Out of the builder while the sink holds it; the file's ids go after the earlier files'.
    let mut collected = builder.take_collected();
    let parsed = {
        let mut sink = |item: Item| builder.push(item);
        let collected = collected.as_mut();
        parse_format(
            found,
            file,
            path,
            budgets,
            project.as_ref(),
            collected,
            &mut sink,
        )
        .map(|end| {
            truncated = end.cut_last_line;
            session = end.session;
            end.session_duration_us
        })
    };
    builder.put_collected(collected);
    if let Some(facts) = session {
        builder.add_session(facts);
    }
    if truncated {
        builder.note_truncated(path);
    }
    let parsed = parsed.map(|session_us| builder.end_file(session_us, file_start_us));
    FilePart {
        format: Some(found),
        result: parsed.map(|()| builder),
    }
}

/// The record of a failure read again from `file` (the report `path`) at its `span`;
/// None when it cannot be (I/O error, or the bytes there do not parse).
fn read_again(
    format: Format,
    file: &mut File,
    path: &str,
    span: &SourceSpan,
    budgets: &Budgets,
) -> Option<TestRecord> {
    file.seek(SeekFrom::Start(span.start)).ok()?;
    let len = span.end.checked_sub(span.start)?;
    let part = file.take(len);
    // The span and the few bytes of the document around it; the lexers cap it.
    let buffer = usize::try_from(len).map_or(usize::MAX, |n| n.saturating_add(SPAN_MARGIN));
    // The element's own record is the last test record it gives.
    let mut last = None;
    let mut keep_last = |item| {
        if let Item::Test(record) = item {
            last = Some(record);
        }
    };
    let read = match format {
        Format::Junit => {
            let pytest = span.in_pytest_suite;
            junit::reparse_case(part, pytest, path, budgets, &mut keep_last, buffer)
        }
        Format::PytestJson => {
            pytest_json::reparse_entry(part, path, budgets, &mut keep_last, buffer)
        }
        Format::Reportlog => return None,
    };
    read.ok().and(last)
}

/// Bytes beyond a span's own that its read buffer has room for: the document around it
/// (`<testsuite name="pytest">`, `{"exitcode": 1, ...`), well under this.
const SPAN_MARGIN: usize = 64;

/// Parse one file of a known format into `sink`, in report order; what the file says of
/// its end (pytest's session time, a cut last line). A report log adds its collected ids
/// to `collected`, when given (the other formats have none).
fn parse_format(
    format: Format,
    file: File,
    path: &str,
    budgets: &Budgets,
    project: Option<&ProjectCode>,
    collected: Option<&mut CollectedFacts>,
    sink: &mut dyn FnMut(Item),
) -> Result<ReportlogEnd, ReportError> {
    let ended = |session_duration_us| ReportlogEnd {
        session_duration_us,
        ..ReportlogEnd::default()
    };
    match format {
        Format::Junit => junit::parse_junit(file, path, budgets, sink).map(|()| ended(None)),
        Format::PytestJson => {
            pytest_json::parse_pytest_json_session(file, path, budgets, sink).map(ended)
        }
        Format::Reportlog => {
            reportlog::parse_reportlog(file, path, budgets, project, collected, sink)
        }
    }
}

/// The error of a file whose format (`found`, once sniffed) is not the earlier files'
/// (`first`), if it is not.
fn check_same_format(
    path: &str,
    found: Option<Format>,
    first: Option<Format>,
) -> Result<(), ReportError> {
    match (found, first) {
        (Some(found), Some(first)) if found != first => Err(ReportError::new(
            ErrorKind::MixedFormats,
            path,
            format!(
                "this file is {} but the earlier ones are {}; summarise each format separately",
                found.as_str(),
                first.as_str()
            ),
        )),
        _ => Ok(()),
    }
}

/// The files parsed in parallel (one builder each), merged in input order.
fn summarize_in_parallel(
    paths: &[String],
    wanted: Option<Format>,
    budgets: &Budgets,
    selection: Option<&Arc<Selection>>,
    project: Option<&Arc<ProjectCode>>,
    suspect: Option<&Arc<SuspectGroup>>,
) -> Result<(Format, SummaryBuilder), ReportError> {
    let summarize_one = |(index, path): (usize, &String)| {
        let builder = new_builder(budgets, selection, project, suspect);
        summarize_into(index, path, wanted, budgets, builder)
    };
    let parts: Vec<FilePart> = if paths.len() == 1 {
        vec![summarize_one((0, &paths[0]))]
    } else {
        paths.par_iter().enumerate().map(summarize_one).collect()
    };
    let mut merged: Option<(Format, SummaryBuilder)> = None;
    for (index, (path, part)) in paths.iter().zip(parts).enumerate() {
        check_same_format(path, part.format, merged.as_ref().map(|(first, _)| *first))?;
        let builder = part.result?;
        let format = part.format.expect("a parsed file has a format");
        merged = Some(match merged {
            None => (format, builder),
            Some((f, mut acc)) => {
                if builder.overflowed() {
                    // Merging is exact only when the file's failures all have tracked
                    // groups (more than `MAX_TRACKED_GROUPS` distinct groups in one file
                    // is rare): feed the file again, in order, into the accumulated builder.
                    drop(builder);
                    acc = summarize_into(index, path, wanted, budgets, acc).result?;
                } else {
                    acc.merge(builder);
                }
                (f, acc)
            }
        });
    }
    Ok(merged.expect("paths is not empty"))
}

/// The files fed one after the other, in input order, into `builder`: what a collected
/// page needs, each file's ids counted after the earlier files' (a file read on its own
/// could not know where its ids stand in the page).
fn summarize_in_order(
    paths: &[String],
    wanted: Option<Format>,
    budgets: &Budgets,
    mut builder: SummaryBuilder,
) -> Result<(Format, SummaryBuilder), ReportError> {
    let mut first = None;
    for (index, path) in paths.iter().enumerate() {
        let part = summarize_into(index, path, wanted, budgets, builder);
        check_same_format(path, part.format, first)?;
        builder = part.result?;
        first = first.or(part.format);
    }
    Ok((first.expect("paths is not empty"), builder))
}

/// Summarise report files into canonical summary JSON bytes (docs/ENGINE.md).
///
/// Files are parsed in parallel (rayon) and merged in input order; the result equals
/// feeding them one by one. The first failing file in input order gives the error.
/// `select`: None lists every test; else only the tests and collection errors the
/// entries select, and `unmatched` names the entries that selected no failing/erroring
/// test and no collection error (docs/ENGINE.md, *Selection*). `project`: the
/// project's own code (docs/ENGINE.md, *Project code*), or None for the path-pattern
/// rule. `suspect`: a cause found outside the report whose failures group as one
/// (docs/ENGINE.md, *Groups*), or None. `collected_page`: the page of the report logs'
/// collected node ids to keep (the session's `collected_ids`), or None for none; with
/// one, the files are read one after the other in input order, each after the ids of
/// the ones before it (docs/ENGINE.md, *Session*).
pub fn summarize_files(
    paths: &[String],
    wanted: Option<Format>,
    budgets: &Budgets,
    select: Option<&[String]>,
    project: Option<ProjectCode>,
    suspect: Option<SuspectGroup>,
    collected_page: Option<CollectedPage>,
) -> Result<Vec<u8>, ReportError> {
    let selection = select.map(|entries| Arc::new(Selection::new(entries)));
    let selection = selection.as_ref();
    let project = project.map(Arc::new);
    let project = project.as_ref();
    let suspect = suspect.map(Arc::new);
    let suspect = suspect.as_ref();
    let (format, mut builder) = match collected_page {
        None => summarize_in_parallel(paths, wanted, budgets, selection, project, suspect)?,
        Some(request) => {
            let builder = new_builder(budgets, selection, project, suspect).collecting(request);
            summarize_in_order(paths, wanted, budgets, builder)?
        }
    };
    // The listed groups' first failures kept without their texts: read again from
    // their spans (one file open at a time).
    let mut open: Option<(usize, File)> = None;
    builder.recover_located(&mut |span| {
        if !matches!(&open, Some((i, _)) if *i == span.file) {
            open = File::open(&paths[span.file]).ok().map(|f| (span.file, f));
        }
        let (_, file) = open.as_mut()?;
        read_again(format, file, &paths[span.file], span, budgets)
    });
    if builder.missing_representatives() {
        // A listed group's first failure was not kept (the builder's bound on raw
        // records): read the files again, in order, for those failures only.
        let mut seq = 0u64;
        for path in paths {
            let file = File::open(path).map_err(|e| ReportError::from_io(path, &e))?;
            let mut sink = |item: Item| {
                builder.recover(seq, item);
                seq += 1;
            };
            parse_format(
                format,
                file,
                path,
                budgets,
                project.map(|p| &**p),
                None,
                &mut sink,
            )?;
        }
    }
    Ok(builder.finish(format, paths))
}
