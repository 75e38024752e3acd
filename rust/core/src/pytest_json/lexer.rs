//! A validating JSON pull lexer over a chunked reader (RFC 8259, with the limits of
//! docs/ENGINE.md, *pytest-json-report*).
//!
//! Memory is constant: the buffer is `CHUNK` bytes (grown by at most a few bytes for an
//! escape that straddles a refill), strings go to a caller-chosen `StrSink` segment by
//! segment (nothing is held unless the sink keeps it), numbers are reduced to at most
//! `MAX_SIG_DIGITS` significant digits, and nesting is limited to `MAX_DEPTH`.
//! Every byte is validated, also inside skipped values, so that the native and pure
//! backends agree on what is malformed.

use std::io::{self, Read};

use crate::text::decimal;

/// Bytes read from the source at a time.
pub const CHUNK: usize = 256 * 1024;

/// The smallest read buffer: room for the longest run of bytes the lexer needs at once
/// (an escape; the buffer grows when one straddles a refill).
const MIN_BUFFER: usize = 64;

/// Deepest nesting of arrays/objects accepted (the root object is level 1). RFC 8259 §9
/// lets a parser limit it; the limit keeps the skip stack bounded.
pub const MAX_DEPTH: usize = 1024;

/// Significant digits kept of a number; more cannot change the correctly rounded
/// double (an exact halfway case needs at most 767), the rest is kept as a sticky digit.
const MAX_SIG_DIGITS: usize = 800;

/// Why lexing stopped.
#[derive(Debug)]
pub enum Fail {
    /// Reading the source failed.
    Io(io::Error),
    /// The bytes are not JSON (or break a documented limit): `what` at byte `offset`.
    Syntax { offset: u64, what: String },
}

impl From<io::Error> for Fail {
    fn from(e: io::Error) -> Self {
        Fail::Io(e)
    }
}

/// Where string content goes, one valid UTF-8 segment at a time.
pub trait StrSink {
    /// False for a sink that drops everything: the lexer then only validates.
    const KEEPS: bool = true;
    fn push(&mut self, s: &str);
}

/// Validates and drops.
pub struct Discard;

impl StrSink for Discard {
    const KEEPS: bool = false;
    #[inline]
    fn push(&mut self, _: &str) {}
}

impl StrSink for crate::text::HeadTail {
    #[inline]
    fn push(&mut self, s: &str) {
        crate::text::HeadTail::push(self, s);
    }
}

/// Keeps the first `cap` bytes (cut back to a character boundary); counts the rest.
pub struct Capped {
    pub text: String,
    pub dropped: u64,
    cap: usize,
    full: bool,
}

impl Capped {
    pub fn new(cap: usize) -> Self {
        Capped {
            text: String::new(),
            dropped: 0,
            cap,
            full: false,
        }
    }
}

impl StrSink for Capped {
    fn push(&mut self, s: &str) {
        if self.full {
            self.dropped += s.len() as u64;
            return;
        }
        let room = self.cap - self.text.len();
        if s.len() <= room {
            self.text.push_str(s);
        } else {
            let take = crate::text::floor_char_boundary(s, room);
            self.text.push_str(&s[..take]);
            self.dropped += (s.len() - take) as u64;
            self.full = true;
        }
    }
}

/// A short string (object keys, outcomes): up to `KEY_CAP` bytes, else "too long".
pub struct ShortStr {
    bytes: [u8; KEY_CAP],
    len: usize,
    too_long: bool,
}

const KEY_CAP: usize = 24;

impl ShortStr {
    pub fn new() -> Self {
        ShortStr {
            bytes: [0; KEY_CAP],
            len: 0,
            too_long: false,
        }
    }

    /// The string, or None when it is longer than any name compared against.
    pub fn get(&self) -> Option<&str> {
        if self.too_long {
            None
        } else {
            // SAFETY: only whole `&str` pushes are stored (all or nothing).
            Some(unsafe { std::str::from_utf8_unchecked(&self.bytes[..self.len]) })
        }
    }
}

impl StrSink for ShortStr {
    fn push(&mut self, s: &str) {
        if self.too_long {
            return;
        }
        if self.len + s.len() > KEY_CAP {
            self.too_long = true;
            return;
        }
        self.bytes[self.len..self.len + s.len()].copy_from_slice(s.as_bytes());
        self.len += s.len();
    }
}

/// What `next_key` found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// The object's closing `}`.
    End,
    /// The key `known[i]`.
    Known(usize),
    /// Any other key.
    Other,
}

