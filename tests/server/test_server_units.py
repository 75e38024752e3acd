"""The server's domain pieces on their own (no MCP): pytest's expression grammar,
path containment, argv building, run rotation, output tails, configuration."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from _pytest.mark.expression import Expression
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_mcp_server.adapters.mcp.catalogue import TOOLS_BY_NAME
from pytest_mcp_server.app.runner import Runner
from pytest_mcp_server.app.summarize import summarize_report
from pytest_mcp_server.domain.config import ServerConfig, default_artifacts_base
from pytest_mcp_server.domain.expressions import check_expression
from pytest_mcp_server.domain.failures import ToolFailure
from pytest_mcp_server.domain.policy import EXECUTE_BUDGETS, FULL_STORY, KEEP_RUNS, TAIL_BYTES
from pytest_mcp_server.domain.validation import resolve_inside
from pytest_mcp_server.engine.models import Budgets
from pytest_mcp_server.run.argv import RECORDS_FILE, execute_argv
from pytest_mcp_server.run.events import PLUGIN_DIR
from pytest_mcp_server.run.interpreter import Interpreter, find_python
from pytest_mcp_server.run.process import (
    RUN_MARKER,
    OutputFile,
    Tail,
    forget_group,
    kill_group,
    run_members,
    spawn_group,
)
from pytest_mcp_server.run.rundirs import RUNNING_MARKER


def parse_params(tool: str, arguments: dict):
    """Validate ``arguments`` as the server does for a ``tools/call`` of ``tool``."""
    return TOOLS_BY_NAME[tool].parse(arguments)


def pytest_accepts(expr: str) -> bool:
    try:
        Expression.compile(expr)
    except SyntaxError:
        return False
    return True


def ours_accept(expr: str, markers: bool = True) -> bool:
    try:
        check_expression(expr, markers=markers)
    except ValueError:
        return False
    return True


GRAMMAR_BITS = st.sampled_from(
    [
        "a",
        "b_1",
        "not",
        "and",
        "or",
        "(",
        ")",
        " ",
        "\t",
        "=",
        ",",
        "'x'",
        '"y"',
        "1",
        "-2",
        "True",
        "None",
        "x.y",
        "t[1-2]",
        "::",
        "\\",
        "/",
        "+",
        ";",
        "$",
        "'",
        "é",
        "\n",
        "if",
    ]
)


@settings(max_examples=1500, deadline=None)
@given(st.lists(GRAMMAR_BITS, max_size=12).map("".join))
@example("slow(reason='x', n=-3) and not (fast or x)")
@example("a(if=1)")
@example("a(b=c)")
@example("a(b=1,)")
def test_marker_expressions_are_accepted_exactly_when_pytest_accepts_them(expr):
    if expr.strip(" \t")[:1] in ("-", "@"):  # refused on purpose: pytest would read an option
        assert not ours_accept(expr)
        return
    assert ours_accept(expr) == pytest_accepts(expr), expr


@settings(max_examples=500, deadline=None)
@given(st.lists(GRAMMAR_BITS, max_size=12).map("".join))
def test_keyword_expressions_are_a_subset_of_pytests_without_arguments(expr):
    if ours_accept(expr, markers=False):
        assert pytest_accepts(expr) and "=" not in expr


def test_expression_errors_say_where():
    with pytest.raises(ValueError, match=r"unexpected character ';' \(column 5\)"):
        check_expression("slow; rm -rf /", markers=True)
    with pytest.raises(ValueError, match=r"write \(-x\) instead"):
        check_expression("-x", markers=False)
    assert check_expression("(-x)", markers=False) == "(-x)"


def test_resolve_inside_follows_symlinks_before_deciding(tmp_path):
    root = tmp_path / "root"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_a.py").write_text("")
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "tests" / "out").symlink_to(outside)
    (root / "tests" / "in").symlink_to(root / "tests")
    (root / "loop").symlink_to(root / "loop")
    assert resolve_inside("tests/in/test_a.py", [root], "f") == root / "tests" / "test_a.py"
    for bad, reason in [
        ("tests/out", "outside"),
        ("tests/../../outside", "outside"),
        (str(outside), "outside"),
        ("loop", "cannot be resolved"),
        ("tests/nope.py", "does not exist"),
    ]:
        with pytest.raises(ToolFailure, match=reason) as info:
            resolve_inside(bad, [root], "paths[3]")
        assert info.value.detail.field == "paths[3]"


def test_execute_argv_is_built_only_from_validated_fields(tmp_path):
    (tmp_path / "tests").mkdir()
    params = parse_params(
        "execute_tests",
        {
            "node_ids": ["tests", "tests/test_x.py::C::t[a b]"],
            "markers": " slow and not db ",
            "keywords": "parse",
            "max_failures": 3,
            "failfast": True,
            "last_failed": True,
            "workers": 2,
        },
    )
    interp = Interpreter("/py", has_xdist=True)
    argv = execute_argv(params, interp, Path("/r"))
    assert argv == [
        "/py",
        "-m",
        "pytest",
        "-p",
        "pytest_mcp_server_events",
        "--mcp-records=/r/records.jsonl",
        "--mcp-stacks=/r/stacks.txt",
        "--mcp-failures",
        "--maxfail=3",
        "-x",
        "--mcp-last-failed",
        "-n",
        "2",
        "-m",
        "slow and not db",
        "-k",
        "parse",
        "--",
        "tests",
        "tests/test_x.py::C::t[a b]",
    ]


def test_only_the_newest_runs_are_kept(tmp_path):
    (tmp_path / "proj").mkdir()
    runner = Runner(ServerConfig(root=tmp_path / "proj", artifacts_dir=tmp_path / "art"))
    made = [runner.run_dirs.new() for _ in range(KEEP_RUNS + 5)]
    left = sorted(p for p in runner.run_dirs.runs_dir.iterdir())
    assert left == made[-KEEP_RUNS:]
    assert runner.run_dirs.runs_dir.parent.parent == tmp_path / "art"


def test_tail_keeps_a_bounded_end_of_a_huge_stream():
    tail = Tail(limit=1000)
    chunk = ("é" * 3000 + "\n").encode()
    for _ in range(3000):  # about 18 MB
        tail.feed(chunk)
        assert len(tail.buf) <= 1000
    tail.feed(b"the end\n")
    text = tail.text()
    assert text.startswith("[... ") and text.endswith("é\nthe end\n")
    assert "\ufffd" not in text  # the cut first character was dropped, not garbled


def test_a_childs_output_file_keeps_its_tail_when_emptied_and_counts_every_byte():
    """A child writes into an ``OutputFile`` (no pipe); once the file holds more than its
    cap the tail is kept and the file emptied, and the child's later writes still go to
    its end (it appends): the text is the last bytes, with the count of those not kept."""
    out = OutputFile(cap=1000)
    write = [sys.executable, "-c", "import sys; sys.stdout.write(sys.argv[1] * int(sys.argv[2]))"]
    subprocess.run([*write, "x", "20000"], stdout=out.fd, check=True)
    out.bound()
    assert os.fstat(out.fd).st_size == 0
    subprocess.run([*write, "the end\n", "1"], stdout=out.fd, check=True)
    text = out.text()
    assert TAIL_BYTES < 20000
    assert text == f"[... {20008 - TAIL_BYTES} earlier bytes not kept]\n" + "x" * (TAIL_BYTES - 8) + "the end\n"


# A process that starts a child ignoring SIGTERM and, through a process that exits at
# once, an escapee in a session of its own (it ignores SIGTERM too); each notes its pid.
RUN_WITH_ESCAPEE = r"""
import os, signal, subprocess, sys, time
marks = sys.argv[1]
STUBBORN = "import os, signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); " \
    "open(os.path.join(sys.argv[1], sys.argv[2]), 'w').write(str(os.getpid())); time.sleep(60)"
