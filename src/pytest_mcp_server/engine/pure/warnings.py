"""The warnings of a report log, grouped as answers show them; the twin of
``rust/core/src/warnings.rs``, rule for rule (docs/ENGINE.md, *Warnings*).

A warning is grouped by its category and the first line of its message; pytest's
unhandled-exception warnings (``EXCEPTION_WARNINGS``) by their category, their
exception line and the innermost frame of the traceback their message carries (the
project's, else the innermost), since their location is pytest's own file. Each group
keeps its count, up to ``max_warning_locations`` distinct locations (``path:line`` as
frames are shown, *Project code*) and, for an exception warning, the end of its
traceback: its last ``max_warning_frames`` frames (the project's, when it has any)
and the exception line. Groups are listed in the order first seen, the first
``max_warning_groups``; distinct warnings beyond ``TRACKED_KEYS`` are only counted.
"""

from __future__ import annotations

from typing import Any

from .project import LIBRARY, ProjectCode, classify, display_path
from .text import py_strip

TRACKED_KEYS = 10_000
"""Distinct warnings grouped one by one; beyond, new ones are counted in ``omitted`` only
(and at most this many of them): memory stays bounded."""
EXCEPTION_WARNINGS = ("PytestUnhandledThreadExceptionWarning", "PytestUnraisableExceptionWarning")
"""pytest's warnings for an exception raised where no test sees it (a thread, ``__del__``)."""
_TRACEBACK_HEAD = "Traceback (most recent call last):"
_FRAME_HEAD = '  File "'


class WarningGroups:
    """The warnings read so far, grouped. ``budgets`` needs ``max_warning_groups``,
    ``max_warning_locations``, ``max_warning_chars`` and ``max_warning_frames``;
    ``project`` decides how paths are shown and which frames are the project's."""

    def __init__(self, budgets: dict[str, int], project: ProjectCode | None) -> None:
        self.budgets = budgets
        self.project = project
        self.total = 0
        self.groups: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.untracked: set[tuple[str, str, str]] = set()

    def add(self, category: str, text: str, location: tuple[str, int] | None) -> None:
        """One warning: its category's name, its message, and where it was raised
        (``(filename, lineno)``, None when the report does not say)."""
        self.total += 1
        message = first_line(text, self.budgets["max_warning_chars"])
        shown = f"{display_path(location[0], self.project)}:{location[1]}" if location is not None else None
        traceback = None
        key = (category, message, "")
        if category in EXCEPTION_WARNINGS:
            traceback, innermost, exception = self._cut_traceback(text)
            shown = innermost or shown
            key = (category, exception, shown or "")
        known = self.groups.get(key)
        if known is not None:
            known["count"] += 1
            locations = known["locations"]
            if shown is not None and shown not in locations and len(locations) < self.budgets["max_warning_locations"]:
                locations.append(shown)
        elif len(self.groups) < TRACKED_KEYS:
            locations = [shown] if shown is not None and self.budgets["max_warning_locations"] else []
            self.groups[key] = {
                "category": category,
                "message": message,
                "count": 1,
                "locations": locations,
                "traceback": traceback,
            }
        elif len(self.untracked) < TRACKED_KEYS:
            self.untracked.add(key)

    def merge(self, other: WarningGroups) -> None:
        """``other``'s warnings after these (a later file's): its groups in their order,
        counts added, locations after these within the budget."""
        self.total += other.total
        cap = self.budgets["max_warning_locations"]
        for key, group in other.groups.items():
            known = self.groups.get(key)
            if known is not None:
                known["count"] += group["count"]
                for shown in group["locations"]:
                    if shown not in known["locations"] and len(known["locations"]) < cap:
                        known["locations"].append(shown)
            elif len(self.groups) < TRACKED_KEYS:
                self.groups[key] = group
            elif len(self.untracked) < TRACKED_KEYS:
                self.untracked.add(key)
        for key in other.untracked:
            if len(self.untracked) < TRACKED_KEYS and key not in self.groups:
                self.untracked.add(key)

    def summary(self) -> dict[str, Any]:
        """``{"total", "groups": [{"category", "message", "count", "locations",
        "traceback"}], "omitted"}``: the groups listed first seen first."""
        listed = list(self.groups.values())[: self.budgets["max_warning_groups"]]
        omitted = len(self.groups) - len(listed) + len(self.untracked)
        return {"total": self.total, "groups": listed, "omitted": omitted}

    def _cut_traceback(self, text: str) -> tuple[str | None, str | None, str]:
        """(the end of the last Python traceback in ``text``: its last frames, the
        project's preferred, each with its source line, then its exception line; the
        ``path:line`` of its innermost kept frame; its exception line). Without a
        traceback: (None, None, the message's first line)."""
        chars = self.budgets["max_warning_chars"]
        start = text.rfind(_TRACEBACK_HEAD)
        if start < 0:
            return None, None, first_line(text, chars)
        frames: list[tuple[str, str, str, bool]] = []  # (path:line, function, source line, the project's)
        exception = ""
        lines = text[start:].split("\n")[1:]
        for i, line in enumerate(lines):
            frame = frame_line(line)
            if frame is not None:
                path, number, function = frame
                following = lines[i + 1] if i + 1 < len(lines) else ""
                code = py_strip(following) if following.startswith("    ") else ""
                shown = f"{display_path(path, self.project)}:{number}"
                frames.append((shown, function, code, classify(path, self.project) != LIBRARY))
            elif line and not line.startswith(" "):
                exception = first_line(line, chars)
                break
        pool = [f for f in frames if f[3]] or frames
        kept = pool[max(len(pool) - self.budgets["max_warning_frames"], 0) :]
        out: list[str] = []
        for where, function, code, _ in kept:
            out.append(f"{where} in {function}")
            if code:
                out.append("    " + code)
        out.append(exception)
        return "\n".join(out), (kept[-1][0] if kept else None), exception


def first_line(text: str, chars: int) -> str:
    """The first line of ``text`` stripped (Python's whitespace), at most ``chars``
    characters (code points): a longer one keeps ``chars - 3`` and ends with ``...``."""
    line = py_strip(py_strip(text).split("\n", 1)[0])
    return line if len(line) <= chars else line[: max(chars - 3, 0)] + "..."


def frame_line(line: str) -> tuple[str, str, str] | None:
    """A Python traceback's frame line, ``  File "PATH", line N, in NAME``, as (PATH, N,
    NAME); PATH runs to the last ``", line N, in `` of the line (N ASCII digits); None
    for any other line."""
    if not line.startswith(_FRAME_HEAD):
        return None
    end = len(line)
    while True:
        at = line.rfind('", line ', len(_FRAME_HEAD), end)
        if at < 0:
            return None
        digits = at + len('", line ')
        stop = digits
        while stop < len(line) and "0" <= line[stop] <= "9":
            stop += 1
        if stop > digits and line.startswith(", in ", stop):
            return line[len(_FRAME_HEAD) : at], line[digits:stop], line[stop + len(", in ") :]
        end = at + len('", line ') - 1  # look further left
