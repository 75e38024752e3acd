"""All the text the server and the CLI write: a report summary (``render_text``) and
each tool's answer (``render_execute``, ``render_discover``, ``render_summarize``,
``render_failure``).

The text is what an agent reads (the MCP tools' text block) and what the CLI prints. It
never lists passing tests and never repeats the structured JSON. Each cause gets one
entry (``answer.failure_entries``): its first listed failure in full (traceback, output
tail), then ``also in N more: a, b, ...``, the group's other failures as a count and a
few example ids (those of a group the groups budget left out get one line each). A
group line is printed only for a group with no entry (it would repeat the entry). For
the tests an agent asked for by node id (``summarize_report``), every listed failure is
an entry in full instead (``every_failure``).
An entry in full whose failure the engine says repeats an earlier entry's
(``Failure.same_as``: the same exception, message, traceback, output and log but for
numbers and its own test file; docs/ENGINE.md, *Failures*) is its header, its own
exception line and ``same traceback as <first node id>, with other values``, except
with ``every_failure``; the text decides nothing by comparing what it renders, and what
its ``Omitted`` line counts is added up from the engine's per-failure numbers of what
it shows (``shown_in_full``).
An entry's traceback is the engine's ``Failure.traceback`` as it is: the engine writes
the final text (docs/ENGINE.md, *The shown traceback*: pytest's closing line, carets
above the last frame, the test's own ``self``, restated and redundant diffs and advice
to re-run verbose left out, separators short, repeats folded), in both backends, so the
CLI's ``summarize`` and a tool's answer show the same entries; what it cut comes as a
number (``traceback_lines_omitted``), never parsed from the text. Within an entry, the
message line is left out when the engine says an ``E`` line of the traceback says it
(``message_in_traceback``). A hint at ``summarize_report`` closes an answer only when the text
leaves something out.
Every line of an ``execute_tests`` answer and of an error is capped
(``policy.LINE_CHARS``). So 256 failures from 3 causes stay under 2 KB, and a
20,000-test suite with 580 failures from 4 causes a few KB (benches/answer_size.py,
benches/RESULTS.md ``bench suite``).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from pytest_mcp_server.adapters.answer import cap_line, cap_lines, failure_entries, slow_tests
from pytest_mcp_server.domain.flaky import legend
from pytest_mcp_server.domain.nodeids import node_path
from pytest_mcp_server.domain.policy import (
    ALSO_IN_IDS,
    DISCOVER_FILES_SHOWN,
    FLAKY_LISTED_IN_ERRORS,
    LINE_CHARS,
)
from pytest_mcp_server.engine.models import CollectionError, Failure, Group, Location, ReportSummary

if TYPE_CHECKING:  # only for annotations: the CLI's summarize does not load the tools' models
    from pytest_mcp_server.domain.coverage_answer import CoverageSummary
    from pytest_mcp_server.domain.failures import ToolFailureDetail
    from pytest_mcp_server.domain.suspects import Suspect
    from pytest_mcp_server.domain.tools import DiscoverResult, ExecuteResult, SummarizeResult
    from pytest_mcp_server.engine.models import WarningsSummary

BODY = " "
"""How an entry's lines under its ``- FAILED`` header are indented (its exception line,
traceback, ``also in`` line, output tails' titles; a collection error's traceback): one
space, which o200k merges into the line's first word (`` E``, `` tests``), where four
spaces took a token of their own on every line, in the text and in its JSON alike
(benches/RESULTS.md, section 6)."""
TAIL = "   "
"""How the lines of an output tail or a log are indented under their title (``BODY``'s
``stdout (tail):``): deeper than the traceback's, one whitespace token as before."""

_COUNT_ORDER = (
    ("failed", "failed"),
    ("passed", "passed"),
    ("errors", "errors"),
    ("skipped", "skipped"),
    ("xfailed", "xfailed"),
    ("xpassed", "xpassed"),
    ("flaky", "flaky"),
)


def counts_phrase(summary: ReportSummary, deselected: int = 0) -> str:
    """``"5 failed, 19 passed, 2 errors, 1 xpassed, 3 deselected in 2.1s"`` (zero counts
    left out; ``error`` singular for one, as pytest writes it; ``deselected``: tests
    deselected, from the run, not the report)."""
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
    if deselected:
        parts.append(f"{deselected} deselected")
    return f"{', '.join(parts)}{_subtests_phrase(summary)} in {_seconds(summary.duration_s)}"


