"""Type stub for the Rust extension (``rust/binding/lib.rs``).

Kept in step with the extension by ``tests/test_native_stub.py``.
"""

class NativeReportError(Exception):
    """args: (kind: str, path: str, message: str, position: str | None)."""

def summarize_files(
    paths: list[str],
    format: str,
    budgets: dict[str, int],
    select: list[str] | None = None,
    project: tuple[str, list[str]] | None = None,
) -> bytes:
    """Summarise report files (GIL released, files parsed in parallel); canonical JSON bytes.

    ``select``: node-id selection entries, or None for every test (docs/ENGINE.md,
    *Selection*). ``project``: (root, top-level packages) of the project's own code, or
    None for the path-pattern rule (docs/ENGINE.md, *Project code*). Raises
    NativeReportError, ValueError (unknown format, missing budget key)."""

def cut_traceback(
    text: str,
    max_lines: int,
    max_line_chars: int,
    project: tuple[str, list[str]] | None = None,
    context_lines: int | None = None,
) -> tuple[str, int]:
    """Cut a long representation down; returns (cut text, lines omitted). ``project`` as in
    ``summarize_files``; ``context_lines``: non-blank lines kept before a frame's ``>``
    line (None: the ``max_frame_context_lines`` default)."""

def group_key(exception: str | None, message: str, where_: str | None = None) -> tuple[str, str]:
    """Group id and normalised message of a failure (``docs/ENGINE.md``, *Groups*);
    ``where_``: the frame or assertion site (``path:line``) of the key, if any (with one,
    an ``AssertionError``'s id is that of its message with the values folded)."""

def classify_path(path: str, project: tuple[str, list[str]] | None = None) -> str:
    """``"library"``, ``"project"`` or ``"test"`` for a frame path (``docs/ENGINE.md``,
    *Project code*); ``project`` as in ``summarize_files``."""

def default_budgets() -> dict[str, int]:
    """report-core's default budgets by name, in ``Budgets::NAMES`` order."""

def version() -> str:
    """The version of the report-core crate."""
