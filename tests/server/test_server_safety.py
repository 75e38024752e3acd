"""Safety end to end: bad input is refused before any pytest starts; timeout, client
cancellation, client disconnect and server shutdown leave no process behind; the
project's interpreter is found and a missing pytest or xdist is a clear error.

"No pytest started" is proven by the fixture projects' conftest, which leaves a mark
file for every pytest process that imports it; the grandchildren that tests start note
their own pids.
"""

from __future__ import annotations

import os
import signal
import sys
import sysconfig
from pathlib import Path

import anyio
import pytest
from helpers.server_support import (
    MODES,
    TYPED,
    Project,
    connect,
    pid_alive,
    run,
    still_serving,
    text_of,
    wait_for,
    wait_until_gone,
)

from pytest_mcp_server.domain.failures import ToolFailureDetail
from pytest_mcp_server.domain.tools import ExecuteResult


@pytest.fixture
def project(tmp_path):
    p = Project("every_outcome", tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "test_secret.py").write_text("def test_secret():\n    pass\n")
    (outside / "report.xml").write_text('<testsuites><testsuite name="x"></testsuite></testsuites>')
    (p.root / "tests" / "escape").symlink_to(outside)
    (p.root / "report_link.xml").symlink_to(outside / "report.xml")
    (p.root / "args.txt").write_text("-p evil\n")
    return p


BAD_EXECUTE = [
    ({"node_ids": ["-p"]}, "node_ids[0]", "starts with '-'"),
    ({"node_ids": ["--rootdir=/"]}, "node_ids[0]", "starts with '-'"),
    ({"node_ids": ["@args.txt"]}, "node_ids[0]", "@argument-file"),
    ({"node_ids": ["tests/test_skips.py", "tests/test_asserts.py\x00"]}, "node_ids[1]", "control character"),
    ({"node_ids": ["tests/\x1b[2Jtest_skips.py"]}, "node_ids[0]", "control character"),
    ({"node_ids": ["../every_outcome/tests"]}, "node_ids[0]", "'..'"),
    ({"node_ids": ["/etc/passwd"]}, "node_ids[0]", "absolute path"),
    ({"node_ids": ["~/x.py"]}, "node_ids[0]", "absolute path"),
    ({"node_ids": ["tests/escape/test_secret.py"]}, "node_ids[0]", "outside"),
    ({"node_ids": ["tests/test_nothere.py::test_x"]}, "node_ids[0]", "does not exist"),
    ({"node_ids": ["tests"] * 501}, "node_ids", "at most 500"),
    ({"node_ids": ["tests/" + "x" * 1001]}, "node_ids[0]", "longer than 1000"),
    ({"node_ids": "tests"}, "node_ids", "valid list"),
    ({"markers": "slow and"}, "markers", "expected"),
    ({"markers": "slow; rm -rf /"}, "markers", "unexpected character ';'"),
    ({"markers": "-x"}, "markers", "starts with '-'"),
    ({"markers": "slow\nfast"}, "markers", "control character"),
    ({"markers": "a" * 1001}, "markers", "at most 1000"),
    ({"keywords": "$(touch pwned)"}, "keywords", "unexpected character '$'"),
    ({"keywords": "parse(x=1)"}, "keywords", "take no arguments"),
    ({"keywords": "(a or b"}, "keywords", "expected ')'"),
    ({"env": {"PYTHONPATH": "/tmp"}}, "env", "unknown argument"),
    ({"args": ["-p", "evil"]}, "args", "unknown argument"),
    ({"timeout_s": -1}, "timeout_s", "greater than 0"),
    ({"workers": 0}, "workers", "greater than or equal to 1"),
    ({"max_failures": "3"}, "max_failures", "valid integer"),
    ({"failfast": "yes"}, "failfast", "valid boolean"),
    ({"traceback_lines": 1}, "traceback_lines", "greater than or equal to 3"),
]

