//! Traceback cutting (docs/ENGINE.md, *Traceback cutting*), and the line rules it shares
//! with the builder (location lines, whitespace). Mirrored by `cut_traceback` in
//! `pure/cut.py`; `tests/engine/test_rules_parity.py` checks both give the same output.
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
//!   lines show install directories as `<site-packages>/`. The lines dropped as library
//!   code are marked but not counted as omitted: no budget shows them.
//! * A fixture lookup error's listing (`file PATH, line N` and its source up to its
//!   `def` line) is never dropped as context; its paths are shown as frame paths are.
//! * Step 4 keeps, before a frame's first `>` line, its last `context_lines` (the
//!   `max_frame_context_lines` budget, 3 by default) non-blank lines and everything
//!   after the first of them (with 0: nothing before the `>` line); earlier lines go
//!   unless essential (and stay when they hold at most one non-blank line).
//! * Marker lines are never cut to `max_line_chars`; `max_lines` below 3 counts as 3,
//!   `max_line_chars` below 8 as 8. The head/tail cut of step 6 counts marker lines,
//!   so the result has at most `max_lines` lines.
//!
//! A listed failure's traceback is then tidied by the shown-traceback rules
//! ([`shown_traceback_for`], at the end of this file; docs/ENGINE.md, *The shown
//! traceback*): the summary's `traceback` is the final text the server and the CLI show.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::project::{classify, display_path, CodeKind, ProjectCode};
use crate::record::{FrameKind, ReprFrame, ReprFrames};
use crate::text::FastHash;

/// The whitespace the line rules strip (ASCII: space, tab, LF, CR, VT, FF).
#[inline]
pub(crate) fn is_ws(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

/// [`is_ws`] on a byte: the same six ASCII characters.
#[inline(always)]
fn is_ws_byte(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c')
}

/// `s` without leading [`is_ws`] characters (`s.trim_start_matches(is_ws)`, by bytes:
/// an ASCII byte is never inside a multi-byte character, so every cut is a boundary).
#[inline]
pub(crate) fn strip_start(s: &str) -> &str {
    let start = s.bytes().position(|b| !is_ws_byte(b)).unwrap_or(s.len());
    &s[start..]
}

/// `s` without leading and trailing [`is_ws`] characters (`s.trim_matches(is_ws)`, by
/// bytes as [`strip_start`]).
#[inline]
pub(crate) fn strip(s: &str) -> &str {
    let s = strip_start(s);
    let end = s.bytes().rposition(|b| !is_ws_byte(b)).map_or(0, |i| i + 1);
    &s[..end]
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
    // the digits' value, None past u64 (as `str::parse` gives; without its sign and
    // radix handling: every frame line of every failure comes here)
    let number = b[start..end].iter().try_fold(0u64, |n, &d| {
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })?;
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
    let b = line.as_bytes();
    let indent = b
        .iter()
        .position(|&c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))?;
    if b[indent] != b'F' {
        return None;
    }
    let t = line[indent..].strip_prefix("File \"")?;
    let close = t.find('"')?;
    let after = t[close + 1..].strip_prefix(", line ")?;
    let digits = after.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let number: u64 = after[..digits].parse().ok()?;
    Some((&t[..close], number))
}

/// (path, N) when `text`, without its leading whitespace, is exactly `File "path", line
/// N` (N decimal digits that fit in u64): where Python reports a `SyntaxError` (its
/// source line, a caret and `SyntaxError: ...` follow; a frame of a traceback has
/// `, in f`).
pub(crate) fn syntax_position(text: &str) -> Option<FrameLine<'_>> {
    let t = strip_start(text).strip_prefix("File \"")?;
    let close = t.find('"')?;
    let digits = t[close + 1..].strip_prefix(", line ")?;
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some((&t[..close], digits.parse().ok()?))
}

/// A frame line of a traceback: (path as given, line).
pub(crate) type FrameLine<'a> = (&'a str, u64);

/// pytest's header of one function in a fixture lookup error's listing
/// (`FixtureLookupError` and its `FixtureLookupErrorRepr`: the test and the fixtures that ask for the missing
/// one): `file PATH, line N`, or the same followed by `: source code not available`;
/// (PATH, N), N decimal digits that fit in u64.
pub(crate) fn listing_header(line: &str) -> Option<FrameLine<'_>> {
    let rest = line.strip_prefix("file ")?;
    let body = rest
        .strip_suffix(": source code not available")
        .unwrap_or(rest);
    let comma = body.rfind(", line ")?;
    let (path, digits) = (&body[..comma], &body[comma + 7..]);
    if path.is_empty() || digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some((path, digits.parse().ok()?))
}

/// `PATH:N` (PATH starting with a non-whitespace character, N decimal digits that fit
/// in u64): pytest's closing line of a fixture lookup error.
fn bare_location(line: &str) -> Option<FrameLine<'_>> {
    let colon = line.rfind(':')?;
    let (path, digits) = (&line[..colon], &line[colon + 1..]);
    if path.is_empty() || is_ws_byte(path.as_bytes()[0]) {
        return None;
    }
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some((path, digits.parse().ok()?))
}

/// The closing line of a fixture lookup error among `lines` (its last line, `PATH:N`,
/// saying what its last listing header says: the function that asked for the missing
/// fixture): its index, path and line.
fn fixture_closing<'a>(lines: &[&'a str]) -> Option<(usize, FrameLine<'a>)> {
    let last = lines.len().checked_sub(1)?;
    let closing = bare_location(lines[last])?;
    let header = lines[..last].iter().rev().find_map(|l| listing_header(l))?;
    (header == closing).then_some((last, closing))
}

/// The location a fixture lookup error's text names (docs/ENGINE.md, *Messages and
/// exceptions*, location): its closing line's path and line, when its last non-blank
/// line is one.
pub(crate) fn fixture_location(text: &str) -> Option<FrameLine<'_>> {
    let lines: Vec<&str> = text_lines(text).collect();
    let end = lines.iter().rposition(|l| !strip(l).is_empty())?;
    fixture_closing(&lines[..=end]).map(|(_, at)| at)
}

/// The lines of pytest's fixture listings among `lines` (docs/ENGINE.md, *Traceback
/// cutting*, step 4): each header ([`listing_header`]) and the source lines after it
/// (two spaces, then the line) up to the first whose text starts with `def`, pytest's
/// own end of a listing. None when there is no header (most texts).
fn listing_lines(lines: &[&str]) -> Option<Vec<bool>> {
    if !lines.iter().any(|l| l.starts_with("file ")) {
        return None;
    }
    let mut listing = vec![false; lines.len()];
    let mut i = 0;
    while i < lines.len() {
        if listing_header(lines[i]).is_none() {
            i += 1;
            continue;
        }
        listing[i] = true;
        i += 1;
        while i < lines.len() && lines[i].starts_with("  ") {
            listing[i] = true;
            i += 1;
            if strip(lines[i - 1]).starts_with("def") {
                break;
            }
        }
    }
    Some(listing)
}

/// The lines of `text` split on `\n`, one trailing `\r` removed from each (memchr: the
/// builder reads every failure's text this way).
pub(crate) fn text_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let t = rest?;
        match memchr::memchr(b'\n', t.as_bytes()) {
            Some(i) => {
                rest = Some(&t[i + 1..]);
                Some(chomp(&t[..i]))
            }
            None => {
                rest = None;
                Some(chomp(t))
            }
        }
    })
}

/// What each frame path is, remembered across failures (the same files recur in every
/// traceback of a run). Bounded: cleared when it holds [`PathKinds::MAX`] paths.
#[derive(Debug, Default)]
pub(crate) struct PathKinds {
    kinds: HashMap<Box<str>, CodeKind, crate::text::FastHash>,
}

impl PathKinds {
    const MAX: usize = 4096;

    pub(crate) fn kind(&mut self, path: &str, project: Option<&ProjectCode>) -> CodeKind {
        if let Some(&kind) = self.kinds.get(path) {
            return kind;
        }
        if self.kinds.len() >= Self::MAX {
            self.kinds.clear();
        }
        let kind = classify(path, project);
        self.kinds.insert(path.into(), kind);
        kind
    }
}

/// A frame line's (path, N): a location line, a native-format frame line, or an `E`
/// line giving a syntax error's position (`E     File "t.py", line 2`: pytest's report
/// of a module that does not compile).
#[inline]
fn frame_line(line: &str) -> Option<FrameLine<'_>> {
    match line_kind(line) {
        LineKind::Frame(frame) => Some(frame),
        LineKind::MayBeChain | LineKind::Other => None,
    }
}

/// What a line of a traceback is, as far as its frames are concerned.
enum LineKind<'a> {
    /// A frame line ([`frame_line`]).
    Frame(FrameLine<'a>),
    /// Not a frame line; its first non-whitespace byte is `T` or `D`, so it may be a
    /// chain line ([`is_chain_line`] decides).
    MayBeChain,
    /// Neither a frame line nor a chain line.
    Other,
}

