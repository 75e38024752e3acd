"""execute_tests with ``repeat``: the selection runs several times, each in a fresh pytest,
and the answer names the tests whose outcome changed between runs (flaky) apart from
those that failed every time. The real server over real stdio with the SDK's client, the
real pytest on a project written here: one test fails every other run (it keeps a
counter in a file of the project, so its outcome alternates across processes), one
always fails, two always pass, and one hangs from its third run on.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import anyio
from helpers.server_support import (
    TYPED,
    connect,
    line_of,
    pid_alive,
    progress_delivered,
    run,
    text_of,
    wait_for,
    wait_until_gone,
)
from mcp import StdioServerParameters

from pytest_mcp_server.domain.failures import ToolFailureDetail
from pytest_mcp_server.domain.flaky import OutcomeHistory, last_failing_run, legend
from pytest_mcp_server.domain.tools import ExecuteResult

FLAKY_TESTS = """\
from pathlib import Path

COUNTER = Path(__file__).resolve().parent.parent / "every_other.count"


def test_every_other_run():
    n = int(COUNTER.read_text()) if COUNTER.exists() else 0
    COUNTER.write_text(str(n + 1))
    assert n % 2 == 0, f"call {n + 1}: this test fails every other run"


def test_always_fails():
    assert sum([1, 1]) == 3


def test_passes():
    pass


def test_passes_too():
    pass
"""

HANGING_TEST = """\
import time
from pathlib import Path

COUNTER = Path(__file__).resolve().parent.parent / "hangs.count"


def test_hangs_from_the_third_run():
    n = int(COUNTER.read_text()) if COUNTER.exists() else 0
    COUNTER.write_text(str(n + 1))
    if n >= 2:
        time.sleep(300)
"""

# every pytest process that starts a session notes its pid: one line per run
CONFTEST = """\
import os
from pathlib import Path


def pytest_sessionstart(session):
    with open(Path(__file__).resolve().parent / "pids.txt", "a") as f:
        f.write(f"{os.getpid()}\\n")
"""

FLAKY = "tests/test_flaky.py::test_every_other_run"
ALWAYS_FAILS = "tests/test_flaky.py::test_always_fails"
PASSES = "tests/test_flaky.py::test_passes"


class RepeatProject:
    """The project above in ``tmp``, with the server's artifacts outside it."""

    def __init__(self, tmp: Path) -> None:
        self.root = tmp / "proj"
        (self.root / "tests").mkdir(parents=True)
        (self.root / "tests" / "test_flaky.py").write_text(FLAKY_TESTS)
        (self.root / "tests" / "test_hangs.py").write_text(HANGING_TEST)
        (self.root / "conftest.py").write_text(CONFTEST)
        self.artifacts = tmp / "artifacts"

    def params(self) -> StdioServerParameters:
        """How the SDK's client starts the real server for this project (the ``typed`` view)."""
        args = ["-m", "pytest_mcp_server", "--root", str(self.root), "--artifacts-dir", str(self.artifacts), *TYPED]
        env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
        return StdioServerParameters(command=sys.executable, args=args, env=env)

    def pids(self) -> list[int]:
        path = self.root / "pids.txt"
        return [int(line) for line in path.read_text().split()] if path.exists() else []

    def run_dirs(self) -> list[Path]:
        return sorted(p for p in (self.artifacts / "runs").glob("*/*") if p.is_dir())


def _without_times_and_paths(text: str) -> str:
    return re.sub(r"/\S+/report\.json", "<report>", re.sub(r"in \d+\.\d+s", "in <t>", text))


