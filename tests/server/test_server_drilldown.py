"""The whole story of the tests an agent asks for, end to end over real stdio.

The real server (the SDK's stdio client, nothing mocked) runs the real pytest on the
``drilldown`` fixture project: three parametrised cases of one test fail at the same
assertion (one group), an unrelated test fails with another cause, and a passing test
sleeps past the slow threshold (named as slow only in a run where every test passed, in
the text and in the ``typed`` view's ``slowest`` alike).
``execute_tests`` folds the group into one entry and
writes each frame on one line (``path:N: statement``, no source before it);
``summarize_report`` on the run's ``report_path`` (or with no paths: the last run's)
with two node ids of that group must then give each of them in full,
as its own entry with its own traceback, the test function's ``def`` line and
docstring included, and count in ``omitted`` only what it left out of the requested
tests. Both engine backends (``PYTEST_MCP_SERVER_BACKEND``).
"""

from __future__ import annotations

import pytest
from helpers.server_support import TYPED, Project, connect, default_view, run, text_of

from pytest_mcp_server.domain.tools import ExecuteResult, SummarizeResult
from pytest_mcp_server.engine import BACKEND_ENV

FILE = "tests/test_orders.py"
REQUESTED = [f"{FILE}::test_discount[10-90]", f"{FILE}::test_discount[20-80]"]
DEF_LINE = "    def test_discount(percent, expected):"
DOCSTRING = '        """A discount of `percent` takes that share off a total of 100."""'


def drill(
    project: Project, backend: str, calls: list[dict]
) -> tuple[ExecuteResult, str, list[tuple[SummarizeResult, str]]]:
    """``execute_tests`` on the project, then ``summarize_report`` of its report with
    each of ``calls``' extra arguments (``node_ids`` and budgets), on one connection
    to a server using ``backend``; each call is made again without ``paths`` and must
    answer the same (the last run's report is the default)."""

    async def body():
        async with connect(project.params(*TYPED, env={BACKEND_ENV: backend}), "auto") as client:
            executed = await client.call_tool("execute_tests", {})
            assert not executed.is_error, text_of(executed)
            res = ExecuteResult.model_validate(executed.structured_content)
            stories = []
            for extra in calls:
                told = await client.call_tool("summarize_report", {"paths": [res.report_path], **extra})
                assert not told.is_error, text_of(told)
                stories.append((SummarizeResult.model_validate(told.structured_content), text_of(told)))
                # no paths: the last run's report, the same answer
                last = await client.call_tool("summarize_report", extra)
                assert (last.is_error, last.structured_content, text_of(last)) == (
                    False,
                    told.structured_content,
                    text_of(told),
                )
            return res, text_of(executed), stories

    return run(body)


