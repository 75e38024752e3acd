"""The summary builder, traceback cutting and failure groups of the pure backend.

Mirrors ``rust/core/src/summary.rs``, ``cut.rs`` and ``group.rs`` rule for rule and must
write the same bytes (docs/ENGINE.md, *The builder*, *Summary JSON*); the parity tests
in ``tests/test_rules_parity.py`` run both. Character counts are code points (``len``),
which equal Rust's Unicode scalar values for every string a parser yields.

Normaliser grammar (``normalize_message``; identical to ``group.rs``): one left-to-right
scan; at each position the first rule that matches, in this order, emits its
placeholder and the scan goes on after the match; otherwise the character is copied.
ASCII classes only: W = ``[A-Za-z0-9_]``, H = ``[0-9A-Fa-f]``,
P = ``[A-Za-z0-9_.~+@%-]``, S = ``[/\\]``; "prev" = the input character before the
position (none at the start).

1. ``<str>``: a quote ``'`` or ``"`` that opens (prev is none or not W; or prev is one
   or two of ``[bBrRuUfF]`` (a string prefix) themselves preceded by none or a non-W),
   up to the next same quote with no ``\\n`` between. An unclosed quote is copied.
2. ``<path>``: at a run start (prev none or not in P∪S) the maximal run of P∪S
   characters, if it contains S and has at least two non-empty S-separated parts.
3. ``<uuid>``: at a word start (prev none or not W), ``H{8}-H{4}-H{4}-H{4}-H{12}`` not
   followed by W.
4. ``<hex>``: ``0x`` or ``0X`` followed by one or more H (all of them).
5. ``<hex>``: at a word start, the maximal W-run if it is at least 8 long, all H, with
   at least one digit and one letter.
6. ``<addr>``: at a digit whose prev is none or neither W nor ``.``, four dot-separated
   maximal digit runs of 1 to 3 digits, not followed by W nor by ``.`` + digit; then an
   optional ``:`` + digits (the port).
7. ``<n>``: a maximal digit run, plus ``.`` + a maximal digit run when a digit follows
   the dot.

Traceback cutting and location lines follow the exact rules written at the top of
``rust/core/src/cut.rs`` (the same text is in docs/ENGINE.md).
"""

from __future__ import annotations

import bisect
import re

import orjson

from .records import CollectionErrorRecord, TestRecord

# Distinct group keys tracked; a failure with a new key past this joins ``gother``.
MAX_TRACKED_GROUPS = 10_000
OTHER_GROUP_ID = "gother"
OTHER_GROUP_MESSAGE = "other causes"
U64_MAX = 2**64 - 1

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3

# --------------------------------------------------------------------------------------
# Character classes (ASCII only) and line helpers.

_WS = " \t\n\r\x0b\x0c"
_DIGITS = frozenset("0123456789")
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_WORD = _ALNUM | {"_"}
_IDENT_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_IDENT = _WORD | {"."}
_SEPARATORS = frozenset("/\\")
_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def _strip(s: str) -> str:
    return s.strip(_WS)


def _chomp(line: str) -> str:
    return line[:-1] if line.endswith("\r") else line


def _is_e_line(line: str) -> bool:
    return line.startswith("E ") or line == "E"


def capped(s: str, max_chars: int) -> str:
    """``s`` cut to ``max_chars`` code points: a longer one keeps ``max_chars - 1`` and
    ends with ``…`` (docs/ENGINE.md, *Messages*, *Traceback cutting* step 8)."""
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
    if first in _WS or first == ">" or _is_e_line(line):
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


def _native_frame_path(line: str) -> str | None:
    """The path of ``  File "path", line N, in f``."""
    t = line.lstrip(_WS)
    if not t.startswith('File "'):
        return None
    t = t[6:]
    close = t.find('"')
    if close == -1:
        return None
    after = t[close + 1 :]
    if not after.startswith(", line ") or len(after) < 8 or after[7] not in _DIGITS:
        return None
    return t[:close]