/// Which [`LineKind`] `line` is: most lines are told apart by their first bytes,
/// without the location and native-frame parsers. Inlined: the frame scan calls it for
/// every line it reads (a call per line cost a third of the scan).
#[inline(always)]
fn line_kind(line: &str) -> LineKind<'_> {
    let b = line.as_bytes();
    match b.first() {
        // Indented (most lines of a traceback: its source lines): never a location line,
        // and a native frame only if `File` follows the indentation.
        Some(b' ' | b'\t') => {
            return match first_after_indentation(b) {
                Some(b'F') => native_frame(line).map_or(LineKind::Other, LineKind::Frame),
                Some(b'T' | b'D') => LineKind::MayBeChain,
                _ => LineKind::Other,
            }
        }
        // Blank, `E ...`/`E` and `>` lines (the others of a traceback): not a location
        // line, not a native frame (`File` after the indentation), not a chain line; an
        // `E` line may give a syntax error's position.
        None | Some(b'>') => return LineKind::Other,
        Some(b'E') if b.get(1).is_none() => return LineKind::Other,
        // a syntax error's position ends with its line number: most `E` lines do not
        Some(b'E') if b[1] == b' ' => {
            return match b.last() {
                Some(c) if c.is_ascii_digit() => {
                    syntax_position(&line[2..]).map_or(LineKind::Other, LineKind::Frame)
                }
                _ => LineKind::Other,
            }
        }
        _ => {}
    }
    match parse_location(line) {
        Some(loc) => LineKind::Frame((loc.path, loc.line)),
        None => match native_frame(line) {
            Some(frame) => LineKind::Frame(frame),
            None if is_chain_line(line) => LineKind::MayBeChain,
            None => LineKind::Other,
        },
    }
}

/// The first byte of `b` that is not whitespace ([`is_ws`]), if any. The indentation of a
/// source line is found with one 16-byte comparison (spaces and tabs), not byte by byte.
#[inline]
fn first_after_indentation(b: &[u8]) -> Option<u8> {
    #[cfg(target_arch = "x86_64")]
    if b.len() >= 16 {
        use std::arch::x86_64::{
            _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
        };
        // SAFETY: SSE2 is part of the x86_64 baseline; one unaligned 16-byte load inside
        // the (at least 16) bytes of `b`.
        let blank = unsafe {
            let x = _mm_loadu_si128(b.as_ptr().cast());
            let spaces = _mm_cmpeq_epi8(x, _mm_set1_epi8(b' ' as i8));
            let tabs = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\t' as i8));
            _mm_movemask_epi8(_mm_or_si128(spaces, tabs)) as u32
        };
        let first = (!blank & 0xffff).trailing_zeros() as usize;
        // the other whitespace (`\n`, `\r`, VT, FF) and 16 blanks are left to the loop
        if first < 16 && !matches!(b[first], b'\n' | b'\r' | 0x0b | 0x0c) {
            return Some(b[first]);
        }
    }
    b.iter()
        .copied()
        .find(|&c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
}

/// The lines of `text` from the last to the first (split on `\n`, one trailing `\r`
/// removed from each).
fn text_lines_back(text: &str) -> LinesBack<'_> {
    LinesBack {
        text,
        end: text.len(),
        block: text.len(),
        breaks: 0,
        done: false,
    }
}

/// [`text_lines_back`]'s iterator. The builder reads every failure's frames from its
/// end, line by line: the line breaks of 64 bytes at a time are found as one bit mask,
/// so a line costs a few instructions, not a search call of its own.
struct LinesBack<'a> {
    text: &'a str,
    /// End (exclusive) of the next line.
    end: usize,
    /// Start of the 64-byte block `breaks` maps (blocks are aligned to the text's end).
    block: usize,
    /// Bit `i`: `text[block + i]` is a `\n` not yet passed.
    breaks: u64,
    done: bool,
}

impl<'a> Iterator for LinesBack<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        loop {
            if self.breaks != 0 {
                let bit = 63 - self.breaks.leading_zeros() as usize;
                self.breaks &= !(1u64 << bit);
                let at = self.block + bit;
                debug_assert!(at < self.end && self.text.as_bytes()[at] == b'\n');
                // SAFETY: `at` is a `\n` byte before `end` (bits are only set for `\n`s below
                // `end`), and `end` is the text's length or a `\n` byte's index: both ends
                // of the slice are char boundaries of the valid UTF-8 `text`.
                let line = unsafe { self.text.get_unchecked(at + 1..self.end) };
                self.end = at;
                return Some(chomp(line));
            }
            if self.block == 0 {
                if self.done {
                    return None;
                }
                self.done = true;
                return Some(chomp(&self.text[..self.end]));
            }
            let block_end = self.block;
            self.block = block_end.saturating_sub(64);
            self.breaks = newline_mask(&self.text.as_bytes()[self.block..block_end]);
        }
    }
}

/// Bit `i` set where `bytes[i]` is `\n` (at most 64 bytes).
#[inline]
fn newline_mask(bytes: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if bytes.len() == 64 {
        use std::arch::x86_64::{
            _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
        };
        // SAFETY: SSE2 is part of the x86_64 baseline; four unaligned 16-byte loads
        // inside the 64 bytes of `bytes`.
        return unsafe {
            let newline = _mm_set1_epi8(b'\n' as i8);
            let mut mask = 0u64;
            for k in 0..4 {
                let x = _mm_loadu_si128(bytes.as_ptr().add(16 * k).cast());
                let hits = _mm_movemask_epi8(_mm_cmpeq_epi8(x, newline)) as u16;
                mask |= u64::from(hits) << (16 * k);
            }
            mask
        };
    }
    bytes
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == b'\n')
        .fold(0u64, |mask, (i, _)| mask | 1u64 << i)
}

/// The innermost frames of project code in a text (docs/ENGINE.md, *Project code*):
/// `code`, the last frame line of project or test code (the location), and `key`, the
/// last of the project's code under test, else the last of its tests (the frame a group
/// is keyed by).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DeepestFrames<'a> {
    pub code: Option<FrameLine<'a>>,
    pub key: Option<FrameLine<'a>>,
    /// A frame of the project's code under test (not test code) was found.
    pub under_test: bool,
}

impl<'a> DeepestFrames<'a> {
    /// Read the frame lines of `text` (location lines and native-format lines) from the
    /// end, up to the first of the project's code under test (nothing before it counts).
    pub(crate) fn of(text: &'a str, project: Option<&ProjectCode>, kinds: &mut PathKinds) -> Self {
        Self::scan(text, project, kinds).0
    }

    /// [`DeepestFrames::of`], and how much of `text` was read: (frames, the end of the
    /// part not read, whether a line read is a chain line). Every line from that end on
    /// was read.
    fn scan(
        text: &'a str,
        project: Option<&ProjectCode>,
        kinds: &mut PathKinds,
    ) -> (Self, usize, bool) {
        let mut deepest = DeepestFrames::default();
        let mut chain_seen = false;
        for line in text_lines_back(text) {
            let frame = match line_kind(line) {
                LineKind::Frame(frame) => frame,
                LineKind::MayBeChain => {
                    chain_seen = chain_seen || is_chain_line(line);
                    continue;
                }
                LineKind::Other => continue,
            };
            if deepest.take(frame, kinds.kind(frame.0, project)) {
                // `line` is a slice of `text`: the lines before it were not read
                let start = line.as_ptr() as usize - text.as_ptr() as usize;
                return (deepest, start, chain_seen);
            }
        }
        (deepest, 0, chain_seen)
    }

    /// [`DeepestFrames::of`] of frames given as data (a structured `longrepr`'s,
    /// [`ReprFrames`]), outermost first: read from the last, as the text's lines are.
    fn of_data(
        frames: &'a [ReprFrame],
        project: Option<&ProjectCode>,
        kinds: &mut PathKinds,
    ) -> Self {
        let mut deepest = DeepestFrames::default();
        for frame in frames.iter().rev() {
            let path = frame.path.as_str();
            if deepest.take((path, frame.line), kinds.kind(path, project)) {
                break;
            }
        }
        deepest
    }

    /// Take `frame`, the innermost not read yet, of kind `kind`; true once it is the
    /// project's code under test (no outer frame counts then).
    #[inline]
    fn take(&mut self, frame: FrameLine<'a>, kind: CodeKind) -> bool {
        match kind {
            CodeKind::Library => false,
            CodeKind::Test => {
                self.code.get_or_insert(frame);
                self.key.get_or_insert(frame);
                false
            }
            CodeKind::Project => {
                self.code.get_or_insert(frame);
                self.key = Some(frame);
                self.under_test = true;
                true
            }
        }
    }
}

/// Both chain lines say this; a text without it has a single exception.
const CHAIN_MARK: &[u8] = b"above exception";

/// The frames a failure is located and grouped by (docs/ENGINE.md, *Chained
/// exceptions*): those of its root cause, the text before the first chain line, when
/// that part has a frame of project code (`root` is then that text); else those of the
/// whole text (`root` None).
pub(crate) struct FailureFrames<'a> {
    pub frames: DeepestFrames<'a>,
    pub root: Option<&'a str>,
}

