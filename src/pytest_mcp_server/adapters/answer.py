"""What an answer of ``execute_tests`` shows of a run's summary: which failures get an
entry in the text (``failure_entries``), how long a line may be (``LINE_CHARS``), which
slow tests are named (``slow_tests``: of ``SLOW_S`` or more, and only in a run where no
test failed); the structured content is ``adapters.mcp.structured``'s
(``answer_summary``, and ``with_run_dir`` for the paths of the run's directory).

The text (``text.render_text``) gives one entry per cause: the first listed failure
of each group in full (traceback, output tails); the group's other failures are named
only by a count and a few of the group's example node ids (``also in 17 more: ...``).
A later listed failure of a group the groups budget left out has no count to join, so
it gets an entry of its own, on one line (node id, location, message).

In the default answer view the structured content carries this text itself
(``adapters.mcp.views``). In the ``typed`` view (for programs) the wire carries the
text and the typed summary together, so bulky text travels once: tracebacks and output
tails are in the text block only, and the structured content holds the facts of the same
entries (node id, outcome, phase, exception, message, location, group), the groups with
their counts and examples, counts, collection errors and the slow tests the text names:
nothing about a failure that the text leaves out (``summarize_report`` on
``report_path`` gives the tracebacks as structure).
"""

from __future__ import annotations

from pytest_mcp_server.domain.policy import LINE_CHARS, SLOW_S
from pytest_mcp_server.engine.models import Failure, ReportSummary, SlowTest


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


def slow_tests(summary: ReportSummary) -> list[SlowTest]:
    """The slow tests an answer names: the summary's ``slowest`` of at least ``SLOW_S``
    seconds, and none when a test failed or errored (or did not collect): then the slow
    ones are rarely the failing ones, and the answer is about the failures."""
    if not summary.ok or summary.collection_errors:
        return []
    return [s for s in summary.slowest if s.duration_s >= SLOW_S]


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
