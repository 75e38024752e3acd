"""Traceback cutting, and the line rules it shares with the builder (location lines,
whitespace, capping): the twin of ``rust/core/src/cut.rs``, rule for rule.

The rules are in docs/ENGINE.md, *Traceback cutting* (exact edge cases: the module docs
of ``cut.rs``); ``tests/engine/test_rules_parity.py`` checks both backends give the same output.
Character counts are code points (``len``), which equal Rust's Unicode scalar values for
every string a parser yields.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import islice

from pytest_mcp_server.engine.models import Budgets

from .project import LIBRARY, TEST, ProjectCode, classify, display_path
from .record import HEADER, SYNTAX_POSITION, ReprFrames
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


def syntax_position(text: str) -> Frame | None:
    """(path, N) when ``text``, without its leading whitespace, is exactly ``File "path",
    line N`` (N decimal digits that fit in 64 bits): where Python reports a
    ``SyntaxError`` (its source line, a caret and ``SyntaxError: ...`` follow; a frame
    of a traceback has ``, in f``)."""
    t = text.lstrip(WHITESPACE)
    if not t.startswith('File "'):
        return None
    close = t.find('"', 6)
    if close == -1 or not t.startswith(", line ", close + 1):
        return None
    digits = t[close + 8 :]
    if not digits or not all(c in _DIGITS for c in digits) or int(digits) > U64_MAX:
        return None
    return t[6:close], int(digits)


_NOT_AVAILABLE = ": source code not available"


def listing_header(line: str) -> Frame | None:
    """pytest's header of one function in a fixture lookup error's listing
    (``FixtureLookupError`` and its ``FixtureLookupErrorRepr``: the test and the fixtures that ask for the
    missing one): ``file PATH, line N``, or the same followed by ``: source code not
    available``; (PATH, N), N decimal digits that fit in 64 bits."""
    if not line.startswith("file "):
        return None
    body = line[5:]
    if body.endswith(_NOT_AVAILABLE):
        body = body[: -len(_NOT_AVAILABLE)]
    comma = body.rfind(", line ")
    if comma == -1:
        return None
    path, digits = body[:comma], body[comma + 7 :]
    if not path or not digits or not all(c in _DIGITS for c in digits) or int(digits) > U64_MAX:
        return None
    return path, int(digits)


def _bare_location(line: str) -> Frame | None:
    """``PATH:N`` (PATH starting with a non-whitespace character, N decimal digits that
    fit in 64 bits): pytest's closing line of a fixture lookup error."""
    colon = line.rfind(":")
    if colon == -1:
        return None
    path, digits = line[:colon], line[colon + 1 :]
    if not path or path[0] in WHITESPACE:
        return None
    if not digits or not all(c in _DIGITS for c in digits) or int(digits) > U64_MAX:
        return None
    return path, int(digits)


def fixture_closing(lines: list[str]) -> tuple[int, Frame] | None:
    """The closing line of a fixture lookup error among ``lines`` (its last line,
    ``PATH:N``, saying what its last listing header says: the function that asked for
    the missing fixture): (its index, (path, line)). The twin of ``fixture_closing`` in
    ``rust/core/src/cut.rs``."""
    if not lines:
        return None
    closing = _bare_location(lines[-1])
    if closing is None:
        return None
    header = next((h for line in reversed(lines[:-1]) if (h := listing_header(line)) is not None), None)
    return (len(lines) - 1, closing) if header == closing else None


def fixture_location(text: str) -> Frame | None:
    """The location a fixture lookup error's text names (docs/ENGINE.md, *Messages and
    exceptions*, location): its closing line's path and line, when its last non-blank
    line is one."""
    lines = [chomp(line) for line in text.split("\n")]
    end = next((i for i in range(len(lines) - 1, -1, -1) if strip(lines[i])), None)
    if end is None:
        return None
    found = fixture_closing(lines[: end + 1])
    return found[1] if found is not None else None


def _listing_lines(lines: list[str]) -> list[bool] | None:
    """The lines of pytest's fixture listings among ``lines`` (docs/ENGINE.md,
    *Traceback cutting*, step 4): each header (``listing_header``) and the source lines
    after it (two spaces, then the line) up to the first whose text starts with ``def``,
    pytest's own end of a listing. None when there is no header (most texts)."""
    if not any(line.startswith("file ") for line in lines):
        return None
    listing = [False] * len(lines)
    i = 0
    while i < len(lines):
        if listing_header(lines[i]) is None:
            i += 1
            continue
        listing[i] = True
        i += 1
        while i < len(lines) and lines[i].startswith("  "):
            listing[i] = True
            i += 1
            if strip(lines[i - 1]).startswith("def"):
                break
    return listing