def _subtests_phrase(summary: ReportSummary) -> str:
    """``"; subtests: 2 failed, 2 passed"``, or ``""`` when the report has no subtests.
    Tests with failed subtests are among the failed tests before it (never passed)."""
    counts = summary.counts
    parts = [f"{n} {word}" for n, word in ((counts.subtests_failed, "failed"), (counts.subtests_passed, "passed")) if n]
    return f"; subtests: {', '.join(parts)}" if parts else ""


def failure_name(failure: Failure) -> str:
    """The node id, and for a failed subtest its label (``test_x [case] (i=2)``;
    ``(subtest)`` when the report does not name it)."""
    if failure.subtest is None:
        return failure.node_id
    return f"{failure.node_id} {failure.subtest or '(subtest)'}"


def verdict_word(summary: ReportSummary) -> str:
    """``FAILED`` when a test failed or errored, ``NO TESTS`` when none ran, else ``PASSED``."""
    if not summary.ok:
        return "FAILED"
    if summary.counts.total == 0:
        return "NO TESTS"
    return "PASSED"


def render_text(
    summary: ReportSummary,
    verdict: str | None = None,
    failures_budget: str = "--failures-listed",
    deselected: int = 0,
    line_chars: int | None = None,
    every_failure: bool = False,
) -> str:
    """The compact text of a summary.

    ``verdict`` replaces the first word of the first line (``FAILED``/``PASSED``/
    ``NO TESTS``), e.g. ``INTERRUPTED`` for a run pytest stopped. ``failures_budget`` is
    the name the reader knows the failures-listed budget by (the CLI flag, or a tool's
    argument). ``deselected``: tests the run deselected (``counts_phrase``).
    ``line_chars``: when given, every line is capped at that many characters
    (``answer.cap_line``) and the bytes cut are added to the ``Omitted`` line's report
    text. ``every_failure``: every listed failure is an entry in full
    (``answer.failure_entries``), with no ``also in`` lines and no group table (the
    tests asked for by node id: each one's whole story, not its cause's). Returns text
    ending in a newline; its first line is always ``<VERDICT> <counts phrase>``.
    """
    return _text_with_hint(summary, verdict, failures_budget, deselected, line_chars, every_failure, hint=None)


def _text_with_hint(
    summary: ReportSummary,
    verdict: str | None,
    failures_budget: str,
    deselected: int,
    line_chars: int | None,
    every_failure: bool,
    hint: str | None,
) -> str:
    """``render_text``'s text, closed by ``hint`` when the text leaves out something the
    report has (an ``Omitted`` line, or a failure without an entry in full: named on an
    ``also in`` line, a group line, or on one line): the hint ends the ``Omitted`` line
    (``Omitted: 26 traceback lines. More: ...``), or is a line of its own without one."""
    lines = [f"{verdict or verdict_word(summary)} {counts_phrase(summary, deselected)}"]
    groups_by_id = {g.id: g for g in summary.groups}
    entries = failure_entries(summary, every_failure)
    if entries:
        lines.append("")  # each entry starts "- FAILED"/"- ERROR": no heading (2 tokens) needed
        for failure, full in entries:
            if full and not every_failure and failure.same_as is not None:
                lines.extend(_repeat_lines(failure, failure.same_as))
            else:
                lines.extend(_failure_lines(failure, full=full))
            group = groups_by_id.get(failure.group)
            if full and not every_failure and group is not None and group.count > 1:
                lines.append(BODY + _also_in(failure, group, summary.failures))
    # a group with an entry says nothing its entry and "also in" line do not
    with_entry = {failure.group for failure, _ in entries}
    unlisted = [] if every_failure else [g for g in summary.groups if g.id not in with_entry]
    if unlisted:
        lines.append("")
        lines.append(f"Failure groups{' not listed above' if entries else ''} (same exception and message):")
        for g in unlisted:
            loc = g.location
            at = "" if loc is None else f"  at {loc.path}" + (f":{loc.line}" if loc.line is not None else "")
            lines.append(f"  {g.id} x{g.count}  {exception_line(g.exception, g.message)}{at}")
            if g.examples:
                lines.append(f"      e.g. {', '.join(g.examples)}")
    lines.extend(_collection_error_lines(summary.collection_errors))
    slow = slow_tests(summary)
    if slow:
        lines.append("")
        lines.append("Slowest: " + ", ".join(f"{s.node_id} {_seconds(s.duration_s)}" for s in slow))
    cut = 0
    if line_chars is not None:
        capped = [cap_line(line, line_chars) for line in lines]
        lines = [line for line, _ in capped]
        cut = sum(dropped for _, dropped in capped)
    # every listed group has an entry or a group line, but for the tests asked for by node id
    shown_groups = {failure.group for failure, _ in entries}
    if not every_failure:
        shown_groups |= {g.id for g in summary.groups}
    traceback_lines = traceback_lines_shown(summary, every_failure)
    output_bytes, text_bytes = bytes_left_out_shown(summary, every_failure)
    omitted = _omitted_phrase(
        summary,
        failures_budget,
        traceback_lines,
        (output_bytes, text_bytes + cut),
        every_failure,
        len(shown_groups),
    )
    in_full = sum(1 for _, full in entries if full)
    left_out = (
        bool(omitted)
        or in_full < len(summary.failures) + summary.omitted.failures
        or any(ce.traceback_lines_omitted for ce in summary.collection_errors)
    )
    closing = ". ".join(part for part in (omitted, hint if left_out else None) if part)
    if closing:
        lines.append("")
        lines.append(closing)
    return "\n".join(lines) + "\n"