def _is_separator_line(line: str) -> bool:
    t = _strip(line)
    return len(t) >= 3 and len(t) % 2 == 1 and t == "_ " * (len(t) // 2) + "_"


_CHAIN_LINES = (
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
)


def _is_chain_line(line: str) -> bool:
    return _strip(line) in _CHAIN_LINES


_LIBRARY_MARKERS = ("/site-packages/", "/dist-packages/", "/_pytest/", "/pluggy/", "/lib/python3.")


def is_library_path(path: str) -> bool:
    """Library code: ``/`` + the path with ``\\`` read as ``/`` contains a library
    marker (site-packages, dist-packages, _pytest, pluggy, lib/python3.), or the path
    starts with ``<frozen ``."""
    if path.startswith("<frozen "):
        return True
    p = "/" + path.replace("\\", "/")
    return any(m in p for m in _LIBRARY_MARKERS)


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
    return len(line) - len(line.lstrip(_WS))


# --------------------------------------------------------------------------------------
# Traceback cutting.


def cut_traceback(text: str, max_lines: int, max_line_chars: int) -> tuple[str, int]:
    """Cut a failure's long representation down (docs/ENGINE.md, *Traceback cutting*).

    Returns (cut text joined by ``\\n``, number of input lines dropped). ``max_lines``
    (at least 3) is the most lines returned, marker lines included; a kept line longer
    than ``max_line_chars`` (at least 8) code points keeps ``max_line_chars - 1`` and
    ``…``. Exact rules: the top of ``rust/core/src/cut.rs``.
    """
    max_lines = max(max_lines, 3)
    max_line_chars = max(max_line_chars, 8)

    # Step 1.
    all_lines = [_chomp(line) for line in text.split("\n")]
    first = next((i for i, line in enumerate(all_lines) if _strip(line)), None)
    if first is None:
        return "", 0
    last = next(i for i in range(len(all_lines) - 1, -1, -1) if _strip(all_lines[i]))
    lines = all_lines[first : last + 1]
    n = len(lines)
    dropped = [False] * n

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
        if _strip(line):
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
                path = _native_frame_path(lines[j])
                if path is not None:
                    break
        if not section_end and path is not None and is_library_path(path):
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
        path = _native_frame_path(lines[i])
        if path is not None:
            indent = _indentation(lines[i])
            end = i + 1
            while end < n and not dropped[end] and _strip(lines[end]) and _indentation(lines[end]) > indent:
                end += 1
            if is_library_path(path):
                for j in range(i, end):
                    dropped[j] = True
            i = end
            continue
        if _is_java_library_frame(lines[i]):
            dropped[i] = True
        i += 1

    # Steps 4-5: before a frame's first `>` line, its last 3 non-blank lines and what
    # follows them stay; earlier lines go unless essential (or all blank).
    for start, end, _block, _section_end in frames:
        arrow = next((j for j in range(start, end) if not dropped[j] and lines[j].startswith(">")), None)
        if arrow is None:
            continue
        non_blank_seen = 0
        keep_from = start
        for j in range(arrow - 1, start - 1, -1):
            if not dropped[j] and _strip(lines[j]):
                non_blank_seen += 1
                if non_blank_seen == 3:
                    keep_from = j
                    break
        # Only blank lines before the kept context (pytest's blank line after a
        # separator): nothing worth a marker.
        if all(dropped[j] or not _strip(lines[j]) for j in range(start, keep_from)):
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

    # Step 8, and the output.
    out = []
    omitted = 0
    for p in pieces:
        if isinstance(p, int):
            omitted += p
            out.append(f"... [{p} lines omitted]")
        else:
            out.append(capped(p, max_line_chars))
    return "\n".join(out), omitted


def _add_gap(pieces: list[str | int], n: int) -> None:
    if pieces and isinstance(pieces[-1], int):
        pieces[-1] += n
    else:
        pieces.append(n)


# --------------------------------------------------------------------------------------
# Groups.


# The grammar as one ordered alternation, one capturing group per rule (explicit ASCII
# classes). `finditer` is exactly the scanner: it finds the leftmost position where a
# rule matches, tries the rules in order there, and goes on after the match; every
# other character is copied. The leading lookahead only skips positions where no rule
# can start (speed). Tested against the hand-written scanner of group.rs.
_W = "A-Za-z0-9_"
_H = "0-9A-Fa-f"
_P = "A-Za-z0-9_.~+@%\\-"  # the hyphen escaped: it must not form a range
_PS = _P + "/\\\\"
_PFX = "bBrRuUfF"
_RULES = (
    # 1 <str>: at a word start, or after a 1-2 letter string prefix at a word start.
    rf"""(?=['"])(?:(?<![{_W}])|(?<=[{_PFX}])(?<![{_W}][{_PFX}])|(?<=[{_PFX}]{{2}})(?<![{_W}][{_PFX}]{{2}}))"""
    r"""(?:'[^'\n]*'|"[^"\n]*")""",
    # 2 <path>: a maximal P∪S run (at a run start) with two non-empty parts. P and S
    # are disjoint, so possessive quantifiers change nothing but the speed.
    rf"(?<![{_PS}])[/\\]*+[{_P}]++(?:[/\\]++[{_P}]++)++[/\\]*+(?![{_PS}])",
    # 3 <uuid>
    rf"(?<![{_W}])[{_H}]{{8}}-[{_H}]{{4}}-[{_H}]{{4}}-[{_H}]{{4}}-[{_H}]{{12}}(?![{_W}])",
    # 4 <hex>
    rf"0[xX][{_H}]+",
    # 5 <hex>: a whole word of at least 8 hex digits, with a digit and a letter.
    rf"(?<![{_W}])(?=[{_H}]*[0-9])(?=[{_H}]*[A-Fa-f])[{_H}]{{8,}}(?![{_W}])",
    # 6 <addr>: four maximal 1-3 digit runs, not glued to a word or another `.digit`.
    rf"(?<![{_W}.])[0-9]{{1,3}}(?![0-9])\.[0-9]{{1,3}}(?![0-9])\.[0-9]{{1,3}}(?![0-9])\.[0-9]{{1,3}}"
    rf"(?![{_W}])(?!\.[0-9])(?::[0-9]+)?",
    # 7 <n>
    r"[0-9]+(?:\.[0-9]+)?",
)
_TOKEN = re.compile(rf"""(?=['"{_PS}])(?:""" + "|".join(f"({rule})" for rule in _RULES) + ")")
_PLACEHOLDERS = (None, "<str>", "<path>", "<uuid>", "<hex>", "<hex>", "<addr>", "<n>")


def normalize_message(message: str) -> str:
    """The message with its variable parts replaced by placeholders (grammar: module
    docstring; identical to ``normalize_message`` in ``group.rs``)."""
    return _normalize_prefix(message, None)


def normalize_capped(message: str, max_chars: int) -> str:
    """``capped(normalize_message(message), max_chars)``: the message of a group key
    (docs/ENGINE.md, *Groups*), without normalising more of a long message than needed."""
    return capped(_normalize_prefix(message, max_chars), max_chars)


def _normalize_prefix(message: str, limit: int | None) -> str:
    """The normalised message, or a prefix of it longer than ``limit`` characters (the
    scan stops there; each output character depends only on the input)."""
    out: list[str] = []
    out_chars = 0
    pos = 0
    for m in _TOKEN.finditer(message):
        start = m.start()
        if start > pos:
            out.append(message[pos:start])
            out_chars += start - pos
        placeholder = _PLACEHOLDERS[m.lastindex]
        out.append(placeholder)
        out_chars += len(placeholder)
        pos = m.end()
        if limit is not None and out_chars > limit:
            return "".join(out)
    out.append(message[pos:])
    return "".join(out)


def _fnv1a64(data: bytes) -> int:
    h = _FNV_OFFSET
    for b in data:
        h = ((h ^ b) * _FNV_PRIME) & U64_MAX
    return h


def _key_hash(exception: str, normalized: str) -> int:
    return _fnv1a64(exception.encode("utf-8", "surrogatepass") + b"\0" + normalized.encode("utf-8", "surrogatepass"))


def _group_id(key_hash: int) -> str:
    return f"g{key_hash >> 32:08x}"


def group_key(exception: str | None, message: str) -> tuple[str, str]:
    """(group id, normalised message) of a failure (docs/ENGINE.md, *Groups*).

    The id is ``g`` + the first 8 lowercase hex digits of FNV-1a 64 of
    UTF-8(``exception or ""`` + ``\\0`` + normalised message); ``None`` and ``""``
    give the same id.
    """
    normalized = normalize_message(message)
    return _group_id(_key_hash(exception or "", normalized)), normalized


# --------------------------------------------------------------------------------------
# Messages and exceptions.


def _first_meaningful_line(s: str) -> str | None:
    for line in s.split("\n"):
        t = line.strip(_WS)
        if t:
            return t
    return None


def _first_e_line(s: str) -> str | None:
    for line in s.split("\n"):
        t = line.strip(_WS)
        if t.startswith("E "):
            return t[2:].strip(_WS)
    return None


def _split_exception_prefix(line: str) -> tuple[str, str] | None:
    """``^([A-Za-z_][A-Za-z0-9_.]*): (.*)$`` -> (exception, rest)."""
    if not line or line[0] not in _IDENT_START:
        return None
    i = 1
    n = len(line)
    while i < n and line[i] in _IDENT:
        i += 1
    if line[i : i + 2] == ": ":
        return line[:i], line[i + 2 :]
    return None


def _is_identifier(s: str) -> bool:
    return bool(s) and s[0] in _IDENT_START and all(c in _IDENT for c in s[1:])


def _trailing_exception(line: str) -> str | None:
    """pytest's final location line ``^\\S.*:[0-9]+: ([A-Za-z_][A-Za-z0-9_.]*)$``."""
    if not line or line[0] in _WS:
        return None
    sep = line.rfind(": ")
    if sep == -1:
        return None
    name = line[sep + 2 :]
    if not _is_identifier(name):
        return None
    digits_start = sep
    while digits_start > 0 and line[digits_start - 1] in _DIGITS:
        digits_start -= 1
    colon = digits_start - 1
    if digits_start < sep and colon >= 1 and line[colon] == ":":
        return name
    return None


def describe(exception: str | None, message: str | None, text: str | None) -> tuple[str | None, str]:
    """(exception, message line) of a failure or collection error (docs/ENGINE.md,
    *Messages and exceptions*); the line is not capped yet. ``""`` counts as no
    exception."""
    text = text or ""
    line = None
    if message is not None:
        line = _first_e_line(message) or _first_meaningful_line(message)
    if line is None:
        line = _first_e_line(text) or _first_meaningful_line(text) or ""
    if exception:
        prefix = exception + ": "
        if line.startswith(prefix):
            line = line[len(prefix) :]
    else:
        split = _split_exception_prefix(line)
        if split is not None:
            exception, line = split
        else:
            exception = None
            for raw in reversed(text.split("\n")):
                found = _trailing_exception(_chomp(raw))
                if found is not None:
                    exception = found
                    break
    # A bare `raise ValueError` / `<failure type="java.lang.AssertionError"/>`: the line
    # only repeats the exception.
    if exception is not None and line == exception:
        return exception, ""
    return exception, line


def _location_from_text(text: str) -> dict | None:
    for raw in reversed(text.split("\n")):
        loc = parse_location(_chomp(raw))
        if loc is not None:
            return {"path": loc[0], "line": loc[1]}
    return None


# --------------------------------------------------------------------------------------
# The builder.


class _Group:
    __slots__ = ("id", "exception", "message", "count", "first_seq", "examples")

    def __init__(self, group_id: str, exception: str | None, message: str, first_seq: int) -> None:
        self.id = group_id
        self.exception = exception
        self.message = message
        self.count = 0
        self.first_seq = first_seq
        self.examples: list[str] = []


class SummaryBuilder:
    """Accumulates records, in input order, into a summary (docs/ENGINE.md, *The
    builder*); the twin of ``SummaryBuilder`` in ``rust/core/src/summary.rs``.

    ``budgets``: a dict with the nine budget names of ``models.Budgets`` (ints).
    Memory stays bounded by the budgets: counts, the first ``max_failures`` failures
    (only these get their traceback cut), at most ``group_limit`` groups (default
    10,000) each with ``max_examples`` node ids, the ``max_slowest`` slowest tests, the
    first ``max_collection_errors`` collection errors. There is no ``merge``: several
    files are fed one after the other.
    """

    def __init__(self, budgets: dict[str, int], group_limit: int = MAX_TRACKED_GROUPS) -> None:
        self._max_failures = budgets["max_failures"]
        self._max_traceback_lines = budgets["max_traceback_lines"]
        self._max_line_chars = budgets["max_line_chars"]
        self._max_message_chars = budgets["max_message_chars"]
        self._max_groups = budgets["max_groups"]
        self._max_examples = budgets["max_examples"]
        self._max_slowest = budgets["max_slowest"]
        self._max_collection_errors = budgets["max_collection_errors"]
        self._group_limit = group_limit
        self._seq = 0
        self._counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0, "xfailed": 0, "xpassed": 0}
        self._flaky = 0
        self._duration_us = 0
        self._failures_total = 0
        self._failures: list[dict] = []
        self._traceback_omitted = 0
        self._groups: dict[tuple[str, str], _Group] = {}
        self._normalized_cache: dict[str, str] = {}
        self._other = _Group(OTHER_GROUP_ID, None, OTHER_GROUP_MESSAGE, 0)
        self._collection_total = 0
        self._collection_errors: list[dict] = []
        # (-duration_us, seq, node_id), ascending = largest first, ties by input order.
        self._slowest: list[tuple[int, int, str]] = []
        # A test must last longer than this to enter the list (0 durations never do;
        # with max_slowest 0 nothing does).
        self._slow_floor = 0 if self._max_slowest > 0 else U64_MAX
        self._text_bytes_omitted = 0
        self._output_bytes_omitted = 0

    def push(self, item: TestRecord | CollectionErrorRecord) -> None:
        """Add one record, in report order (cheap for a passing test: a few counters
        and one comparison)."""
        seq = self._seq
        self._seq = seq + 1
        if type(item) is CollectionErrorRecord:
            self._push_collection_error(item)
            return
        outcome = item.outcome
        self._counts[outcome] += 1
        if item.flaky:
            self._flaky += 1
        duration = item.duration_us
        self._duration_us += duration
        if outcome == "failed" or outcome == "error":
            self._push_failure(item, seq)
        if duration > self._slow_floor:
            self._add_slow(duration, seq, item.node_id)

    def _add_slow(self, duration_us: int, seq: int, node_id: str) -> None:
        """Insert a test longer than ``_slow_floor`` (later tests lose ties, so a full
        list only admits a strictly longer one)."""
        slowest = self._slowest
        bisect.insort(slowest, (-duration_us, seq, node_id))
        cap = self._max_slowest
        if len(slowest) >= cap:
            del slowest[cap:]
            self._slow_floor = -slowest[-1][0]

    def _push_failure(self, record: TestRecord, seq: int) -> None:
        self._failures_total += 1
        self._text_bytes_omitted += record.text_bytes_omitted
        self._output_bytes_omitted += record.output_bytes_omitted
        exception, line = describe(record.exception, record.message, record.text)
        group_id = self._add_to_group(exception, line, seq, record.node_id)
        message = capped(line, self._max_message_chars)
        if len(self._failures) < self._max_failures:
            text = record.text or ""
            if record.path is not None:
                location = {"path": record.path, "line": record.line}
            else:
                location = _location_from_text(text)
            traceback, omitted = cut_traceback(text, self._max_traceback_lines, self._max_line_chars)
            self._traceback_omitted += omitted
            self._failures.append(
                {
                    "node_id": record.node_id,
                    "outcome": record.outcome,
                    "phase": record.phase,
                    "exception": exception,
                    "message": message,
                    "location": location,
                    "traceback": traceback,
                    "stdout": record.stdout or None,
                    "stderr": record.stderr or None,
                    "group": group_id,
                }
            )

    def _add_to_group(self, exception: str | None, message: str, seq: int, node_id: str) -> str:
        # The key's message: the whole line normalised, then capped like a message;
        # it is also the group's listed message.
        cache = self._normalized_cache
        normalized = cache.get(message)
        if normalized is None:
            if len(cache) >= 4096:  # bounded: repeated messages are usually close together
                cache.clear()
            normalized = cache[message] = normalize_capped(message, self._max_message_chars)
        key = (exception or "", normalized)
        group = self._groups.get(key)
        if group is None:
            if len(self._groups) < self._group_limit:
                group = _Group(_group_id(_key_hash(key[0], normalized)), exception or None, normalized, seq)
                self._groups[key] = group
            else:
                group = self._other
                if group.count == 0:
                    group.first_seq = seq
        group.count += 1
        if len(group.examples) < self._max_examples:
            group.examples.append(node_id)
        return group.id

    def _push_collection_error(self, record: CollectionErrorRecord) -> None:
        self._counts["error"] += 1
        self._collection_total += 1
        self._text_bytes_omitted += record.text_bytes_omitted
        if len(self._collection_errors) < self._max_collection_errors:
            exception, line = describe(record.exception, record.message, record.text)
            message = capped(line, self._max_message_chars)
            self._collection_errors.append({"path": record.path, "exception": exception, "message": message})

    def finish(self, format: str, files: list[str]) -> bytes:
        """The canonical summary JSON bytes (docs/ENGINE.md, *Summary JSON*).

        ``format``: ``junit`` or ``pytest-json``; ``files``: the input paths as given.
        """
        c = self._counts
        groups = list(self._groups.values())
        if self._other.count:
            groups.append(self._other)
        groups.sort(key=lambda g: (-g.count, g.first_seq))
        listed_groups = groups[: self._max_groups]
        summary = {
            "format": format,
            "files": list(files),
            "counts": {
                "total": sum(c.values()),
                "passed": c["passed"],
                "failed": c["failed"],
                "errors": c["error"],
                "skipped": c["skipped"],
                "xfailed": c["xfailed"],
                "xpassed": c["xpassed"],
                "flaky": self._flaky,
            },
            "duration_s": min(self._duration_us, U64_MAX) / 1e6,
            "failures": self._failures,
            "groups": [
                {
                    "id": g.id,
                    "count": g.count,
                    "exception": g.exception,
                    "message": g.message,
                    "examples": g.examples,
                }
                for g in listed_groups
            ],
            "collection_errors": self._collection_errors,
            "slowest": [{"node_id": node_id, "duration_s": -neg / 1e6} for neg, _seq, node_id in self._slowest],
            "omitted": {
                "failures": self._failures_total - len(self._failures),
                "groups": len(groups) - len(listed_groups),
                "collection_errors": self._collection_total - len(self._collection_errors),
                "traceback_lines": self._traceback_omitted,
                "output_bytes": min(self._output_bytes_omitted, U64_MAX),
                "text_bytes": min(self._text_bytes_omitted, U64_MAX),
            },
        }
        return orjson.dumps(summary)
