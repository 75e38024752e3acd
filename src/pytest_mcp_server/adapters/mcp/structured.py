"""The structured content of each tool's answer, shaped from a workflow's result model
(the domain's models carry no serializers that reshape answers): the typed fields of
the answer views, and the full typed result of the ``typed`` view
(``adapters.mcp.views`` decides which a call sends).

The answer views' typed fields (``execute_fields``, ``discover_fields``,
``summarize_fields``, ``failure_fields``; their models ``ExecuteFields`` ... give the
published output schemas) are the few a program branches on, each cheap: an optional
one is left out rather than sent empty. Everything else a model needs is in the answer
text.

The ``typed`` view: ``execute_structured``: the summary cut to what the text shows
(``answer_summary``: failures without traceback and output tails, which the text
carries, one per entry of the text), the run's directory written once
(``with_run_dir``), fields that say nothing left out (``without_silent_fields``), and
with one run, no ``runs``/``flaky``. The other tools' results are sent as they are
(``discover_structured``, ``plain_structured``; a tool error's detail without nulls,
``failure_structured``).
"""

from __future__ import annotations

import os
from pathlib import PurePath
from typing import Any

from pydantic import BaseModel

from pytest_mcp_server.adapters.answer import cap_lines, failure_entries, slow_tests
from pytest_mcp_server.adapters.text import bytes_left_out_shown, traceback_lines_shown
from pytest_mcp_server.domain.coverage_answer import CoverageSummary
from pytest_mcp_server.domain.failures import FailureKind, ToolFailureDetail
from pytest_mcp_server.domain.flaky import FlakyTest
from pytest_mcp_server.domain.policy import FLAKY_LISTED_IN_ERRORS
from pytest_mcp_server.domain.selection import Selection
from pytest_mcp_server.domain.tools import DiscoverResult, ExecuteResult, RunStatus, SummarizeResult
from pytest_mcp_server.engine.models import Counts, Failure, Omitted, ReportSummary, _Frozen

RUN_DIR = "{run_dir}"
"""How ``with_run_dir`` writes the run's directory."""


def with_run_dir(values: list[str], report_path: str) -> list[str]:
    """``values`` (the argv, the summary's report files) with the run's directory (the
    directory of ``report_path``, where pytest wrote its reports and the server its
    event files) written ``RUN_DIR``: the structured content carries that path once,
    in ``report_path``, not once per report and event option."""
    run_dir = os.path.dirname(report_path)
    if not run_dir:
        return values
    return [value.replace(run_dir, RUN_DIR) for value in values]


def answer_failure(failure: Failure) -> tuple[Failure, int]:
    """A failure as the structured content gives it, and the UTF-8 bytes its message
    lost: ``traceback`` ``""`` (and its ``traceback_lines_omitted``,
    ``text_bytes_omitted`` and ``output_bytes_omitted`` 0: the text's ``Omitted`` line
    counts them; ``message_in_traceback`` false) and
    ``stdout``/``stderr``/``log`` null (the text carries them), the message capped per
    line at ``LINE_CHARS``."""
    message, cut = cap_lines(failure.message)
    update = {
        "message": message,
        "message_in_traceback": False,
        "traceback": "",
        "traceback_lines_omitted": 0,
        "stdout": None,
        "stderr": None,
        "log": None,
        "text_bytes_omitted": 0,
        "output_bytes_omitted": 0,
    }
    return failure.model_copy(update=update), cut


