"""Line coverage: reading coverage.py JSON reports (``coverage json``) and Cobertura XML
(``coverage xml``, and many other languages' tools) into per-file line sets, and the
summary an answer gives of them (``CoverageSummary``): the total, the files with missed
lines as compact ranges (``7, 12-13``), and the changed lines no test ran.

Python only (outside the Rust report engine): both readers stream (ijson events;
pyexpat with handlers), so a report with per-test contexts of tens of MB costs the line
sets, not the document. Cobertura files are refused when they carry a DTD internal
subset, an entity declaration or an entity reference (XXE, billion laughs), as the
engine refuses them in JUnit XML (``forbidden``); a ``<!DOCTYPE coverage SYSTEM "...">``
line naming Cobertura's external DTD, which Java tools write, is allowed and never
fetched.

No MCP import.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, Literal
from xml.parsers import expat

import ijson
from pydantic import Field

from pytest_mcp_server.domain.policy import COVERAGE_FILES_LISTED, RANGE_CHARS
from pytest_mcp_server.engine.models import ReportError, _Frozen

try:  # the C backend when built (the engine's pure JSON reader uses it too)
    _ijson: Any = ijson.get_backend("yajl2_c")
except ImportError:  # pragma: no cover - wheels without the C extension
    _ijson = ijson


CoverageFormat = Literal["coverage-json", "cobertura"]

SNIFF_BYTES = 4096
_READ_SIZE = 1024 * 1024
_JSON_HEAD = re.compile(rb'^\s*\{\s*"meta"\s*:')
# An XML prolog (declaration, comments, processing instructions, a DOCTYPE up to its
# name) before the root element ``coverage``.
_COBERTURA_HEAD = re.compile(
    rb"^\s*(?:<\?[^>]*\?>\s*|<!--.*?-->\s*)*(?:<!DOCTYPE\s+coverage[\s>\[]|<coverage[\s>/])", re.DOTALL
)


# -- the answer's models -------------------------------------------------------------


@dataclass
class ChangedLines:
    """Lines added or modified relative to ``HEAD``, per path relative to the root.

    ``ranges``: path -> sorted, disjoint ``(first, last)`` line ranges (1-based,
    inclusive) of the new file; ``new_files``: untracked files, every line of which is
    new."""

    ranges: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    new_files: set[str] = field(default_factory=set)

    def __contains__(self, path: str) -> bool:
        return path in self.new_files or path in self.ranges

    def paths(self) -> list[str]:
        """Every changed path (modified, added, untracked), sorted."""
        return sorted(self.new_files | self.ranges.keys())

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
    ``files_measured``: files in the data. ``files``: those with missed lines, most
    missed first (``COVERAGE_FILES_LISTED``). ``changed_not_run``: per file, changed
    lines (``git diff HEAD`` and untracked files) that are executable and did not run;
    None when the root is not in a git repository (or for reports).
    ``changed_not_measured``: changed Python files (``.py``; test modules and
    ``conftest.py`` left out) that coverage.py did not measure: never imported by the
    run, or left out by the project's configuration (``omit``, ``source``); None as
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


@dataclass
class LineSets:
    """Per file (path as the report names it): the executable lines that ``ran`` and
    those that were ``missed``. Merging reports is coverage.py's combine: a line ran
    when it ran in any of them."""

    ran: dict[str, set[int]] = field(default_factory=dict)
    missed: dict[str, set[int]] = field(default_factory=dict)

    def touch(self, path: str) -> None:
        """Note ``path`` as measured (a file with no executable line has no line to add)."""
        self.ran.setdefault(path, set())

    def add(self, path: str, line: int, hit: bool) -> None:
        """Note ``line`` of ``path`` as executable, run when ``hit``."""
        (self.ran if hit else self.missed).setdefault(path, set()).add(line)
        other = self.missed if hit else self.ran
        other.setdefault(path, set())

    def drop_under(self, directory: str) -> None:
        """Forget the files inside ``directory`` (an absolute path)."""
        prefix = os.path.join(directory, "")
        for sets in (self.ran, self.missed):
            for path in [p for p in sets if p.startswith(prefix)]:
                del sets[path]

    def files(self) -> Iterator[tuple[str, int, list[int]]]:
        """``(path, executable lines, missed lines ascending)`` per file, sorted by path."""
        for path in sorted(self.ran.keys() | self.missed.keys()):
            ran = self.ran.get(path, set())
            missed = self.missed.get(path, set()) - ran
            yield path, len(ran) + len(missed), sorted(missed)


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
) -> CoverageSummary:
    """The answer's summary of ``lines``: totals, the files with missed lines (most
    first, then by path; ``COVERAGE_FILES_LISTED``, ranges cut at ``RANGE_CHARS``) and,
    with ``changed``, the changed executable lines that did not run per file (by path).
    Paths are written relative to ``root`` when they are absolute and inside it."""
    statements = missed_total = 0
    per_file: list[tuple[str, int, list[int]]] = []
    for path, executable, missed in lines.files():
        shown_path = _relative(path, root)
        statements += executable
        missed_total += len(missed)
        per_file.append((shown_path, executable, missed))
    with_missed = sorted((f for f in per_file if f[2]), key=lambda f: (-len(f[2]), f[0]))
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
        changed_not_run = []
        hit = [(path, changed.changed(path, missed)) for path, _, missed in sorted(per_file) if path in changed]
        hit = [(path, found) for path, found in hit if found]
        for path, found in hit[:COVERAGE_FILES_LISTED]:
            text, cut = ranges_text(found)
            cut_lines += cut
            changed_not_run.append(ChangedNotRun(path=path, lines=text))
        measured = {path for path, _, _ in per_file}
        unmeasured = [p for p in changed.paths() if p.endswith(".py") and p not in measured and not _is_test_file(p)]
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


def _is_test_file(path: str) -> bool:
    """A test module or conftest by pytest's default ``python_files`` (``test_*.py``,
    ``*_test.py``) and ``conftest.py``: the code that measures, which a project's
    coverage configuration usually leaves out (``omit = tests/*``, ``source = pkg``)."""
    name = path.rsplit("/", 1)[-1]
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"


def _percent(ran: int, executable: int) -> float:
    return round(100.0 * ran / executable, 2) if executable else 100.0


def _relative(path: str, root: str | None) -> str:
    path = path.replace(os.sep, "/") if os.sep != "/" else path
    if root and os.path.isabs(path):
        rel = os.path.relpath(path, root)
        if not rel.startswith(".."):
            return rel.replace(os.sep, "/")
    return path


# -- reading reports -----------------------------------------------------------------


def sniff_coverage(path: str) -> CoverageFormat | None:
    """``coverage-json`` for a coverage.py JSON report (an object whose first key is
    ``meta``), ``cobertura`` for an XML document whose root element is ``coverage``,
    else None (a test report, or not readable: the engine says why)."""
    try:
        with open(path, "rb") as f:
            head = f.read(SNIFF_BYTES)
    except OSError:
        return None
    head = head.removeprefix(b"\xef\xbb\xbf")
    if _JSON_HEAD.match(head):
        return "coverage-json"
    if _COBERTURA_HEAD.match(head):
        return "cobertura"
    return None


def read_coverage_reports(paths: list[str], formats: list[CoverageFormat]) -> LineSets:
    """The line sets of coverage reports (``formats[i]`` is ``paths[i]``'s, from
    ``sniff_coverage``), merged as coverage.py combines data.

    Raises ``ReportError``: ``not_found``/``unreadable`` for a file that cannot be
    read, ``malformed`` for invalid JSON/XML or a wrong type, ``not_a_report`` for a
    JSON report without ``files``, ``forbidden`` for a DTD internal subset, an entity
    declaration or an entity reference."""
    lines = LineSets()
    for path, kind in zip(paths, formats, strict=True):
        try:
            with open(path, "rb") as f:
                if kind == "coverage-json":
                    _read_json(f, path, lines)
                else:
                    _read_cobertura(f, path, lines)
        except FileNotFoundError:
            raise ReportError("not_found", path, "no such file; check the path") from None
        except OSError as exc:
            raise ReportError("unreadable", path, f"cannot read the file ({exc.strerror or exc})") from None
    return lines


def _read_json(f: IO[bytes], path: str, lines: LineSets) -> None:
    """Stream a ``coverage json`` document: only ``files.<path>.executed_lines`` and
    ``files.<path>.missing_lines`` are kept (contexts, functions and classes are
    skipped event by event)."""
    depth = 0
    keys: list[str | None] = [None] * 4  # the map key at depths 1..3 (index = depth)
    seen_files = False
    try:
        for event, value in _ijson.basic_parse(f, buf_size=_READ_SIZE):
            if event in ("start_map", "start_array"):
                depth += 1
                if depth < len(keys):
                    keys[depth] = None
                continue
            if event in ("end_map", "end_array"):
                depth -= 1
                continue
            if event == "map_key":
                if depth < len(keys):
                    keys[depth] = value
                if depth == 1 and value == "files":
                    seen_files = True
                elif depth == 2 and keys[1] == "files":
                    lines.touch(str(value))
                continue
            # a scalar: an item of files.<path>.executed_lines/missing_lines sits at depth 4
            if depth == 4 and keys[1] == "files" and keys[3] in ("executed_lines", "missing_lines"):
                if event != "number" or isinstance(value, bool) or int(value) != value or value < 1:
                    raise ReportError(
                        "malformed",
                        path,
                        f"{keys[2]}: {keys[3]} holds {value!r}, not a line number; pass the file `coverage json` wrote",
                    )
                lines.add(str(keys[2]), int(value), keys[3] == "executed_lines")
    except ijson.JSONError as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ReportError("malformed", path, f"invalid JSON ({first}); pass the file `coverage json` wrote") from None
    except UnicodeDecodeError:
        raise ReportError("malformed", path, "the JSON is not UTF-8; pass the file `coverage json` wrote") from None
    if not seen_files:
        raise ReportError(
            "not_a_report", path, 'a JSON object with "meta" but no "files": not a coverage.py JSON report'
        )


class _Refused(Exception):
    pass


def _read_cobertura(f: IO[bytes], path: str, lines: LineSets) -> None:
    """Stream a Cobertura document: each ``class`` element's ``filename`` and its own
    ``lines/line`` elements (``number``, ``hits``); a method's lines repeat its class's
    and are skipped. The root must carry ``line-rate`` (Cobertura's DTD requires it)."""
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    stack: list[str] = []
    current: list[str | None] = [None]
    problem: list[ReportError] = []

    def refuse(what: str) -> None:
        problem.append(
            ReportError(
                "forbidden",
                path,
                f"the document has {what}; DTDs and entities are never processed (XXE). "
                "Pass the file the coverage tool wrote",
                f"line {parser.CurrentLineNumber}, column {parser.CurrentColumnNumber}",
            )
        )
        raise _Refused

    def doctype(name: str, system_id: str | None, public_id: str | None, internal_subset: int) -> None:
        if internal_subset:
            refuse("a DTD internal subset")

    def start(tag: str, attrs: dict[str, str]) -> None:
        if not stack and "line-rate" not in attrs:  # required by Cobertura's DTD; Clover's <coverage> has none
            problem.append(
                ReportError(
                    "not_a_report",
                    path,
                    "the root <coverage> has no line-rate attribute: not a Cobertura report; "
                    "pass the file `coverage xml` (or another Cobertura writer) wrote",
                    f"line {parser.CurrentLineNumber}",
                )
            )
            raise _Refused
        if tag == "class":
            current[0] = attrs.get("filename")
            if current[0] is not None:
                lines.touch(current[0])
        elif tag == "line" and stack[-1:] == ["lines"] and stack[-2:-1] == ["class"] and current[0] is not None:
            try:
                number, hits = int(attrs["number"]), int(attrs.get("hits", "0"))
            except (KeyError, ValueError):
                where = f"line {parser.CurrentLineNumber}"
                problem.append(
                    ReportError("malformed", path, f"a <line> without an integer number/hits in {current[0]}", where)
                )
                raise _Refused from None
            lines.add(current[0], number, hits > 0)
        stack.append(tag)

    def end(tag: str) -> None:
        stack.pop()
        if tag == "class":
            current[0] = None

    parser.StartDoctypeDeclHandler = doctype
    parser.EntityDeclHandler = lambda *args: refuse("an entity declaration")
    parser.SkippedEntityHandler = lambda *args: refuse("an entity reference")
    parser.ExternalEntityRefHandler = lambda *args: refuse("an external entity")  # type: ignore[assignment]
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        while chunk := f.read(_READ_SIZE):
            parser.Parse(chunk, False)
        parser.Parse(b"", True)
    except _Refused:
        raise problem[0] from None
    except expat.ExpatError as exc:
        if problem:
            raise problem[0] from None
        raise ReportError(
            "malformed",
            path,
            f"invalid XML ({expat.ErrorString(exc.code)}); pass the file the coverage tool wrote",
            f"line {exc.lineno}, column {exc.offset}",
        ) from None
