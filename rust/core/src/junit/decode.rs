//! The encoding of a JUnit XML file: byte order mark, XML declaration, and the small
//! streaming adapters that turn ISO-8859-1 and UTF-16 into UTF-8 (docs/ENGINE.md,
//! *JUnit XML*, "Encoding"). Mirrored by `pure/junit/decode.py`.

use std::io::{self, Read};

use crate::error::{ErrorKind, ReportError};

/// Bytes at the start of the file in which the XML declaration must end.
pub const DECL_WINDOW: usize = 4096;

/// How the bytes after the byte order mark are decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Utf8,
    /// UTF-8 restricted to ASCII: any byte >= 0x80 is malformed.
    Ascii,
    Latin1,
    Utf16Le,
    Utf16Be,
}

impl Mode {
    pub fn is_utf8_on_disk(self) -> bool {
        matches!(self, Mode::Utf8 | Mode::Ascii)
    }
}

/// What the first bytes say: the decoding, the byte order mark's length (raw bytes to
/// skip) and where, in the decoded text after the mark, the markup after the XML
/// declaration starts (0 without a declaration).
#[derive(Debug)]
pub struct Prologue {
    pub mode: Mode,
    pub bom_len: usize,
    pub decl_end: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    Utf8,
    Ascii,
    Latin1,
    Utf16,
}

/// Read the byte order mark and XML declaration from `head` (the first
/// [`DECL_WINDOW`] raw bytes, or the whole file if shorter; `whole` says which).
///
/// Errors: `unsupported_encoding` for a declared encoding outside UTF-8, US-ASCII,
/// ISO-8859-1 and UTF-16; `malformed` for a declaration that expat would reject, one not
/// closed within the window, or a declaration contradicting the byte order mark.
pub fn read_prologue(path: &str, head: &[u8], whole: bool) -> Result<Prologue, ReportError> {
    let (bom_mode, bom_len) = if head.starts_with(b"\xef\xbb\xbf") {
        (Some(Mode::Utf8), 3)
    } else if head.starts_with(b"\xff\xfe") {
        (Some(Mode::Utf16Le), 2)
    } else if head.starts_with(b"\xfe\xff") {
        (Some(Mode::Utf16Be), 2)
    } else {
        (None, 0)
    };
    let decoded;
    let text: &[u8] = match bom_mode {
        Some(m @ (Mode::Utf16Le | Mode::Utf16Be)) => {
            decoded = utf16_valid_prefix(&head[bom_len..], m == Mode::Utf16Le);
            &decoded
        }
        _ => &head[bom_len..],
    };
    let malformed = |msg: String, at: usize| {
        ReportError::new(ErrorKind::Malformed, path, msg).at(format!("byte {}", bom_len + at))
    };
    let (decl_end, declared) = match parse_xml_decl(text, whole) {
        Ok(None) => (0, None),
        Ok(Some((end, enc))) => (end, enc),
        Err((msg, at)) => return Err(malformed(msg, at)),
    };
    let family = match declared {
        None => None,
        Some(name) => match encoding_family(name) {
            Some(f) => Some(f),
            None => {
                return Err(ReportError::new(
                    ErrorKind::UnsupportedEncoding,
                    path,
                    format!(
                        "the XML declaration names the encoding {:?}; only UTF-8, US-ASCII, ISO-8859-1 and \
                         UTF-16 are supported: convert the file to UTF-8 (e.g. with iconv)",
                        String::from_utf8_lossy(name)
                    ),
                )
                .at("byte 0"))
            }
        },
    };
    let contradiction = |declared: &[u8], bom: &str| {
        malformed(
            format!(
                "the byte order mark says {bom} but the XML declaration says {:?}; fix the declaration or \
                 re-encode the file",
                String::from_utf8_lossy(declared)
            ),
            0,
        )
    };
    let mode = match (bom_mode, family) {
        (Some(m @ (Mode::Utf16Le | Mode::Utf16Be)), None | Some(Family::Utf16)) => m,
        (Some(Mode::Utf16Le | Mode::Utf16Be), Some(_)) => return Err(contradiction(declared.unwrap(), "UTF-16")),
        (_, Some(Family::Utf16)) => {
            return Err(malformed(
                "the XML declaration says UTF-16 but the file has no UTF-16 byte order mark (it reads as \
                 ASCII); fix the declaration or re-encode the file"
                    .to_string(),
                0,
            ))
        }
        (Some(_), Some(Family::Latin1)) => return Err(contradiction(declared.unwrap(), "UTF-8")),
        (_, Some(Family::Ascii)) => Mode::Ascii,
        (_, Some(Family::Latin1)) => Mode::Latin1,
        (_, None | Some(Family::Utf8)) => Mode::Utf8,
    };
    Ok(Prologue {
        mode,
        bom_len,
        decl_end,
    })
}

