"""Compact text for a model or a person: a verdict line, failure groups, failures.

The text is what an agent reads (the MCP tools' text block) and what the CLI prints. It
never lists passing tests and never repeats the structured JSON. Full detail (traceback,
output tail) is given once per failure group, for its first listed failure; the other
listed failures of a group in the groups list follow it as node ids on one ``also in``
line (those of a group the budget left out of the list get one line each), and a
group's ``e.g.`` examples are printed only when none of its failures is listed. So 256 failures from 3
causes stay a few kilobytes, and a 20,000-test suite with 580 failures from 4 causes
under 6 KB (benches/RESULTS.md, ``bench suite``).
"""

from __future__ import annotations

from .models import Failure, ReportSummary

_COUNT_ORDER = (
    ("failed", "failed"),
    ("passed", "passed"),
    ("errors", "errors"),
    ("skipped", "skipped"),
    ("xfailed", "xfailed"),
    ("xpassed", "xpassed"),
    ("flaky", "flaky"),
)


def counts_phrase(summary: ReportSummary) -> str:
    """``"5 failed, 19 passed, 2 errors, 1 xpassed in 2.1s"`` (zero counts left out;
    ``error`` singular for one, as pytest writes it)."""
    counts = summary.counts
    parts = []
    for field, word in _COUNT_ORDER:
        n = getattr(counts, field)
        if n:
            if field == "errors" and n == 1:
                word = "error"
            parts.append(f"{n} {word}")
    if not parts:
        parts.append("no tests")
    return f"{', '.join(parts)} in {_seconds(summary.duration_s)}"


def verdict_word(summary: ReportSummary) -> str:
    """``FAILED`` when a test failed or errored, ``NO TESTS`` when none ran, else ``PASSED``."""
    if not summary.ok:
        return "FAILED"
    if summary.counts.total == 0:
        return "NO TESTS"
    return "PASSED"


def render_text(summary: ReportSummary, verdict: str | None = None, failures_budget: str = "--max-failures") -> str:
    """The compact text of a summary.

    ``verdict`` replaces the first word of the first line (``FAILED``/``PASSED``/
    ``NO TESTS``), e.g. ``INTERRUPTED`` for a run pytest stopped. ``failures_budget`` is
    the name the reader knows the failures-listed budget by (the CLI flag, or a tool's
    argument). Returns text ending in a newline; its first line is always
    ``<VERDICT> <counts phrase>``.
    """
    lines = [f"{verdict or verdict_word(summary)} {counts_phrase(summary)}"]
    groups_by_id = {g.id: g for g in summary.groups}
    listed_groups = {f.group for f in summary.failures}
    if summary.failures and any(g.count > 1 for g in summary.groups):
        lines.append("")
        lines.append("Failure groups (same exception and message):")
        for g in summary.groups:
            what = f"{g.exception}: {g.message}" if g.exception else g.message
            lines.append(f"  {g.id} x{g.count}  {what}")
            if g.examples and g.id not in listed_groups:
                lines.append(f"      e.g. {', '.join(g.examples)}")
    if summary.failures:
        lines.append("")
        shown = len(summary.failures)
        total = shown + summary.omitted.failures
        lines.append(f"Failures ({shown} of {total}):" if summary.omitted.failures else "Failures:")
        # Report order, except that a listed group's later failures join its first one
        # as node ids; a later failure of a group cut from the list gets one line.
        later: dict[str, list[str]] = {}
        entries: list[tuple[Failure, bool]] = []
        for failure in summary.failures:
            first = failure.group not in later
            if not first and failure.group in groups_by_id:
                later[failure.group].append(failure.node_id)
                continue
            later.setdefault(failure.group, [])
            entries.append((failure, first))
        for failure, first in entries:
            lines.extend(_failure_lines(failure, full=first))
            if first and later[failure.group]:
                lines.append(f"  also in {failure.group}: {', '.join(later[failure.group])}")
    if summary.collection_errors:
        lines.append("")
        lines.append("Collection errors:")
        for ce in summary.collection_errors:
            what = f"{ce.exception}: {ce.message}" if ce.exception else ce.message
            lines.append(f"- {ce.path}: {what}")
    slow = [s for s in summary.slowest if s.duration_s >= 1.0]
    if slow:
        lines.append("")
        lines.append("Slowest: " + ", ".join(f"{s.node_id} {_seconds(s.duration_s)}" for s in slow))
    omitted = _omitted_phrase(summary, failures_budget)
    if omitted:
        lines.append("")
        lines.append(omitted)
    return "\n".join(lines) + "\n"


def _failure_lines(failure: Failure, *, full: bool) -> list[str]:
    where = ""
    if failure.location is not None:
        loc = failure.location
        where = f"  at {loc.path}:{loc.line}" if loc.line is not None else f"  at {loc.path}"
    phase = f" in {failure.phase}" if failure.phase and failure.phase != "call" else ""
    label = "ERROR" if failure.outcome == "error" else "FAILED"
    out = [f"- {label}{phase} {failure.node_id}{where}"]
    what = f"{failure.exception}: {failure.message}" if failure.exception else failure.message
    if what:
        out.append(f"    {what}")
    if not full:
        return out
    if failure.traceback:
        out.extend(("    " + line).rstrip() for line in failure.traceback.split("\n"))
    for name, tail in (("stdout", failure.stdout), ("stderr", failure.stderr)):
        if tail:
            out.append(f"    {name} (tail):")
            out.extend(("      " + line).rstrip() for line in tail.rstrip("\n").split("\n"))
    return out


def _omitted_phrase(summary: ReportSummary, failures_budget: str) -> str:
    o = summary.omitted
    parts = []
    if o.failures:
        parts.append(f"{o.failures} more failures (raise {failures_budget})")
    if o.groups:
        parts.append(f"{o.groups} more groups")
    if o.collection_errors:
        parts.append(f"{o.collection_errors} more collection errors")
    if o.traceback_lines:
        parts.append(f"{o.traceback_lines} traceback lines")
    if o.output_bytes:
        parts.append(f"{o.output_bytes} bytes of captured output")
    if o.text_bytes:
        parts.append(f"{o.text_bytes} bytes of report text")
    return "Omitted: " + "; ".join(parts) if parts else ""


def _seconds(s: float) -> str:
    if s < 10:
        return f"{s:.2f}s"
    if s < 600:
        return f"{s:.1f}s"
    return f"{s / 60:.1f}min"
