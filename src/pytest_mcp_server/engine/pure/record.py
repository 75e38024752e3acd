"""What a pure parser yields (mirrors ``rust/core/src/record.rs``; docs/ENGINE.md, *Records*)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# Severity for "worst wins": error > failed > xpassed > xfailed > skipped > passed.
SEVERITY = {"passed": 0, "skipped": 1, "xfailed": 2, "xpassed": 3, "failed": 4, "error": 5}


@dataclass(slots=True)
class TestRecord:
    """One test; failure details are only filled for ``failed``/``error``.

    ``duration_us`` is integer microseconds.
    """

    __test__ = False  # not a pytest test class

    node_id: str
    outcome: str = "passed"
    phase: str | None = None
    duration_us: int = 0
    flaky: bool = False
    exception: str | None = None
    message: str | None = None
    text: str | None = None
    path: str | None = None
    line: int | None = None
    stdout: str | None = None
    stderr: str | None = None
    # captured log records, one per line as pytest prints them; tail-capped like stdout
    log: str | None = None
    # the subtest label (``[msg] (i=1)``, ``""`` when unknown) when this is one subtest of ``node_id``
    subtest: str | None = None
    # pytest counted this test passed although its subtests failed (unittest's subTest);
    # the summary lists it failed and counts it in ``passed_with_failed_subtests``
    passed_with_failed_subtests: bool = False
    text_bytes_omitted: int = 0
    output_bytes_omitted: int = 0
    # the frames of ``text`` as a structured longrepr gives them, when ``text`` is its
    # whole rendering (docs/ENGINE.md, *Frames as data*); None: read from ``text``
    frames: ReprFrames | None = None


HEADER = "header"
"""A short-style entry's file location: the first line of its entry."""
LOCATION = "location"
"""Another entry's file location: the last line of its entry."""
SYNTAX_POSITION = "syntax_position"
"""A syntax error's position an exception line gives."""


@dataclass(slots=True)
class ReprFrame:
    """One frame of ``ReprFrames``: ``path`` as the report gives it, ``line``, ``at``
    the line of the text (numbered from 0) that shows it, ``kind`` what gave it
    (``HEADER``, ``LOCATION``, ``SYNTAX_POSITION``)."""

    path: str
    line: int
    at: int
    kind: str


@dataclass(slots=True)
class ReprFrames:
    """A failure's frames read from its structured ``longrepr``, not from the text
    rendered of it (docs/ENGINE.md, *Frames as data*; ``ReprFrames`` in
    ``rust/core/src/record.rs``): ``frames``, each traceback entry's file location and
    the syntax error positions its exception lines give, outermost first;
    ``boundaries``, the lines of the text that separate entries (``_ _ _ ...``, False)
    and the chain lines of a chained exception's descriptions (True), in order; ``root``,
    for a chained exception whose description holds a chain line, (the number of frames
    of its root cause, the offset in the text of that chain line), else None."""

    frames: list[ReprFrame]
    boundaries: list[tuple[int, bool]]
    root: tuple[int, int] | None = None


@dataclass(slots=True)
class CollectionErrorRecord:
    """A module or file that failed to collect."""

    path: str
    exception: str | None = None
    message: str | None = None
    text: str | None = None
    text_bytes_omitted: int = 0


# What a parser calls with each record, in report order.
Emit = Callable[[TestRecord | CollectionErrorRecord], None]