/// Accepted encoding names, compared case-insensitively.
fn encoding_family(name: &[u8]) -> Option<Family> {
    let lower = name.to_ascii_lowercase();
    Some(match lower.as_slice() {
        b"utf-8" | b"utf8" => Family::Utf8,
        b"us-ascii" | b"ascii" => Family::Ascii,
        b"iso-8859-1" | b"iso8859-1" | b"iso_8859-1" | b"latin-1" | b"latin1" => Family::Latin1,
        b"utf-16" | b"utf16" => Family::Utf16,
        _ => return None,
    })
}

fn is_xml_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// The XML declaration at the start of `text`, checked as expat's `XmlParseXmlDecl`
/// checks it (xmltok.c): `version` first (required), then optional `encoding` (a
/// letter, then `[A-Za-z0-9._-]`), then optional `standalone` (`yes`/`no`); values are
/// `[A-Za-z0-9._-]*` in either quote; whitespace around `=` allowed.
///
/// `Ok(None)`: no declaration. `Ok(Some((end, encoding)))`: `end` is the offset after
/// `?>`. `Err((message, offset))`.
// Allowed: the result's shape is the one documented just above; an alias would hide it.
#[allow(clippy::type_complexity)]
pub fn parse_xml_decl(
    text: &[u8],
    whole: bool,
) -> Result<Option<(usize, Option<&[u8]>)>, (String, usize)> {
    if !(text.starts_with(b"<?xml") && text.len() > 5 && (is_xml_space(text[5]) || text[5] == b'?'))
    {
        return Ok(None);
    }
    let Some(close) = memchr::memmem::find(&text[5..], b"?>").map(|i| i + 5) else {
        let msg = if whole {
            "the XML declaration '<?xml ...' is not closed by '?>'; the file is truncated or not XML"
        } else {
            "the XML declaration '<?xml ...' is not closed within the first 4 KiB; shorten it"
        };
        return Err((msg.to_string(), 0));
    };
    let bad = |at: usize| {
        (
            "the XML declaration is not well-formed (expected version=\"1.0\", then optionally encoding=\"...\" \
             and standalone=\"yes|no\"); fix the first line of the file"
                .to_string(),
            at,
        )
    };
    let decl = &text[..close];
    let mut p = Pseudo { s: decl, pos: 5 };
    let mut encoding = None;
    let Some((name, value)) = p.next_attr().map_err(bad)? else {
        return Err(bad(p.pos));
    };
    if name != b"version" {
        return Err(bad(p.pos));
    }
    let _ = value;
    let mut attr = p.next_attr().map_err(bad)?;
    if let Some((b"encoding", value)) = attr {
        if !value.first().is_some_and(|c| c.is_ascii_alphabetic()) {
            return Err(bad(p.pos));
        }
        encoding = Some(value);
        attr = p.next_attr().map_err(bad)?;
    }
    if let Some((name, value)) = attr {
        if name != b"standalone" || !(value == b"yes" || value == b"no") {
            return Err(bad(p.pos));
        }
        while p.pos < decl.len() && is_xml_space(decl[p.pos]) {
            p.pos += 1;
        }
        if p.pos != decl.len() {
            return Err(bad(p.pos));
        }
    }
    Ok(Some((close + 2, encoding)))
}

