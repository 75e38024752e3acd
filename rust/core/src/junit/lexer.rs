//! A streaming, non-validating XML 1.0 lexer that accepts exactly what expat accepts
//! (without a DTD), so that the native and pure backends agree on which files are
//! well-formed (docs/ENGINE.md, *JUnit XML*).
//!
//! Why not quick-xml: its readers hand out each text node, CDATA section, comment or
//! tag as one slice, so a 100 MB `<system-out>` would be held in memory whole. This
//! lexer streams everything of unbounded size (text, attribute values, comments,
//! CDATA, processing instructions) in pieces of at most one buffer; the only things it
//! keeps are the names of the open elements. It also checks what quick-xml leaves out
//! and expat rejects: character validity (no C0 controls but tab/LF/CR, no U+FFFE/FFFF,
//! valid UTF-8), names by expat's tables, duplicate attributes, `]]>` in text, `--` in
//! comments, references (the five predefined entities and character references to
//! valid characters only), the `xml` PI target, and anything after the root element
//! but comments, PIs and whitespace.
//!
//! Text and attribute values follow XML end-of-line handling (`\r\n`/`\r` -> `\n`), and
//! attribute values are normalised (literal tab/LF/CR -> space). `<!DOCTYPE` and the
//! other markup declarations (`<!ENTITY`, `<!ELEMENT`, `<!ATTLIST`, `<!NOTATION`) are
//! refused as `forbidden` where markup may start, before anything of them is read.

use std::collections::HashSet;
use std::io::{self, Read};

use memchr::{memchr, memchr3};

use super::decode::DecodeError;
use super::names::{
    is_name_ascii, is_name_non_ascii, is_name_start_ascii, is_name_start_non_ascii,
};
use crate::error::{ErrorKind, ReportError};
use crate::text::{floor_char_boundary, ATTR_CAP};

/// Bytes read at a time.
pub const CHUNK: usize = 256 * 1024;

/// The smallest read buffer: room for the longest lookahead the lexer asks for.
const MIN_BUFFER: usize = 64;

/// The most attributes a start tag may have; one more is `malformed` (docs/ENGINE.md,
/// *JUnit XML*). JUnit writers put at most a dozen on an element; the limit bounds the
/// memory of the duplicate-attribute check (a 12 MB tag of 1,000,000 attributes would
/// otherwise keep every name). The pure backend checks the same limit.
pub const MAX_ATTRIBUTES: usize = 1024;

/// The elements the JUnit rules look at; everything else is `Other`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    Testsuites,
    Testsuite,
    Testcase,
    Failure,
    Error,
    Skipped,
    FlakyFailure,
    FlakyError,
    RerunFailure,
    RerunError,
    SystemOut,
    SystemErr,
    /// `<property name=… value=…>` (inside a testcase's `<properties>`).
    Property,
    Other,
}

impl Elem {
    /// The element name of a known kind (`Other` has none).
    fn name(self) -> &'static [u8] {
        match self {
            Elem::Testsuites => b"testsuites",
            Elem::Testsuite => b"testsuite",
            Elem::Testcase => b"testcase",
            Elem::Failure => b"failure",
            Elem::Error => b"error",
            Elem::Skipped => b"skipped",
            Elem::FlakyFailure => b"flakyFailure",
            Elem::FlakyError => b"flakyError",
            Elem::RerunFailure => b"rerunFailure",
            Elem::RerunError => b"rerunError",
            Elem::SystemOut => b"system-out",
            Elem::SystemErr => b"system-err",
            Elem::Property => b"property",
            Elem::Other => b"",
        }
    }

    fn classify(name: &[u8]) -> Elem {
        match name {
            b"testcase" => Elem::Testcase,
            b"failure" => Elem::Failure,
            b"error" => Elem::Error,
            b"skipped" => Elem::Skipped,
            b"system-out" => Elem::SystemOut,
            b"system-err" => Elem::SystemErr,
            b"testsuite" => Elem::Testsuite,
            b"testsuites" => Elem::Testsuites,
            b"flakyFailure" => Elem::FlakyFailure,
            b"flakyError" => Elem::FlakyError,
            b"rerunFailure" => Elem::RerunFailure,
            b"rerunError" => Elem::RerunError,
            b"property" => Elem::Property,
            _ => Elem::Other,
        }
    }
}

/// The attributes the JUnit rules read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    Classname = 0,
    Name = 1,
    File = 2,
    Line = 3,
    Time = 4,
    Type = 5,
    Message = 6,
    Value = 7,
}

fn slot_for(elem: Elem, name: &[u8]) -> Option<Slot> {
    match elem {
        Elem::Testcase => match name {
            b"classname" => Some(Slot::Classname),
            b"name" => Some(Slot::Name),
            b"file" => Some(Slot::File),
            b"line" => Some(Slot::Line),
            b"time" => Some(Slot::Time),
            _ => None,
        },
        Elem::Testsuite => (name == b"name").then_some(Slot::Name),
        Elem::Failure | Elem::Error | Elem::Skipped => match name {
            b"type" => Some(Slot::Type),
            b"message" => Some(Slot::Message),
            _ => None,
        },
        Elem::Property => match name {
            b"name" => Some(Slot::Name),
            b"value" => Some(Slot::Value),
            _ => None,
        },
        _ => None,
    }
}

impl Slot {
    fn bit(self) -> u8 {
        1 << self as u8
    }

    fn name(self) -> &'static str {
        match self {
            Slot::Classname => "classname",
            Slot::Name => "name",
            Slot::File => "file",
            Slot::Line => "line",
            Slot::Time => "time",
            Slot::Type => "type",
            Slot::Message => "message",
            Slot::Value => "value",
        }
    }
}

/// One decoded attribute value, capped at `ATTR_CAP` bytes (cut back to a character
/// boundary; the bytes beyond are counted in `omitted`).
#[derive(Debug, Default)]
pub struct AttrValue {
    pub present: bool,
    pub value: String,
    pub omitted: u64,
    full: bool,
}

impl AttrValue {
    fn reset(&mut self) {
        self.present = false;
        self.value.clear();
        self.omitted = 0;
        self.full = false;
    }

    #[inline]
    fn push(&mut self, s: &str) {
        if !self.full && self.value.len() + s.len() <= ATTR_CAP {
            self.value.push_str(s);
            return;
        }
        self.push_capped(s);
    }

    fn push_capped(&mut self, s: &str) {
        if self.full {
            self.omitted += s.len() as u64;
            return;
        }
        let room = ATTR_CAP - self.value.len();
        if s.len() <= room {
            self.value.push_str(s);
        } else {
            let cut = floor_char_boundary(s, room);
            self.value.push_str(&s[..cut]);
            self.omitted += (s.len() - cut) as u64;
            self.full = true;
        }
    }

    /// The value, or None when the attribute is absent.
    pub fn get(&self) -> Option<&str> {
        self.present.then_some(self.value.as_str())
    }
}

/// The read attributes of the current start tag, by [`Slot`].
#[derive(Debug, Default)]
pub struct Attrs {
    slots: [AttrValue; 8],
    /// Slots set by the current tag (`Slot::bit`).
    set: u8,
}

impl Attrs {
    pub fn get(&self, slot: Slot) -> Option<&str> {
        self.slots[slot as usize].get()
    }

    pub fn omitted(&self, slot: Slot) -> u64 {
        self.slots[slot as usize].omitted
    }

    /// Move the value into `out` (empty when absent) without copying; the lexer reuses
    /// what `out` held.
    pub fn take_into(&mut self, slot: Slot, out: &mut String) {
        let value = &mut self.slots[slot as usize];
        if value.present {
            std::mem::swap(&mut value.value, out);
        } else {
            out.clear();
        }
    }
}