/// The kind of the next value, from its first byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Object,
    Array,
    String,
    Number,
    Bool,
    Null,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Object => "an object",
            Kind::Array => "an array",
            Kind::String => "a string",
            Kind::Number => "a number",
            Kind::Bool => "a boolean",
            Kind::Null => "null",
        }
    }
}

/// A JSON number, reduced to what the parser needs.
#[derive(Debug)]
pub struct Number {
    /// No fraction and no exponent.
    pub is_integer: bool,
    /// For an integer: its value (always within ±(2^63-1), else the lexer fails).
    pub int_value: i64,
    /// The value as a correctly rounded double (finite, else the lexer fails).
    pub value: f64,
}

/// The lexer. `depth` counts the arrays/objects open (the root object is 1).
pub struct Lexer<R: Read> {
    reader: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    /// File offset of `buf[0]`.
    base: u64,
    eof: bool,
    depth: usize,
    skip_stack: Vec<bool>,
    digits: String,
    scratch: String,
    /// Decoded string text not yet handed to the sink.
    text: Vec<u8>,
}

/// "expected `what`, found `found`" (or the end of input) at `offset`; out of line so
/// that the hot paths stay small.
#[cold]
#[inline(never)]
fn expected<T>(offset: u64, what: &'static str, found: Option<u8>) -> Result<T, Fail> {
    let what = match found {
        Some(b) => format!("expected {what}, found {}", show(b)),
        None => format!("the input ends where {what} was expected (truncated file?)"),
    };
    Err(Fail::Syntax { offset, what })
}

#[cold]
#[inline(never)]
fn syntax<T>(offset: u64, what: impl Into<String>) -> Result<T, Fail> {
    Err(Fail::Syntax {
        offset,
        what: what.into(),
    })
}

#[inline]
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// A byte for a message: printable ASCII as itself, else its hex value.
fn show(b: u8) -> String {
    if (0x21..0x7f).contains(&b) {
        format!("'{}'", b as char)
    } else {
        format!("byte 0x{b:02x}")
    }
}

fn hex_val(b: u8) -> Option<u32> {
    match b {
        b'0'..=b'9' => Some((b - b'0') as u32),
        b'a'..=b'f' => Some((b - b'a' + 10) as u32),
        b'A'..=b'F' => Some((b - b'A' + 10) as u32),
        _ => None,
    }
}

/// Numbers up to this long are read straight from the buffer.
const FAST_NUMBER_BYTES: usize = 40;

/// A complete, valid JSON number at the start of `b` that ends before `b` does (or at
/// the end of input), of at most `FAST_NUMBER_BYTES` bytes: (its length, the number).
/// None sends the caller to the streaming path, which also words the errors.
#[inline]
fn short_number(b: &[u8], at_eof: bool, need_value: bool) -> Option<(usize, Number)> {
    let n = b.len().min(FAST_NUMBER_BYTES);
    let mut i = usize::from(b.first() == Some(&b'-'));
    let int_start = i;
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            while i < n && b[i].is_ascii_digit() {
                i += 1;
            }
        }
        _ => return None,
    }
    let int_end = i;
    let mut is_integer = true;
    let mut exponent: Option<(usize, usize)> = None;
    if i < n && b[i] == b'.' {
        is_integer = false;
        i += 1;
        let from = i;
        while i < n && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == from {
            return None;
        }
    }
    if i < n && (b[i] == b'e' || b[i] == b'E') {
        is_integer = false;
        i += 1;
        if i < n && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let from = i;
        while i < n && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == from {
            return None;
        }
        exponent = Some((from, i));
    }
    // The number must visibly end here: a following byte that is no digit, or the end.
    match b.get(i) {
        Some(c)
            if i < n && !c.is_ascii_digit() && !matches!(c, b'.' | b'e' | b'E' | b'+' | b'-') => {}
        None if at_eof => {}
        _ => return None,
    }
    // SAFETY: ASCII digits, signs, '.', 'e'.
    let text = unsafe { std::str::from_utf8_unchecked(&b[..i]) };
    if is_integer {
        // At most 18 digits always fit in an i64; longer ones take the checked path.
        if int_end - int_start > 18 {
            return None;
        }
        if !need_value {
            return Some((
                i,
                Number {
                    is_integer,
                    int_value: 0,
                    value: 0.0,
                },
            ));
        }
        let magnitude: i64 = text[int_start..].parse().ok()?;
        let negative = int_start == 1;
        let value = if negative {
            -(magnitude as f64)
        } else {
            magnitude as f64
        };
        let int_value = if negative { -magnitude } else { magnitude };
        return Some((
            i,
            Number {
                is_integer,
                int_value,
                value,
            },
        ));
    }
    if !need_value {
        // Only the range matters: below 10^307 (integer digits + exponent) it is finite.
        let exp: i64 = match exponent {
            None => 0,
            // At most FAST_NUMBER_BYTES digits: an i64 may still overflow, then parse.
            Some((from, to)) => text[from..to].parse::<i64>().unwrap_or(i64::MAX),
        };
        let exp = if exponent.is_some_and(|(from, _)| b[from - 1] == b'-') {
            -exp
        } else {
            exp
        };
        if (int_end - int_start) as i64 + exp <= 307 {
            return Some((
                i,
                Number {
                    is_integer,
                    int_value: 0,
                    value: 0.0,
                },
            ));
        }
    }
    let value: f64 = text.parse().ok()?;
    if !value.is_finite() {
        return None;
    }
    Some((
        i,
        Number {
            is_integer,
            int_value: 0,
            value,
        },
    ))
}

