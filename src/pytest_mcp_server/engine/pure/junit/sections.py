"""pytest's captured-output sections in ``system-out``/``system-err``, pure backend
(docs/ENGINE.md, *Logs*; twin of ``rust/core/src/junit/sections.rs``): ``_Sections``
routes the text of one element, as it streams in, to the stream its section names.
"""

from __future__ import annotations

from ..text import HeadTail

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