subprocess.Popen([sys.executable, "-c", STUBBORN, marks, "child"])
leave = "import subprocess, sys; subprocess.Popen(sys.argv[1:], start_new_session=True)"
subprocess.Popen([sys.executable, "-c", leave, sys.executable, "-c", STUBBORN, marks, "escapee"]).wait()
time.sleep(60)
"""


def test_a_run_is_found_and_stopped_with_its_stubborn_child_and_its_escapee(tmp_path):
    """``spawn_group``/``run_members``/``kill_group`` on their own: the run's processes are
    its first one, a child in its group and an escapee that left group and tree (found by
    the run's token in its environment); after ``kill_group`` none runs, the SIGTERM-
    ignoring ones killed after the grace."""
    from helpers.server_support import pid_alive

    async def body() -> tuple[set[int], set[int], list[int]]:
        env = dict(os.environ, **{RUN_MARKER: "run-token-for-this-test"})
        argv = [sys.executable, "-c", RUN_WITH_ESCAPEE, str(tmp_path)]
        proc, group = await spawn_group(
            argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            with anyio.fail_after(30):
                while not ((tmp_path / "child").exists() and (tmp_path / "escapee").exists()):
                    await anyio.sleep(0.05)
                await anyio.sleep(0.1)  # the pid files are written before the sleep
            pids = {int((tmp_path / name).read_text()) for name in ("child", "escapee")}
            found = {member.pid for member in run_members(group)}
            await kill_group(group, grace_s=0.5)
            return found, {proc.pid, *pids}, [pid for pid in pids if pid_alive(pid)]
        finally:
            forget_group(group)
            await proc.aclose()

    found, expected, alive = anyio.run(body)
    assert found == expected
    assert alive == []


def test_config_refuses_artifacts_inside_the_project_and_a_missing_root(tmp_path):
    with pytest.raises(ValueError, match="inside the project"):
        ServerConfig(root=tmp_path, artifacts_dir=tmp_path / "cache")
    with pytest.raises(ValueError, match="not a directory"):
        ServerConfig(root=tmp_path / "nope")


def test_interpreter_order_python_option_then_venvs_then_virtual_env(tmp_path):
    import sys

    root = tmp_path / "proj"
    root.mkdir()
    cfg = ServerConfig(root=root)
    assert find_python(cfg, {}) == Path(sys.executable)
    other = tmp_path / "other-venv"
    (other / "bin").mkdir(parents=True)
    (other / "bin" / "python").symlink_to(sys.executable)
    assert find_python(cfg, {"VIRTUAL_ENV": str(other)}) == other / "bin" / "python"
    for name in ("venv", ".venv"):
        (root / name / "bin").mkdir(parents=True)
        (root / name / "bin" / "python").symlink_to(sys.executable)
        assert find_python(cfg, {"VIRTUAL_ENV": str(other)}) == root / name / "bin" / "python"
    explicit = ServerConfig(root=root, python=other / "bin" / "python")
    assert find_python(explicit, {}) == other / "bin" / "python"


def test_summarize_budgets_grow_with_node_ids():
    plain = parse_params("summarize_report", {"paths": ["r.json"]}).budgets()
    story = parse_params("summarize_report", {"paths": ["r.json"], "node_ids": ["t.py::x"]}).budgets()
    assert plain == Budgets() and story == FULL_STORY
    assert plain.max_traceback_lines == 40 and story.max_traceback_lines == 400
    assert story.max_output_bytes == 32768
    given = parse_params(
        "summarize_report", {"paths": ["r.json"], "node_ids": ["t.py"], "traceback_lines": 9}
    ).budgets()
    assert given.max_traceback_lines == 9


def test_plugin_dir_holds_only_the_plugin():
    # the child's PYTHONPATH gets this directory: nothing but the plugin, its recorder and
    # the module it shares with the server and the warm spare's program (names no project
    # would use) may be importable from it
    names = sorted(p.name for p in PLUGIN_DIR.iterdir() if p.name != "__pycache__")
    assert names == [
        "pytest_mcp_server_events.py",
        "pytest_mcp_server_recorder.py",
        "pytest_mcp_server_shared.py",
        "pytest_mcp_server_spare.py",
    ]
    assert os.path.basename(PLUGIN_DIR) == "pytest_plugin"


def test_rotation_never_removes_a_run_in_progress(tmp_path):
    (tmp_path / "proj").mkdir()
    runner = Runner(ServerConfig(root=tmp_path / "proj", artifacts_dir=tmp_path / "art"))
    running = runner.run_dirs.new()
    (running / RUNNING_MARKER).touch()
    finished = runner.run_dirs.new()
    for _ in range(KEEP_RUNS + 3):
        runner.run_dirs.new()
    assert running.exists() and not finished.exists()


def test_the_last_report_is_the_newest_finished_run_with_a_record_file(tmp_path):
    """``summarize_report`` without paths reads this: a run still in progress (its
    marker present) or one that wrote no record file is passed over."""
    (tmp_path / "proj").mkdir()
    runner = Runner(ServerConfig(root=tmp_path / "proj", artifacts_dir=tmp_path / "art"))
    assert runner.run_dirs.last_report() is None
    finished = runner.run_dirs.new()
    (finished / RECORDS_FILE).write_text("{}\n")
    runner.run_dirs.new()  # failed before pytest wrote anything
    running = runner.run_dirs.new()
    (running / RECORDS_FILE).write_text("{}\n")
    (running / RUNNING_MARKER).touch()
    assert runner.run_dirs.last_report() == finished / RECORDS_FILE
    running.joinpath(RUNNING_MARKER).unlink()
    assert runner.run_dirs.last_report() == running / RECORDS_FILE


def test_execute_budgets_default_to_the_execute_preset():
    # the defaults published in tools/list and those applied must be the same preset
    assert parse_params("execute_tests", {}).budgets() == EXECUTE_BUDGETS
    schema = TOOLS_BY_NAME["execute_tests"].params.model_json_schema()["properties"]
    assert schema["traceback_lines"]["default"] == EXECUTE_BUDGETS.max_traceback_lines


def test_argument_errors_name_the_field_and_the_value_given():
    with pytest.raises(ToolFailure) as info:
        parse_params("summarize_report", {"paths": ["r.json"], "traceback_lines": 2})
    assert info.value.detail.field == "traceback_lines"
    assert "greater than or equal to 3 (got 2)" in str(info.value)
    with pytest.raises(ToolFailure, match="unknown argument; discover_tests takes node_ids, markers") as info:
        parse_params("discover_tests", {"args": ["-p", "evil"]})
    assert info.value.detail.field == "args"


def test_artifacts_default_to_the_user_cache_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if os.name == "posix" and os.uname().sysname == "Linux":
        assert default_artifacts_base() == tmp_path / "pytest-mcp-server"
    (tmp_path / "proj").mkdir()
    assert ServerConfig(root=tmp_path / "proj").artifacts_base == default_artifacts_base()


def test_summarize_with_node_ids_covers_only_the_selected_tests(tmp_path):
    # One engine pass with a selection: the drill-down answer describes the requested tests
    # (their groups counted over them alone), while counts stay the whole report's.
    root = tmp_path / "proj"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "many_failures", root)
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml=report.xml"],
        cwd=root,
        capture_output=True,
        check=False,
    )
    runner = Runner(ServerConfig(root=root, artifacts_dir=tmp_path / "art"))
    wanted = ["tests/test_many.py::test_cases[1]", "tests/test_many.py::test_cases[4]", "tests/nope.py"]
    params = parse_params("summarize_report", {"paths": ["report.xml"], "node_ids": wanted})
    result = anyio.run(summarize_report, runner, params)
    assert [f.node_id for f in result.summary.failures] == wanted[:2]
    assert [(g.exception, g.count) for g in result.summary.groups] == [("KeyError", 2)]
    assert result.not_failing == result.summary.unmatched == ["tests/nope.py"]
    assert result.summary.counts.failed == 256 and result.summary.omitted.failures == 0
    whole = anyio.run(summarize_report, runner, parse_params("summarize_report", {"paths": ["report.xml"]}))
    assert whole.not_failing == [] and sum(g.count for g in whole.summary.groups) == 256
