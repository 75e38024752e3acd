"""Streaming JUnit XML parser of the pure backend (docs/ENGINE.md, *JUnit XML*).

Mirrors ``rust/core/src/junit.rs``: the same records for every valid file, the same
error kind for every invalid one. XML well-formedness is expat's (``xml.parsers.expat``
fed in 256 KiB chunks, no DTD ever read); the byte order mark, the XML declaration and
the encoding are checked here first, exactly as the native ``junit/decode.rs`` does, and
the file is transcoded to UTF-8 before expat sees it. Memory stays bounded: expat gets
the file in chunks, character data arrives in pieces (``buffer_text``), the kept texts
are capped while they stream (``HeadTail``), and a guard between the decoder and expat
(``_Guard``) keeps expat from holding a huge start tag: it refuses one with more than
``MAX_ATTRIBUTES`` attributes and gives expat only the head of an over-long attribute
value, checking and counting the rest itself.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from typing import IO
from xml.parsers import expat

from pytest_mcp_server.engine.models import ReportError

from .records import SEVERITY, CollectionErrorRecord, Emit, TestRecord
from .text import ATTR_CAP, HeadTail, _head, duration_us_from_text

CHUNK = 256 * 1024
# Bytes at the start of the file in which the XML declaration must end.
DECL_WINDOW = 4096

# pytest's markers (``_pytest/junitxml.py``: ``append_collect_error``, ``append_failure``).
COLLECTION_FAILURE = "collection failure"
XPASS_MESSAGE = "xfail-marked test passes unexpectedly"

_ENCODINGS = {
    "utf-8": "utf8",
    "utf8": "utf8",
    "us-ascii": "ascii",
    "ascii": "ascii",
    "iso-8859-1": "latin1",
    "iso8859-1": "latin1",
    "iso_8859-1": "latin1",
    "latin-1": "latin1",
    "latin1": "latin1",
    "utf-16": "utf16",
    "utf16": "utf16",
}
# Markup declarations refused as ``forbidden`` after ``<!`` (DTDs are never read).
_DECLARATIONS = (b"DOCTYPE", b"ENTITY", b"ELEMENT", b"ATTLIST", b"NOTATION")
_RESULT_TAGS = frozenset(("failure", "error", "skipped"))


def parse_junit(f: IO[bytes], path: str, budgets: dict[str, int], emit: Emit) -> None:
    """Parse a JUnit XML document from binary file ``f`` (at byte 0), calling ``emit``
    with each ``TestRecord`` / ``CollectionErrorRecord`` in report order.

    Raises ``ReportError`` with kind ``malformed`` (not well-formed, bad bytes for the
    encoding, truncated), ``forbidden`` (``<!DOCTYPE`` or another markup declaration),
    ``not_a_report`` (root not ``testsuites``/``testsuite``), ``unsupported_encoding``
    or ``unreadable``; the position is ``line L, column C`` (expat's, in the text as
    UTF-8) or ``byte N``.
    """
    head = _read(f, path, DECL_WINDOW)
    mode, bom_len = _read_prologue(path, head, whole=len(head) < DECL_WINDOW)
    _Parser(f, path, budgets, emit, mode).run(head[bom_len:])


def _read(f: IO[bytes], path: str, n: int) -> bytes:
    try:
        return f.read(n)
    except OSError as exc:
        raise ReportError(
            "unreadable",
            path,
            f"cannot read the file ({exc.strerror or exc}); check that it is a readable regular file",
        ) from None


# --- encoding (mirrors junit/decode.rs) -------------------------------------------------


def _read_prologue(path: str, head: bytes, whole: bool) -> tuple[str, int]:
    """(mode, byte order mark length) from the first bytes; see ``read_prologue`` in
    ``junit/decode.rs``. Modes: ``utf8``, ``ascii``, ``latin1``, ``utf-16-le``,
    ``utf-16-be``."""
    if head.startswith(b"\xef\xbb\xbf"):
        bom_mode, bom_len = "utf8", 3
    elif head.startswith(b"\xff\xfe"):
        bom_mode, bom_len = "utf-16-le", 2
    elif head.startswith(b"\xfe\xff"):
        bom_mode, bom_len = "utf-16-be", 2
    else:
        bom_mode, bom_len = None, 0
    if bom_mode in ("utf-16-le", "utf-16-be"):
        text = _Utf16(bom_mode).valid_prefix(head[bom_len:])
    else:
        text = head[bom_len:]
    try:
        declared = _parse_xml_decl(text, whole)
    except _DeclError as exc:
        raise ReportError("malformed", path, exc.message, f"byte {bom_len + exc.offset}") from None
    family = None
    declared_name = ""  # read only when family is set, that is when there is a declaration
    if declared is not None:
        declared_name = declared.decode("ascii")
        family = _ENCODINGS.get(declared_name.lower())
        if family is None:
            raise ReportError(
                "unsupported_encoding",
                path,
                f"the XML declaration names the encoding {declared_name!r}; only UTF-8, US-ASCII, "
                "ISO-8859-1 and UTF-16 are supported: convert the file to UTF-8 (e.g. with iconv)",
                "byte 0",
            )

    def contradiction(bom: str) -> ReportError:
        return ReportError(
            "malformed",
            path,
            f"the byte order mark says {bom} but the XML declaration says {declared_name!r}; "
            "fix the declaration or re-encode the file",
            f"byte {bom_len}",
        )

    if bom_mode in ("utf-16-le", "utf-16-be"):
        if family not in (None, "utf16"):
            raise contradiction("UTF-16")
        return bom_mode, bom_len
    if family == "utf16":
        raise ReportError(
            "malformed",
            path,
            "the XML declaration says UTF-16 but the file has no UTF-16 byte order mark (it reads as ASCII); "
            "fix the declaration or re-encode the file",
            f"byte {bom_len}",
        )
    if bom_mode == "utf8" and family == "latin1":
        raise contradiction("UTF-8")
    return family if family in ("ascii", "latin1") else "utf8", bom_len


class _DeclError(Exception):
    def __init__(self, message: str, offset: int) -> None:
        self.message = message
        self.offset = offset


_BAD_DECL = (
    'the XML declaration is not well-formed (expected version="1.0", then optionally encoding="..." '
    'and standalone="yes|no"); fix the first line of the file'
)


def _parse_xml_decl(text: bytes, whole: bool) -> bytes | None:
    """The declared encoding name of the XML declaration at the start of ``text`` (None
    without a declaration or without ``encoding``), checked as expat's
    ``XmlParseXmlDecl`` checks it. Raises ``_DeclError``."""
    if not (text.startswith(b"<?xml") and len(text) > 5 and text[5:6] in (b" ", b"\t", b"\n", b"\r", b"?")):
        return None
    close = text.find(b"?>", 5)
    if close < 0:
        if whole:
            raise _DeclError(
                "the XML declaration '<?xml ...' is not closed by '?>'; the file is truncated or not XML", 0
            )
        raise _DeclError("the XML declaration '<?xml ...' is not closed within the first 4 KiB; shorten it", 0)
    decl = text[:close]
    pos = 5

    def at(i: int) -> int:
        # expat's toAscii: -1 past the end or for a non-ASCII byte.
        return decl[i] if i < len(decl) and decl[i] < 0x80 else -1

    def is_space(c: int) -> bool:
        return c in (0x20, 0x09, 0x0A, 0x0D)

    def next_attr() -> tuple[bytes, bytes] | None:
        nonlocal pos
        if pos == len(decl):
            return None
        if not is_space(at(pos)):
            raise _DeclError(_BAD_DECL, pos)
        while is_space(at(pos)):
            pos += 1
        if pos == len(decl):
            return None
        name_start = pos
        while True:
            c = at(pos)
            if c == -1:
                raise _DeclError(_BAD_DECL, pos)
            if c == 0x3D:  # '='
                name_end = pos
                break
            if is_space(c):
                name_end = pos
                while is_space(at(pos)):
                    pos += 1
                if at(pos) != 0x3D:
                    raise _DeclError(_BAD_DECL, pos)
                break
            pos += 1
        if name_end == name_start:
            raise _DeclError(_BAD_DECL, pos)
        pos += 1
        while is_space(at(pos)):
            pos += 1
        quote = at(pos)
        if quote not in (0x22, 0x27):
            raise _DeclError(_BAD_DECL, pos)
        pos += 1
        value_start = pos
        while True:
            c = at(pos)
            if c == quote:
                break
            if c == -1 or not (chr(c).isascii() and (chr(c).isalnum() or c in b"._-")):
                raise _DeclError(_BAD_DECL, pos)
            pos += 1
        value = decl[value_start:pos]
        pos += 1
        return decl[name_start:name_end], value

    attr = next_attr()
    if attr is None or attr[0] != b"version":
        raise _DeclError(_BAD_DECL, pos)
    attr = next_attr()
    encoding = None
    if attr is not None and attr[0] == b"encoding":
        if not (attr[1][:1].isalpha() and attr[1][:1].isascii()):
            raise _DeclError(_BAD_DECL, pos)
        encoding = attr[1]
        attr = next_attr()
    if attr is not None:
        if attr[0] != b"standalone" or attr[1] not in (b"yes", b"no"):
            raise _DeclError(_BAD_DECL, pos)
        while is_space(at(pos)):
            pos += 1
        if pos != len(decl):
            raise _DeclError(_BAD_DECL, pos)
    return encoding


class _DecodeError(Exception):
    """Bytes invalid for the encoding; ``valid`` is the UTF-8 of what came before."""

    def __init__(self, message: str, valid: bytes) -> None:
        self.message = message
        self.valid = valid


class _Utf16:
    """UTF-16 (byte order given, mark skipped) to UTF-8, chunk by chunk."""

    def __init__(self, codec: str) -> None:
        self.codec = codec
        self.carry = b""
        self.big = codec == "utf-16-be"

    def _high_surrogate_at(self, data: bytes, i: int) -> bool:
        unit = data[i] if self.big else data[i + 1]
        return 0xD8 <= unit <= 0xDB

    def decode(self, chunk: bytes, final: bool) -> bytes:
        data = self.carry + chunk
        cut = len(data) & ~1
        if not final and cut >= 2 and self._high_surrogate_at(data, cut - 2):
            cut -= 2  # keep a high surrogate with its low half
        self.carry = data[cut:]
        try:
            out = data[:cut].decode(self.codec).encode("utf-8")
        except UnicodeDecodeError as exc:
            valid = data[: exc.start].decode(self.codec).encode("utf-8")
            raise _DecodeError(
                f"invalid UTF-16 (unpaired surrogate) at code unit {exc.start // 2}; "
                "the file is corrupted or not UTF-16",
                valid,
            ) from None
        if final and self.carry:
            raise _DecodeError("the UTF-16 text ends in the middle of a character; the file is truncated", out)
        return out

    def valid_prefix(self, data: bytes) -> bytes:
        try:
            return self.decode(data, final=False)
        except _DecodeError as exc:
            return exc.valid


def _decoder(mode: str) -> Callable[[bytes, bool], bytes]:
    """A function (raw chunk, final) -> UTF-8 bytes for ``mode``; raises ``_DecodeError``."""
    if mode == "utf8":
        return lambda chunk, final: chunk
    if mode == "latin1":
        return lambda chunk, final: chunk.decode("latin-1").encode("utf-8")
    if mode == "ascii":

        def ascii_only(chunk: bytes, final: bool) -> bytes:
            if chunk.isascii():
                return chunk
            i = next(i for i, b in enumerate(chunk) if b >= 0x80)
            raise _DecodeError(
                f"byte 0x{chunk[i]:02X} is not US-ASCII, the encoding the XML declaration names; "
                'declare encoding="UTF-8" (or the real encoding)',
                chunk[:i],
            )

        return ascii_only
    return _Utf16(mode).decode


# --- the guard between the decoder and expat -------------------------------------------

# Bytes after the last markup start ('<' outside comments, CDATA sections and PIs, or the
# end of one of those) past which the guard reads the markup itself. Well above the
# tags and values of real reports, so normal files pass straight to expat.
GUARD_SPAN = 1024 * 1024
# The most attributes a start tag may have; one more is 'malformed' (docs/ENGINE.md,
# *JUnit XML*; the native MAX_ATTRIBUTES): JUnit writers put at most a dozen on an
# element, and the limit bounds the memory of the duplicate-attribute check.
MAX_ATTRIBUTES = 1024
# Decoded bytes of an over-long attribute value still given to expat: more than the cap
# (and the byte after it, which decides the character boundary), so the capped value
# expat's value gives is the full value's.
HEAD_KEEP = ATTR_CAP + 16

_SPACE = rb"[ \t\r\n]"
_NAME = rb"[^ \t\r\n/>=\"'<]"
_ELEMENT_NAME = re.compile(_NAME + rb"*")
_ATTR_START = re.compile(_SPACE + rb"+(" + _NAME + rb"+)" + _SPACE + rb"*=" + _SPACE + rb"*([\"'])")
_TAG_CLOSE = re.compile(_SPACE + rb"*/?>")
# What may still become an attribute start or the end of the tag with more input.
_TAG_PARTIAL = re.compile(_SPACE + rb"*(?:" + _NAME + rb"+" + _SPACE + rb"*(?:=" + _SPACE + rb"*)?|/)?\Z")
# Characters XML forbids in an attribute value (with '<'): C0 controls but tab, LF and
# CR; U+FFFE and U+FFFF.
_BAD_IN_VALUE = re.compile(rb"[<\x00-\x08\x0b\x0c\x0e-\x1f]|\xef\xbf[\xbe\xbf]")
_CHAR_REFERENCE = re.compile(rb"&#(?:([0-9]+)|x([0-9a-fA-F]+));")
_OPEN_REFERENCE = re.compile(rb"&(?:[a-z]{0,4}|#[0-9]*|#x[0-9a-fA-F]*)\Z")
# Named references and how many bytes each is longer than what it stands for.
_NAMED_REFERENCES = ((b"&lt;", 3), (b"&gt;", 3), (b"&amp;", 4), (b"&apos;", 5), (b"&quot;", 5))


def _char_reference_length(digits: bytes, base: int) -> int:
    """UTF-8 length of the character a reference names; 0 when XML does not allow it
    (expat's ``checkCharRefNumber``: NUL and C0 controls but tab/LF/CR, surrogates,
    U+FFFE, U+FFFF, beyond U+10FFFF)."""
    digits = digits.lstrip(b"0")
    if len(digits) > 8:
        return 0
    n = int(digits or b"0", base)
    if n > 0x10FFFF or 0xD800 <= n <= 0xDFFF or n in (0xFFFE, 0xFFFF) or (n < 0x20 and n not in (9, 10, 13)):
        return 0
    return 1 if n < 0x80 else 2 if n < 0x800 else 3 if n < 0x10000 else 4


def _complete_utf8_end(data: bytes, n: int) -> int:
    """``n``, or where an incomplete UTF-8 sequence at the end of ``data[:n]`` starts."""
    for k in range(1, 4):
        if n - k < 0:
            break
        b = data[n - k]
        if b < 0x80:
            return n
        if b >= 0xC0:
            need = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
            return n - k if need > k else n
    return n


def _too_many_attributes(name: str) -> str:
    return (
        f"the start tag <{name}> has more than {MAX_ATTRIBUTES} attributes (a JUnit writer puts at most a dozen on "
        "an element; the limit bounds the parser's memory); the report is corrupted or not JUnit XML, regenerate it"
    )


class _GuardError(Exception):
    """A well-formedness error the guard found ``offset`` bytes into the decoded text:
    ``what`` went wrong, or the whole ``message``."""

    def __init__(self, what: str, offset: int, message: str | None = None) -> None:
        self.what = what
        self.offset = offset
        self.message = message or (
            f"not well-formed XML: {what}; the report is corrupted or was cut off, regenerate it"
        )


class _Guard:
    """Sits between the decoder and expat so that pure memory stays bounded where expat
    would hold a whole token (docs/ENGINE.md, *Text capping*; the native lexer streams).

    Normally every chunk passes through unchanged, after a cheap scan (``bytes.find``)
    that follows comments, CDATA sections and PIs and remembers where the last markup
    start is. When more than ``GUARD_SPAN`` bytes follow it (a huge start tag or text),
    the guard reads that markup itself (compiled regular expressions over whole pieces)
    until the next '<':

    * a start tag with more than ``MAX_ATTRIBUTES`` attributes is refused before expat
      holds it;
    * an attribute value keeps its first ``HEAD_KEEP`` decoded bytes for expat and
      drops the rest, after checking the dropped bytes as expat would ('<', references,
      characters XML forbids, invalid UTF-8: any of them is ``malformed``, the kind
      expat gives inside a tag) and counting their decoded UTF-8 bytes (references
      decoded, CRLF one byte) in ``omitted``, keyed by the expat byte offset of the tag's
      '<' and the attribute name, so the message's omitted count is the full one.

    ``drops`` maps expat offsets back to offsets in the decoded text (for error
    positions). Memory: at most ``GUARD_SPAN`` plus a chunk of retained bytes.
    """

    def __init__(self, feed: Callable[[bytes, bool], None]) -> None:
        self.feed = feed
        self.mode = "normal"  # or "careful" (reading a large markup itself) or "off"
        self.pos = 0  # decoded-text offset of the end of what came in
        self.dropped = 0  # bytes dropped so far (expat offset = text offset - dropped)
        self.drops: list[tuple[int, int]] = []  # (expat offset, bytes dropped before it)
        self.omitted: dict[int, dict[str, int]] = {}
        # Normal mode: the terminator of the comment/CDATA/PI we are in, the undecided
        # end of the last chunk (already fed; scanned again), the last markup start and
        # the fed bytes from it on.
        self.special: bytes | None = None
        self.keep = b""
        self.anchor = 0
        self.retained = b""
        # Careful mode.
        self.window = b""
        self.wbase = 0  # text offset of window[0]
        self.fed_upto = 0  # text offset up to which expat has had (or been denied) the text
        self.state = ""
        self.tag_at = 0
        self.tag_name = ""
        self.attrs = 0
        self.quote = b""
        self.attr_name = b""
        self.head = 0
        self.dropping = False
        self.value_dropped = 0
        self.prev_cr = False
        self.out: list[bytes] = []

    def push(self, data: bytes, final: bool) -> None:
        """Take the next decoded chunk; expat gets what it should see (raises
        ``_GuardError``, after expat has had everything before the error)."""
        base = self.pos
        self.pos += len(data)
        if self.mode == "off":
            self.feed(data, final)
        elif self.mode == "careful":
            self.window = self.window + data if self.window else data
            self.careful(final)
        else:
            self.normal(data, base, final)

    def expat_to_text(self, index: int) -> int | None:
        """The decoded-text offset of expat byte ``index`` when bytes were dropped
        before it, else None."""
        before = None
        for at, dropped in self.drops:
            if at > index:
                break
            before = dropped
        return None if before is None else index + before

    # -- normal mode

    def normal(self, data: bytes, base: int, final: bool) -> None:
        buf = self.keep + data if self.keep else data
        bbase = base - len(self.keep)
        self.keep = b""
        i = 0
        n = len(buf)
        # The next '<!' and '<?' at or after i (-1: none up to the end); each search
        # runs again only once i has passed its last find, so a chunk is scanned once.
        bang = question = -2
        while i < n:
            if self.special is not None:
                j = buf.find(self.special, i)
                if j < 0:
                    self.keep = buf[max(i, n - len(self.special) + 1) :]
                    break
                i = j + len(self.special)
                self.special = None
                self.anchor = bbase + i
                continue
            if -1 != bang < i:
                bang = buf.find(b"<!", i)
            if -1 != question < i:
                question = buf.find(b"<?", i)
            j = bang if question < 0 or 0 <= bang < question else question
            if j < 0:
                lt = buf.rfind(b"<", i)
                if lt >= 0:
                    self.anchor = bbase + lt
                if buf.endswith(b"<"):
                    self.keep = b"<"
                break
            self.anchor = bbase + j
            if buf[j + 1] == 0x3F:  # '?'
                self.special, i = b"?>", j + 2
            elif buf.startswith(b"<!--", j):
                self.special, i = b"-->", j + 4
            elif buf.startswith(b"<![CDATA[", j):
                self.special, i = b"]]>", j + 9
            elif n - j < 9 and not final and (b"<!--".startswith(buf[j:]) or b"<![CDATA[".startswith(buf[j:])):
                self.keep = buf[j:]
                break
            else:
                # A declaration (refused by the parser) or broken markup (expat's error).
                self.mode = "off"
                self.feed(data, final)
                return
        end = base + len(data)
        if self.special is None and end - self.anchor > GUARD_SPAN:
            cut = max(0, self.anchor - base)
            self.window = (self.retained if self.anchor < base else b"") + data[cut:]
            self.wbase = min(self.anchor, base + cut)
            self.retained = b""
            self.keep = b""
            self.fed_upto = base
            if cut:
                self.out.append(data[:cut])
                self.fed_upto = base + cut
            self.mode = "careful"
            self.state = "lt" if self.window[:1] == b"<" else "content"
            self.careful(final)
            return
        if self.special is not None:
            self.retained = b""
        elif self.anchor >= base:
            self.retained = data[self.anchor - base :]
        else:
            self.retained += data
        self.feed(data, final)

    # -- careful mode

    def emit(self, a: int, b: int) -> None:
        """Give window[a:b] to expat (what it already had is skipped)."""
        a = max(a, self.fed_upto - self.wbase)
        if b > a:
            self.out.append(self.window[a:b])
            self.fed_upto = self.wbase + b

    def drop(self, a: int, b: int) -> None:
        if b > a:
            expat_at = self.wbase + a - self.dropped
            self.dropped += b - a
            if self.drops and self.drops[-1][0] == expat_at:
                self.drops[-1] = (expat_at, self.dropped)
            else:
                self.drops.append((expat_at, self.dropped))
            self.fed_upto = self.wbase + b

    def flush(self, final: bool) -> None:
        data = b"".join(self.out) if len(self.out) != 1 else self.out[0]
        self.out = []
        if data or final:
            self.feed(data, final)

    def fail(self, what: str, index: int, message: str | None = None) -> None:
        self.flush(False)
        raise _GuardError(what, self.wbase + index, message)

    def careful(self, final: bool) -> None:
        w = self.window
        p = 0
        n = len(w)
        while True:
            state = self.state
            if state == "content":
                j = w.find(b"<", p)
                if j < 0:
                    self.emit(p, n)
                    p = n
                    break
                # Back to normal mode from this '<' (expat never had it).
                self.emit(p, j)
                self.flush(False)
                self.mode = "normal"
                self.anchor = self.wbase + j
                self.window = b""
                self.normal(w[j:], self.wbase + j, final)
                return
            if state == "end":
                j = w.find(b">", p)
                if j < 0:
                    self.emit(p, n)
                    p = n
                    break
                self.emit(p, j + 1)
                p = j + 1
                self.state = "content"
            elif state == "lt":
                if n - p < 2:
                    break
                if w[p + 1] == 0x2F:  # '/'
                    self.state = "end"
                    continue
                m = _ELEMENT_NAME.match(w, p + 1)
                assert m is not None  # a starred pattern matches, if only the empty string
                if m.end() == n:
                    if final or n - p >= 65536:
                        self.mode = "off"  # a huge name: expat decides
                    break
                self.emit(p, m.end())
                self.tag_at = self.wbase + p - self.dropped
                self.tag_name = m.group().decode("utf-8", "replace")
                self.attrs = 0
                p = m.end()
                self.state = "tag"
            elif state == "tag":
                m = _ATTR_START.match(w, p)
                if m is not None:
                    self.attrs += 1
                    if self.attrs > MAX_ATTRIBUTES:
                        self.fail("too many attributes", p, _too_many_attributes(self.tag_name))
                    self.emit(p, m.end())
                    p = m.end()
                    self.state = "value"
                    self.attr_name = m.group(1)
                    self.quote = m.group(2)
                    self.head = 0
                    self.dropping = False
                    self.value_dropped = 0
                    self.prev_cr = False
                    continue
                m = _TAG_CLOSE.match(w, p)
                if m is not None:
                    self.emit(p, m.end())
                    p = m.end()
                    self.state = "content"
                    continue
                if not final and n - p < 65536 and _TAG_PARTIAL.match(w, p):
                    break
                # Not a tag as the guard reads it (or a huge run of spaces): expat decides.
                self.emit(p, n)
                p = n
                self.mode = "off"
                break
            else:  # value
                j = w.find(self.quote, p)
                closed = j >= 0
                end = j if closed else n
                k, decoded = self.value_piece(w, p, end, closed)
                if not self.dropping and self.head >= HEAD_KEEP and self.wbase + p >= self.fed_upto:
                    self.dropping = True
                if self.dropping:
                    self.drop(p, k)
                    self.value_dropped += decoded
                else:
                    self.emit(p, k)
                    self.head += decoded
                p = k
                if not closed:
                    break
                if self.value_dropped:
                    name = self.attr_name.decode("utf-8", "replace")
                    self.omitted.setdefault(self.tag_at, {})[name] = self.value_dropped
                self.emit(p, p + 1)
                p += 1
                self.state = "tag"
        # Keep what is undecided; expat has had what it may have.
        self.window = w[p:]
        self.wbase += p
        if self.mode == "off" or final:
            self.emit(0, len(self.window))
            self.window = b""
            if self.mode != "off":
                self.mode = "off"
        self.flush(final)

    def value_piece(self, w: bytes, a: int, end: int, closed: bool) -> tuple[int, int]:
        """Check w[a:end] of an attribute value as expat would; returns (k, decoded): the
        bytes up to k are complete (an unfinished reference or UTF-8 character at the end
        waits for more input) and make ``decoded`` bytes of the value."""
        k = end
        if not closed:
            amp = w.rfind(b"&", a, end)
            if amp >= 0 and w.find(b";", amp, end) < 0:
                if not _OPEN_REFERENCE.match(w[amp:end]):
                    self.fail("a '&' in an attribute value that is not a reference (write '&amp;')", amp)
                k = amp
            k = _complete_utf8_end(w, k) if k > a else k
        part = w[a:k]
        m = _BAD_IN_VALUE.search(part)
        if m is not None:
            what = (
                "'<' in an attribute value (write '&lt;')"
                if part[m.start()] == 0x3C
                else "a character XML does not allow"
            )
            self.fail(what, a + m.start())
        if not part.isascii():
            try:
                part.decode("utf-8")
            except UnicodeDecodeError as exc:
                self.fail("invalid UTF-8", a + exc.start)
        shrink = 0
        amps = part.count(b"&")
        if amps:
            named = 0
            for ref, longer in _NAMED_REFERENCES:
                c = part.count(ref)
                named += c
                shrink += c * longer
            chars = 0
            if b"&#" in part:
                for m in _CHAR_REFERENCE.finditer(part):
                    length = _char_reference_length(*((m.group(1), 10) if m.group(1) else (m.group(2), 16)))
                    if not length:
                        self.fail("a character reference to a character XML does not allow", a + m.start())
                    chars += 1
                    shrink += m.end() - m.start() - length
            if named + chars != amps:
                self.fail("a '&' in an attribute value that is not a reference (write '&amp;')", a + part.find(b"&"))
        if part:
            shrink += part.count(b"\r\n")
            if self.prev_cr and part[0] == 0x0A:
                shrink += 1
            self.prev_cr = part[-1] == 0x0D
        if closed and k < end:
            self.fail("an unfinished reference or UTF-8 character at the end of an attribute value", k)
        return k, len(part) - shrink


# --- records (mirrors junit.rs) ---------------------------------------------------------


def node_id(classname: str, name: str, file: str, pytest_suite: bool) -> str:
    """The pytest-style node id of a testcase (docs/ENGINE.md, *JUnit XML*, rules 1-3)."""
    path = file[2:] if file.startswith("./") else file
    if path.endswith(".py"):
        module = path[:-3].replace("/", ".").replace("\\", ".")
        if classname == module:
            return f"{path}::{name}"
        if classname.startswith(module + "."):
            return f"{path}::{classname[len(module) + 1 :].replace('.', '::')}::{name}"
    if pytest_suite and classname:
        segments = classname.split(".")
        modules = len(segments)
        while modules > 0 and segments[modules - 1][:1].isascii() and segments[modules - 1][:1].isupper():
            modules -= 1
        if modules > 0:
            classes = "".join(f"::{s}" for s in segments[modules:])
            return "/".join(segments[:modules]) + ".py" + classes + f"::{name}"
    return f"{classname}::{name}" if classname else name


def collection_error_path(classname: str, name: str, file: str, pytest_suite: bool) -> str:
    """The path of a collection error: the name by rule 2's module rule (pytest's suite,
    empty classname), the node id when there is a classname, else the name."""
    if classname:
        return node_id(classname, name, file, pytest_suite)
    if pytest_suite and name:
        return name.replace(".", "/") + ".py"
    return name


def _cap_attr(value: str) -> tuple[str, int]:
    """An attribute value cut to ``ATTR_CAP`` bytes of UTF-8 (at a character boundary)."""
    if len(value) * 4 <= ATTR_CAP:
        return value, 0
    data = value.encode("utf-8", "surrogatepass")
    if len(data) <= ATTR_CAP:
        return value, 0
    kept = _head(data, ATTR_CAP)
    return kept.decode("utf-8", "surrogatepass"), len(data) - len(kept)


def _attr(attrs: dict[str, str], key: str) -> str | None:
    value = attrs.get(key)
    return None if value is None else _cap_attr(value)[0]


def _parse_line(s: str | None) -> int | None:
    if not s or not (s.isascii() and s.isdigit()):
        return None
    n = int(s)
    return n if n < 2**64 else None


_PHASE_MESSAGE_PREFIXES = ('failed on setup with "', 'failed on teardown with "')


def _unwrap_phase_message(message: str) -> str:
    """pytest writes a setup/teardown error's message as ``failed on setup with "<reason>"``
    (``_pytest/junitxml.py``, ``append_error``); the reason alone is the message, so that
    errors of different causes do not share one group (twin of ``unwrap_phase_message``)."""
    for prefix in _PHASE_MESSAGE_PREFIXES:
        if message.startswith(prefix):
            rest = message[len(prefix) :]
            return rest[:-1] if rest.endswith('"') else rest
    return message


class _Chosen:
    """The result element that decides a testcase so far (the first of the worst kind)."""

    __slots__ = ("outcome", "phase", "collection", "exception", "message", "message_omitted")

    def __init__(self, tag: str, attrs: dict[str, str], dropped: int = 0) -> None:
        message = attrs.get("message")
        message_omitted = 0
        if message is not None:
            message, message_omitted = _cap_attr(message)
            # Bytes of an over-long message the guard kept from expat.
            message_omitted += dropped
        kind = _attr(attrs, "type")
        self.collection = False
        self.phase = None
        if tag == "failure":
            self.outcome, self.phase = "failed", "call"
        elif tag == "error":
            self.outcome = "error"
            m = message or ""
            if m.startswith("failed on setup"):
                self.phase = "setup"
            elif m.startswith("failed on teardown"):
                self.phase = "teardown"
            self.collection = message == COLLECTION_FAILURE
        elif message == XPASS_MESSAGE:
            self.outcome = "xpassed"
        elif kind == "pytest.xfail":
            self.outcome = "xfailed"
        else:
            self.outcome = "skipped"
        details = self.outcome in ("failed", "error")
        self.exception = (kind or None) if details else None
        self.message = _unwrap_phase_message(message) if details and message is not None else None
        self.message_omitted = message_omitted if details else 0


# The property name the server's pytest plugin writes for each subtest report.
SUBTEST_PROPERTY = "pytest_mcp_server.subtest"
# Labels kept per case: beyond this many failed subtests, the later ones get "".
_MAX_SUBTEST_LABELS = 10_000
_PARENT_MARKER = re.compile(r"contains [0-9]+ failed subtests?")


def is_parent_marker(message: str) -> bool:
    """pytest's message for a parent whose subtests failed (``_pytest/subtests.py``,
    ``pytest_report_teststatus``): ``contains N failed subtest`` + ``s`` when N > 1."""
    return _PARENT_MARKER.fullmatch(message) is not None


def _parent_message(n: int) -> str:
    return f"contains {n} failed subtest{'s' if n > 1 else ''}"


class _CaseSubtests:
    """The subtests of the open testcase (docs/ENGINE.md, *Subtests*; twin of
    ``rust/core/src/junit/subtests.rs``): ``<failure>`` children seen, failed subtests
    emitted, passed subtests and failed labels named by the plugin's properties."""

    __slots__ = ("failures", "failed", "passed", "labels")

    def __init__(self) -> None:
        self.failures = 0
        self.failed = 0
        self.passed = 0
        self.labels: deque[str] = deque()

    def read_property(self, attrs: dict[str, str]) -> None:
        """One ``<property>`` of the case: only the plugin's subtest property counts."""
        if _attr(attrs, "name") != SUBTEST_PROPERTY:
            return
        value = _attr(attrs, "value") or ""
        outcome, _, label = value.partition(" ")
        if outcome == "passed":
            self.passed += 1
        elif outcome == "failed":
            self.labels.append(label if len(self.labels) < _MAX_SUBTEST_LABELS else "")


