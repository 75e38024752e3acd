"""Subtests in JUnit XML, pure backend (docs/ENGINE.md, *Subtests*; twin of
``rust/core/src/junit/subtests.rs``): the plugin's property name, pytest's parent marker
and the per-case state ``_CaseSubtests``. The rules that emit the subtests' records
(``failure_starts``, ``emit_failed_subtest``, ``close_subtests``) are methods of the
parser in ``junit/__init__.py`` (in Rust an ``impl Junit`` block in subtests.rs), since
they use the parser's emit and retry state.
"""

from __future__ import annotations

import re
from collections import deque

from .lexer import _attr

# The property name the server's pytest plugin writes for each subtest report.
SUBTEST_PROPERTY = "pytest_mcp_server.subtest"
# Labels kept per case: beyond this many failed subtests, the later ones get "".
_MAX_SUBTEST_LABELS = 10_000
_PARENT_MARKER = re.compile(r"contains [0-9]+ failed subtests?")


def is_parent_marker(message: str) -> bool:
    """pytest's message for a parent whose subtests failed (``_pytest/subtests.py``,
    ``pytest_report_teststatus``): ``contains N failed subtest`` + ``s`` when N > 1."""
    return _PARENT_MARKER.fullmatch(message) is not None


def _parent_message(n: int) -> str:
    return f"contains {n} failed subtest{'s' if n > 1 else ''}"


class _CaseSubtests:
    """The subtests of the open testcase (docs/ENGINE.md, *Subtests*; twin of
    ``rust/core/src/junit/subtests.rs``): ``<failure>`` children seen, failed subtests
    emitted, passed subtests and failed labels named by the plugin's properties."""

    __slots__ = ("failures", "failed", "passed", "labels")

    def __init__(self) -> None:
        self.failures = 0
        self.failed = 0
        self.passed = 0
        self.labels: deque[str] = deque()

    def read_property(self, attrs: dict[str, str]) -> None:
        """One ``<property>`` of the case: only the plugin's subtest property counts."""
        if _attr(attrs, "name") != SUBTEST_PROPERTY:
            return
        value = _attr(attrs, "value") or ""
        outcome, _, label = value.partition(" ")
        if outcome == "passed":
            self.passed += 1
        elif outcome == "failed":
            self.labels.append(label if len(self.labels) < _MAX_SUBTEST_LABELS else "")
