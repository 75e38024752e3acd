"""Shared text rules of the pure parsers: durations and the caps applied while streaming.

Mirrors ``rust/core/src/text.rs`` (docs/ENGINE.md, *Durations* and *Text capping*).
"""

from __future__ import annotations

import math
import re

TEXT_HEAD = 64 * 1024
TEXT_TAIL = 64 * 1024
ATTR_CAP = 64 * 1024
U64_MAX = 2**64 - 1

_PLAIN_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")


def duration_us_from_text(raw: str, junit: bool) -> int:
    """Seconds as text -> integer microseconds; 0 for anything not a plain decimal
    number, negative, non-finite or >= 1e9 s. ``junit`` applies the comma rules first."""
    s = raw.strip(" \t\n\r")
    if junit and "," in s:
        s = s.replace(",", "") if "." in s else s.replace(",", ".")
    if not _PLAIN_NUMBER.match(s):
        return 0
    return duration_us_from_float(float(s))


def duration_us_from_float(x: float) -> int:
    """A number of seconds -> microseconds (same bounds as ``duration_us_from_text``)."""
    if not math.isfinite(x) or x < 0.0 or x >= 1e9:
        return 0
    return math.floor(x * 1e6 + 0.5)


def _head(data: bytes, n: int) -> bytes:
    """The first ``n`` bytes of UTF-8 ``data``, cut back to a character boundary."""
    cut = n
    while 0 < cut < len(data) and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return data[:cut]


def _tail(data: bytes, n: int) -> bytes:
    """The last ``n`` bytes of UTF-8 ``data``, cut forward to a character boundary."""
    start = max(len(data) - n, 0)
    while start < len(data) and (data[start] & 0xC0) == 0x80:
        start += 1
    return data[start:]


class HeadTail:
    """Text kept while streaming: the first ``head_cap`` and last ``tail_cap`` bytes.

    Memory is bounded by about ``head_cap + 2 * tail_cap`` bytes of UTF-8.
    """

    __slots__ = ("head_cap", "tail_cap", "_head", "_tail", "_tail_len", "total")

    def __init__(self, head_cap: int, tail_cap: int) -> None:
        self.head_cap = head_cap
        self.tail_cap = tail_cap
        self._head = bytearray()
        self._tail: list[bytes] = []
        self._tail_len = 0
        self.total = 0

    @classmethod
    def for_text(cls) -> HeadTail:
        return cls(TEXT_HEAD, TEXT_TAIL)

    @classmethod
    def for_output(cls, max_output_bytes: int) -> HeadTail:
        return cls(0, max_output_bytes)

    def push(self, s: str) -> None:
        data = s.encode("utf-8", "surrogatepass")
        self.total += len(data)
        room = self.head_cap + self.tail_cap - len(self._head)
        if room > 0 and not self._tail:
            self._head += data[:room]
            data = data[room:]
            if not data:
                return
        self._tail.append(data)
        self._tail_len += len(data)
        if self._tail_len > 2 * max(self.tail_cap, 4096):
            joined = b"".join(self._tail)
            # A few extra bytes, so the final cut finds the same character boundary.
            keep = joined[max(len(joined) - self.tail_cap - 4, 0) :]
            self._tail = [keep]
            self._tail_len = len(keep)

    def finish(self) -> tuple[str, int]:
        """(kept text, bytes omitted); see ``HeadTail`` in ``text.rs``."""
        if self.total <= self.head_cap + self.tail_cap:
            return self._head.decode("utf-8", "surrogatepass"), 0
        everything_after_head = bytes(self._head) + b"".join(self._tail)
        head = _head(bytes(self._head), self.head_cap)
        tail = _tail(everything_after_head, self.tail_cap)
        omitted = self.total - len(head) - len(tail)
        if omitted == 0:
            return (head + tail).decode("utf-8", "surrogatepass"), 0
        if self.head_cap == 0:
            return tail.decode("utf-8", "surrogatepass"), omitted
        return (
            head.decode("utf-8", "surrogatepass")
            + f"\n... [{omitted} bytes omitted]\n"
            + tail.decode("utf-8", "surrogatepass"),
            omitted,
        )


PY_WHITESPACE = (
    " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
"""What Python's ``str.strip()`` / ``isspace()`` take for whitespace (pytest's
``longreprtext`` strips its text with it; the native twin's ``is_py_whitespace``)."""


def py_strip(s: str) -> str:
    """Python's ``str.strip()`` (kept explicit: the native twin strips the same set)."""
    return s.strip(PY_WHITESPACE)