/// expat's `parsePseudoAttribute` over the inside of an XML declaration.
struct Pseudo<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> Pseudo<'a> {
    fn at(&self, i: usize) -> Option<u8> {
        self.s.get(i).copied().filter(|b| b.is_ascii())
    }

    /// `Ok(None)` at the end; `Err(offset)` when not well-formed.
    // Allowed: (name, value) slices of the input, read in one place; an alias adds nothing.
    #[allow(clippy::type_complexity)]
    fn next_attr(&mut self) -> Result<Option<(&'a [u8], &'a [u8])>, usize> {
        let s = self.s;
        if self.pos == s.len() {
            return Ok(None);
        }
        if !self.at(self.pos).is_some_and(is_xml_space) {
            return Err(self.pos);
        }
        while self.at(self.pos).is_some_and(is_xml_space) {
            self.pos += 1;
        }
        if self.pos == s.len() {
            return Ok(None);
        }
        let name_start = self.pos;
        let name_end;
        loop {
            match self.at(self.pos) {
                None => return Err(self.pos),
                Some(b'=') => {
                    name_end = self.pos;
                    break;
                }
                Some(c) if is_xml_space(c) => {
                    name_end = self.pos;
                    while self.at(self.pos).is_some_and(is_xml_space) {
                        self.pos += 1;
                    }
                    if self.at(self.pos) != Some(b'=') {
                        return Err(self.pos);
                    }
                    break;
                }
                Some(_) => self.pos += 1,
            }
        }
        if name_end == name_start {
            return Err(self.pos);
        }
        self.pos += 1; // '='
        while self.at(self.pos).is_some_and(is_xml_space) {
            self.pos += 1;
        }
        let quote = match self.at(self.pos) {
            Some(q @ (b'"' | b'\'')) => q,
            _ => return Err(self.pos),
        };
        self.pos += 1;
        let value_start = self.pos;
        loop {
            match self.at(self.pos) {
                Some(c) if c == quote => break,
                Some(c) if c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_') => {
                    self.pos += 1
                }
                _ => return Err(self.pos),
            }
        }
        let value = &s[value_start..self.pos];
        self.pos += 1;
        Ok(Some((&s[name_start..name_end], value)))
    }
}

/// The UTF-8 encoding of the longest valid prefix of UTF-16 `raw` (used only to read
/// the declaration; the full file goes through [`Utf16ToUtf8`]).
fn utf16_valid_prefix(raw: &[u8], little: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut dec = Utf16State::new(little);
    let _ = dec.decode(raw, &mut out);
    out
}

/// A decoding error found by an adapter: `decoded_offset` is where it stops in the
/// UTF-8 output.
#[derive(Debug)]
pub struct DecodeError {
    pub message: String,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DecodeError {}

fn decode_error(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, DecodeError { message })
}

/// Raw bytes per read of an adapter.
const RAW_CHUNK: usize = 64 * 1024;

/// Passes ASCII through; a byte >= 0x80 ends the output there and the next read fails.
pub struct AsciiOnly<R> {
    inner: R,
    raw_offset: u64,
    failed: Option<String>,
}

impl<R: Read> AsciiOnly<R> {
    pub fn new(inner: R, raw_offset: u64) -> Self {
        AsciiOnly {
            inner,
            raw_offset,
            failed: None,
        }
    }
}

impl<R: Read> Read for AsciiOnly<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if let Some(msg) = self.failed.take() {
            return Err(decode_error(msg));
        }
        let n = self.inner.read(out)?;
        if let Some(i) = out[..n].iter().position(|b| !b.is_ascii()) {
            self.failed = Some(format!(
                "byte 0x{:02X} at byte {} is not US-ASCII, the encoding the XML declaration names; \
                 declare encoding=\"UTF-8\" (or the real encoding)",
                out[i],
                self.raw_offset + i as u64
            ));
            if i == 0 {
                return Err(decode_error(self.failed.take().unwrap()));
            }
            return Ok(i);
        }
        self.raw_offset += n as u64;
        Ok(n)
    }
}

/// ISO-8859-1 to UTF-8 (every byte is a character).
pub struct Latin1ToUtf8<R> {
    inner: R,
    raw: Vec<u8>,
    pending: Vec<u8>,
    pending_pos: usize,
}

impl<R: Read> Latin1ToUtf8<R> {
    pub fn new(inner: R) -> Self {
        Latin1ToUtf8 {
            inner,
            raw: vec![0; RAW_CHUNK],
            pending: Vec::with_capacity(2 * RAW_CHUNK),
            pending_pos: 0,
        }
    }
}