impl<'a> FailureFrames<'a> {
    pub(crate) fn of(text: &'a str, project: Option<&ProjectCode>, kinds: &mut PathKinds) -> Self {
        // One searcher for the run: building one per failure cost more than the search.
        static CHAIN_FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
            std::sync::LazyLock::new(|| memchr::memmem::Finder::new(CHAIN_MARK));
        // The whole text's frames first (texts rarely have a chain line): its lines read
        // from the end were checked for chain lines on the way, so only the part before
        // them is searched for one (a line is either read or wholly in that part).
        let (whole, unread, chain_seen) = DeepestFrames::scan(text, project, kinds);
        if chain_seen || CHAIN_FINDER.find(&text.as_bytes()[..unread]).is_some() {
            if let Some(chain) = text_lines(text).find(|line| is_chain_line(line)) {
                // `chain` is a slice of `text`: its start is where the root ends
                let root = &text[..chain.as_ptr() as usize - text.as_ptr() as usize];
                let frames = DeepestFrames::of(root, project, kinds);
                if frames.code.is_some() {
                    return FailureFrames {
                        frames,
                        root: Some(root),
                    };
                }
            }
        }
        FailureFrames {
            frames: whole,
            root: None,
        }
    }

    /// [`FailureFrames::of`] of a failure whose frames are data ([`ReprFrames`], of a
    /// structured `longrepr`), `text` its rendering (the root's text is cut from it).
    pub(crate) fn of_data(
        repr: &'a ReprFrames,
        text: &'a str,
        project: Option<&ProjectCode>,
        kinds: &mut PathKinds,
    ) -> Self {
        if let Some((n, at)) = repr.root {
            let frames = DeepestFrames::of_data(&repr.frames[..n], project, kinds);
            if frames.code.is_some() {
                return FailureFrames {
                    frames,
                    root: Some(&text[..at]),
                };
            }
        }
        FailureFrames {
            frames: DeepestFrames::of_data(&repr.frames, project, kinds),
            root: None,
        }
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

/// The length of the shorter of [`CHAIN_LINES`].
const SHORTEST_CHAIN_LINE: usize = {
    let (a, b) = (CHAIN_LINES[0].len(), CHAIN_LINES[1].len());
    if a < b {
        a
    } else {
        b
    }
};

pub(crate) fn is_chain_line(line: &str) -> bool {
    // every line of every failure is asked: its length, its last byte (both chain lines
    // end with ':', and a line is rarely followed by whitespace) and its first non-blank
    // byte turn most away
    if line.len() < SHORTEST_CHAIN_LINE
        || !matches!(
            line.as_bytes().last(),
            Some(b':' | b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c')
        )
    {
        return false;
    }
    let start = strip_start(line);
    matches!(start.as_bytes().first(), Some(b'T' | b'D')) && CHAIN_LINES.contains(&strip(start))
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
    line.len() - strip_start(line).len()
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
/// Returns (cut text joined by `\n`, number of input lines dropped that a larger budget
/// shows: all but library frames' lines, step 7). `max_lines` is the
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
    let (shown, omitted) = cut_lines(
        text,
        max_lines,
        max_line_chars,
        context_lines,
        project,
        None,
    );
    (joined(&shown), omitted)
}

/// [`cut_traceback_for`]'s lines before they are joined: kept lines (capped, paths as
/// shown) and markers, and the number of input lines dropped but library frames'. `repr`: the frames of a
/// text rendered from a structured `longrepr` (docs/ENGINE.md, *Frames as data*): its
/// frames, their paths, its separator and chain lines and its location lines are theirs,
/// not read from the lines.
fn cut_lines<'a>(
    text: &'a str,
    max_lines: usize,
    max_line_chars: usize,
    context_lines: usize,
    project: Option<&ProjectCode>,
    repr: Option<&'a ReprFrames>,
) -> (Vec<Shown>, u64) {
    let max_lines = max_lines.max(3);
    let max_line_chars = max_line_chars.max(8);

    // Step 1.
    let all: Vec<&str> = text_lines(text).collect();
    let first = all.iter().position(|l| !strip(l).is_empty());
    let Some(first) = first else {
        return (Vec::new(), 0);
    };
    let last = all
        .iter()
        .rposition(|l| !strip(l).is_empty())
        .expect("a non-blank line exists");
    let lines = &all[first..=last];
    let n = lines.len();
    let mut dropped = vec![false; n];
    let mut kinds: HashMap<&str, CodeKind, FastHash> = HashMap::default();

    // Step 2: frames and blocks, and the path of each frame.
    let (frames, block_separator, paths) = match repr {
        Some(repr) => frames_of_data(repr, lines, first),
        None => frames_of_lines(lines),
    };
    let mut block_kept = vec![false; block_separator.len()];
    for (frame, path) in frames.iter().zip(&paths) {
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

    // The lines steps 2-3 dropped as library code: no budget shows them, so they are
    // not counted as omitted (their markers still say they were there).
    let library_lines = dropped.iter().filter(|&&d| d).count() as u64;

    // pytest's fixture listing (a fixture lookup error's): step 4 never drops it.
    let listing = listing_lines(lines);
    let in_listing = |j: usize| listing.as_ref().is_some_and(|l| l[j]);

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
            if !is_essential(lines[j]) && !in_listing(j) {
                dropped[j] = true;
            }
        }
    }

    // A chained text whose root cause (the lines before the first chain line) has a frame
    // of project code: the first chain line, and the start of the root's innermost
    // project frame (step 6 keeps both).
    let first_chain = match repr {
        Some(repr) => repr
            .boundaries
            .iter()
            .find(|&&(at, chain)| chain && (first..first + n).contains(&at))
            .map(|&(at, _)| at - first),
        None => lines.iter().position(|l| is_chain_line(l)),
    };
    let chain = first_chain.and_then(|c| {
        let k = match repr {
            Some(repr) => repr
                .frames
                .iter()
                .rev()
                .filter(|f| (first..first + c).contains(&f.at))
                .find(|f| !is_library(&mut kinds, &f.path, project))
                .map(|f| f.at - first),
            None => (0..c).rev().find(|&j| {
                frame_line(lines[j]).is_some_and(|(p, _)| !is_library(&mut kinds, p, project))
            }),
        }?;
        let frame = frames.iter().find(|f| f.start <= k && k < f.end)?;
        Some((c, frame.start))
    });
    // The location lines (step 6 of a chained text keeps the head up to the first).
    let data_locations: Option<Vec<bool>> = repr.map(|repr| {
        let mut marked = vec![false; n];
        for f in repr.frames.iter() {
            if let (Some(j), true) = (
                f.at.checked_sub(first).filter(|&j| j < n),
                f.kind != FrameKind::SyntaxPosition,
            ) {
                marked[j] = true;
            }
        }
        marked
    });
    let is_location = |j: usize| match &data_locations {
        Some(marked) => marked[j],
        None => parse_location(lines[j]).is_some(),
    };

    // Step 7 (runs of dropped lines -> one marker), then step 6 (head + tail).
    let mut pieces: Vec<Piece> = Vec::new();
    // The pieces holding the root frame's first line and the first chain line.
    let mut chain_pieces = (0, 0);
    // The piece of the text's first kept location line (the test's own frame).
    let mut first_location: Option<usize> = None;
    for (j, &d) in dropped.iter().enumerate() {
        if d {
            add_gap(&mut pieces, 1);
        } else {
            pieces.push(Piece::Line(j));
            if first_location.is_none() && chain.is_some() && is_location(j) {
                first_location = Some(pieces.len() - 1);
            }
        }
        match chain {
            Some((c, _)) if c == j => chain_pieces.1 = pieces.len() - 1,
            Some((_, root)) if root == j => chain_pieces.0 = pieces.len() - 1,
            _ => {}
        }
    }
    if pieces.len() > max_lines && chain.is_some() {
        let (root, chain) = chain_pieces;
        pieces = cut_chained(&pieces, lines, max_lines, first_location, root, chain);
    } else if pieces.len() > max_lines {
        let head = max_lines / 3;
        let mut cut: Vec<Piece> = Vec::with_capacity(max_lines);
        cut.extend_from_slice(&pieces[..head]);
        for p in omitted_then_tail(&pieces[head..], max_lines - head, lines) {
            push_piece(&mut cut, p);
        }
        pieces = cut;
    }

    // Steps 8-9.
    let closing = match (&listing, project) {
        (Some(_), Some(_)) => fixture_closing(lines),
        _ => None,
    };
    let mut shown = Vec::with_capacity(pieces.len());
    let mut omitted = 0u64;
    for piece in &pieces {
        match piece {
            Piece::Line(j) => {
                let mut line = String::new();
                match (project, closing) {
                    (None, _) => push_capped(&mut line, lines[*j], max_line_chars),
                    (Some(p), Some((at, (path, n)))) if at == *j => {
                        let shown = format!("{}:{n}", display_path(path, Some(p)));
                        push_capped(&mut line, &shown, max_line_chars);
                    }
                    (Some(p), _) => {
                        push_capped(&mut line, &display_line(lines[*j], p), max_line_chars)
                    }
                }
                shown.push(Shown::Line(line));
            }
            Piece::Gap(g) => {
                omitted += g;
                shown.push(Shown::Gap(*g));
            }
        }
    }
    // Every line steps 2-3 dropped is in a marker (later steps only drop more).
    (shown, omitted - library_lines)
}

/// Step 2's frames being cut out of a text's lines, in line order.
struct Partition {
    frames: Vec<Frame>,
    /// The separator line introducing each block (None for the first block and after a
    /// chain line).
    block_separator: Vec<Option<usize>>,
    frame_start: usize,
}

impl Partition {
    fn new() -> Self {
        Partition {
            frames: Vec::new(),
            block_separator: vec![None],
            frame_start: 0,
        }
    }

