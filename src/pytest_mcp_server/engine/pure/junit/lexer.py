"""The byte-level XML concerns of the pure backend, twin of ``rust/core/src/junit/lexer.rs``.

expat (``xml.parsers.expat``) is the pure backend's lexer: well-formedness, characters,
names (so ``junit/names.rs``, expat's name tables for the native lexer, has no pure
twin) and references are its. What the native lexer does beyond that lives here: the
read chunk size, the markup declarations refused as ``forbidden``, the attribute limit
(``MAX_ATTRIBUTES``), the attribute value cap (``_cap_attr``/``_attr``, as
``AttrValue``/``Attrs`` in lexer.rs), and the guard between the decoder and expat
(``_Guard``) that keeps expat from holding a huge start tag whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..text import ATTR_CAP, _head

# Bytes read from the file at a time (lexer.rs ``CHUNK``).
CHUNK = 256 * 1024
# Markup declarations refused as ``forbidden`` after ``<!`` (DTDs are never read).
_DECLARATIONS = (b"DOCTYPE", b"ENTITY", b"ELEMENT", b"ATTLIST", b"NOTATION")


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
