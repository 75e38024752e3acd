"""The record plugin's file, written by a real pytest child: pytest-reportlog's format in
the server's dialect, the same with orjson and without it, and nothing lost that the
JUnit XML, pytest-json-report and the old event files carried.

Every run below is a real ``python -m pytest`` process with the plugin loaded as the
server loads it (``-p pytest_mcp_server_events --mcp-records=FILE``). The main project
has that many passing tests (``ORJSON_AFTER_RECORDS``: past it the plugin encodes with
orjson), then every outcome, a teardown error, subtests, captured output and log
records, warnings, non-ASCII test names and an exception message with a lone surrogate
(which orjson refuses); it runs once with orjson and once where orjson cannot be
imported. The files must decode to the same records, in the order and shape the
dialect promises (docs/SERVER.md, *The record file*), and the server's readers
(``events``) must find in them what the old files told.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from pytest_mcp_server.domain.policy import EVERY_OUTCOME
from pytest_mcp_server.engine import read_report, summarize
from pytest_mcp_server.engine.models import Budgets, CollectedIds, CollectedPage, ProjectCode, RunReport
from pytest_mcp_server.run.events import (
    PLUGIN_DIR,
    PLUGIN_NAME,
    EventFollower,
    stack_dump_armed,
)
from pytest_mcp_server.run.pytest_plugin.pytest_mcp_server_events import (
    COLLECTED_CHUNK_BYTES,
    ORJSON_AFTER_RECORDS,
    REPORT_CAP,
    REPORT_DEPTH,
    REPORT_ITEMS,
    TEXT_CAP,
)

PROJECT = """
import logging
import warnings

import pytest


@pytest.mark.parametrize("i", range(BULK))
def test_bulk(i):
    pass


@pytest.fixture
def leaky():
    yield
    raise RuntimeError("left a file behind")


def test_passes():
    print("fine")
    logging.getLogger("app").warning("nothing to see")


def test_fails():
    print("captured")
    logging.getLogger("app").warning("the log line of a failure")
    raise ValueError("lone \\udce9 surrogate")


def test_teardown_errors(leaky):
    pass


def test_skipped():
    pytest.skip("not here")


@pytest.mark.xfail(reason="known")
def test_xfails():
    raise ValueError("known bug")


@pytest.mark.xfail(reason="fixed?")
def test_xpasses():
    pass


def test_café():
    warnings.warn(UserWarning("deprecated: café"))


def test_naïve():
    warnings.warn(UserWarning("deprecated: naïve"))


def test_subtests(subtests):
    for i in range(3):
        with subtests.test(msg="step", i=i):
            assert i != 1


def test_deselected_by_k():
    pass
"""
NAMED = [
    "test_passes",
    "test_fails",
    "test_teardown_errors",
    "test_skipped",
    "test_xfails",
    "test_xpasses",
    "test_café",
    "test_naïve",
    "test_subtests",
]
LEAN_KEYS = ["$report_type", "nodeid", "when", "outcome", "duration"]


def plugin_env(out: Path, *, orjson: bool = True) -> dict[str, str]:
    """The child's environment: the plugin's directory on PYTHONPATH (and, without orjson,
    a module in front of it that refuses to import)."""
    paths = [str(PLUGIN_DIR)]
    if not orjson:
        blocker = out / "blocker"
        blocker.mkdir(parents=True, exist_ok=True)
        (blocker / "orjson.py").write_text("raise ImportError('orjson is blocked by the test')\n")
        paths.insert(0, str(blocker))
    return dict(os.environ, PYTHONPATH=os.pathsep.join(paths), PYTHONDONTWRITEBYTECODE="1")


def run_plugin(
    project: Path, records: Path, *args: str, orjson: bool = True, stacks: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run pytest in ``project`` with the plugin writing ``records`` (and arming its stack dump into ``stacks``)."""
    records.parent.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pytest", "-p", PLUGIN_NAME, f"--mcp-records={records}", "-p", "no:cacheprovider"]
    if stacks is not None:
        argv.append(f"--mcp-stacks={stacks}")
    env = plugin_env(records.parent, orjson=orjson)
    return subprocess.run(
        [*argv, *args], cwd=project, env=env, capture_output=True, text=True, errors="replace", timeout=300
    )