def test_repeat_names_the_flaky_test_with_its_pattern_apart_from_the_consistent_failure(tmp_path):
    project = RepeatProject(tmp_path)
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, total))

    async def body():
        async with connect(project.params(), "auto") as client:
            result = await client.call_tool(
                "execute_tests", {"node_ids": ["tests/test_flaky.py"], "repeat": 4}, progress_callback=on_progress
            )
            await progress_delivered()
            return result

    result = run(body)
    text = text_of(result)
    assert not result.is_error, text
    res = ExecuteResult.model_validate(result.structured_content)
    # four complete runs, each its own pytest process with its own reports
    assert len(set(project.pids())) == 4
    assert len(project.run_dirs()) == 4 and all((d / "records.jsonl").is_file() for d in project.run_dirs())
    assert Path(res.report_path).parent == project.run_dirs()[-1]
    # the counts are the last run's (the flaky test failed in it), plus the flaky count
    assert res.runs == 4 and res.status == "failed" and res.exit_code == 1
    counts = res.summary.counts
    assert (counts.total, counts.passed, counts.failed, counts.flaky) == (4, 2, 2, 1)
    (flaky,) = res.flaky
    assert (flaky.node_id, flaky.pattern, flaky.failed_run) == (FLAKY, "PFPF", 4)
    assert flaky.failure is not None and flaky.failure.message == "call 4: this test fails every other run"
    assert flaky.failure.traceback == ""  # the text carries it
    # failing every time is a consistent failure: in the failures, never flaky
    assert ALWAYS_FAILS in {f.node_id for f in res.summary.failures}
    assert text.startswith("FLAKY 1 test flaky over 4 runs; last run: 2 failed, 2 passed in ")
    assert "\n- PFPF tests/test_flaky.py::test_every_other_run  (run 4's failure: its entry below)\n" in text
    assert "(P passed, F failed; one letter per run)" in text
    assert text.count("E       AssertionError: call 4: this test fails every other run") == 1
    always_at = line_of(project.root / "tests" / "test_flaky.py", "assert sum([1, 1]) == 3")
    assert f"\n tests/test_flaky.py:{always_at}: assert sum([1, 1]) == 3\n" in text
    # progress counts the tests of all runs: 4 tests, 4 runs
    assert seen and seen[-1] == (16, 16), seen
    assert [p for p, _ in seen] == sorted(p for p, _ in seen)


def test_one_run_answers_as_before_and_a_flaky_failure_of_an_earlier_run_is_shown_in_full(tmp_path):
    project = RepeatProject(tmp_path)
    selection = [ALWAYS_FAILS, PASSES]

    async def body():
        async with connect(project.params(), "auto") as client:
            default = await client.call_tool("execute_tests", {"node_ids": selection})
            once = await client.call_tool("execute_tests", {"node_ids": selection, "repeat": 1})
            three = await client.call_tool("execute_tests", {"node_ids": [FLAKY], "repeat": 3})
            return default, once, three

    default, once, three = run(body)
    # repeat 1 is the default: the same answer, without the repeat fields
    assert _without_times_and_paths(text_of(once)) == _without_times_and_paths(text_of(default))
    assert text_of(once).startswith("FAILED 1 failed, 1 passed in ")
    for answer in (default, once):
        assert "runs" not in answer.structured_content and "flaky" not in answer.structured_content
        assert answer.structured_content["summary"]["counts"]["flaky"] == 0
    # PFP: the last run passed, so the flaky test's failure (run 2) is given in full here
    res = ExecuteResult.model_validate(three.structured_content)
    assert res.status == "passed" and res.summary.counts.flaky == 1 and res.summary.failures == []
    assert [(t.pattern, t.failed_run) for t in res.flaky] == [("PFP", 2)]
    text = text_of(three)
    assert text.startswith("FLAKY 1 test flaky over 3 runs; last run: 1 passed in ")
    where = line_of(project.root / "tests" / "test_flaky.py", "assert n % 2 == 0")
    # the failure's frame line names its location: the header does not repeat it
    assert f"- PFP {FLAKY}\n run 2: FAILED\n" in text and f"\n tests/test_flaky.py:{where}: assert n % 2 == 0" in text
    assert "E       AssertionError: call 2: this test fails every other run" in text


def test_repeat_out_of_range_or_with_last_failed_is_refused_naming_the_field(tmp_path):
    project = RepeatProject(tmp_path)
    refused = [{"repeat": 0}, {"repeat": 21}, {"repeat": "2"}, {"repeat": 2, "last_failed": True}]

    async def body():
        async with connect(project.params(), "legacy") as client:
            return [await client.call_tool("execute_tests", arguments) for arguments in refused]

    for arguments, result in zip(refused, run(body), strict=True):
        assert result.is_error, arguments
        detail = ToolFailureDetail.model_validate(result.structured_content)
        assert detail.kind == "invalid_argument" and detail.field == "repeat", detail
        assert text_of(result).startswith("ERROR invalid_argument: repeat: ")
    assert "last_failed would change the selection between runs" in detail.message
    # refused before any process started
    assert project.pids() == [] and not project.artifacts.exists()


