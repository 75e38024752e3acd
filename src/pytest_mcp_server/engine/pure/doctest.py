"""Doctest failures read as failures (docs/ENGINE.md, *Doctests*): the twin of
``rust/core/src/doctest.rs``, rule for rule.

pytest writes a failed doctest (``DoctestItem.repr_failure``) as the docstring's
numbered listing up to the failing example, then either doctest's ``Expected:``/``Got:``
blocks (``DocTestFailure``) or ``UNEXPECTED EXCEPTION: repr`` and the native traceback
of the exception the example raised (``UnexpectedException``), then a location line
``path:N: DocTestFailure``. ``doctest_view`` turns that into what any failure gives:
the example and what went wrong, an exception and a one-line message.
"""

from __future__ import annotations

from dataclasses import dataclass

from .cut import WHITESPACE, chomp, native_frame, parse_location, strip

_KINDS = ("DocTestFailure", "UnexpectedException")
_UNEXPECTED = "UNEXPECTED EXCEPTION: "
_IDENT_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_IDENT = _IDENT_START | frozenset("0123456789.")


@dataclass(frozen=True)
class DoctestView:
    """A doctest failure as any failure: ``text`` (the failing example, then its
    Expected/Got blocks and location line, or the traceback of the exception it raised),
    ``exception`` and ``message``."""

    text: str
    exception: str
    message: str


def _example_start(lines: list[str], end: int) -> int:
    """The first line of the failing example before line ``end``: the nearest line of
    the listing (``NNN `` or ``??? `` and the docstring's line) holding a ``>>>`` prompt;
    ``end`` when there is none."""
    for i in range(end - 1, -1, -1):
        line = lines[i]
        digits = 0
        while digits < len(line) and (line[digits].isascii() and line[digits].isdigit()):
            digits += 1
        if digits == 0 and line.startswith("???"):
            digits = 3
        if digits >= 3 and line[digits : digits + 1] == " " and strip(line[digits + 1 :]).startswith(">>>"):
            return i
    return end


def _joined(lines: list[str]) -> str:
    """Lines stripped, the empty ones left out, joined by a space."""
    return " ".join(s for s in (strip(line) for line in lines) if s)


def _exception_line(line: str) -> tuple[str, str] | None:
    """``Name: message`` or a bare ``Name`` (a dotted identifier) -> (name, message)."""
    name, sep, message = line.partition(": ")
    if not name or name[0] not in _IDENT_START or any(c not in _IDENT for c in name):
        return None
    return name, message if sep else ""


def doctest_view(text: str) -> DoctestView | None:
    """The ``DoctestView`` of a failure's ``text`` when pytest wrote it for a doctest
    (its last non-blank line a location line ending ``: DocTestFailure`` or
    ``: UnexpectedException``, with doctest's blocks above it), else None.

    ``DocTestFailure``: the text from the failing example on (the listing before it
    dropped), the message ``Expected: <want> Got: <got>`` (each block's lines stripped
    and joined by a space; ``Expected nothing``/``Got nothing`` as doctest writes an
    empty one). ``UnexpectedException``: the example, then the native traceback (its
    ``UNEXPECTED EXCEPTION`` line and the location line dropped); the exception and
    message those of its exception line (the first line after its last frame that does
    not start with whitespace, ``Name: message`` or ``Name``); None when there is none."""
    # the last line decides, before the text is split: most failures are no doctest's
    tail = text.rstrip(WHITESPACE)
    location = parse_location(chomp(tail[tail.rfind("\n") + 1 :]))
    if location is None or location[2] not in _KINDS:
        return None
    lines = [chomp(line) for line in text.split("\n")]
    last = len(lines) - 1
    while not strip(lines[last]):
        last -= 1
    if location[2] == "DocTestFailure":
        got = next((i for i in range(last - 1, -1, -1) if lines[i] in ("Got:", "Got nothing")), None)
        if got is None:
            return None
        expected = next((i for i in range(got - 1, -1, -1) if lines[i] in ("Expected:", "Expected nothing")), None)
        if expected is None:
            return None
        want = (
            "Expected nothing"
            if lines[expected] == "Expected nothing"
            else "Expected: " + _joined(lines[expected + 1 : got])
        )
        found = "Got nothing" if lines[got] == "Got nothing" else "Got: " + _joined(lines[got + 1 : last])
        start = _example_start(lines, expected)
        return DoctestView("\n".join(lines[start:]), "DocTestFailure", strip(want) + " " + strip(found))
    unexpected = next((i for i in range(last - 1, -1, -1) if lines[i].startswith(_UNEXPECTED)), None)
    if unexpected is None:
        return None
    traceback = lines[unexpected + 1 : last]
    frame = max((i for i, line in enumerate(traceback) if native_frame(line) is not None), default=None)
    if frame is None:
        return None
    line = next((line for line in traceback[frame + 1 :] if line and line[0] not in WHITESPACE), None)
    described = None if line is None else _exception_line(line)
    if described is None:
        return None
    start = _example_start(lines, unexpected)
    shown = lines[start:unexpected] + traceback
    return DoctestView("\n".join(shown), described[0], described[1])