def lines_of(records: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in records.read_text(encoding="utf-8").splitlines()]


def comparable(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lines with what differs from run to run made constant: times, durations, object addresses."""
    text = json.dumps(lines)
    text = re.sub(r" at 0x[0-9a-f]+", " at 0x?", text)
    out = json.loads(text)
    for line in out:
        for key in ("start", "stop", "duration"):
            if key in line:
                line[key] = 0
    return out


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("project")
    source = textwrap.dedent(PROJECT).replace("BULK", str(ORJSON_AFTER_RECORDS))
    (root / "test_project.py").write_text(source, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def both_runs(project: Path) -> dict[bool, tuple[Path, subprocess.CompletedProcess[str]]]:
    """The project run with orjson and without, ``-k`` deselecting one test."""
    runs = {}
    for with_orjson in (True, False):
        records = project / f"out-{with_orjson}" / "records.jsonl"
        proc = run_plugin(project, records, "-q", "-k", "not deselected_by_k", orjson=with_orjson)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        runs[with_orjson] = (records, proc)
    return runs


def test_records_are_the_same_with_and_without_orjson(both_runs):
    """The fast encoder and the fallback give the same data: the readers cannot tell them apart."""
    pytest.importorskip("orjson")  # else both runs used the fallback and the comparison says nothing
    with_orjson, without = (lines_of(both_runs[w][0]) for w in (True, False))
    assert comparable(with_orjson) == comparable(without)
    # the complete reports after the first ORJSON_AFTER_RECORDS tests are orjson's: UTF-8, not \u escapes
    text = {w: run[0].read_text(encoding="utf-8") for w, run in both_runs.items()}
    assert '"nodeid":"test_project.py::test_fails"' in text[True]
    assert "naïve" in text[True] and "naïve" not in text[False] and "na\\u00efve" in text[False]


@pytest.mark.parametrize("with_orjson", [True, False], ids=["orjson", "stdlib-json"])
def test_the_file_is_a_session_of_started_and_finished_tests_in_order(both_runs, project, with_orjson):
    """SessionStart first, SessionFinish last; per test its TestStart, then its reports in
    order (setup only when it did not pass, call, subtests, teardown), lean when passed."""
    records, proc = both_runs[with_orjson]
    lines = lines_of(records)
    assert lines[0]["$report_type"] == "SessionStart"
    assert lines[0]["root"] == str(project) and lines[0]["pytest_version"] == pytest.__version__
    assert isinstance(lines[0]["start"], float) and "stack_dump_armed" not in lines[0]
    assert lines[-1]["$report_type"] == "SessionFinish" and lines[-1]["exitstatus"] == 1
    total = ORJSON_AFTER_RECORDS + len(NAMED)
    assert [line for line in lines if line["$report_type"] == "CollectionFinish"] == [
        {"$report_type": "CollectionFinish", "collected": total}
    ]
    assert [line for line in lines if line["$report_type"] == "Deselected"] == [
        {"$report_type": "Deselected", "count": 1}
    ]
    tests: list[tuple[str, list[dict[str, Any]]]] = []
    for line in lines[1:-1]:
        kind = line["$report_type"]
        if kind == "TestStart":
            tests.append((line["nodeid"], []))
        elif kind in ("TestReport", "SubTestReport"):
            assert line["nodeid"] == tests[-1][0]  # a test's reports come before the next test starts
            tests[-1][1].append(line)
    assert len(tests) == total
    for node_id, reports in tests:
        whens = [r["when"] for r in reports]
        assert whens[-1] == "teardown" and whens.count("teardown") == 1, (node_id, whens)
        assert whens[: whens.index("call")] == ([] if reports[0]["when"] == "call" else ["setup"])
        for report in reports:
            if report["outcome"] == "passed" and "wasxfail" not in report:
                lean = [*LEAN_KEYS, "_subtest.context"] if report["$report_type"] == "SubTestReport" else LEAN_KEYS
                assert list(report) == lean, report
            else:  # complete: pytest's serialisation
                assert list(report)[:4] == ["$report_type", "nodeid", "when", "outcome"]
                assert {"location", "keywords", "longrepr", "sections", "duration"} <= set(report), report
    subtests = dict(tests)["test_project.py::test_subtests"]
    assert [(r["$report_type"], r["when"], r["outcome"]) for r in subtests] == [
        ("SubTestReport", "call", "passed"),
        ("SubTestReport", "call", "failed"),
        ("SubTestReport", "call", "passed"),
        ("TestReport", "call", "failed"),  # as pytest counted it: "contains 1 failed subtest"
        ("TestReport", "teardown", "passed"),
    ]
    assert subtests[3]["longrepr"] == "contains 1 failed subtest"
    assert [r["_subtest.context"] for r in subtests[:3]] == [{"msg": "step", "kwargs": {"i": str(i)}} for i in range(3)]
    # the session's time is the one pytest's last line gives ("... in 1.52s", rounded; the
    # plugin reads pytest's clock a few statements before pytest does)
    said = float(re.search(r" in ([0-9.]+)s", proc.stdout.strip().splitlines()[-1])[1])
    assert said - 0.011 <= lines[-1]["duration"] <= said + 0.005, (lines[-1], proc.stdout[-200:])


@pytest.mark.parametrize("with_orjson", [True, False], ids=["orjson", "stdlib-json"])
def test_a_failure_keeps_its_crash_output_and_log_records(both_runs, with_orjson):
    """What the JUnit XML (``junit_logging=all``) and pytest-json-report carried of a
    failure: its crash, traceback, captured output and log records; a passed test's are
    left out. A lone surrogate (which strict JSON readers refuse as an escape) is
    written as its text ``\\udce9``."""
    lines = lines_of(both_runs[with_orjson][0])
    by_test = {(line["nodeid"].split("::")[-1], line["when"]): line for line in lines if "when" in line}
    fails = by_test[("test_fails", "call")]
    assert fails["outcome"] == "failed"
    assert fails["longrepr"]["reprcrash"]["message"] == "ValueError: lone \\udce9 surrogate"
    assert fails["longrepr"]["reprcrash"]["lineno"] > 0
    sections = dict(map(tuple, fails["sections"]))
    assert sections["Captured stdout call"] == "captured\n"
    assert "the log line of a failure" in sections["Captured log call"]
    assert by_test[("test_passes", "call")] == {
        "$report_type": "TestReport",
        "nodeid": "test_project.py::test_passes",
        "when": "call",
        "outcome": "passed",
        "duration": by_test[("test_passes", "call")]["duration"],
    }
    assert by_test[("test_teardown_errors", "teardown")]["outcome"] == "failed"
    assert by_test[("test_xfails", "call")]["wasxfail"] == "known"
    assert by_test[("test_xpasses", "call")]["wasxfail"] == "fixed?"
    assert by_test[("test_skipped", "call")]["longrepr"][2] == "Skipped: not here"


def read_both(records: Path, root: Path, collected_page: CollectedPage | None = None) -> RunReport:
    """The engine's one reading of a record file (every test's outcome asked for, and
    the ``collected_page`` of its collected node ids when given), the same from both
    backends."""
    budgets = Budgets(max_outcomes=EVERY_OUTCOME)
    project = ProjectCode(root=str(root))
    native, pure = (
        read_report([str(records)], backend=backend, budgets=budgets, project=project, collected_page=collected_page)
        for backend in ("native", "pure")
    )
    assert native == pure
    return native


@pytest.mark.parametrize("with_orjson", [True, False], ids=["orjson", "stdlib-json"])
def test_the_engine_reads_outcomes_warnings_and_counts_in_one_pass(both_runs, project, with_orjson):
    """The engine's reading of a record file gives each test the outcome pytest-json-report
    gave it, nothing running, the warnings with their non-ASCII messages, the deselected
    and collected counts and pytest's exit status and session time; the follower counts
    every finished test."""
    records, _ = both_runs[with_orjson]
    read = read_both(records, project)
    outcomes = read.outcomes or {}
    assert len(outcomes) == ORJSON_AFTER_RECORDS + len(NAMED)
    assert {k.split("::", 1)[1]: v for k, v in outcomes.items() if "test_bulk" not in k} == {
        "test_passes": "passed",
        "test_fails": "failed",
        "test_teardown_errors": "error",
        "test_skipped": "skipped",
        "test_xfails": "xfailed",
        "test_xpasses": "xpassed",
        "test_café": "passed",
        "test_naïve": "passed",
        "test_subtests": "failed",
    }
    session = read.session
    assert session is not None and session.running == [] and session.deselected == 1 and read.collection_errors == []
    assert session.collected == read.counts.total == ORJSON_AFTER_RECORDS + len(NAMED)
    assert session.exit_status == 1 and read.duration_s == pytest.approx(lines_of(records)[-1]["duration"], abs=1e-6)
    assert session.warnings.total == 2
    assert sorted(g.message for g in session.warnings.groups) == ["deprecated: café", "deprecated: naïve"]
    source = (project / "test_project.py").read_text(encoding="utf-8").splitlines()
    warned = [f"test_project.py:{n}" for n, text in enumerate(source, 1) if "warnings.warn(" in text]
    assert sorted(g.locations[0] for g in session.warnings.groups) == warned
    warning_lines = [line for line in lines_of(records) if line["$report_type"] == "WarningMessage"]
    assert [w["nodeid"] for w in warning_lines] == ["test_project.py::test_café", "test_project.py::test_naïve"]
    assert {w["category"] for w in warning_lines} == {"UserWarning"} and {w["when"] for w in warning_lines} == {
        "runtest"
    }
    follower = EventFollower(records)
    follower.poll()
    assert (follower.done, follower.total) == (read.counts.total, session.collected)
    # failing: the tests with a failed report in any phase, each counted once
    failing = {r["nodeid"] for r in lines_of(records) if r["$report_type"] == "TestReport" and r["outcome"] == "failed"}
    assert {node_id.split("::", 1)[1] for node_id in failing} == {"test_fails", "test_teardown_errors", "test_subtests"}
    assert follower.failing == len(failing)


def test_a_progress_report_cancelled_while_sending_is_sent_again_after_the_run(both_runs):
    """The follower is cancelled when pytest exits, possibly while it sends the count
    that already includes the last test: that count never reached the client, so the
    report made after the run must send it, not take it as sent."""
    records, _ = both_runs[True]
    follower = EventFollower(records)
    sent: list[tuple[int, int | None]] = []

    async def cut_off(done: int, total: int | None, failing: int) -> None:
        await anyio.sleep(60)  # the send that pytest's exit cancels

    async def deliver(done: int, total: int | None, failing: int) -> None:
        sent.append((done, total))

    async def body() -> None:
        with anyio.move_on_after(0.05):
            await follower.report(cut_off)
        await follower.report(deliver)
        await follower.report(deliver)  # nothing new since: nothing sent

    anyio.run(body)
    finished = ORJSON_AFTER_RECORDS + len(NAMED)
    assert sent == [(finished, finished)]


COLLECTION_PROJECT = {
    "test_ok.py": "import pytest\n\n\n@pytest.mark.parametrize('i', range(2500))\ndef test_many(i):\n    pass\n",
    "test_broken.py": "import not_a_module_anywhere\n",
    "test_skipped_module.py": "import pytest\n\npytest.skip('not on this machine', allow_module_level=True)\n",
}


@pytest.fixture(scope="module")
def collection_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("collection")
    for name, source in COLLECTION_PROJECT.items():
        (root / name).write_text(source)
    return root


def test_collect_only_writes_the_node_ids_in_chunks_and_the_collection_errors(collection_project, tmp_path):
    """discover_tests' stream: the collected node ids in ``CollectedIds`` lines of about
    ``COLLECTED_CHUNK_BYTES``, the collection error complete (with its traceback) and the
    module-level skip; the engine's one reading of the file gives a page of the ids (the
    last two, after the ids of earlier lines) with the collection error."""
    records = tmp_path / "records.jsonl"
    proc = run_plugin(collection_project, records, "--collect-only", "-qq")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = lines_of(records)
    kinds = [line["$report_type"] for line in lines]
    assert kinds[0] == "SessionStart" and kinds[-1] == "SessionFinish" and lines[-1]["exitstatus"] == 2
    chunks = [line["nodeids"] for line in lines if line["$report_type"] == "CollectedIds"]
    raw = [line for line in records.read_bytes().splitlines() if b'"CollectedIds"' in line]
    assert len(chunks) >= 2 and all(len(line) <= COLLECTED_CHUNK_BYTES + 200 for line in raw)
    assert [n for chunk in chunks for n in chunk] == [f"test_ok.py::test_many[{i}]" for i in range(2500)]
    collect = {line["nodeid"]: line for line in lines if line["$report_type"] == "CollectReport"}
    assert set(collect) == {"test_broken.py", "test_skipped_module.py"}  # a passed collector is not written
    assert collect["test_broken.py"]["outcome"] == "failed"
    assert "not_a_module_anywhere" in collect["test_broken.py"]["longrepr"]
    assert collect["test_skipped_module.py"]["outcome"] == "skipped"
    read = read_both(records, collection_project, CollectedPage(offset=2498, limit=10, max_files=500))
    assert read.session is not None
    assert read.session.collected_ids == CollectedIds(
        total=2500,
        files={"test_ok.py": 2500},
        files_omitted=0,
        page=["test_ok.py::test_many[2498]", "test_ok.py::test_many[2499]"],
    )
    assert len(read.collection_errors) == 1


def test_a_killed_pytest_leaves_every_finished_test_and_the_running_one(tmp_path):
    """What a crash or a timeout leaves: each finished test's complete lines, and the
    TestStart of the test that was running (read as ``running``); no SessionFinish. The
    report engine summarises the complete lines (a write cut by the kill is left out and
    named in ``truncated``)."""
    (tmp_path / "test_dies.py").write_text(
        "import os, signal\n\n\ndef test_a():\n    pass\n\n\ndef test_b():\n    assert 1 == 2\n\n\n"
        "def test_dies():\n    os.kill(os.getpid(), signal.SIGKILL)\n\n\ndef test_never():\n    pass\n"
    )
    records = tmp_path / "out" / "records.jsonl"
    stacks = tmp_path / "out" / "stacks.txt"
    proc = run_plugin(tmp_path, records, "-q", stacks=stacks)
    assert proc.returncode == -signal.SIGKILL, proc.stdout + proc.stderr
    assert stack_dump_armed(records)
    lines = lines_of(records)
    assert lines[-1] == {"$report_type": "TestStart", "nodeid": "test_dies.py::test_dies", "start": lines[-1]["start"]}
    read = read_both(records, tmp_path)
    assert read.outcomes == {"test_dies.py::test_a": "passed", "test_dies.py::test_b": "failed"}
    assert read.session is not None and [t.node_id for t in read.session.running] == ["test_dies.py::test_dies"]
    assert read.counts.total == 2 and read.session.exit_status is None and read.session.stack_dump_armed
    with open(records, "ab") as f:
        f.write(b'{"$report_type":"TestReport","nodeid":"test_dies.py::test_never","wh')  # a cut write
    for backend in ("native", "pure"):
        summary = summarize([str(records)], backend=backend)
        assert (summary.counts.total, summary.counts.failed) == (2, 1)
        assert [f.node_id for f in summary.failures] == ["test_dies.py::test_b"]
        assert summary.truncated == [str(records)]


def test_with_xdist_the_controller_writes_every_test_and_the_workers_arm_their_dumps(project, tmp_path):
    """Under pytest-xdist the tests run in workers; the controller writes one stream with
    each test's reports together (reports of tests on different workers interleave on
    their way), and each worker arms its own stack dump (``<stacks>.<pid>``). (Not
    test_fails: execnet cannot send its lone surrogate, and xdist stops.)"""
    pytest.importorskip("xdist")
    records = tmp_path / "records.jsonl"
    stacks = tmp_path / "stacks.txt"
    proc = run_plugin(
        project, records, "-q", "-n", "2", "-k", "test_teardown_errors or test_subtests or test_bulk", stacks=stacks
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = lines_of(records)
    assert lines[0]["stack_dump_armed"] is True and lines[-1]["exitstatus"] == 1
    assert [line["collected"] for line in lines if line["$report_type"] == "CollectionFinish"] == [
        ORJSON_AFTER_RECORDS + 2
    ]
    finished = [line for line in lines if line.get("when") == "teardown"]
    assert len(finished) == len({line["nodeid"] for line in finished}) == ORJSON_AFTER_RECORDS + 2
    read = read_both(records, project)
    outcomes = read.outcomes or {}
    assert outcomes["test_project.py::test_teardown_errors"] == "error"
    assert outcomes["test_project.py::test_subtests"] == "failed"
    assert read.session is not None and read.session.running == []
    subtests = [line for line in lines if line["$report_type"] == "SubTestReport"]
    assert [line["outcome"] for line in subtests] == ["passed", "failed", "passed"]
    assert len(list(tmp_path.glob("stacks.txt.*"))) == 2


@pytest.mark.parametrize("backend", ["native", "pure"])
def test_the_report_engine_reads_the_file_of_each_encoder(both_runs, backend):
    """Both report engines read what either encoder wrote (orjson's UTF-8 lines, json's
    ASCII ones, the lone surrogate written as text), with the counts pytest printed."""
    for records, proc in both_runs.values():
        summary = summarize([str(records)], backend=backend)
        counts = summary.counts
        assert summary.format == "reportlog" and counts.total == ORJSON_AFTER_RECORDS + len(NAMED)
        assert (counts.failed, counts.errors, counts.skipped, counts.xfailed, counts.xpassed) == (2, 1, 1, 1, 1)
        assert (counts.subtests_passed, counts.subtests_failed) == (2, 1)
        assert "3 failed" in proc.stdout.splitlines()[-1]  # pytest's own count: test_subtests among them
        assert any(f.message == "lone \\udce9 surrogate" for f in summary.failures)


CUT_PROJECT = """
BIG = 2_000_000


