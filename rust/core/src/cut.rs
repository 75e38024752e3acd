//! Traceback cutting (docs/ENGINE.md, *Traceback cutting*), and the line rules it shares
//! with the builder (location lines, whitespace). Mirrored by `cut_traceback` in
//! `pure/cut.py`; `tests/test_rules_parity.py` checks both give the same output.
//!
//! Exact rules (all classes ASCII; "stripped" = without leading/trailing
//! space, tab, LF, CR, VT, FF):
//! * Lines are split on `\n`, one trailing `\r` removed; leading and trailing blank
//!   lines are dropped (not counted as omitted).
//! * Separator: a stripped line matching `^_( _)+$`. Chain line: a stripped line equal
//!   to pytest's "The above exception was the direct cause of the following
//!   exception:" or "During handling of the above exception, another exception
//!   occurred:". Both end a frame; a new frame also starts at a short-style entry
//!   header (a location line whose rest starts with `in `) once the current frame has
//!   a non-blank line.
//! * Location line (see [`parse_location`]): `path:N:` then a space or the line end,
//!   the path being `[A-Za-z]:[\\/][^:]*` (a Windows drive) or `\S[^:]*` (tried first),
//!   N decimal digits that fit in u64; lines starting with `E `, equal to `E`, or
//!   starting with `>` are never location lines.
//! * A frame's path: its last location line, else its first `File "path", line N`
//!   line. Library frames ([`crate::project::classify`]: with a project, everything
//!   but its own code; without, the path-pattern rule) are dropped except the last
//!   frame before each chain line and the last frame of the text; a separator is
//!   dropped when every frame of the block after it is. With a project, kept frame
//!   lines show install directories as `<site-packages>/`.
//! * Step 4 keeps, before a frame's first `>` line, its last `context_lines` (the
//!   `max_frame_context_lines` budget, 3 by default) non-blank lines and everything
//!   after the first of them (with 0: nothing before the `>` line); earlier lines go
//!   unless essential (and stay when they hold at most one non-blank line).
//! * Marker lines are never cut to `max_line_chars`; `max_lines` below 3 counts as 3,
//!   `max_line_chars` below 8 as 8. The head/tail cut of step 6 counts marker lines,
//!   so the result has at most `max_lines` lines.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::project::{classify, display_path, CodeKind, ProjectCode};

/// The whitespace the line rules strip (ASCII: space, tab, LF, CR, VT, FF).
#[inline]
pub(crate) fn is_ws(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

/// `s` without leading and trailing [`is_ws`] characters.
#[inline]
pub(crate) fn strip(s: &str) -> &str {
    s.trim_matches(is_ws)
}

/// A line as `cut_traceback` and the message rules read it: one trailing `\r` removed.
#[inline]
pub(crate) fn chomp(line: &str) -> &str {
    line.strip_suffix('\r').unwrap_or(line)
}

/// `E ...` or `E`: pytest's explanation lines.
#[inline]
fn is_e_line(line: &str) -> bool {
    line.starts_with("E ") || line == "E"
}

/// A `path:N: rest` line (pytest's frame location, e.g. `tests/test_x.py:12: in f` or
/// `src/a.py:3: ValueError`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LocationLine<'a> {
    pub path: &'a str,
    pub line: u64,
    /// What follows `path:N: ` (empty when the line ends after `path:N:`).
    pub rest: &'a str,
}

/// `:N:` + (space | end) at byte `colon` of `line`; returns (N, rest).
fn location_tail(line: &str, colon: usize) -> Option<(u64, &str)> {
    let b = line.as_bytes();
    let start = colon + 1;
    let mut end = start;
    while end < b.len() && b[end].is_ascii_digit() {
        end += 1;
    }
    if end == start || b.get(end) != Some(&b':') {
        return None;
    }
    let number: u64 = line[start..end].parse().ok()?;
    match b.get(end + 1) {
        None => Some((number, "")),
        Some(b' ') => Some((number, &line[end + 2..])),
        Some(_) => None,
    }
}

