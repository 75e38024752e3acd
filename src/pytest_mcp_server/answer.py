"""What an answer of ``execute_tests`` shows of a run's summary: which failures get an
entry in the text (``failure_entries``), how long a line may be (``LINE_CHARS``), which
slow tests are named (``SLOW_S``), and the structured content (``answer_summary``, and
``with_run_dir`` for the paths of the run's directory).

The text (``render.render_text``) gives one entry per cause: the first listed failure
of each group in full (traceback, output tails); the group's other failures are named
only by a count and a few of the group's example node ids (``also in 17 more: ...``).
A later listed failure of a group the groups budget left out has no count to join, so
it gets an entry of its own, on one line (node id, location, message).

The wire carries the text and the structured content together, so bulky text travels
once: tracebacks and output tails are in the text block only. The structured content
holds the facts of the same entries (node id, outcome, phase, exception, message,
location, group), the groups with their counts and examples, counts, collection errors
and the slow tests the text names: nothing about a failure that the text leaves out,
and enough for a client that hands it to the model to name every problem by
``path:line`` and message (``summarize_report`` on ``report_path`` gives the tracebacks
as structure).
"""

from __future__ import annotations

import os
from typing import Any

from .models import Failure, Omitted, ReportSummary

LINE_CHARS = 400
"""Characters kept per line of an ``execute_tests`` text (a longer line keeps
``LINE_CHARS - 1`` and ends with ``…``). Longer than any line the engine keeps with
``execute_tests``' budgets (traceback lines of 200 characters, messages of 300 after an
exception name), so it cuts what the engine does not: lines of captured output, node
ids, paths."""

SLOW_S = 1.0
"""A test is named as slow when it took at least this many seconds (shorter ones are
not worth an agent's attention)."""


def failure_entries(summary: ReportSummary, every_failure: bool = False) -> list[tuple[Failure, bool]]:
    """The failures the text gives an entry, in report order, each with ``True`` when
    shown in full: the first listed failure of each group (full), and a later listed
    failure of a group missing from ``summary.groups`` (one line: node id, location,
    message). A later listed failure of a listed group has no entry: the group's
    ``also in`` line names it. ``every_failure`` (the tests an agent asked for by node
    id, ``summarize_report``): every listed failure is an entry in full."""
    if every_failure:
        return [(failure, True) for failure in summary.failures]
    listed_groups = {g.id for g in summary.groups}
    seen: set[str] = set()
    entries: list[tuple[Failure, bool]] = []
    for failure in summary.failures:
        if failure.group not in seen:
            seen.add(failure.group)
            entries.append((failure, True))
        elif failure.group not in listed_groups:
            entries.append((failure, False))
    return entries


def shown_traceback_lines_omitted(entries: list[tuple[Failure, bool]]) -> int:
    """Traceback lines the engine cut from the tracebacks shown in full among
    ``entries`` (the sum of their ``traceback_lines_omitted``; the engine's
    ``omitted.traceback_lines`` covers every listed failure)."""
    return sum(failure.traceback_lines_omitted for failure, full in entries if full)


def cap_line(line: str, limit: int = LINE_CHARS) -> tuple[str, int]:
    """``line`` cut to ``limit`` characters (the last one ``…``) and the UTF-8 bytes
    cut; ``(line, 0)`` when it fits."""
    if len(line) <= limit:
        return line, 0
    kept = line[: limit - 1]
    return kept + "…", len(line.encode()) - len(kept.encode())


def cap_lines(text: str, limit: int = LINE_CHARS) -> tuple[str, int]:
    """Every line of ``text`` (split on ``\\n``) capped by ``cap_line``; returns the
    text and the total of bytes cut."""
    capped = [cap_line(line, limit) for line in text.split("\n")]
    return "\n".join(line for line, _ in capped), sum(cut for _, cut in capped)


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
    lost: ``traceback`` ``""`` (and its ``traceback_lines_omitted`` 0,
    ``message_in_traceback`` false) and
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
    }
    return failure.model_copy(update=update), cut


def answer_summary(summary: ReportSummary) -> ReportSummary:
    """The structured content's summary of an ``execute_tests`` answer, from the
    engine's ``summary``.

    ``failures``: the text's entries (``failure_entries``), with ``traceback`` ``""`` and
    ``stdout``/``stderr``/``log`` null (the text carries them), messages capped per line at
    ``LINE_CHARS``. ``groups``: their ``examples`` without the entries' node ids (the
    ids of a group's ``also in`` line). ``slowest``: the tests of at least ``SLOW_S``
    seconds. ``omitted``:
    ``failures`` grows by the listed failures left without an entry (so
    ``len(failures) + omitted.failures`` is still every failed or errored test; each is
    counted in its group), ``traceback_lines`` covers only the tracebacks the text
    shows, ``text_bytes`` grows by what the message caps cut. Counts, the groups'
    counts and collection errors are the engine's.
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
    return summary.model_copy(
        update={
            "failures": failures,
            "groups": groups,
            "slowest": [s for s in summary.slowest if s.duration_s >= SLOW_S],
            "omitted": Omitted(
                failures=omitted.failures + len(summary.failures) - len(entries),
                groups=omitted.groups,
                collection_errors=omitted.collection_errors,
                traceback_lines=shown_traceback_lines_omitted(entries),
                output_bytes=omitted.output_bytes,
                text_bytes=omitted.text_bytes + text_cut,
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
)
"""A failure's fields that an answer's structured content leaves out when empty (null or
``""``: the traceback and output tails are in the text)."""


def without_silent_fields(summary: dict[str, Any]) -> dict[str, Any]:
    """A dumped answer summary without what says nothing (each left-out field is the
    model's default, so the summary still validates as a ``ReportSummary``): the
    subtest counts when all are 0; a failure's empty ``subtest``, ``traceback``,
    ``stdout``, ``stderr`` and ``log``; when the groups budget cut no group, a group of
    one failure that is listed (the failure, whose ``group`` names it, says all the
    group would), and a group's empty ``examples``; empty ``collection_errors``, ``slowest`` and ``unmatched``; the 0
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
    for name in ("collection_errors", "slowest", "unmatched"):
        if not summary[name]:
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
