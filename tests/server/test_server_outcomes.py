"""execute_tests / discover_tests / summarize_report end to end: the real server over real
stdio with the SDK's client, the real pytest on fixture projects (tests/fixtures), in
both protocol eras.

The every_outcome project has 30 tests; pytest itself says "6 failed, 19 passed,
2 skipped, 1 xfailed, 1 xpassed, 2 errors". The engine counts each test once with its
worst outcome, so test_releases_resource (call passed, teardown error) is one error and
18 tests pass (see docs/ENGINE.md).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.server_support import MODES, TYPED, Project, connect, line_of, run, text_of

from pytest_mcp_server.domain.failures import ToolFailureDetail
from pytest_mcp_server.domain.tools import DiscoverResult, ExecuteResult, SummarizeResult

EVERY_OUTCOME_COUNTS = {
    "total": 30,
    "passed": 18,
    "failed": 6,
    "errors": 2,
    "skipped": 2,
    "xfailed": 1,
    "xpassed": 1,
    "flaky": 0,
    "subtests_passed": 0,
    "subtests_failed": 0,
    "passed_with_failed_subtests": 0,
}


@pytest.fixture
def every_outcome(tmp_path):
    return Project("every_outcome", tmp_path)


@pytest.mark.parametrize("mode", MODES)
def test_every_outcome_exact_counts_every_problem_named_under_5kb(every_outcome, mode):
    project = every_outcome
    tests = project.root / "tests"

    async def body():
        async with connect(project.params(), mode) as client:
            return await client.call_tool("execute_tests", {})

    result = run(body)
    assert not result.is_error, text_of(result)
    # the default view: the answer text, then the typed fields a program branches on
    text = text_of(result)
    # the run's report, named relative to the project's runs directory (<run id>/records.jsonl)
    report = result.structured_content["report_path"]
    (found,) = (project.artifacts / "runs").glob(f"*/{report}")
    assert found.is_file() and found.parent.parent.parent == project.artifacts / "runs"
    assert result.structured_content == {
        "answer": text,
        "status": "failed",
        "exit_code": 1,
        "counts": {name: n for name, n in EVERY_OUTCOME_COUNTS.items() if n or name == "total"},
        "report_path": report,
    }

    # most of it: four assertion explanations in full, a recursion and the printer's 512-byte output tail
    assert len(text.encode()) < 5120, len(text.encode())
    assert text.startswith("FAILED 6 failed, 18 passed, 2 errors, 2 skipped, 1 xfailed, 1 xpassed in ")
    # every problem: node id, path:line of the failing line, and the essential message
    expected = [
        (
            "tests/test_asserts.py::test_user_dict",
            tests / "test_asserts.py",
            'assert make_user() == {"name"',
            "{'age': 36} != {'age': 37}",
        ),
        (
            "tests/test_asserts.py::test_sorted_list",
            tests / "test_asserts.py",
            "assert sorted([5, 3, 1, 4])",
            "At index 3 diff: 5 != 4",
        ),
        (
            "tests/test_asserts.py::test_long_report_string",
            tests / "test_asserts.py",
            "assert actual == expected",
            "total: 120",
        ),
        (
            "tests/test_errors.py::test_deep_exception",
            tests / "test_errors.py",
            'raise ValueError(f"bad config key',
            "ValueError: bad config key 'port' (nested 12 deep)",
        ),
        (
            "tests/test_errors.py::test_missing_key",
            tests / "test_errors.py",
            'assert prices["pear"] > 0',
            "KeyError: 'pear'",
        ),
        (
            "tests/test_errors.py::test_prints_a_lot",
            tests / "test_errors.py",
            'assert False, "the printer gave up"',
            "the printer gave up",
        ),
        (
            "tests/test_errors.py::test_uses_database",
            tests / "test_errors.py",
            'raise ConnectionError("could not',
            "ConnectionError: could not connect to db at 127.0.0.1:5432",
        ),
        (
            "tests/test_errors.py::test_releases_resource",
            tests / "test_errors.py",
            'raise RuntimeError("resource was not',
            "RuntimeError: resource was not released",
        ),
    ]
    for node_id, path, source_line, message in expected:
        where = f"tests/{path.name}:{line_of(path, source_line)}"
        block = _failure_block(text, node_id)
        assert where in block, (node_id, where, block)
        assert message in block, (node_id, message, block)
    # the 190 KB printer: only a tail of its output, the end of it
    printer = _failure_block(text, "tests/test_errors.py::test_prints_a_lot")
    assert "log line 03899" in printer and "log line 00000" not in printer
    # passing, skipped and xfailed tests are never listed
    for quiet in ("test_square_is_non_negative", "test_addition", "test_skipped", "test_known_bug"):
        assert quiet not in text
    # the agent is told how to drill down: summarize_report reads this run's report by default
    last = text.rstrip().split("\n")[-1]
    assert last.startswith("Omitted: ") and last.endswith(". More: summarize_report with node_ids"), text


def _failure_block(text: str, node_id: str) -> str:
    """The lines of ``text`` about one failure (from its ``- FAILED``/``- ERROR`` line to
    the next one)."""
    lines = text.splitlines()
    start = next(
        i for i, ln in enumerate(lines) if re.match(r"- (FAILED|ERROR)\S* ", ln) and f" {node_id} " in ln + " "
    )
    end = next(
        (
            i
            for i in range(start + 1, len(lines))
            if lines[i].startswith(("- ", "Collection errors", "Omitted", "Report:", "Slowest"))
        ),
        len(lines),
    )
    return "\n".join(lines[start:end])


def test_all_green_run_is_under_300_bytes(every_outcome):
    async def body():
        async with connect(every_outcome.params(), "auto") as client:
            return await client.call_tool(
                "execute_tests", {"node_ids": ["tests/test_asserts.py::test_square_is_non_negative"]}
            )

    result = run(body)
    text = text_of(result)
    fields = {k: v for k, v in result.structured_content.items() if k != "report_path"}
    assert fields == {"answer": text, "status": "passed", "exit_code": 0, "counts": {"total": 15, "passed": 15}}
    assert text.startswith("PASSED 15 passed in ")
    assert len(text.encode()) < 300, text


def test_256_failures_from_3_causes_are_3_to_6_groups_under_2kb(tmp_path):
    project = Project("many_failures", tmp_path)

    async def body():
        async with connect(project.params(*TYPED), "legacy") as client:
            return await client.call_tool("execute_tests", {})

    result = run(body)
    res = ExecuteResult.model_validate(result.structured_content)
    assert res.summary.counts.failed == 256 and res.summary.counts.total == 256
    assert 3 <= len(res.summary.groups) <= 6, res.summary.groups
    assert sum(g.count for g in res.summary.groups) == 256
    text = text_of(result)
    assert len(text.encode()) < 2048, len(text.encode())
    assert text.startswith("FAILED 256 failed in ")
    for cause in ("KeyError: 'user-1'", "TimeoutError: no answer after 20 ms", "E           assert 0 == ((0 * 2) + 1)"):
        assert cause in text
    # one entry per group, named once, followed by its group's "also in" count; no group
    # table and no e.g. lines: they would repeat the entries
    assert {f.group for f in res.summary.failures} == {g.id for g in res.summary.groups}
    for failure in res.summary.failures:
        assert text.count(failure.node_id) == 1, failure.node_id
    also = [line for line in text.splitlines() if line.startswith(" also in ")]
    assert sorted(int(line.split()[2]) for line in also) == sorted(g.count - 1 for g in res.summary.groups)
    assert "e.g." not in text and "Failure groups" not in text
    # every failure is named through its group, so none is "more failures"; the budget
    # hint would name this tool's argument (max_failures is --maxfail here)
    assert "more failures" not in text and "raise max_failures" not in text


def test_selection_markers_keywords_maxfail_and_last_failed(every_outcome):
    async def body():
        async with connect(every_outcome.params(*TYPED), "auto") as client:
            by_k = await client.call_tool("execute_tests", {"keywords": "user or sorted"})
            by_m = await client.call_tool("execute_tests", {"markers": "xfail"})
            first = await client.call_tool("execute_tests", {"failfast": True})
            two = await client.call_tool("execute_tests", {"max_failures": 2})
            full = await client.call_tool("execute_tests", {})
            again = await client.call_tool("execute_tests", {"last_failed": True})
            return by_k, by_m, first, two, full, again

    by_k, by_m, first, two, full, again = (ExecuteResult.model_validate(r.structured_content) for r in run(body))
    assert by_k.summary.counts.total == 2 and by_k.summary.counts.failed == 2
    assert by_k.command[by_k.command.index("-k") + 1] == "user or sorted"
    assert by_m.summary.counts.total == 2 and by_m.summary.counts.xfailed == 1 and by_m.summary.counts.xpassed == 1
    assert by_m.status == "passed"
    assert first.summary.counts.failed + first.summary.counts.errors == 1 and "-x" in first.command
    assert two.summary.counts.failed + two.summary.counts.errors == 2 and "--maxfail=2" in two.command
    assert "--mcp-last-failed" in again.command
    # last_failed reruns exactly the 8 failures and errors of the previous full run
    assert again.summary.counts.failed + again.summary.counts.errors == 8
    assert again.summary.counts.total == 8
    assert full.summary.counts.total == 30


def test_no_tests_is_not_green_and_collection_errors_are_data(every_outcome):
    broken = every_outcome.root / "tests" / "test_broken.py"
    broken.write_text("import not_a_module_anywhere\n\ndef test_never():\n    pass\n")

    async def body():
        async with connect(every_outcome.params(*TYPED), "legacy") as client:
            none = await client.call_tool(
                "execute_tests", {"node_ids": ["tests/test_skips.py"], "keywords": "nothing_matches_this"}
            )
            interrupted = await client.call_tool("execute_tests", {})
            return none, interrupted

    none, interrupted = run(body)
    res = ExecuteResult.model_validate(none.structured_content)
    assert not none.is_error and res.status == "no_tests" and res.exit_code == 5
    assert res.summary.counts.total == 0
    assert text_of(none).startswith("NO TESTS ")
    assert "not a pass" in text_of(none)

    res = ExecuteResult.model_validate(interrupted.structured_content)
    assert not interrupted.is_error and res.status == "interrupted" and res.exit_code == 2
    assert [c.path for c in res.summary.collection_errors] == ["tests/test_broken.py"]
    text = text_of(interrupted)
    assert text.startswith("INTERRUPTED ")
    assert "tests/test_broken.py" in text and "not_a_module_anywhere" in text


@pytest.mark.parametrize("mode", MODES)
def test_discover_pages_node_ids_and_lists_collection_errors(every_outcome, mode):
    (every_outcome.root / "tests" / "test_broken.py").write_text("raise ImportError('cannot load plugin zeta')\n")

    async def body():
        async with connect(every_outcome.params(*TYPED), mode) as client:
            pages = []
            offset = 0
            while offset is not None:
                r = await client.call_tool("discover_tests", {"offset": offset, "limit": 7})
                assert not r.is_error, text_of(r)
                pages.append(r)
                offset = r.structured_content["next_offset"]
            selected = await client.call_tool(
                "discover_tests", {"node_ids": ["tests/test_skips.py"], "markers": "xfail"}
            )
            return pages, selected

    pages, selected = run(body)
    results = [DiscoverResult.model_validate(p.structured_content) for p in pages]
    assert len(results) == 5  # 30 tests, 7 a page
    all_ids = [nid for r in results for nid in r.node_ids]
    assert len(all_ids) == 30 == results[0].total and len(set(all_ids)) == 30
    assert "tests/test_asserts.py::test_square_is_non_negative[14]" in all_ids
    assert results[0].files == {"tests/test_asserts.py": 21, "tests/test_errors.py": 5, "tests/test_skips.py": 4}
    assert [c.path for c in results[0].collection_errors] == ["tests/test_broken.py"]
    assert "cannot load plugin zeta" in results[0].collection_errors[0].message
    text = text_of(pages[0])
    assert text.startswith("COLLECTION ERRORS 30 tests in 3 files, 1 collection error")
    assert "cannot load plugin zeta" in text and "offset=7" in text
    assert "tests/test_asserts.py::test_user_dict" in text

    sel = DiscoverResult.model_validate(selected.structured_content)
    assert sel.total == 2 and sel.node_ids == [
        "tests/test_skips.py::test_known_bug",
        "tests/test_skips.py::test_fixed_since",
    ]
    assert sel.next_offset is None


def test_summarize_report_drills_into_one_test_without_rerunning(every_outcome):
    async def body():
        async with connect(every_outcome.params(*TYPED), "auto") as client:
            run_result = await client.call_tool("execute_tests", {})
            report = run_result.structured_content["report_path"]
            every_outcome.clear_marks()
            story = await client.call_tool(
                "summarize_report",
                {
                    "paths": [report],
                    "node_ids": ["tests/test_errors.py::test_prints_a_lot", "tests/test_asserts.py::test_addition"],
                },
            )
            return story, report

    story, report = run(body)
    # the run wrote one report, the record file (and the stack-dump file its plugin armed, and
    # the project code its answer used)
    assert sorted(p.name for p in Path(report).parent.iterdir()) == ["project.json", "records.jsonl", "stacks.txt"]
    assert every_outcome.pytest_marks() == []  # nothing was re-run
    res = SummarizeResult.model_validate(story.structured_content)
    assert [f.node_id for f in res.summary.failures] == ["tests/test_errors.py::test_prints_a_lot"]
    assert res.not_failing == ["tests/test_asserts.py::test_addition"]
    assert res.summary.counts.model_dump() == EVERY_OUTCOME_COUNTS  # counts stay the whole report's
    out = res.summary.failures[0].stdout or ""
    assert "log line 03899" in out and len(out.encode()) > 16_000  # the larger budget: 32 KB of output
    assert "log line 03899" in text_of(story)


def test_execution_failures_are_tool_errors_with_kind_exit_and_tails(every_outcome):
    root = every_outcome.root
    (root / "tests" / "crash").mkdir()
    (root / "tests" / "crash" / "test_kill.py").write_text(
        "import os, signal\n\ndef test_sigkill():\n    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    (root / "tests" / "crash" / "test_exit.py").write_text("import os\n\ndef test_exit():\n    os._exit(1)\n")
    (root / "tests" / "internal").mkdir()
    (root / "tests" / "internal" / "conftest.py").write_text(
        "def pytest_collection_finish(session):\n    raise RuntimeError('hook exploded')\n"
    )
    (root / "tests" / "internal" / "test_x.py").write_text("def test_x():\n    pass\n")
    (root / "tests" / "internal_mid").mkdir()
    (root / "tests" / "internal_mid" / "conftest.py").write_text(
        "def pytest_runtest_makereport(item, call):\n"
        "    if item.name == 'test_b' and call.when == 'call':\n"
        "        raise MemoryError('hook ran out')\n"
    )
    (root / "tests" / "internal_mid" / "test_ab.py").write_text(
        "def test_a():\n    pass\n\n\ndef test_b():\n    pass\n"
    )
    calls = {
        "killed": {"node_ids": ["tests/crash/test_kill.py"]},
        "exited": {"node_ids": ["tests/crash/test_exit.py"]},
        "usage": {"node_ids": ["tests/test_skips.py::test_not_there"]},
        "internal": {"node_ids": ["tests/internal"]},
        "internal_mid": {"node_ids": ["tests/internal_mid"]},
    }

    async def body():
        async with connect(every_outcome.params(*TYPED), "legacy") as client:
            return {name: await client.call_tool("execute_tests", args) for name, args in calls.items()}

    results = run(body)
    details = {name: ToolFailureDetail.model_validate(r.structured_content) for name, r in results.items()}
    assert all(r.is_error for r in results.values())

    killed = details["killed"]
    assert killed.kind == "crashed" and killed.signal == "SIGKILL" and killed.exit_code is None
    assert "killed by SIGKILL" in killed.message and killed.command[-1] == "tests/crash/test_kill.py"

    exited = details["exited"]
    assert exited.kind == "crashed" and exited.exit_code == 1 and "session never finished" in exited.message

    usage = details["usage"]
    assert usage.kind == "usage_error" and usage.exit_code == 4
    assert "test_not_there" in usage.message and "not found" in (usage.stdout_tail or "") + (usage.stderr_tail or "")

    internal = details["internal"]
    assert internal.kind == "internal_error" and internal.exit_code == 3
    assert "hook exploded" in (internal.stdout_tail or "") + (internal.stderr_tail or "")
    assert "RuntimeError: hook exploded" in internal.message
    # an internal error amid the tests is a crash with what finished, never a run with no tests
    mid = details["internal_mid"]
    assert mid.kind == "internal_error" and "MemoryError: hook ran out" in mid.message, mid.message
    assert mid.running_test == "tests/internal_mid/test_ab.py::test_b", mid
    assert "The test running was tests/internal_mid/test_ab.py::test_b" in mid.message
    assert mid.summary is not None and mid.summary.counts.passed == 1, mid.summary
    for name, result in results.items():
        text = text_of(result)
        assert text.startswith(f"ERROR {details[name].kind}: ") and "Command: " in text
    # nothing is kept of runs that produced no result
    assert not any((every_outcome.artifacts / "runs").glob("*/*"))