/// Parse a location line (rules in the module docs); `line` has no `\n`.
pub(crate) fn parse_location(line: &str) -> Option<LocationLine<'_>> {
    let first = line.chars().next()?;
    if is_ws(first) || first == '>' || is_e_line(line) {
        return None;
    }
    let b = line.as_bytes();
    // `\S[^:]*`: the path ends at the first `:` after the first character.
    let after_first = first.len_utf8();
    if let Some(colon) = memchr::memchr(b':', &b[after_first..]).map(|p| p + after_first) {
        if let Some((number, rest)) = location_tail(line, colon) {
            return Some(LocationLine {
                path: &line[..colon],
                line: number,
                rest,
            });
        }
    }
    // A Windows drive: `C:\dir\x.py:12: in f`.
    if b.len() > 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && (b[2] == b'\\' || b[2] == b'/')
    {
        if let Some(colon) = memchr::memchr(b':', &b[3..]).map(|p| p + 3) {
            if let Some((number, rest)) = location_tail(line, colon) {
                return Some(LocationLine {
                    path: &line[..colon],
                    line: number,
                    rest,
                });
            }
        }
    }
    None
}

/// (path, N) of a Python native-format frame line `  File "path", line N, in f` (N
/// decimal digits that fit in u64).
pub(crate) fn native_frame(line: &str) -> Option<(&str, u64)> {
    let t = line.trim_start_matches(is_ws).strip_prefix("File \"")?;
    let close = t.find('"')?;
    let after = t[close + 1..].strip_prefix(", line ")?;
    let digits = after.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let number: u64 = after[..digits].parse().ok()?;
    Some((&t[..close], number))
}

/// A frame line of a traceback: (path as given, line).
pub(crate) type FrameLine<'a> = (&'a str, u64);

/// The last (innermost) frame of a text of each kind of project code (docs/ENGINE.md,
/// *Project code*): `code` (project or test), `non_test` and `test`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DeepestFrames<'a> {
    pub code: Option<FrameLine<'a>>,
    pub non_test: Option<FrameLine<'a>>,
    pub test: Option<FrameLine<'a>>,
}

impl<'a> DeepestFrames<'a> {
    /// Read every frame line of `text` (location lines and native-format lines), in order.
    pub(crate) fn of(text: &'a str, project: Option<&ProjectCode>) -> Self {
        let mut deepest = DeepestFrames::default();
        let mut kinds: HashMap<&'a str, CodeKind> = HashMap::new();
        for raw in text.split('\n') {
            let line = chomp(raw);
            let frame = match parse_location(line) {
                Some(loc) => Some((loc.path, loc.line)),
                None => native_frame(line),
            };
            let Some(frame) = frame else { continue };
            let kind = *kinds
                .entry(frame.0)
                .or_insert_with(|| classify(frame.0, project));
            match kind {
                CodeKind::Library => continue,
                CodeKind::Test => deepest.test = Some(frame),
                CodeKind::Project => deepest.non_test = Some(frame),
            }
            deepest.code = Some(frame);
        }
        deepest
    }
}

/// `_ _ _ …` (stripped: `^_( _)+$`).
fn is_separator_line(line: &str) -> bool {
    let t = strip(line).as_bytes();
    t.len() >= 3
        && t.len() % 2 == 1
        && t.iter()
            .enumerate()
            .all(|(i, &b)| b == if i % 2 == 0 { b'_' } else { b' ' })
}

const CHAIN_LINES: [&str; 2] = [
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
];

fn is_chain_line(line: &str) -> bool {
    let t = strip(line);
    CHAIN_LINES.contains(&t)
}

const JAVA_LIBRARY_PREFIXES: [&str; 8] = [
    "java.",
    "javax.",
    "jdk.",
    "sun.",
    "org.junit.",
    "junit.",
    "org.apache.maven.",
    "org.hamcrest.",
];

/// A Java stack frame of library code: leading whitespace, then `at ` + a library
/// package (`\tat java.lang.Thread.run(Thread.java:748)`).
fn is_java_library_frame(line: &str) -> bool {
    let t = line.trim_start_matches([' ', '\t']);
    if t.len() == line.len() {
        return false;
    }
    match t.strip_prefix("at ") {
        Some(rest) => JAVA_LIBRARY_PREFIXES.iter().any(|p| rest.starts_with(p)),
        None => false,
    }
}

/// Lines step 4 never drops.
fn is_essential(line: &str) -> bool {
    is_e_line(line) || line.starts_with('>') || parse_location(line).is_some()
}

fn indentation(line: &str) -> usize {
    line.len() - line.trim_start_matches(is_ws).len()
}

/// One frame: lines `start..end`, the block (between separators/chain lines) it is in.
struct Frame {
    start: usize,
    end: usize,
    block: usize,
    /// Last frame before a chain line or of the whole text: never dropped as library.
    section_end: bool,
}

