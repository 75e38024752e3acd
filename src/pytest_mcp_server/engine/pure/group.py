"""Failure groups: the key normaliser and the group id; the twin of
``rust/core/src/group.rs``, rule for rule.

The normaliser grammar is written once, in docs/ENGINE.md, *Groups* (the numbered rules
``<str>`` ... ``<n>``); both scanners implement it and ``tests/engine/test_rules_parity.py``
runs them against each other.
"""

from __future__ import annotations

import re

from .cut import capped
from .text import U64_MAX

# Id of the group that collects failures past the tracked-groups limit.
OTHER_GROUP_ID = "gother"

# FNV-1a 64 offset basis and prime (docs/ENGINE.md, *Groups*).
_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3

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
_OPENS = rf"""(?=['"])(?:(?<![{_W}])|(?<=[{_PFX}])(?<![{_W}][{_PFX}])|(?<=[{_PFX}]{{2}})(?<![{_W}][{_PFX}]{{2}}))"""
_NAME = "[A-Za-z_][A-Za-z0-9_.]*+"
_RULES = (
    # 1 (kept): a string that opens as in rule 1 and holds an identifier (a type or
    # attribute name) is copied whole.
    _OPENS + rf"""(?:'{_NAME}'|"{_NAME}")""",
    # 1 <str>: at a word start, or after a 1-2 letter string prefix at a word start.
    _OPENS + r"""(?:'[^'\n]*'|"[^"\n]*")""",
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
    # 8 <obj>: `<` + a letter or `_`, up to the next `>` (no `<` or newline between).
    r"<[A-Za-z_][^<>\n]*+>",
    # 9 Name(...): at a word start, a dotted name and a parenthesis with no parenthesis
    # or newline inside (the name is kept).
    rf"(?<![{_W}]){_NAME}\([^()\n]*+\)",
    # 10 <bool>
    rf"(?<![{_W}])(?:True|False)(?![{_W}])",
)
_TOKEN = re.compile(rf"""(?=['"{_PS}<])(?:""" + "|".join(f"({rule})" for rule in _RULES) + ")")
# Indexed by the number of the alternative (= its capturing group) that matched; None:
# the match is copied (a kept string), "(...)": the name before the parenthesis is kept.
_PLACEHOLDERS = (None, None, "<str>", "<path>", "<uuid>", "<hex>", "<hex>", "<addr>", "<n>", "<obj>", "(...)", "<bool>")


def normalize_message(message: str) -> str:
    """The message with its variable parts replaced by placeholders (grammar:
    docs/ENGINE.md, *Groups*; identical to ``normalize_message`` in ``group.rs``)."""
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
        placeholder = _PLACEHOLDERS[m.lastindex or 0]  # never 0: each rule is a group
        if placeholder is None:
            placeholder = m.group()
        elif placeholder == "(...)":
            placeholder = m.group()[: m.group().index("(")] + placeholder
        out.append(placeholder)
        out_chars += len(placeholder)
        pos = m.end()
        if limit is not None and out_chars > limit:
            return "".join(out)
    out.append(message[pos:])
    return "".join(out)


"""The exception whose key at an assertion site folds its values (``fold_values``)."""
VALUE = "<v>"
"""What ``fold_values`` writes for each value."""
_OPENERS = "([{"
_CLOSERS = ")]}"
_VALUE_WORDS = frozenset({"None", "True", "False"})
_NAME_START = re.compile(r"[A-Za-z_]")
_DOTTED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_WORD_CHAR = re.compile(r"[A-Za-z0-9_]")


