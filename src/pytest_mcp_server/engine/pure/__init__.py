"""The pure-Python backend: the fallback where the extension cannot load, and the oracle
the native code is checked against. Streams like the native one (pyexpat with handlers,
ijson), and writes the same canonical JSON bytes (docs/ENGINE.md).

Each module is the twin of the same-named module of ``rust/core/src`` (docs/ENGINE.md,
*Where each rule lives*, maps them): this one of ``lib.rs`` (sniffing, ``summarize_files``),
``cut``, ``group``, ``project``, ``record``, ``reportlog``, ``select``, ``summary``,
``text``, and the packages ``junit`` and ``pytest_json`` of ``junit.rs`` + ``junit/`` and
``pytest_json.rs`` + ``pytest_json/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO

from pytest_mcp_server.engine.models import SNIFF_BYTES, ReportError

from .project import ProjectCode
from .record import CollectionErrorRecord, TestRecord
from .select import Selection
from .summary import SummaryBuilder, SuspectGroup

# The key every line of a pytest report log has (docs/ENGINE.md, *Sniffing*).
REPORT_TYPE_KEY = b'"$report_type"'


def sniff(path: str, head: bytes) -> str:
    """The format of a file from its first bytes: ``junit``, ``pytest-json`` or
    ``reportlog`` (``{`` and the first line, within ``head``, has the key ``"$report_type"``).

    Raises ``ReportError(not_a_report)`` for an empty file or any other first byte.
    """
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    elif head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "junit"
    stripped = head.lstrip(b" \t\r\n")
    if not stripped:
        raise ReportError(
            "not_a_report", path, "the file is empty; expected a JUnit XML, pytest-json-report or report-log file"
        )
    first = stripped[:1]
    if first == b"<":
        return "junit"
    if first == b"{":
        first_line = stripped.split(b"\n", 1)[0]
        return "reportlog" if REPORT_TYPE_KEY in first_line else "pytest-json"
    raise ReportError(
        "not_a_report",
        path,
        f"the file starts with {first.decode('latin-1')!r}, not '<' (JUnit XML) or '{{' (pytest-json-report, "
        "report log); pass a JUnit XML, pytest-json-report or report-log file",
        "byte 0",
    )


_EXPECTED = {
    "junit": "a JUnit XML document",
    "pytest-json": "a pytest-json-report document",
    "reportlog": 'a pytest report log (JSON lines with "$report_type")',
}


def _open(path: str) -> IO[bytes]:
    try:
        return open(path, "rb")
    except OSError as exc:
        raise ReportError.from_os_error(path, exc) from None


def _read_head(path: str, f: IO[bytes]) -> bytes:
    try:
        return f.read(SNIFF_BYTES)
    except OSError as exc:  # e.g. a directory opened on some platforms
        raise ReportError.from_os_error(path, exc) from None


def summarize_files(
    paths: list[str],
    format: str,
    budgets: dict[str, int],
    select: Sequence[str] | None = None,
    project: tuple[str, Sequence[str]] | None = None,
    suspect: tuple[str, Sequence[str]] | None = None,
    collected_page: tuple[int, int, int] | None = None,
) -> bytes:
    """Summarise report files into canonical summary JSON bytes (docs/ENGINE.md).

    ``format``: ``auto``, ``junit``, ``pytest-json`` or ``reportlog``. ``select``: None lists every
    test; else only the tests and collection errors its entries select
    (docs/ENGINE.md, *Selection*). ``project``: (root, top-level packages) of the
    project's own code, or None for the path-pattern rule (docs/ENGINE.md, *Project
    code*). ``suspect``: (key, failing node ids) of a cause found outside the report,
    whose failures group as one (docs/ENGINE.md, *Groups*), or None.
    ``collected_page``: (offset, limit, max_files) of the report logs' collected node ids
    to keep in the session's ``collected_ids``, counted over the files in input order
    (docs/ENGINE.md, *Session*), or None for none. Raises ``ReportError``.
    """
    from .junit import parse_junit
    from .pytest_json import parse_pytest_json
    from .reportlog import parse_reportlog

    builder = SummaryBuilder(
        budgets,
        selection=Selection(select) if select is not None else None,
        project=ProjectCode(*project) if project is not None else None,
        suspect=SuspectGroup(suspect[0], frozenset(suspect[1])) if suspect is not None else None,
        collected_page=collected_page,
    )
    seen_format = None
    for path in paths:
        with _open(path) as f:
            head = _read_head(path, f)
            found = sniff(path, head)
            if format != "auto" and found != format:
                expected = _EXPECTED[format]
                raise ReportError(
                    "not_a_report", path, f"expected {expected}, but the file looks like {found}; check --format"
                )
            if seen_format is not None and found != seen_format:
                raise ReportError(
                    "mixed_formats",
                    path,
                    f"this file is {found} but the earlier ones are {seen_format}; summarise each format separately",
                )
            seen_format = found
            f.seek(0)
            builder.begin_file()
            session_us: int | None = None
            if found == "junit":
                parse_junit(f, path, budgets, builder.push)
            elif found == "pytest-json":
                session_us = parse_pytest_json(f, path, budgets, builder.push)
            else:
                end = parse_reportlog(f, path, budgets, builder.push, builder.project, builder.collected)
                session_us = end.session_duration_us
                if end.cut_last_line:
                    builder.note_truncated(path)
                if end.session is not None:
                    builder.add_session(end.session)
            builder.end_file(session_us)
    if seen_format is None:
        raise ValueError("paths is empty: give at least one report file")
    if builder.missing_leads():
        # A listed group's lead was not kept (docs/ENGINE.md, *Groups*, label): read the
        # files again, in order, for those failures only.
        _recover(paths, seen_format, budgets, builder)
    return builder.finish(seen_format, paths)


def _recover(paths: list[str], format: str, budgets: dict[str, int], builder: SummaryBuilder) -> None:
    """Feed every record of ``paths`` (all of ``format``) again, numbered as pushed, to
    ``SummaryBuilder.recover``."""
    from .junit import parse_junit
    from .pytest_json import parse_pytest_json
    from .reportlog import parse_reportlog

    seq = 0

    def recover(item: TestRecord | CollectionErrorRecord) -> None:
        nonlocal seq
        builder.recover(seq, item)
        seq += 1

    for path in paths:
        with _open(path) as f:
            if format == "junit":
                parse_junit(f, path, budgets, recover)
            elif format == "pytest-json":
                parse_pytest_json(f, path, budgets, recover)
            else:
                parse_reportlog(f, path, budgets, recover, builder.project, None)