/// One output line: a kept input line, or a marker for `n` dropped lines.
#[derive(Clone, Copy)]
enum Piece {
    Line(usize),
    Gap(u64),
}

/// Cut a failure's long representation down to what matters (docs/ENGINE.md,
/// *Traceback cutting*; exact rules in the module docs), library code by the
/// path-pattern rule and the default source context: [`cut_traceback_for`] without a
/// project.
pub fn cut_traceback(text: &str, max_lines: usize, max_line_chars: usize) -> (String, u64) {
    let context_lines = crate::Budgets::default().max_frame_context_lines;
    cut_traceback_for(text, max_lines, max_line_chars, context_lines, None)
}

/// Cut a failure's long representation down to what matters (docs/ENGINE.md,
/// *Traceback cutting*; exact rules in the module docs).
///
/// Returns (cut text joined by `\n`, number of input lines dropped). `max_lines` is the
/// most lines returned (markers included); `max_line_chars` the most characters (Unicode
/// scalar values) of a kept line, a longer one keeping `max_line_chars - 1` and `…`.
/// `context_lines`: the non-blank lines kept before a frame's first `>` line (step 4).
/// `project`: which frames are library code ([`classify`]; None: the path-pattern
/// rule); with one, kept frame lines show their path through [`display_path`].
pub fn cut_traceback_for(
    text: &str,
    max_lines: usize,
    max_line_chars: usize,
    context_lines: usize,
    project: Option<&ProjectCode>,
) -> (String, u64) {
    let max_lines = max_lines.max(3);
    let max_line_chars = max_line_chars.max(8);

    // Step 1.
    let all: Vec<&str> = text.split('\n').map(chomp).collect();
    let first = all.iter().position(|l| !strip(l).is_empty());
    let Some(first) = first else {
        return (String::new(), 0);
    };
    let last = all
        .iter()
        .rposition(|l| !strip(l).is_empty())
        .expect("a non-blank line exists");
    let lines = &all[first..=last];
    let n = lines.len();
    let mut dropped = vec![false; n];
    let mut kinds: HashMap<&str, CodeKind> = HashMap::new();

    // Step 2: frames and blocks.
    let mut frames: Vec<Frame> = Vec::new();
    // Separator line introducing each block (None for the first block and after chains).
    let mut block_separator: Vec<Option<usize>> = vec![None];
    let mut frame_start = 0;
    let mut frame_has_text = false;
    for (i, line) in lines.iter().enumerate() {
        let separator = is_separator_line(line);
        let chain = !separator && is_chain_line(line);
        if separator || chain {
            let block = block_separator.len() - 1;
            frames.push(Frame {
                start: frame_start,
                end: i,
                block,
                section_end: chain,
            });
            block_separator.push(if separator { Some(i) } else { None });
            frame_start = i + 1;
            frame_has_text = false;
            continue;
        }
        if frame_has_text && parse_location(line).is_some_and(|loc| loc.rest.starts_with("in ")) {
            frames.push(Frame {
                start: frame_start,
                end: i,
                block: block_separator.len() - 1,
                section_end: false,
            });
            frame_start = i;
        }
        if !strip(line).is_empty() {
            frame_has_text = true;
        }
    }
    frames.push(Frame {
        start: frame_start,
        end: n,
        block: block_separator.len() - 1,
        section_end: true,
    });

    let mut block_kept = vec![false; block_separator.len()];
    for frame in &frames {
        let body = &lines[frame.start..frame.end];
        let path = body
            .iter()
            .rev()
            .find_map(|l| parse_location(l).map(|loc| loc.path))
            .or_else(|| body.iter().find_map(|l| native_frame(l).map(|f| f.0)));
        if !frame.section_end && path.is_some_and(|p| is_library(&mut kinds, p, project)) {
            dropped[frame.start..frame.end]
                .iter_mut()
                .for_each(|d| *d = true);
        } else {
            block_kept[frame.block] = true;
        }
    }
    for (block, separator) in block_separator.iter().enumerate() {
        if let (Some(s), false) = (separator, block_kept[block]) {
            dropped[*s] = true;
        }
    }

    // Step 3: native-format library frames and Java library frames in the kept lines.
    let mut i = 0;
    while i < n {
        if dropped[i] {
            i += 1;
            continue;
        }
        if let Some((path, _)) = native_frame(lines[i]) {
            let indent = indentation(lines[i]);
            let mut end = i + 1;
            while end < n
                && !dropped[end]
                && !strip(lines[end]).is_empty()
                && indentation(lines[end]) > indent
            {
                end += 1;
            }
            if is_library(&mut kinds, path, project) {
                dropped[i..end].iter_mut().for_each(|d| *d = true);
            }
            i = end;
            continue;
        }
        if is_java_library_frame(lines[i]) {
            dropped[i] = true;
        }
        i += 1;
    }

    // Steps 4-5: source context before each frame's first `>` line: the last
    // `context_lines` non-blank lines and what follows them stay; earlier lines go
    // unless essential.
    for frame in &frames {
        let Some(arrow) =
            (frame.start..frame.end).find(|&j| !dropped[j] && lines[j].starts_with('>'))
        else {
            continue;
        };
        // The `context_lines`-th non-blank line before the arrow (0: the arrow itself).
        let keep_from = match context_lines.checked_sub(1) {
            None => arrow,
            Some(nth) => (frame.start..arrow)
                .rev()
                .filter(|&j| !dropped[j] && !strip(lines[j]).is_empty())
                .nth(nth)
                .unwrap_or(frame.start),
        };
        // At most one non-blank line before the kept context (pytest's blank line after a
        // separator, a `def` line): a marker would take as many lines, so nothing goes.
        if (frame.start..keep_from)
            .filter(|&j| !dropped[j] && !strip(lines[j]).is_empty())
            .count()
            <= 1
        {
            continue;
        }
        for j in frame.start..keep_from {
            if !is_essential(lines[j]) {
                dropped[j] = true;
            }
        }
    }

    // Step 7 (runs of dropped lines -> one marker), then step 6 (head + tail).
    let mut pieces: Vec<Piece> = Vec::new();
    for (j, &d) in dropped.iter().enumerate() {
        if d {
            add_gap(&mut pieces, 1);
        } else {
            pieces.push(Piece::Line(j));
        }
    }
    if pieces.len() > max_lines {
        let head = max_lines / 3;
        let tail = max_lines - head - 1;
        let middle: u64 = pieces[head..pieces.len() - tail]
            .iter()
            .map(|p| match p {
                Piece::Line(_) => 1,
                Piece::Gap(g) => *g,
            })
            .sum();
        let mut cut: Vec<Piece> = Vec::with_capacity(max_lines);
        cut.extend_from_slice(&pieces[..head]);
        add_gap(&mut cut, middle);
        for p in &pieces[pieces.len() - tail..] {
            match p {
                Piece::Gap(g) => add_gap(&mut cut, *g),
                line => cut.push(*line),
            }
        }
        pieces = cut;
    }

    // Steps 8-9, and the output.
    let mut out = String::with_capacity(text.len().min(max_lines * (max_line_chars + 1) * 4));
    let mut omitted = 0u64;
    for (k, piece) in pieces.iter().enumerate() {
        if k > 0 {
            out.push('\n');
        }
        match piece {
            Piece::Line(j) => match project {
                None => push_capped(&mut out, lines[*j], max_line_chars),
                Some(p) => push_capped(&mut out, &display_line(lines[*j], p), max_line_chars),
            },
            Piece::Gap(g) => {
                omitted += g;
                out.push_str(&format!("... [{g} lines omitted]"));
            }
        }
    }
    (out, omitted)
}