def exception_line(exception: str | None, message: str) -> str:
    """``"<exception>: <message>"``, the message alone when the exception type is
    unknown, the exception alone when the message is empty (a bare ``raise Exception``),
    for a failure, a group or a collection error."""
    if not exception:
        return message
    return f"{exception}: {message}" if message else exception


def _collection_error_lines(errors: list[CollectionError]) -> list[str]:
    """The collection-errors block (a blank line, a title, then per file ``- path:
    exception: message  at path:line`` and its traceback), or nothing when there is none.
    The header leaves out what the traceback says: the location when a frame line starts
    with it, the exception when an ``E`` line says it (``_says_exception``)."""
    if not errors:
        return []
    lines = ["", "Collection errors:"]
    for ce in errors:
        where = "" if _names_location(ce.location, ce.traceback) else _where(ce.location)
        what = exception_line(ce.exception, ce.message)
        said = _says_exception(ce.traceback, what)
        lines.append(f"- {ce.path}{'' if said else ': ' + what}{where}")
        if ce.traceback:
            lines.extend((BODY + line).rstrip() for line in ce.traceback.split("\n"))
    return lines


def _says_exception(traceback: str, what: str) -> bool:
    """Whether a line of ``traceback`` is an ``E`` line saying ``what`` (``exception:
    message`` of one line), as pytest writes the exception it reports:
    ``E   AttributeError: 'X' object has no attribute 'y'``."""
    if not what or "\n" in what:
        return False
    return any(line.startswith("E ") and line[1:].strip() == what.strip() for line in traceback.split("\n"))


def _where(location: Location | None) -> str:
    """``"  at path:line"`` (``"  at path"`` without a line), or ``""``."""
    if location is None:
        return ""
    return f"  at {location.path}:{location.line}" if location.line is not None else f"  at {location.path}"


def _also_in(failure: Failure, group: Group, listed: list[Failure] | None = None) -> str:
    """``also in 17 more: test_b[1], test_c, ...``: how many other failures ``group``
    has beyond ``failure`` (its entry), and up to ``ALSO_IN_IDS`` of the group's
    examples, written after ``file::`` when they share the entry's file. The group's
    failed subtests among ``listed`` come first, named with their labels (the examples
    are node ids: a subtest's is its test's), and the entry's own test when it is
    listed in the group (a test that failed because these subtests did)."""
    subtests = [
        failure_name(f)
        for f in listed or ()
        if f.group == group.id and (f.subtest is not None or f.node_id == failure.node_id)
    ]
    others = [name for name in subtests if name != failure_name(failure)]
    others += [node_id for node_id in group.examples if node_id != failure.node_id and node_id not in others]
    others = others[:ALSO_IN_IDS]
    prefix = node_path(failure.node_id) + "::"
    names = [node_id.removeprefix(prefix) for node_id in others]
    more = group.count - 1
    etc = ", ..." if more > len(names) else ""
    return f"also in {more} more" + (f": {', '.join(names)}{etc}" if names else "")