/// What the JUnit rules do with the lexer's events. `depth` counts open elements with
/// the element itself (the root is 1).
/// `at` is the offset of a start tag's `<`, `after` the offset just past an element's
/// last `>` (of its end tag, or of `/>`): file offsets unless the input was transcoded
/// (`Lexer::new`'s `file_offsets`).
pub trait Handler {
    fn start(
        &mut self,
        elem: Elem,
        attrs: &mut Attrs,
        depth: usize,
        at: u64,
    ) -> Result<(), ReportError>;
    fn end(&mut self, elem: Elem, depth: usize, after: u64) -> Result<(), ReportError>;
    /// True when character data at this point is kept (then `text` gets it).
    fn capturing(&self) -> bool;
    fn text(&mut self, s: &str);
}

/// Byte classes for the hot loops: ASCII name characters, name start characters and
/// whitespace (non-ASCII bytes are 0: names are checked by `names` there).
const NAME: u8 = 1;
const NAME_START: u8 = 2;
const SPACE: u8 = 4;

static CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        if is_name_ascii(c) {
            table[b] |= NAME;
        }
        if is_name_start_ascii(c) {
            table[b] |= NAME_START;
        }
        if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
            table[b] |= SPACE;
        }
        b += 1;
    }
    table
};

#[inline]
fn is_space(b: u8) -> bool {
    CLASS[b as usize] & SPACE != 0
}

#[inline]
fn is_bad_control(b: u8) -> bool {
    b < 0x20 && b != b'\t' && b != b'\n' && b != b'\r'
}

/// The XML 1.0 `Char` production.
fn is_xml_char(cp: u32) -> bool {
    matches!(cp, 0x9 | 0xA | 0xD | 0x20..=0xD7FF | 0xE000..=0xFFFD | 0x10000..=0x10FFFF)
}

/// Where the valid part of freshly read bytes ends.
enum Check {
    /// Everything is valid.
    Valid,
    /// Valid up to the offset; the rest is an incomplete UTF-8 sequence.
    Incomplete(usize),
    /// Valid up to the offset, which starts an invalid character.
    Invalid(usize, String),
}

/// Bytes checked exactly after a block that is not clean ASCII, before looking for
/// clean blocks again: a file with a few non-ASCII characters pays for a window per
/// character, a file of non-ASCII text one window per KiB (not one per block).
const EXACT_WINDOW: usize = 1024;

/// Check UTF-8 and XML character validity of `bytes`: [`check_chars_exact`]'s answer.
/// Blocks of clean ASCII ([`clean_ascii_prefix`]: most reports are ASCII throughout)
/// are passed over without decoding; the exact checks run on windows around the
/// others, each ending just after an ASCII byte (a character boundary), so a
/// character cut by a window's end is cut in `bytes` too.
fn check_chars(bytes: &[u8]) -> Check {
    let mut at = 0;
    loop {
        at += clean_ascii_prefix(&bytes[at..]);
        if at == bytes.len() {
            return Check::Valid;
        }
        let from = (at + EXACT_WINDOW).min(bytes.len());
        let end = match bytes[from..].iter().position(|&b| b < 0x80) {
            Some(i) => from + i + 1,
            None => bytes.len(),
        };
        match check_chars_exact(&bytes[at..end]) {
            Check::Valid => at = end,
            Check::Incomplete(n) => return Check::Incomplete(at + n),
            Check::Invalid(n, what) => return Check::Invalid(at + n, what),
        }
    }
}

/// The length of the longest prefix of `bytes` made of whole 64-byte blocks of ASCII
/// without a control character XML forbids (all but tab, LF, CR): bytes that are valid
/// UTF-8 and valid XML characters as they are. On x86_64, 16 bytes per compare: a byte
/// is flagged when it is below 0x20 or at least 0x80 (one signed comparison with 0x20)
/// and is not tab, LF or CR (`b | 4 == 13` holds for tab and CR only). (32-byte AVX2
/// compares were no faster: the pass is bound by memory; benches/RESULTS.md, section 8.)
fn clean_ascii_prefix(bytes: &[u8]) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let mut clean = 0;
        // SAFETY: SSE2 is part of the x86_64 baseline; loads are unaligned loads of 16
        // bytes inside the 64 of a block.
        unsafe {
            let (space, four, cr, lf) = (
                _mm_set1_epi8(0x20),
                _mm_set1_epi8(4),
                _mm_set1_epi8(13),
                _mm_set1_epi8(10),
            );
            for block in bytes.chunks_exact(64) {
                let mut flagged = _mm_setzero_si128();
                for k in 0..4 {
                    let x = _mm_loadu_si128(block.as_ptr().add(16 * k).cast());
                    let allowed = _mm_or_si128(
                        _mm_cmpeq_epi8(_mm_or_si128(x, four), cr),
                        _mm_cmpeq_epi8(x, lf),
                    );
                    let below_space = _mm_cmplt_epi8(x, space);
                    flagged = _mm_or_si128(flagged, _mm_andnot_si128(allowed, below_space));
                }
                if _mm_movemask_epi8(flagged) != 0 {
                    break;
                }
                clean += 64;
            }
        }
        clean
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        bytes
            .chunks_exact(64)
            .take_while(|block| block.iter().all(|&b| b < 0x80 && !is_bad_control(b)))
            .count()
            * 64
    }
}

/// Check UTF-8 and XML character validity of `bytes` (every byte decoded and checked).
fn check_chars_exact(bytes: &[u8]) -> Check {
    let (valid, utf8_problem) = match std::str::from_utf8(bytes) {
        Ok(_) => (bytes.len(), None),
        Err(e) => (e.valid_up_to(), Some(e.error_len().is_some())),
    };
    if let Some(i) = find_bad_char(&bytes[..valid]) {
        let what = if bytes[i] < 0x20 {
            format!(
                "control character U+{:04X}, which XML does not allow",
                bytes[i]
            )
        } else {
            "U+FFFE/U+FFFF, which XML does not allow".to_string()
        };
        return Check::Invalid(i, what);
    }
    match utf8_problem {
        None => Check::Valid,
        Some(false) => Check::Incomplete(valid),
        Some(true) => Check::Invalid(valid, format!("invalid UTF-8 byte 0x{:02X}", bytes[valid])),
    }
}

/// First C0 control (but tab, LF, CR) or U+FFFE/U+FFFF in valid UTF-8 `bytes`.
fn find_bad_char(bytes: &[u8]) -> Option<usize> {
    const BLOCK: usize = 64;
    let mut base = 0;
    for block in bytes.chunks(BLOCK) {
        // A quick test per block (SSE2 on x86_64); exact search only in hit blocks.
        if block_may_hold_bad_char(block) {
            for (j, &b) in block.iter().enumerate() {
                let i = base + j;
                if is_bad_control(b) {
                    return Some(i);
                }
                if b == 0xEF
                    && bytes.get(i + 1) == Some(&0xBF)
                    && matches!(bytes.get(i + 2), Some(0xBE | 0xBF))
                {
                    return Some(i);
                }
            }
        }
        base += block.len();
    }
    None
}

/// Whether `block` has a C0 control other than tab/LF/CR, or a 0xEF byte (the lead of
/// U+FFFE/U+FFFF, checked exactly by the caller).
#[cfg(target_arch = "x86_64")]
#[inline]
fn block_may_hold_bad_char(block: &[u8]) -> bool {
    use std::arch::x86_64::*;
    let mut chunks = block.chunks_exact(16);
    // SAFETY: SSE2 is part of the x86_64 baseline; loads are unaligned loads of 16
    // bytes from a 16-byte chunk.
    let vector_hit = unsafe {
        let (tab, lf, cr, ef, max_control) = (
            _mm_set1_epi8(9),
            _mm_set1_epi8(10),
            _mm_set1_epi8(13),
            _mm_set1_epi8(0xEFu8 as i8),
            _mm_set1_epi8(0x1F),
        );
        let mut acc = _mm_setzero_si128();
        for chunk in chunks.by_ref() {
            let x = _mm_loadu_si128(chunk.as_ptr() as *const __m128i);
            let control = _mm_cmpeq_epi8(_mm_max_epu8(x, max_control), max_control);
            let allowed = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(x, tab), _mm_cmpeq_epi8(x, lf)),
                _mm_cmpeq_epi8(x, cr),
            );
            acc = _mm_or_si128(
                acc,
                _mm_or_si128(_mm_andnot_si128(allowed, control), _mm_cmpeq_epi8(x, ef)),
            );
        }
        _mm_movemask_epi8(acc) != 0
    };
    vector_hit
        || chunks
            .remainder()
            .iter()
            .any(|&b| is_bad_control(b) || b == 0xEF)
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn block_may_hold_bad_char(block: &[u8]) -> bool {
    let mut hit = 0u8;
    for &b in block {
        hit |= (is_bad_control(b) as u8) | ((b == 0xEF) as u8);
    }
    hit != 0
}

