"""Traceback cutting, and the line rules it shares with the builder (location lines,
whitespace, capping): the twin of ``rust/core/src/cut.rs``, rule for rule.

The rules are in docs/ENGINE.md, *Traceback cutting* (exact edge cases: the module docs
of ``cut.rs``); ``tests/test_rules_parity.py`` checks both backends give the same output.
Character counts are code points (``len``), which equal Rust's Unicode scalar values for
every string a parser yields.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

from pytest_mcp_server.engine.models import Budgets

from .project import LIBRARY, TEST, ProjectCode, classify, display_path
from .text import U64_MAX

Frame = tuple[str, int]
"""(path as the traceback gives it, line)."""

# The whitespace the line rules strip (ASCII: space, tab, LF, CR, VT, FF), and other ASCII classes.
WHITESPACE = " \t\n\r\x0b\x0c"
_DIGITS = frozenset("0123456789")
_SEPARATORS = frozenset("/\\")
_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def strip(s: str) -> str:
    """``s`` without leading and trailing ``WHITESPACE``."""
    return s.strip(WHITESPACE)


def chomp(line: str) -> str:
    """A line as ``cut_traceback`` and the message rules read it: one trailing ``\\r`` removed."""
    return line[:-1] if line.endswith("\r") else line


def _is_e_line(line: str) -> bool:
    return line.startswith("E ") or line == "E"


def capped(s: str, max_chars: int) -> str:
    """``s`` cut to ``max_chars`` code points: a longer one keeps ``max_chars - 1`` and
    ends with ``…`` (docs/ENGINE.md, *Messages*, *Traceback cutting* step 9)."""
    if len(s) > max_chars:
        return s[: max(max_chars - 1, 0)] + "…"
    return s


def _location_tail(line: str, colon: int) -> tuple[int, str] | None:
    """``:N:`` + (space | end) at index ``colon``: (N, rest)."""
    start = end = colon + 1
    n = len(line)
    while end < n and line[end] in _DIGITS:
        end += 1
    if end == start or end >= n or line[end] != ":":
        return None
    number = int(line[start:end])
    if number > U64_MAX:
        return None
    if end + 1 == n:
        return number, ""
    if line[end + 1] == " ":
        return number, line[end + 2 :]
    return None


def parse_location(line: str) -> tuple[str, int, str] | None:
    """A ``path:N: rest`` line -> (path, N, rest), else None (rules: ``cut.rs``).

    The path is ``\\S[^:]*`` (tried first) or a Windows drive ``[A-Za-z]:[\\\\/][^:]*``;
    lines starting with whitespace, ``>``, ``E `` or equal to ``E`` never match.
    """
    if not line:
        return None
    first = line[0]
    if first in WHITESPACE or first == ">" or _is_e_line(line):
        return None
    colon = line.find(":", 1)
    if colon != -1:
        tail = _location_tail(line, colon)
        if tail is not None:
            return line[:colon], tail[0], tail[1]
    if len(line) > 3 and first in _LETTERS and line[1] == ":" and line[2] in _SEPARATORS:
        colon = line.find(":", 3)
        if colon != -1:
            tail = _location_tail(line, colon)
            if tail is not None:
                return line[:colon], tail[0], tail[1]
    return None


def native_frame(line: str) -> Frame | None:
    """(path, N) of a Python native-format frame line ``  File "path", line N, in f``
    (N decimal digits that fit in 64 bits)."""
    t = line.lstrip(WHITESPACE)
    if not t.startswith('File "'):
        return None
    t = t[6:]
    close = t.find('"')
    if close == -1:
        return None
    after = t[close + 1 :]
    if not after.startswith(", line "):
        return None
    end = 7
    while end < len(after) and after[end] in _DIGITS:
        end += 1
    if end == 7:
        return None
    number = int(after[7:end])
    return (t[:close], number) if number <= U64_MAX else None


def _is_separator_line(line: str) -> bool:
    t = strip(line)
    return len(t) >= 3 and len(t) % 2 == 1 and t == "_ " * (len(t) // 2) + "_"


_CHAIN_LINES = (
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
)


def _is_chain_line(line: str) -> bool:
    return strip(line) in _CHAIN_LINES


_JAVA_LIBRARY_PREFIXES = (
    "java.",
    "javax.",
    "jdk.",
    "sun.",
    "org.junit.",
    "junit.",
    "org.apache.maven.",
    "org.hamcrest.",
)


def _is_java_library_frame(line: str) -> bool:
    t = line.lstrip(" \t")
    if len(t) == len(line) or not t.startswith("at "):
        return False
    return t[3:].startswith(_JAVA_LIBRARY_PREFIXES)


def _is_essential(line: str) -> bool:
    return _is_e_line(line) or line.startswith(">") or parse_location(line) is not None


def _indentation(line: str) -> int:
    return len(line) - len(line.lstrip(WHITESPACE))


def cut_traceback(
    text: str,
    max_lines: int,
    max_line_chars: int,
    project: ProjectCode | None = None,
    context_lines: int | None = None,
) -> tuple[str, int]:
    """Cut a failure's long representation down (docs/ENGINE.md, *Traceback cutting*).

    Returns (cut text joined by ``\\n``, number of input lines dropped). ``max_lines``
    (at least 3) is the most lines returned, marker lines included; a kept line longer
    than ``max_line_chars`` (at least 8) code points keeps ``max_line_chars - 1`` and
    ``…``. ``project``: which frames are library code (``project.classify``; None: the
    path-pattern rule), and with one, kept frame lines show their path through
    ``project.display_path``. ``context_lines`` (>= 0, the ``max_frame_context_lines``
    budget; None: its default): the non-blank lines kept before a frame's first ``>``
    line (step 4).
    Exact rules: the top of ``rust/core/src/cut.rs``.
    """
    max_lines = max(max_lines, 3)
    max_line_chars = max(max_line_chars, 8)
    if context_lines is None:
        context_lines = Budgets().max_frame_context_lines

    # Step 1.
    all_lines = [chomp(line) for line in text.split("\n")]
    first = next((i for i, line in enumerate(all_lines) if strip(line)), None)
    if first is None:
        return "", 0
    last = next(i for i in range(len(all_lines) - 1, -1, -1) if strip(all_lines[i]))
    lines = all_lines[first : last + 1]
    n = len(lines)
    dropped = [False] * n
    classes: dict[str, int] = {}

    def is_library(path: str) -> bool:
        kind = classes.get(path)
        if kind is None:
            kind = classes[path] = classify(path, project)
        return kind == LIBRARY

    # Step 2: frames (start, end, block, section_end) and blocks.
    frames: list[tuple[int, int, int, bool]] = []
    block_separator: list[int | None] = [None]
    frame_start = 0
    frame_has_text = False
    for i, line in enumerate(lines):
        separator = _is_separator_line(line)
        chain = not separator and _is_chain_line(line)
        if separator or chain:
            frames.append((frame_start, i, len(block_separator) - 1, chain))
            block_separator.append(i if separator else None)
            frame_start = i + 1
            frame_has_text = False
            continue
        if frame_has_text:
            loc = parse_location(line)
            if loc is not None and loc[2].startswith("in "):
                frames.append((frame_start, i, len(block_separator) - 1, False))
                frame_start = i
        if strip(line):
            frame_has_text = True
    frames.append((frame_start, n, len(block_separator) - 1, True))

    block_kept = [False] * len(block_separator)
    for start, end, block, section_end in frames:
        path = None
        for j in range(end - 1, start - 1, -1):
            loc = parse_location(lines[j])
            if loc is not None:
                path = loc[0]
                break
        else:
            for j in range(start, end):
                native = native_frame(lines[j])
                if native is not None:
                    path = native[0]
                    break
        if not section_end and path is not None and is_library(path):
            for j in range(start, end):
                dropped[j] = True
        else:
            block_kept[block] = True
    for block, separator_index in enumerate(block_separator):
        if separator_index is not None and not block_kept[block]:
            dropped[separator_index] = True

    # Step 3: native-format and Java library frames in the kept lines.
    i = 0
    while i < n:
        if dropped[i]:
            i += 1
            continue
        native = native_frame(lines[i])
        if native is not None:
            indent = _indentation(lines[i])
            end = i + 1
            while end < n and not dropped[end] and strip(lines[end]) and _indentation(lines[end]) > indent:
                end += 1
            if is_library(native[0]):
                for j in range(i, end):
                    dropped[j] = True
            i = end
            continue
        if _is_java_library_frame(lines[i]):
            dropped[i] = True
        i += 1

    # Steps 4-5: before a frame's first `>` line, its last `context_lines` non-blank
    # lines and what follows them stay; earlier lines go unless essential (or at most one is not blank).
    for start, end, _block, _section_end in frames:
        arrow = next((j for j in range(start, end) if not dropped[j] and lines[j].startswith(">")), None)
        if arrow is None:
            continue
        # The `context_lines`-th non-blank line before the arrow (0: the arrow itself).
        keep_from = arrow
        if context_lines > 0:
            before = (j for j in range(arrow - 1, start - 1, -1) if not dropped[j] and strip(lines[j]))
            keep_from = next(islice(before, context_lines - 1, None), start)
        # At most one non-blank line before the kept context (pytest's blank line after a
        # separator, a `def` line): a marker would take as many lines, so nothing goes.
        if sum(1 for j in range(start, keep_from) if not dropped[j] and strip(lines[j])) <= 1:
            continue
        for j in range(start, keep_from):
            if not _is_essential(lines[j]):
                dropped[j] = True

    # Step 7 (runs of dropped lines -> one marker: an int), then step 6 (head + tail).
    pieces: list[str | int] = []
    for j, is_dropped in enumerate(dropped):
        if is_dropped:
            _add_gap(pieces, 1)
        else:
            pieces.append(lines[j])
    if len(pieces) > max_lines:
        head = max_lines // 3
        tail = max_lines - head - 1
        middle = sum(p if isinstance(p, int) else 1 for p in pieces[head : len(pieces) - tail])
        cut: list[str | int] = pieces[:head]
        _add_gap(cut, middle)
        for p in pieces[len(pieces) - tail :]:
            if isinstance(p, int):
                _add_gap(cut, p)
            else:
                cut.append(p)
        pieces = cut

    # Steps 8-9, and the output.
    out = []
    omitted = 0
    for p in pieces:
        if isinstance(p, int):
            omitted += p
            out.append(f"... [{p} lines omitted]")
        else:
            out.append(capped(p if project is None else _display_line(p, project), max_line_chars))
    return "\n".join(out), omitted


def _display_line(line: str, project: ProjectCode) -> str:
    """A kept line with the path of a location line or native-format frame line shown
    through ``display_path``; other lines unchanged."""
    loc = parse_location(line)
    if loc is not None:
        return display_path(loc[0], project) + line[len(loc[0]) :]
    native = native_frame(line)
    if native is not None:
        start = line.index('"') + 1
        return line[:start] + display_path(native[0], project) + line[start + len(native[0]) :]
    return line


def _add_gap(pieces: list[str | int], n: int) -> None:
    if pieces and isinstance(pieces[-1], int):
        pieces[-1] += n
    else:
        pieces.append(n)


def _frames(text: str) -> Iterator[Frame]:
    """Every frame line of ``text`` in order: location lines and native-format lines."""
    for raw in text.split("\n"):
        line = chomp(raw)
        loc = parse_location(line)
        if loc is not None:
            yield loc[0], loc[1]
            continue
        native = native_frame(line)
        if native is not None:
            yield native


class DeepestFrames:
    """The last (innermost) frame of ``text`` of each kind of project code:
    ``code`` (project or test), ``non_test`` (project, not test) and ``test``; each a
    ``(path, line)`` as the text gives it, or None."""

    __slots__ = ("code", "non_test", "test")

    def __init__(self, text: str, project: ProjectCode | None) -> None:
        self.code: Frame | None = None
        self.non_test: Frame | None = None
        self.test: Frame | None = None
        classes: dict[str, int] = {}
        for frame in _frames(text):
            kind = classes.get(frame[0])
            if kind is None:
                kind = classes[frame[0]] = classify(frame[0], project)
            if kind == LIBRARY:
                continue
            self.code = frame
            if kind == TEST:
                self.test = frame
            else:
                self.non_test = frame
