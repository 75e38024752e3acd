"""Which changed code the failing tests ran (``Suspect``): the answer's pointer at the
change behind a failure that no traceback passes through (a wrong value caught by an
assertion in the test).

The unit is a *hunk*: a run of consecutive changed executable lines (``git diff HEAD``
and untracked files, ``domain.coverage_answer.ChangedLines``) inside one function, or at module
level; a changed line inside a multi-line statement counts at the statement's first
line, where coverage.py records it (``source_shape``). A test ran a hunk when its
per-test coverage context (pytest-cov's ``--cov-context=test``: ``<node id>|run``,
``|setup``, ``|teardown``; an ``affected`` run's map data: the node id) covers one of
the hunk's lines. When no
failing test ran any of them (a ``return`` moved into a branch the failing tests skip),
the tests that ran a line of the function holding the hunk count instead: the change is
in code they ran. Module-level code runs at import, outside every test's context, so a
module-level hunk counts only its own lines.

Hunks run by failing tests are ranked by the Ochiai coefficient,
``failing / sqrt(all failing × (failing + passing))``, as spectrum-based fault
localisation ranks statements (Abreu, Zoeteweij, van Gemund, "On the Accuracy of
Spectrum-based Fault Localization", TAICPART 2007): code that every failing test ran and
no passing test ran comes first. The engine then groups the failures with no cause
frame that all ran the top suspect as one (``engine.summarize``'s ``suspect``,
``app.runner.regrouped``).

A plain call records nothing: with the test map an earlier ``affected`` call left, what
its failing tests ran is what the map last recorded of them, one block per function
(``changed_hunks``, ``rank_recorded``; ``app.map_suspects``). Its hunk is a function's
changed lines, and a module-level hunk is reached through the names it binds.

No I/O: the caller reads the contexts (``engine.coverage_reports.read_line_contexts``) and the
changed files' source.
"""

from __future__ import annotations

import ast
import io
import math
import tokenize
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field

from pydantic import Field

from pytest_mcp_server.domain.blocks import Block, FileBlocks
from pytest_mcp_server.domain.coverage_answer import ChangedLines, line_ranges
from pytest_mcp_server.domain.elements import bound_names, is_docstring
from pytest_mcp_server.engine.coverage_reports import LineContexts
from pytest_mcp_server.engine.models import _Frozen

FAILING_OUTCOMES = frozenset({"failed", "error"})
"""Outcomes (``engine.read_report``'s, pytest-json-report's names) that make a test a failing one here;
``xfailed`` is expected, ``skipped`` ran nothing of interest."""

PASSING_OUTCOMES = frozenset({"passed", "xpassed"})
"""Outcomes of tests that ran the code and did not fail."""


class Suspect(_Frozen):
    """Changed code that failing tests ran: ``path`` (relative to the root), ``lines``
    (compact ranges of the hunk's changed lines, ``"12-13"``), how many ``failing`` and
    ``passing`` tests ran it (of ``failing_total``/``passing_total`` in the run), and
    ``by`` what: ``"line"`` when they ran a changed line, ``"function"`` when only
    another line of the function holding it, ``"import"`` when the changed lines ran
    only at import, outside any test (module-level code, or a function a module-level
    call runs; before each test of the run, and only those: an affected run deselects
    the others; each test of the run counts as having run them). A plain call's suspects
    come from the test map's last recording, not from this run (``rank_recorded``):
    ``"map_function"`` (the failing tests ran the function holding it when the map last
    recorded them), ``"map_name"`` (their recorded code refers to a module-level name it
    binds), ``"map_import"`` (the map recorded it as run at import)."""

    path: str
    lines: str
    failing: int
    passing: int
    failing_total: int
    passing_total: int
    by: str = "line"
    failing_tests: frozenset[str] = Field(default_factory=frozenset, exclude=True)
    """The failing tests' node ids (not sent: the engine's suspect group reads them)."""


@dataclass(frozen=True)
class _Hunk:
    lines: tuple[int, ...]  # changed lines, as the answer names them
    measured: tuple[int, ...]  # the lines coverage.py records them under
    span: tuple[int, int] | None  # the enclosing function's first and last line


