"""The report engine facade: one ``summarize`` over two backends.

``native`` is the Rust extension ``pytest_mcp_server.engine._native`` (streams files in chunks
with the GIL released, several files in parallel threads). ``pure`` is the Python twin
in ``pytest_mcp_server.engine.pure`` (the fallback, and the oracle the native code is checked
against). Both write the same canonical JSON bytes; the rules are in ``docs/ENGINE.md``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Literal, get_args

from pytest_mcp_server.engine.models import (
    Budgets,
    CollectedPage,
    ProjectCode,
    ReportSummary,
    RunReport,
    SuspectGroup,
)

Backend = Literal["auto", "native", "pure"]
FormatChoice = Literal["auto", "junit", "pytest-json", "reportlog"]
FORMATS: tuple[str, ...] = get_args(FormatChoice)
"""The ``format`` values ``summarize`` takes."""

BACKEND_ENV = "PYTEST_MCP_SERVER_BACKEND"
"""Environment variable naming the backend ``auto`` means (``native`` or ``pure``):
how tests run the server (a separate process) on one backend; unset or empty: the
native one if it imported, else pure."""

try:  # the extension may be missing (source checkout, unsupported platform)
    from pytest_mcp_server.engine import _native

    # Why the extension did not import (None: it did; `_native` is only bound then).
    _NATIVE_IMPORT_ERROR: str | None = None
except ImportError as exc:  # pragma: no cover - exercised where the wheel is not built
    _NATIVE_IMPORT_ERROR = str(exc)


def native_available() -> bool:
    """True when the Rust extension imported."""
    return _NATIVE_IMPORT_ERROR is None


def resolve_backend(backend: Backend) -> Literal["native", "pure"]:
    """``auto`` -> the backend named by ``$PYTEST_MCP_SERVER_BACKEND`` when set, else
    ``native`` if the extension imported, else ``pure``.

    Raises ``ValueError`` for an unknown name (given or in the variable) and
    ``RuntimeError`` when ``native`` is asked for but the extension did not import.
    """
    if backend == "auto":
        forced = os.environ.get(BACKEND_ENV, "")
        if forced:
            if forced not in ("native", "pure"):
                raise ValueError(f"${BACKEND_ENV} must be 'native' or 'pure', not {forced!r}; unset it for auto")
            return "pure" if forced == "pure" else resolve_backend("native")
        return "native" if native_available() else "pure"
    if backend == "native":
        if not native_available():
            raise RuntimeError(
                f"the native backend is not available (pytest_mcp_server.engine._native did not "
                f"import: {_NATIVE_IMPORT_ERROR}); reinstall the wheel, or use backend='pure'"
            )
        return "native"
    if backend == "pure":
        return "pure"
    raise ValueError(f"backend must be 'auto', 'native' or 'pure', not {backend!r}")


def summarize_bytes(
    paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    format: FormatChoice = "auto",
    backend: Backend = "auto",
    budgets: Budgets | None = None,
    select: Sequence[str] | None = None,
    project: ProjectCode | None = None,
    suspect: SuspectGroup | None = None,
    collected_page: CollectedPage | None = None,
) -> bytes:
    """Summarise report files and return the canonical summary JSON (UTF-8 bytes).

    Same arguments and errors as ``summarize``, and ``read_report``'s ``collected_page``;
    used by ``read_report``, the parity tests and the CLI's ``--json``, which print
    exactly the backend's bytes.
    """
    path_list = _as_path_list(paths)
    if format not in FORMATS:
        raise ValueError(f"format must be 'auto', 'junit', 'pytest-json' or 'reportlog', not {format!r}")
    budgets = budgets or Budgets()
    select_list = _as_select_list(select)
    project_pair = (project.root, list(project.packages)) if project is not None else None
    suspect_pair = (suspect.key, sorted(suspect.node_ids)) if suspect is not None else None
    page = (
        (collected_page.offset, collected_page.limit, collected_page.max_files) if collected_page is not None else None
    )
    chosen = resolve_backend(backend)
    if chosen == "native":
        # raises models.ReportError itself (rust/binding/lib.rs)
        return _native.summarize_files(path_list, format, budgets, select_list, project_pair, suspect_pair, page)
    from pytest_mcp_server.engine.pure import summarize_files

    return summarize_files(path_list, format, budgets.model_dump(), select_list, project_pair, suspect_pair, page)


def summarize(
    paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    format: FormatChoice = "auto",
    backend: Backend = "auto",
    budgets: Budgets | None = None,
    select: Sequence[str] | None = None,
    project: ProjectCode | None = None,
    suspect: SuspectGroup | None = None,
) -> ReportSummary:
    """Summarise one or more JUnit XML / pytest-json-report / pytest report-log files into a
    ``ReportSummary``.

    ``paths``: a path or a list of paths; several files (CI shards) merge into one
    summary, in input order. ``format``: ``auto`` (sniffed from the first bytes),
    ``junit``, ``pytest-json`` or ``reportlog`` (pytest's ``--report-log`` JSON lines).
    ``backend``: ``auto`` (``resolve_backend``: native if importable, else pure),
    ``native`` or ``pure``. ``budgets``: a
    ``Budgets`` (None: its defaults), e.g. ``Budgets(failures_listed=10)``. ``select``: None
    lists every test; else node ids, files, directories or classes (``tests/a.py::TestX``, ``tests/unit/``): failures,
    groups, collection errors, slowest and ``omitted`` then only cover the tests they
    select, counts and duration stay the whole report's, and ``unmatched`` names the
    entries that selected no failing/erroring test and no collection error (rule:
    docs/ENGINE.md, *Selection*; an empty list selects nothing). ``project``: the
    project's own code (``ProjectCode``: root and top-level packages); it decides which
    frames are kept, where a failure is located and how failures group (docs/ENGINE.md,
    *Project code*); None (reports from elsewhere) treats paths inside site-packages,
    dist-packages, ``lib/python3.*``, ``_pytest`` and ``pluggy`` as library code.
    ``suspect``: a cause found outside the report (``SuspectGroup``: the changed lines the
    failing tests all ran) whose failures with no frame of the code under test group as
    one (docs/ENGINE.md, *Groups*); None: none.

    Raises ``ReportError`` (``kind``: ``not_found``, ``unreadable``, ``not_a_report``,
    ``malformed``, ``forbidden``, ``unsupported_encoding``, ``mixed_formats``) naming the
    file and the position where reading stopped; ``pydantic.ValidationError`` for bad
    budgets given to ``Budgets``; ``ValueError`` for an empty path list or an unknown format/backend;
    ``TypeError`` for a ``select`` that is a single string instead of a sequence of them.
    """
    reading = read_report(
        paths, format=format, backend=backend, budgets=budgets, select=select, project=project, suspect=suspect
    )
    return reading.summary()


def read_report(
    paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    format: FormatChoice = "auto",
    backend: Backend = "auto",
    budgets: Budgets | None = None,
    select: Sequence[str] | None = None,
    project: ProjectCode | None = None,
    suspect: SuspectGroup | None = None,
    collected_page: CollectedPage | None = None,
) -> RunReport:
    """``summarize``'s reading whole, in the same single pass: the summary with what a
    report log says of its run (``RunReport.session``: pytest's exit status, tests
    collected, deselected and still running, the stack dump, warnings grouped with the
    ``max_warning_*`` budgets) and, with the budget ``max_outcomes``, each test's outcome
    (docs/ENGINE.md, *Session*). ``collected_page``: a ``CollectedPage`` of the node ids
    a collect-only run wrote, given in ``session.collected_ids`` (the total, the tests per
    file, the page); None keeps none of them. With it, several files are read one after
    the other in input order (the page counts the ids over them in that order). Other
    arguments and errors as ``summarize``."""
    raw = summarize_bytes(
        paths,
        format=format,
        backend=backend,
        budgets=budgets,
        select=select,
        project=project,
        suspect=suspect,
        collected_page=collected_page,
    )
    return RunReport.model_validate_json(raw)


def _as_select_list(select: Sequence[str] | None) -> list[str] | None:
    # A bare string is a Sequence[str] too: iterating it would select single characters.
    if isinstance(select, str):
        raise TypeError(f"select must be a list of node ids, not the string {select!r}; pass [{select!r}]")
    return None if select is None else list(select)


def _as_path_list(paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str]) -> list[str]:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    path_list = [os.fspath(p) for p in paths]
    if not path_list:
        raise ValueError("paths is empty: give at least one report file")
    return path_list