# A line longer than this is never a captured-output section header.
_MAX_HEADER = 256
_SECTION_HEADERS = {" Captured Log ": "log", " Captured Out ": "out", " Captured Err ": "err"}


def _header_stream(line: str) -> str | None:
    """The stream a header line names (``-``s, `` Captured Log|Out|Err ``, ``-``s)."""
    if not line.startswith("-") or not line.endswith("-"):
        return None
    return _SECTION_HEADERS.get(line.strip("-"))


class _Sections:
    """pytest's captured-output sections of one ``system-out``/``system-err`` element at a
    time (docs/ENGINE.md, *Logs*; twin of ``rust/core/src/junit/sections.rs``): text goes to
    the stream its section names (``Captured Log`` to ``log``), text before any header to
    the element's own stream; once a header was seen, the line break before a header or
    the element's end is pytest's and is dropped. A candidate header line is held only up
    to ``_MAX_HEADER`` characters' worth of bytes."""

    __slots__ = ("streams", "target", "in_section", "line_start", "holding", "candidate", "newline_held")

    def __init__(self, stdout: HeadTail, stderr: HeadTail, log: HeadTail) -> None:
        self.streams = {"out": stdout, "err": stderr, "log": log}
        self.begin("out")

    def begin(self, own: str) -> None:
        """An element whose own stream is ``own`` (``out``/``err``) starts."""
        self.target = self.streams[own]
        self.in_section = False
        self.line_start = True
        self.holding = False
        self.candidate = ""
        self.newline_held = False

    def push(self, s: str) -> None:
        """Text of the element, in document order."""
        if not self.holding and "\n-" not in s and not (self.line_start and s.startswith("-")):
            self._plain(s)  # no header can start in s: same result as line by line
            return
        lines = s.split("\n")
        last = len(lines) - 1
        for i, piece in enumerate(lines):
            self._piece(piece, i < last)

    def end(self) -> None:
        """The element ends."""
        if self.holding:
            self.holding = False
            held, self.candidate = self.candidate, ""
            if _header_stream(held) is None:
                self._text(held)
        self.newline_held = False  # pytest's last line break

    def _plain(self, s: str) -> None:
        if not s:
            return
        if not self.in_section:
            self.target.push(s)
            self.line_start = s.endswith("\n")
            return
        body = s[:-1] if s.endswith("\n") else s
        if body:
            self._text(body)
        if len(body) < len(s):
            self._line_end()
        else:
            self.line_start = False

    def _piece(self, piece: str, nl: bool) -> None:
        if not piece and not nl:
            return
        if not self.holding and self.line_start and piece.startswith("-"):
            self.holding = True
            self.candidate = ""
        if self.holding:
            if len(self.candidate.encode("utf-8")) + len(piece.encode("utf-8")) <= _MAX_HEADER:
                self.candidate += piece
                if not nl:
                    self.line_start = False
                    return
                self.holding = False
                line, self.candidate = self.candidate, ""
                stream = _header_stream(line)
                if stream is not None:
                    self.newline_held = False  # the line break before a header is pytest's
                    self.target = self.streams[stream]
                    self.in_section = True
                    self.line_start = True
                else:
                    self._text(line)
                    self._line_end()
                return
            # too long for a header: what was held is ordinary text
            self.holding = False
            held, self.candidate = self.candidate, ""
            self._text(held)
        self._text(piece)
        if nl:
            self._line_end()
        else:
            self.line_start = False

    def _text(self, s: str) -> None:
        if not s:
            return
        if self.newline_held:
            self.newline_held = False
            self.target.push("\n")
        self.target.push(s)

    def _line_end(self) -> None:
        """A line break: held back inside a section (it may be pytest's), else written."""
        if self.newline_held:
            self.target.push("\n")
        if self.in_section:
            self.newline_held = True
        else:
            self.newline_held = False
            self.target.push("\n")
        self.line_start = True