def _failure_lines(failure: Failure, *, full: bool) -> list[str]:
    where = "" if full and _traceback_names_location(failure) else _where(failure.location)
    phase = f" in {failure.phase}" if failure.phase and failure.phase != "call" else ""
    label = "ERROR" if failure.outcome == "error" else "FAILED"
    out = [f"- {label}{phase} {failure_name(failure)}{where}"]
    what = exception_line(failure.exception, failure.message)
    if (
        full
        and failure.message
        and not failure.message_in_traceback
        and _first_line(failure.traceback) == failure.message
    ):
        # the traceback opens with the message (a text without `E` lines: a doctest's report)
        what = failure.exception or ""
    if what and not (full and failure.message_in_traceback):
        out.append(f"{BODY}{what}")
    if not full:
        return out
    if failure.traceback:
        out.extend((BODY + line).rstrip() for line in failure.traceback.split("\n"))
    for name, tail in (("stdout", failure.stdout), ("stderr", failure.stderr)):
        if tail:
            out.append(f"{BODY}{name} (tail):")
            out.extend((TAIL + line).rstrip() for line in tail.rstrip("\n").split("\n"))
    if failure.log:
        out.append(f"{BODY}log (tail):")
        out.extend((TAIL + line).rstrip() for line in failure.log.rstrip("\n").split("\n"))
    return out


def _traceback_names_location(failure: Failure) -> bool:
    """``_names_location`` of a failure."""
    return _names_location(failure.location, failure.traceback)


def _names_location(loc: Location | None, traceback: str) -> bool:
    """Whether a line of ``traceback`` starts with the location's ``path:line:`` (a frame
    line, pytest's or the engine's compact one): the entry's header then leaves out its
    ``at path:line``, which would say it twice."""
    if loc is None or loc.line is None or not traceback:
        return False
    start = f"{loc.path}:{loc.line}:"
    return any(line.startswith(start) for line in traceback.split("\n"))


def shown_in_full(summary: ReportSummary, every_failure: bool = False) -> list[Failure]:
    """The failures whose tracebacks, output tails and logs ``render_text`` shows: the
    entries in full (``answer.failure_entries``) but those the engine says repeat an
    earlier one (``Failure.same_as``: ``render_text`` writes them ``same traceback as
    ...``); with ``every_failure`` (as for ``render_text``), every listed failure."""
    return [
        failure
        for failure, full in failure_entries(summary, every_failure)
        if full and (every_failure or failure.same_as is None)
    ]


def traceback_lines_shown(summary: ReportSummary, every_failure: bool = False) -> int:
    """Traceback lines the engine's cut left out of the tracebacks ``render_text`` shows
    (its ``Omitted`` line's count): the engine's ``traceback_lines_omitted`` of
    ``shown_in_full`` (a repeat's lines are its first entry's, counted once) and of the
    collection errors."""
    total = sum(ce.traceback_lines_omitted for ce in summary.collection_errors if ce.traceback)
    return total + sum(f.traceback_lines_omitted for f in shown_in_full(summary, every_failure) if f.traceback)


def bytes_left_out_shown(summary: ReportSummary, every_failure: bool = False) -> tuple[int, int]:
    """(captured output, report text) UTF-8 bytes the report reader's caps dropped from
    what ``render_text`` shows: the output tails, logs and texts of ``shown_in_full``, and
    the collection errors' texts. A failure without an entry in full is counted among
    the failures left out, not by its bytes."""
    shown = shown_in_full(summary, every_failure)
    output = sum(f.output_bytes_omitted for f in shown)
    text = sum(f.text_bytes_omitted for f in shown) + sum(ce.text_bytes_omitted for ce in summary.collection_errors)
    return output, text


def _first_line(text: str) -> str:
    """The first line of ``text`` that is not blank, stripped (``""`` when none)."""
    return next((line.strip() for line in text.split("\n") if line.strip()), "")


def _repeat_lines(failure: Failure, first: str) -> list[str]:
    """The entry of a failure the engine says repeats the entry of ``first``
    (``Failure.same_as``: the same exception, message, traceback, output and log but for
    numbers and its own test file): its header with its own location (its traceback,
    which may name it, is not shown), its own exception line (its values differ from
    ``first``'s) and a pointer to ``first``."""
    what = exception_line(failure.exception, failure.message)
    return [
        _failure_lines(failure, full=False)[0],
        *([f"{BODY}{what}"] if what else []),
        f"{BODY}same traceback as {first}, with other values",
    ]