BAD_OTHER = [
    ("discover_tests", {"offset": -1}, "offset", "greater than or equal to 0"),
    ("discover_tests", {"node_ids": ["-q"]}, "node_ids[0]", "starts with '-'"),
    ("discover_tests", {"keywords": "a b"}, "keywords", "expected end of input"),
    # no paths: the last run's report, and before any run there is none
    ("summarize_report", {}, "paths", "no execute_tests run of this project has a report yet"),
    ("summarize_report", {"paths": []}, "paths", "no execute_tests run of this project has a report yet"),
    ("summarize_report", {"paths": ["/etc/passwd"]}, "paths[0]", "outside"),
    ("summarize_report", {"paths": ["report_link.xml"]}, "paths[0]", "outside"),
    ("summarize_report", {"paths": ["../outside/report.xml"]}, "paths[0]", "outside"),
    ("summarize_report", {"paths": ["missing.xml"]}, "paths[0]", "does not exist"),
    ("summarize_report", {"paths": ["tests"]}, "paths[0]", "not a regular file"),
    ("summarize_report", {"paths": ["@x"]}, "paths[0]", "starts with '@'"),
    ("summarize_report", {"paths": ["a\x00b"]}, "paths[0]", "control character"),
]


@pytest.mark.parametrize("mode", MODES)
def test_bad_input_is_refused_naming_the_field_and_no_pytest_starts(project, mode):
    async def body():
        async with connect(project.params(*TYPED), mode) as client:
            answers = []
            for args, field, reason in BAD_EXECUTE:
                answers.append(("execute_tests", args, field, reason, await client.call_tool("execute_tests", args)))
            for tool, args, field, reason in BAD_OTHER:
                answers.append((tool, args, field, reason, await client.call_tool(tool, args)))
            return answers

    for tool, args, field, reason, result in run(body):
        assert result.is_error, (tool, args)
        detail = ToolFailureDetail.model_validate(result.structured_content)
        assert detail.kind == "invalid_argument", (args, detail)
        assert detail.field == field, (args, detail)
        assert reason in detail.message, (args, detail.message)
        assert text_of(result).startswith(f"ERROR invalid_argument: {field}: "), text_of(result)
    assert project.pytest_marks() == []  # no pytest process was started for any of them
    assert not (project.root / "pwned").exists()


def test_a_report_that_is_not_a_report_is_a_report_error(project):
    async def body():
        async with connect(project.params(*TYPED), "auto") as client:
            return await client.call_tool("summarize_report", {"paths": ["pyproject.toml"]})

    result = run(body)
    detail = ToolFailureDetail.model_validate(result.structured_content)
    assert result.is_error and detail.kind == "report_error" and detail.report_error_kind == "not_a_report"
    assert detail.field == "paths[0]" and "pyproject.toml" in detail.message


# --------------------------------------------------------------------------------------
# The project's interpreter


def _venv(root: Path, *, with_pytest: bool) -> Path:
    """``<root>/.venv`` without pip; with_pytest links pytest and its dependencies (not
    xdist, not orjson) from this interpreter's site-packages."""
    import venv

    venv.EnvBuilder(with_pip=False, symlinks=True).create(root / ".venv")
    python = root / ".venv" / "bin" / "python"
    if with_pytest:
        here = Path(sysconfig.get_paths()["purelib"])
        site = next((root / ".venv" / "lib").glob("python3*/site-packages"))
        import importlib.util

        for name in ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "pygments", "py"):
            spec = importlib.util.find_spec(name)
            if spec is None or spec.origin is None:
                continue
            origin = Path(spec.origin)
            src = origin.parent if origin.name == "__init__.py" else origin
            if here in src.parents:
                (site / src.name).symlink_to(src)
        for dist in ("pytest", "pluggy", "iniconfig", "packaging", "pygments"):
            for info in here.glob(f"{dist}-*.dist-info"):
                (site / info.name).symlink_to(info)
    return python


def test_missing_pytest_names_the_interpreter_and_the_fix(tmp_path):
    project = Project("every_outcome", tmp_path)
    python = _venv(project.root, with_pytest=False)

    async def body():
        async with connect(project.params(*TYPED), "legacy") as client:
            return await client.call_tool("execute_tests", {})

    result = run(body)
    detail = ToolFailureDetail.model_validate(result.structured_content)
    assert result.is_error and detail.kind == "pytest_missing"
    assert str(python) in detail.message and "pip install pytest" in detail.message and "--python" in detail.message
    assert project.pytest_marks() == []