def _is_separator_line(line: str) -> bool:
    t = strip(line)
    return len(t) >= 3 and len(t) % 2 == 1 and t == "_ " * (len(t) // 2) + "_"


_CHAIN_LINES = (
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
)


def is_chain_line(line: str) -> bool:
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

    Returns (cut text joined by ``\\n``, number of input lines dropped that a larger
    budget shows: all but library frames' lines, step 7). ``max_lines``
    (at least 3) is the most lines returned, marker lines included; a kept line longer
    than ``max_line_chars`` (at least 8) code points keeps ``max_line_chars - 1`` and
    ``…``. ``project``: which frames are library code (``project.classify``; None: the
    path-pattern rule), and with one, kept frame lines show their path through
    ``project.display_path``. ``context_lines`` (>= 0, the ``max_frame_context_lines``
    budget; None: its default): the non-blank lines kept before a frame's first ``>``
    line (step 4).
    Exact rules: the top of ``rust/core/src/cut.rs``.
    """
    shown, omitted = _cut_lines(text, max_lines, max_line_chars, project, context_lines)
    return _joined(shown), omitted


def _cut_lines(
    text: str,
    max_lines: int,
    max_line_chars: int,
    project: ProjectCode | None,
    context_lines: int | None,
    repr_frames: ReprFrames | None = None,
) -> tuple[list[str | int], int]:
    """``cut_traceback``'s lines before they are joined: kept lines (capped, paths as
    shown) and markers (an int: the lines it stands for), and the input lines dropped
    but library frames' (no budget shows them).
    ``repr_frames``: the frames of a text rendered from a structured longrepr
    (docs/ENGINE.md, *Frames as data*): its frames, their paths, its separator and chain
    lines and its location lines are theirs, not read from the lines."""
    max_lines = max(max_lines, 3)
    max_line_chars = max(max_line_chars, 8)
    if context_lines is None:
        context_lines = Budgets().max_frame_context_lines

    # Step 1.
    all_lines = [chomp(line) for line in text.split("\n")]
    first = next((i for i, line in enumerate(all_lines) if strip(line)), None)
    if first is None:
        return [], 0
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

    # Step 2: frames (start, end, block, section_end), blocks, and each frame's path.
    if repr_frames is not None:
        frames, block_separator, paths = _frames_of_data(repr_frames, lines, first)
    else:
        frames, block_separator, paths = _frames_of_lines(lines)
    block_kept = [False] * len(block_separator)
    for (start, end, block, section_end), path in zip(frames, paths, strict=True):
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

    # The lines steps 2-3 dropped as library code: no budget shows them, so they are
    # not counted as omitted (their markers still say they were there).
    library_lines = sum(dropped)

    # pytest's fixture listing (a fixture lookup error's): step 4 never drops it.
    listing = _listing_lines(lines)

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
            if not _is_essential(lines[j]) and not (listing is not None and listing[j]):
                dropped[j] = True

    # A chained text whose root cause (the lines before the first chain line) has a frame
    # of project code: the first chain line, and the start of the root's innermost
    # project frame (step 6 keeps both).
    root_chain: tuple[int, int] | None = None
    if repr_frames is not None:
        chains = (at - first for at, chain in repr_frames.boundaries if chain and 0 <= at - first < n)
        first_chain = next(chains, None)
    else:
        first_chain = next((j for j, line in enumerate(lines) if is_chain_line(line)), None)
    if first_chain is not None:
        if repr_frames is not None:
            root_lines = [
                f.at - first
                for f in reversed(repr_frames.frames)
                if 0 <= f.at - first < first_chain and not is_library(f.path)
            ]
            k = root_lines[0] if root_lines else None
        else:
            k = next(
                (j for j in range(first_chain - 1, -1, -1) if (f := _frame_line(lines[j])) and not is_library(f[0])),
                None,
            )
        if k is not None:
            start = next(f[0] for f in frames if f[0] <= k < f[1])
            root_chain = (first_chain, start)
    # The location lines (step 6 of a chained text keeps the head up to the first).
    if repr_frames is not None:
        locations = {f.at - first for f in repr_frames.frames if f.kind != SYNTAX_POSITION}

        def is_location(j: int) -> bool:
            return j in locations
    else:

        def is_location(j: int) -> bool:
            return parse_location(lines[j]) is not None

    # Step 7 (runs of dropped lines -> one marker: an int), then step 6 (head + tail).
    pieces: list[str | int] = []
    chain_pieces = [0, 0]  # the pieces holding the root frame's first line and the chain line
    first_location: int | None = None  # the piece of the first kept location line (the test's frame)
    for j, is_dropped in enumerate(dropped):
        if is_dropped:
            _add_gap(pieces, 1)
        else:
            pieces.append(lines[j])
            if first_location is None and root_chain is not None and is_location(j):
                first_location = len(pieces) - 1
        if root_chain is not None:
            if j == root_chain[0]:
                chain_pieces[1] = len(pieces) - 1
            elif j == root_chain[1]:
                chain_pieces[0] = len(pieces) - 1
    if len(pieces) > max_lines and root_chain is not None:
        pieces = _cut_chained(pieces, max_lines, first_location, chain_pieces[0], chain_pieces[1])
    elif len(pieces) > max_lines:
        head = max_lines // 3
        cut = pieces[:head]
        for p in _omitted_then_tail(pieces[head:], max_lines - head):
            _push_piece(cut, p)
        pieces = cut

    # Steps 8-9.
    # A fixture lookup error's closing line, the text's last line, is then the last piece
    # (the cut never drops the last frame's lines after its `>` line).
    closing = fixture_closing(lines) if listing is not None and project is not None else None
    shown: list[str | int] = []
    omitted = 0
    for k, p in enumerate(pieces):
        if isinstance(p, int):
            omitted += p
            shown.append(p)
        elif project is None:
            shown.append(capped(p, max_line_chars))
        elif closing is not None and k == len(pieces) - 1 and not dropped[closing[0]]:
            shown.append(capped(f"{display_path(closing[1][0], project)}:{closing[1][1]}", max_line_chars))
        else:
            shown.append(capped(_display_line(p, project), max_line_chars))
    # Every line steps 2-3 dropped is in a marker (later steps only drop more).
    return shown, omitted - library_lines


_Frames = tuple[list[tuple[int, int, int, bool]], list[int | None], list[str | None]]
"""Step 2's frames (start, end, block, section_end), the separator line introducing
each block (None for the first and after a chain line), and each frame's path."""


class _Partition:
    """Step 2's frames being cut out of a text's lines, in line order: ``frames``
    (start, end, block, section_end) and ``block_separator``, the separator line
    introducing each block (None for the first and after a chain line). The twin of
    ``Partition`` in ``rust/core/src/cut.rs``."""

    __slots__ = ("block_separator", "frame_start", "frames")

    def __init__(self) -> None:
        self.frames: list[tuple[int, int, int, bool]] = []
        self.block_separator: list[int | None] = [None]
        self.frame_start = 0

    def boundary(self, i: int, chain: bool) -> None:
        """Line ``i`` separates frames (a separator line) or sections (a chain line): it
        ends the frame before it and starts a block; it is in no frame."""
        self.frames.append((self.frame_start, i, len(self.block_separator) - 1, chain))
        self.block_separator.append(None if chain else i)
        self.frame_start = i + 1

    def split(self, i: int) -> None:
        """Line ``i`` starts a frame in the same block (a short-style entry's header)."""
        self.frames.append((self.frame_start, i, len(self.block_separator) - 1, False))
        self.frame_start = i

    def finish(self, n: int) -> tuple[list[tuple[int, int, int, bool]], list[int | None]]:
        """The frames of ``n`` lines (the last ends its section) and the blocks' separators."""
        self.frames.append((self.frame_start, n, len(self.block_separator) - 1, True))
        return self.frames, self.block_separator


def _frames_of_lines(lines: list[str]) -> _Frames:
    """Step 2 read from the lines: a separator or chain line ends a frame; a short-style
    entry's header (a location line whose rest starts ``in ``) starts one once the frame
    has a non-blank line; a frame's path is its last location line's, else its first
    native-format line's. The twin of ``frames_of_lines`` in ``rust/core/src/cut.rs``."""
    partition = _Partition()
    frame_has_text = False
    for i, line in enumerate(lines):
        separator = _is_separator_line(line)
        if separator or is_chain_line(line):
            partition.boundary(i, not separator)
            frame_has_text = False
            continue
        if frame_has_text:
            loc = parse_location(line)
            if loc is not None and loc[2].startswith("in "):
                partition.split(i)
        if strip(line):
            frame_has_text = True
    frames, block_separator = partition.finish(len(lines))
    paths: list[str | None] = []
    for start, end, _block, _section_end in frames:
        path = next((loc[0] for j in range(end - 1, start - 1, -1) if (loc := parse_location(lines[j]))), None)
        if path is None:
            path = next((native[0] for j in range(start, end) if (native := native_frame(lines[j]))), None)
        paths.append(path)
    return frames, block_separator, paths


def _frames_of_data(repr_frames: ReprFrames, lines: list[str], first: int) -> _Frames:
    """Step 2 of a text rendered from a structured longrepr (docs/ENGINE.md, *Frames as
    data*): as ``_frames_of_lines``, with its separator and chain lines, its short-style
    headers and its file locations (its line ``first`` is ``lines[0]``). The twin of
    ``frames_of_data`` in ``rust/core/src/cut.rs``."""
    n = len(lines)
    # (line, None for a header, the chain flag for a separator or chain line), in line order
    events: list[tuple[int, bool | None]] = [
        (at - first, chain) for at, chain in repr_frames.boundaries if 0 <= at - first < n
    ]
    events += [(f.at - first, None) for f in repr_frames.frames if f.kind == HEADER and 0 <= f.at - first < n]
    events.sort(key=lambda e: (e[0], -1 if e[1] is None else int(e[1])))  # Rust's order of (usize, Option<bool>)
    partition = _Partition()
    for i, chain in events:
        if chain is not None:
            partition.boundary(i, chain)
        elif any(strip(lines[j]) for j in range(partition.frame_start, i)):
            partition.split(i)
    frames, block_separator = partition.finish(n)
    # A frame's path is its last location's: both lists are in line order, so one walk.
    locations = [
        (f.at - first, f.path) for f in repr_frames.frames if f.kind != SYNTAX_POSITION and 0 <= f.at - first < n
    ]
    paths: list[str | None] = []
    k = 0
    for start, end, _block, _section_end in frames:
        path = None
        while k < len(locations) and locations[k][0] < end:
            if locations[k][0] >= start:
                path = locations[k][1]
            k += 1
        paths.append(path)
    return frames, block_separator, paths


def _lines_in(pieces: list[str | int]) -> int:
    return sum(p if isinstance(p, int) else 1 for p in pieces)


def _push_piece(pieces: list[str | int], piece: str | int) -> None:
    if isinstance(piece, int):
        _add_gap(pieces, piece)
    else:
        pieces.append(piece)


def _cut_chained(
    pieces: list[str | int], max_lines: int, first_location: int | None, root: int, chain: int
) -> list[str | int]:
    """Step 6 of a chained text whose root cause has a project frame (docs/ENGINE.md,
    *Chained exceptions*): the text's head up to its first location line (the test's own
    frame) when that is within ``max_lines // 3`` lines and before the root's frame; then
    the root's end from its innermost project frame on (at least half of what is left,
    less one, at most all of it less four), a marker for what precedes it; then the rest
    from the first chain line (piece ``chain``) on, its tail when it does not fit (a marker
    first). ``root``: the piece holding that frame's first line. The twin of
    ``cut_chained`` in ``rust/core/src/cut.rs``."""
    head = 0
    # at most a third, and three lines left for the root and the final exception
    if first_location is not None and first_location < min(max_lines // 3, root, max_lines - 3):
        head = first_location + 1
    budget = max_lines - head
    # all but four at most: the marker before it, then the first chain line and the final
    # exception's line with a marker between (the tail rule)
    keep_root = max(0, min(max(budget // 2 - 1, chain - root), budget - 4))
    start = max(chain - keep_root, head)
    cut: list[str | int] = []
    for p in pieces[:head]:
        _push_piece(cut, p)
    if start > head:
        _add_gap(cut, _lines_in(pieces[head:start]))
    for p in pieces[start:chain]:
        _push_piece(cut, p)
    for p in _omitted_then_tail(pieces[chain:], max_lines - len(cut)):
        _push_piece(cut, p)
    return cut


def _omitted_keeping_chains(segment: list[str | int]) -> list[str | int]:
    """An omitted run of pieces as written (docs/ENGINE.md, *Traceback cutting*, step
    6): one marker, except that its first and last chain lines stay in place, with a
    marker for the lines before, between and after them that are not empty. The twin of
    ``omitted_keeping_chains`` in ``rust/core/src/cut.rs``."""
    chains = [i for i, p in enumerate(segment) if isinstance(p, str) and is_chain_line(p)]
    out: list[str | int] = []
    at = 0
    for k in sorted({chains[0], chains[-1]}) if chains else []:
        if k > at:
            _add_gap(out, _lines_in(segment[at:k]))
        out.append(segment[k])
        at = k + 1
    if at < len(segment):
        _add_gap(out, _lines_in(segment[at:]))
    return out


def _omitted_then_tail(pieces: list[str | int], room: int) -> list[str | int]:
    """``pieces`` in at most ``room`` pieces (step 6): all of them when they fit; else
    the longest tail that fits after the rest written by ``_omitted_keeping_chains``,
    of at least one piece; when none does (more chain lines than room), one marker and a
    tail of ``room - 1``.
    The twin of ``omitted_then_tail`` in ``rust/core/src/cut.rs``."""
    if len(pieces) <= room:
        return list(pieces)
    for tail in range(room - 1, 0, -1):  # the last piece (the final exception's line) stays
        out: list[str | int] = []
        for p in _omitted_keeping_chains(pieces[: len(pieces) - tail]):
            _push_piece(out, p)
        for p in pieces[len(pieces) - tail :]:
            _push_piece(out, p)
        if len(out) <= room:
            return out
    out = [_lines_in(pieces[: len(pieces) - (room - 1)])]
    for p in pieces[len(pieces) - (room - 1) :]:
        _push_piece(out, p)
    return out


def _joined(shown: list[str | int]) -> str:
    """The lines joined by ``\n``, markers written ``... [N lines omitted]``."""
    return "\n".join(f"... [{p} lines omitted]" if isinstance(p, int) else p for p in shown)


def _display_line(line: str, project: ProjectCode) -> str:
    """A kept line with the path of a location line, native-format frame line or fixture
    listing header shown through ``display_path``; other lines unchanged."""
    loc = parse_location(line)
    if loc is not None:
        return display_path(loc[0], project) + line[len(loc[0]) :]
    native = native_frame(line)
    if native is not None:
        start = line.index('"') + 1
        return line[:start] + display_path(native[0], project) + line[start + len(native[0]) :]
    header = listing_header(line)
    if header is not None:
        return "file " + display_path(header[0], project) + line[5 + len(header[0]) :]
    return line


def _add_gap(pieces: list[str | int], n: int) -> None:
    if pieces and isinstance(pieces[-1], int):
        pieces[-1] += n
    else:
        pieces.append(n)


def _frame_line(line: str) -> Frame | None:
    """A frame line's (path, N): a location line, a native-format frame line, or an
    ``E`` line giving a syntax error's position (``E     File "t.py", line 2``:
    pytest's report of a module that does not compile)."""
    loc = parse_location(line)
    if loc is not None:
        return loc[0], loc[1]
    if line.startswith("E "):
        return syntax_position(line[2:])
    return native_frame(line)


def _frames(text: str) -> Iterator[Frame]:
    """Every frame line of ``text`` in order: location lines and native-format lines."""
    for raw in text.split("\n"):
        frame = _frame_line(chomp(raw))
        if frame is not None:
            yield frame


class DeepestFrames:
    """The last (innermost) of ``frames`` (outermost first: a text's frame lines, or a
    structured longrepr's frames) of each kind of project code: ``code`` (project or
    test), ``non_test`` (project, not test) and ``test``; each a ``(path, line)`` as the
    report gives it, or None."""

    __slots__ = ("code", "non_test", "test")

    def __init__(self, frames: Iterable[Frame], project: ProjectCode | None) -> None:
        self.code: Frame | None = None
        self.non_test: Frame | None = None
        self.test: Frame | None = None
        classes: dict[str, int] = {}
        for frame in frames:
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


def failure_frames(text: str, project: ProjectCode | None) -> tuple[DeepestFrames, str | None]:
    """The frames a failure is located and grouped by (docs/ENGINE.md, *Chained
    exceptions*): ``(frames, root)``, those of its root cause (the text before the first
    chain line, returned as ``root``) when that part has a frame of project code; else
    those of the whole text and None. The twin of ``FailureFrames::of`` in
    ``rust/core/src/cut.rs``."""
    lines = text.split("\n")
    for i, raw in enumerate(lines):
        if is_chain_line(chomp(raw)):
            root = "\n".join(lines[:i]) + "\n"
            frames = DeepestFrames(_frames(root), project)
            if frames.code is not None:
                return frames, root
            break
    return DeepestFrames(_frames(text), project), None


def failure_frames_of_data(
    repr_frames: ReprFrames, text: str, project: ProjectCode | None
) -> tuple[DeepestFrames, str | None]:
    """``failure_frames`` of a failure whose frames are data (a structured longrepr's,
    ``ReprFrames``), ``text`` its rendering (the root's text is cut from it). The twin
    of ``FailureFrames::of_data`` in ``rust/core/src/cut.rs``."""
    pairs = [(f.path, f.line) for f in repr_frames.frames]
    if repr_frames.root is not None:
        n, at = repr_frames.root
        frames = DeepestFrames(pairs[:n], project)
        if frames.code is not None:
            return frames, text[:at]
    return DeepestFrames(pairs, project), None


# --------------------------------------------------------------------------------------
# The shown traceback: what a listed failure's traceback says after the cut
# (docs/ENGINE.md, *Traceback cutting*, "The shown traceback"); the twin of the rules at
# the end of ``rust/core/src/cut.rs``. Lines are ``str``, markers ``int`` (the lines a
# marker stands for): no rule matches a marker's text.

Shown = list[str | int]

SHOWN_SEPARATOR = "_ _ _ _ _"
"""The separator of two frames as shown: the boundary stays, its width goes."""
REPEAT_BLOCK_LINES = 4
"""Longest block of lines whose consecutive repeats rule 9 folds into one count."""
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_HEX = frozenset("0123456789abcdefABCDEF")
_CARET_CHARS = frozenset("^~")


def shown_traceback(
    text: str,
    max_lines: int,
    max_line_chars: int,
    project: ProjectCode | None,
    context_lines: int | None,
    node_id: str,
    location: tuple[str, int | None] | None,
    exception: str | None,
    repr_frames: ReprFrames | None = None,
) -> tuple[str, int]:
    """A listed failure's traceback: ``cut_traceback``, then the shown-traceback rules
    (docs/ENGINE.md, *Traceback cutting*, "The shown traceback"). ``node_id``,
    ``location`` (path as shown, line) and ``exception``: the failure's, as listed;
    ``repr_frames``: its frames as data, when it has them (the cut reads its frames from
    them: docs/ENGINE.md, *Frames as data*). Returns (text, input lines dropped by the
    cut: the sum of the markers the cut wrote, whether or not a rule folded one away, less
    the library frames' lines, which no budget shows)."""
    shown, omitted = _cut_lines(text, max_lines, max_line_chars, project, context_lines, repr_frames)
    closed = _without_closing_line(shown, location, exception)
    shown = _last_frame_carets(shown)
    shown = _without_own_instance(shown, node_id)
    shown = _without_restated_diff(shown)
    shown = _without_rerun_hints(shown)
    compact = context_lines == 0
    shown = _without_redundant_full_diff(shown, compact)
    if compact:
        shown = _compact_frames(shown, location if closed else None)
    return _joined(_fold_repeats(shown)), omitted


def _is_blank(line: str | int) -> bool:
    """A line of whitespace only (a marker never is)."""
    return isinstance(line, str) and not strip(line)


def _without_closing_line(shown: Shown, location: tuple[str, int | None] | None, exception: str | None) -> bool:
    """Rule 1: pytest's closing ``path:line: ExceptionName`` line, when it says the
    listed location and the exception's last dotted name, or a closing ``path:line`` (a
    fixture lookup error's) of the listed location, and the blank lines before it.
    Returns whether a line naming the exception went (rule 8 then takes the location for
    the last frame's)."""
    if location is None or location[1] is None or not shown:
        return False
    where = f"{location[0]}:{location[1]}"
    named = bool(exception) and shown[-1] == f"{where}: {str(exception).rpartition('.')[2]}"
    if not named and shown[-1] != where:
        return False
    shown.pop()
    while shown and _is_blank(shown[-1]):
        shown.pop()
    return named


def _is_caret_line(line: str) -> bool:
    t = strip(line)
    return bool(t) and all(c in _CARET_CHARS for c in t)


def _starts_frame(line: str) -> bool:
    """A separator, or a short-style entry header (``a.py:3: in f``)."""
    if _is_separator_line(line):
        return True
    loc = parse_location(line)
    return loc is not None and loc[2].startswith("in ")


def _last_frame_carets(shown: Shown) -> Shown:
    """Rules 2-3: caret lines only in the last frame, longer separators written
    ``SHOWN_SEPARATOR`` (a line only gets shorter)."""
    last_start = next((i for i in range(len(shown) - 1, -1, -1) if _text_is(shown[i], _starts_frame)), 0)
    out: Shown = []
    for i, line in enumerate(shown):
        if isinstance(line, str):
            if i < last_start and _is_caret_line(line):
                continue
            if len(line) > len(SHOWN_SEPARATOR) and _is_separator_line(line):
                line = SHOWN_SEPARATOR
        out.append(line)
    return out


def _text_is(line: str | int, rule: Callable[[str], bool]) -> bool:
    return isinstance(line, str) and rule(line)


def _instance_class(line: str) -> str | None:
    """The class of ``self = <pkg.mod.Cls object at 0x7f...>`` or ``self = <pkg.mod.Cls
    testMethod=test_x>`` (ASCII word characters), else None."""
    if not (line.startswith("self = <") and line.endswith(">")):
        return None
    inner = line[8:-1]
    qualified, space, rest = inner.partition(" ")
    if not space or not qualified or not all(c in _WORD or c == "." for c in qualified):
        return None
    dot = qualified.rfind(".")
    prefix, cls = qualified[: dot + 1], qualified[dot + 1 :]
    if not cls or len(prefix) == 1:
        return None
    if rest.startswith("object at 0x"):
        digits = rest[12:]
        valid = bool(digits) and all(c in _HEX for c in digits)
    elif rest.startswith("testMethod="):
        name = rest[11:]
        valid = bool(name) and all(c in _WORD for c in name)
    else:
        valid = False
    return cls if valid else None


def _without_own_instance(shown: Shown, node_id: str) -> Shown:
    """Rule 4: the ``self`` line of the test's own instance (a class the node id names)
    and the blank line after it."""
    classes = node_id.split("[", 1)[0].split("::")[1:]
    out: Shown = []
    skip_blank = False
    for line in shown:
        if skip_blank and _is_blank(line):
            skip_blank = False
            continue
        skip_blank = False
        if isinstance(line, str) and _instance_class(line) in classes:
            skip_blank = True
            continue
        out.append(line)
    return out


def _diff_line(line: str | int) -> tuple[str, str] | None:
    """``E``, whitespace, ``-`` or ``+``, a space, the rest: (sign, rest)."""
    if not isinstance(line, str) or not line.startswith("E"):
        return None
    t = line[1:].lstrip(WHITESPACE)
    if len(t) == len(line) - 1 or t[:1] not in ("-", "+") or t[1:2] != " ":
        return None
    return t[0], t[2:]


def _without_restated_diff(shown: Shown) -> Shown:
    """Rule 5: pytest's two-line diff of two strings when it only restates the
    ``assert`` line above it (``E  assert 'B' == 'C'``, ``E``, ``E  - C``, ``E  + B``,
    the last ``E`` lines)."""
    out = list(shown)

    def text(k: int) -> str | None:
        line = out[k] if k < len(out) else None
        return line if isinstance(line, str) else None

    for i in range(len(out) - 3, 0, -1):
        blank_e, after = text(i), text(i + 3)
        if blank_e is None or strip(blank_e) != "E" or (after is not None and after.startswith("E")):
            continue
        minus, plus = _diff_line(text(i + 1) or ""), _diff_line(text(i + 2) or "")
        if minus is None or plus is None or minus[0] != "-" or plus[0] != "+":
            continue
        assertion = text(i - 1)
        if assertion is not None and assertion.startswith("E ") and assertion.endswith(f"'{plus[1]}' == '{minus[1]}'"):
            del out[i : i + 3]
    return out


_RERUN_HINT_ENDS = (
    ", use -vv to show",
    ", use -v to show",
    " use -vv to show",
    " use -v to show",
    ", use '-vv' to show",
    ", use '-v' to show",
)
"""pytest's advice to re-run verbose at a line's end (``_pytest/assertion/util.py``,
``truncate.py``), longest first."""
_RERUN_HINT_LINES = ("Use -v to get more diff", "Use -v to get the full diff")
"""pytest's advice as a whole line: ``E`` + whitespace + one of these."""


def _without_rerun_hint(line: str) -> str | None:
    """``line`` without pytest's advice to re-run verbose; None when nothing else is
    left but whitespace or a bare ``E``."""
    after = line[1:].lstrip(WHITESPACE)
    if line.startswith("E") and len(after) < len(line) - 1 and after in _RERUN_HINT_LINES:
        kept = ""
    else:
        end = next((end for end in _RERUN_HINT_ENDS if line.endswith(end)), None)
        if end is None:
            return line
        kept = line[: len(line) - len(end)]
    return kept if strip(kept) not in ("", "E") else None


def _without_rerun_hints(shown: Shown) -> Shown:
    """Rule 6: pytest's advice to re-run verbose (an agent cannot add options)."""
    out: Shown = []
    for line in shown:
        kept = _without_rerun_hint(line) if isinstance(line, str) else line
        if kept is not None:
            out.append(kept)
    return out


def _e_text(line: str | int) -> tuple[str, str] | None:
    """An ``E`` line: (the whitespace after ``E``, the text after it)."""
    if not isinstance(line, str) or not line.startswith("E"):
        return None
    text = line[1:].lstrip(WHITESPACE)
    return line[1 : len(line) - len(text)], text


def _without_redundant_full_diff(shown: Shown, compact: bool) -> Shown:
    """Rule 7: pytest's ``Full diff:`` block when the lines above say it (a dict's
    ``Differing items:``, or an ``assert a == b`` line with both sides whole) becomes one
    line saying how many lines it held (markers inside it counted by their lines); with
    ``compact`` (rule 8's frames), it goes without that line."""
    out: Shown = []
    differing = False
    whole_sides = False
    i = 0
    while i < len(shown):
        e = _e_text(shown[i])
        if e is None:
            differing = whole_sides = False
            out.append(shown[i])
            i += 1
            continue
        ws, text = e
        if text == "Differing items:":
            differing = True
        said = text.removeprefix("AssertionError: ")
        if said.startswith("assert ") and " == " in said:
            whole_sides = not said.endswith("…") and "..." not in said  # pytest < 8 cuts reprs with "..."
        if (differing or whole_sides) and text.startswith("Full diff:"):
            j = i + 1
            left_out = 0
            while j < len(shown):
                line = shown[j]
                if isinstance(line, int):
                    left_out += line
                else:
                    inner = _e_text(line)
                    if inner is None or len(inner[0]) < len(ws) or not inner[1]:
                        break
                    left_out += 1
                j += 1
            if left_out:
                why = "the differing items above" if differing else "both sides are whole in the assert line above"
                if not compact:
                    out.append(f"E{ws}Full diff: [{left_out} lines left out: {why}]")
                i = j
                continue
        out.append(shown[i])
        i += 1
    return out


def _compact_frames(shown: Shown, location: tuple[str, int | None] | None) -> Shown:
    """Rule 8 (``max_frame_context_lines`` 0): each long-format frame on one line,
    ``path:N: statement``, as pytest's ``--tb=short`` and Python's own tracebacks write a
    frame. A frame is the lines between separators (which go), chain lines (which stay)
    and short-style entry headers (``path:N: in f``, which start a frame and stay as
    they are). In a frame with a ``>`` line and a location line after it (``location``:
    the closing line rule 1 took, which stands for the last frame's), the lines before the ``>`` line
    go (markers too: their lines stay counted), the ``>`` line becomes the location's
    ``path:N:``, a space and the statement, the location line and the blank lines and
    bare ``E`` lines go, and a caret line keeps its column under the statement (it goes
    when it starts left of it). Other frames stay as they are."""
    frames: list[Shown] = [[]]
    for line in shown:
        if _text_is(line, _is_separator_line):
            frames.append([])
        elif _text_is(line, is_chain_line):
            frames.extend(([line], []))
        else:
            if _text_is(line, _starts_frame) and frames[-1]:
                frames.append([])
            frames[-1].append(line)
    last = max((i for i, frame in enumerate(frames) if frame), default=0)
    out: Shown = []
    for i, frame in enumerate(frames):
        out.extend(_compact_frame(frame, location if i == last else None))
    return out


def _compact_frame(frame: Shown, location: tuple[str, int | None] | None) -> Shown:
    """One frame of rule 8 (``location``: the listed location when it is the last frame)."""
    arrow = next((i for i, line in enumerate(frame) if _text_is(line, lambda t: t.startswith(">"))), None)
    if arrow is None:
        return frame
    closing = None
    where = None
    for i in range(len(frame) - 1, arrow, -1):
        line = frame[i]
        loc = parse_location(line) if isinstance(line, str) else None
        if loc is not None and not loc[2].startswith("in "):
            closing, where = i, f"{loc[0]}:{loc[1]}:"
            break
    if where is None:
        if location is None or location[1] is None:
            return frame
        where = f"{location[0]}:{location[1]}:"
    statement = str(frame[arrow])[1:]
    column = 1 + _indentation(statement)  # where the statement starts in the `>` line
    out: Shown = [f"{where} {strip(statement)}"]
    for i in range(arrow + 1, len(frame)):
        line = frame[i]
        if i == closing or _is_blank(line) or (isinstance(line, str) and strip(line) == "E"):
            continue
        if isinstance(line, str) and _is_caret_line(line):
            shift = _indentation(line) - column
            if shift < 0:
                continue
            line = " " * (len(where) + 1 + shift) + strip(line)
        out.append(line)
    return out


def _fold_repeats(lines: Shown) -> Shown:
    """Rule 9: each run of a repeated block (1 to ``REPEAT_BLOCK_LINES`` lines, one not
    blank) written once and followed by ``... [the N lines above repeat M more times]``,
    when that saves at least two lines."""
    out: Shown = []
    i = 0
    while i < len(lines):
        best_period, best_repeats = 0, 0
        for period in range(1, REPEAT_BLOCK_LINES + 1):
            block = lines[i : i + period]
            if len(block) < period or all(_is_blank(line) for line in block):
                break
            repeats = 1
            while lines[i + repeats * period : i + (repeats + 1) * period] == block:
                repeats += 1
            if (repeats - 1) * period > max(best_repeats - 1, 0) * best_period:
                best_period, best_repeats = period, repeats
        if best_period and (best_repeats - 1) * best_period >= 2:
            out.extend(lines[i : i + best_period])
            what = "line above repeats" if best_period == 1 else f"{best_period} lines above repeat"
            out.append(f"... [the {what} {best_repeats - 1} more times]")
            i += best_repeats * best_period
        else:
            out.append(lines[i])
            i += 1
    return out


_EXPECTED_LINES = frozenset({"Expected:", "Expected nothing"})
_GOT_LINES = frozenset({"Got:", "Got nothing"})


def says_message(shown: str, exception: str | None, message: str) -> bool:
    """True when an ``E `` line of the shown traceback ``shown``, or its last non-blank
    line when that starts with neither whitespace, ``>`` nor ``E `` (a native
    traceback's exception line), says the failure's
    ``exception: message`` (its message alone without an exception), whole or as far as
    the shorter of the two was kept (traceback lines and messages are cut at different
    lengths, each ending with ``…``): the entry then needs no message line of its own.
    ``AssertionError: assert …`` is said by ``E  assert …`` (pytest's rewritten
    assertion does not name its exception). A ``DocTestFailure`` is said by doctest's
    ``Expected``/``Got`` lines. docs/ENGINE.md, *The shown traceback*."""
    lines = shown.split("\n")
    if exception == "DocTestFailure" and _EXPECTED_LINES & set(lines) and _GOT_LINES & set(lines):
        return True  # doctest's own Expected/Got blocks (docs/ENGINE.md, *Doctests*)
    what = (f"{exception}: {message}" if exception else message).removesuffix("…")
    last = next((line for line in reversed(lines) if strip(line)), "")
    said_lines = [line[2:] for line in lines if line.startswith("E ")]
    if last and last[0] not in WHITESPACE and last[0] != ">" and not last.startswith("E "):
        said_lines.append(last)  # a native traceback's closing exception line
    for said_line in said_lines:
        said = strip(said_line).removesuffix("…")
        wanted = what
        if wanted.startswith("AssertionError: assert "):
            said = said.removeprefix("AssertionError: ")
            wanted = wanted.removeprefix("AssertionError: ")
        if wanted in said:
            return True
        shorter = min(len(said), len(wanted))
        if shorter >= 40 and said[:shorter] == wanted[:shorter]:
            return True
    return False