    /// Line `i` separates frames (a separator line) or sections (a chain line): it ends
    /// the frame before it and starts a block; it is in no frame.
    fn boundary(&mut self, i: usize, chain: bool) {
        self.end_frame(i, chain);
        self.block_separator
            .push(if chain { None } else { Some(i) });
        self.frame_start = i + 1;
    }

    /// Line `i` starts a frame in the same block (a short-style entry's header).
    fn split(&mut self, i: usize) {
        self.end_frame(i, false);
        self.frame_start = i;
    }

    fn end_frame(&mut self, end: usize, section_end: bool) {
        self.frames.push(Frame {
            start: self.frame_start,
            end,
            block: self.block_separator.len() - 1,
            section_end,
        });
    }

    /// The frames of `n` lines (the last ends its section) and the blocks' separators.
    fn finish(mut self, n: usize) -> (Vec<Frame>, Vec<Option<usize>>) {
        self.end_frame(n, true);
        (self.frames, self.block_separator)
    }
}

/// Step 2 read from the lines: a separator or chain line ends a frame; a short-style
/// entry's header, a location line whose rest starts `in `, starts one once the frame
/// has a non-blank line; each frame's path is its last location line's, else its first
/// native-format line's. Returns the frames, the blocks' separators and the paths.
#[allow(clippy::type_complexity)]
fn frames_of_lines<'a>(
    lines: &[&'a str],
) -> (Vec<Frame>, Vec<Option<usize>>, Vec<Option<&'a str>>) {
    let mut partition = Partition::new();
    let mut frame_has_text = false;
    for (i, line) in lines.iter().enumerate() {
        let separator = is_separator_line(line);
        if separator || is_chain_line(line) {
            partition.boundary(i, !separator);
            frame_has_text = false;
            continue;
        }
        if frame_has_text && parse_location(line).is_some_and(|loc| loc.rest.starts_with("in ")) {
            partition.split(i);
        }
        if !strip(line).is_empty() {
            frame_has_text = true;
        }
    }
    let (frames, block_separator) = partition.finish(lines.len());
    let paths = frames
        .iter()
        .map(|frame| {
            let body = &lines[frame.start..frame.end];
            body.iter()
                .rev()
                .find_map(|l| parse_location(l).map(|loc| loc.path))
                .or_else(|| body.iter().find_map(|l| native_frame(l).map(|f| f.0)))
        })
        .collect();
    (frames, block_separator, paths)
}

/// Step 2 of a text rendered from a structured `longrepr` (docs/ENGINE.md, *Frames as
/// data*): as [`frames_of_lines`], with `repr`'s separator and chain lines, its
/// short-style headers and its file locations (`repr`'s line `first` is `lines[0]`).
#[allow(clippy::type_complexity)]
fn frames_of_data<'a>(
    repr: &'a ReprFrames,
    lines: &[&str],
    first: usize,
) -> (Vec<Frame>, Vec<Option<usize>>, Vec<Option<&'a str>>) {
    let n = lines.len();
    let within = |at: usize| at.checked_sub(first).filter(|&j| j < n);
    // (line, None for a header, Some(chain) for a separator or chain line), in line order
    let mut events: Vec<(usize, Option<bool>)> = repr
        .boundaries
        .iter()
        .filter_map(|&(at, chain)| Some((within(at)?, Some(chain))))
        .chain(
            repr.frames
                .iter()
                .filter(|f| f.kind == FrameKind::Header)
                .filter_map(|f| Some((within(f.at)?, None))),
        )
        .collect();
    events.sort_unstable();
    let mut partition = Partition::new();
    for (i, event) in events {
        match event {
            Some(chain) => partition.boundary(i, chain),
            None if (partition.frame_start..i).any(|j| !strip(lines[j]).is_empty()) => {
                partition.split(i)
            }
            None => {}
        }
    }
    let (frames, block_separator) = partition.finish(n);
    // A frame's path is its last location's: both lists are in line order, so one walk
    // (a deep traceback's thousand frames cost a thousand steps, not a million).
    let mut locations = repr
        .frames
        .iter()
        .filter(|f| f.kind != FrameKind::SyntaxPosition)
        .filter_map(|f| Some((within(f.at)?, f.path.as_str())))
        .peekable();
    let paths = frames
        .iter()
        .map(|frame| {
            let mut path = None;
            while let Some(&(j, p)) = locations.peek() {
                if j >= frame.end {
                    break;
                }
                if j >= frame.start {
                    path = Some(p);
                }
                locations.next();
            }
            path
        })
        .collect();
    (frames, block_separator, paths)
}

/// A kept line with the path of a location line, native-format frame line or fixture
/// listing header shown through [`display_path`]; other lines unchanged.
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
    if let Some((path, _)) = listing_header(line) {
        if let Cow::Owned(shown) = display_path(path, Some(project)) {
            let start = "file ".len();
            return format!("file {shown}{}", &line[start + path.len()..]).into();
        }
    }
    line.into()
}

/// Library code by [`classify`], remembered per path.
fn is_library<'a>(
    kinds: &mut HashMap<&'a str, CodeKind, FastHash>,
    path: &'a str,
    project: Option<&ProjectCode>,
) -> bool {
    *kinds.entry(path).or_insert_with(|| classify(path, project)) == CodeKind::Library
}

/// Lines (or markers' lines) a run of pieces stands for.
fn lines_in(pieces: &[Piece]) -> u64 {
    pieces
        .iter()
        .map(|p| match p {
            Piece::Line(_) => 1,
            Piece::Gap(g) => *g,
        })
        .sum()
}

fn push_piece(pieces: &mut Vec<Piece>, piece: Piece) {
    match piece {
        Piece::Gap(g) => add_gap(pieces, g),
        line => pieces.push(line),
    }
}

/// Step 6 of a chained text whose root cause has a project frame (docs/ENGINE.md,
/// *Chained exceptions*): the text's head up to its first location line (the test's own
/// frame) when that is within `max_lines / 3` lines and before the root's frame; then
/// the root's end from its innermost project frame on (at least half of what is left,
/// less one, at most all of it less four), a marker for what precedes it; then the rest
/// from the first chain line (`chain`) on, its tail when it does not fit (a marker
/// first). `root`: the piece holding that frame's first line.
fn cut_chained(
    pieces: &[Piece],
    lines: &[&str],
    max_lines: usize,
    first_location: Option<usize>,
    root: usize,
    chain: usize,
) -> Vec<Piece> {
    let head = match first_location {
        // at most a third, and three lines left for the root and the final exception
        Some(p) if p < max_lines / 3 && p < root && p + 4 <= max_lines => p + 1,
        _ => 0,
    };
    let budget = max_lines - head;
    // all but four at most: the marker before it, then the first chain line and the final
    // exception's line with a marker between (the tail rule)
    let keep_root = (budget / 2)
        .saturating_sub(1)
        .max(chain - root)
        .min(budget.saturating_sub(4));
    let start = chain.saturating_sub(keep_root).max(head);
    let mut cut: Vec<Piece> = Vec::with_capacity(max_lines);
    for p in &pieces[..head] {
        push_piece(&mut cut, *p);
    }
    if start > head {
        add_gap(&mut cut, lines_in(&pieces[head..start]));
    }
    for p in &pieces[start..chain] {
        push_piece(&mut cut, *p);
    }
    let room = max_lines - cut.len();
    for p in omitted_then_tail(&pieces[chain..], room, lines) {
        push_piece(&mut cut, p);
    }
    cut
}

/// An omitted run of pieces as written (docs/ENGINE.md, *Traceback cutting*, step 6):
/// one marker, except that its first and last chain lines stay in place, with a marker
/// for the lines before, between and after them that are not empty.
fn omitted_keeping_chains(segment: &[Piece], lines: &[&str]) -> Vec<Piece> {
    let is_chain = |p: &Piece| matches!(p, Piece::Line(j) if is_chain_line(lines[*j]));
    let mut out = Vec::new();
    let mut at = 0;
    if let (Some(first), Some(last)) = (
        segment.iter().position(is_chain),
        segment.iter().rposition(is_chain),
    ) {
        let kept: &[usize] = if first == last {
            &[first][..]
        } else {
            &[first, last][..]
        };
        for &k in kept {
            if k > at {
                add_gap(&mut out, lines_in(&segment[at..k]));
            }
            out.push(segment[k]);
            at = k + 1;
        }
    }
    if at < segment.len() {
        add_gap(&mut out, lines_in(&segment[at..]));
    }
    out
}

