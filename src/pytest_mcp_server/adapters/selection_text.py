"""The text of ``affected`` answers: ``execute_tests``' answer with the selection as
its first line (``selection_line``) and, when nothing was affected, what that means;
``discover_tests``' plan, each selected test with its reason.

The rest of each answer is ``adapters.text``'s.
"""

from __future__ import annotations

from pytest_mcp_server.adapters.answer import cap_line
from pytest_mcp_server.adapters.text import render_discover, render_execute, render_failure
from pytest_mcp_server.domain.failures import ToolFailureDetail
from pytest_mcp_server.domain.policy import AFFECTED_FILES_NAMED
from pytest_mcp_server.domain.selection import REASONS, Selection
from pytest_mcp_server.domain.tools import DiscoverResult, ExecuteResult


def selection_line(selection: Selection, named_below: frozenset[str] = frozenset()) -> str:
    """The first line of an affected answer: how many of how many tests, why, and the
    changed files (the first ``AFFECTED_FILES_NAMED``):
    ``Affected: 2 of 7 tests (2 changed), by changes in pkg/calc.py``; the files are left
    out when every changed file is in ``named_below`` (the paths of the answer's suspect
    lines, which name the changed lines themselves)."""
    head = f"Affected: {selection.selected} of {selection.total} test{'s' if selection.total != 1 else ''}"
    if not selection.selected:
        return f"{head}: no test ran code that changed since it last ran, and none failed last time"
    if selection.reasons.no_map == selection.selected:
        return f"{head}: no test map yet for this root and interpreter (this run builds it)"
    counts = selection.reasons.model_dump()
    why = ", ".join(f"{counts[r]} {r.replace('_', ' ')}" for r in REASONS if counts[r])
    line = f"{head} ({why})"
    if selection.changed_files and not set(selection.changed_files) <= named_below:
        named = selection.changed_files[:AFFECTED_FILES_NAMED]
        more = len(selection.changed_files) - len(named)
        line += ", by changes in " + ", ".join(named) + (f" and {more} more files" if more else "")
    return line


def _head(selection: Selection, collection_errors: int = 0, named_below: frozenset[str] = frozenset()) -> str:
    lines = [selection_line(selection, named_below)]
    if collection_errors and not selection.selected:
        # the files that do not import may hold affected tests: the errors are the news
        lines[0] = (
            f"Affected: 0 of {selection.total} collected tests; {collection_errors} "
            f"file{'s' if collection_errors != 1 else ''} could not be collected (below)"
        )
    if selection.notice:
        lines.append(f"Notice: {selection.notice}")
    return "\n".join(cap_line(line)[0] for line in lines) + "\n"


def render_execute_answer(result: ExecuteResult) -> str:
    """``render_execute``'s text, after the selection's lines when the call was
    ``affected``; when no test was affected (and no collection error shows), only those
    lines and what to do for a full run. What the selection line says is said once: the
    verdict line leaves out the deselected count when it is the tests the map left out
    (``selected`` of ``total``), and the selection line the changed files when the
    suspect lines name each of them."""
    selection = result.selection
    if selection is None:
        return render_execute(result)
    if not selection.selected and not result.summary.collection_errors:
        return _head(selection) + (
            "NO TESTS RAN: nothing is affected since the last runs. This is not a fresh pass of the suite: "
            "a test that reads a data file another test or a change wrote is not tracked; "
            "execute_tests with affected=false runs every test.\n"
        )
    named = frozenset(s.path for s in result.suspects or ())
    head = _head(selection, len(result.summary.collection_errors), named)
    if result.deselected == selection.total - selection.selected:
        result = result.model_copy(update={"deselected": 0})
    return head + render_execute(result)


def render_failure_answer(detail: ToolFailureDetail) -> str:
    """``render_failure``'s text; for an ``affected`` call, its first line then the
    selection the map made before pytest started (``selection_line``)."""
    text = render_failure(detail)
    if detail.selection is None:
        return text
    first, _, rest = text.partition("\n")
    return f"{first}\n{cap_line(selection_line(detail.selection))[0]}\n{rest}"


def render_discover_answer(result: DiscoverResult) -> str:
    """``render_discover``'s text; with ``affected``, the selection's lines and the page
    of selected tests, each with its reason."""
    if result.selection is None or result.selection.tests is None:
        return render_discover(result)
    page = result.selection.tests
    lines = [_head(result.selection).rstrip("\n")]
    for error in result.collection_errors:
        lines.append(cap_line(f"- collection error in {error.path}: {error.exception or ''} {error.message}")[0])
    if page:
        last = result.next_offset or result.selection.selected
        lines += ["", f"Affected tests {last - len(page) + 1}-{last} of {result.selection.selected}:"]
        lines += [cap_line(f"  {test.reason:<14} {test.node_id}")[0] for test in page]
    if result.next_offset is not None:
        lines += ["", f"More: call again with offset={result.next_offset}."]
    return "\n".join(lines) + "\n"