def test_small():
    assert 1 == 2


def test_big_message():
    raise ValueError("m" * BIG)


def test_many_lines():
    raise ValueError("\\n".join(f"line {i}" for i in range(200_000)))


def test_loud():
    print("o" * BIG)
    assert False


def test_deep_property(record_property):
    value = "leaf"
    for _ in range(200):
        value = [value]
    record_property("deep", value)
    assert False


class Unprintable:
    def __str__(self):
        raise RuntimeError("no str")


def test_unprintable_property(record_property):
    record_property("obj", Unprintable())
    assert False
"""
CUT_MARKER = re.compile(r"\[\.\.\. ([0-9]+) bytes cut by pytest-mcp-server \.\.\.\]")


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []


def _depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


@pytest.mark.parametrize("with_orjson", [True, False], ids=["orjson", "stdlib-json"])
def test_a_report_too_large_to_write_whole_is_cut_and_says_how_much(tmp_path, with_orjson):
    """A failure whose report pytest renders huge (a message of 2 MB, one of 200,000
    lines, 2 MB of output) writes at most ``REPORT_CAP`` bytes, about, with the bytes cut
    on it (``text_bytes_cut``, ``sections_bytes_cut``), which the engine counts as
    omitted; a user property nested 200 deep (deeper than the engine reads) or whose
    ``str()`` raises is bounded too, and the run ends as pytest's own does. A small
    failure is written whole, without counts."""
    (tmp_path / "test_cut.py").write_text(CUT_PROJECT)
    records = tmp_path / "out" / "records.jsonl"
    proc = run_plugin(tmp_path, records, "-q", orjson=with_orjson)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "6 failed" in proc.stdout.splitlines()[-1]
    raw = records.read_bytes().splitlines()
    assert max(len(line) for line in raw) <= REPORT_CAP * 1.05
    assert len(records.read_bytes()) < 6 * REPORT_CAP
    calls = {line["nodeid"].split("::")[1]: line for line in lines_of(records) if line.get("when") == "call"}

    small = calls["test_small"]
    assert "text_bytes_cut" not in small and "sections_bytes_cut" not in small
    assert small["longrepr"]["reprcrash"]["message"] == "assert 1 == 2"

    # each string of 2 MB keeps its first and last 32 K characters; the markers say what
    # each cut, and they add up to the report's count
    big = calls["test_big_message"]
    strings = _strings(big["longrepr"])
    cuts = [int(n) for s in strings for n in CUT_MARKER.findall(s)]
    assert len(cuts) >= 4 and all(n > 2_000_000 - TEXT_CAP for n in cuts)  # crash message and E line, twice
    assert big["text_bytes_cut"] == sum(cuts)
    assert max(len(s) for s in strings) < TEXT_CAP + 100
    assert big["longrepr"]["reprcrash"]["message"].startswith("ValueError: mmm")

    # 200,000 E lines keep their first and last 500
    many = calls["test_many_lines"]
    lines = many["longrepr"]["reprtraceback"]["reprentries"][-1]["data"]["lines"]
    assert len(lines) <= REPORT_ITEMS and lines[-1] == "E       line 199999"
    assert many["text_bytes_cut"] > 0

    # the output keeps its last 64 K characters: the bytes before them are counted
    loud = calls["test_loud"]
    (content,) = [c for name, c in loud["sections"] if name == "Captured stdout call"]
    assert content == "o" * (TEXT_CAP - 1) + "\n"
    assert loud["sections_bytes_cut"] == {"Captured stdout call": 2_000_001 - TEXT_CAP}
    assert "text_bytes_cut" not in loud

    deep = calls["test_deep_property"]
    assert _depth(deep) == REPORT_DEPTH and "text_bytes_cut" not in deep  # the report is the first level
    unprintable = calls["test_unprintable_property"]
    assert unprintable["user_properties"] == [["obj", "<Unprintable object: str() raised RuntimeError>"]]

    read = read_both(records, tmp_path)
    assert read.counts.failed == 6 and read.counts.total == 6
    failures = {f.node_id.split("::")[1]: f for f in read.failures}
    assert failures["test_big_message"].text_bytes_omitted >= big["text_bytes_cut"]
    assert failures["test_many_lines"].text_bytes_omitted >= many["text_bytes_cut"]
    # what the engine keeps of the output tail (its default 2,048 bytes) and what the
    # plugin cut before it: every byte the test printed but those is counted
    assert failures["test_loud"].output_bytes_omitted == 2_000_001 - Budgets().max_output_bytes
