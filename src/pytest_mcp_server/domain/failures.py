"""Why a tool call produced no result: ``ToolFailure`` and its structured detail.

Raised by the validation and the workflows; the MCP adapter turns it into a tool error
(``is_error``) whose text and structured content are shaped from the ``ToolFailureDetail``
(``adapters.mcp.structured.failure_fields``; the whole detail in the ``typed`` view).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import field_serializer

from pytest_mcp_server.domain.flaky import FlakyTest
from pytest_mcp_server.domain.selection import Selection
from pytest_mcp_server.engine.models import ReportSummary, _Frozen

FailureKind = Literal[
    "invalid_argument",
    "timeout",
    "usage_error",
    "internal_error",
    "crashed",
    "pytest_missing",
    "coverage_missing",
    "report_error",
]
"""Why a tool call did not produce a result.

* ``invalid_argument``: refused before any process started (``field`` names the argument).
* ``timeout``: pytest ran longer than ``timeout_s``; its process group was killed.
* ``usage_error``: pytest exited 4 (bad option or node id it could not find).
* ``internal_error``: pytest exited 3, or the server itself failed.
* ``crashed``: pytest died from a signal, exited with a code pytest never uses, or wrote no report.
* ``pytest_missing``: the project's interpreter cannot import pytest.
* ``coverage_missing``: ``coverage`` was asked for, but the project's interpreter lacks
  coverage.py or pytest-cov (the message names which).
* ``report_error``: a report file cannot be summarised (``report_error_kind`` says why).
"""


class ToolFailureDetail(_Frozen):
    """What a failed tool call (``is_error``) says: its text and structured content are
    shaped from it (the whole detail, nulls left out, in the ``typed`` view).

    ``kind``: see ``FailureKind``. ``message``: what happened, where, what to do.
    ``field``: the refused argument (``invalid_argument``), e.g. ``node_ids[2]``.
    ``exit_code``: pytest's exit status, or ``None`` when it was killed or never ran;
    ``signal``: the signal that ended it (e.g. ``SIGKILL``). ``command``: the argv run;
    ``duration_s``: how long it ran, seconds.
    ``stdout_tail``/``stderr_tail``: the last bytes pytest wrote (bounded).
    ``report_error_kind``: the report engine's error kind (``report_error``).

    For ``timeout`` and ``crashed`` (when the event plugin saw it): ``running_test``,
    the node id of the test that was running when pytest was stopped or died, and
    ``running_for_s``, for how long, seconds; ``stack``, that test's stack at that
    moment as ``"<path>:<line> in <function>"`` lines, outermost first, cut to the
    test's own frames (``stacks.test_stack``); ``summary``, the tests that finished
    before (their counts and failures, from the event plugin's records through the
    report engine; None when none finished).

    For a call with ``repeat`` above 1, the message names the run that ended the call
    (``Run 3 of 4``) and ``runs_finished`` counts the runs that finished before it;
    ``flaky``: the tests whose outcome changed among those runs (``flaky.FlakyTest``,
    patterns only: ``failure`` null).
    ``selection``: for an ``affected`` call, the tests the map selected before pytest
    started (``affected.Selection``; ``total`` the suite as last collected in full);
    None otherwise.
    """

    kind: FailureKind
    message: str
    field: str | None = None
    exit_code: int | None = None
    signal: str | None = None
    command: list[str] | None = None
    duration_s: float | None = None
    stdout_tail: str | None = None
    stderr_tail: str | None = None
    report_error_kind: str | None = None
    running_test: str | None = None
    running_for_s: float | None = None
    stack: list[str] | None = None
    summary: ReportSummary | None = None
    runs_finished: int | None = None
    flaky: list[FlakyTest] | None = None
    selection: Selection | None = None

    @field_serializer("summary")
    def _summary_whole(self, summary: ReportSummary | None) -> dict[str, Any] | None:
        # The adapter dumps a detail with exclude_none; the summary's models require their
        # null fields (a failure's stdout), so it is dumped whole, as in a result.
        return None if summary is None else summary.model_dump(mode="json")


class ToolFailure(Exception):
    """A tool call that produced no result; carries a ``ToolFailureDetail``.

    ``fields`` are the optional fields of ``ToolFailureDetail`` (``field``,
    ``exit_code``, ``command`` ...); an unknown one raises ``pydantic.ValidationError``.
    """

    def __init__(self, kind: FailureKind, message: str, **fields: Any) -> None:
        self.detail = ToolFailureDetail(kind=kind, message=message, **fields)
        super().__init__(message)

    @property
    def kind(self) -> FailureKind:
        """The failure's ``FailureKind``."""
        return self.detail.kind


def invalid(field: str, reason: str) -> ToolFailure:
    """A refusal of one argument: ``ToolFailure('invalid_argument', '<field>: <reason>')``."""
    return ToolFailure("invalid_argument", f"{field}: {reason}", field=field)