/// An error located after the last valid byte, raised when the lexer gets there.
enum Pending {
    Malformed(String),
    Io(io::Error),
}

/// The decoded (UTF-8) input: a buffer whose bytes `[pos, end)` are validated and not
/// yet consumed.
struct Input<'a> {
    src: Box<dyn Read + 'a>,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    raw_end: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    eof: bool,
    pending: Option<Pending>,
    path: String,
    /// Added to stream offsets to give file offsets (the byte order mark).
    offset_bias: u64,
    /// Whether stream offsets are file offsets (false after transcoding).
    offsets_are_file_offsets: bool,
}

impl<'a> Input<'a> {
    #[inline]
    fn avail(&self) -> &[u8] {
        &self.buf[self.pos..self.end]
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        (self.pos < self.end).then(|| self.buf[self.pos])
    }

    /// Make at least `want` bytes available (fewer only at the end of the input or before
    /// a pending error); returns how many are.
    #[inline]
    fn fill(&mut self, want: usize) -> Result<usize, ReportError> {
        if self.end - self.pos >= want {
            return Ok(self.end - self.pos);
        }
        self.fill_slow(want)
    }

    #[inline(never)]
    fn fill_slow(&mut self, want: usize) -> Result<usize, ReportError> {
        while self.end - self.pos < want {
            if self.pending.is_some() || (self.eof && self.raw_end == self.end) {
                break;
            }
            if self.eof {
                // The input ended inside a UTF-8 sequence.
                self.pending = Some(Pending::Malformed(
                    "the file ends inside a UTF-8 character".into(),
                ));
                break;
            }
            if self.pos > 0 && self.buf.len() - self.raw_end < CHUNK / 2 {
                self.buf.copy_within(self.pos..self.raw_end, 0);
                self.base += self.pos as u64;
                self.end -= self.pos;
                self.raw_end -= self.pos;
                self.pos = 0;
            }
            if self.raw_end == self.buf.len() {
                // Only an unconsumed tail larger than half the buffer gets here (never in
                // practice: callers ask for a few bytes of lookahead).
                self.buf.resize(self.buf.len() + CHUNK, 0);
            }
            match self.src.read(&mut self.buf[self.raw_end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.raw_end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // Keep what was validated; the error fires when the lexer gets there.
                    self.validate();
                    if self.pending.is_none() {
                        self.pending = Some(
                            match e
                                .get_ref()
                                .and_then(|inner| inner.downcast_ref::<DecodeError>())
                            {
                                Some(d) => Pending::Malformed(d.message.clone()),
                                None => Pending::Io(e),
                            },
                        );
                    }
                    continue;
                }
            }
            self.validate();
        }
        Ok(self.end - self.pos)
    }

    fn validate(&mut self) {
        if self.pending.is_some() {
            return;
        }
        match check_chars(&self.buf[self.end..self.raw_end]) {
            Check::Valid => self.end = self.raw_end,
            Check::Incomplete(n) => self.end += n,
            Check::Invalid(n, what) => {
                self.end += n;
                self.raw_end = self.end;
                self.pending = Some(Pending::Malformed(format!(
                    "{what}; the file is corrupted or not in the declared encoding"
                )));
            }
        }
    }

    /// The offset of the next byte (see [`position`](Self::position)).
    #[inline]
    fn offset(&self) -> u64 {
        self.base + self.pos as u64 + self.offset_bias
    }

    fn position(&self) -> String {
        let offset = self.offset();
        if self.offsets_are_file_offsets {
            format!("byte {offset}")
        } else {
            format!("byte {offset} of the text decoded to UTF-8")
        }
    }

    fn error(&self, kind: ErrorKind, message: impl Into<String>) -> ReportError {
        ReportError::new(kind, &self.path, message).at(self.position())
    }

    fn malformed(&self, what: &str) -> ReportError {
        self.error(
            ErrorKind::Malformed,
            format!("not well-formed XML: {what}; the report is corrupted or was cut off, regenerate it"),
        )
    }

    /// The error for needing more input when there is none: the pending error, or a
    /// truncated file.
    fn stop(&mut self, expected: &str) -> ReportError {
        match self.pending.take() {
            Some(Pending::Malformed(msg)) => self.error(
                ErrorKind::Malformed,
                format!("{msg}; regenerate the report or fix its encoding"),
            ),
            Some(Pending::Io(e)) => self.error(
                ErrorKind::Unreadable,
                format!("cannot read the file ({e}); check that it is a readable regular file"),
            ),
            None => self.malformed(&format!(
                "the file ends where {expected} was expected (truncated?)"
            )),
        }
    }

    /// The next byte, reading more if needed; None at the end of the input.
    #[inline]
    fn next_byte(&mut self) -> Result<Option<u8>, ReportError> {
        if self.pos == self.end && self.fill(1)? == 0 {
            return Ok(None);
        }
        let b = self.buf[self.pos];
        self.pos += 1;
        Ok(Some(b))
    }

    /// Consume `b` or fail with "expected `what`".
    #[inline]
    fn expect(&mut self, b: u8, what: &str) -> Result<(), ReportError> {
        if self.pos < self.end && self.buf[self.pos] == b {
            self.pos += 1;
            return Ok(());
        }
        self.expect_slow(b, what)
    }

    fn expect_slow(&mut self, b: u8, what: &str) -> Result<(), ReportError> {
        if self.pos == self.end && self.fill(1)? == 0 {
            return Err(self.stop(what));
        }
        if self.buf[self.pos] != b {
            return Err(self.malformed(&format!("expected {what}")));
        }
        self.pos += 1;
        Ok(())
    }

    /// Skip whitespace; true if there was some.
    #[inline]
    fn skip_space(&mut self) -> Result<bool, ReportError> {
        let start = self.pos;
        while self.pos < self.end {
            if !is_space(self.buf[self.pos]) {
                return Ok(self.pos > start);
            }
            self.pos += 1;
        }
        // (Positions are not comparable across a refill: it moves the buffer.)
        let skipped = self.pos > start;
        Ok(self.skip_space_slow()? || skipped)
    }

    fn skip_space_slow(&mut self) -> Result<bool, ReportError> {
        let mut any = false;
        loop {
            let avail = self.avail();
            let n = avail
                .iter()
                .position(|&b| !is_space(b))
                .unwrap_or(avail.len());
            self.pos += n;
            any |= n > 0;
            if self.pos < self.end || self.fill(1)? == 0 {
                return Ok(any);
            }
        }
    }

    /// The (valid, complete) character at `pos` if it is not ASCII.
    fn char_at(&mut self) -> Result<Option<char>, ReportError> {
        self.fill(4)?;
        let avail = self.avail();
        let len = match avail.first() {
            Some(&b) if b >= 0xF0 => 4,
            Some(&b) if b >= 0xE0 => 3,
            Some(&b) if b >= 0xC0 => 2,
            _ => return Ok(None),
        };
        // Validated UTF-8 never ends inside a character before `end`.
        let s = std::str::from_utf8(&avail[..len]).expect("validated UTF-8");
        Ok(s.chars().next())
    }

    /// The length of an ASCII name at `pos` that ends (at an ASCII byte) inside the
    /// buffer, if there is one: the names the fast paths read in place.
    #[inline]
    fn ascii_name_len(&self) -> Option<usize> {
        let avail = self.avail();
        let first = *avail.first()?;
        if CLASS[first as usize] & NAME_START == 0 {
            return None;
        }
        let n = avail[1..]
            .iter()
            .position(|&b| CLASS[b as usize] & NAME == 0)?;
        (avail[n + 1] < 0x80).then_some(n + 1)
    }

