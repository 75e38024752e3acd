"""What an answer says of line coverage (``CoverageSummary``): the total, the files with
missed lines as compact ranges (``7, 12-13``), and the changed lines no test ran
(``ChangedLines``, found by ``run.git``). The reports are read by ``engine.coverage_reports``.

No MCP import, no processes.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from pydantic import Field

from pytest_mcp_server.domain.policy import COVERAGE_FILES_LISTED, RANGE_CHARS
from pytest_mcp_server.engine.coverage_reports import LineSets
from pytest_mcp_server.engine.models import Counts, _Frozen, is_test_path

# -- the answer's models -------------------------------------------------------------


@dataclass
class ChangedLines:
    """Lines added or modified relative to ``HEAD``, per path relative to the root.

    ``ranges``: path -> sorted, disjoint ``(first, last)`` line ranges (1-based,
    inclusive) of the new file; ``new_files``: untracked files, every line of which is
    new; ``deletions``: path -> sorted lines of the new file after which lines were
    deleted and nothing added (0: at the top). Deletions are no changed lines here (a
    line not there is not run or missed); they point the suspects at the code around
    them (``touched``, ``domain.suspects``)."""

    ranges: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    new_files: set[str] = field(default_factory=set)
    deletions: dict[str, list[int]] = field(default_factory=dict)

    def __contains__(self, path: str) -> bool:
        return path in self.new_files or path in self.ranges

    def paths(self) -> list[str]:
        """Every changed path (modified, added, untracked), sorted."""
        return sorted(self.new_files | self.ranges.keys())

    def touched(self) -> list[str]:
        """``paths`` and the files with only deletions, sorted: what the suspects read."""
        return sorted(self.new_files | self.ranges.keys() | self.deletions.keys())

    def changed(self, path: str, lines: Iterable[int]) -> list[int]:
        """The ones of ``lines`` (sorted ascending) that the change added or modified in ``path``."""
        if path in self.new_files:
            return list(lines)
        ranges = self.ranges.get(path)
        if not ranges:
            return []
        starts = [first for first, _ in ranges]
        out = []
        for line in lines:
            i = bisect.bisect_right(starts, line) - 1
            if i >= 0 and ranges[i][1] >= line:
                out.append(line)
        return out


class FileCoverage(_Frozen):
    """One measured file with missed lines: ``path`` (relative to the project root when
    inside it), ``percent`` of its executable lines that ran (0-100, 2 decimals) and
    ``missing``, its executable lines that did not run as compact ranges
    (``"7, 12-13"``), cut after ``RANGE_CHARS`` characters with ``, …``."""

    path: str
    percent: float
    missing: str


class ChangedNotRun(_Frozen):
    """Lines the working tree and index add or modify relative to ``HEAD`` that are
    executable and did not run: ``path`` and ``lines`` as compact ranges (``"12-13"``)."""

    path: str
    lines: str


class CoverageOmitted(_Frozen):
    """What the coverage budgets cut: ``files`` with missed lines not listed, missed
    ``lines`` whose numbers the ``RANGE_CHARS`` cut left out (of the listed files and of
    ``changed_not_run``), ``changed_files``: files of ``changed_not_run`` and
    ``changed_not_measured`` not listed."""

    files: int = 0
    lines: int = 0
    changed_files: int = 0


class CoverageSummary(_Frozen):
    """Line coverage of a run or of coverage reports.

    ``percent``: executable lines that ran, of all measured (0-100, 2 decimals; 100
    when none is executable), None when nothing was measured (``problem`` says why).
    ``statements``/``missed``: executable lines measured, and those that did not run.
    ``files_measured``: files in the data. ``files``: the project's source files (not
    test code) with missed lines, most missed first (``COVERAGE_FILES_LISTED``). ``changed_not_run``: per file, changed
    lines (``git diff HEAD`` and untracked files) that are executable and did not run;
    None when the root is not in a git repository (or for reports), and when no test
    ran (``ran_a_test``: with nothing run, "not run" says nothing of the change).
    ``changed_not_measured``: changed Python files (``.py``; test code left out, by the
    engine's rule ``engine.models.is_test_path``) that coverage.py did not measure: never
    imported by the run, or left out by the project's configuration (``omit``, ``source``); None as
    ``changed_not_run``. ``omitted``: what
    the budgets cut. ``data_path``: the coverage.py data file of the run (combined over
    its pytest processes), for ``coverage report`` and friends; None for reports.
    """

    percent: float | None
    statements: int = 0
    missed: int = 0
    files_measured: int = 0
    files: list[FileCoverage] = Field(default_factory=list)
    changed_not_run: list[ChangedNotRun] | None = None
    changed_not_measured: list[str] | None = None
    omitted: CoverageOmitted = Field(default_factory=CoverageOmitted)
    data_path: str | None = None
    problem: str | None = None


# -- line sets -----------------------------------------------------------------------


def line_ranges(lines: Iterable[int]) -> list[tuple[int, int]]:
    """Ascending line numbers as ``(first, last)`` runs: ``[7, 12, 13]`` -> ``[(7, 7), (12, 13)]``."""
    out: list[tuple[int, int]] = []
    for line in lines:
        if out and line == out[-1][1] + 1:
            out[-1] = (out[-1][0], line)
        else:
            out.append((line, line))
    return out


def ranges_text(lines: list[int], max_chars: int = RANGE_CHARS) -> tuple[str, int]:
    """Ascending line numbers as compact ranges, ``"7, 12-13"``, cut to about
    ``max_chars`` characters (whole ranges only, then ``, …``); returns the text and the
    count of line numbers cut."""
    parts: list[str] = []
    used = 0
    shown = 0
    for first, last in line_ranges(lines):
        part = str(first) if first == last else f"{first}-{last}"
        if parts and used + 2 + len(part) > max_chars:
            return ", ".join(parts) + ", …", len(lines) - shown
        parts.append(part)
        used += len(part) + (2 if len(parts) > 1 else 0)
        shown += last - first + 1
    return ", ".join(parts), 0


def summarize_coverage(
    lines: LineSets,
    *,
    root: str | None = None,
    changed: ChangedLines | None = None,
    data_path: str | None = None,
    tests_ran: bool = True,
) -> CoverageSummary:
    """The answer's summary of ``lines``: totals, the files with missed lines (most
    first, then by path; ``COVERAGE_FILES_LISTED``, ranges cut at ``RANGE_CHARS``; test
    code, ``engine.models.is_test_path``, counted in the totals but not listed) and,
    with ``changed``, the changed executable lines that did not run per file (by path)
    and the changed files not measured. Paths are written relative to ``root`` when
    they are absolute and inside it.

    ``tests_ran`` False (``ran_a_test`` of the run's counts: every test deselected or
    skipped, an empty selection, only collection or setup errors) leaves the
    changed-lines-not-run claim out (``changed_not_run`` None, so the text has no
    ``changed lines not run`` line and no ``every changed line ran``): the lines that
    ran at import and collection are all there is, and a changed line no test had the
    chance to run says nothing. The totals and the files stay as measured."""
    statements = missed_total = 0
    per_file: list[tuple[str, int, list[int]]] = []
    for path, executable, missed in lines.files():
        shown_path = relative_path(path, root)
        statements += executable
        missed_total += len(missed)
        per_file.append((shown_path, executable, missed))
    # test code's missed lines (helpers, skipped branches) say nothing of the code under test
    with_missed = sorted((f for f in per_file if f[2] and not is_test_path(f[0])), key=lambda f: (-len(f[2]), f[0]))
    files: list[FileCoverage] = []
    cut_lines = 0
    for path, executable, missed in with_missed[:COVERAGE_FILES_LISTED]:
        text, cut = ranges_text(missed)
        cut_lines += cut
        files.append(FileCoverage(path=path, percent=_percent(executable - len(missed), executable), missing=text))
    changed_not_run: list[ChangedNotRun] | None = None
    changed_not_measured: list[str] | None = None
    changed_files = 0
    if changed is not None:
        changed_files_measured = sorted(f for f in per_file if f[0] in changed) if tests_ran else []
        hit = [(path, changed.changed(path, missed)) for path, _, missed in changed_files_measured]
        hit = [(path, found) for path, found in hit if found]
        not_run = []
        for path, found in hit[:COVERAGE_FILES_LISTED]:
            text, cut = ranges_text(found)
            cut_lines += cut
            not_run.append(ChangedNotRun(path=path, lines=text))
        changed_not_run = not_run if tests_ran else None
        measured = {path for path, _, _ in per_file}
        unmeasured = [p for p in changed.paths() if p.endswith(".py") and p not in measured and not is_test_path(p)]
        changed_not_measured = unmeasured[:COVERAGE_FILES_LISTED]
        changed_files = max(0, len(hit) - COVERAGE_FILES_LISTED) + max(0, len(unmeasured) - COVERAGE_FILES_LISTED)
    return CoverageSummary(
        percent=_percent(statements - missed_total, statements) if per_file else None,
        statements=statements,
        missed=missed_total,
        files_measured=len(per_file),
        files=files,
        changed_not_run=changed_not_run,
        changed_not_measured=changed_not_measured,
        omitted=CoverageOmitted(
            files=max(0, len(with_missed) - COVERAGE_FILES_LISTED), lines=cut_lines, changed_files=changed_files
        ),
        data_path=data_path,
        problem=None if per_file else "no file was measured (no code ran under measurement, or all was omitted)",
    )


def ran_a_test(counts: Counts) -> bool:
    """Whether some test of a run with these ``counts`` had its function called: one
    passed, failed, xfailed or xpassed. A skip, a setup error and a collection error
    stop before it (an error counts as none: the engine does not say which phase
    failed, and a test whose teardown failed after it ran is rare)."""
    return counts.passed + counts.failed + counts.xfailed + counts.xpassed > 0


def _percent(ran: int, executable: int) -> float:
    return round(100.0 * ran / executable, 2) if executable else 100.0


def relative_path(path: str, root: str | None) -> str:
    """``path`` relative to ``root`` (``/`` separators) when it is absolute and inside it; else as given."""
    path = path.replace(os.sep, "/") if os.sep != "/" else path
    if root and os.path.isabs(path):
        rel = os.path.relpath(path, root)
        if not rel.startswith(".."):
            return rel.replace(os.sep, "/")
    return path