def test_project_venv_without_plugins_runs_with_the_record_file_and_refuses_workers(tmp_path):
    """A project interpreter with pytest only: the server's own plugin writes the record
    file (with the standard library's json: no orjson there), exact to the xpass; xdist's
    ``workers`` is refused."""
    project = Project("every_outcome", tmp_path)
    python = _venv(project.root, with_pytest=True)

    async def body():
        async with connect(project.params(*TYPED), "auto") as client:
            workers = await client.call_tool("execute_tests", {"workers": 2})
            marks_after_refusal = project.pytest_marks()
            plain = await client.call_tool("execute_tests", {})
            return workers, marks_after_refusal, plain

    workers, marks_after_refusal, plain = run(body)
    detail = ToolFailureDetail.model_validate(workers.structured_content)
    assert workers.is_error and detail.kind == "invalid_argument" and detail.field == "workers"
    assert "pytest-xdist" in detail.message and str(python) in detail.message
    assert marks_after_refusal == []

    res = ExecuteResult.model_validate(plain.structured_content)
    assert res.command[0] == str(python)
    assert res.summary.format == "reportlog" and res.report_path.endswith("records.jsonl")
    c = res.summary.counts
    assert (c.total, c.failed, c.errors, c.skipped, c.xfailed, c.xpassed, c.passed) == (30, 6, 2, 2, 1, 1, 18)


def test_python_option_and_workers_with_xdist(tmp_path):
    project = Project("every_outcome", tmp_path)
    totals = set()

    async def on_progress(done, total, message):
        totals.add(total)

    async def body():
        async with connect(project.params(*TYPED, "--python", sys.executable), "auto") as client:
            return await client.call_tool(
                "execute_tests", {"workers": 2, "node_ids": ["tests/test_asserts.py"]}, progress_callback=on_progress
            )

    result = run(body)
    res = ExecuteResult.model_validate(result.structured_content)
    assert res.command[0] == sys.executable and res.command[res.command.index("-n") + 1] == "2"
    assert res.summary.counts.total == 21 and res.summary.counts.failed == 3
    assert totals <= {21.0}  # with xdist the total comes from the workers' collection
    # the workers are pytest processes too: all gone
    assert len(project.pytest_marks()) == 3
    assert wait_until_gone([m["pid"] for m in project.pytest_marks()], timeout=5) == []


# --------------------------------------------------------------------------------------
# No process survives


@pytest.fixture
def slow(tmp_path):
    return Project("slow", tmp_path)


HANG = "hang/test_hang.py::test_hangs_with_children"


def _started_with_children(project: Project) -> bool:
    return len(project.pytest_marks()) == 1 and len(project.child_pids()) == 2


def _all_pids(project: Project) -> list[int]:
    return [m["pid"] for m in project.pytest_marks()] + project.child_pids()


def _runs_left(project: Project) -> list[Path]:
    runs = project.artifacts / "runs"
    return [p for d in runs.iterdir() for p in d.iterdir()] if runs.exists() else []


def test_timeout_capped_by_the_server_kills_the_whole_group_including_a_sigterm_ignoring_grandchild(slow):
    async def body():
        async with connect(slow.params(*TYPED, "--max-timeout", "3"), "legacy") as client:
            return await client.call_tool("execute_tests", {"node_ids": [HANG], "timeout_s": 600})

    result = run(body)
    detail = ToolFailureDetail.model_validate(result.structured_content)
    assert result.is_error and detail.kind == "timeout"
    assert "up to 3s" in detail.message and detail.command and detail.command[-1] == HANG
    assert detail.exit_code is None and detail.signal in ("SIGTERM", "SIGKILL")
    assert text_of(result).startswith("ERROR timeout: pytest did not finish within 3s")
    pids = _all_pids(slow)
    assert len(pids) == 3
    # killed before the answer was sent: nothing to wait for
    assert [p for p in pids if pid_alive(p)] == []
    assert _runs_left(slow) == []  # the run's temporary files are gone


@pytest.mark.parametrize("mode", MODES)
def test_client_cancellation_kills_the_group_and_the_server_keeps_serving(slow, mode):
    async def body():
        async with connect(slow.params(*TYPED), mode) as client:
            with anyio.move_on_after(60) as scope:
                async with anyio.create_task_group() as tg:

                    async def call():
                        await client.call_tool("execute_tests", {"node_ids": [HANG]})

                    tg.start_soon(call)
                    await wait_for(lambda: _started_with_children(slow), what="pytest and its children")
                    tg.cancel_scope.cancel()  # the client sends notifications/cancelled
            assert not scope.cancelled_caught
            pids = _all_pids(slow)
            assert wait_until_gone(pids, timeout=15) == []
            # still serving: a ping (or tools/list), and a real run
            await still_serving(client, mode)
            ok = await client.call_tool("execute_tests", {"node_ids": ["tests/test_slow.py::test_step[0]"]})
            return pids, ok

    pids, ok = run(body)
    assert len(pids) == 3
    assert ExecuteResult.model_validate(ok.structured_content).status == "passed"
    # only the second run is kept
    assert len(_runs_left(slow)) == 1