    /// Read an XML name into `out`. Fails unless a name starts at `pos`.
    #[inline]
    fn read_name(&mut self, out: &mut Vec<u8>, what: &str) -> Result<(), ReportError> {
        // Fast path: an ASCII name ending (at an ASCII byte) inside the buffer.
        let avail = self.avail();
        if let Some(&first) = avail.first() {
            if CLASS[first as usize] & NAME_START != 0 {
                if let Some(n) = avail[1..]
                    .iter()
                    .position(|&b| CLASS[b as usize] & NAME == 0)
                {
                    if avail[n + 1] < 0x80 {
                        out.extend_from_slice(&avail[..n + 1]);
                        self.pos += n + 1;
                        return Ok(());
                    }
                }
            }
        }
        self.read_name_slow(out, what)
    }

    fn read_name_slow(&mut self, out: &mut Vec<u8>, what: &str) -> Result<(), ReportError> {
        if self.pos == self.end && self.fill(1)? == 0 {
            return Err(self.stop(what));
        }
        let first = self.buf[self.pos];
        if first < 0x80 {
            if CLASS[first as usize] & NAME_START == 0 {
                return Err(self.malformed(&format!("expected {what}")));
            }
            out.push(first);
            self.pos += 1;
        } else {
            match self.char_at()? {
                Some(c) if is_name_start_non_ascii(c) => {
                    let n = c.len_utf8();
                    out.extend_from_slice(&self.buf[self.pos..self.pos + n]);
                    self.pos += n;
                }
                _ => return Err(self.malformed(&format!("expected {what}"))),
            }
        }
        loop {
            let avail = self.avail();
            let n = avail
                .iter()
                .position(|&b| CLASS[b as usize] & NAME == 0)
                .unwrap_or(avail.len());
            out.extend_from_slice(&avail[..n]);
            self.pos += n;
            if self.pos == self.end {
                if self.fill(1)? == 0 {
                    return Ok(());
                }
                continue;
            }
            if self.buf[self.pos] < 0x80 {
                return Ok(());
            }
            match self.char_at()? {
                Some(c) if is_name_non_ascii(c) => {
                    let n = c.len_utf8();
                    out.extend_from_slice(&self.buf[self.pos..self.pos + n]);
                    self.pos += n;
                }
                _ => return Ok(()),
            }
        }
    }

    /// After `&`: a reference, decoded. Only `lt gt amp quot apos` and character
    /// references to XML characters are allowed (no DTD, so any other entity is
    /// undefined).
    fn reference(&mut self) -> Result<char, ReportError> {
        match self.next_byte()? {
            Some(b'#') => {
                let hex = if self.peek_filled()? == Some(b'x') {
                    self.pos += 1;
                    true
                } else {
                    false
                };
                let mut value: u32 = 0;
                let mut digits = 0usize;
                loop {
                    let Some(b) = self.next_byte()? else {
                        return Err(self.stop("a character reference"));
                    };
                    let d = match b {
                        b'0'..=b'9' => (b - b'0') as u32,
                        b'a'..=b'f' if hex => (b - b'a' + 10) as u32,
                        b'A'..=b'F' if hex => (b - b'A' + 10) as u32,
                        b';' if digits > 0 => break,
                        _ => {
                            self.pos -= 1;
                            return Err(self.malformed(
                                "bad character reference (expected '&#N;' or '&#xH;')",
                            ));
                        }
                    };
                    digits += 1;
                    value = (value * if hex { 16 } else { 10 } + d).min(0x110000);
                }
                match char::from_u32(value).filter(|&c| is_xml_char(c as u32)) {
                    Some(c) => Ok(c),
                    None => {
                        Err(self
                            .malformed("a character reference to a character XML does not allow"))
                    }
                }
            }
            Some(_) => {
                self.pos -= 1;
                self.fill(5)?;
                let avail = self.avail();
                for (text, c) in [
                    (&b"lt;"[..], '<'),
                    (b"gt;", '>'),
                    (b"amp;", '&'),
                    (b"quot;", '"'),
                    (b"apos;", '\''),
                ] {
                    if avail.starts_with(text) {
                        self.pos += text.len();
                        return Ok(c);
                    }
                }
                let mut name = Vec::new();
                self.read_name(
                    &mut name,
                    "an entity name after '&' (write '&amp;' for a literal '&')",
                )?;
                if self.next_byte()? != Some(b';') {
                    self.pos -= 1;
                    return Err(self.malformed(
                        "an entity reference not closed by ';' (write '&amp;' for a literal '&')",
                    ));
                }
                match name.as_slice() {
                    b"lt" => Ok('<'),
                    b"gt" => Ok('>'),
                    b"amp" => Ok('&'),
                    b"quot" => Ok('"'),
                    b"apos" => Ok('\''),
                    other => Err(self.malformed(&format!(
                        "undefined entity '&{};' (only the five predefined entities are allowed)",
                        String::from_utf8_lossy(&other[..other.len().min(64)])
                    ))),
                }
            }
            None => Err(self.stop("a reference after '&'")),
        }
    }

    fn peek_filled(&mut self) -> Result<Option<u8>, ReportError> {
        if self.pos == self.end {
            self.fill(1)?;
        }
        Ok(self.peek())
    }

    /// True when no more bytes can come (end of input, no pending error).
    fn finished(&self) -> bool {
        self.pos == self.end && self.eof && self.raw_end == self.end && self.pending.is_none()
    }
}

/// The lexer over one document.
pub struct Lexer<'a> {
    inp: Input<'a>,
    /// Names of the open elements, concatenated; `frames` holds where each starts.
    names: Vec<u8>,
    frames: Vec<(usize, Elem)>,
    attrs: Attrs,
    /// Attribute names of the current tag that are not slots (for duplicates; slot
    /// names are tracked by `attrs.set`).
    seen_attrs: Vec<(usize, usize)>,
    seen_attr_bytes: Vec<u8>,
    seen_attr_set: HashSet<Vec<u8>>,
    scratch: Vec<u8>,
    root_seen: bool,
}

/// Declaration keywords refused as `forbidden` after `<!`.
const DECLARATIONS: [&[u8]; 5] = [b"DOCTYPE", b"ENTITY", b"ELEMENT", b"ATTLIST", b"NOTATION"];

impl<'a> Lexer<'a> {
    /// `src` yields UTF-8 (already transcoded); `skip` bytes (the XML declaration,
    /// checked by `decode`) are skipped; positions are reported as `offset_bias` + the
    /// offset in `src`. `buffer`: the read buffer's first size, at most [`CHUNK`] (a
    /// document known to be smaller needs no more than its size).
    pub fn new(
        src: Box<dyn Read + 'a>,
        path: &str,
        skip: usize,
        offset_bias: u64,
        file_offsets: bool,
        buffer: usize,
    ) -> Self {
        let mut lexer = Lexer {
            inp: Input {
                src,
                buf: vec![0; buffer.clamp(MIN_BUFFER, CHUNK)],
                pos: 0,
                end: 0,
                raw_end: 0,
                base: 0,
                eof: false,
                pending: None,
                path: path.to_string(),
                offset_bias,
                offsets_are_file_offsets: file_offsets,
            },
            names: Vec::with_capacity(256),
            frames: Vec::with_capacity(16),
            attrs: Attrs::default(),
            seen_attrs: Vec::with_capacity(16),
            seen_attr_bytes: Vec::with_capacity(256),
            seen_attr_set: HashSet::new(),
            scratch: Vec::with_capacity(64),
            root_seen: false,
        };
        lexer.inp.pos = 0;
        lexer.skip_prefix(skip);
        lexer
    }

