"""Type stub for the Rust extension (``rust/binding/lib.rs``).

Kept in step with the extension by ``tests/test_native_stub.py``.
"""

class NativeReportError(Exception):
    """args: (kind: str, path: str, message: str, position: str | None)."""

def summarize_files(paths: list[str], format: str, budgets: dict[str, int], select: list[str] | None = None) -> bytes:
    """Summarise report files (GIL released, files parsed in parallel); canonical JSON bytes.

    ``select``: node-id selection entries, or None for every test (docs/ENGINE.md,
    *Selection*). Raises NativeReportError, ValueError (unknown format, missing budget key)."""

def cut_traceback(text: str, max_lines: int, max_line_chars: int) -> tuple[str, int]:
    """Cut a long representation down; returns (cut text, lines omitted)."""

def group_key(exception: str | None, message: str) -> tuple[str, str]:
    """Group id and normalised message of a failure (``docs/ENGINE.md``, *Groups*)."""

def default_budgets() -> dict[str, int]:
    """report-core's default budgets by name, in ``Budgets::NAMES`` order."""

def version() -> str:
    """The version of the report-core crate."""
