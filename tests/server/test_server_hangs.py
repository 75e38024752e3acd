"""A run that hangs or crashes still tells what happened, end to end: the real server over
real stdio, the real pytest on fixture projects (tests/fixtures/hangs, tests/fixtures/segfault).

A timeout used to answer with the command and pytest's progress dots only; a segfault
with faulthandler's dump buried in 8 KB of stderr. Now the answer names the test that
was running and for how long, the line of the test's own code it stood on (the chain
test -> helper), and summarises the tests that finished before (counts, the failure
with its message), and no process of the run is left.
"""

from __future__ import annotations

import pytest
from helpers.server_support import TYPED, Project, connect, line_of, pid_alive, run, text_of

from pytest_mcp_server.domain.failures import ToolFailureDetail
from pytest_mcp_server.domain.policy import STACK_FRAMES


def test_a_hang_names_the_running_test_its_line_and_keeps_what_finished(tmp_path):
    project = Project("hangs", tmp_path)
    source = project.root / "tests" / "test_hangs.py"
    sleep_line = line_of(source, "time.sleep(3600)")
    call_line = line_of(source, "    wait_for_server()")

    async def body():
        async with connect(project.params(*TYPED), "legacy") as client:
            return await client.call_tool("execute_tests", {"timeout_s": 3})

    result = run(body)
    assert result.is_error
    detail = ToolFailureDetail.model_validate(result.structured_content)
    assert detail.kind == "timeout"
    assert detail.running_test == "tests/test_hangs.py::test_hangs"
    assert detail.running_for_s is not None and 0.5 < detail.running_for_s <= 3.5
    # the chain test -> helper, outermost first, ending on the line it sleeps on
    assert detail.stack == [
        f"tests/test_hangs.py:{call_line} in test_hangs",
        f"tests/test_hangs.py:{sleep_line} in wait_for_server",
    ]
    # what finished before the hang: counts and the failure with its message
    assert detail.summary is not None
    counts = detail.summary.counts
    assert (counts.total, counts.passed, counts.failed) == (3, 2, 1)
    assert [f.node_id for f in detail.summary.failures] == ["tests/test_hangs.py::test_second_fails"]
    assert "arithmetic is broken" in detail.summary.failures[0].message

    text = text_of(result)
    assert text.startswith("ERROR timeout: pytest did not finish within 3s")
    assert f"The test running was tests/test_hangs.py::test_hangs, for {detail.running_for_s:g}s" in text
    assert f"at tests/test_hangs.py:{sleep_line} in wait_for_server" in text
    assert "FAILED 1 failed, 2 passed" in text and "arithmetic is broken" in text
    assert "test_after_hang" not in text  # never started
    # the test's stack is named, pytest's own frames are not
    assert "_pytest" not in text and "pluggy" not in text
    # killed before the answer was sent: nothing to wait for
    pids = [m["pid"] for m in project.pytest_marks()]
    assert len(pids) == 1 and [p for p in pids if pid_alive(p)] == []


@pytest.mark.parametrize(
    ("how", "crash_line_needle"),
    [("ctypes", "ctypes.string_at(0)"), ("signal", "os.kill(os.getpid(), signal.SIGSEGV)")],
)
def test_a_segfault_names_the_running_test_its_line_and_keeps_what_finished(tmp_path, how, crash_line_needle):
    project = Project("segfault", tmp_path)
    source = project.root / "tests" / "test_segfault.py"
    crash_line = line_of(source, crash_line_needle)
    call_line = line_of(source, "    read_null_pointer()")

    async def body():
        async with connect(project.params(*TYPED, env={"SEGFAULT_BY": how}), "auto") as client:
            return await client.call_tool("execute_tests", {"timeout_s": 60})

    result = run(body)
    assert result.is_error
    detail = ToolFailureDetail.model_validate(result.structured_content)
    assert detail.kind == "crashed" and detail.signal == "SIGSEGV" and detail.exit_code is None
    assert detail.running_test == "tests/test_segfault.py::test_segfaults"
    assert detail.stack is not None
    assert detail.stack[:2] == [
        f"tests/test_segfault.py:{call_line} in test_segfaults",
        f"tests/test_segfault.py:{crash_line} in read_null_pointer",
    ]
    if how == "ctypes":  # the library frame it crashed in stays, below the test's own
        assert detail.stack[2:] == ["ctypes/__init__.py:" + detail.stack[2].split(":")[1]]
        assert detail.stack[2].endswith(" in string_at")
    else:
        assert len(detail.stack) == 2
    assert detail.summary is not None
    counts = detail.summary.counts
    assert (counts.total, counts.passed, counts.failed) == (2, 1, 1)
    assert [f.node_id for f in detail.summary.failures] == ["tests/test_segfault.py::test_fails"]
    assert "Fatal Python error: Segmentation fault" in detail.message
    assert detail.stderr_tail and "Fatal Python error: Segmentation fault" in detail.stderr_tail

    text = text_of(result)
    assert text.startswith("ERROR crashed: pytest was killed by SIGSEGV after ")
    assert f"at tests/test_segfault.py:{crash_line} in read_null_pointer" in text
    assert "Running: tests/test_segfault.py::test_segfaults" in text
    assert "FAILED 1 failed, 1 passed" in text and "tests/test_segfault.py::test_fails" in text
    assert "test_after_segfault" not in text
    assert "_pytest" not in text  # faulthandler's 30 frames of pytest stay in stderr_tail
    assert len(text.encode()) < 4096, len(text.encode())
    pids = [m["pid"] for m in project.pytest_marks()]
    assert len(pids) == 1 and [p for p in pids if pid_alive(p)] == []