/// `pieces` in at most `room` pieces (step 6): all of them when they fit; else the
/// longest tail that fits after the rest written by [`omitted_keeping_chains`], of at
/// least one piece; when none does (more chain lines than room), one marker and a tail
/// of `room - 1`.
fn omitted_then_tail(pieces: &[Piece], room: usize, lines: &[&str]) -> Vec<Piece> {
    if pieces.len() <= room {
        return pieces.to_vec();
    }
    // the last piece (the final exception's line) stays
    for tail in (1..room).rev() {
        let split = pieces.len() - tail;
        let mut out = omitted_keeping_chains(&pieces[..split], lines);
        for p in &pieces[split..] {
            push_piece(&mut out, *p);
        }
        if out.len() <= room {
            return out;
        }
    }
    let split = (pieces.len() + 1).saturating_sub(room).min(pieces.len());
    let mut out = vec![Piece::Gap(lines_in(&pieces[..split]))];
    for p in &pieces[split..] {
        push_piece(&mut out, *p);
    }
    out
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
    // A character is at least a byte: a line of at most `max_chars` bytes is whole.
    if s.len() <= max_chars {
        out.push_str(s);
        return;
    }
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

// ---------------------------------------------------------------------------------
// The shown traceback: what a listed failure's traceback says after the cut
// (docs/ENGINE.md, *Traceback cutting*, "The shown traceback"). Each rule leaves out
// or shortens what pytest says twice or what an agent cannot act on; none adds a fact.

/// One line of a cut traceback: a kept line (capped, its path as shown), or the marker
/// for `n` dropped lines (`... [n lines omitted]`, written only when joined).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Shown {
    Line(String),
    Gap(u64),
}

impl Shown {
    /// The line's text; None for a marker (no rule below matches a marker's text).
    fn text(&self) -> Option<&str> {
        match self {
            Shown::Line(line) => Some(line),
            Shown::Gap(_) => None,
        }
    }

    /// A line of whitespace only (a marker never is).
    fn is_blank(&self) -> bool {
        self.text().is_some_and(|t| strip(t).is_empty())
    }
}

/// The lines joined by `\n`, markers written `... [N lines omitted]`.
fn joined(shown: &[Shown]) -> String {
    let mut out = String::new();
    for (k, line) in shown.iter().enumerate() {
        if k > 0 {
            out.push('\n');
        }
        match line {
            Shown::Line(text) => out.push_str(text),
            Shown::Gap(g) => out.push_str(&format!("... [{g} lines omitted]")),
        }
    }
    out
}

/// What the shown-traceback rules know of the failure whose traceback they tidy.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FailureContext<'a> {
    /// The failure's node id (`tests/test_x.py::TestDict::test_valmap[1]`).
    pub node_id: &'a str,
    /// The failure's location as listed (path as shown, line).
    pub location: Option<(&'a str, Option<u64>)>,
    /// The failure's exception as listed (`requests.exceptions.ConnectionError`).
    pub exception: Option<&'a str>,
    /// The frames of its text as data, when it has them (docs/ENGINE.md, *Frames as
    /// data*): the cut reads its frames from them.
    pub frames: Option<&'a ReprFrames>,
}

/// A listed failure's traceback: [`cut_traceback_for`], then the shown-traceback rules
/// (docs/ENGINE.md, *Traceback cutting*, "The shown traceback"; mirrored by
/// `shown_traceback` in `pure/cut.py`). Returns (text, input lines dropped by the cut:
/// the sum of the markers the cut wrote, whether or not a rule folded one away, less the
/// library frames' lines, which no budget shows).
pub(crate) fn shown_traceback_for(
    text: &str,
    max_lines: usize,
    max_line_chars: usize,
    context_lines: usize,
    project: Option<&ProjectCode>,
    failure: FailureContext<'_>,
) -> (String, u64) {
    let (mut shown, omitted) = cut_lines(
        text,
        max_lines,
        max_line_chars,
        context_lines,
        project,
        failure.frames,
    );
    let closed = without_closing_line(&mut shown, failure);
    let shown = last_frame_carets(shown);
    let shown = without_own_instance(shown, failure.node_id);
    let shown = without_restated_diff(shown);
    let shown = without_rerun_hints(shown);
    let compact = context_lines == 0;
    let shown = without_redundant_full_diff(shown, compact);
    let shown = if compact {
        compact_frames(shown, failure.location.filter(|_| closed))
    } else {
        shown
    };
    (joined(&fold_repeats(&shown)), omitted)
}

/// Rule 1: pytest's closing `path:line: ExceptionName` line, when it says the listed
/// location and the exception's last dotted name, or a closing `path:line` (a fixture
/// lookup error's) of the listed location, and the blank lines before it. Returns
/// whether a line naming the exception went (rule 8 then takes the location for the
/// last frame's).
fn without_closing_line(shown: &mut Vec<Shown>, failure: FailureContext<'_>) -> bool {
    let Some((path, Some(line))) = failure.location else {
        return false;
    };
    let last = shown.last().and_then(Shown::text);
    // pytest's `path:line: Name`, or a fixture lookup error's `path:line` (no exception)
    let named = match failure.exception.filter(|e| !e.is_empty()) {
        Some(exception) => {
            let name = exception.rsplit('.').next().unwrap_or(exception);
            last == Some(format!("{path}:{line}: {name}").as_str())
        }
        None => false,
    };
    if !named && last != Some(format!("{path}:{line}").as_str()) {
        return false;
    }
    shown.pop();
    while shown.last().is_some_and(Shown::is_blank) {
        shown.pop();
    }
    named
}

/// The separator of two frames as shown: the boundary stays, its width goes.
const SHOWN_SEPARATOR: &str = "_ _ _ _ _";

/// Python's marker under the running part of a source line: stripped, only `^` and `~`.
fn is_caret_line(line: &str) -> bool {
    let t = strip(line);
    !t.is_empty() && t.bytes().all(|b| b == b'^' || b == b'~')
}

/// A frame's first line: a separator, or a short-style entry header (`a.py:3: in f`).
fn starts_frame(line: &str) -> bool {
    is_separator_line(line) || parse_location(line).is_some_and(|loc| loc.rest.starts_with("in "))
}

/// Rules 2-3: caret lines only in the last frame (elsewhere they underline the call
/// the next frame names), and longer separators written [`SHOWN_SEPARATOR`] (never
/// longer than the line was: a line only gets shorter).
fn last_frame_carets(shown: Vec<Shown>) -> Vec<Shown> {
    let last_start = shown
        .iter()
        .rposition(|l| l.text().is_some_and(starts_frame))
        .unwrap_or(0);
    shown
        .into_iter()
        .enumerate()
        .filter(|(i, l)| *i >= last_start || !l.text().is_some_and(is_caret_line))
        .map(|(_, l)| match l {
            Shown::Line(t) if t.len() > SHOWN_SEPARATOR.len() && is_separator_line(&t) => {
                Shown::Line(SHOWN_SEPARATOR.to_owned())
            }
            other => other,
        })
        .collect()
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The class of pytest's `self = <pkg.mod.Cls object at 0x7f...>` line, or of
/// unittest's `self = <pkg.mod.Cls testMethod=test_x>` (ASCII word characters).
fn instance_class(line: &str) -> Option<&str> {
    let inner = line.strip_prefix("self = <")?.strip_suffix('>')?;
    let (qualified, rest) = inner.split_once(' ')?;
    if qualified.is_empty() || !qualified.bytes().all(|b| is_word_byte(b) || b == b'.') {
        return None;
    }
    let (prefix, class) = match qualified.rfind('.') {
        Some(dot) => (&qualified[..=dot], &qualified[dot + 1..]),
        None => ("", qualified),
    };
    if class.is_empty() || prefix.len() == 1 {
        return None;
    }
    let valid = if let Some(hex) = rest.strip_prefix("object at 0x") {
        !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit())
    } else if let Some(name) = rest.strip_prefix("testMethod=") {
        !name.is_empty() && name.bytes().all(is_word_byte)
    } else {
        false
    };
    valid.then_some(class)
}

/// Rule 4: the `self` line of the test's own instance (a class the node id names,
/// `tests/test_x.py::TestDict::test_valmap`) and the blank line after it.
fn without_own_instance(shown: Vec<Shown>, node_id: &str) -> Vec<Shown> {
    let before_params = node_id.split('[').next().unwrap_or(node_id);
    let classes: Vec<&str> = before_params.split("::").skip(1).collect();
    let mut out = Vec::with_capacity(shown.len());
    let mut skip_blank = false;
    for line in shown {
        if std::mem::take(&mut skip_blank) && line.is_blank() {
            continue;
        }
        if line
            .text()
            .and_then(instance_class)
            .is_some_and(|class| classes.contains(&class))
        {
            skip_blank = true;
            continue;
        }
        out.push(line);
    }
    out
}

/// `E`, whitespace, `-` or `+`, a space, the rest: (sign, rest).
fn diff_line(line: &str) -> Option<(char, &str)> {
    let after = line.strip_prefix('E')?;
    let t = strip_start(after);
    if t.len() == after.len() {
        return None;
    }
    let sign = t.chars().next().filter(|c| *c == '-' || *c == '+')?;
    Some((sign, t[1..].strip_prefix(' ')?))
}

/// Rule 5: pytest's two-line diff of two strings when it only restates the `assert`
/// line above it (`E  assert 'B' == 'C'`, `E`, `E  - C`, `E  + B`, the last `E` lines).
fn without_restated_diff(mut shown: Vec<Shown>) -> Vec<Shown> {
    let len = shown.len();
    for i in (1..len.saturating_sub(2)).rev() {
        let text = |k: usize| shown.get(k).and_then(Shown::text);
        if text(i).map(strip) != Some("E") || text(i + 3).is_some_and(|t| t.starts_with('E')) {
            continue;
        }
        let (Some(('-', minus)), Some(('+', plus))) = (
            text(i + 1).and_then(diff_line),
            text(i + 2).and_then(diff_line),
        ) else {
            continue;
        };
        let restated = format!("'{plus}' == '{minus}'");
        if text(i - 1).is_some_and(|a| a.starts_with("E ") && a.ends_with(&restated)) {
            shown.drain(i..i + 3);
        }
    }
    shown
}