@dataclass(frozen=True)
class SourceShape:
    """What ``rank_suspects`` reads off a changed file's source: ``functions``, the
    ``(first, last)`` lines of every function and method (decorators included), and
    ``statement_start``, for each line inside a statement that spans several lines, the
    line that statement starts on (coverage.py records a multi-line statement under its
    first line)."""

    functions: list[tuple[int, int]]
    statement_start: dict[int, int]
    statements: frozenset[int] = frozenset()
    """Lines a statement starts on (docstrings left out): the executable lines, as far
    as the source tells (for data that names only the lines that ran)."""
    headers: frozenset[int] = frozenset()
    """The lines a function's definition is recorded under (its ``def`` line and each
    decorator's first line): they run when the module defines the function, not when
    the function runs."""


def source_shape(source: str) -> SourceShape:
    """The ``SourceShape`` of ``source``; empty when it does not parse (every line is
    then read as module-level code of its own)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return SourceShape([], {})
    functions = []
    statements = set()
    headers = set()
    innermost: dict[int, tuple[int, int]] = {}  # line -> (span length, first line) of its innermost statement
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or node.end_lineno is None:
            continue
        docstring = (
            isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        )
        if not docstring:
            statements.add(node.lineno)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            functions.append((first, node.end_lineno))
            headers.update([node.lineno, *(d.lineno for d in node.decorator_list)])
        if node.end_lineno > node.lineno:
            length = node.end_lineno - node.lineno
            for line in range(node.lineno + 1, node.end_lineno + 1):
                if line not in innermost or length < innermost[line][0]:
                    innermost[line] = (length, node.lineno)
    return SourceShape(
        sorted(functions, key=lambda s: (s[0], -s[1])),
        {k: v[1] for k, v in innermost.items()},
        frozenset(statements),
        frozenset(headers),
    )


def _innermost(spans: list[tuple[int, int]], line: int) -> tuple[int, int] | None:
    inside = [s for s in spans if s[0] <= line <= s[1]]
    return min(inside, key=lambda s: s[1] - s[0]) if inside else None


def _hunks(measured_of: dict[int, int], spans: list[tuple[int, int]]) -> list[_Hunk]:
    """Runs of consecutive changed lines (those in ``measured_of``: changed line -> the
    executable line it is recorded under) inside one function, or at module level."""
    hunks: list[_Hunk] = []
    for first, last in line_ranges(sorted(measured_of)):
        current: list[int] = []
        span: tuple[int, int] | None = None
        for line in range(first, last + 1):
            here = _innermost(spans, line)
            if current and here != span:
                hunks.append(_Hunk(tuple(current), tuple(measured_of[x] for x in current), span))
                current = []
            span = here
            current.append(line)
        if current:
            hunks.append(_Hunk(tuple(current), tuple(measured_of[x] for x in current), span))
    return hunks


def node_id_of_context(context: str) -> str | None:
    """The test of a pytest-cov context (``tests/t.py::test_a|run`` -> its node id);
    None for the empty context (code run outside any test: imports, collection)."""
    if not context:
        return None
    node_id, sep, phase = context.rpartition("|")
    return node_id if sep and phase in ("setup", "run", "teardown") else context


def rank_suspects(
    changed: ChangedLines,
    measured: Mapping[str, LineContexts],
    outcomes: Mapping[str, str],
    sources: Mapping[str, str],
    limit: int,
) -> list[Suspect]:
    """The changed hunks that failing tests ran, best first (Ochiai, then more failing
    tests, then path and line), at most ``limit``.

    ``measured``: per changed file (path relative to the root, as ``changed`` names it)
    its executable lines and the contexts of each line that ran (every line of the file,
    so a function's other lines count too); a hunk is made of changed *executable* lines
    (a comment or docstring edit is none). ``outcomes``: node id -> outcome of every
    test of the run. ``sources``: the changed files' text, for their functions (a file
    missing here is read as module-level code only)."""
    failing_total = sum(1 for o in outcomes.values() if o in FAILING_OUTCOMES)
    passing_total = sum(1 for o in outcomes.values() if o in PASSING_OUTCOMES)
    if failing_total == 0:
        return []
    scored: list[tuple[float, int, str, int, Suspect]] = []
    for path in changed.touched():
        file = measured.get(path)
        if file is None:
            continue
        source = sources.get(path, "")
        shape = source_shape(source)
        executable = file.executable if file.complete else file.executable | shape.statements
        lines = _changed_lines(changed, path, source)
        # a changed line counts when coverage.py can record it: itself, or the first
        # line of the multi-line statement it is part of (a comment or docstring edit is neither)
        measured_of: dict[int, int] = {}
        for line in lines:
            for candidate in (line, shape.statement_start.get(line)):
                if candidate is not None and candidate in executable:
                    measured_of[line] = candidate
                    break
        for hunk in _hunks(measured_of, shape.functions):
            failing, passing = _tests_of(hunk.measured, file.contexts, outcomes)
            by = "line"
            if not failing and hunk.span is not None:
                first, last = hunk.span
                failing, passing = _tests_of(range(first, last + 1), file.contexts, outcomes)
                by = "function"
            at_import = [n for n in hunk.measured if "" in file.contexts.get(n, ())]
            if hunk.span is not None:
                # a function's def and decorator lines run when the module defines it: a
                # function whose body never ran (a new one nobody calls) ran nothing
                at_import = [n for n in at_import if n not in shape.headers]
            if not failing and at_import:
                # code run at import (a constant, a table built once, a function a
                # decorator or a module-level call runs): it ran before every test of
                # the run and may shape any of them
                failing, passing = _every_test(outcomes)
                by = "import"
            if not failing:
                continue
            score = _ochiai(len(failing), len(passing), failing_total)
            text = _ranges_text(hunk.lines)
            suspect = Suspect(
                path=path,
                lines=text,
                failing=len(failing),
                passing=len(passing),
                failing_total=failing_total,
                passing_total=passing_total,
                by=by,
                failing_tests=frozenset(failing),
            )
            scored.append((-score, -len(failing), path, hunk.lines[0], suspect))
    scored.sort(key=lambda s: s[:4])
    return [s[4] for s in scored[:limit]]


def _changed_lines(changed: ChangedLines, path: str, source: str) -> list[int]:
    """The lines of ``path`` that ``changed`` names, ascending: every line of a new file;
    else its changed lines and, for a deletion, the lines on either side of where the
    deleted code was."""
    if path in changed.new_files:
        return list(range(1, source.count("\n") + 2))
    lines = [line for first, last in changed.ranges.get(path, []) for line in range(first, last + 1)]
    lines += [line for after in changed.deletions.get(path, []) for line in (after, after + 1) if line > 0]
    return sorted(set(lines))


def spans_to_record(changed: ChangedLines, path: str, source: str) -> list[tuple[int, int]] | None:
    """The line spans of ``path`` (relative to the root, as ``changed`` names it) whose
    functions an ``affected`` run records line by line, for ``rank_suspects``: for each
    line ``_changed_lines`` names, the outermost function or method holding it, as
    ``(first, last)`` (decorators included: a decorated function's code starts on its
    first decorator), ascending. A function nested in one of them lies inside its span.
    ``rank_suspects`` reads no other function's lines: a changed line, the function
    holding it, or module-level code (which the recorder writes line by line anyway).
    None (every line) for a new file, and for a source that does not parse."""
    if path in changed.new_files:
        return None
    shape = source_shape(source)
    if not shape.functions and not shape.statements and source.strip():
        return None  # it does not parse: what runs of it is unknown here
    spans: set[tuple[int, int]] = set()
    for line in _changed_lines(changed, path, source):
        holding = [span for span in shape.functions if span[0] <= line <= span[1]]
        if holding:
            spans.add(max(holding, key=lambda span: span[1] - span[0]))
    return sorted(spans)


def _tests_of(
    lines: Iterable[int], contexts: Mapping[int, tuple[str, ...]], outcomes: Mapping[str, str]
) -> tuple[set[str], set[str]]:
    failing: set[str] = set()
    passing: set[str] = set()
    for line in lines:
        for context in contexts.get(line, ()):
            node_id = node_id_of_context(context)
            if node_id is None:
                continue
            outcome = outcomes.get(node_id)
            if outcome in FAILING_OUTCOMES:
                failing.add(node_id)
            elif outcome in PASSING_OUTCOMES:
                passing.add(node_id)
    return failing, passing


# -- A plain call's suspects, from the test map (app.map_suspects) ------------------


@dataclass(frozen=True)
class ChangedHunk:
    """A run of consecutive changed lines as a plain call reads it against the test map
    (``changed_hunks``): ``path`` (relative to the root), ``lines`` (ascending),
    ``function``: the qualified name (``domain.blocks.Block.name``) of the innermost
    function whose definition holds them (its decorators and signature included: they
    are part of its fingerprint), None at module level; ``names``: at module level, the
    names the statements holding them bind (``domain.elements.bound_names``; a class
    attribute's own name)."""

    path: str
    lines: tuple[int, ...]
    function: str | None
    names: frozenset[str] = frozenset()


@dataclass(frozen=True)
class RecordedRuns:
    """What the test map recorded of a run's tests, when each last ran in an affected
    call (``app.map_suspects``): ``functions``, (path, qualified name) -> the tests whose
    entry holds that function's block (its fingerprint may have changed since: the name
    stays); ``readers``, a name -> the tests whose recorded blocks refer to it (filled
    for the names ``changed_hunks`` asks about only); ``at_import``, the (path,
    qualified name) of the functions recorded as run at import, outside every test."""

    functions: Mapping[tuple[str, str], frozenset[str]]
    readers: Mapping[str, frozenset[str]] = dataclass_field(default_factory=dict)
    at_import: frozenset[tuple[str, str]] = frozenset()


def changed_hunks(
    changed: ChangedLines, sources: Mapping[str, str], blocks: Mapping[str, FileBlocks]
) -> list[ChangedHunk]:
    """The hunks of ``changed`` in the files of ``sources`` (their text now) and
    ``blocks`` (their ``domain.blocks.FileBlocks`` now): its lines of code (``code_lines``:
    a comment, a blank line or a docstring is none; a decorator or signature line counts
    for its function). A function's changed lines are one hunk, with its name (the map
    knows which functions a test ran, not which of their lines); module-level ones, each
    run of consecutive lines, with the names bound there. A file missing from either
    mapping (not Python, not readable) gives none. Sorted by path and first line."""
    hunks: list[ChangedHunk] = []
    for path in changed.touched():
        source = sources.get(path)
        file = blocks.get(path)
        if source is None or file is None:
            continue
        code = code_lines(source)
        owners: dict[int, Block | None] = {}
        for line in _changed_lines(changed, path, source):
            if line not in code:
                continue
            holders = [b for b in file.functions if b.start <= line <= b.last]
            owners[line] = max(holders, key=lambda b: (b.start, -b.last)) if holders else None
        # a function is the map's unit: its changed lines are one hunk
        by_function: dict[str, list[int]] = {}
        for line, owner in sorted(owners.items()):
            if owner is not None:
                by_function.setdefault(owner.name, []).append(line)
        module_lines = sorted(line for line, owner in owners.items() if owner is None)
        bound = _bound_by_line(source, module_lines)
        for first, last in line_ranges(module_lines):
            names = frozenset().union(*(bound.get(line, frozenset()) for line in range(first, last + 1)))
            hunks.append(ChangedHunk(path, tuple(range(first, last + 1)), None, names))
        hunks += [ChangedHunk(path, tuple(lines), name, frozenset()) for name, lines in by_function.items()]
    return sorted(hunks, key=lambda h: (h.path, h.lines))


def code_lines(source: str) -> frozenset[int]:
    """The lines of ``source`` that hold code: a token other than a comment or a line
    break, outside docstrings (a module's, a class's, a function's). Empty when the
    source does not parse."""
    try:
        tree = ast.parse(source)
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (SyntaxError, ValueError, RecursionError, MemoryError, tokenize.TokenError):
        return frozenset()
    skipped = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    lines = {line for token in tokens if token.type not in skipped for line in range(token.start[0], token.end[0] + 1)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if is_docstring(first):
                lines -= set(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return frozenset(lines)


def _bound_by_line(source: str, lines: Iterable[int]) -> dict[int, frozenset[str]]:
    """For each of ``lines`` (module-level code) the names the innermost module-level
    statement holding it binds: a class body's statement inside a class (a class
    attribute), the class's own name on its header."""
    wanted = sorted(set(lines))
    if not wanted:
        return {}
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    out: dict[int, frozenset[str]] = {}
    for line in wanted:
        body: list[ast.stmt] = tree.body
        names: frozenset[str] = frozenset()
        while True:
            holder = next((s for s in body if _first_line(s) <= line <= (s.end_lineno or s.lineno)), None)
            if holder is None:
                break
            if isinstance(holder, ast.ClassDef) and line >= (holder.body[0].lineno if holder.body else line + 1):
                body = holder.body  # an attribute of the class: its own names
                continue
            names = frozenset(bound_names(holder))
            break
        out[line] = names
    return out


def _first_line(statement: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(statement, "decorator_list", [])
    return min([statement.lineno, *(d.lineno for d in decorators)])


def rank_recorded(
    hunks: Iterable[ChangedHunk], recorded: RecordedRuns, outcomes: Mapping[str, str], limit: int
) -> list[Suspect]:
    """The ``hunks`` that failing tests of this run ran as the test map last recorded
    them, ranked as ``rank_suspects`` ranks (Ochiai over this run's ``outcomes``: node
    id -> outcome of every test), at most ``limit``. A function's hunk counts the tests
    whose entry holds the function (``by`` ``"map_function"``), or, when none of them
    failed and the map recorded the function as run at import, every test of the run
    (``"map_import"``); a module-level hunk counts the tests whose recorded code refers
    to a name it binds (``"map_name"``). A test the map does not hold ran nothing here."""
    failing_total = sum(1 for o in outcomes.values() if o in FAILING_OUTCOMES)
    passing_total = sum(1 for o in outcomes.values() if o in PASSING_OUTCOMES)
    if failing_total == 0:
        return []
    scored: list[tuple[float, int, str, int, Suspect]] = []
    for hunk in hunks:
        if hunk.function is not None:
            ran = recorded.functions.get((hunk.path, hunk.function), frozenset())
            by = "map_function"
        else:
            ran = frozenset().union(*(recorded.readers.get(name, frozenset()) for name in hunk.names))
            by = "map_name"
        failing = {t for t in ran if outcomes.get(t) in FAILING_OUTCOMES}
        passing = {t for t in ran if outcomes.get(t) in PASSING_OUTCOMES}
        if not failing and hunk.function is not None and (hunk.path, hunk.function) in recorded.at_import:
            failing, passing = _every_test(outcomes)
            by = "map_import"
        if not failing:
            continue
        score = _ochiai(len(failing), len(passing), failing_total)
        suspect = Suspect(
            path=hunk.path,
            lines=_ranges_text(hunk.lines),
            failing=len(failing),
            passing=len(passing),
            failing_total=failing_total,
            passing_total=passing_total,
            by=by,
            failing_tests=frozenset(failing),
        )
        scored.append((-score, -len(failing), hunk.path, hunk.lines[0], suspect))
    scored.sort(key=lambda s: s[:4])
    return [s[4] for s in scored[:limit]]


def _every_test(outcomes: Mapping[str, str]) -> tuple[set[str], set[str]]:
    """The failing and the passing tests of a run (node id -> outcome): what code run at
    import ran before, all of them."""
    failing = {t for t, o in outcomes.items() if o in FAILING_OUTCOMES}
    passing = {t for t, o in outcomes.items() if o in PASSING_OUTCOMES}
    return failing, passing


def _ochiai(failing: int, passing: int, failing_total: int) -> float:
    """Ochiai's suspiciousness of code run by ``failing`` failing and ``passing`` passing
    tests, of ``failing_total`` failing in the run (Abreu et al., 2007): 0.0 to 1.0."""
    return failing / math.sqrt(failing_total * (failing + passing))


def _ranges_text(lines: Iterable[int]) -> str:
    """``[3, 4, 5, 9]`` -> ``"3-5, 9"``."""
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in line_ranges(lines))