def answer_summary(summary: ReportSummary) -> ReportSummary:
    """The structured content's summary of an ``execute_tests`` answer, from the
    engine's ``summary``.

    ``failures``: the text's entries (``failure_entries``), with ``traceback`` ``""`` and
    ``stdout``/``stderr``/``log`` null (the text carries them), messages capped per line at
    ``LINE_CHARS``. ``groups``: their ``examples`` without the entries' node ids (the
    ids of a group's ``also in`` line). ``slowest``: the slow tests the text names
    (``answer.slow_tests``: of at least ``SLOW_S`` seconds, none when a test failed or
    errored or a file did not collect). ``omitted``:
    ``failures`` grows by the listed failures left without an entry (so
    ``len(failures) + omitted.failures`` is still every failed or errored test; each is
    counted in its group), ``traceback_lines`` covers only the tracebacks the text
    shows (``text.traceback_lines_shown``: the count of its ``Omitted`` line, the
    engine's per-failure counts of the entries in full not marked ``same_as``), and
    ``output_bytes`` and ``text_bytes`` only what the reader's caps dropped from what the
    text shows (``text.bytes_left_out_shown``), ``text_bytes`` with what the message caps
    cut. Counts, the groups' counts and collection errors are the engine's.
    """
    failures: list[Failure] = []
    text_cut = 0
    entries = failure_entries(summary)
    for failure, _ in entries:
        answered, cut = answer_failure(failure)
        text_cut += cut
        failures.append(answered)
    entry_ids = {failure.node_id for failure in failures}
    groups = [g.model_copy(update={"examples": [e for e in g.examples if e not in entry_ids]}) for g in summary.groups]
    omitted = summary.omitted
    output_bytes, text_bytes = bytes_left_out_shown(summary)
    return summary.model_copy(
        update={
            "failures": failures,
            "groups": groups,
            "slowest": slow_tests(summary),
            "omitted": Omitted(
                failures=omitted.failures + len(summary.failures) - len(entries),
                groups=omitted.groups,
                collection_errors=omitted.collection_errors,
                traceback_lines=traceback_lines_shown(summary),
                output_bytes=output_bytes,
                text_bytes=text_bytes + text_cut,
            ),
        }
    )


SUBTEST_COUNTS = ("subtests_passed", "subtests_failed", "passed_with_failed_subtests")
"""The counts that only say something in a run with subtests."""
SILENT_FAILURE_FIELDS = (
    "subtest",
    "message_in_traceback",
    "traceback",
    "traceback_lines_omitted",
    "stdout",
    "stderr",
    "log",
    "text_bytes_omitted",
    "output_bytes_omitted",
    "same_as",
)
"""A failure's fields that an answer's structured content leaves out when empty (null,
``""`` or 0: the traceback and output tails are in the text; ``same_as`` is null for
every entry but one the text writes ``same traceback as ...``)."""


def without_silent_fields(summary: dict[str, Any]) -> dict[str, Any]:
    """A dumped answer summary without what says nothing (each left-out field is the
    model's default, so the summary still validates as a ``ReportSummary``): the
    subtest counts when all are 0; a failure's empty ``subtest``, ``traceback``,
    ``stdout``, ``stderr`` and ``log``; when the groups budget cut no group, a group of
    one failure that is listed (the failure, whose ``group`` names it, says all the
    group would), and a group's empty ``examples``; a collection error's 0
    ``text_bytes_omitted``; empty ``collection_errors``, ``slowest``, ``unmatched``
    and ``truncated``; the 0
    counts of ``omitted`` (all of it when nothing was cut)."""
    counts = summary["counts"]
    if not any(counts.get(name) for name in SUBTEST_COUNTS):
        summary["counts"] = {k: v for k, v in counts.items() if k not in SUBTEST_COUNTS}
    summary["failures"] = [without_silent_failure_fields(f) for f in summary["failures"]]
    # Only when the groups budget cut none: then a failure whose group is not listed is
    # that group's only failure, never one of a group counted in ``omitted.groups``.
    singles = {f["group"] for f in summary["failures"]} if not summary["omitted"]["groups"] else set()
    summary["groups"] = [
        {k: v for k, v in g.items() if k != "examples" or v}
        for g in summary["groups"]
        if g["count"] > 1 or g["id"] not in singles
    ]
    if summary.get("collection_errors"):
        summary["collection_errors"] = [
            {k: v for k, v in ce.items() if k != "text_bytes_omitted" or v} for ce in summary["collection_errors"]
        ]
    for name in ("collection_errors", "slowest", "unmatched", "truncated"):
        if not summary.get(name, True):
            del summary[name]
    omitted = {k: v for k, v in summary["omitted"].items() if v}
    if omitted:
        summary["omitted"] = omitted
    else:
        del summary["omitted"]
    return summary


def without_silent_failure_fields(failure: dict[str, Any]) -> dict[str, Any]:
    """A dumped failure without its empty ``SILENT_FAILURE_FIELDS`` (see
    ``without_silent_fields``)."""
    return {k: v for k, v in failure.items() if not (k in SILENT_FAILURE_FIELDS and not v)}