/// A kept line with the path of a location line or native-format frame line shown
/// through [`display_path`]; other lines unchanged.
fn display_line<'a>(line: &'a str, project: &ProjectCode) -> Cow<'a, str> {
    if let Some(loc) = parse_location(line) {
        return match display_path(loc.path, Some(project)) {
            Cow::Borrowed(_) => line.into(),
            Cow::Owned(shown) => format!("{shown}{}", &line[loc.path.len()..]).into(),
        };
    }
    if let Some((path, _)) = native_frame(line) {
        if let Cow::Owned(shown) = display_path(path, Some(project)) {
            let start = line.find('"').expect("a native frame line has a quote") + 1;
            return format!("{}{shown}{}", &line[..start], &line[start + path.len()..]).into();
        }
    }
    line.into()
}

/// Library code by [`classify`], remembered per path.
fn is_library<'a>(
    kinds: &mut HashMap<&'a str, CodeKind>,
    path: &'a str,
    project: Option<&ProjectCode>,
) -> bool {
    *kinds.entry(path).or_insert_with(|| classify(path, project)) == CodeKind::Library
}

fn add_gap(pieces: &mut Vec<Piece>, n: u64) {
    if let Some(Piece::Gap(g)) = pieces.last_mut() {
        *g += n;
    } else {
        pieces.push(Piece::Gap(n));
    }
}

