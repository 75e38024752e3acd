"""The byte level of the pure pytest-json-report reader, twin of the concerns of
``rust/core/src/pytest_json/lexer.rs``.

ijson's yajl2_c backend plays the lexer: it tokenizes the document into events, which
``pytest_json/__init__.py`` reads. What the native lexer does beyond yajl lives here:
the nesting limit (``MAX_DEPTH``), the read sizes, and ``_CheckedReader`` between the
file and yajl, which refuses what yajl wrongly accepts (a lone surrogate escape, vertical
tab or form feed) and cuts the middle out of a string too long to be kept whole,
validating and counting the dropped bytes as the native lexer does (``_decoded_size``,
``_boundary``), so memory stays constant as in lexer.rs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Generator, Iterator
from typing import IO

from ..text import ATTR_CAP, TEXT_HEAD, TEXT_TAIL

# Deepest nesting of arrays/objects accepted; the root object is level 1 (lexer.rs).
MAX_DEPTH = 1024

# yajl re-scans a token that spans reads from its start at every read, so a token of n
# bytes read in chunks of c costs O(n^2 / c). Strings never span reads (the reader holds
# an open string back, and cuts a long one), but a long number can: outside strings the
# reader doubles its read size while the bytes hold no '"', up to _MAX_READ_SIZE.
_READ_SIZE = 1024 * 1024
_MAX_READ_SIZE = 32 * 1024 * 1024

# A \u escape of a UTF-16 surrogate; whether it is an escape depends on the backslashes
# before it, which the reader counts.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LOW_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][c-fC-F][0-9a-fA-F]{2}")
_HIGH_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")

# Cutting long strings (see _CheckedReader). One decoded byte comes from at most
# _RAW_PER_BYTE raw bytes (``\u0041``), so keeping _RAW_PER_BYTE * n raw bytes (plus a
# margin for the cut moving back to a boundary) keeps at least n decoded bytes.
_RAW_PER_BYTE = 6
_CUT_MARGIN = 64
# The raw head kept of a cut string: enough for TEXT_HEAD (longrepr) and ATTR_CAP (node
# ids, crash path and message, root: all keep a head) plus the byte after it.
_HEAD_RAW = _RAW_PER_BYTE * (max(TEXT_HEAD, ATTR_CAP) + 1) + _CUT_MARGIN
# A string is cut once its raw content exceeds head + tail + this (shorter ones go whole).
_CUT_SLACK = 256 * 1024
# The dropped middle is validated and counted in pieces of about this many raw bytes.
_PIECE = 1024 * 1024


def _tail_raw(max_output_bytes: int) -> int:
    """Raw bytes kept at the end of a cut string: enough for TEXT_TAIL (longrepr) and
    ``max_output_bytes`` (the tail of stdout/stderr)."""
    return _RAW_PER_BYTE * max(TEXT_TAIL, max_output_bytes) + _CUT_MARGIN


class _CutString(str):
    """A string value whose middle the reader dropped: the text is its head and tail
    joined, ``dropped`` the UTF-8 bytes of the middle (decoded, not raw JSON bytes)."""

    dropped: int


def _with_dropped(value: str, dropped: int) -> _CutString:
    cut = _CutString(value)
    cut.dropped = dropped
    return cut


def _escaped_quotes(data: bytes) -> int:
    """How many '"' in ``data`` follow an odd run of backslashes (escaped quotes), the
    runs counted within ``data``. ``count(k backslashes + '"')`` is the number of quotes
    after at least k backslashes; their alternating sum counts the odd runs."""
    total, sign, pattern = 0, 1, b'\\"'
    while True:
        n = data.count(pattern)
        if not n:
            return total
        total += sign * n
        sign = -sign
        pattern = b"\\" + pattern
        if len(pattern) > 5:  # runs of 4 or more: count them one by one instead
            runs = _QUOTE_AFTER_BACKSLASHES.finditer(data)
            return sum(1 for m in runs if (m.end() - m.start()) % 2 == 0)


# A whole run of backslashes and the quote after it; the lookbehind starts a match only
# at the start of a run, so a long run not followed by a quote costs its length once.
_QUOTE_AFTER_BACKSLASHES = re.compile(rb'(?<!\\)\\+"')


def _is_escaped(data: bytes, q: int, lead: int) -> bool:
    """Whether the byte at ``q`` (a '"', or the '\\' of a ``\\u`` escape) follows an odd
    run of backslashes, i.e. is escaped; ``lead`` backslashes precede ``data`` (counted
    only when the run reaches its start)."""
    r = _run_start(data, 0, q - 1) if q and data[q - 1] == 0x5C else q
    run = q - r + (lead if r == 0 else 0)
    return run % 2 == 1


def _run_start(data: bytes | bytearray, lo: int, e: int) -> int:
    """Start of the run of backslashes that ends at ``e`` (a backslash), not before ``lo``."""
    r = e
    for _ in range(16):
        if r == lo or data[r - 1] != 0x5C:
            return r
        r -= 1
    # A long run: back a block at a time while the block is all backslashes (no copy).
    while r - lo >= 4096 and data.count(b"\\", r - 4096, r) == 4096:
        r -= 4096
    start = max(lo, r - 4096)
    return start + len(bytes(data[start:r]).rstrip(b"\\"))


def _boundary(data: bytes | bytearray, lo: int, i: int) -> int:
    """A place at or before ``i`` (``lo < i < len(data)``) where the raw JSON string
    content ``data[lo:]`` may be split: not inside a UTF-8 character, an escape or an
    escaped surrogate pair; ``lo`` must be such a place. At most 21 bytes before ``i``.

    For valid content both sides are valid and decode to the whole; for invalid content
    one side is invalid. The start of a run of backslashes is a place (the byte before
    is no backslash, so it ends a character or an escape), and inside a run the
    backslashes pair up from its start.
    """
    for _ in range(3):
        if i > lo and 0x80 <= data[i] < 0xC0:  # a UTF-8 continuation byte
            i -= 1
    b = data.rfind(b"\\", max(lo, i - 12), i)
    if b < 0:  # no escape (nor escaped pair: 12 bytes) reaches i
        return i
    # b ends its run (the last backslash before i).
    if (b - _run_start(data, lo, b)) % 2 == 1:  # an even run: escaped backslashes
        return b + 1
    if b - 1 >= lo and data[b - 1] == 0x5C:  # an odd run: the last one starts an escape
        return b
    # A lone backslash starts an escape: keep it with a high surrogate escape before it.
    if b - 6 >= lo and _HIGH_SURROGATE_ESCAPE.match(data, b - 6):
        if (b - 6 - _run_start(data, lo, b - 6)) % 2 == 0:
            return b - 6
    return b


def _decoded_size(raw: bytes) -> tuple[int, tuple[int, str] | None]:
    """(UTF-8 bytes that the raw JSON string content ``raw`` decodes to, None), or
    (0, (index in ``raw`` near the error, what)) when ``raw`` is not valid content:
    invalid UTF-8, a raw control character, an invalid escape, a lone surrogate
    escape; the native lexer refuses the same (lexer.rs, ``string``)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return 0, (exc.start, "invalid UTF-8 in a string")
    try:
        value, end = _scanstring(text + '"', 0, True)
    except json.JSONDecodeError as exc:
        return 0, (exc.pos, f"{exc.msg.removesuffix(' at')} in a string")
    if end != len(text) + 1:  # pragma: no cover - the reader splits between quotes
        return 0, (end, "an unescaped '\"' inside a string")
    if value.isascii():
        return len(value), None
    try:
        return len(value.encode("utf-8")), None
    except UnicodeEncodeError as exc:
        return 0, (exc.start, "lone surrogate escape (not a Unicode character)")