class _Case:
    """An open ``<testcase>``."""

    __slots__ = (
        "depth",
        "pytest_suite",
        "classname",
        "name",
        "file",
        "line",
        "duration_us",
        "chosen",
        "flaky_result",
        "capture",
        "capture_depth",
        "text",
        "stdout",
        "stderr",
        "subtests",
        "sections",
        "log",
    )

    def __init__(self, attrs: dict[str, str], depth: int, pytest_suite: bool, max_output_bytes: int) -> None:
        self.depth = depth
        self.pytest_suite = pytest_suite
        self.classname = _attr(attrs, "classname") or ""
        self.name = _attr(attrs, "name") or ""
        self.file = _attr(attrs, "file")
        self.line = _attr(attrs, "line")
        time = _attr(attrs, "time")
        self.duration_us = 0 if time is None else duration_us_from_text(time, True)
        self.chosen: _Chosen | None = None
        self.flaky_result = False
        self.capture: HeadTail | _Sections | None = None
        self.capture_depth = 0
        self.text = HeadTail(0, 0)
        self.stdout = HeadTail.for_output(max_output_bytes)
        self.stderr = HeadTail.for_output(max_output_bytes)
        self.subtests = _CaseSubtests()
        self.sections: _Sections | None = None  # made at the first system-out/system-err
        self.log: HeadTail | None = None


