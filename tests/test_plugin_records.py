"""The event plugin's files, written by a real pytest child, are the same with orjson and without it.

The plugin encodes its per-test records (``--mcp-results``) and warning lines with the
standard library's ``json``, and with orjson once ``ORJSON_AFTER_RECORDS`` tests have
finished, when the project's interpreter has it. Both runs below are real ``python -m
pytest`` processes on one project: that many passing tests, then every outcome, a
teardown error, a subtest failure, warnings, non-ASCII test names and an exception
message with a lone surrogate (which orjson refuses); the second run cannot import
orjson. Their files must decode to the same records, and say what pytest-json-report
would: the test's outcome (the last category that is not a pass) and each stage's outcome.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_mcp_server.run.events import PLUGIN_DIR, PLUGIN_NAME, read_run_events
from pytest_mcp_server.run.pytest_plugin.pytest_mcp_server_events import ORJSON_AFTER_RECORDS

PROJECT = """
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


def test_fails():
    print("captured")
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
    for i in range(2):
        with subtests.test(i=i):
            assert i == 0
"""


Run = tuple[list[dict], list[tuple[str, object]], Path]


def run_plugin(project: Path, out: Path, *, orjson: bool) -> Run:
    """Run pytest on ``project`` with the event plugin writing into ``out``; returns the
    decoded records (durations zeroed, object addresses hidden), the events as (tag,
    decoded rest of the line; a start line without its time) and ``out``."""
    out.mkdir()
    (out / "events.txt").touch()
    paths = [str(PLUGIN_DIR)]
    if not orjson:
        blocker = out / "blocker"
        blocker.mkdir()
        (blocker / "orjson.py").write_text("raise ImportError('orjson is blocked by the test')\n")
        paths.insert(0, str(blocker))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths), PYTHONDONTWRITEBYTECODE="1")
    argv = [sys.executable, "-m", "pytest", "-p", PLUGIN_NAME, f"--mcp-events={out / 'events.txt'}"]
    argv += [f"--mcp-results={out / 'results.jsonl'}", "-p", "no:cacheprovider", "-q", "test_project.py"]
    proc = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, errors="replace", timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    text = (out / "results.jsonl").read_text(encoding="utf-8")
    records = [json.loads(line) for line in re.sub(r" at 0x[0-9a-f]+", " at 0x?", text).splitlines()]  # reprs
    for record in records:
        for when in ("setup", "call", "teardown"):
            if when in record["test"]:
                assert record["test"][when]["duration"] >= 0
                record["test"][when]["duration"] = 0
    events: list[tuple[str, object]] = []
    for line in (out / "events.txt").read_text(encoding="utf-8").splitlines():
        tag, _, rest = line.partition(" ")
        if tag == "s":
            rest = rest.split(" ", 1)[1]  # the start time differs from run to run
        events.append((tag, json.loads(rest) if rest else None))
    return records, events, out


@pytest.fixture(scope="module")
def both_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, Run]:
    project = tmp_path_factory.mktemp("project")
    source = textwrap.dedent(PROJECT).replace("BULK", str(ORJSON_AFTER_RECORDS))
    (project / "test_project.py").write_text(source, encoding="utf-8")
    return {
        with_orjson: run_plugin(project, project / f"out-{with_orjson}", orjson=with_orjson)
        for with_orjson in (True, False)
    }


def test_records_and_events_are_the_same_with_and_without_orjson(both_runs):
    """The fast encoder and the fallback give the same data: the server cannot tell them apart."""
    pytest.importorskip("orjson")  # else both runs used the fallback and the comparison says nothing
    assert both_runs[True][:2] == both_runs[False][:2]
    # orjson wrote the records after the first ORJSON_AFTER_RECORDS (its lines are compact)
    lines = {w: (run[2] / "results.jsonl").read_text(encoding="utf-8").splitlines() for w, run in both_runs.items()}
    assert lines[True][ORJSON_AFTER_RECORDS - 1].startswith('{"test": {"nodeid": ')
    assert lines[True][ORJSON_AFTER_RECORDS].startswith('{"test":{"nodeid":')
    assert all(line.startswith('{"test": {"nodeid": ') for line in lines[False])


@pytest.mark.parametrize("with_orjson", [True, False], ids=["orjson", "stdlib-json"])
def test_each_finished_test_has_its_outcome_and_stages(both_runs, with_orjson):
    """One record per test, with the outcome pytest-json-report would give it; a failure
    keeps its captured output, its crash message (a lone surrogate included) and its longrepr."""
    records, _, _ = both_runs[with_orjson]
    assert len(records) == ORJSON_AFTER_RECORDS + 9
    tests = {r["test"]["nodeid"].split("::", 1)[1]: r["test"] for r in records[ORJSON_AFTER_RECORDS:]}
    assert {name: t["outcome"] for name, t in tests.items()} == {
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
    fails = tests["test_fails"]["call"]
    assert fails["outcome"] == "failed"
    assert fails["stdout"] == "captured\n"
    assert fails["crash"]["message"] == "ValueError: lone \udce9 surrogate"
    assert "raise ValueError" in fails["longrepr"]
    assert fails["crash"]["lineno"] > 0
    assert tests["test_teardown_errors"]["teardown"]["outcome"] == "failed"
    assert tests["test_teardown_errors"]["call"]["outcome"] == "passed"
    # the failed subtest's call stage is not replaced by the passing test's own call report
    assert tests["test_subtests"]["call"]["outcome"] == "failed"


@pytest.mark.parametrize("with_orjson", [True, False], ids=["orjson", "stdlib-json"])
def test_events_name_every_test_and_read_back_as_the_server_reads_them(both_runs, with_orjson, tmp_path):
    """The count comes first, each test has its start and finish line in order, and the
    server's reader of the raw file finds nothing left running and the warnings with their
    non-ASCII messages."""
    records, events, out = both_runs[with_orjson]
    assert events[0] == ("c", ORJSON_AFTER_RECORDS + 9)
    assert [e for e in events if e[0] in "st"] == [(tag, r["test"]["nodeid"]) for r in records for tag in ("s", "t")]
    read = read_run_events(out / "events.txt", tmp_path)
    assert read.running == {}
    assert read.warnings.total == 2
    assert sorted(g.message for g in read.warnings.groups) == ["deprecated: café", "deprecated: naïve"]