# typeshed leaves this undocumented json.decoder name out; it is the C scanner when built.
_scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


class _CheckedReader:
    """A binary reader over ``f`` for yajl, in two stages.

    1. Checks: it hands on the bytes up to the first thing yajl would wrongly accept (a
       lone surrogate escape, a vertical tab or form feed: never valid JSON, inside or
       outside strings), then ends. ``violation`` says what and where.
    2. Long strings: it tracks, from the quotes and the backslashes before them, where
       strings are, and holds an open string back until it ends. A string whose raw
       content grows beyond ``_HEAD_RAW + _tail_raw(max_output_bytes) + _CUT_SLACK``
       bytes is cut: its head (``_HEAD_RAW`` raw bytes) is handed on at once, the rest
       goes through a window of which only the last ``_tail_raw`` raw bytes are handed
       on with the closing quote. Every dropped byte is validated as the native lexer
       does (``_decoded_size``; an error ends the input with a ``violation``) and its
       decoded UTF-8 size is counted. The read that hands on the tail returns it alone
       (up to the closing quote) and sets ``last_cut`` to the count, so the next ijson
       event, produced from that read alone, is the cut string (``_Fields``);
       any other read clears ``last_cut``. The cuts fall between characters and escapes
       (``_boundary``), so yajl sees valid JSON exactly when the file is.

    A leading UTF-8 byte order mark is dropped (the sniffer accepts one). Memory: about
    one read (``_READ_SIZE``; up to ``_MAX_READ_SIZE`` outside strings) plus one open or
    cut string's kept part (about 1 MB with the default budgets; ``max_output_bytes``
    beyond 64 KiB raises it to ~6x that). ``handed_on`` is the file offset reached.
    """

    _HOLD = 11

    def __init__(self, f: IO[bytes], max_output_bytes: int = 0) -> None:
        self._f = f
        self._pending = b""
        self._at_start = True
        self._eof = False
        self._backslashes = 0  # backslashes ending the bytes checked so far
        self._paired_low = -1  # offset of a low surrogate escape already paired
        self._checked = 0  # file offset of the end of the bytes checked
        self.handed_on = 0  # file offset of the end of the bytes handed on
        self.violation: tuple[int, str] | None = None
        self.last_cut: int | None = None
        self._read_size = _READ_SIZE
        self._in_string = False
        self._tail_raw = _tail_raw(max_output_bytes)
        self._cut_above = _HEAD_RAW + self._tail_raw + _CUT_SLACK
        self._unread = b""
        self._segments = self._split()

    def read(self, n: int = -1) -> bytes:
        """The next bytes for yajl (b"" at the end). ``n`` is ignored except for 0."""
        if n == 0:
            return b""
        self.last_cut = None
        if self._unread:
            out, self._unread = self._unread, b""
            return out
        for out, handed_on, last_cut in self._segments:
            self.handed_on, self.last_cut = handed_on, last_cut
            if out:
                return out
        return b""

    def unread(self, data: bytes) -> None:
        """Hand ``data`` (the end of the last read) on again at the next read."""
        self._unread = data

    # -- stage 2: strings ------------------------------------------------------------

    def _split(self) -> Iterator[tuple[bytes, int, int | None]]:
        """The checked bytes as (bytes to hand on, file offset of their end, the dropped
        count when they are a cut string's tail up to its closing quote, else None)."""
        held = b""  # the open string's content so far (from its first byte), held back
        carry = None  # bytes after a cut string's closing quote, to go through again
        while True:
            if carry is not None:
                chunk, carry = carry, None
            else:
                chunk = self._checked_chunk()
                if not chunk:
                    if held:
                        yield held, self._checked, None
                    return
            data = held + chunk if held else chunk
            end = self._checked  # the file offset of the end of data
            # Quotes not escaped switch strings on and off (valid JSON has no backslash
            # outside strings; a file that does is refused by yajl before any cut).
            flips = data.count(b'"')
            if flips:
                flips -= _escaped_quotes(data)
                if flips % 2:
                    self._in_string = not self._in_string
            if not self._in_string:
                held = b""
                yield data, end, None
                continue
            if flips:  # the last quote not escaped opens the string
                q = len(data)
                while True:
                    q = data.rfind(b'"', 0, q)
                    if not _is_escaped(data, q, 0):
                        break
                start = q + 1
            else:  # the string goes on from the start of data
                start = 0
            if len(data) - start <= self._cut_above:
                held = data[start:]
                if start:
                    yield data[:start], end - len(held), None
                continue
            held = b""
            head = _boundary(data, start, start + _HEAD_RAW)
            yield data[:head], end - (len(data) - head), None
            carry = yield from self._cut(bytearray(data[head:]), end - (len(data) - head))
            if carry is None:
                return

    def _cut(self, window: bytearray, offset: int) -> Generator[tuple[bytes, int, int | None], None, bytes | None]:
        """Read on through the string being cut: ``window`` holds its raw content after
        the head (starting at a boundary), at file offset ``offset``. Yields its tail
        (with the dropped count and the closing quote), and returns the bytes after the
        quote, or None at the end of the input (or at an invalid dropped byte)."""
        dropped = 0

        def drop(upto: int) -> bool:
            nonlocal dropped, offset
            p = _boundary(window, 0, upto)
            if p == 0:
                return True
            size, error = _decoded_size(bytes(window[:p]))
            if error is not None:
                self.violation = (offset + error[0], error[1])
                return False
            dropped += size
            del window[:p]
            offset += p
            return True

        while True:
            while len(window) > self._tail_raw + _PIECE:
                if not drop(_PIECE):
                    return None
            chunk = self._checked_chunk()
            if not chunk:  # the input ends inside the string: yajl will say so
                if len(window) > self._tail_raw and not drop(len(window) - self._tail_raw):
                    return None
                yield bytes(window), self._checked, None
                return None
            lead = len(window) - len(window.rstrip(b"\\")) if window.endswith(b"\\") else 0
            quotes = chunk.count(b'"')
            if quotes and lead % 2:
                quotes -= _escaped_quotes(b"\\" + chunk)
            elif quotes:
                quotes -= _escaped_quotes(chunk)
            if not quotes:
                window += chunk
                continue
            q = chunk.find(b'"')
            while _is_escaped(chunk, q, lead):
                q = chunk.find(b'"', q + 1)
            window += chunk[:q]
            if len(window) > self._tail_raw and not drop(len(window) - self._tail_raw):
                return None
            self._in_string = False
            rest = chunk[q + 1 :]
            yield bytes(window) + b'"', self._checked - len(rest), dropped
            return rest

    # -- stage 1: checks -------------------------------------------------------------

    def _checked_chunk(self) -> bytes:
        """The next bytes of the file up to the first violation (b"" at the end)."""
        if self.violation is not None:
            return b""
        while True:
            data = self._pending
            if not self._eof:
                chunk = self._f.read(self._read_size)
                self._eof = not chunk
                data += chunk
                if self._in_string or b'"' in chunk:
                    self._read_size = _READ_SIZE
                else:
                    self._read_size = min(2 * self._read_size, _MAX_READ_SIZE)
            if self._at_start:
                if len(data) < 3 and not self._eof:
                    self._pending = data
                    continue
                self._at_start = False
                if data.startswith(b"\xef\xbb\xbf"):
                    data = data[3:]
                    self._checked = 3
            limit = len(data) if self._eof else len(data) - self._HOLD
            if limit > 0 or self._eof:
                break
            self._pending = data
        cut = self._first_violation(data, limit)
        if cut is None:
            out, self._pending = data[:limit], data[limit:]
        else:
            out, self._pending = data[:cut], b""
        stripped = out.rstrip(b"\\")
        trailing = len(out) - len(stripped)
        self._backslashes = self._backslashes + trailing if not stripped else trailing
        self._checked += len(out)
        return out

    def _first_violation(self, data: bytes, limit: int) -> int | None:
        """Index in ``data`` of the first violation starting before ``limit``, or None."""
        # Two byte searches: much faster than a character-class regex.
        found = [i for i in (data.find(b"\x0b", 0, limit), data.find(b"\x0c", 0, limit)) if i >= 0]
        bad = min(found) if found else None
        end = limit if bad is None else bad
        for m in _SURROGATE_ESCAPE.finditer(data):
            p = m.start()
            if p >= end:
                break
            offset = self._checked + p
            if offset == self._paired_low:
                continue
            if _is_escaped(data, p, self._backslashes):  # an escaped backslash, then a plain "u"
                continue
            unit = int(data[p + 2 : p + 6], 16)
            if unit < 0xDC00 and _LOW_SURROGATE_ESCAPE.match(data, p + 6):
                self._paired_low = offset + 6
                continue
            self.violation = (offset, f"lone surrogate escape \\u{unit:04x} (not a Unicode character)")
            return p
        if bad is not None:
            self.violation = (
                self._checked + end,
                f"byte 0x{data[end]:02x} (not JSON whitespace, and not allowed raw in a string)",
            )
            return end
        return None
