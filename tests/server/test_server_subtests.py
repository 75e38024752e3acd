"""Nothing lost in the answer: subtests, collection errors and captured logs, end to end.

The real server over real stdio (the SDK's client) runs the real pytest on fixture
projects (tests/fixtures); pytest's own summary line comes from running pytest directly
on the same project, once per engine backend (``PYTEST_MCP_SERVER_BACKEND``: both read
the subtests from the JUnit XML). The counts must reconcile with it by the rule of docs/ENGINE.md
(*Subtests*): pytest's failed = failed + subtests_failed - passed_with_failed_subtests,
its passed = passed + passed_with_failed_subtests, its subtests passed = subtests_passed.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from helpers.server_support import TYPED, Project, connect, run, text_of

from pytest_mcp_server.domain.tools import ExecuteResult, SummarizeResult
from pytest_mcp_server.engine import BACKEND_ENV
from pytest_mcp_server.engine.models import Counts

MODE = "auto"


def pytest_summary_counts(project: Project) -> dict[str, int]:
    """pytest's own summary line of the project, as {"failed": F, "passed": P,
    "subtests passed": S, ...} (missing words are 0)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=project.root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    last = proc.stdout.strip().splitlines()[-1]
    assert " in " in last, proc.stdout[-2000:]
    found = {word: int(n) for n, word in re.findall(r"(\d+) ((?:subtests )?[a-z]+)", last.split(" in ")[0])}
    return {"failed": 0, "passed": 0, "subtests passed": 0, **found}


def reconciles(counts: Counts, pytest_says: dict[str, int]) -> None:
    """The documented rule, checked against pytest's own numbers."""
    assert pytest_says["failed"] == counts.failed + counts.subtests_failed - counts.passed_with_failed_subtests
    assert pytest_says["passed"] == counts.passed + counts.passed_with_failed_subtests
    assert pytest_says["subtests passed"] == counts.subtests_passed


def execute(
    project: Project, backend: str, node_ids: list[str] | None = None
) -> tuple[ExecuteResult, str, SummarizeResult | None]:
    """``execute_tests`` on the project with the engine's ``backend``, then (with
    ``node_ids``) ``summarize_report`` of its report for those tests, on one connection."""

    async def body():
        async with connect(project.params(*TYPED, env={BACKEND_ENV: backend}), MODE) as client:
            executed = await client.call_tool("execute_tests", {})
            assert not executed.is_error, text_of(executed)
            res = ExecuteResult.model_validate(executed.structured_content)
            story = None
            if node_ids:
                told = await client.call_tool("summarize_report", {"paths": [res.report_path], "node_ids": node_ids})
                assert not told.is_error, text_of(told)
                story = SummarizeResult.model_validate(told.structured_content)
            return res, text_of(executed), story

    return run(body)


@pytest.mark.parametrize(
    ("name", "node_id", "labels", "messages", "line", "pytest_counted_parent_passed"),
    [
        (
            "subtests_unittest",
            "tests/test_unittest_subtests.py::TestEvenNumbers::test_each_number_is_even",
            ["(i=1)", "(i=3)"],
            ["False is not true : 1 is odd", "False is not true : 3 is odd"],
            13,
            True,
        ),
        (
            "subtests_fixture",
            "tests/test_fixture_subtests.py::test_squares",
            ["[case] (i=2)", "[case] (i=3)"],
            ["square(2) is off", "square(3) is off"],
            9,
            False,
        ),
    ],
)
def test_each_failed_subtest_is_named_and_the_counts_reconcile_with_pytest(
    tmp_path, backend, name, node_id, labels, messages, line, pytest_counted_parent_passed
):
    # Both flavours: 2 failing and 2 passing subtests in one test, plus one passing test.
    project = Project(name, tmp_path)
    res, text, story = execute(project, backend, [node_id])
    counts = res.summary.counts
    assert res.status == "failed"
    assert (counts.failed, counts.passed, counts.subtests_failed, counts.subtests_passed) == (1, 1, 2, 2)
    assert counts.passed_with_failed_subtests == (1 if pytest_counted_parent_passed else 0)
    reconciles(counts, pytest_summary_counts(project))

    path = node_id.split("::")[0]
    # The run's answer: one entry per cause. The first failed subtest is the entry, named
    # with its parameters, message and path:line; the second (same cause) is named with
    # its parameters on the entry's "also in" line, and so is the test whose subtests
    # failed (counted failed, never passed): their cause is its cause.
    assert text.startswith("FAILED 1 failed, 1 passed; subtests: 2 failed, 2 passed in "), text
    assert f"- FAILED {node_id} {labels[0]}\n {path}:{line}: " in text, text
    assert f"AssertionError: {messages[0]}" in text
    test = node_id.split("::", 1)[1]
    assert f"also in 2 more: {test} {labels[1]}, {test}\n" in text, text
    assert text.count("- FAILED ") == 1, text

    # The full story of the test: every failed subtest in full.
    assert story is not None and story.not_failing == []
    subtest_failures = [f for f in story.summary.failures if f.subtest is not None]
    assert [f.subtest for f in subtest_failures] == labels
    assert [f.message for f in subtest_failures] == messages
    for f in subtest_failures:
        assert f.node_id == node_id and f.exception == "AssertionError"
        assert f.location is not None and (f.location.path, f.location.line) == (path, line)
        assert f.traceback
    parent = [f for f in story.summary.failures if f.subtest is None]
    assert [(p.node_id, p.message) for p in parent] == [(node_id, "contains 2 failed subtests")]