/// Append `s` cut to `max_chars` characters (`max_chars - 1` and `…` when longer).
pub(crate) fn push_capped(out: &mut String, s: &str, max_chars: usize) {
    match s.char_indices().nth(max_chars) {
        None => out.push_str(s),
        Some(_) => {
            let keep = s
                .char_indices()
                .nth(max_chars.saturating_sub(1))
                .map_or(s.len(), |(i, _)| i);
            out.push_str(&s[..keep]);
            out.push('…');
        }
    }
}

/// `s` cut to `max_chars` characters (see [`push_capped`]).
pub(crate) fn capped(s: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max_chars * 4));
    push_capped(&mut out, s, max_chars);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pytest's long format for a test calling into a library that raised (the shape
    /// of `pytest --tb=long` output with a chained exception).
    const CHAINED: &str = include_str!("../../../tests/fixtures/tracebacks/requests_chained.txt");

    #[test]
    fn library_frames_go_and_everything_essential_stays() {
        let (cut, omitted) = cut_traceback(CHAINED, 100, 200);
        let expected = "\
... [4 lines omitted]
        headers = {}
        params = {}
        timeout = 3
>       r = requests.get(url, headers=headers, params=params, timeout=timeout)

tests/test_api.py:14: 
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _
... [2 lines omitted]
tests/helpers.py:9: in request
    return session.request(method=method, url=url, **kwargs)
... [2 lines omitted]
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

self = <urllib3.connection.HTTPConnection object at 0x7f01>

    def _new_conn(self):
>       sock = connection.create_connection(
E       ConnectionRefusedError: [Errno 111] Connection refused

.venv/lib/python3.11/site-packages/urllib3/connection.py:203: ConnectionRefusedError

The above exception was the direct cause of the following exception:

    def test_other():
>       raise RuntimeError('boom')
E       RuntimeError: boom

tests/test_api.py:30: RuntimeError";
        assert_eq!(cut, expected);
        assert_eq!(omitted, 8);
    }

    #[test]
    fn a_block_of_library_frames_takes_its_separator_with_it() {
        let text = "\
    def test_x():
>       lib.call()

tests/test_x.py:2: 
_ _ _ _ _
/usr/lib/python3.12/site-packages/lib/a.py:5: in call
    return inner()
_ _ _ _ _

    def inner():
>       raise ValueError(1)
E       ValueError: 1

/usr/lib/python3.12/site-packages/lib/a.py:9: ValueError";
        let (cut, omitted) = cut_traceback(text, 40, 200);
        assert_eq!(
            cut,
            "def test_x():\n>       lib.call()\n\ntests/test_x.py:2: \n... [3 lines omitted]\n_ _ _ _ _\n\n    def inner():\n>       raise ValueError(1)\nE       ValueError: 1\n\n/usr/lib/python3.12/site-packages/lib/a.py:9: ValueError"
        );
        assert_eq!(omitted, 3);
    }

    #[test]
    fn native_and_java_library_frames_are_dropped() {
        let text = "\
Traceback (most recent call last):
  File \"/work/app/tests/test_x.py\", line 3, in test_x
    run()
  File \"/usr/lib/python3.11/json/__init__.py\", line 346, in loads
    return _default_decoder.decode(s)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^
  File \"/work/app/app.py\", line 9, in run
    json.loads('{')
json.decoder.JSONDecodeError: Expecting property name
java.lang.AssertionError: expected
\tat org.junit.Assert.fail(Assert.java:88)
\tat com.example.CalcTest.adds(CalcTest.java:12)
\tat sun.reflect.NativeMethodAccessorImpl.invoke0(Native Method)";
        let (cut, omitted) = cut_traceback(text, 40, 200);
        assert_eq!(
            cut,
            "Traceback (most recent call last):\n  File \"/work/app/tests/test_x.py\", line 3, in test_x\n    run()\n... [3 lines omitted]\n  File \"/work/app/app.py\", line 9, in run\n    json.loads('{')\njson.decoder.JSONDecodeError: Expecting property name\njava.lang.AssertionError: expected\n... [1 lines omitted]\n\tat com.example.CalcTest.adds(CalcTest.java:12)\n... [1 lines omitted]"
        );
        assert_eq!(omitted, 5);
    }

    #[test]
    fn the_context_budget_keeps_the_whole_frame_or_none_of_its_source() {
        let text = "self = <T>\n\n    def test_x(self):\n        \"\"\"Doc.\"\"\"\n        a = 1\n        b = 2\n        c = 3\n>       assert a == b\nE       assert 1 == 2\n\ntests/test_x.py:8: AssertionError";
        let (whole, omitted) = cut_traceback_for(text, 40, 200, 1000, None);
        assert_eq!((whole.as_str(), omitted), (text, 0));
        let (default, omitted) = cut_traceback(text, 40, 200);
        assert!(default.starts_with("... [4 lines omitted]\n        a = 1\n"));
        assert_eq!(omitted, 4);
        let (bare, omitted) = cut_traceback_for(text, 40, 200, 0, None);
        assert!(bare.starts_with("... [7 lines omitted]\n>       assert a == b\n"));
        assert_eq!(omitted, 7);
    }

    #[test]
    fn one_line_before_the_context_stays_a_marker_would_not_save_a_line() {
        let text = "    def test_x():\n        a = 1\n        b = 2\n        c = 3\n>       assert a == b\nE       assert 1 == 2";
        assert_eq!(cut_traceback(text, 40, 200), (text.to_owned(), 0));
        let two = format!("    @mark\n{text}");
        let (cut, omitted) = cut_traceback(&two, 40, 200);
        assert!(cut.starts_with("... [2 lines omitted]\n        a = 1\n"));
        assert_eq!(omitted, 2);
    }

    #[test]
    fn long_output_keeps_head_and_tail_within_max_lines() {
        let text: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        let (cut, omitted) = cut_traceback(&text, 10, 200);
        let lines: Vec<&str> = cut.split('\n').collect();
        assert_eq!(lines.len(), 10);
        assert_eq!(&lines[..3], &["line 1", "line 2", "line 3"]);
        assert_eq!(lines[3], "... [91 lines omitted]");
        assert_eq!(
            &lines[4..],
            &["line 95", "line 96", "line 97", "line 98", "line 99", "line 100"]
        );
        assert_eq!(omitted, 91);
    }

    #[test]
    fn markers_merge_across_the_head_tail_cut() {
        // 6 source lines before `>` (3 dropped), then many E lines.
        let mut text = String::from("a\nb\nc\nd\ne\nf\n> x\n");
        for i in 0..20 {
            text.push_str(&format!("E   {i}\n"));
        }
        let (cut, omitted) = cut_traceback(&text, 6, 200);
        // pieces: gap(3) d e f > E0..E19 -> head 2 = [gap3, d], tail 3 = E17..E19.
        assert_eq!(
            cut,
            "... [3 lines omitted]\nd\n... [20 lines omitted]\nE   17\nE   18\nE   19"
        );
        assert_eq!(omitted, 23);
    }

    #[test]
    fn long_lines_are_cut_by_characters() {
        let (cut, omitted) = cut_traceback("\n\n  éééééééééé\r\n\n", 40, 8);
        assert_eq!(cut, "  ééééé…");
        assert_eq!(omitted, 0);
        assert_eq!(cut_traceback(" \n\t\n", 40, 200), (String::new(), 0));
    }

    #[test]
    fn location_lines() {
        let loc = parse_location("tests/test_x.py:12: in helper").unwrap();
        assert_eq!(
            (loc.path, loc.line, loc.rest),
            ("tests/test_x.py", 12, "in helper")
        );
        let loc = parse_location("C:\\src\\x.py:3: ValueError").unwrap();
        assert_eq!(
            (loc.path, loc.line, loc.rest),
            ("C:\\src\\x.py", 3, "ValueError")
        );
        assert_eq!(parse_location("test_spark.py:821:").unwrap().rest, "");
        assert!(parse_location("E   x.py:1: y").is_none());
        assert!(parse_location(">   x.py:1: y").is_none());
        assert!(parse_location("    x.py:1: y").is_none());
        assert!(parse_location("ValueError: 3: bad").is_none());
        assert!(parse_location("x.py:99999999999999999999: y").is_none());
        assert!(parse_location("x.py:12:34").is_none());
    }
}