class _Stop(Exception):
    """Carries a ``ReportError`` out of an expat handler."""

    def __init__(self, error: ReportError) -> None:
        self.error = error


class _Parser:
    def __init__(self, f: IO[bytes], path: str, budgets: dict[str, int], emit: Emit, mode: str) -> None:
        self.f = f
        self.path = path
        self.emit = emit
        self.max_output_bytes = budgets["max_output_bytes"]
        self.max_log_bytes = budgets["max_log_bytes"]
        self.decode = _decoder(mode)
        self.mode = mode
        self.guard = _Guard(self.feed)
        self.depth = 0
        self.root_seen = False
        self.suites: list[tuple[int, bool]] = []
        self.case: _Case | None = None
        self.held: TestRecord | None = None
        self.held_passed = False
        self.held_failed = False
        # The chunk being fed to expat and the bytes before it (to look at where
        # expat stopped: a declaration keyword starts at most a few bytes back).
        self.current = b""
        self.current_base = 0
        self.tail = b""
        self.fed = 0
        self.ahead = b""
        # Where the prolog token after the last complete one starts.
        self.prolog_end = 0

        p = expat.ParserCreate("UTF-8")
        p.buffer_text = True
        p.buffer_size = 64 * 1024
        p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        p.StartElementHandler = self.start
        p.EndElementHandler = self.end
        p.CharacterDataHandler = self.characters
        p.StartDoctypeDeclHandler = self.doctype
        # Sees each prolog token, so '<!DOCTYPE' is refused even when what follows is
        # broken (expat would report that first); dropped at the root element.
        p.DefaultHandler = self.prolog_token
        self.p = p

    # -- feeding

    def run(self, first: bytes) -> None:
        pending = first
        read_size = CHUNK
        while True:
            # Read one chunk ahead to know when the current one is the last.
            self.ahead = _read(self.f, self.path, read_size)
            final = not self.ahead
            try:
                data = self.decode(pending, final)
            except _DecodeError as exc:
                self.push(exc.valid, False)
                raise ReportError(
                    "malformed",
                    self.path,
                    f"{exc.message}; regenerate the report or fix its encoding",
                    f"byte {self.guard.pos} of the text decoded to UTF-8",
                ) from None
            if self.guard.pos == 0 and data[1:2] == b"\x00":
                # expat would take '<' NUL for UTF-16 without a byte order mark and
                # switch encodings; the rules say UTF-8 here, where NUL is not allowed.
                raise ReportError(
                    "malformed",
                    self.path,
                    "control character U+0000, which XML does not allow (UTF-16 needs a byte order mark); "
                    "regenerate the report or fix its encoding",
                    "byte 1",
                )
            if self.guard.pos == 0 and self.mode in ("utf-16-le", "utf-16-be") and data.startswith(b"\xef\xbb\xbf"):
                # A U+FEFF after the UTF-16 byte order mark is a character before the
                # root (native: text before the root element); in UTF-8 expat would skip
                # it as a byte order mark.
                raise ReportError(
                    "malformed",
                    self.path,
                    "not well-formed XML: text before the root element (a second byte order mark, U+FEFF); "
                    "the report is corrupted, regenerate it",
                    "byte 0 of the text decoded to UTF-8",
                )
            chunk_start = self.fed
            self.push(data, final)
            if final:
                break
            pending = self.ahead
            # expat 2.5 rescans an unfinished token from its start at every call, so a
            # huge token (a long comment) fed in fixed chunks costs quadratic time; while
            # no event happens, read ever larger chunks. Not while the guard reads the
            # markup itself: expat gets little of it, and memory stays bounded.
            if self.guard.mode == "careful":
                read_size = CHUNK
            elif self.p.CurrentByteIndex < chunk_start:
                read_size = min(read_size * 2, 64 * 1024 * 1024)
            else:
                read_size = CHUNK
        self.flush()

    def push(self, data: bytes, final: bool) -> None:
        """Decoded text to expat, through the guard."""
        try:
            self.guard.push(data, final)
        except _GuardError as exc:
            raise ReportError(
                "malformed", self.path, exc.message, f"byte {exc.offset} of the text decoded to UTF-8"
            ) from None

    def feed(self, data: bytes, final: bool) -> None:
        self.tail = self.current[-64:] if len(self.current) >= 64 else (self.tail + self.current)[-64:]
        self.current = data
        self.current_base = self.fed
        self.fed += len(data)
        try:
            self.p.Parse(data, final)
        except _Stop as stop:
            raise stop.error from None
        except expat.ExpatError as exc:
            raise self.expat_error(exc) from None

    def expat_error(self, exc: expat.ExpatError) -> ReportError:
        where = f"line {exc.lineno}, column {exc.offset + 1}"
        if self.guard.drops:
            # Expat's lines and columns do not count the bytes the guard dropped.
            at = self.guard.expat_to_text(self.p.ErrorByteIndex)
            if at is not None:
                where = f"byte {at} of the text decoded to UTF-8"
        window = self.tail + self.current
        window_base = self.current_base - len(self.tail)
        at = self.p.ErrorByteIndex - window_base
        # A declaration keyword is 'forbidden' only where markup can start; anywhere
        # else (an attribute value, inside a tag, after a broken '<!') the earlier
        # error makes the file 'malformed' (ENGINE.md). Where markup starts: before
        # the root, right after the last complete prolog token (expat may only fail a
        # few bytes into '<!DOCTYPE...'); at the '<' expat stops at for junk after the
        # root or a file that ends inside markup; else just before where expat stopped,
        # after a '<!' that opened markup (when it stops at the '<' itself, that '<'
        # was not allowed there).
        if not self.root_seen:
            start = self.prolog_end - window_base
        elif exc.code in (
            expat.errors.codes[expat.errors.XML_ERROR_JUNK_AFTER_DOC_ELEMENT],
            expat.errors.codes[expat.errors.XML_ERROR_UNCLOSED_TOKEN],
        ):
            start = at
        else:
            start = at - 2
        if 0 <= start < len(window) and window[start : start + 2] == b"<!":
            ahead = self.peek(window, start, 10)
            for keyword in _DECLARATIONS:
                if ahead[2:].startswith(keyword):
                    return self.forbidden(keyword.decode(), where)
        message = expat.ErrorString(exc.code)
        return ReportError(
            "malformed",
            self.path,
            f"not well-formed XML: {message}; the report is corrupted or was cut off, regenerate it",
            where,
        )

    def peek(self, window: bytes, start: int, n: int) -> bytes:
        """``n`` bytes of the decoded text at ``window`` offset ``start``, reading on if
        needed (the parse is over: the decoder's state no longer matters)."""
        while len(window) - start < n:
            raw = self.ahead or _read(self.f, self.path, 64)
            self.ahead = b""
            if not raw:
                break
            try:
                window += self.decode(raw, False)
            except _DecodeError as exc:
                window += exc.valid
                break
        return window[start : start + n]

    def forbidden(self, keyword: str, where: str) -> ReportError:
        return ReportError(
            "forbidden",
            self.path,
            f"the file contains '<!{keyword}': DTDs and entity declarations are refused (they enable XXE and "
            "billion-laughs attacks); JUnit reports never need one, remove it",
            where,
        )

    def position(self) -> str:
        return f"line {self.p.CurrentLineNumber}, column {self.p.CurrentColumnNumber + 1}"

    # -- expat handlers

    def doctype(self, *args: object) -> None:
        raise _Stop(self.forbidden("DOCTYPE", self.position()))

    def prolog_token(self, data: str) -> None:
        # Raw bytes (no conversion from UTF-8), so the token ends this many bytes on.
        self.prolog_end = self.p.CurrentByteIndex + len(data.encode("utf-8"))
        if data.startswith("<!"):
            for keyword in _DECLARATIONS:
                if data[2:].startswith(keyword.decode()):
                    raise _Stop(self.forbidden(keyword.decode(), self.position()))

    def start(self, name: str, attrs: dict[str, str]) -> None:
        if len(attrs) > MAX_ATTRIBUTES:
            raise _Stop(ReportError("malformed", self.path, _too_many_attributes(name), self.position()))
        dropped = self.guard.omitted.pop(self.p.CurrentByteIndex, None) if self.guard.omitted else None
        self.depth += 1
        depth = self.depth
        if not self.root_seen:
            self.root_seen = True
            self.p.DefaultHandler = None
            if name not in ("testsuites", "testsuite"):
                raise _Stop(
                    ReportError(
                        "not_a_report",
                        self.path,
                        f"the root element is <{name}>, not <testsuites> or <testsuite>: this XML file is not a "
                        "JUnit report (NUnit, TRX and xUnit.net files need converting to JUnit XML first)",
                        self.position(),
                    )
                )
        case = self.case
        if case is None:
            if name == "testsuite":
                self.suites.append((depth, _attr(attrs, "name") == "pytest"))
            elif name == "testcase":
                pytest_suite = bool(self.suites) and self.suites[-1][1]
                self.case = _Case(attrs, depth, pytest_suite, self.max_output_bytes)
            return
        if name == "property" and depth == case.depth + 2 and case.pytest_suite:
            case.subtests.read_property(attrs)
            return
        if depth != case.depth + 1:
            return
        if name == "failure" and case.pytest_suite:
            self.failure_starts(case)
        if name in _RESULT_TAGS:
            chosen = _Chosen(name, attrs, dropped.get("message", 0) if dropped else 0)
            if case.chosen is None or SEVERITY[chosen.outcome] > SEVERITY[case.chosen.outcome]:
                if chosen.outcome in ("failed", "error"):
                    case.text = HeadTail.for_text()
                    case.capture = case.text
                    case.capture_depth = depth
                case.chosen = chosen
        elif name in ("flakyFailure", "flakyError"):
            case.flaky_result = True
        elif name == "system-out" or name == "system-err":
            if case.sections is None:
                case.log = HeadTail.for_output(self.max_log_bytes)
                case.sections = _Sections(case.stdout, case.stderr, case.log)
            case.sections.begin("out" if name == "system-out" else "err")
            case.capture = case.sections
            case.capture_depth = depth

    def end(self, name: str) -> None:
        depth = self.depth
        self.depth -= 1
        case = self.case
        if case is not None:
            if depth == case.depth:
                self.case = None
                self.close_case(case)
            elif case.capture is not None and depth == case.capture_depth:
                if case.capture is case.sections:
                    case.sections.end()
                case.capture = None
        elif name == "testsuite" and self.suites and self.suites[-1][0] == depth:
            self.suites.pop()

    def characters(self, data: str) -> None:
        case = self.case
        if case is not None and case.capture is not None:
            case.capture.push(data)

    # -- records

    def close_case(self, case: _Case) -> None:
        file = case.file or ""
        chosen = case.chosen
        if chosen is not None and chosen.collection:
            text, omitted = case.text.finish()
            error_record = CollectionErrorRecord(
                path=collection_error_path(case.classname, case.name, file, case.pytest_suite),
                exception=chosen.exception,
                # pytest's "collection failure" is a marker, not a message: the builder
                # takes the message from the text (its `E ` line).
                message=None,
                text=text,
                text_bytes_omitted=omitted,
            )
            self.flush()
            self.emit(error_record)
            return
        chosen, passed_with_failed_subtests = self.close_subtests(case, chosen)
        outcome = "passed" if chosen is None else chosen.outcome
        problem = outcome in ("failed", "error")
        record = TestRecord(
            node_id=node_id(case.classname, case.name, file, case.pytest_suite),
            outcome=outcome,
            duration_us=case.duration_us,
            flaky=case.flaky_result and not problem,
            passed_with_failed_subtests=passed_with_failed_subtests,
        )
        if problem:
            assert chosen is not None  # only a result element makes a test fail or error
            text, text_omitted = case.text.finish()
            out, out_omitted = case.stdout.finish()
            err, err_omitted = case.stderr.finish()
            log, log_omitted = case.log.finish() if case.log is not None else ("", 0)
            location = file[2:] if file.startswith("./") else file
            record.phase = chosen.phase
            record.exception = chosen.exception
            record.message = chosen.message
            record.text = text
            record.path = location or None
            record.line = _parse_line(case.line)
            record.stdout = out or None
            record.stderr = err or None
            record.log = log or None
            record.text_bytes_omitted = text_omitted + chosen.message_omitted
            record.output_bytes_omitted = out_omitted + err_omitted + log_omitted
        self.push_test(record)

    # -- subtests (docs/ENGINE.md, *Subtests*; twin of rust/core/src/junit/subtests.rs)

    def failure_starts(self, case: _Case) -> None:
        """A ``<failure>`` starts: when the case's current result is a failure, that one
        was a subtest (pytest writes the parent's own failure last); emit it."""
        case.subtests.failures += 1
        if case.chosen is not None and case.chosen.outcome == "failed":
            previous = case.chosen
            case.chosen = None
            self.emit_failed_subtest(case, previous, case.text)
            case.text = HeadTail(0, 0)

    def emit_failed_subtest(self, case: _Case, chosen: _Chosen, text: HeadTail) -> None:
        subtests = case.subtests
        label = subtests.labels.popleft() if subtests.labels else ""
        subtests.failed += 1
        body, omitted = text.finish()
        record = TestRecord(
            node_id=node_id(case.classname, case.name, case.file or "", case.pytest_suite),
            outcome="failed",
            phase=chosen.phase,
            exception=chosen.exception,
            message=chosen.message,
            text=body,
            text_bytes_omitted=omitted + chosen.message_omitted,
            subtest=label,
        )
        self.flush()
        self.emit(record)

    def close_subtests(self, case: _Case, chosen: _Chosen | None) -> tuple[_Chosen | None, bool]:
        """At the case's end: emit its last failed subtest (if the last failure is one)
        and its passed subtests; give back the parent's result (a failure ``contains N
        failed subtests`` when pytest counted it passed; then ``case.text`` is emptied)
        and whether pytest counted it passed."""
        subtests = case.subtests
        pytest_passed = (
            case.pytest_suite
            and chosen is not None
            and chosen.outcome == "failed"
            and (subtests.failures >= 2 or bool(subtests.labels))
            and not (chosen.message is not None and is_parent_marker(chosen.message))
        )
        if pytest_passed:
            assert chosen is not None
            self.emit_failed_subtest(case, chosen, case.text)
            case.text = HeadTail.for_text()
            chosen = _Chosen("failure", {"message": _parent_message(subtests.failed)})
        if subtests.passed:
            self.flush()
            parent = node_id(case.classname, case.name, case.file or "", case.pytest_suite)
            for _ in range(subtests.passed):
                self.emit(TestRecord(node_id=parent, outcome="passed", subtest=""))
        return chosen, pytest_passed

    def push_test(self, record: TestRecord) -> None:
        """Merge a retry (same node id as the held test) or emit the held test."""
        passed = record.outcome == "passed"
        failed = record.outcome in ("failed", "error")
        held = self.held
        if held is not None and held.node_id == record.node_id:
            self.held_passed |= passed
            self.held_failed |= failed
            record.duration_us = min(held.duration_us + record.duration_us, 2**64 - 1)
            record.flaky = held.flaky or record.flaky or (self.held_passed and self.held_failed)
            self.held = record
            return
        self.flush()
        self.held, self.held_passed, self.held_failed = record, passed, failed

    def flush(self) -> None:
        if self.held is not None:
            self.emit(self.held)
            self.held = None
