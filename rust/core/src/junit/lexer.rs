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
use super::names::{is_name_ascii, is_name_non_ascii, is_name_start_ascii, is_name_start_non_ascii};
use crate::error::{ErrorKind, ReportError};
use crate::text::{floor_char_boundary, ATTR_CAP};

/// Bytes read at a time.
pub const CHUNK: usize = 256 * 1024;

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
    Other,
}

impl Elem {
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
        _ => None,
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

    fn push(&mut self, s: &str) {
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
    slots: [AttrValue; 7],
}

impl Attrs {
    pub fn get(&self, slot: Slot) -> Option<&str> {
        self.slots[slot as usize].get()
    }

    pub fn omitted(&self, slot: Slot) -> u64 {
        self.slots[slot as usize].omitted
    }
}

/// What the JUnit rules do with the lexer's events. `depth` counts open elements with
/// the element itself (the root is 1).
pub trait Handler {
    fn start(&mut self, elem: Elem, attrs: &Attrs, depth: usize) -> Result<(), ReportError>;
    fn end(&mut self, elem: Elem, depth: usize) -> Result<(), ReportError>;
    /// True when character data at this point is kept (then `text` gets it).
    fn capturing(&self) -> bool;
    fn text(&mut self, s: &str);
}

#[inline]
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
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

/// Check UTF-8 and XML character validity of `bytes`.
fn check_chars(bytes: &[u8]) -> Check {
    let (valid, utf8_problem) = match std::str::from_utf8(bytes) {
        Ok(_) => (bytes.len(), None),
        Err(e) => (e.valid_up_to(), Some(e.error_len().is_some())),
    };
    if let Some(i) = find_bad_char(&bytes[..valid]) {
        let what = if bytes[i] < 0x20 {
            format!("control character U+{:04X}, which XML does not allow", bytes[i])
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
        // Branch-free test per block (vectorised); exact search only in hit blocks.
        let mut hit = 0u8;
        for &b in block {
            hit |= (is_bad_control(b) as u8) | ((b == 0xEF) as u8);
        }
        if hit != 0 {
            for (j, &b) in block.iter().enumerate() {
                let i = base + j;
                if is_bad_control(b) {
                    return Some(i);
                }
                if b == 0xEF && bytes.get(i + 1) == Some(&0xBF) && matches!(bytes.get(i + 2), Some(0xBE | 0xBF)) {
                    return Some(i);
                }
            }
        }
        base += block.len();
    }
    None
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
    fn fill(&mut self, want: usize) -> Result<usize, ReportError> {
        while self.end - self.pos < want {
            if self.pending.is_some() || (self.eof && self.raw_end == self.end) {
                break;
            }
            if self.eof {
                // The input ended inside a UTF-8 sequence.
                self.pending = Some(Pending::Malformed("the file ends inside a UTF-8 character".into()));
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
                        self.pending = Some(match e.get_ref().and_then(|inner| inner.downcast_ref::<DecodeError>()) {
                            Some(d) => Pending::Malformed(d.message.clone()),
                            None => Pending::Io(e),
                        });
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
                self.pending =
                    Some(Pending::Malformed(format!("{what}; the file is corrupted or not in the declared encoding")));
            }
        }
    }

    fn position(&self) -> String {
        let offset = self.base + self.pos as u64 + self.offset_bias;
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
            Some(Pending::Malformed(msg)) => {
                self.error(ErrorKind::Malformed, format!("{msg}; regenerate the report or fix its encoding"))
            }
            Some(Pending::Io(e)) => self.error(
                ErrorKind::Unreadable,
                format!("cannot read the file ({e}); check that it is a readable regular file"),
            ),
            None => self.malformed(&format!("the file ends where {expected} was expected (truncated?)")),
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
    fn expect(&mut self, b: u8, what: &str) -> Result<(), ReportError> {
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
    fn skip_space(&mut self) -> Result<bool, ReportError> {
        let mut any = false;
        loop {
            let avail = self.avail();
            let n = avail.iter().position(|&b| !is_space(b)).unwrap_or(avail.len());
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

    /// Read an XML name into `out`. Fails unless a name starts at `pos`.
    fn read_name(&mut self, out: &mut Vec<u8>, what: &str) -> Result<(), ReportError> {
        if self.pos == self.end && self.fill(1)? == 0 {
            return Err(self.stop(what));
        }
        let first = self.buf[self.pos];
        if first < 0x80 {
            if !is_name_start_ascii(first) {
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
            let n = avail.iter().position(|&b| !is_name_ascii(b)).unwrap_or(avail.len());
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
                            return Err(self.malformed("bad character reference (expected '&#N;' or '&#xH;')"));
                        }
                    };
                    digits += 1;
                    value = (value * if hex { 16 } else { 10 } + d).min(0x110000);
                }
                match char::from_u32(value).filter(|&c| is_xml_char(c as u32)) {
                    Some(c) => Ok(c),
                    None => Err(self.malformed("a character reference to a character XML does not allow")),
                }
            }
            Some(_) => {
                self.pos -= 1;
                self.fill(5)?;
                let avail = self.avail();
                for (text, c) in [(&b"lt;"[..], '<'), (b"gt;", '>'), (b"amp;", '&'), (b"quot;", '"'), (b"apos;", '\'')]
                {
                    if avail.starts_with(text) {
                        self.pos += text.len();
                        return Ok(c);
                    }
                }
                let mut name = Vec::new();
                self.read_name(&mut name, "an entity name after '&' (write '&amp;' for a literal '&')")?;
                if self.next_byte()? != Some(b';') {
                    self.pos -= 1;
                    return Err(
                        self.malformed("an entity reference not closed by ';' (write '&amp;' for a literal '&')")
                    );
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
    /// offset in `src`.
    pub fn new(src: Box<dyn Read + 'a>, path: &str, skip: usize, offset_bias: u64, file_offsets: bool) -> Self {
        let mut lexer = Lexer {
            inp: Input {
                src,
                buf: vec![0; CHUNK],
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
                        let what =
                            if self.root_seen { "text after the root element" } else { "text before the root element" };
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
                    return Err(self.inp.malformed("a second element after the root element closed"));
                }
                self.start_tag(h)
            }
        }
    }

    /// Text between markup inside the root element, up to the next `<`.
    fn content_text<H: Handler>(&mut self, h: &mut H) -> Result<(), ReportError> {
        let capture = h.capturing();
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
            Some(&(start, _)) => String::from_utf8_lossy(&self.names[start..]).into_owned(),
            None => String::new(),
        }
    }

    fn start_tag<H: Handler>(&mut self, h: &mut H) -> Result<(), ReportError> {
        self.inp.pos += 1; // '<'
        let name_start = self.names.len();
        self.inp.read_name(&mut self.names, "an element name after '<'")?;
        let elem = Elem::classify(&self.names[name_start..]);
        for slot in &mut self.attrs.slots {
            slot.reset();
        }
        self.seen_attrs.clear();
        self.seen_attr_bytes.clear();
        self.seen_attr_set.clear();
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
                Some(_) if had_space => self.attribute(elem)?,
                Some(_) => return Err(self.inp.malformed("expected whitespace, '>' or '/>' in a start tag")),
            }
        };
        let depth = self.frames.len() + 1;
        if !self.root_seen {
            self.root_seen = true;
            if !matches!(elem, Elem::Testsuites | Elem::Testsuite) {
                let name = String::from_utf8_lossy(&self.names[name_start..]).into_owned();
                return Err(self.inp.error(
                    ErrorKind::NotAReport,
                    format!(
                        "the root element is <{name}>, not <testsuites> or <testsuite>: this XML file is not a JUnit \
                         report (NUnit, TRX and xUnit.net files need converting to JUnit XML first)"
                    ),
                ));
            }
        }
        h.start(elem, &self.attrs, depth)?;
        if empty {
            self.names.truncate(name_start);
            h.end(elem, depth)?;
        } else {
            self.frames.push((name_start, elem));
        }
        Ok(())
    }

    fn attribute(&mut self, elem: Elem) -> Result<(), ReportError> {
        self.scratch.clear();
        let mut name = std::mem::take(&mut self.scratch);
        self.inp.read_name(&mut name, "an attribute name")?;
        if self.is_duplicate_attribute(&name) {
            let shown = String::from_utf8_lossy(&name).into_owned();
            self.scratch = name;
            return Err(self.inp.malformed(&format!("duplicate attribute '{shown}'")));
        }
        let slot = slot_for(elem, &name);
        self.scratch = name;
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

    fn is_duplicate_attribute(&mut self, name: &[u8]) -> bool {
        // A linear scan is fastest for the usual handful of attributes; a set past 16.
        if self.seen_attrs.len() < 16 {
            let dup = self.seen_attrs.iter().any(|&(s, e)| &self.seen_attr_bytes[s..e] == name);
            let start = self.seen_attr_bytes.len();
            self.seen_attr_bytes.extend_from_slice(name);
            self.seen_attrs.push((start, self.seen_attr_bytes.len()));
            if self.seen_attrs.len() == 16 {
                for &(s, e) in &self.seen_attrs {
                    self.seen_attr_set.insert(self.seen_attr_bytes[s..e].to_vec());
                }
            }
            dup
        } else {
            !self.seen_attr_set.insert(name.to_vec())
        }
    }

    fn end_tag<H: Handler>(&mut self, h: &mut H) -> Result<(), ReportError> {
        self.inp.pos += 2; // '</'
        let Some(&(name_start, elem)) = self.frames.last() else {
            return Err(self.inp.malformed("an end tag after the root element closed"));
        };
        self.scratch.clear();
        let mut name = std::mem::take(&mut self.scratch);
        let read = self.inp.read_name(&mut name, "an element name after '</'");
        let matches = name == self.names[name_start..];
        let shown = String::from_utf8_lossy(&name).into_owned();
        self.scratch = name;
        read?;
        if !matches {
            let open = self.top_name();
            return Err(self.inp.malformed(&format!("end tag </{shown}> does not match the open element <{open}>")));
        }
        self.inp.skip_space()?;
        self.inp.expect(b'>', "'>' closing an end tag")?;
        let depth = self.frames.len();
        self.frames.pop();
        self.names.truncate(name_start);
        h.end(elem, depth)
    }

    /// At `<?`: a processing instruction (ignored). The XML declaration was consumed
    /// before lexing, so a target `xml` in any case is an error here, as in expat.
    fn processing_instruction(&mut self) -> Result<(), ReportError> {
        self.inp.pos += 2;
        self.scratch.clear();
        let mut target = std::mem::take(&mut self.scratch);
        let read = self.inp.read_name(&mut target, "a processing instruction target after '<?'");
        let reserved = target.eq_ignore_ascii_case(b"xml");
        self.scratch = target;
        read?;
        if reserved {
            return Err(self.inp.malformed("an XML declaration ('<?xml') that is not at the start of the file"));
        }
        self.inp.fill(2)?;
        if self.inp.avail().starts_with(b"?>") {
            self.inp.pos += 2;
            return Ok(());
        }
        if !self.inp.skip_space()? {
            return Err(self.inp.malformed("expected whitespace or '?>' after a processing instruction target"));
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
        Err(self.inp.malformed("expected '<!--' or '<![CDATA[' after '<!'"))
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
        rest = if rest.get(i + 1) == Some(&b'\n') { &rest[i + 2..] } else { &rest[i + 1..] };
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
fn read_attr_value(inp: &mut Input<'_>, quote: u8, mut dest: Option<&mut AttrValue>) -> Result<(), ReportError> {
    loop {
        if inp.pos == inp.end && inp.fill(1)? == 0 {
            return Err(inp.stop("the closing quote of an attribute value"));
        }
        let avail = inp.avail();
        let found = memchr3(quote, b'&', b'<', avail);
        let stop = found.unwrap_or(avail.len());
        match dest.as_deref_mut() {
            Some(value) if stop > 0 => {
                let mut piece_end = stop;
                if found.is_none() && avail[stop - 1] == b'\r' && !inp.eof {
                    piece_end -= 1;
                }
                push_attr_piece(value, &avail[..piece_end]);
                inp.pos += piece_end;
                if piece_end < stop {
                    inp.fill(2)?;
                    if inp.end - inp.pos < 2 {
                        value.push(" ");
                        inp.pos += 1;
                    }
                    continue;
                }
            }
            _ => inp.pos += stop,
        }
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
            _ => {
                inp.pos += 1;
                return Ok(());
            }
        }
    }
}

fn push_attr_piece(value: &mut AttrValue, piece: &[u8]) {
    let mut rest = piece;
    while let Some(i) = memchr3(b'\t', b'\n', b'\r', rest) {
        value.push(as_str(&rest[..i]));
        value.push(" ");
        rest = if rest[i] == b'\r' && rest.get(i + 1) == Some(&b'\n') { &rest[i + 2..] } else { &rest[i + 1..] };
    }
    if !rest.is_empty() {
        value.push(as_str(rest));
    }
}