def execute_structured(result: ExecuteResult) -> dict[str, Any]:
    """The structured content of an ``execute_tests`` answer (JSON types), shaped as
    the module docstring says; every field still validates as ``ExecuteResult``'s."""
    out: dict[str, Any] = result.model_dump(mode="json", exclude={"summary", "flaky", "command", "coverage"})
    answered = answer_summary(result.summary)
    files = with_run_dir(answered.files, result.report_path)
    out["summary"] = without_silent_fields(answered.model_copy(update={"files": files}).model_dump(mode="json"))
    out["command"] = with_run_dir(result.command, result.report_path)
    coverage = result.coverage
    if coverage is not None:
        data_path = coverage.data_path and with_run_dir([coverage.data_path], result.report_path)[0]
        out["coverage"] = coverage.model_copy(update={"data_path": data_path}).model_dump(mode="json")
    else:
        out["coverage"] = None
    if result.suspects is None:  # not a measured run with failures: nothing to name
        out.pop("suspects", None)
    if result.cold_start is None:  # the run started warm, or there was no spare: nothing to say
        out.pop("cold_start", None)
    if result.selection is None:  # a call without affected answers as before it existed
        out.pop("selection", None)
    else:
        # pytest_started only when it says something (a call that selected nothing and still ran pytest)
        exclude = {"tests"} if result.selection.pytest_started else {"tests", "pytest_started"}
        out["selection"] = result.selection.model_dump(mode="json", exclude=exclude)
    if result.runs == 1:  # a single run answers as before repeat existed
        out.pop("runs", None)
    else:
        flaky = []
        for test in result.flaky:
            dumped = test.model_dump(mode="json")
            if test.failure is not None:
                # the text shows a flaky test's failure in full: its run's same_as points nowhere here
                shown = test.failure.model_copy(update={"same_as": None})
                dumped["failure"] = without_silent_failure_fields(answer_failure(shown)[0].model_dump(mode="json"))
            flaky.append(dumped)
        out["flaky"] = flaky
    return {name: out[name] for name in ExecuteResult.model_fields if name in out}


def discover_structured(result: DiscoverResult) -> dict[str, Any]:
    """The structured content of a ``discover_tests`` answer: the result in JSON types,
    without ``selection`` when the call was not ``affected``."""
    out = result.model_dump(mode="json")
    if result.selection is None:
        out.pop("selection", None)
    if result.cold_start is None:
        out.pop("cold_start", None)
    return out


def plain_structured(result: BaseModel) -> dict[str, Any]:
    """The structured content of a result sent as it is: the model in JSON types."""
    return result.model_dump(mode="json")


def failure_structured(detail: ToolFailureDetail) -> dict[str, Any]:
    """The structured content of a tool error in the ``typed`` view: the detail in JSON
    types, nulls left out."""
    return detail.model_dump(mode="json", exclude_none=True)


# --------------------------------------------------------------------------------------
# The answer views' typed fields


class SelectionNumbers(_Frozen):
    """An ``affected`` call's selection in numbers: ``selected`` of ``total`` tests. The
    counts per reason are the answer text's (``Affected: 3 of 193 tests (2 changed, 1
    new)``) and the ``typed`` view's (``Selection.reasons``): about 8 o200k tokens more
    here, which a program that branches on the selection does not need."""

    selected: int
    total: int


class CoverageTotals(_Frozen):
    """Line coverage in numbers: ``percent`` of the ``statements`` measured ran,
    ``missed`` did not (``coverage_answer.CoverageSummary``'s totals)."""

    percent: float
    statements: int
    missed: int


class ExecuteFields(_Frozen):
    """The typed fields of an ``execute_tests`` answer in the answer views:
    ``ExecuteResult``'s ``status`` and ``exit_code``; ``counts``, the run's non-zero
    counts (``Counts``) and ``total`` always; ``report_path``, the run's report relative
    to the project's runs directory (``run_report_path``); with ``coverage``, its totals
    when measured; with ``affected``, the selection's numbers."""

    status: RunStatus
    exit_code: int
    counts: dict[str, int]
    report_path: str
    coverage: CoverageTotals | None = None
    selection: SelectionNumbers | None = None