DEEP_WAIT = """
import threading
import time


def background():
    time.sleep(3600)


def wait_deeper(depth, done):
    if depth:
        return wait_deeper(depth - 1, done)
    return done.wait()


def test_waits_deep_while_a_thread_sleeps():
    threading.Thread(target=background, daemon=True).start()
    wait_deeper(6, threading.Event())
"""


def test_a_hang_deep_in_helpers_shows_the_test_thread_cut_to_its_ends(tmp_path):
    """With two threads, the stack is the one running the test (not the sleeping
    background thread), cut to its outermost frames (the test) and innermost ones (where
    it waits: the stdlib's Event.wait), the middle counted."""
    project = Project("hangs", tmp_path)
    source = project.root / "tests" / "test_deep.py"
    source.write_text(DEEP_WAIT)

    async def body():
        async with connect(project.params(*TYPED), "legacy") as client:
            return await client.call_tool("execute_tests", {"node_ids": ["tests/test_deep.py"], "timeout_s": 3})

    result = run(body)
    detail = ToolFailureDetail.model_validate(result.structured_content)
    assert detail.kind == "timeout"
    assert detail.running_test == "tests/test_deep.py::test_waits_deep_while_a_thread_sleeps"
    assert detail.summary is None  # nothing finished before
    stack = detail.stack
    assert stack is not None and len(stack) == STACK_FRAMES, stack
    assert (
        stack[0] == f"tests/test_deep.py:{line_of(source, 'wait_deeper(6,')} in test_waits_deep_while_a_thread_sleeps"
    )
    assert stack[1].endswith(" in wait_deeper")
    assert stack[2].startswith("... ") and stack[2].endswith(" frames")
    assert stack[-1].startswith("threading.py:") and stack[-1].endswith(" in wait")
    assert not any("background" in frame for frame in stack)
    # the message names the innermost line of the project's code, not the stdlib's
    assert f"at tests/test_deep.py:{line_of(source, 'return done.wait()')} in wait_deeper" in detail.message


def test_a_hang_under_xdist_names_the_test_and_its_line_from_the_worker(tmp_path):
    """With workers the tests run in xdist's worker processes: each one dumps its own
    stacks, and the answer picks the thread running the hung test."""
    project = Project("hangs", tmp_path)
    source = project.root / "tests" / "test_hangs.py"

    async def body():
        async with connect(project.params(*TYPED), "legacy") as client:
            return await client.call_tool("execute_tests", {"workers": 2, "timeout_s": 8})

    result = run(body)
    detail = ToolFailureDetail.model_validate(result.structured_content)
    assert detail.kind == "timeout"
    assert detail.running_test == "tests/test_hangs.py::test_hangs"
    assert detail.stack == [
        f"tests/test_hangs.py:{line_of(source, '    wait_for_server()')} in test_hangs",
        f"tests/test_hangs.py:{line_of(source, 'time.sleep(3600)')} in wait_for_server",
    ]
    assert detail.summary is not None
    assert detail.summary.counts.failed == 1 and detail.summary.counts.passed >= 2
    assert [f.node_id for f in detail.summary.failures] == ["tests/test_hangs.py::test_second_fails"]
    # the controller, its workers and everything else of the run are gone
    pids = [m["pid"] for m in project.pytest_marks()]
    assert len(pids) == 3 and [p for p in pids if pid_alive(p)] == []


HANGS_AT_IMPORT = """
import time


def connect_to_database():
    time.sleep(3600)


CONNECTION = connect_to_database()


def test_never_collected():
    pass
"""


def test_a_hang_while_collecting_says_no_test_was_running_and_where_pytest_stood(tmp_path):
    project = Project("hangs", tmp_path)
    source = project.root / "tests" / "test_import_hangs.py"
    source.write_text(HANGS_AT_IMPORT)

    async def body():
        async with connect(project.params(*TYPED), "auto") as client:
            return await client.call_tool("execute_tests", {"node_ids": ["tests/test_import_hangs.py"], "timeout_s": 3})

    result = run(body)
    detail = ToolFailureDetail.model_validate(result.structured_content)
    assert detail.kind == "timeout"
    assert detail.running_test is None and detail.summary is None
    sleep_at = f"tests/test_import_hangs.py:{line_of(source, 'time.sleep(3600)')} in connect_to_database"
    assert detail.stack is not None and detail.stack[-1] == sleep_at
    assert f"tests/test_import_hangs.py:{line_of(source, 'CONNECTION = ')} in <module>" in detail.stack
    assert f"No test was running (collection, or a session fixture); pytest stood at {sleep_at}." in text_of(result)