def test_client_disconnect_kills_the_group(slow):
    async def body():
        async with connect(slow.params(*TYPED), "legacy") as client:
            async with anyio.create_task_group() as tg:

                async def call():
                    try:
                        await client.call_tool("execute_tests", {"node_ids": [HANG]})
                    except Exception:
                        pass

                tg.start_soon(call)
                await wait_for(lambda: _started_with_children(slow), what="pytest and its children")
                tg.cancel_scope.cancel()
        # leaving the client closes the server's stdin

    run(body)
    pids = _all_pids(slow)
    assert len(pids) == 3
    assert wait_until_gone(pids, timeout=15) == []


def test_a_process_left_behind_by_a_passing_test_does_not_survive_the_run(slow):
    async def body():
        async with connect(slow.params(*TYPED, env={"SLOW_STEP_S": "0"}), "auto") as client:
            return await client.call_tool("execute_tests", {"node_ids": ["tests/test_slow.py"]})

    res = ExecuteResult.model_validate(run(body).structured_content)
    assert res.status == "passed" and res.summary.counts.passed == 9
    (child,) = slow.child_pids()
    assert wait_until_gone([child], timeout=5) == []


def _peak_rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))


def test_output_is_streamed_not_held_256_mb_leave_the_server_memory_flat(slow):
    async def body():
        async with connect(slow.params(*TYPED, env={"SLOW_STEP_S": "0"}), "legacy") as client:
            await client.call_tool("execute_tests", {"node_ids": ["tests/test_slow.py::test_step[0]"]})
            server_pid = slow.pytest_marks()[0]["ppid"]
            before = _peak_rss_kb(server_pid)
            loud = await client.call_tool("execute_tests", {"node_ids": ["hang/test_loud.py"]})
            return before, _peak_rss_kb(server_pid), loud

    before, after, loud = run(body)
    assert ExecuteResult.model_validate(loud.structured_content).status == "passed"
    assert after - before < 48 * 1024, (before, after)  # 256 MB went through, the peak barely moved


ESCAPEE = "hang/test_hang.py::test_hangs_with_an_escapee"


def _started_with_escapee(project: Project) -> bool:
    return len(project.pytest_marks()) == 1 and len(project.child_pids()) == 2


@pytest.mark.parametrize("how", ["timeout", "cancel"])
def test_a_process_that_left_the_group_with_setsid_is_killed_too(slow, how):
    """A great-grandchild that left the run's process group and session (``setsid``)
    and ignores SIGTERM is found by the run's token in its environment (psutil) and
    killed with the run."""

    async def body():
        async with connect(slow.params(*TYPED), "auto") as client:
            if how == "timeout":
                return await client.call_tool("execute_tests", {"node_ids": [ESCAPEE], "timeout_s": 4})
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "execute_tests", {"node_ids": [ESCAPEE]})
                await wait_for(lambda: _started_with_escapee(slow), what="pytest, its child and the escapee")
                tg.cancel_scope.cancel()
            await still_serving(client, "auto")

    try:
        result = run(body)
        if how == "timeout":
            assert ToolFailureDetail.model_validate(result.structured_content).kind == "timeout"
        pids = _all_pids(slow)
        assert len(pids) == 3
        assert wait_until_gone(pids, timeout=10) == []
    finally:
        for pid in _all_pids(slow):
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_sigkill_to_the_server_leaves_no_process(slow):
    """A server killed outright cannot clean up; pytest asked the kernel for a signal
    when its parent dies (PR_SET_PDEATHSIG, set by the event plugin) and kills its own
    group."""

    async def body():
        async with connect(slow.params(*TYPED), "legacy") as client:
            async with anyio.create_task_group() as tg:

                async def call():
                    try:
                        await client.call_tool("execute_tests", {"node_ids": [HANG]})
                    except Exception:  # the connection dies with the server
                        pass

                tg.start_soon(call)
                await wait_for(lambda: _started_with_children(slow), what="pytest and its children")
                os.kill(slow.pytest_marks()[0]["ppid"], signal.SIGKILL)
                await anyio.sleep(0.5)
                tg.cancel_scope.cancel()

    try:
        run(body)
        pids = _all_pids(slow)
        assert len(pids) == 3
        assert wait_until_gone(pids, timeout=10) == []
    finally:
        for pid in _all_pids(slow):
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