class DiscoverFields(_Frozen):
    """The typed fields of a ``discover_tests`` answer in the answer views: ``total``
    collected, ``next_offset`` (left out at the end) and, with ``affected``, the
    selection's numbers."""

    total: int
    next_offset: int | None = None
    selection: SelectionNumbers | None = None


class SummarizeFields(_Frozen):
    """The typed fields of a ``summarize_report`` answer in the answer views: the
    report's ``counts`` (as ``ExecuteFields``') or, for coverage reports, the
    ``coverage`` totals when measured."""

    counts: dict[str, int] | None = None
    coverage: CoverageTotals | None = None


def counts_fields(counts: Counts) -> dict[str, int]:
    """``total`` and the non-zero counts of ``counts``, in ``Counts``' order."""
    dumped = counts.model_dump()
    return {name: n for name, n in dumped.items() if n or name == "total"}


def coverage_totals(coverage: CoverageSummary | None) -> CoverageTotals | None:
    """The totals of a measured coverage, else None (the answer text says why not)."""
    if coverage is None or coverage.percent is None:
        return None
    return CoverageTotals(percent=coverage.percent, statements=coverage.statements, missed=coverage.missed)


def selection_numbers(selection: Selection | None) -> SelectionNumbers | None:
    """An ``affected`` selection in numbers (``SelectionNumbers``), else None."""
    if selection is None:
        return None
    return SelectionNumbers(selected=selection.selected, total=selection.total)


def run_report_path(report_path: str) -> str:
    """A run's report as the answer views name it: relative to the project's runs
    directory, ``<run id>/records.jsonl`` (12 o200k tokens with ``run.rundirs.run_id``'s
    ids, where the absolute path takes about 40; ``summarize_report``'s ``paths`` accepts
    it: ``app.summarize``)."""
    path = PurePath(report_path)
    return f"{path.parent.name}/{path.name}"


def execute_fields(result: ExecuteResult) -> dict[str, Any]:
    """``ExecuteFields`` of ``result`` in JSON types, fields without a value left out."""
    fields = ExecuteFields(
        status=result.status,
        exit_code=result.exit_code,
        counts=counts_fields(result.summary.counts),
        report_path=run_report_path(result.report_path),
        coverage=coverage_totals(result.coverage),
        selection=selection_numbers(result.selection),
    )
    return fields.model_dump(mode="json", exclude_none=True)


def discover_fields(result: DiscoverResult) -> dict[str, Any]:
    """``DiscoverFields`` of ``result`` in JSON types, fields without a value left out."""
    fields = DiscoverFields(
        total=result.total, next_offset=result.next_offset, selection=selection_numbers(result.selection)
    )
    return fields.model_dump(mode="json", exclude_none=True)


def summarize_fields(result: SummarizeResult) -> dict[str, Any]:
    """``SummarizeFields`` of ``result`` in JSON types, fields without a value left out."""
    counts = counts_fields(result.summary.counts) if result.summary is not None else None
    fields = SummarizeFields(counts=counts, coverage=coverage_totals(result.coverage))
    return fields.model_dump(mode="json", exclude_none=True)


class FailureFields(_Frozen):
    """The typed fields of a tool error in the answer views: ``kind``, and when the
    detail has them ``field``, ``exit_code``, ``signal``; and the fields the error's
    text says are in the structured content (``text.render_failure``): the output
    tails when a stack took their place, the flaky tests beyond the first
    ``FLAKY_LISTED_IN_ERRORS``."""

    kind: FailureKind
    field: str | None = None
    exit_code: int | None = None
    signal: str | None = None
    stdout_tail: str | None = None
    stderr_tail: str | None = None
    flaky: list[FlakyTest] | None = None


def failure_fields(detail: ToolFailureDetail) -> dict[str, Any]:
    """``FailureFields`` of a tool error in JSON types, fields without a value left out."""
    tails_named = bool(detail.stack)  # the text names the tails instead of printing them
    flaky_named = len(detail.flaky or ()) > FLAKY_LISTED_IN_ERRORS
    fields = FailureFields(
        kind=detail.kind,
        field=detail.field,
        exit_code=detail.exit_code,
        signal=detail.signal,
        stdout_tail=detail.stdout_tail if tails_named else None,
        stderr_tail=detail.stderr_tail if tails_named else None,
        flaky=detail.flaky if flaky_named else None,
    )
    return fields.model_dump(mode="json", exclude_none=True)