    fn skip_prefix(&mut self, mut skip: usize) {
        // The declaration is ASCII and lies in the first bytes; reading errors surface
        // later, when the lexer needs the bytes.
        while skip > 0 {
            if self.inp.pos == self.inp.end && self.inp.fill(1).unwrap_or(0) == 0 {
                return;
            }
            let n = skip.min(self.inp.end - self.inp.pos);
            self.inp.pos += n;
            skip -= n;
        }
    }

    /// Lex the whole document, calling `h` for elements and kept text.
    pub fn run<H: Handler>(&mut self, h: &mut H) -> Result<(), ReportError> {
        loop {
            if self.frames.is_empty() {
                self.inp.skip_space()?;
                match self.inp.peek() {
                    None => {
                        if !self.inp.finished() {
                            return Err(self.inp.stop("markup"));
                        }
                        if self.root_seen {
                            return Ok(());
                        }
                        return Err(self.inp.malformed("the document has no root element"));
                    }
                    Some(b'<') => self.markup(h)?,
                    Some(_) => {
                        let what = if self.root_seen {
                            "text after the root element"
                        } else {
                            "text before the root element"
                        };
                        return Err(self.inp.malformed(what));
                    }
                }
            } else {
                self.content_text(h)?;
                self.markup(h)?;
            }
        }
    }

    /// At `<`.
    fn markup<H: Handler>(&mut self, h: &mut H) -> Result<(), ReportError> {
        if self.inp.fill(2)? < 2 {
            self.inp.pos += 1;
            return Err(self.inp.stop("markup after '<'"));
        }
        match self.inp.buf[self.inp.pos + 1] {
            b'/' => self.end_tag(h),
            b'?' => self.processing_instruction(),
            b'!' => self.bang(h),
            _ => {
                if self.frames.is_empty() && self.root_seen {
                    return Err(self
                        .inp
                        .malformed("a second element after the root element closed"));
                }
                self.start_tag(h)
            }
        }
    }

    /// Text between markup inside the root element, up to the next `<`.
    fn content_text<H: Handler>(&mut self, h: &mut H) -> Result<(), ReportError> {
        let capture = h.capturing();
        if !capture {
            // Usually only indentation lies between tags.
            let avail = self.inp.avail();
            let n = avail
                .iter()
                .position(|&b| !is_space(b))
                .unwrap_or(avail.len());
            if n < avail.len() && avail[n] == b'<' {
                self.inp.pos += n;
                return Ok(());
            }
        }
        loop {
            if self.inp.pos == self.inp.end && self.inp.fill(1)? == 0 {
                let name = self.top_name();
                return Err(self.inp.stop(&format!("'</{name}>'")));
            }
            let avail = self.inp.avail();
            let found = memchr3(b'<', b'&', b']', avail);
            let stop = found.unwrap_or(avail.len());
            if capture && stop > 0 {
                let mut piece_end = stop;
                // Keep a CR at the end of the buffer for the next round (it may start CRLF).
                if found.is_none() && avail[stop - 1] == b'\r' && !self.inp.eof {
                    piece_end -= 1;
                }
                emit_normalised(h, &avail[..piece_end]);
                self.inp.pos += piece_end;
                if piece_end < stop {
                    self.inp.fill(2)?;
                    if self.inp.end - self.inp.pos < 2 {
                        // Nothing follows the CR.
                        h.text("\n");
                        self.inp.pos += 1;
                    }
                    continue;
                }
            } else {
                self.inp.pos += stop;
            }
            match found {
                None => continue,
                Some(_) => match self.inp.buf[self.inp.pos] {
                    b'<' => return Ok(()),
                    b'&' => {
                        self.inp.pos += 1;
                        let c = self.inp.reference()?;
                        if capture {
                            h.text(c.encode_utf8(&mut [0u8; 4]));
                        }
                    }
                    _ => {
                        // ']': text, unless it starts ']]>'.
                        self.inp.fill(3)?;
                        if self.inp.avail().starts_with(b"]]>") {
                            return Err(self.inp.malformed("']]>' in text (write ']]&gt;')"));
                        }
                        self.inp.pos += 1;
                        if capture {
                            h.text("]");
                        }
                    }
                },
            }
        }
    }

    fn top_name(&self) -> String {
        match self.frames.last() {
            Some(&(start, Elem::Other)) => {
                String::from_utf8_lossy(&self.names[start..]).into_owned()
            }
            Some(&(_, elem)) => String::from_utf8_lossy(elem.name()).into_owned(),
            None => String::new(),
        }
    }

    fn start_tag<H: Handler>(&mut self, h: &mut H) -> Result<(), ReportError> {
        let at = self.inp.offset();
        self.inp.pos += 1; // '<'
                           // Known element names are not stored (the kind names them); others are, for
                           // matching their end tags.
        let name_start = self.names.len();
        let elem = match self.inp.ascii_name_len() {
            Some(len) => {
                let name = &self.inp.avail()[..len];
                let elem = Elem::classify(name);
                if elem == Elem::Other {
                    self.names.extend_from_slice(name);
                }
                self.inp.pos += len;
                elem
            }
            None => {
                self.inp
                    .read_name(&mut self.names, "an element name after '<'")?;
                let elem = Elem::classify(&self.names[name_start..]);
                if elem != Elem::Other {
                    self.names.truncate(name_start);
                }
                elem
            }
        };
        let mut set = self.attrs.set;
        while set != 0 {
            self.attrs.slots[set.trailing_zeros() as usize].reset();
            set &= set - 1;
        }
        self.attrs.set = 0;
        if !self.seen_attrs.is_empty() {
            self.seen_attrs.clear();
            self.seen_attr_bytes.clear();
            self.seen_attr_set.clear();
        }
        let mut count = 0usize;
        let empty = loop {
            let had_space = self.inp.skip_space()?;
            match self.inp.peek() {
                None => return Err(self.inp.stop("'>' closing a start tag")),
                Some(b'>') => {
                    self.inp.pos += 1;
                    break false;
                }
                Some(b'/') => {
                    self.inp.pos += 1;
                    self.inp.expect(b'>', "'>' after '/' in a start tag")?;
                    break true;
                }
                Some(_) if had_space => {
                    count += 1;
                    if count > MAX_ATTRIBUTES {
                        return Err(self.too_many_attributes(elem, name_start));
                    }
                    self.attribute(elem)?
                }
                Some(_) => {
                    return Err(self
                        .inp
                        .malformed("expected whitespace, '>' or '/>' in a start tag"))
                }
            }
        };
        let depth = self.frames.len() + 1;
        if !self.root_seen {
            self.root_seen = true;
            if !matches!(elem, Elem::Testsuites | Elem::Testsuite) {
                let name = if elem == Elem::Other {
                    &self.names[name_start..]
                } else {
                    elem.name()
                };
                let name = String::from_utf8_lossy(name).into_owned();
                return Err(self.inp.error(
                    ErrorKind::NotAReport,
                    format!(
                        "the root element is <{name}>, not <testsuites> or <testsuite>: this XML file is not a JUnit \
                         report (NUnit, TRX and xUnit.net files need converting to JUnit XML first)"
                    ),
                ));
            }
        }
        h.start(elem, &mut self.attrs, depth, at)?;
        if empty {
            self.names.truncate(name_start);
            h.end(elem, depth, self.inp.offset())?;
        } else {
            self.frames.push((name_start, elem));
        }
        Ok(())
    }

    /// The error for a start tag with more than [`MAX_ATTRIBUTES`] attributes, at the
    /// first one too many.
    fn too_many_attributes(&self, elem: Elem, name_start: usize) -> ReportError {
        let name = if elem == Elem::Other {
            &self.names[name_start..]
        } else {
            elem.name()
        };
        self.inp.error(
            ErrorKind::Malformed,
            format!(
                "the start tag <{}> has more than {MAX_ATTRIBUTES} attributes (a JUnit writer puts at most a dozen \
                 on an element; the limit bounds the parser's memory); the report is corrupted or not JUnit XML, \
                 regenerate it",
                String::from_utf8_lossy(name)
            ),
        )
    }