impl<R: Read> Read for Latin1ToUtf8<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pending_pos == self.pending.len() {
            let n = self.inner.read(&mut self.raw)?;
            if n == 0 {
                return Ok(0);
            }
            self.pending.clear();
            self.pending_pos = 0;
            for &b in &self.raw[..n] {
                if b < 0x80 {
                    self.pending.push(b);
                } else {
                    self.pending.push(0xC0 | (b >> 6));
                    self.pending.push(0x80 | (b & 0x3F));
                }
            }
        }
        let n = out.len().min(self.pending.len() - self.pending_pos);
        out[..n].copy_from_slice(&self.pending[self.pending_pos..self.pending_pos + n]);
        self.pending_pos += n;
        Ok(n)
    }
}

/// UTF-16 code units to UTF-8, keeping an incomplete unit or surrogate pair between
/// calls.
struct Utf16State {
    little: bool,
    /// An odd byte left from the previous chunk.
    odd: Option<u8>,
    /// A high surrogate waiting for its low half.
    high: Option<u16>,
    /// UTF-16 units decoded so far (for error positions).
    units: u64,
}

impl Utf16State {
    fn new(little: bool) -> Self {
        Utf16State {
            little,
            odd: None,
            high: None,
            units: 0,
        }
    }

    /// Decode `raw` into `out`; on an invalid unit, stop before it and return the error.
    fn decode(&mut self, raw: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        let mut i = 0;
        let mut unit_bytes = [0u8; 2];
        loop {
            let unit = if let Some(b) = self.odd {
                if i >= raw.len() {
                    return Ok(());
                }
                self.odd = None;
                unit_bytes = [b, raw[i]];
                i += 1;
                self.unit(unit_bytes)
            } else if i + 1 < raw.len() {
                unit_bytes.copy_from_slice(&raw[i..i + 2]);
                i += 2;
                self.unit(unit_bytes)
            } else {
                if i < raw.len() {
                    self.odd = Some(raw[i]);
                }
                return Ok(());
            };
            self.units += 1;
            let cp = match (self.high, unit) {
                (None, 0xD800..=0xDBFF) => {
                    self.high = Some(unit);
                    continue;
                }
                (None, 0xDC00..=0xDFFF) | (Some(_), 0x0000..=0xDBFF | 0xE000..=0xFFFF) => {
                    return Err(format!(
                        "invalid UTF-16 (unpaired surrogate) at code unit {}; the file is corrupted or not UTF-16",
                        self.units - 1
                    ));
                }
                (Some(h), low) => {
                    self.high = None;
                    0x10000 + (((h as u32) - 0xD800) << 10) + ((low as u32) - 0xDC00)
                }
                (None, u) => u as u32,
            };
            let c = char::from_u32(cp).expect("a decoded UTF-16 scalar value");
            let mut tmp = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
        }
    }

    fn unit(&self, b: [u8; 2]) -> u16 {
        if self.little {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        }
    }

    fn finish(&self) -> Result<(), String> {
        if self.odd.is_some() || self.high.is_some() {
            return Err(
                "the UTF-16 text ends in the middle of a character; the file is truncated"
                    .to_string(),
            );
        }
        Ok(())
    }
}

/// UTF-16 (byte order given; the mark already skipped) to UTF-8.
pub struct Utf16ToUtf8<R> {
    inner: R,
    state: Utf16State,
    raw: Vec<u8>,
    pending: Vec<u8>,
    pending_pos: usize,
    failed: Option<String>,
    done: bool,
}

impl<R: Read> Utf16ToUtf8<R> {
    pub fn new(inner: R, little: bool) -> Self {
        Utf16ToUtf8 {
            inner,
            state: Utf16State::new(little),
            raw: vec![0; RAW_CHUNK],
            pending: Vec::with_capacity(2 * RAW_CHUNK),
            pending_pos: 0,
            failed: None,
            done: false,
        }
    }
}

