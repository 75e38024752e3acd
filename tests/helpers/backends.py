"""Running the report engine's two backends on the same files and comparing their answers.

The native backend (Rust, ``pytest_mcp_server.engine._native``) and the pure-Python one must write
byte-identical summaries, or refuse with the same error kind (docs/ENGINE.md). Every test
that checks this goes through this module:

* ``NATIVE_MISSING``: why the native backend cannot be tested ("" when it can), and
  ``needs_native``, the marker that skips a test then. The ``backend`` fixture of
  tests/conftest.py runs a test once per backend.
* ``run_backend``: one backend's answer as data (summary bytes, error kind, or crash).
* ``result_in_both``: both backends; asserts that neither crashed and that they agree.
* ``summary_in_both``: both must summarise, with the same bytes; returns the parsed summary.
* ``kind_in_both``: ``"ok"`` or the error kind both backends gave.
"""

from __future__ import annotations

import faulthandler
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from pytest_mcp_server.engine import native_available, summarize_bytes
from pytest_mcp_server.engine.models import (
    Budgets,
    CollectedPage,
    ProjectCode,
    ReportError,
    RunReport,
    SuspectGroup,
)

BACKENDS = ("native", "pure")

NATIVE_MISSING = (
    ""
    if native_available()
    else "the Rust extension pytest_mcp_server.engine._native does not import; "
    "build it with `pip install -e . --no-deps --no-build-isolation`"
)
needs_native = pytest.mark.skipif(bool(NATIVE_MISSING), reason=NATIVE_MISSING or "unused")

# A backend call that takes longer than this is a hang: the process dumps every thread's
# stack and exits (faulthandler), so a run never waits forever on a stuck parser.
HANG_SECONDS = 300

# Inputs compared, by test node id: the ``--soak`` report of tests/conftest.py prints them.
EXAMPLES_CHECKED: dict[str, int] = {}

Paths = str | Path | Sequence[str | Path]


def _path_list(paths: Paths) -> list[str]:
    return [str(paths)] if isinstance(paths, str | Path) else [str(p) for p in paths]


def run_backend(
    paths: Paths,
    backend: str,
    budgets: dict[str, int] | None = None,
    fmt: str = "auto",
    project: ProjectCode | None = None,
    select: Sequence[str] | None = None,
    suspect: SuspectGroup | None = None,
    collected_page: CollectedPage | None = None,
) -> tuple:
    """One backend on ``paths`` (with ``project``'s code, the node-id ``select``, the
    ``suspect`` cause and the ``collected_page`` of collected node ids, when given):
    ``("ok", summary bytes)``, ``("error", kind, message)`` for a ``ReportError``
    (asserted to name one of ``paths`` and to carry a message), or ``("crash",
    description)`` for anything else (a pyo3 ``PanicException`` included: it is a
    ``BaseException``)."""
    names = _path_list(paths)
    try:
        b = Budgets(**(budgets or {}))
        out = summarize_bytes(
            names,
            format=fmt,
            backend=backend,
            budgets=b,
            project=project,
            select=select,
            suspect=suspect,
            collected_page=collected_page,
        )
        return ("ok", out)
    except ReportError as exc:
        # Every refusal names the file at fault and says what happened (models.ReportError).
        assert exc.path in names and exc.message, f"{backend}: {exc.kind} error without its file or message: {exc!r}"
        return ("error", exc.kind, str(exc))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - a panic must be reported, not propagated
        return ("crash", f"{type(exc).__name__}: {exc}")


def _first_difference(native: bytes, pure: bytes) -> str:
    size = min(len(native), len(pure))
    i = next((k for k in range(size) if native[k] != pure[k]), size)
    return (
        f"first difference at byte {i}:\n"
        f"  native: {native[max(i - 120, 0) : i + 120]!r}\n"
        f"  pure:   {pure[max(i - 120, 0) : i + 120]!r}"
    )


def assert_same_result(native: tuple, pure: tuple, where: str = "") -> None:
    """Assert that two ``run_backend`` results agree: neither crashed, and the same bytes
    or the same error kind (the messages may differ). ``where`` prefixes the message."""
    assert native[0] != "crash", f"{where}native crashed: {native[1]}"
    assert pure[0] != "crash", f"{where}pure crashed: {pure[1]}"
    if native[0] == "ok" and pure[0] == "ok":
        assert native[1] == pure[1], f"{where}the backends wrote different summaries; " + _first_difference(
            native[1], pure[1]
        )
    elif native[0] == "error" and pure[0] == "error":
        assert native[1] == pure[1], (
            f"{where}different error kinds: native {native[1]!r} ({native[2]}) vs pure {pure[1]!r} ({pure[2]})"
        )
    else:

        def show(result: tuple) -> str:
            return f"summary {result[1][:300]!r}..." if result[0] == "ok" else f"error {result[1]!r}: {result[2]}"

        raise AssertionError(f"{where}one backend refused the input: native {show(native)} / pure {show(pure)}")


def result_in_both(
    paths: Paths,
    budgets: dict[str, int] | None = None,
    fmt: str = "auto",
    project: ProjectCode | None = None,
    select: Sequence[str] | None = None,
    suspect: SuspectGroup | None = None,
    collected_page: CollectedPage | None = None,
) -> tuple:
    """Both backends on ``paths`` (native first; ``project``, ``select``, ``suspect`` and
    ``collected_page`` as ``run_backend``'s); asserts that they agree (``assert_same_result``) and returns the
    native result (the pure one when the extension is missing: then only tests without
    ``needs_native`` get here). A call stuck for ``HANG_SECONDS`` ends the process with a
    stack dump."""
    key = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" ", 1)[0]
    EXAMPLES_CHECKED[key] = EXAMPLES_CHECKED.get(key, 0) + 1
    faulthandler.dump_traceback_later(HANG_SECONDS, exit=True)
    try:
        pure = run_backend(paths, "pure", budgets, fmt, project, select, suspect, collected_page)
        native = (
            pure
            if NATIVE_MISSING
            else run_backend(paths, "native", budgets, fmt, project, select, suspect, collected_page)
        )
    finally:
        faulthandler.cancel_dump_traceback_later()
    assert_same_result(native, pure, where=f"{_path_list(paths)}: ")
    return native


def summary_in_both(
    paths: Paths,
    fmt: str = "auto",
    *,
    project: ProjectCode | None = None,
    select: Sequence[str] | None = None,
    suspect: SuspectGroup | None = None,
    collected_page: CollectedPage | None = None,
    **budgets: int,
) -> dict[str, Any]:
    """Both backends must summarise ``paths`` (with ``project``'s code, the node-id
    ``select`` and the ``collected_page``, when given) with the same bytes, which
    ``RunReport`` accepts; returns the summary parsed (a dict shaped like
    ``RunReport``). ``budgets`` are ``Budgets`` fields."""
    result = result_in_both(paths, budgets, fmt, project, select, suspect, collected_page)
    assert result[0] == "ok", f"both backends refused {_path_list(paths)}: {result[1]!r} ({result[2]})"
    RunReport.model_validate_json(result[1])  # the public model accepts it
    return orjson.loads(result[1])


def kind_in_both(paths: Paths, fmt: str = "auto", **budgets: int) -> str:
    """``"ok"`` when both backends summarise ``paths`` identically, else the error kind
    both gave."""
    result = result_in_both(paths, budgets, fmt)
    return "ok" if result[0] == "ok" else result[1]