    fn attribute(&mut self, elem: Elem) -> Result<(), ReportError> {
        // Fastest path: a testcase attribute read by the rules, written `name="`.
        if elem == Elem::Testcase {
            if let Some((slot, len)) = testcase_slot_prefix(self.inp.avail()) {
                if self.attrs.set & slot.bit() == 0 {
                    self.attrs.set |= slot.bit();
                    self.inp.pos += len;
                    return self.attribute_value(Some(slot));
                }
            }
        }
        // Fast path: the name lies in the buffer; a slot name is checked for duplicates
        // by its bit, any other is kept in `seen_attr_bytes`.
        let slot = match self.inp.ascii_name_len() {
            Some(len) => {
                let name = &self.inp.avail()[..len];
                let slot = slot_for(elem, name);
                if slot.is_none() {
                    let start = self.seen_attr_bytes.len();
                    self.seen_attr_bytes.extend_from_slice(name);
                    self.inp.pos += len;
                    self.check_other_attribute(start)?;
                } else {
                    self.inp.pos += len;
                }
                slot
            }
            None => {
                let start = self.seen_attr_bytes.len();
                self.inp
                    .read_name(&mut self.seen_attr_bytes, "an attribute name")?;
                let slot = slot_for(elem, &self.seen_attr_bytes[start..]);
                if slot.is_none() {
                    self.check_other_attribute(start)?;
                } else {
                    self.seen_attr_bytes.truncate(start);
                }
                slot
            }
        };
        if let Some(slot) = slot {
            if self.attrs.set & slot.bit() != 0 {
                return Err(self
                    .inp
                    .malformed(&format!("duplicate attribute '{}'", slot.name())));
            }
            self.attrs.set |= slot.bit();
        }
        self.attribute_value(slot)
    }

    /// After an attribute name: `Eq` and the value, kept in `slot` if given.
    #[inline]
    fn attribute_value(&mut self, slot: Option<Slot>) -> Result<(), ReportError> {
        // Fast path: `="value"` with nothing to decode, all in the buffer.
        let avail = self.inp.avail();
        if avail.len() > 2 && avail[0] == b'=' && (avail[1] == b'"' || avail[1] == b'\'') {
            let quote = avail[1];
            if let Some(i) = find_attr_stop(quote, &avail[2..]) {
                if avail[2 + i] == quote {
                    if let Some(slot) = slot {
                        let value = &mut self.attrs.slots[slot as usize];
                        value.present = true;
                        value.push(as_str(&avail[2..2 + i]));
                    }
                    self.inp.pos += i + 3;
                    return Ok(());
                }
            }
        }
        self.inp.skip_space()?;
        self.inp.expect(b'=', "'=' after an attribute name")?;
        self.inp.skip_space()?;
        let quote = match self.inp.next_byte()? {
            Some(q @ (b'"' | b'\'')) => q,
            Some(_) => {
                self.inp.pos -= 1;
                return Err(self.inp.malformed("an attribute value must be quoted"));
            }
            None => return Err(self.inp.stop("an attribute value")),
        };
        match slot {
            Some(slot) => {
                let value = &mut self.attrs.slots[slot as usize];
                value.present = true;
                read_attr_value(&mut self.inp, quote, Some(value))
            }
            None => read_attr_value(&mut self.inp, quote, None),
        }
    }

    /// Fail if the name just appended at `start` of `seen_attr_bytes` was seen before in
    /// this tag; else record it.
    fn check_other_attribute(&mut self, start: usize) -> Result<(), ReportError> {
        if self.is_duplicate_attribute(start) {
            let shown = String::from_utf8_lossy(&self.seen_attr_bytes[start..]).into_owned();
            return Err(self
                .inp
                .malformed(&format!("duplicate attribute '{shown}'")));
        }
        Ok(())
    }

    /// Whether the name just appended at `start` of `seen_attr_bytes` was seen before
    /// in this tag; records it.
    fn is_duplicate_attribute(&mut self, start: usize) -> bool {
        let name = &self.seen_attr_bytes[start..];
        // A linear scan is fastest for the usual handful of attributes; a set past 16.
        if self.seen_attrs.len() < 16 {
            let dup = self
                .seen_attrs
                .iter()
                .any(|&(s, e)| &self.seen_attr_bytes[s..e] == name);
            self.seen_attrs.push((start, self.seen_attr_bytes.len()));
            if self.seen_attrs.len() == 16 {
                for &(s, e) in &self.seen_attrs {
                    self.seen_attr_set
                        .insert(self.seen_attr_bytes[s..e].to_vec());
                }
            }
            dup
        } else {
            let dup = !self.seen_attr_set.insert(name.to_vec());
            if !dup {
                // Past 16 the set holds the names; keep the byte list from growing.
                self.seen_attr_bytes.truncate(start);
            }
            dup
        }
    }

    fn end_tag<H: Handler>(&mut self, h: &mut H) -> Result<(), ReportError> {
        self.inp.pos += 2; // '</'
        let Some(&(name_start, elem)) = self.frames.last() else {
            return Err(self
                .inp
                .malformed("an end tag after the root element closed"));
        };
        let expected: &[u8] = if elem == Elem::Other {
            &self.names[name_start..]
        } else {
            elem.name()
        };
        // Fast path: the expected name, then a byte that cannot continue a name.
        let avail = self.inp.avail();
        let n = expected.len();
        let in_place = avail.len() > n
            && &avail[..n] == expected
            && avail[n] < 0x80
            && CLASS[avail[n] as usize] & NAME == 0;
        if in_place {
            self.inp.pos += n;
        } else {
            self.scratch.clear();
            let mut name = std::mem::take(&mut self.scratch);
            let read = self.inp.read_name(&mut name, "an element name after '</'");
            let expected: &[u8] = if elem == Elem::Other {
                &self.names[name_start..]
            } else {
                elem.name()
            };
            let matches = name == expected;
            let shown = (!matches).then(|| String::from_utf8_lossy(&name).into_owned());
            self.scratch = name;
            read?;
            if let Some(shown) = shown {
                let open = String::from_utf8_lossy(expected).into_owned();
                return Err(self.inp.malformed(&format!(
                    "end tag </{shown}> does not match the open element <{open}>"
                )));
            }
        }
        self.inp.skip_space()?;
        self.inp.expect(b'>', "'>' closing an end tag")?;
        let depth = self.frames.len();
        self.frames.pop();
        self.names.truncate(name_start);
        h.end(elem, depth, self.inp.offset())
    }

    /// At `<?`: a processing instruction (ignored). The XML declaration was consumed
    /// before lexing, so a target `xml` in any case is an error here, as in expat.
    fn processing_instruction(&mut self) -> Result<(), ReportError> {
        self.inp.pos += 2;
        self.scratch.clear();
        let mut target = std::mem::take(&mut self.scratch);
        let read = self
            .inp
            .read_name(&mut target, "a processing instruction target after '<?'");
        let reserved = target.eq_ignore_ascii_case(b"xml");
        self.scratch = target;
        read?;
        if reserved {
            return Err(self
                .inp
                .malformed("an XML declaration ('<?xml') that is not at the start of the file"));
        }
        self.inp.fill(2)?;
        if self.inp.avail().starts_with(b"?>") {
            self.inp.pos += 2;
            return Ok(());
        }
        if !self.inp.skip_space()? {
            return Err(self
                .inp
                .malformed("expected whitespace or '?>' after a processing instruction target"));
        }
        self.skip_until_marker(b'?', b">", "'?>' closing a processing instruction")
    }

    /// Skip to just after `first` + `rest` (e.g. `?` + `>`); the bytes in between are
    /// only checked as characters (done when read).
    fn skip_until_marker(&mut self, first: u8, rest: &[u8], what: &str) -> Result<(), ReportError> {
        loop {
            if self.inp.pos == self.inp.end && self.inp.fill(1)? == 0 {
                return Err(self.inp.stop(what));
            }
            let avail = self.inp.avail();
            match memchr(first, avail) {
                None => self.inp.pos = self.inp.end,
                Some(i) => {
                    self.inp.pos += i;
                    self.inp.fill(1 + rest.len())?;
                    if self.inp.avail()[1..].starts_with(rest) {
                        self.inp.pos += 1 + rest.len();
                        return Ok(());
                    }
                    self.inp.pos += 1;
                }
            }
        }
    }