def test_one_timeout_budget_spans_the_runs_and_a_run_that_exceeds_it_ends_the_call(tmp_path):
    project = RepeatProject(tmp_path)
    budget_s = 6

    async def body():
        async with connect(project.params(), "auto") as client:
            return await client.call_tool(
                "execute_tests",
                {"node_ids": [FLAKY, "tests/test_hangs.py"], "repeat": 4, "timeout_s": budget_s},
            )

    result = run(body)
    assert result.is_error
    detail = ToolFailureDetail.model_validate(result.structured_content)
    assert detail.kind == "timeout" and detail.runs_finished == 2
    # the third run hung in its test and was killed when the budget left by runs 1-2 ran out
    assert detail.running_test == "tests/test_hangs.py::test_hangs_from_the_third_run"
    assert detail.message.startswith(
        "Run 3 of 4 ran out of time: timeout_s (6s) covers all 4 runs, and runs 1-2 took "
    ), detail.message
    assert "s and found 1 flaky test; lower repeat or raise timeout_s. pytest did not finish within " in (
        detail.message
    )
    assert [(t.node_id, t.pattern) for t in detail.flaky or []] == [(FLAKY, "PF")]
    assert detail.duration_s is not None and detail.duration_s < budget_s
    # the tests the killed run finished before the hang are summarised as usual
    assert detail.summary is not None and detail.summary.counts.passed == 1
    pids = project.pids()
    assert len(pids) == 3 and wait_until_gone(pids) == [] and not any(pid_alive(p) for p in pids)
    text = text_of(result)
    assert text.startswith("ERROR timeout: Run 3 of 4 ran out of time: ")
    assert f"\nFlaky in the finished runs (P passed, F failed; one letter per run):\n- PF {FLAKY}\n" in text


def test_cancelling_a_repeated_call_kills_the_running_pytest_and_starts_no_further_run(tmp_path):
    project = RepeatProject(tmp_path)

    async def body():
        async with connect(project.params(), "auto") as client:
            async with anyio.create_task_group() as call:

                async def repeated():
                    await client.call_tool("execute_tests", {"node_ids": ["tests/test_hangs.py"], "repeat": 4})

                call.start_soon(repeated)
                # runs 1 and 2 finish; the third hangs in its test
                await wait_for(lambda: len(project.pids()) == 3, what="the third run to start")
                call.cancel_scope.cancel()  # notifications/cancelled for that request
            hung = project.pids()[-1]
            await wait_for(lambda: not pid_alive(hung), timeout=30, what="the cancelled run's pytest to end")
            await anyio.sleep(1)  # time enough for a fourth run to start, were the loop still going
            started = len(project.pids())
            after = await client.call_tool("execute_tests", {"node_ids": [PASSES], "repeat": 2})
            return started, after

    started, after = run(body)
    assert started == 3
    # the server serves on; with no flaky test the verdict line is the usual one, a clause longer
    assert re.fullmatch(r"PASSED 1 passed in \d+\.\d+s; 2 runs, none flaky\n", text_of(after)), text_of(after)
    assert after.structured_content["runs"] == 2 and after.structured_content["flaky"] == []


def test_patterns_have_one_letter_per_run_and_a_run_without_the_test_says_nothing():
    # the letters of every outcome, a test missing from some runs (-x stopped the run
    # before it, or it was not collected) and one whose outcome has no letter
    history = OutcomeHistory()
    history.add_run({"a": "passed", "b": "xfailed", "c": "passed", "d": "failed", "e": "error"})
    history.add_run({"a": "failed", "b": "xpassed", "d": "failed", "e": "skipped", "f": "passed"})
    history.add_run({"a": "passed", "c": "passed", "d": "failed", "e": "error", "f": "rerun"})
    assert [history.pattern(t) for t in "abcdef"] == ["PFP", "xX-", "P-P", "FFF", "ESE", "-P?"]
    # flaky: two outcomes besides "not run"; failing every time is consistent, not flaky
    assert history.flaky() == [("a", "PFP"), ("b", "xX-"), ("e", "ESE"), ("f", "-P?")]
    assert [last_failing_run(history.pattern(t)) for t in "abde"] == [1, None, 2, 2]
    assert legend(["PFP", "xX-", "ESE"]) == "P passed, F failed, E error, S skipped, x xfailed, X xpassed, - not run"
