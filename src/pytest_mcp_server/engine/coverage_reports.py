"""Coverage reports read streaming into per-file line sets: coverage.py JSON reports
(``coverage json``) and Cobertura XML (``coverage xml``, and many other languages' tools).

Python only (outside the Rust report engine, which never sees coverage): both readers
stream (ijson events; pyexpat with handlers), so a report with per-test contexts of tens
of MB costs the line sets, not the document. Cobertura files are refused when they carry
a DTD internal subset, an entity declaration or an entity reference (XXE, billion
laughs), as the engine refuses them in JUnit XML (``forbidden``); a ``<!DOCTYPE coverage
SYSTEM "...">`` line naming Cobertura's external DTD, which Java tools write, is allowed
and never fetched. What an answer says of them is ``domain.coverage_answer``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any, Literal
from xml.parsers import expat

import ijson

from pytest_mcp_server.engine.models import SNIFF_BYTES, ReportError

try:  # the C backend when built (the engine's pure JSON reader uses it too)
    _ijson: Any = ijson.get_backend("yajl2_c")
except ImportError:  # pragma: no cover - wheels without the C extension
    _ijson = ijson


CoverageFormat = Literal["coverage-json", "cobertura"]

_READ_SIZE = 1024 * 1024
_JSON_HEAD = re.compile(rb'^\s*\{\s*"meta"\s*:')
# An XML prolog (declaration, comments, processing instructions, a DOCTYPE up to its
# name) before the root element ``coverage``.
_COBERTURA_HEAD = re.compile(
    rb"^\s*(?:<\?[^>]*\?>\s*|<!--.*?-->\s*)*(?:<!DOCTYPE\s+coverage[\s>\[]|<coverage[\s>/])", re.DOTALL
)


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


@dataclass(frozen=True)
class LineContexts:
    """One file of a ``coverage json --show-contexts`` report: its ``executable`` lines
    (executed and missing) and, per executed line, the contexts that ran it (pytest-cov's
    ``<node id>|run``; ``""`` for code run outside every test). ``complete``: whether
    ``executable`` holds every executable line; False for data that names only the lines
    that ran (an ``affected`` run's map data), whose reader then takes the lines the
    source's statements start on too (``domain.suspects``)."""

    executable: frozenset[int]
    contexts: dict[int, tuple[str, ...]]
    complete: bool = True


def read_line_contexts(path: str) -> dict[str, LineContexts]:
    """Per file (as the report names it) of a ``coverage json --show-contexts`` report,
    its ``LineContexts``. Streams the document one file at a time (a report of the
    changed files only, as ``run.coverage_run`` writes it, stays small).

    Raises ``ReportError``: ``not_found``/``unreadable`` for a file that cannot be read,
    ``malformed`` for invalid JSON or a value of the wrong type."""
    out: dict[str, LineContexts] = {}
    try:
        with open(path, "rb") as f:
            for name, file in _ijson.kvitems(f, "files", use_float=True):
                if not isinstance(file, dict):
                    raise ReportError(
                        "malformed", path, f"files.{name} is not an object; pass what coverage json wrote"
                    )
                executable = frozenset(_line_numbers(path, name, file, "executed_lines")) | frozenset(
                    _line_numbers(path, name, file, "missing_lines")
                )
                raw = file.get("contexts") or {}
                if not isinstance(raw, dict):
                    raise ReportError("malformed", path, f"files.{name}.contexts is not an object")
                contexts = {
                    int(line): tuple(str(c) for c in ctxs)
                    for line, ctxs in raw.items()
                    if str(line).isdigit() and isinstance(ctxs, list)
                }
                # a line with contexts ran (a lambda's body inside a multi-line statement
                # is recorded under its own line, not the statement's first)
                out[str(name)] = LineContexts(executable=executable | contexts.keys(), contexts=contexts)
    except FileNotFoundError:
        raise ReportError("not_found", path, "no such file; check the path") from None
    except OSError as exc:
        raise ReportError("unreadable", path, f"cannot read the file ({exc.strerror or exc})") from None
    except ijson.JSONError as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ReportError("malformed", path, f"invalid JSON ({first}); pass the file `coverage json` wrote") from None
    return out


def _line_numbers(path: str, name: str, file: dict[str, Any], key: str) -> list[int]:
    values = file.get(key) or []
    if not isinstance(values, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise ReportError("malformed", path, f"files.{name}.{key} is not a list of line numbers")
    return values


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