    /// At `<!`: a comment, a CDATA section (inside the root only), or a refused
    /// declaration.
    fn bang<H: Handler>(&mut self, h: &mut H) -> Result<(), ReportError> {
        self.inp.fill(10)?;
        let ahead = self.inp.avail();
        if ahead.starts_with(b"<!--") {
            self.inp.pos += 4;
            return self.comment();
        }
        if ahead.starts_with(b"<![CDATA[") && !self.frames.is_empty() {
            self.inp.pos += 9;
            return self.cdata(h);
        }
        for keyword in DECLARATIONS {
            if ahead[2..].starts_with(keyword) {
                return Err(self.inp.error(
                    ErrorKind::Forbidden,
                    format!(
                        "the file contains '<!{}': DTDs and entity declarations are refused (they enable XXE and \
                         billion-laughs attacks); JUnit reports never need one, remove it",
                        String::from_utf8_lossy(keyword)
                    ),
                ));
            }
        }
        if ahead.len() < 10 {
            // The input ends (or cannot be read) within the lookahead.
            self.inp.pos += ahead.len();
            return Err(self.inp.stop("markup after '<!'"));
        }
        self.inp.pos += 2;
        Err(self
            .inp
            .malformed("expected '<!--' or '<![CDATA[' after '<!'"))
    }

    /// After `<!--`: up to `-->`; `--` inside is an error (as in expat).
    fn comment(&mut self) -> Result<(), ReportError> {
        loop {
            if self.inp.pos == self.inp.end && self.inp.fill(1)? == 0 {
                return Err(self.inp.stop("'-->' closing a comment"));
            }
            let avail = self.inp.avail();
            match memchr(b'-', avail) {
                None => self.inp.pos = self.inp.end,
                Some(i) => {
                    self.inp.pos += i;
                    self.inp.fill(3)?;
                    let ahead = self.inp.avail();
                    if ahead.len() >= 2 && ahead[1] == b'-' {
                        if ahead.len() < 3 {
                            self.inp.pos += ahead.len();
                            return Err(self.inp.stop("'>' after '--' in a comment"));
                        }
                        if ahead[2] != b'>' {
                            self.inp.pos += 2;
                            return Err(self.inp.malformed("'--' inside a comment"));
                        }
                        self.inp.pos += 3;
                        return Ok(());
                    }
                    self.inp.pos += 1;
                }
            }
        }
    }

    /// After `<![CDATA[`: text up to `]]>`.
    fn cdata<H: Handler>(&mut self, h: &mut H) -> Result<(), ReportError> {
        let capture = h.capturing();
        loop {
            if self.inp.pos == self.inp.end && self.inp.fill(1)? == 0 {
                return Err(self.inp.stop("']]>' closing a CDATA section"));
            }
            let avail = self.inp.avail();
            let found = memchr(b']', avail);
            let stop = found.unwrap_or(avail.len());
            if capture && stop > 0 {
                let mut piece_end = stop;
                if found.is_none() && avail[stop - 1] == b'\r' && !self.inp.eof {
                    piece_end -= 1;
                }
                emit_normalised(h, &avail[..piece_end]);
                self.inp.pos += piece_end;
                if piece_end < stop {
                    self.inp.fill(2)?;
                    if self.inp.end - self.inp.pos < 2 {
                        h.text("\n");
                        self.inp.pos += 1;
                    }
                    continue;
                }
            } else {
                self.inp.pos += stop;
            }
            if found.is_some() {
                self.inp.fill(3)?;
                if self.inp.avail().starts_with(b"]]>") {
                    self.inp.pos += 3;
                    return Ok(());
                }
                self.inp.pos += 1;
                if capture {
                    h.text("]");
                }
            }
        }
    }
}

/// Hand validated text to `h` with CRLF and lone CR turned into LF. `piece` never ends
/// with a CR that may start a CRLF still unread.
fn emit_normalised<H: Handler>(h: &mut H, piece: &[u8]) {
    let mut rest = piece;
    while let Some(i) = memchr(b'\r', rest) {
        h.text(as_str(&rest[..i]));
        h.text("\n");
        rest = if rest.get(i + 1) == Some(&b'\n') {
            &rest[i + 2..]
        } else {
            &rest[i + 1..]
        };
    }
    if !rest.is_empty() {
        h.text(as_str(rest));
    }
}

/// Bytes of the validated buffer between ASCII delimiters (always whole characters).
#[inline]
fn as_str(bytes: &[u8]) -> &str {
    debug_assert!(std::str::from_utf8(bytes).is_ok());
    // SAFETY: the input buffer is checked with `str::from_utf8` before the lexer sees
    // it, and pieces are cut only at ASCII bytes or at the validated end, which is a
    // character boundary.
    unsafe { std::str::from_utf8_unchecked(bytes) }
}

/// After the opening quote: read an attribute value up to `quote`, decoding it into
/// `dest` (normalised: literal tab/LF/CR/CRLF -> one space; references decoded) or only
/// checking it.
fn read_attr_value(
    inp: &mut Input<'_>,
    quote: u8,
    mut dest: Option<&mut AttrValue>,
) -> Result<(), ReportError> {
    loop {
        if inp.pos == inp.end && inp.fill(1)? == 0 {
            return Err(inp.stop("the closing quote of an attribute value"));
        }
        let avail = inp.avail();
        let found = find_attr_stop(quote, avail);
        let stop = found.unwrap_or(avail.len());
        if let Some(value) = dest.as_deref_mut() {
            if stop > 0 {
                value.push(as_str(&avail[..stop]));
            }
        }
        inp.pos += stop;
        if found.is_none() {
            continue;
        }
        match inp.buf[inp.pos] {
            b'&' => {
                inp.pos += 1;
                let c = inp.reference()?;
                if let Some(value) = dest.as_deref_mut() {
                    value.push(c.encode_utf8(&mut [0u8; 4]));
                }
            }
            b'<' => return Err(inp.malformed("'<' in an attribute value (write '&lt;')")),
            b'\t' | b'\n' | b'\r' => {
                // End-of-line handling (CRLF -> LF), then attribute-value normalisation.
                let cr = inp.buf[inp.pos] == b'\r';
                inp.pos += 1;
                if cr && inp.peek_filled()? == Some(b'\n') {
                    inp.pos += 1;
                }
                if let Some(value) = dest.as_deref_mut() {
                    value.push(" ");
                }
            }
            _ => {
                inp.pos += 1;
                return Ok(());
            }
        }
    }
}

const LOW_BITS: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// High bit set in each byte of `word` equal to `b` (exact up to the first match; a
/// borrow may mark bytes after it, which the callers never look at).
#[inline(always)]
fn bytes_equal(word: u64, b: u8) -> u64 {
    let x = word ^ (LOW_BITS * b as u64);
    x.wrapping_sub(LOW_BITS) & !x & HIGH_BITS
}

/// High bit set in each byte of `word` below 0x20 (same caveat).
#[inline(always)]
fn bytes_below_space(word: u64) -> u64 {
    word.wrapping_sub(LOW_BITS * 0x20) & !word & HIGH_BITS
}

/// `classname`, `name`, `file`, `line` or `time` followed by `=` at the start of
/// `bytes`: the slot and the name's length. (The `=` proves the name ended there.)
#[inline]
fn testcase_slot_prefix(bytes: &[u8]) -> Option<(Slot, usize)> {
    let (slot, name): (Slot, &[u8]) = match bytes.first()? {
        b'c' => (Slot::Classname, b"classname="),
        b'n' => (Slot::Name, b"name="),
        b't' => (Slot::Time, b"time="),
        b'f' => (Slot::File, b"file="),
        b'l' => (Slot::Line, b"line="),
        _ => return None,
    };
    bytes.starts_with(name).then_some((slot, name.len() - 1))
}