def _omitted_phrase(
    summary: ReportSummary,
    failures_budget: str,
    traceback_lines: int,
    bytes_left_out: tuple[int, int],
    every_failure: bool,
    shown_groups: int,
) -> str:
    """The ``Omitted: ...`` line, or ``""``: what the text leaves out, counted as shown.

    Failures are counted only when the text names them nowhere (not in an entry, an
    ``also in`` count or a group line: their groups were cut by the groups budget; with
    ``every_failure``, the failures not listed). Groups: the report's groups (the
    engine's listed ones and ``omitted.groups``) less ``shown_groups``, those the text
    names (a group line, or an entry of one of its failures: a group the engine's groups
    budget cut but whose failure is listed is shown). ``traceback_lines``: lines cut from
    the tracebacks the text shows (entries in full that are not folded into an earlier
    one, and collection errors); ``bytes_left_out``: (captured output, report text)
    bytes left out of what the text shows (``bytes_left_out_shown``; the report text's
    with the bytes the text's own line cap cut)."""
    o = summary.omitted
    if every_failure:
        unnamed = o.failures
    else:
        listed_groups = {g.id for g in summary.groups}
        named = sum(g.count for g in summary.groups) + sum(1 for f in summary.failures if f.group not in listed_groups)
        unnamed = max(0, len(summary.failures) + o.failures - named)
    hidden_groups = max(0, len(summary.groups) + o.groups - shown_groups)
    output_bytes, text_bytes = bytes_left_out
    parts = []
    if unnamed:
        parts.append(f"{unnamed} more failures (raise {failures_budget})")
    if hidden_groups:
        parts.append(f"{hidden_groups} more groups")
    if o.collection_errors:
        parts.append(f"{o.collection_errors} more collection errors")
    if traceback_lines:
        parts.append(f"{traceback_lines} traceback lines")
    if output_bytes:
        parts.append(f"{output_bytes} bytes of captured output")
    if text_bytes:
        parts.append(f"{text_bytes} bytes of report text")
    return "Omitted: " + "; ".join(parts) if parts else ""


def _seconds(s: float) -> str:
    if s < 10:
        return f"{s:.2f}s"
    if s < 600:
        return f"{s:.1f}s"
    return f"{s / 60:.1f}min"


# --------------------------------------------------------------------------------------
# The tools' text blocks (the structure is for programs; the text never repeats it as JSON)

VERDICTS: dict[str, str] = {
    "passed": "PASSED",
    "failed": "FAILED",
    "no_tests": "NO TESTS",
    "interrupted": "INTERRUPTED",
}
"""The verdict word of ``execute_tests`` for each run status."""


FULL_STORY_HINT = "More: summarize_report with node_ids"
"""How an ``execute_tests`` answer that leaves something out says where the rest is: the
run's report is ``summarize_report``'s default (its tool description says so; the path is
the structured ``report_path``, not the text's: a path of hashes and timestamps costs an
agent about 50 tokens). It ends the ``Omitted`` line, whose count it explains, rather
than taking a line of its own (about 7 o200k tokens less per answer)."""


def render_execute(result: ExecuteResult) -> str:
    """The text block of ``execute_tests``: ``render_text`` with a verdict that
    reflects ``status`` (``PASSED``/``FAILED``/``NO TESTS``/``INTERRUPTED``) and the
    run's session time (``ExecuteResult.duration_s``); when the run is not green and
    the text leaves something out, ``FULL_STORY_HINT`` closes the failures
    (``summarize_report`` gives the rest; the structured content always carries
    ``report_path``); a run without tests, or one pytest stopped but at collection errors
    (the answer shows them: they are what to fix), ends with a line that says what to do."""
    # the verdict line's time is pytest's session time, the figure of its own summary line
    shown = result.summary.model_copy(update={"duration_s": result.duration_s})
    text = _text_with_hint(
        shown,
        verdict=VERDICTS[result.status],
        failures_budget="failures_listed",
        deselected=result.deselected,
        line_chars=LINE_CHARS,
        every_failure=False,
        hint=None if result.status == "passed" else FULL_STORY_HINT,
    )
    if result.runs > 1:
        text = _with_runs(text, result, shown)
    text += cap_lines(_warnings_text(result.warnings))[0]  # the warnings' own budgets count what they cut
    if result.suspects:
        verdict, _, rest = text.partition("\n")
        text = "\n".join([verdict, *(cap_line(line)[0] for line in suspect_lines(result.suspects)), rest])
    if result.coverage is not None:
        headline, section = coverage_lines(result.coverage)
        verdict, _, rest = text.partition("\n")
        text = "\n".join([verdict, *(cap_line(line)[0] for line in headline), rest])
        text += cap_lines("\n".join(["", *section, ""]))[0]
    tail: list[str] = cold_start_lines(result.cold_start)
    if result.status == "no_tests":
        tail.append(
            f"No tests ran (pytest exit {result.exit_code}): this is not a pass. Check node_ids, markers and "
            "keywords; discover_tests shows what is collected."
        )
    elif result.status == "interrupted" and not result.summary.collection_errors:
        # stopped at collection errors, the answer shows them: they are what to fix
        tail.append(f"pytest stopped early (exit {result.exit_code}); run again.")
    return text + ("\n" + "\n".join(tail) + "\n" if tail else "")