/// `a == b` for short byte strings (keys), without a call to `memcmp`.
#[inline]
fn same_short(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// Decoded string bytes batched before a push to the sink.
const SCRATCH_FLUSH: usize = 16 * 1024;

/// Hand the batched text to the sink.
#[inline]
fn flush<S: StrSink>(sink: &mut S, out: &mut Vec<u8>) {
    if !out.is_empty() {
        // SAFETY: `out` only receives printable ASCII, whole validated UTF-8 characters
        // and encoded chars, so it is valid UTF-8 and ends on a character boundary.
        sink.push(unsafe { std::str::from_utf8_unchecked(out) });
        out.clear();
    }
}

/// The index of the first byte at or after `i` that is not plain string content
/// (printable ASCII other than `"` and `\`): a quote, a backslash, a control byte, a
/// non-ASCII byte, or `buf.len()`. Eight bytes at a time (SWAR); strings are the bulk of
/// a report.
#[inline]
fn skip_plain(buf: &[u8], mut i: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        // SSE2 is part of x86_64: 16 bytes per step. A signed compare with 0x20 flags
        // both control bytes and non-ASCII bytes (negative as i8).
        use std::arch::x86_64::*;
        // SAFETY: loads stay within `buf` (i + 16 <= len); SSE2 is always present.
        unsafe {
            let space = _mm_set1_epi8(0x20);
            let quote = _mm_set1_epi8(b'"' as i8);
            let backslash = _mm_set1_epi8(b'\\' as i8);
            while i + 16 <= buf.len() {
                let v = _mm_loadu_si128(buf.as_ptr().add(i) as *const __m128i);
                let special = _mm_or_si128(
                    _mm_cmplt_epi8(v, space),
                    _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                );
                let mask = _mm_movemask_epi8(special);
                if mask != 0 {
                    return i + mask.trailing_zeros() as usize;
                }
                i += 16;
            }
        }
    }
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while i + 8 <= buf.len() {
        let w = u64::from_le_bytes(buf[i..i + 8].try_into().expect("8 bytes"));
        // Per byte: < 0x20, == '"', == '\\', >= 0x80. The lowest flagged byte of each
        // test is exact (borrows only run towards higher bytes), which is all we use.
        let control = w.wrapping_sub(ONES * 0x20) & !w;
        let q = w ^ (ONES * 0x22);
        let quote = q.wrapping_sub(ONES) & !q;
        let b = w ^ (ONES * 0x5c);
        let backslash = b.wrapping_sub(ONES) & !b;
        let special = (control | quote | backslash | w) & HIGH;
        if special != 0 {
            return i + (special.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < buf.len() && matches!(buf[i], 0x20..=0x7f) && buf[i] != b'"' && buf[i] != b'\\' {
        i += 1;
    }
    i
}

enum Utf8 {
    /// A valid character of this many bytes.
    Char(usize),
    /// Valid so far, but the bytes end before the character does.
    Incomplete,
    Invalid,
}

/// The UTF-8 character at the start of `b` (a non-ASCII lead byte), validated as Rust's
/// `str::from_utf8` and Python's strict decoder do (no overlongs, no surrogates, at
/// most U+10FFFF).
#[inline]
fn utf8_char(b: &[u8]) -> Utf8 {
    let (len, lo, hi) = match b[0] {
        0xC2..=0xDF => (2, 0x80, 0xBF),
        0xE0 => (3, 0xA0, 0xBF),
        0xE1..=0xEC | 0xEE..=0xEF => (3, 0x80, 0xBF),
        0xED => (3, 0x80, 0x9F),
        0xF0 => (4, 0x90, 0xBF),
        0xF1..=0xF3 => (4, 0x80, 0xBF),
        0xF4 => (4, 0x80, 0x8F),
        _ => return Utf8::Invalid,
    };
    for k in 1..len {
        let Some(&c) = b.get(k) else {
            return Utf8::Incomplete;
        };
        let (lo, hi) = if k == 1 { (lo, hi) } else { (0x80, 0xBF) };
        if c < lo || c > hi {
            return Utf8::Invalid;
        }
    }
    Utf8::Char(len)
}

impl<R: Read> Lexer<R> {
    /// A lexer with a read buffer of [`CHUNK`] bytes (the parser's tests).
    #[cfg(test)]
    pub fn new(reader: R) -> Self {
        Self::with_buffer(reader, CHUNK)
    }

    /// A lexer whose read buffer is `buffer` bytes at first, at most [`CHUNK`] (a
    /// document known to be smaller needs no more than its size).
    pub fn with_buffer(reader: R, buffer: usize) -> Self {
        Lexer {
            reader,
            buf: vec![0; buffer.clamp(MIN_BUFFER, CHUNK)],
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
            depth: 0,
            skip_stack: Vec::new(),
            digits: String::new(),
            scratch: String::new(),
            text: Vec::with_capacity(SCRATCH_FLUSH + 8),
        }
    }

    /// File offset of the next byte.
    #[inline]
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Read more bytes, keeping the unread ones; false at end of input.
    fn fill(&mut self) -> Result<bool, Fail> {
        if self.eof {
            return Ok(false);
        }
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.base += self.pos as u64;
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            // Only an escape straddling a refill needs more than a chunk: grow a little.
            self.buf.resize(self.buf.len() + 64, 0);
        }
        loop {
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Fail::Io(e)),
            }
        }
    }

    /// Make at least `n` unread bytes available; false if the input ends first.
    fn ensure(&mut self, n: usize) -> Result<bool, Fail> {
        while self.end - self.pos < n {
            if !self.fill()? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Skip a UTF-8 byte order mark at the very start (the sniffer accepts one).
    pub fn skip_bom(&mut self) -> Result<(), Fail> {
        self.ensure(3)?;
        if self.buf[self.pos..self.end].starts_with(b"\xef\xbb\xbf") {
            self.pos += 3;
        }
        Ok(())
    }

    /// The next byte after whitespace, not consumed; None at end of input.
    #[inline]
    pub fn peek(&mut self) -> Result<Option<u8>, Fail> {
        // Compact JSON has no whitespace or one space (": ", ", ") before a token.
        if self.pos < self.end {
            let b = self.buf[self.pos];
            if !is_ws(b) {
                return Ok(Some(b));
            }
            if self.pos + 1 < self.end && !is_ws(self.buf[self.pos + 1]) {
                self.pos += 1;
                return Ok(Some(self.buf[self.pos]));
            }
        }
        self.peek_slow()
    }

    #[inline(never)]
    fn peek_slow(&mut self) -> Result<Option<u8>, Fail> {
        loop {
            while self.pos < self.end {
                let b = self.buf[self.pos];
                if !is_ws(b) {
                    return Ok(Some(b));
                }
                self.pos += 1;
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// Like `peek`, but the end of input is an error (`what` was due).
    #[inline]
    fn peek_due(&mut self, what: &'static str) -> Result<u8, Fail> {
        match self.peek()? {
            Some(b) => Ok(b),
            None => expected(self.offset(), what, None),
        }
    }

    /// The kind of the next value; fails on a byte that cannot start a value.
    #[inline]
    pub fn kind(&mut self) -> Result<Kind, Fail> {
        let b = self.peek_due("a value")?;
        Ok(match b {
            b'{' => Kind::Object,
            b'[' => Kind::Array,
            b'"' => Kind::String,
            b'-' | b'0'..=b'9' => Kind::Number,
            b't' | b'f' => Kind::Bool,
            b'n' => Kind::Null,
            other => return expected(self.offset(), "a JSON value", Some(other)),
        })
    }

    #[inline]
    fn open(&mut self) -> Result<(), Fail> {
        if self.depth >= MAX_DEPTH {
            return syntax(
                self.offset(),
                format!("arrays/objects nested deeper than {MAX_DEPTH} levels"),
            );
        }
        self.depth += 1;
        self.pos += 1;
        Ok(())
    }

    /// Consume the `{` of an object (the next value must be one).
    pub fn begin_object(&mut self) -> Result<(), Fail> {
        debug_assert_eq!(self.peek()?, Some(b'{'));
        self.open()
    }

    /// Consume the `[` of an array (the next value must be one).
    pub fn begin_array(&mut self) -> Result<(), Fail> {
        debug_assert_eq!(self.peek()?, Some(b'['));
        self.open()
    }

    /// The next key of the object being read, as an index into `known` when it is one
    /// of them (compared after unescaping), or `Key::End` at the closing `}` (consumed).
    /// `first` is true before the first key.
    pub fn next_key(&mut self, known: &[&str], first: &mut bool) -> Result<Key, Fail> {
        let b = self.peek_due("a key or '}'")?;
        if b == b'}' {
            self.pos += 1;
            self.depth -= 1;
            return Ok(Key::End);
        }
        if !*first {
            if b != b',' {
                return expected(self.offset(), "',' or '}' after an object member", Some(b));
            }
            self.pos += 1;
        }
        *first = false;
        let b = self.peek_due("a key")?;
        if b != b'"' {
            return expected(self.offset(), "a string key", Some(b));
        }
        // Fast path: a key without escapes, whole in the buffer, compared in place.
        let from = self.pos + 1;
        let to = skip_plain(&self.buf[..self.end], from);
        let key = if to < self.end && self.buf[to] == b'"' {
            let raw = &self.buf[from..to];
            let found = known.iter().position(|k| same_short(k.as_bytes(), raw));
            self.pos = to + 1;
            found
        } else {
            let mut decoded = ShortStr::new();
            self.string(&mut decoded)?;
            decoded
                .get()
                .and_then(|d| known.iter().position(|k| *k == d))
        };
        let b = self.peek_due("':'")?;
        if b != b':' {
            return expected(self.offset(), "':' after a key", Some(b));
        }
        self.pos += 1;
        Ok(match key {
            Some(i) => Key::Known(i),
            None => Key::Other,
        })
    }

    /// A key (validated, not kept) and its `:`.
    fn skip_key(&mut self) -> Result<(), Fail> {
        let b = self.peek_due("a key")?;
        if b != b'"' {
            return expected(self.offset(), "a string key", Some(b));
        }
        self.string(&mut Discard)?;
        let b = self.peek_due("':'")?;
        if b != b':' {
            return expected(self.offset(), "':' after a key", Some(b));
        }
        self.pos += 1;
        Ok(())
    }

    /// True if the array being read has another element (consumes the `,`), false at
    /// its `]` (consumed). `first` is true before the first element.
    pub fn next_element(&mut self, first: &mut bool) -> Result<bool, Fail> {
        let b = self.peek_due("a value or ']'")?;
        if b == b']' {
            self.pos += 1;
            self.depth -= 1;
            return Ok(false);
        }
        if !*first {
            if b != b',' {
                return expected(self.offset(), "',' or ']' after an array element", Some(b));
            }
            self.pos += 1;
            if self.peek_due("a value")? == b']' {
                return syntax(self.offset(), "a trailing ',' before ']' is not JSON");
            }
        }
        *first = false;
        Ok(true)
    }

    /// Read a string value (the next value must be one) into `sink`. The decoded text
    /// is batched in a scratch buffer (at most `SCRATCH_FLUSH` bytes) so that a sink sees
    /// few, large pushes even when escapes cut the raw text into short runs.
    pub fn string<S: StrSink>(&mut self, sink: &mut S) -> Result<(), Fail> {
        let start = self.offset();
        debug_assert_eq!(self.buf[self.pos], b'"');
        self.pos += 1;
        if !S::KEEPS {
            // Validation only: the common case is one plain run up to the quote.
            let to = skip_plain(&self.buf[..self.end], self.pos);
            if to < self.end && self.buf[to] == b'"' {
                self.pos = to + 1;
                return Ok(());
            }
        }
        let mut out = std::mem::take(&mut self.text);
        out.clear();
        let result = self.string_body(sink, &mut out, start);
        self.text = out;
        result
    }

    fn string_body<S: StrSink>(
        &mut self,
        sink: &mut S,
        out: &mut Vec<u8>,
        start: u64,
    ) -> Result<(), Fail> {
        loop {
            let plain_end = skip_plain(&self.buf[..self.end], self.pos);
            if S::KEEPS && out.is_empty() && plain_end < self.end && self.buf[plain_end] == b'"' {
                // The whole (rest of the) string is one plain run: no batching needed.
                // SAFETY: `skip_plain` passed only printable ASCII.
                sink.push(unsafe { std::str::from_utf8_unchecked(&self.buf[self.pos..plain_end]) });
                self.pos = plain_end + 1;
                return Ok(());
            }
            if S::KEEPS && plain_end > self.pos {
                let seg = &self.buf[self.pos..plain_end];
                if out.len() + seg.len() > SCRATCH_FLUSH {
                    flush(sink, out);
                }
                if seg.len() >= SCRATCH_FLUSH {
                    // SAFETY: `skip_plain` passed only printable ASCII.
                    sink.push(unsafe { std::str::from_utf8_unchecked(seg) });
                } else {
                    out.extend_from_slice(seg);
                }
            }
            self.pos = plain_end;
            if self.pos == self.end {
                if !self.fill()? {
                    return syntax(start, "unterminated string (truncated file?)");
                }
                continue;
            }
            match self.buf[self.pos] {
                b'"' => {
                    self.pos += 1;
                    if S::KEEPS {
                        flush(sink, out);
                    }
                    return Ok(());
                }
                b'\\' => self.escape::<S>(out, start)?,
                b if b < 0x20 => {
                    return syntax(
                        self.offset(),
                        format!("control character 0x{b:02x} inside a string (must be escaped as \\u{b:04x})"),
                    )
                }
                _ => match utf8_char(&self.buf[self.pos..self.end]) {
                    Utf8::Char(n) => {
                        if S::KEEPS {
                            out.extend_from_slice(&self.buf[self.pos..self.pos + n]);
                        }
                        self.pos += n;
                    }
                    Utf8::Incomplete => {
                        if !self.fill()? {
                            return syntax(self.offset(), "invalid UTF-8 in a string (cut short)");
                        }
                    }
                    Utf8::Invalid => return syntax(self.offset(), "invalid UTF-8 in a string"),
                },
            }
            if S::KEEPS && out.len() >= SCRATCH_FLUSH {
                flush(sink, out);
            }
        }
    }

    /// One escape sequence at `self.pos` (the backslash), decoded into `out`.
    fn escape<S: StrSink>(&mut self, out: &mut Vec<u8>, start: u64) -> Result<(), Fail> {
        let at = self.offset();
        if !self.ensure(2)? {
            return syntax(start, "unterminated string (truncated file?)");
        }
        let c = self.buf[self.pos + 1];
        let simple = match c {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => 0,
            other => {
                return syntax(
                    at,
                    format!("invalid escape '\\{}' in a string", other as char),
                )
            }
        };
        if c != b'u' {
            if S::KEEPS {
                out.push(simple);
            }
            self.pos += 2;
            return Ok(());
        }
        let unit = self.hex4(at)?;
        self.pos += 6;
        let code = match unit {
            0xD800..=0xDBFF => {
                // A high surrogate must be followed by an escaped low surrogate.
                let low = if self.ensure(6)?
                    && self.buf[self.pos] == b'\\'
                    && self.buf[self.pos + 1] == b'u'
                {
                    self.hex4(self.offset())?
                } else {
                    0
                };
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return syntax(
                        at,
                        format!("lone surrogate escape \\u{unit:04x} (not a Unicode character)"),
                    );
                }
                self.pos += 6;
                0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
            }
            0xDC00..=0xDFFF => {
                return syntax(
                    at,
                    format!("lone surrogate escape \\u{unit:04x} (not a Unicode character)"),
                )
            }
            _ => unit,
        };
        if S::KEEPS {
            let ch = char::from_u32(code).expect("surrogates were excluded");
            out.extend_from_slice(ch.encode_utf8(&mut [0u8; 4]).as_bytes());
        }
        Ok(())
    }

    /// The 4 hex digits of a `\uXXXX` escape at `self.pos`.
    fn hex4(&mut self, at: u64) -> Result<u32, Fail> {
        if !self.ensure(6)? {
            return syntax(at, "unterminated \\u escape (truncated file?)");
        }
        let mut v = 0;
        for k in 2..6 {
            match hex_val(self.buf[self.pos + k]) {
                Some(d) => v = v * 16 + d,
                None => return syntax(at, "a \\u escape needs 4 hex digits"),
            }
        }
        Ok(v)
    }

    /// The next byte without skipping whitespace (inside a number or literal).
    #[inline]
    fn raw_byte(&mut self) -> Result<Option<u8>, Fail> {
        if self.pos == self.end && !self.fill()? {
            return Ok(None);
        }
        Ok(Some(self.buf[self.pos]))
    }

    /// A run of ASCII digits: each is handed to `each`; returns how many.
    fn digits_run(&mut self, mut each: impl FnMut(u8)) -> Result<u64, Fail> {
        let mut n = 0u64;
        while let Some(b) = self.raw_byte()? {
            if !b.is_ascii_digit() {
                break;
            }
            each(b);
            self.pos += 1;
            n += 1;
        }
        Ok(n)
    }

    /// Read a number (the next value must be one). Integers must be within ±(2^63-1),
    /// other numbers must not overflow a double (docs/ENGINE.md); else `Fail::Syntax`.
    pub fn number(&mut self) -> Result<Number, Fail> {
        self.number_with(true)
    }

    /// `number`, but `value` is only computed when `need_value` (else 0.0): the range
    /// check alone rarely needs the conversion.
    fn number_with(&mut self, need_value: bool) -> Result<Number, Fail> {
        // Nearly every number is short and whole in the buffer: read it from there.
        self.ensure(FAST_NUMBER_BYTES)?;
        if let Some((len, number)) =
            short_number(&self.buf[self.pos..self.end], self.eof, need_value)
        {
            self.pos += len;
            return Ok(number);
        }
        self.number_streamed()
    }

    /// `number` for any length: the digits are reduced as they stream by.
    fn number_streamed(&mut self) -> Result<Number, Fail> {
        let start = self.offset();
        let mut digits = std::mem::take(&mut self.digits);
        digits.clear();
        let negative = self.raw_byte()? == Some(b'-');
        if negative {
            self.pos += 1;
        }
        // value = digits (significant, leading zeros dropped) * 10^exp10, plus a sticky
        // digit when digits beyond MAX_SIG_DIGITS were not kept.
        let mut exp10: i64 = 0;
        let mut sticky = false;
        let mut int_value: u64 = 0;
        let mut int_overflow = false;
        match self.raw_byte()? {
            Some(b'0') => {
                self.pos += 1;
            }
            Some(b'1'..=b'9') => {
                self.digits_run(|d| {
                    match int_value
                        .checked_mul(10)
                        .and_then(|v| v.checked_add((d - b'0') as u64))
                    {
                        Some(v) if v <= i64::MAX as u64 => int_value = v,
                        _ => int_overflow = true,
                    }
                    if digits.len() < MAX_SIG_DIGITS {
                        digits.push(d as char);
                    } else {
                        exp10 = exp10.saturating_add(1);
                        sticky |= d != b'0';
                    }
                })?;
            }
            _ => {
                self.digits = digits;
                return syntax(start, "a number needs a digit after '-'");
            }
        }
        let mut is_integer = true;
        if self.raw_byte()? == Some(b'.') {
            is_integer = false;
            self.pos += 1;
            let n = self.digits_run(|d| {
                if digits.is_empty() && d == b'0' {
                    exp10 = exp10.saturating_sub(1);
                } else if digits.len() < MAX_SIG_DIGITS {
                    digits.push(d as char);
                    exp10 = exp10.saturating_sub(1);
                } else {
                    sticky |= d != b'0';
                }
            })?;
            if n == 0 {
                self.digits = digits;
                return syntax(start, "a number needs a digit after the decimal point");
            }
        }
        if matches!(self.raw_byte()?, Some(b'e' | b'E')) {
            is_integer = false;
            self.pos += 1;
            let exp_negative = match self.raw_byte()? {
                Some(b'-') => {
                    self.pos += 1;
                    true
                }
                Some(b'+') => {
                    self.pos += 1;
                    false
                }
                _ => false,
            };
            let mut e: i64 = 0;
            let n = self.digits_run(|d| {
                // Saturate far beyond any exponent a double can use.
                e = (e * 10 + (d - b'0') as i64).min(1_000_000_000_000);
            })?;
            if n == 0 {
                self.digits = digits;
                return syntax(start, "a number needs a digit in its exponent");
            }
            exp10 = if exp_negative {
                exp10.saturating_sub(e)
            } else {
                exp10.saturating_add(e)
            };
        }
        if let Some(b) = self.raw_byte()? {
            if b.is_ascii_digit() {
                // Only a leading 0 stops a digit run early: "01" is not JSON.
                self.digits = digits;
                return syntax(start, "a number cannot have a leading zero");
            }
        }
        if is_integer && int_overflow {
            self.digits = digits;
            return syntax(
                start,
                "an integer beyond ±(2^63-1) (out of the accepted range)",
            );
        }
        let value = if digits.is_empty() {
            if negative {
                -0.0
            } else {
                0.0
            }
        } else {
            if sticky {
                digits.push('1');
                exp10 = exp10.saturating_sub(1);
            }
            // Beyond ±10^6 the result is 0 or infinite whatever the (<= 801) digits are.
            let e = exp10.clamp(-1_000_000, 1_000_000);
            let mut text = std::mem::take(&mut self.scratch);
            text.clear();
            if negative {
                text.push('-');
            }
            text.push_str(&digits);
            text.push('e');
            text.push_str(decimal(e, &mut [0u8; 24]));
            let v = text.parse::<f64>().expect("a well-formed decimal");
            self.scratch = text;
            v
        };
        self.digits = digits;
        if !value.is_finite() {
            return syntax(
                start,
                "a number too large for a double (out of the accepted range)",
            );
        }
        let int_value = if is_integer {
            if negative {
                -(int_value as i64)
            } else {
                int_value as i64
            }
        } else {
            0
        };
        Ok(Number {
            is_integer,
            int_value,
            value,
        })
    }

    /// `true`, `false` or `null` (the next value must start with its first letter).
    fn literal(&mut self) -> Result<(), Fail> {
        let at = self.offset();
        let word: &[u8] = match self.buf[self.pos] {
            b't' => b"true",
            b'f' => b"false",
            _ => b"null",
        };
        if !self.ensure(word.len())? || &self.buf[self.pos..self.pos + word.len()] != word {
            return syntax(at, "invalid literal (expected true, false or null)");
        }
        self.pos += word.len();
        Ok(())
    }

    /// Skip the next value, validating all of it.
    pub fn skip_value(&mut self) -> Result<(), Fail> {
        let mut stack = std::mem::take(&mut self.skip_stack);
        stack.clear();
        let result = self.skip_with(&mut stack);
        self.skip_stack = stack;
        result
    }

    fn skip_with(&mut self, stack: &mut Vec<bool>) -> Result<(), Fail> {
        loop {
            // A value is due here.
            match self.kind()? {
                Kind::Object => {
                    self.open()?;
                    if self.peek_due("a key or '}'")? == b'}' {
                        self.pos += 1;
                        self.depth -= 1;
                    } else {
                        stack.push(true);
                        self.skip_key()?;
                        continue;
                    }
                }
                Kind::Array => {
                    self.open()?;
                    if self.peek_due("a value or ']'")? == b']' {
                        self.pos += 1;
                        self.depth -= 1;
                    } else {
                        stack.push(false);
                        continue;
                    }
                }
                Kind::String => self.string(&mut Discard)?,
                Kind::Number => {
                    self.number_with(false)?;
                }
                Kind::Bool | Kind::Null => self.literal()?,
            }
            // After a value: close containers until one has another member.
            loop {
                let Some(&is_object) = stack.last() else {
                    return Ok(());
                };
                let b = self.peek_due(if is_object {
                    "',' or '}'"
                } else {
                    "',' or ']'"
                })?;
                if b == b',' {
                    self.pos += 1;
                    if is_object {
                        self.skip_key()?;
                    } else if self.peek_due("a value")? == b']' {
                        return syntax(self.offset(), "a trailing ',' before ']' is not JSON");
                    }
                    break;
                }
                let close = if is_object { b'}' } else { b']' };
                if b != close {
                    return syntax(
                        self.offset(),
                        format!("expected ',' or '{}', found {}", close as char, show(b)),
                    );
                }
                self.pos += 1;
                self.depth -= 1;
                stack.pop();
            }
        }
    }

    /// After the root value: only whitespace may follow.
    pub fn expect_end(&mut self) -> Result<(), Fail> {
        match self.peek()? {
            None => Ok(()),
            Some(b) => syntax(
                self.offset(),
                format!("unexpected {} after the end of the JSON document", show(b)),
            ),
        }
    }
}