/// The first `quote`, `&`, `<` or byte below 0x20 (after validation: tab, LF or CR,
/// which normalisation replaces) in `bytes`: 16 bytes at a time with SSE2 on x86_64,
/// else eight at a time (SWAR). Attribute values are mostly short, where this beats
/// setting up a longer vector search.
#[inline]
fn find_attr_stop(quote: u8, bytes: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let mut chunks = bytes.chunks_exact(16);
        // SAFETY: SSE2 is part of the x86_64 baseline; each load reads one 16-byte chunk.
        unsafe {
            let (q, amp, lt, max_control) = (
                _mm_set1_epi8(quote as i8),
                _mm_set1_epi8(b'&' as i8),
                _mm_set1_epi8(b'<' as i8),
                _mm_set1_epi8(0x1F),
            );
            for (k, chunk) in chunks.by_ref().enumerate() {
                let x = _mm_loadu_si128(chunk.as_ptr() as *const __m128i);
                let hits = _mm_or_si128(
                    _mm_or_si128(_mm_cmpeq_epi8(x, q), _mm_cmpeq_epi8(x, amp)),
                    _mm_or_si128(
                        _mm_cmpeq_epi8(x, lt),
                        _mm_cmpeq_epi8(_mm_max_epu8(x, max_control), max_control),
                    ),
                );
                let mask = _mm_movemask_epi8(hits);
                if mask != 0 {
                    return Some(k * 16 + mask.trailing_zeros() as usize);
                }
            }
        }
        let done = bytes.len() - chunks.remainder().len();
        find_attr_stop_swar(quote, chunks.remainder()).map(|i| done + i)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        find_attr_stop_swar(quote, bytes)
    }
}

#[inline]
fn find_attr_stop_swar(quote: u8, bytes: &[u8]) -> Option<usize> {
    let mut words = bytes.chunks_exact(8);
    for (k, word) in words.by_ref().enumerate() {
        let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        let hits = bytes_equal(word, quote)
            | bytes_equal(word, b'&')
            | bytes_equal(word, b'<')
            | bytes_below_space(word);
        if hits != 0 {
            return Some(k * 8 + (hits.trailing_zeros() / 8) as usize);
        }
    }
    let done = bytes.len() - words.remainder().len();
    words
        .remainder()
        .iter()
        .position(|&b| b == quote || b == b'&' || b == b'<' || b < 0x20)
        .map(|j| done + j)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(check: Check) -> (usize, Option<String>, bool) {
        match check {
            Check::Valid => (usize::MAX, None, true),
            Check::Incomplete(n) => (n, None, false),
            Check::Invalid(n, what) => (n, Some(what), false),
        }
    }

    /// The clean-ASCII skip must not change a single answer: every kind of byte the exact
    /// check cares about (controls allowed or not, multi-byte characters, U+FFFE, invalid
    /// and cut sequences), at every offset around the 64-byte blocks and the exact
    /// window's end, gives what the byte-by-byte check gives.
    #[test]
    fn clean_ascii_skip_gives_the_exact_checks_answer() {
        let insertions: [&[u8]; 12] = [
            b"\t",
            b"\n\r",
            b"\x0c",
            b"\x00",
            b"\x7f",
            "é".as_bytes(),
            "€".as_bytes(),
            "😀".as_bytes(),
            "\u{FFFE}".as_bytes(),
            b"\xff",
            b"\xe2\x82",
            b"\xe2\x82a",
        ];
        let mut offsets: Vec<usize> = (0..3).flat_map(|k| [64 * k, 64 * k + 1]).collect();
        for edge in [
            63,
            64,
            65,
            127,
            128,
            EXACT_WINDOW - 1,
            EXACT_WINDOW,
            EXACT_WINDOW + 63,
        ] {
            offsets.extend([edge, edge + 64, edge + EXACT_WINDOW]);
        }
        for len in [0usize, 1, 63, 64, 65, 200, 2 * EXACT_WINDOW + 130] {
            for &at in offsets.iter().filter(|&&at| at <= len) {
                for insertion in insertions {
                    // A second byte of note past the first one's window, or across
                    // that window's end (it starts at the first one's 64-byte block).
                    let window_end = at / 64 * 64 + EXACT_WINDOW;
                    let seconds: [&[u8]; 4] = [b"", "é".as_bytes(), b"\x01", b"\xe2\x82"];
                    let places = [
                        at + EXACT_WINDOW + 70,
                        window_end - 2,
                        window_end - 1,
                        window_end,
                        window_end + 1,
                    ];
                    for (second, place) in seconds.iter().flat_map(|s| places.map(|p| (s, p))) {
                        let mut bytes = vec![b'a'; len];
                        bytes.splice(at..at, insertion.iter().copied());
                        let place = place.min(bytes.len());
                        bytes.splice(place..place, second.iter().copied());
                        assert_eq!(
                            outcome(check_chars(&bytes)),
                            outcome(check_chars_exact(&bytes)),
                            "{insertion:?} at {at} of {len}, then {second:?} at {place}"
                        );
                    }
                }
            }
        }
    }

    /// The vector scan finds the same clean prefix as a plain one.
    #[test]
    fn clean_ascii_prefix_matches_a_plain_scan() {
        let plain = |bytes: &[u8]| {
            bytes
                .chunks_exact(64)
                .take_while(|block| block.iter().all(|&b| b < 0x80 && !is_bad_control(b)))
                .count()
                * 64
        };
        for len in [0usize, 63, 64, 130, 256] {
            for at in 0..len {
                for b in [
                    0u8, 9, 10, 11, 12, 13, 0x1F, 0x20, 0x7E, 0x7F, 0x80, 0xC3, 0xFF,
                ] {
                    let mut bytes = vec![b'x'; len];
                    bytes[at] = b;
                    assert_eq!(clean_ascii_prefix(&bytes), plain(&bytes), "{b:#x} at {at}");
                }
            }
        }
    }

    #[test]
    fn bad_character_scan_matches_a_plain_scan() {
        for len in [0usize, 1, 15, 16, 17, 63, 64, 65, 200] {
            for at in 0..len {
                for b in [0u8, 8, 9, 10, 11, 13, 0x1F, 0x20, 0x7F, 0xEF] {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = b;
                    let plain = bytes.iter().position(|&c| is_bad_control(c));
                    // A lone 0xEF is invalid UTF-8, so only controls are found exactly;
                    // 0xEF must at least trigger the exact check.
                    assert_eq!(find_bad_char(&bytes), plain, "{b:#x} at {at} of {len}");
                    assert_eq!(
                        block_may_hold_bad_char(&bytes),
                        plain.is_some() || b == 0xEF
                    );
                }
            }
        }
        assert_eq!(find_bad_char("ab\u{FFFE}".as_bytes()), Some(2));
        assert_eq!(find_bad_char("ab\u{FFFF}".as_bytes()), Some(2));
        assert_eq!(find_bad_char("ab\u{FFFD}\u{F000}".as_bytes()), None);
    }

    #[test]
    fn swar_attribute_scan_matches_a_plain_scan() {
        // Every position and neighbour of each stop byte, in words and tails.
        let stops = [b'"', b'\'', b'&', b'<', b'\t', b'\n', b'\r', 0x00, 0x1F];
        let others = [b'a', b' ', b'!', 0x7F, 0x80, 0xFF, 0x21, 0x3B, 0x3D];
        for len in 0..40 {
            for at in 0..len.max(1) {
                for &stop in &stops {
                    for &other in &others {
                        let mut bytes = vec![other; len];
                        if at < len {
                            bytes[at] = stop;
                        }
                        for quote in [b'"', b'\''] {
                            let plain = bytes
                                .iter()
                                .position(|&b| b == quote || b == b'&' || b == b'<' || b < 0x20);
                            assert_eq!(
                                find_attr_stop(quote, &bytes),
                                plain,
                                "{bytes:?} quote {quote}"
                            );
                            assert_eq!(
                                find_attr_stop_swar(quote, &bytes),
                                plain,
                                "{bytes:?} quote {quote}"
                            );
                        }
                    }
                }
            }
        }
    }
}