/// pytest's advice to re-run verbose at a line's end (`_pytest/assertion/util.py`,
/// `truncate.py`), longest first.
const RERUN_HINT_ENDS: [&str; 6] = [
    ", use -vv to show",
    ", use -v to show",
    " use -vv to show",
    " use -v to show",
    ", use '-vv' to show",
    ", use '-v' to show",
];

/// pytest's advice as a whole line: `E` + whitespace + one of these.
const RERUN_HINT_LINES: [&str; 2] = ["Use -v to get more diff", "Use -v to get the full diff"];

/// `line` without pytest's advice to re-run verbose; None when nothing else is left
/// but whitespace or a bare `E`.
fn without_rerun_hint(line: &str) -> Option<String> {
    let whole = line.strip_prefix('E').is_some_and(|after| {
        let t = strip_start(after);
        t.len() < after.len() && RERUN_HINT_LINES.contains(&t)
    });
    let kept = if whole {
        ""
    } else {
        match RERUN_HINT_ENDS
            .iter()
            .find_map(|end| line.strip_suffix(end))
        {
            Some(kept) => kept,
            None => return Some(line.to_owned()),
        }
    };
    let t = strip(kept);
    (!t.is_empty() && t != "E").then(|| kept.to_owned())
}

/// Rule 6: pytest's advice to re-run verbose (an agent cannot add options).
fn without_rerun_hints(shown: Vec<Shown>) -> Vec<Shown> {
    shown
        .into_iter()
        .filter_map(|line| match line {
            Shown::Line(t) => without_rerun_hint(&t).map(Shown::Line),
            gap => Some(gap),
        })
        .collect()
}

/// An `E` line: (the whitespace after `E`, the text after it).
fn e_text(line: &str) -> Option<(&str, &str)> {
    let after = line.strip_prefix('E')?;
    let text = strip_start(after);
    Some((&after[..after.len() - text.len()], text))
}

/// Rule 7: pytest's `Full diff:` block when the lines above say it (a dict's
/// `Differing items:`, or an `assert a == b` line with both sides whole) becomes one
/// line saying how many lines it held (markers inside it counted by their lines); with
/// `compact` (rule 8's frames), it goes without that line.
fn without_redundant_full_diff(shown: Vec<Shown>, compact: bool) -> Vec<Shown> {
    let mut out = Vec::with_capacity(shown.len());
    let mut differing = false;
    let mut whole_sides = false;
    let mut i = 0;
    while i < shown.len() {
        let e = shown[i].text().and_then(e_text);
        if let Some((ws, text)) = e {
            if text == "Differing items:" {
                differing = true;
            }
            let said = text.strip_prefix("AssertionError: ").unwrap_or(text);
            if said.starts_with("assert ") && said.contains(" == ") {
                // pytest < 8 cuts long reprs with "..."
                whole_sides = !said.ends_with('…') && !said.contains("...");
            }
            if (differing || whole_sides) && text.starts_with("Full diff:") {
                let indent = ws.len();
                let mut j = i + 1;
                let mut left_out = 0u64;
                while j < shown.len() {
                    match &shown[j] {
                        Shown::Line(t) => match e_text(t) {
                            Some((w, x)) if w.len() >= indent && !x.is_empty() => left_out += 1,
                            _ => break,
                        },
                        Shown::Gap(g) => left_out += g,
                    }
                    j += 1;
                }
                if left_out > 0 {
                    let why = if differing {
                        "the differing items above"
                    } else {
                        "both sides are whole in the assert line above"
                    };
                    if !compact {
                        out.push(Shown::Line(format!(
                            "E{ws}Full diff: [{left_out} lines left out: {why}]"
                        )));
                    }
                    i = j;
                    continue;
                }
            }
        } else {
            differing = false;
            whole_sides = false;
        }
        out.push(shown[i].clone());
        i += 1;
    }
    out
}

/// Rule 8 (`max_frame_context_lines` 0): each long-format frame on one line,
/// `path:N: statement`, as pytest's `--tb=short` and Python's own tracebacks write a
/// frame. A frame is the lines between separators (which go), chain lines (which stay)
/// and short-style entry headers (`path:N: in f`, which start a frame and stay as they
/// are). In a frame with a `>` line and a location line after it (`location`: the
/// closing line rule 1 took, which stands for the last frame's), the lines before the `>` line go
/// (markers too: their lines stay counted), the `>` line becomes the location's
/// `path:N:`, a space and the statement, the location line and the blank lines and bare
/// `E` lines go, and a caret line keeps its column under the statement (it goes when it
/// starts left of it). Other frames stay as they are.
fn compact_frames(shown: Vec<Shown>, location: Option<(&str, Option<u64>)>) -> Vec<Shown> {
    let mut frames: Vec<Vec<Shown>> = vec![Vec::new()];
    for line in shown {
        let text = line.text();
        if text.is_some_and(is_separator_line) {
            frames.push(Vec::new());
        } else if text.is_some_and(is_chain_line) {
            frames.push(vec![line]);
            frames.push(Vec::new());
        } else {
            if text.is_some_and(starts_frame) && frames.last().is_some_and(|f| !f.is_empty()) {
                frames.push(Vec::new());
            }
            if let Some(frame) = frames.last_mut() {
                frame.push(line);
            }
        }
    }
    let last = frames.iter().rposition(|f| !f.is_empty()).unwrap_or(0);
    let mut out = Vec::new();
    for (i, frame) in frames.into_iter().enumerate() {
        compact_frame(frame, if i == last { location } else { None }, &mut out);
    }
    out
}

/// One frame of rule 8 (`location`: the listed location when it is the last frame),
/// written to `out`.
fn compact_frame(frame: Vec<Shown>, location: Option<(&str, Option<u64>)>, out: &mut Vec<Shown>) {
    let Some(arrow) = frame
        .iter()
        .position(|l| l.text().is_some_and(|t| t.starts_with('>')))
    else {
        out.extend(frame);
        return;
    };
    let mut closing = None;
    let mut place = None;
    for i in (arrow + 1..frame.len()).rev() {
        if let Some(loc) = frame[i].text().and_then(parse_location) {
            if !loc.rest.starts_with("in ") {
                closing = Some(i);
                place = Some(format!("{}:{}:", loc.path, loc.line));
                break;
            }
        }
    }
    let place = match (place, location) {
        (Some(place), _) => place,
        (None, Some((path, Some(line)))) => format!("{path}:{line}:"),
        (None, _) => {
            out.extend(frame);
            return;
        }
    };
    let statement = &frame[arrow].text().unwrap_or_default()[1..];
    // where the statement starts in the `>` line
    let column = 1 + indentation(statement);
    let prefix = place.chars().count() + 1;
    out.push(Shown::Line(format!("{place} {}", strip(statement))));
    for (i, line) in frame.into_iter().enumerate().skip(arrow + 1) {
        if Some(i) == closing || line.is_blank() || line.text().is_some_and(|t| strip(t) == "E") {
            continue;
        }
        match line.text() {
            Some(t) if is_caret_line(t) => {
                let Some(shift) = indentation(t).checked_sub(column) else {
                    continue;
                };
                out.push(Shown::Line(format!(
                    "{}{}",
                    " ".repeat(prefix + shift),
                    strip(t)
                )));
            }
            _ => out.push(line),
        }
    }
}

/// Longest block of lines whose consecutive repeats rule 9 folds into one count.
pub(crate) const REPEAT_BLOCK_LINES: usize = 4;

/// Rule 9: each run of a repeated block (1 to [`REPEAT_BLOCK_LINES`] lines, one not
/// blank: a recursion's frame, a diff's identical lines) written once and followed by
/// `... [the N lines above repeat M more times]`, when that saves at least two lines.
fn fold_repeats(lines: &[Shown]) -> Vec<Shown> {
    let mut out = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let (mut best_period, mut best_repeats) = (0usize, 0usize);
        for period in 1..=REPEAT_BLOCK_LINES {
            if i + period > lines.len() {
                break;
            }
            let block = &lines[i..i + period];
            if block.iter().all(Shown::is_blank) {
                break;
            }
            let mut repeats = 1;
            while lines.get(i + repeats * period..i + (repeats + 1) * period) == Some(block) {
                repeats += 1;
            }
            if (repeats - 1) * period > best_repeats.saturating_sub(1) * best_period {
                (best_period, best_repeats) = (period, repeats);
            }
        }
        if best_period > 0 && (best_repeats - 1) * best_period >= 2 {
            out.extend_from_slice(&lines[i..i + best_period]);
            let what = if best_period == 1 {
                "line above repeats".to_owned()
            } else {
                format!("{best_period} lines above repeat")
            };
            out.push(Shown::Line(format!(
                "... [the {what} {} more times]",
                best_repeats - 1
            )));
            i += best_repeats * best_period;
        } else {
            out.push(lines[i].clone());
            i += 1;
        }
    }
    out
}