def fold_values(normalized: str) -> str:
    """A normalised assertion message with every value folded to ``<v>`` (the key of an
    ``AssertionError`` at an assertion site; grammar: docs/ENGINE.md, *Groups*, value
    folding; identical to ``fold_values`` in ``group.rs``). One left-to-right scan, ASCII
    classes: a bracket ``(``, ``[`` or ``{`` up to its matching closer (the three kinds
    nest as one depth; an unclosed one runs to the end), with the dotted name right
    before it at a word start; ``<`` + a letter or ``_`` up to its matching ``>`` (``<``
    and ``>`` nest); a quote at a word start up to the same quote on the line; and the
    words ``None``/``True``/``False``. Everything else is copied."""
    out: list[str] = []
    angles = _matching_angles(normalized)
    i = 0
    n = len(normalized)
    while i < n:
        c = normalized[i]
        word_start = i == 0 or not _WORD_CHAR.match(normalized[i - 1])
        if word_start and _NAME_START.match(c):
            name = _DOTTED_NAME.match(normalized, i)
            assert name is not None
            end = name.end()
            if end < n and normalized[end] in _OPENERS:
                out.append(VALUE)
                i = _bracket_end(normalized, end)
            else:
                out.append(VALUE if name.group() in _VALUE_WORDS else name.group())
                i = end
            continue
        if c in _OPENERS:
            out.append(VALUE)
            i = _bracket_end(normalized, i)
            continue
        if c == "<" and i + 1 < n and _NAME_START.match(normalized[i + 1]) and i in angles:
            out.append(VALUE)
            i = angles[i] + 1
            continue
        if c in "'\"" and word_start:
            close = normalized.find(c, i + 1)
            if close != -1 and normalized.find("\n", i + 1, close) == -1:
                out.append(VALUE)
                i = close + 1
                continue
        out.append(c)
        i += 1
    return "".join(out)


def _matching_angles(text: str) -> dict[int, int]:
    """The index of the ``>`` that closes each ``<`` of ``text`` that is closed (``<`` and
    ``>`` nest), in one pass: the same as counting depth forward from each ``<``."""
    matches: dict[int, int] = {}
    if "<" not in text:
        return matches
    open_at: list[int] = []
    for j, c in enumerate(text):
        if c == "<":
            open_at.append(j)
        elif c == ">" and open_at:
            matches[open_at.pop()] = j
    return matches


def _bracket_end(text: str, start: int) -> int:
    """The index after the closer matching the opener at ``start`` (any of ``)]}``
    closes one depth of any of ``([{``), or ``len(text)`` when it is never closed."""
    depth = 0
    for j in range(start, len(text)):
        if text[j] in _OPENERS:
            depth += 1
        elif text[j] in _CLOSERS:
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


def key_hash(exception: str, normalized: str, where: str | None = None) -> int:
    """FNV-1a 64 of UTF-8(``exception`` + ``\\0`` + ``normalized``), with
    ``where`` + ``\\0`` before ``normalized`` when a frame or site is given."""
    data = exception.encode("utf-8", "surrogatepass") + b"\0"
    if where is not None:
        data += where.encode("utf-8", "surrogatepass") + b"\0"
    data += normalized.encode("utf-8", "surrogatepass")
    h = _FNV_OFFSET
    for b in data:
        h = ((h ^ b) * _FNV_PRIME) & U64_MAX
    return h


def group_id(hash: int) -> str:
    """The group id of a key hash: ``g`` + its first 8 lowercase hex digits."""
    return f"g{hash >> 32:08x}"


def group_key(exception: str | None, message: str, where: str | None = None) -> tuple[str, str]:
    """(group id, normalised message) of a failure (docs/ENGINE.md, *Groups*).

    The id is ``g`` + the first 8 lowercase hex digits of FNV-1a 64 of the key's UTF-8;
    ``None`` and ``""`` exceptions give the same id. ``where``: the frame (``path:line``)
    the failure is grouped by, if any: the key is then ``exception + \\0 + where + \\0``,
    whatever the message (a fingerprint); without one, ``exception + \\0`` + the
    normalised message with its values folded (``fold_values``). The message returned is
    the normalised one either way.
    """
    normalized = normalize_message(message)
    if where is not None:
        return group_id(key_hash(exception or "", "", where)), normalized
    return group_id(key_hash(exception or "", fold_values(normalized), None)), normalized