def test_a_collection_error_carries_its_location_and_traceback(tmp_path, backend):
    # tests/test_broken_import.py:3 calls pkg/__init__.py:3, which raises.
    project = Project("import_error", tmp_path)
    res, text, _ = execute(project, backend)
    assert res.status == "interrupted"
    [error] = res.summary.collection_errors
    assert error.path == "tests/test_broken_import.py"
    assert (error.exception, error.message) == ("ValueError", "unknown settings profile 'production'")
    assert error.location is not None and (error.location.path, error.location.line) == ("pkg/__init__.py", 3)
    assert "tests/test_broken_import.py:3: in <module>" in error.traceback
    assert 'SETTINGS = load_settings("production")' in error.traceback
    assert "E   ValueError: unknown settings profile 'production'" in error.traceback
    # the location and the exception once: the traceback's frame and E lines say them, so the header does not
    assert "- tests/test_broken_import.py\n" in text, text
    assert " E   ValueError: unknown settings profile 'production'\n" in text, text
    assert " pkg/__init__.py:3: in load_settings" in text.split("\n"), text
    assert " tests/test_broken_import.py:3: in <module>" in text.split("\n")


def test_a_syntax_error_is_named_and_located_at_its_line_not_in_the_compiler(tmp_path, backend):
    """A module that does not compile: pytest reports the SyntaxError as ``E`` lines
    (``File "/abs/path.py", line 2``, the source, a caret, ``SyntaxError: ...``) under a
    frame of the standard library's ``ast.py``. The error is named by its last line and
    located at the broken file's line, shown relative to the root, whether the broken
    file is the test module or a module of the project it imports."""
    project = Project("import_error", tmp_path)
    (project.root / "tests" / "test_typo.py").write_text("def test_typo():\n    x = (1,\n    assert x\n")
    (project.root / "pkg" / "broken.py").write_text("def half(x):\n    return x //\n")
    (project.root / "tests" / "test_uses_broken.py").write_text("from pkg.broken import half\n")
    res, text, _ = execute(project, backend)
    assert res.status == "interrupted"
    errors = {e.path: e for e in res.summary.collection_errors}
    for path, where, message in (
        ("tests/test_typo.py", ("tests/test_typo.py", 2), "'(' was never closed"),
        ("tests/test_uses_broken.py", ("pkg/broken.py", 2), "invalid syntax"),
    ):
        error = errors[path]
        assert (error.exception, error.message) == ("SyntaxError", message), error
        assert error.location is not None and (error.location.path, error.location.line) == where, error
        # located in the header (the traceback names the file by its absolute path), named by its E line
        assert f"- {path}  at {where[0]}:{where[1]}\n" in text, text
        assert f"E   SyntaxError: {message}\n" in text.split(f"- {path}  at ", 1)[1], text


def test_the_log_records_of_a_failing_test_are_shown_under_it(tmp_path, backend):
    # test_logs_then_fails logs INFO, WARNING and ERROR, then fails; the root level keeps
    # WARNING and above.
    project = Project("warnings_logs", tmp_path)
    node_id = "tests/test_warnings.py::test_logs_then_fails"
    res, text, story = execute(project, backend, [node_id])
    assert [f.node_id for f in res.summary.failures] == [node_id]
    records = (
        "WARNING  test_warnings:test_warnings.py:47 retrying after timeout (attempt 2)\n"
        "ERROR    test_warnings:test_warnings.py:48 transfer aborted: checksum mismatch\n"
    )
    shown = "".join("   " + line + "\n" for line in records.splitlines())
    assert "\n log (tail):\n" + shown in text, text
    assert story is not None
    [failure] = story.summary.failures
    assert failure.log == records


def test_a_chained_collection_error_is_named_and_located_by_its_root_cause(tmp_path, backend):
    """A module-level call whose bug raises ``AttributeError``, turned by the code that
    handles it into ``ValueError``: pytest names the collection error by the last
    exception; the answer names the first, the bug, at its line, keeps the chain line
    between the two, and says that location once."""
    project = Project("chained_import_error", tmp_path)
    res, text, _ = execute(project, backend)
    assert res.status == "interrupted"
    (error,) = res.summary.collection_errors
    assert (error.exception, error.message) == ("AttributeError", "'re.Match' object has no attribute 'group_dict'")
    assert error.location is not None and (error.location.path, error.location.line) == ("pkg/__init__.py", 7)
    assert "During handling of the above exception, another exception occurred:" in error.traceback
    # the header names the file; the first exception is said once, by its E line in the traceback
    header, first = text.split("Collection errors:\n", 1)[1].split("\n", 2)[:2]
    assert (header, first) == ("- tests/test_default.py", " pkg/__init__.py:7: in parse"), text
    assert text.count("AttributeError: 're.Match' object has no attribute 'group_dict'") == 1, text
    assert " E   AttributeError: 're.Match' object has no attribute 'group_dict'\n" in text, text
    # the errors are what to fix: no advice after them
    assert text.rstrip().endswith("E   ValueError: could not parse 'abc'"), text