def _with_runs(text: str, result: ExecuteResult, shown: ReportSummary) -> str:
    """``text`` (``render_text`` of the last run of a repeated call, ``shown``) with the
    first line saying what the runs found: ``FLAKY 1 test flaky over 4 runs; last run:
    1 failed, 5 passed in 0.41s`` followed by the flaky tests (``_flaky_lines``), or, when
    no test changed outcome, the usual verdict line ending ``; 4 runs, none flaky``."""
    _, _, rest = text.partition("\n")
    last = shown.model_copy(update={"counts": shown.counts.model_copy(update={"flaky": 0})})
    phrase = counts_phrase(last, result.deselected)
    flaky = shown.counts.flaky
    if not flaky:
        return f"{VERDICTS[result.status]} {phrase}; {result.runs} runs, none flaky\n{rest}"
    first = f"FLAKY {flaky} test{'s' if flaky != 1 else ''} flaky over {result.runs} runs; last run: {phrase}"
    return first + "\n" + cap_lines("\n".join(_flaky_lines(result)))[0] + "\n" + rest


def _flaky_lines(result: ExecuteResult) -> list[str]:
    """The ``Flaky tests`` section: a legend of the letters used, then per listed flaky
    test ``- PFPF <node id>`` and the failure of its last failing run as a failure entry
    (``run 4: FAILED  at path:line``, its traceback and output tails), unless that is
    the last run's and the ``Failures`` section already has it in full; then how many
    flaky tests were not listed."""
    in_failures = {failure.node_id for failure, full in failure_entries(result.summary) if full}
    lines = ["", f"Flaky tests ({legend(t.pattern for t in result.flaky)}; one letter per run):"]
    for test in result.flaky:
        head = f"- {test.pattern} {test.node_id}"
        if test.failed_run is None:
            lines.append(head)
        elif test.failure is None:
            lines.append(f"{head}  (failed in run {test.failed_run}, whose report was removed since)")
        elif test.failed_run == result.runs and test.node_id in in_failures:
            lines.append(f"{head}  (run {test.failed_run}'s failure: its entry below)")
        else:
            entry = _failure_lines(test.failure, full=True)
            outcome = entry[0].removeprefix("- ").replace(" " + failure_name(test.failure), "", 1)
            lines += [head, f"{BODY}run {test.failed_run}: {outcome}", *entry[1:]]
    more = result.summary.counts.flaky - len(result.flaky)
    if more:
        lines.append(f"  ... {more} more flaky tests (raise failures_listed)")
    return lines


def _warnings_text(warnings: WarningsSummary) -> str:
    """The ``Warnings (N):`` section: one line per listed distinct warning (category,
    count, message, where), the traceback of an exception warning under it, and how
    many distinct ones were not listed; empty when nothing warned."""
    if not warnings.total:
        return ""
    lines = ["", f"Warnings ({warnings.total}):"]
    for group in warnings.groups:
        times = f" x{group.count}" if group.count > 1 else ""
        where = f" (at {_locations(group.locations)})" if group.locations else ""
        lines.append(f"  {group.category}{times}: {group.message}{where}")
        if group.traceback:
            lines.extend(("      " + line).rstrip() for line in group.traceback.split("\n"))
    if warnings.omitted:
        lines.append(f"  ... {warnings.omitted} more distinct warnings")
    return "\n".join(lines) + "\n"


def _locations(locations: list[str]) -> str:
    """``"a.py:13, :17, b.py:2"``: a path written once for its consecutive lines."""
    out: list[str] = []
    previous = None
    for location in locations:
        path, _, line = location.rpartition(":")
        out.append(f":{line}" if path and path == previous else location)
        previous = path
    return ", ".join(out)