impl<R: Read> Read for Utf16ToUtf8<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pending_pos == self.pending.len() {
            if let Some(msg) = self.failed.take() {
                return Err(decode_error(msg));
            }
            if self.done {
                return Ok(0);
            }
            let n = self.inner.read(&mut self.raw)?;
            self.pending.clear();
            self.pending_pos = 0;
            if n == 0 {
                self.done = true;
                if let Err(msg) = self.state.finish() {
                    return Err(decode_error(msg));
                }
                return Ok(0);
            }
            if let Err(msg) = self.state.decode(&self.raw[..n], &mut self.pending) {
                self.failed = Some(msg);
            }
        }
        let n = out.len().min(self.pending.len() - self.pending_pos);
        out[..n].copy_from_slice(&self.pending[self.pending_pos..self.pending_pos + n]);
        self.pending_pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(head: &[u8]) -> Result<Mode, ErrorKind> {
        read_prologue("t.xml", head, true)
            .map(|p| p.mode)
            .map_err(|e| e.kind)
    }

    #[test]
    fn declarations_are_checked_like_expat() {
        assert_eq!(kind(b"<?xml version=\"1.0\"?><a/>"), Ok(Mode::Utf8));
        assert_eq!(
            kind(b"<?xml version = '' encoding = 'Latin-1' standalone='no' ?><a/>"),
            Ok(Mode::Latin1)
        );
        assert_eq!(
            kind(b"<?xml version=\"1.0\" encoding=\"us-ascii\"?><a/>"),
            Ok(Mode::Ascii)
        );
        assert_eq!(
            kind(b"<?xml encoding=\"utf-8\"?><a/>"),
            Err(ErrorKind::Malformed)
        );
        assert_eq!(
            kind(b"<?xml version=\"1.0\" standalone=\"yes\" encoding=\"utf-8\"?>"),
            Err(ErrorKind::Malformed)
        );
        assert_eq!(
            kind(b"<?xml version=\"1.0\"encoding=\"utf-8\"?>"),
            Err(ErrorKind::Malformed)
        );
        assert_eq!(kind(b"<?xml version=\"1 0\"?>"), Err(ErrorKind::Malformed));
        assert_eq!(
            kind(b"<?xml version=\"1.0\" encoding=\"1x\"?>"),
            Err(ErrorKind::Malformed)
        );
        assert_eq!(
            kind(b"<?xml version=\"1.0\" encoding=\"windows-1252\"?>"),
            Err(ErrorKind::UnsupportedEncoding)
        );
        assert_eq!(kind(b"<?xml?>"), Err(ErrorKind::Malformed));
        assert_eq!(kind(b"<?xml version=\"1.0\""), Err(ErrorKind::Malformed));
        assert_eq!(kind(b"<?xml-stylesheet href=\"x\"?><a/>"), Ok(Mode::Utf8));
        assert_eq!(
            kind(b"<?xml version=\"1.0\" encoding=\"utf-16\"?><a/>"),
            Err(ErrorKind::Malformed)
        );
        assert_eq!(
            kind(b"\xef\xbb\xbf<?xml version=\"1.0\" encoding=\"latin1\"?><a/>"),
            Err(ErrorKind::Malformed)
        );
    }

    #[test]
    fn utf16_with_bom_is_read_and_transcoded() {
        let text = "<?xml version=\"1.0\" encoding=\"UTF-16\"?><a>é𝄞</a>";
        let mut raw = vec![0xFF, 0xFE];
        for u in text.encode_utf16() {
            raw.extend_from_slice(&u.to_le_bytes());
        }
        assert_eq!(kind(&raw), Ok(Mode::Utf16Le));
        let mut out = String::new();
        Utf16ToUtf8::new(&raw[2..], true)
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(out, text);
        // A lone low surrogate: the valid prefix comes out, then the error.
        let mut bad = raw[2..6].to_vec();
        bad.extend_from_slice(&0xDC00u16.to_le_bytes());
        let mut out = Vec::new();
        let err = Utf16ToUtf8::new(&bad[..], true)
            .read_to_end(&mut out)
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert_eq!(out, b"<?");
    }

    #[test]
    fn latin1_and_ascii_adapters() {
        let mut out = String::new();
        Latin1ToUtf8::new(&b"caf\xe9"[..])
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(out, "café");
        let mut out = Vec::new();
        let err = AsciiOnly::new(&b"ab\xc3\xa9"[..], 0)
            .read_to_end(&mut out)
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert_eq!(out, b"ab");
    }
}
