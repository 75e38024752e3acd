//! Doctest failures read as failures (docs/ENGINE.md, *Doctests*). Mirrored by
//! `pure/doctest.py`, rule for rule.
//!
//! pytest writes a failed doctest (`DoctestItem.repr_failure`) as the docstring's
//! numbered listing up to the failing example, then either doctest's `Expected:`/`Got:`
//! blocks (`DocTestFailure`) or `UNEXPECTED EXCEPTION: repr` and the native traceback of
//! the exception the example raised (`UnexpectedException`), then a location line
//! `path:N: DocTestFailure`. [`doctest_view`] turns that into what any failure gives:
//! the example and what went wrong, an exception and a one-line message.

use crate::cut::{chomp, is_ws, native_frame, parse_location, strip};
use crate::record::TestRecord;

const UNEXPECTED: &str = "UNEXPECTED EXCEPTION: ";

/// A doctest failure as any failure: `text` (the failing example, then its Expected/Got
/// blocks and location line, or the traceback of the exception it raised), `exception`
/// and `message`.
pub(crate) struct DoctestView {
    pub text: String,
    pub exception: String,
    pub message: String,
}

/// The first line of the failing example before line `end`: the nearest line of the
/// listing (`NNN ` or `??? ` and the docstring's line) holding a `>>>` prompt; `end`
/// when there is none.
fn example_start(lines: &[&str], end: usize) -> usize {
    (0..end)
        .rev()
        .find(|&i| {
            let line = lines[i];
            let mut digits = line.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 && line.starts_with("???") {
                digits = 3;
            }
            digits >= 3
                && line.as_bytes().get(digits) == Some(&b' ')
                && strip(&line[digits + 1..]).starts_with(">>>")
        })
        .unwrap_or(end)
}

/// Lines stripped, the empty ones left out, joined by a space.
fn joined(lines: &[&str]) -> String {
    lines
        .iter()
        .map(|l| strip(l))
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `Name: message` or a bare `Name` (a dotted identifier) -> (name, message).
fn exception_line(line: &str) -> Option<(&str, &str)> {
    let (name, message) = match line.find(": ") {
        Some(at) => (&line[..at], &line[at + 2..]),
        None => (line, ""),
    };
    let mut bytes = name.bytes();
    let first = bytes.next()?;
    let ident_start = |c: u8| c.is_ascii_alphabetic() || c == b'_';
    if !ident_start(first) || !bytes.all(|c| ident_start(c) || c.is_ascii_digit() || c == b'.') {
        return None;
    }
    Some((name, message))
}

/// The [`DoctestView`] of a failure's `text` when pytest wrote it for a doctest (its last
/// non-blank line a location line ending `: DocTestFailure` or `: UnexpectedException`,
/// with doctest's blocks above it), else None.
///
/// `DocTestFailure`: the text from the failing example on (the listing before it
/// dropped), the message `Expected: <want> Got: <got>` (each block's lines stripped and
/// joined by a space; `Expected nothing`/`Got nothing` as doctest writes an empty one).
/// `UnexpectedException`: the example, then the native traceback (its `UNEXPECTED
/// EXCEPTION` line and the location line dropped); the exception and message those of its
/// exception line (the first line after its last frame that does not start with
/// whitespace, `Name: message` or `Name`); None when there is none.
pub(crate) fn doctest_view(text: &str) -> Option<DoctestView> {
    // the last line decides, before the text is split: most failures are no doctest's
    let tail = text.trim_end_matches(|c: char| is_ws(c));
    let kind = parse_location(chomp(&tail[tail.rfind('\n').map_or(0, |i| i + 1)..]))?.rest;
    if kind != "DocTestFailure" && kind != "UnexpectedException" {
        return None;
    }
    let lines: Vec<&str> = text.split('\n').map(chomp).collect();
    let last = lines.iter().rposition(|l| !strip(l).is_empty())?;
    if kind == "DocTestFailure" {
        let got = (0..last)
            .rev()
            .find(|&i| matches!(lines[i], "Got:" | "Got nothing"))?;
        let expected = (0..got)
            .rev()
            .find(|&i| matches!(lines[i], "Expected:" | "Expected nothing"))?;
        let want = if lines[expected] == "Expected nothing" {
            "Expected nothing".to_owned()
        } else {
            format!("Expected: {}", joined(&lines[expected + 1..got]))
        };
        let found = if lines[got] == "Got nothing" {
            "Got nothing".to_owned()
        } else {
            format!("Got: {}", joined(&lines[got + 1..last]))
        };
        let start = example_start(&lines, expected);
        return Some(DoctestView {
            text: lines[start..].join("\n"),
            exception: "DocTestFailure".to_owned(),
            message: format!("{} {}", strip(&want), strip(&found)),
        });
    }
    if kind != "UnexpectedException" {
        return None;
    }
    let unexpected = (0..last)
        .rev()
        .find(|&i| lines[i].starts_with(UNEXPECTED))?;
    let traceback = &lines[unexpected + 1..last];
    let frame = traceback.iter().rposition(|l| native_frame(l).is_some())?;
    let line = traceback[frame + 1..]
        .iter()
        .find(|l| l.chars().next().is_some_and(|c| !is_ws(c)))?;
    let (exception, message) = exception_line(line)?;
    let start = example_start(&lines, unexpected);
    let mut shown: Vec<&str> = lines[start..unexpected].to_vec();
    shown.extend_from_slice(traceback);
    Some(DoctestView {
        text: shown.join("\n"),
        exception: exception.to_owned(),
        message: message.to_owned(),
    })
}

/// A failure's record as every later rule reads it: a doctest's (its `text` a
/// [`doctest_view`]) with the view's text, exception and message; any other unchanged.
/// Reading a record twice gives the same record.
pub(crate) fn read_doctest(record: &mut TestRecord) {
    if let Some(view) = record.text.as_deref().and_then(doctest_view) {
        record.text = Some(view.text);
        record.frames = None; // they were the replaced text's
        record.exception = Some(view.exception);
        record.message = Some(view.message);
    }
}