def render_discover(result: DiscoverResult, *, files_shown: int = DISCOVER_FILES_SHOWN) -> str:
    """The text block of ``discover_tests``: a verdict line, collection errors, tests
    per file (the largest ``files_shown``), and the page of node ids."""
    n_files = len(result.files) + result.files_omitted
    errors = len(result.collection_errors)
    head = "COLLECTED" if result.total and not errors else ("COLLECTION ERRORS" if errors else "NO TESTS")
    line = (
        f"{head} {result.total} test{'s' if result.total != 1 else ''} in {n_files} file{'s' if n_files != 1 else ''}"
    )
    if errors:
        line += f", {errors} collection error{'s' if errors != 1 else ''}"
    lines = [f"{line} in {result.duration_s:.2f}s"]
    lines.extend(_collection_error_lines(result.collection_errors))
    if result.files:
        lines += ["", "Tests per file:"]
        biggest = sorted(result.files.items(), key=lambda kv: -kv[1])[:files_shown]
        lines += [f"  {count:6d}  {path}" for path, count in biggest]
        more = n_files - len(biggest)
        if more:
            lines.append(f"  ... {more} more files")
    if result.node_ids:
        last = result.next_offset or result.total
        lines += ["", f"Node ids {last - len(result.node_ids) + 1}-{last} of {result.total}:"]
        lines += result.node_ids
    if result.next_offset is not None:
        lines += ["", f"More: call again with offset={result.next_offset}."]
    lines += cold_start_lines(result.cold_start)
    return "\n".join(lines) + "\n"


def cold_start_lines(cold_start: str | None) -> list[str]:
    """The one line saying why a run started cold though a warm spare was there
    (``ExecuteResult.cold_start``), capped; none when it did not."""
    return [cap_line(f"Cold start: {cold_start}.")[0]] if cold_start else []


def render_summarize(result: SummarizeResult) -> str:
    """The text block of ``summarize_report``: ``render_text`` of the summary (with
    ``full_story``, every listed failure in full), and the requested node ids that
    matched no failure; for coverage reports, their coverage (``coverage_lines``)."""
    if result.summary is None:  # coverage reports: the coverage title is the verdict line
        assert result.coverage is not None, "a summarize_report result has a summary or a coverage"
        headline, section = coverage_lines(result.coverage, title="COVERAGE")
        return "\n".join([*section[:1], *headline, *section[1:]]) + "\n"
    text = render_text(result.summary, failures_budget="failures_listed", every_failure=result.full_story)
    if result.not_failing:
        text += "\nNo failure for: " + ", ".join(result.not_failing) + " (passed, skipped, or not in the report)\n"
    return text


def render_failure(detail: ToolFailureDetail) -> str:
    """The text block of a failed call: ``ERROR <kind>: <message>``; for a timeout or a
    crash, the test that was running, its stack and the summary of the tests that
    finished before (``render_text``); then the command, the exit, and the tails of
    pytest's output (only named when a stack was found: they are in the structured
    content). Every line is capped at ``policy.LINE_CHARS`` (a cut line ends with
    ``…``; the structured content has it whole). For a repeated call, the flaky tests of
    the runs that finished (at most ``FLAKY_LISTED_IN_ERRORS``) follow the first line."""
    lines = [f"ERROR {detail.kind}: {detail.message}"]
    if detail.flaky:
        lines += ["", f"Flaky in the finished runs ({legend(t.pattern for t in detail.flaky)}; one letter per run):"]
        lines += [f"- {test.pattern} {test.node_id}" for test in detail.flaky[:FLAKY_LISTED_IN_ERRORS]]
        more = len(detail.flaky) - FLAKY_LISTED_IN_ERRORS
        lines += [f"  ... {more} more (flaky in the structured content)"] if more > 0 else []
    if detail.running_test:
        took = f" for {detail.running_for_s:g}s" if detail.running_for_s is not None else ""
        lines += ["", f"Running: {detail.running_test}{took}"]
    if detail.stack:
        lines += [] if detail.running_test else [""]
        lines.append("Stack (most recent call last):")
        lines.extend("  " + frame for frame in detail.stack)
        lines += [] if detail.summary is not None else [""]
    if detail.summary is not None:
        lines += ["", "Tests that finished before:"]
        lines.append(render_text(detail.summary, failures_budget="failures_listed", line_chars=LINE_CHARS))
    if detail.command:
        lines.append("Command: " + shlex.join(detail.command))
    if detail.exit_code is not None or detail.signal:
        how = f"exit code {detail.exit_code}" if detail.exit_code is not None else f"killed by {detail.signal}"
        took = f" after {detail.duration_s:g}s" if detail.duration_s is not None else ""
        lines.append(f"Ended: {how}{took}")
    tails = [(name, tail) for name, tail in (("stdout", detail.stdout_tail), ("stderr", detail.stderr_tail)) if tail]
    if detail.stack and tails:
        lines.append("Output tails: " + ", ".join(f"{name}_tail" for name, _ in tails) + " in the structured content")
    else:
        for name, tail in tails:
            lines += ["", f"{name} (tail):", tail.rstrip("\n")]
    return cap_lines("\n".join(lines))[0] + "\n"  # each line capped; whole in the structured content


