"""The engine's rules (traceback cutting, group keys, frame classification) as the native
backend applies them, observed through its only entry point, ``summarize_files``.

The extension exports no rule function (they would ship in every wheel for the tests'
sake): a rule is read off the summary of a pytest-json-report with one failed test, whose
``longrepr`` and crash ``message`` carry the rule's input unchanged (JSON strings hold any
text). The pure twin's rule functions are called directly, so a test compares the native
rule, as a user meets it, with the pure one.

* ``native_cut`` (and ``pure_cut``, the same probe on the pure backend): the failure's
  ``traceback`` and ``omitted.traceback_lines``, i.e. the shown traceback of
  ``cut_traceback(text, max_lines, max_line_chars, project, context_lines)`` with the
  budgets ``max_traceback_lines``, ``max_line_chars``, ``max_frame_context_lines``.
* ``native_group_key``: the failure's group (id, normalised message), i.e.
  ``group_key(exception, message, where_)``, for a one-line message the summary keeps
  whole (asserted).
* ``summaries_agree``: both backends' bytes on such a report (for inputs a summary does
  not carry one to one, such as random frame paths and multi-line messages).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import orjson

from pytest_mcp_server.engine import summarize_bytes
from pytest_mcp_server.engine.models import Budgets, ProjectCode

NODE_ID = "tests/test_rule.py::test_rule"

# One file per process (pytest-xdist workers are processes), rewritten for every probe.
_REPORT = Path(tempfile.mkdtemp(prefix="rule-probe-")) / f"report-{os.getpid()}.json"


def write_one_failure(longrepr: str, message: str | None) -> Path:
    """A pytest-json-report with one failed test: ``longrepr`` as its long representation
    and ``message`` (if any) as its crash message. Returns its path."""
    call: dict[str, Any] = {"duration": 0.001, "outcome": "failed", "longrepr": longrepr}
    if message is not None:
        call["crash"] = {"message": message}
    test = {"nodeid": NODE_ID, "outcome": "failed", "call": call}
    doc = {"created": 1.0, "duration": 1.0, "exitcode": 1, "root": "/proj", "summary": {}, "tests": [test]}
    # indented: the first line is `{` alone, so no text can make the file sniff as a
    # report log (whose first line holds "$report_type")
    _REPORT.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    return _REPORT


def _project(project: tuple[str, list[str]] | None) -> ProjectCode | None:
    return None if project is None else ProjectCode(root=project[0], packages=project[1])


def summary_cut(
    backend: str,
    text: str,
    max_lines: int,
    max_line_chars: int,
    project: tuple[str, list[str]] | None = None,
    context_lines: int | None = None,
) -> tuple[str, int]:
    """(shown traceback, lines omitted) of ``text`` as ``backend``'s summary lists it (the
    cut, then the shown-traceback rules: docs/ENGINE.md, *Traceback cutting*);
    ``project`` as (root, packages); ``context_lines`` None: the budget's default. The
    values must be within ``Budgets``' bounds (``max_lines`` >= 3, ``max_line_chars`` >= 8)."""
    budgets = Budgets(max_traceback_lines=max_lines, max_line_chars=max_line_chars)
    if context_lines is not None:
        budgets = budgets.model_copy(update={"max_frame_context_lines": context_lines})
    path = write_one_failure(text, "E")
    summary = orjson.loads(summarize_bytes([path], backend=backend, budgets=budgets, project=_project(project)))
    (failure,) = summary["failures"]
    return failure["traceback"], summary["omitted"]["traceback_lines"]


def native_cut(*args: Any) -> tuple[str, int]:
    """``summary_cut`` of the native backend."""
    return summary_cut("native", *args)


def pure_cut(*args: Any) -> tuple[str, int]:
    """``summary_cut`` of the pure backend."""
    return summary_cut("pure", *args)


def native_group_key(exception: str | None, message: str, where_: str | None = None) -> tuple[str, str]:
    """(group id, normalised message) of a failure raising ``exception`` with ``message``
    as the native backend's summary groups it; ``where_``: a test file's ``path:line`` (the
    assertion site; the failure's traceback ends there), or None (no frame).

    ``message`` must be one line the summary keeps whole: stripped, not itself starting
    with ``Name: `` when ``exception`` is None (the summary would read that as the
    exception). Asserts that the summary read ``exception`` and ``message`` back."""
    crash = f"{exception}: {message}" if exception else message
    longrepr = f"{where_}: " if where_ is not None else ""
    path = write_one_failure(longrepr, crash)
    # Messages are not capped before grouping (the normaliser sees them whole).
    budgets = Budgets(max_message_chars=100_000)
    summary = orjson.loads(summarize_bytes([path], backend="native", budgets=budgets))
    (failure,) = summary["failures"]
    assert (failure["exception"], failure["message"]) == (exception or None, message), (
        f"the summary did not carry ({exception!r}, {message!r}) unchanged: {failure!r}"
    )
    (group,) = summary["groups"]
    return group["id"], group["message"]


def summaries_agree(
    longrepr: str, message: str | None, project: tuple[str, list[str]] | None = None, **budgets: int
) -> bytes:
    """Both backends on a one-failure report (``write_one_failure``): asserts the same
    bytes and returns them."""
    path = write_one_failure(longrepr, message)
    b = Budgets(**budgets)
    code = _project(project)
    native = summarize_bytes([path], backend="native", budgets=b, project=code)
    pure = summarize_bytes([path], backend="pure", budgets=b, project=code)
    assert native == pure, f"the backends differ on longrepr={longrepr!r}, message={message!r}, project={project!r}"
    return native
