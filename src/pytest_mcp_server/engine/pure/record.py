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