_AS_RECORDED = "(test map's last recording, not this run)"
"""What a plain call's suspects are based on: the map an earlier affected call left."""


def suspect_lines(suspects: list[Suspect]) -> list[str]:
    """One line per suspect, after the verdict line: ``changed code run by failing tests:
    pkg/calc.py:12-13 (7 of 7 failing, 0 of 458 passing)``, or ``changed code in a
    function run by failing tests: ...`` when they ran the function but not the changed
    lines themselves, ``changed code run at import, before each test that ran: ...`` for
    module-level lines run outside any test; a plain call's, from the test map, say so
    (``changed code in a function failing tests ran (test map's last recording, not this
    run): ...``); the passing count left out when no test passed (``(1 of 1 failing)``:
    ``0 of 0 passing`` says nothing)."""
    lines = []
    for s in suspects:
        what = {
            "line": "changed code run by failing tests",
            "function": "changed code in a function run by failing tests",
            "import": "changed code run at import, before each test that ran",
            "map_function": f"changed code in a function failing tests ran {_AS_RECORDED}",
            "map_name": f"changed module-level name read by code failing tests ran {_AS_RECORDED}",
            "map_import": f"changed code run at import, before each test {_AS_RECORDED}",
        }[s.by]
        counts = f"{s.failing} of {s.failing_total} failing"
        if s.passing_total:
            counts += f", {s.passing} of {s.passing_total} passing"
        lines.append(f"{what}: {s.path}:{s.lines} ({counts})")
    return lines


def coverage_lines(coverage: CoverageSummary, title: str = "Coverage:") -> tuple[list[str], list[str]]:
    """The text of a coverage summary: the headline lines that follow the verdict line
    (one ``changed lines not run: pkg/calc.py 12-13`` per file, then ``changed files not
    measured: pkg/new.py`` when there are such files), and the section: its
    ``title`` line (``Coverage: 71.43% of 14 lines ran (4 missed, 3 files)``), one line
    per listed file with missed lines (``  pkg/calc.py 60%: 7, 12-13``), and what the
    budgets cut (``  ... 3 more files with missed lines``). ``changed_not_run`` None
    (outside git, a report, or a run in which no test ran: ``summarize_coverage``)
    gives neither ``changed lines not run`` nor ``; every changed line ran``."""
    headline = [f"changed lines not run: {c.path} {c.lines}" for c in coverage.changed_not_run or ()]
    if coverage.changed_not_measured:
        headline.append(f"changed files not measured: {', '.join(coverage.changed_not_measured)}")
    if coverage.percent is None:
        return headline, [f"{title} not measured: {coverage.problem}"]
    files = f"{coverage.files_measured} file{'s' if coverage.files_measured != 1 else ''}"
    title = f"{title} {coverage.percent:g}% of {coverage.statements} lines ran ({coverage.missed} missed, {files})"
    if coverage.changed_not_run == [] and coverage.changed_not_measured == []:
        title += "; every changed line ran"
    section = [title, *(f"  {f.path} {f.percent:g}%: {f.missing}" for f in coverage.files)]
    omitted = coverage.omitted
    cuts = [
        f"{n} {what}"
        for n, what in (
            (omitted.files, "more files with missed lines"),
            (omitted.changed_files, "more changed files not run or not measured"),
            (omitted.lines, "more missed line numbers"),
        )
        if n
    ]
    if cuts:
        section.append("  ... " + "; ".join(cuts))
    return headline, section
