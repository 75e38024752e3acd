"""Type stub for the Rust extension (``rust/binding/lib.rs``).

Kept in step with the extension by ``tests/engine/test_native_stub.py``.
"""

from .models import Budgets

def summarize_files(
    paths: list[str],
    format: str,
    budgets: Budgets,
    select: list[str] | None = None,
    project: tuple[str, list[str]] | None = None,
    suspect: tuple[str, list[str]] | None = None,
    collected_page: tuple[int, int, int] | None = None,
) -> bytes:
    """Summarise report files (GIL released, files parsed in parallel); canonical JSON bytes.

    ``budgets``: read from the model's attributes. ``select``: node-id selection entries,
    or None for every test (docs/ENGINE.md, *Selection*). ``project``: (root, top-level
    packages) of the project's own code, or None for the path-pattern rule
    (docs/ENGINE.md, *Project code*). ``suspect``: (key, failing node ids) of a cause found
    outside the report, whose failures group as one (docs/ENGINE.md, *Groups*).
    ``collected_page``: (offset, limit, max_files) of the collected node ids kept in the
    session's ``collected_ids`` (``models.CollectedPage``; docs/ENGINE.md, *Session*), or
    None for none; with it the files are read one after the other. Raises
    ``models.ReportError`` (the class itself, not
    a native copy), ``ValueError`` (unknown format, no paths), ``AttributeError`` (a
    budget missing), ``TypeError`` (a budget not a non-negative integer), naming it, or
    ``OverflowError`` (a negative page number)."""

def version() -> str:
    """The version of the report-core crate."""