def test_two_failures_of_one_group_are_each_told_in_full(tmp_path, backend):
    project = Project("drilldown", tmp_path)
    res, text, [(story, story_text), (capped, capped_text)] = drill(
        project,
        backend,
        [{"node_ids": REQUESTED}, {"node_ids": REQUESTED, "failures_listed": 1}],
    )

    # The run's answer: one entry for the group's cause, the others on its "also in"
    # line, and the frame on one line (no `def` line, no source before the statement);
    # the header does not repeat the location that line starts with, and the answer
    # ends by saying where the rest is.
    assert res.status == "failed" and res.summary.counts.failed == 4, text
    assert f"- FAILED {REQUESTED[0]}\n" in text, text
    assert "also in 2 more:" in text, text
    assert DEF_LINE.strip() not in text and "customer = " not in text, text
    statement = 'assert discounted == expected, f"{percent}% off {total} {currency} ({rounding}, {customer})"'
    assert f" {FILE}:18: {statement}" in text.split("\n"), text
    assert text.rstrip().endswith(". More: summarize_report with node_ids"), text
    # a run with failures names no slow test: the slow one passed, and is not the story
    assert "Slowest" not in text and "test_checkout_takes_a_while" not in text, text
    assert res.summary.slowest == []  # nor does the structured content

    # The full story: both requested tests, each its own entry with its own traceback.
    failures = story.summary.failures
    assert [f.node_id for f in failures] == REQUESTED
    assert failures[0].group == failures[1].group  # one cause, yet not folded
    assert story.full_story and story.not_failing == []
    for failure, percent, expected in zip(failures, (10, 20), (90, 80), strict=True):
        lines = failure.traceback.split("\n")
        # The whole frame stays: pytest's argument line, the `def` line, the docstring,
        # every source line up to `>`, and nothing of it is marked omitted.
        assert lines[0] == f"percent = {percent}, expected = {expected}", failure.traceback
        assert DEF_LINE in lines and DOCSTRING in lines, failure.traceback
        assert (
            lines.index(DEF_LINE)
            < lines.index(DOCSTRING)
            < next(i for i, line in enumerate(lines) if line.startswith(">"))
        )
        assert "lines omitted" not in failure.traceback, failure.traceback
        assert f"E       AssertionError: {percent}% off 100 EUR (down, guest)" in lines
    assert story.summary.omitted.traceback_lines == 0

    # The text gives both in full: two entries, each with its `def` line and `E` line,
    # no "also in" folding, no group table, nothing about the tests not asked for.
    for node_id in REQUESTED:
        assert f"- FAILED {node_id}" in story_text, story_text
    assert story_text.count(DEF_LINE.strip()) == 2, story_text
    assert story_text.count(DOCSTRING.strip()) == 2, story_text
    assert "10% off 100 EUR" in story_text and "20% off 100 EUR" in story_text, story_text
    assert "also in" not in story_text and "Failure groups" not in story_text, story_text
    assert "test_discount[30-70]" not in story_text and "test_shipping" not in story_text, story_text
    assert "Slowest" not in story_text and "test_checkout_takes_a_while" not in story_text, story_text
    assert "Omitted" not in story_text, story_text

    # omitted counts only the requested tests: none left out here, and with one listed,
    # exactly the other requested one (not the third case, not the unrelated failure).
    assert story.summary.omitted.failures == 0 and story.summary.omitted.groups == 0
    assert {s.node_id for s in story.summary.slowest} <= set(REQUESTED)
    assert [f.node_id for f in capped.summary.failures] == REQUESTED[:1]
    assert capped.summary.omitted.failures == 1
    assert "1 more failures (raise failures_listed)" in capped_text, capped_text
    assert DEF_LINE.strip() in capped_text, capped_text


def test_summarize_report_without_paths_before_any_run_is_refused_naming_paths(tmp_path):
    """No run yet: there is no last report to default to, so the call is a tool error
    that names ``paths`` and says what to give."""
    project = Project("drilldown", tmp_path)

    async def body():
        async with connect(project.params(), "auto") as client:
            return await client.call_tool("summarize_report", {"node_ids": REQUESTED})

    told = run(body)
    assert told.is_error, text_of(told)
    assert "paths: no execute_tests run of this project has a report yet; give report files" in text_of(told)


@pytest.mark.parametrize("typed", [False, True], ids=["default_view", "typed_view"])
def test_a_run_where_every_test_passed_names_its_slow_tests(tmp_path, typed):
    project = Project("drilldown", tmp_path)
    slow = f"{FILE}::test_checkout_takes_a_while"

    async def body():
        async with connect(project.params(*(TYPED if typed else ())), "auto") as client:
            return await client.call_tool("execute_tests", {"node_ids": [slow]})

    result = run(body)
    text = text_of(result)
    assert f"\nSlowest: {slow} 1." in text, text
    if typed:  # the typed summary names the slow tests the text names
        res = ExecuteResult.model_validate(result.structured_content)
        assert res.status == "passed", text
        assert [s.node_id for s in res.summary.slowest] == [slow]
    else:
        assert default_view(result)["status"] == "passed", text
