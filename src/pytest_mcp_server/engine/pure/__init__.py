"""The pure-Python backend: the fallback where the extension cannot load, and the oracle
the native code is checked against. Streams like the native one (pyexpat with handlers,
ijson), and writes the same canonical JSON bytes (docs/ENGINE.md).

Each module is the twin of the same-named module of ``rust/core/src``: this one of
``lib.rs`` (sniffing, ``summarize_files``), ``cut``, ``group``, ``project``, ``summary``, ``junit``,
``pytest_json``, ``text`` and ``records`` (``record.rs``) of theirs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO

from pytest_mcp_server.engine.models import ReportError

from .project import ProjectCode
from .select import Selection
from .summary import SummaryBuilder

SNIFF_BYTES = 4096


def sniff(path: str, head: bytes) -> str:
    """The format of a file from its first bytes: ``junit`` or ``pytest-json``.

    Raises ``ReportError(not_a_report)`` for an empty file or any other first byte.
    """
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    elif head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "junit"
    stripped = head.lstrip(b" \t\r\n")
    if not stripped:
        raise ReportError("not_a_report", path, "the file is empty; expected a JUnit XML or pytest-json-report file")
    first = stripped[:1]
    if first == b"<":
        return "junit"
    if first == b"{":
        return "pytest-json"
    raise ReportError(
        "not_a_report",
        path,
        f"the file starts with {first.decode('latin-1')!r}, not '<' (JUnit XML) or '{{' (pytest-json-report); "
        "pass a JUnit XML or pytest-json-report file",
        "byte 0",
    )


def _open(path: str) -> IO[bytes]:
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise ReportError("not_found", path, "no such file; check the path") from None
    except OSError as exc:
        raise ReportError(
            "unreadable",
            path,
            f"cannot read the file ({exc.strerror or exc}); check that it is a readable regular file",
        ) from None


def _read_head(path: str, f: IO[bytes]) -> bytes:
    try:
        return f.read(SNIFF_BYTES)
    except OSError as exc:  # e.g. a directory opened on some platforms
        raise ReportError(
            "unreadable",
            path,
            f"cannot read the file ({exc.strerror or exc}); check that it is a readable regular file",
        ) from None


def summarize_files(
    paths: list[str],
    format: str,
    budgets: dict[str, int],
    select: Sequence[str] | None = None,
    project: tuple[str, Sequence[str]] | None = None,
) -> bytes:
    """Summarise report files into canonical summary JSON bytes (docs/ENGINE.md).

    ``format``: ``auto``, ``junit`` or ``pytest-json``. ``select``: None lists every
    test; else only the tests and collection errors its entries select
    (docs/ENGINE.md, *Selection*). ``project``: (root, top-level packages) of the
    project's own code, or None for the path-pattern rule (docs/ENGINE.md, *Project
    code*). Raises ``ReportError``.
    """
    from .junit import parse_junit
    from .pytest_json import parse_pytest_json

    builder = SummaryBuilder(
        budgets,
        selection=Selection(select) if select is not None else None,
        project=ProjectCode(*project) if project is not None else None,
    )
    seen_format = None
    for path in paths:
        with _open(path) as f:
            head = _read_head(path, f)
            found = sniff(path, head)
            if format != "auto" and found != format:
                expected = "a JUnit XML document" if format == "junit" else "a pytest-json-report document"
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
            parse = parse_junit if found == "junit" else parse_pytest_json
            parse(f, path, budgets, builder.push)
    if seen_format is None:
        raise ValueError("paths is empty: give at least one report file")
    return builder.finish(seen_format, paths)