/// True when an `E ` line of the shown traceback `shown`, or its last non-blank line when
/// that starts with neither whitespace, `>` nor `E ` (a native traceback's exception line),
/// says the failure's `exception: message` (its message alone without an exception),
/// whole or as far as the shorter of the two was kept (traceback lines and messages are
/// cut at different lengths, each ending with `…`): the entry then needs no message line
/// of its own. `AssertionError: assert …` is said by `E  assert …` (pytest's rewritten
/// assertion does not name its exception). A `DocTestFailure` is said by doctest's
/// `Expected`/`Got` lines. docs/ENGINE.md, *The shown traceback*.
pub(crate) fn says_message(shown: &str, exception: Option<&str>, message: &str) -> bool {
    let has = |wanted: [&str; 2]| shown.split('\n').any(|l| wanted.contains(&l));
    if exception == Some("DocTestFailure")
        && has(["Expected:", "Expected nothing"])
        && has(["Got:", "Got nothing"])
    {
        return true; // doctest's own Expected/Got blocks (docs/ENGINE.md, *Doctests*)
    }
    // a native traceback's closing exception line says it too
    let last = shown
        .split('\n')
        .rev()
        .find(|l| !strip(l).is_empty())
        .filter(|l| {
            l.chars().next().is_some_and(|c| !is_ws(c) && c != '>') && !l.starts_with("E ")
        });
    let what = match exception.filter(|e| !e.is_empty()) {
        Some(exception) => format!("{exception}: {message}"),
        None => message.to_owned(),
    };
    let what = what.strip_suffix('…').unwrap_or(&what);
    let said_lines = shown
        .split('\n')
        .filter_map(|line| line.strip_prefix("E "))
        .chain(last);
    said_lines.into_iter().any(|after| {
        let said = strip(after);
        let mut said = said.strip_suffix('…').unwrap_or(said);
        let mut what = what;
        if what.starts_with("AssertionError: assert ") {
            said = said.strip_prefix("AssertionError: ").unwrap_or(said);
            what = &what["AssertionError: ".len()..];
        }
        if said.contains(what) {
            return true;
        }
        let shorter = said.chars().count().min(what.chars().count());
        shorter >= 40 && said.chars().take(shorter).eq(what.chars().take(shorter))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_back_are_the_lines_reversed_at_every_length_and_block_edge() {
        // line breaks on both sides of the 64-byte block edges, `\r\n`, empty lines, a
        // last line with and without a break
        let mut text = String::new();
        for n in 0..300 {
            let expected: Vec<&str> = text_lines(&text).collect::<Vec<_>>();
            let back: Vec<&str> = text_lines_back(&text).collect();
            assert_eq!(
                back,
                expected.iter().rev().copied().collect::<Vec<_>>(),
                "{n} bytes"
            );
            text.push(match n % 11 {
                3 | 7 => '\n',
                5 => '\r',
                9 => 'é',
                _ => 'x',
            });
            if n % 37 == 0 {
                text.push_str("\n\n");
            }
        }
        assert_eq!(text_lines_back("").collect::<Vec<_>>(), [""]);
        assert_eq!(text_lines_back("a\n").collect::<Vec<_>>(), ["", "a"]);
    }

    #[test]
    fn frame_and_chain_lines_are_told_apart_alike_whatever_the_indentation() {
        // `line_kind` turns most lines away before the two parsers; it must agree with
        // them on every line, indented by any mix of whitespace up to and past 16 bytes,
        // and never turn a chain line away
        let mut lines = Vec::new();
        for indent in ["", " ", "\t", "  ", "    ", " \t\x0b", "\x0c ", "\r"] {
            for width in [1, 4, 5, 15, 16, 17, 40] {
                let pad = indent.repeat(width.min(40) / indent.len().max(1));
                for body in [
                    "File \"src/a.py\", line 12, in f",
                    "File \"src/a.py\", line x",
                    "src/a.py:3: in f",
                    "E   src/a.py:3: in f",
                    "E",
                    "E:1: x",
                    "Error.py:3: x",
                    "> x.py:1: y",
                    "C:\\a\\b.py:7: in g",
                    "Foo",
                    "",
                    "\r",
                    "\u{e9}t\u{e9}.py:2: x",
                    "The above exception was the direct cause of the following exception:",
                    "During handling of the above exception, another exception occurred: ",
                    "The above exception",
                    "Tests/a.py:3: in f",
                    "E     File \"src/a.py\", line 2",
                    "E   File \"src/a.py\", line 2  ",
                    "E   File \"src/a.py\", line 2",
                    "E File \"src/a.py\", line 2, in f",
                    "E\tFile \"src/a.py\", line 2",
                ] {
                    lines.push(format!("{pad}{body}"));
                }
            }
        }
        for line in &lines {
            let expected = parse_location(line)
                .map(|loc| (loc.path, loc.line))
                .or_else(|| {
                    line.strip_prefix("E ")
                        .map_or_else(|| native_frame(line), syntax_position)
                });
            assert_eq!(frame_line(line), expected, "{line:?}");
            if is_chain_line(line) {
                assert!(matches!(line_kind(line), LineKind::MayBeChain), "{line:?}");
            }
        }
    }

    #[test]
    fn a_chain_line_is_found_in_the_part_read_for_frames_and_in_the_part_before_it() {
        // `FailureFrames::of` searches only the part its frame scan did not read: the
        // result must be that of searching the whole text, wherever the chain line is
        fn reference(text: &str) -> (Option<FrameLine<'_>>, Option<FrameLine<'_>>, Option<&str>) {
            let mut kinds = PathKinds::default();
            if text.contains("above exception") {
                if let Some(chain) = text_lines(text).find(|line| is_chain_line(line)) {
                    let root = &text[..chain.as_ptr() as usize - text.as_ptr() as usize];
                    let frames = DeepestFrames::of(root, None, &mut kinds);
                    if frames.code.is_some() {
                        return (frames.code, frames.key, Some(root));
                    }
                }
            }
            let frames = DeepestFrames::of(text, None, &mut kinds);
            (frames.code, frames.key, None)
        }
        let chains = [
            "The above exception was the direct cause of the following exception:",
            "  During handling of the above exception, another exception occurred:\r",
            "the above exception, not a chain line",
        ];
        let parts = [
            "tests/test_a.py:4: in test_a\n    f()",
            "src/app.py:3: in f\n    g()",
            "/usr/lib/python3.11/json/decoder.py:9: in g\n    raise E",
            "E   ValueError: x",
            "  File \"src/app.py\", line 8, in h",
        ];
        for chain in chains {
            for at in 0..=parts.len() {
                for skip in 0..parts.len() {
                    let mut lines: Vec<&str> = parts
                        .iter()
                        .enumerate()
                        .filter(|&(i, _)| i != skip)
                        .map(|(_, p)| *p)
                        .collect();
                    lines.insert(at.min(lines.len()), chain);
                    let text = lines.join("\n");
                    let got = FailureFrames::of(&text, None, &mut PathKinds::default());
                    assert_eq!(
                        (got.frames.code, got.frames.key, got.root),
                        reference(&text),
                        "{text:?}"
                    );
                }
            }
        }
    }

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
        // the 4 lines of source context: a larger budget shows them; the two library
        // frames' 2 + 2 lines, which no budget shows, are marked but not counted
        assert_eq!(omitted, 4);
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
        // library lines only: marked, not counted (no budget shows them)
        assert_eq!(omitted, 0);
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
        assert_eq!(omitted, 0);
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

    // ---- The shown traceback (docs/ENGINE.md, "The shown traceback").

    /// One case per rule, shared with tests/engine/test_shown_traceback.py (which checks the
    /// location and exception given here are what the builder derives).
    const SHOWN_CASES: &str = include_str!("../../../tests/fixtures/tracebacks/shown_cases.json");

    fn shown(
        text: &str,
        node_id: &str,
        location: Option<(&str, u64)>,
        exception: Option<&str>,
    ) -> String {
        shown_with_context(text, node_id, location, exception, 3).0
    }

    fn shown_with_context(
        text: &str,
        node_id: &str,
        location: Option<(&str, u64)>,
        exception: Option<&str>,
        context_lines: usize,
    ) -> (String, u64) {
        let failure = FailureContext {
            node_id,
            location: location.map(|(path, line)| (path, Some(line))),
            exception,
            frames: None,
        };
        shown_traceback_for(text, 40, 200, context_lines, None, failure)
    }

    #[test]
    fn each_rule_gives_the_documented_traceback() {
        let cases: serde_json::Value =
            serde_json::from_str(SHOWN_CASES).expect("the cases are JSON");
        let cases = cases.as_array().expect("a list of cases");
        assert!(cases.len() >= 8);
        for case in cases {
            let location = case["location"]
                .as_array()
                .map(|l| (l[0].as_str().unwrap(), l[1].as_u64().unwrap()));
            let context_lines = case["context_lines"].as_u64().map_or(3, |n| n as usize);
            let got = shown_with_context(
                case["text"].as_str().unwrap(),
                case["node_id"].as_str().unwrap(),
                location,
                case["exception"].as_str(),
                context_lines,
            );
            let omitted = case["omitted"].as_u64().unwrap_or(0);
            assert_eq!(
                got,
                (case["expected"].as_str().unwrap().to_owned(), omitted),
                "{}",
                case["rule"]
            );
        }
    }

    #[test]
    fn a_fixture_listing_is_never_context_and_shows_its_paths_relative_to_the_root() {
        // pytest's `FixtureLookupErrorRepr`, with the absolute paths it writes
        let text = "\
file /work/app/tests/test_app.py, line 5
  def test_uses_client(client):
file /work/app/tests/conftest.py, line 9
  @pytest.fixture
  @pytest.mark.usefixtures('db')
  def client(dbb):
  return dbb
E       fixture 'dbb' not found
>       available fixtures: cache, client, db
>       use 'pytest --fixtures [testpath]' for help on them.

/work/app/tests/conftest.py:9";
        assert_eq!(listing_header("file a.py, line 3"), Some(("a.py", 3)));
        assert_eq!(
            listing_header("file a.py, line 3: source code not available"),
            Some(("a.py", 3))
        );
        assert_eq!(listing_header("file a.py, line x"), None);
        assert_eq!(listing_header(" file a.py, line 3"), None);
        assert_eq!(
            fixture_location(text),
            Some(("/work/app/tests/conftest.py", 9))
        );
        assert_eq!(
            fixture_location("E  x\n\n/work/app/tests/conftest.py:9"),
            None
        );
        let project = ProjectCode::new("/work/app", &[]);
        let (cut, omitted) = cut_traceback_for(text, 40, 200, 0, Some(&project));
        // the listing stays up to its `def` line; the line after it is context
        assert_eq!(
            cut,
            "\
file tests/test_app.py, line 5
  def test_uses_client(client):
file tests/conftest.py, line 9
  @pytest.fixture
  @pytest.mark.usefixtures('db')
  def client(dbb):
... [1 lines omitted]
E       fixture 'dbb' not found
>       available fixtures: cache, client, db
>       use 'pytest --fixtures [testpath]' for help on them.

tests/conftest.py:9"
        );
        assert_eq!(omitted, 1);
        // the shown traceback leaves out the closing line the location says, and keeps
        // the listing as it is (rule 8 has no location for its frame)
        let failure = FailureContext {
            node_id: "tests/test_app.py::test_uses_client",
            location: Some(("tests/conftest.py", Some(9))),
            exception: None,
            frames: None,
        };
        let (shown, _) = shown_traceback_for(text, 40, 200, 0, Some(&project), failure);
        assert!(shown.ends_with("for help on them."), "{shown}");
        assert!(shown.contains("\n  def client(dbb):\n"), "{shown}");
    }

    #[test]
    fn a_compact_frame_drops_a_caret_line_that_starts_left_of_its_statement() {
        let text =
            ">       x = f(1)\n  ^^^^\n        ^\nE       ValueError: no\n\nsrc/a.py:3: ValueError";
        assert_eq!(
            shown_with_context(text, "t.py::t", None, Some("ValueError"), 0).0,
            "src/a.py:3: x = f(1)\n            ^\nE       ValueError: no"
        );
    }

    #[test]
    fn the_closing_line_goes_only_when_it_says_the_listed_location_and_exception() {
        let text = "E   KeyError: 'x'\n\nsrc/app.py:9: KeyError";
        assert_eq!(
            shown(
                text,
                "t.py::t",
                Some(("src/app.py", 9)),
                Some("builtins.KeyError")
            ),
            "E   KeyError: 'x'"
        );
        assert_eq!(
            shown(text, "t.py::t", Some(("src/app.py", 8)), Some("KeyError")),
            text
        );
        assert_eq!(
            shown(text, "t.py::t", Some(("src/app.py", 9)), Some("ValueError")),
            text
        );
        assert_eq!(shown(text, "t.py::t", None, Some("KeyError")), text);
    }

    #[test]
    fn only_the_own_class_self_goes_and_only_its_blank_line_with_it() {
        let text = "self = <t.TestA object at 0xAF>\n\nself = <t.TestB object at 0x1>\n\nself = <.TestA object at 0x1>\nx";
        assert_eq!(
            shown(text, "t.py::TestA::test_x[TestB]", None, None),
            "self = <t.TestB object at 0x1>\n\nself = <.TestA object at 0x1>\nx"
        );
        assert_eq!(
            instance_class("self = <a.b.C testMethod=test_x>"),
            Some("C")
        );
        assert_eq!(instance_class("self = <C object at 0x>"), None);
        assert_eq!(instance_class("self = <a.C object at 0x1> "), None);
        assert_eq!(instance_class("self = <a. object at 0x1>"), None);
    }

    #[test]
    fn rerun_advice_is_cut_and_a_line_left_empty_goes() {
        assert_eq!(
            without_rerun_hint("E   Omitting 2 identical items, use -vv to show").as_deref(),
            Some("E   Omitting 2 identical items")
        );
        assert_eq!(
            without_rerun_hint("E   x use -v to show").as_deref(),
            Some("E   x")
        );
        assert_eq!(without_rerun_hint("E  , use -vv to show"), None);
        assert_eq!(without_rerun_hint("E  Use -v to get the full diff"), None);
        assert_eq!(
            without_rerun_hint("EUse -v to get more diff").as_deref(),
            Some("EUse -v to get more diff")
        );
        assert_eq!(without_rerun_hint("   ").as_deref(), Some("   "));
    }

    #[test]
    fn separators_only_get_shorter() {
        let text = "a\n_ _\n_ _ _ _ _ _ _ _ _ _ _\nb\n  _ _ _  \n  _ _ _ _  ";
        assert_eq!(
            shown(text, "t.py::t", None, None),
            "a\n_ _\n_ _ _ _ _\nb\n  _ _ _  \n_ _ _ _ _"
        );
    }

    #[test]
    fn carets_stay_in_the_last_frame_and_without_frames_everywhere() {
        let one_frame = ">   f(x)\n    ^^^^\nE   boom";
        assert_eq!(shown(one_frame, "t.py::t", None, None), one_frame);
        let short = "t.py:3: in test_t\n    f()\n    ^^^\nt.py:9: in f\n    g()\n    ~^~\nE   boom";
        assert_eq!(
            shown(short, "t.py::t", None, None),
            "t.py:3: in test_t\n    f()\nt.py:9: in f\n    g()\n    ~^~\nE   boom"
        );
    }

    #[test]
    fn repeats_fold_the_block_that_saves_most_and_markers_compare_whole() {
        let lines = |v: &[&str]| {
            v.iter()
                .map(|l| Shown::Line((*l).to_owned()))
                .collect::<Vec<_>>()
        };
        // a 2-line block repeated 3 times saves 4; the 1-line run of `a` saves nothing more
        let folded = fold_repeats(&lines(&["a", "b", "a", "b", "a", "b", "c"]));
        assert_eq!(
            joined(&folded),
            "a\nb\n... [the 2 lines above repeat 2 more times]\nc"
        );
        // blank lines never start a fold
        assert_eq!(joined(&fold_repeats(&lines(&["", "", "", ""]))), "\n\n\n");
        // markers are lines too: equal markers repeat, different ones do not
        let gaps = vec![Shown::Gap(2), Shown::Gap(2), Shown::Gap(2), Shown::Gap(3)];
        assert_eq!(
            joined(&fold_repeats(&gaps)),
            "... [2 lines omitted]\n... [the line above repeats 2 more times]\n... [3 lines omitted]"
        );
    }

    #[test]
    fn rules_never_change_what_the_cut_counts_as_omitted() {
        let text = (0..60)
            .map(|i| format!("E     line {}", i % 3))
            .collect::<Vec<_>>()
            .join("\n");
        let (cut, cut_omitted) = cut_traceback_for(&text, 10, 200, 3, None);
        let (tidy, omitted) =
            shown_traceback_for(&text, 10, 200, 3, None, FailureContext::default());
        assert_eq!(omitted, cut_omitted);
        assert!(tidy.lines().count() <= cut.lines().count());
    }

    #[test]
    fn the_message_is_said_by_an_e_line_whole_or_as_far_as_both_were_kept() {
        let tb = ">   f()\nE   KeyError: 'pear'";
        assert!(says_message(tb, Some("KeyError"), "'pear'"));
        assert!(!says_message(tb, Some("ValueError"), "'pear'"));
        assert!(!says_message(
            ">   KeyError: 'pear'",
            Some("KeyError"),
            "'pear'"
        ));
        // a native traceback's closing exception line says it; a source line does not
        assert!(says_message(
            "  File \"m.py\", line 3, in f\n    g()\nKeyError: 'pear'",
            Some("KeyError"),
            "'pear'"
        ));
        // pytest's rewritten assertion: `E  assert …` says `AssertionError: assert …`
        assert!(says_message(
            "E       assert 3 == 4",
            Some("AssertionError"),
            "assert 3 == 4"
        ));
        // cut at different lengths: equal as far as both go, at least 40 characters
        let long = "x".repeat(60);
        let line = format!("E   ValueError: {}…", &long[..30]);
        assert!(says_message(&line, Some("ValueError"), &long));
        let line = format!("E   ValueError: {}…", &long[..20]);
        assert!(!says_message(&line, Some("ValueError"), &long));
        assert!(says_message("E   boom", None, "boom"));
    }
}
