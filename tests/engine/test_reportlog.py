"""The pytest report-log readers (native ``reportlog.rs``, pure ``pure/reportlog.py``;
docs/ENGINE.md, *pytest report-log*).

Real pytest runs of the fixture project ``fixtures/reportlog/project`` (every outcome,
subtests of both flavours, a collection error, chained exceptions, wide arguments,
locals, an exception group) write, in one run, pytest-reportlog's ``--report-log``, the
server plugin's dialect (``fixtures/reportlog/dialect_plugin.py``) and pytest-json-report.
The report log must answer as pytest-json-report does (the reader builds the same test
entries), plus the subtests that pytest-json-report cannot show; its rendering of a
structured ``longrepr`` must be pytest's own ``report.longreprtext``, byte for byte.
Everywhere the native and pure summaries must be the same bytes (or the same error
kind); ``test_reportlog_parity.py`` adds generated record files.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.backends import kind_in_both, needs_native, result_in_both, summary_in_both

from pytest_mcp_server.engine import summarize_bytes
from pytest_mcp_server.engine.models import ReportError, RunReport
from pytest_mcp_server.engine.pure import sniff
from pytest_mcp_server.engine.pure.cut import _cut_lines, is_chain_line
from pytest_mcp_server.engine.pure.cut import _frames as text_frames
from pytest_mcp_server.engine.pure.cut import _is_separator_line as is_separator
from pytest_mcp_server.engine.pure.project import ProjectCode as PureProjectCode
from pytest_mcp_server.engine.pure.reportlog import _longrepr

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "reportlog"
PROJECT = HERE / "project"


def run_pytest(tmp_path: Path, *args: str) -> tuple[Path, str]:
    """Copy the fixture project into ``tmp_path`` and run pytest there; returns (project
    directory, pytest's last output line)."""
    project = tmp_path / "project"
    if not project.exists():
        shutil.copytree(PROJECT, project)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "dialect_plugin", *args, "tests"],
        cwd=project,
        env={**_env(), "PYTHONPATH": str(HERE)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = proc.stdout.strip().splitlines()
    assert lines, proc.stderr
    return project, lines[-1]


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_ADDOPTS", "COLUMNS"))}


@pytest.fixture(scope="module")
def three_reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, str]:
    """One real run writing the report log, the dialect and pytest-json-report."""
    tmp = tmp_path_factory.mktemp("reportlog")
    project, last = run_pytest(
        tmp,
        "--continue-on-collection-errors",
        f"--report-log={tmp / 'run.jsonl'}",
        f"--dialect-log={tmp / 'dialect.jsonl'}",
        "--json-report",
        f"--json-report-file={tmp / 'run.json'}",
    )
    return tmp / "run.jsonl", tmp / "dialect.jsonl", tmp / "run.json", last


def summary(path: Path, fmt: str = "auto") -> dict:
    """The summary both backends give (the same bytes)."""
    return summary_in_both(path, fmt)


def _pytest_counts(line: str) -> dict[str, int]:
    return {word: int(n) for n, word in re.findall(r"(\d+) (failed|passed|skipped|xfailed|xpassed|errors?)", line)} | {
        "subtests passed": int(m.group(1)) if (m := re.search(r"(\d+) subtests passed", line)) else 0
    }


@pytest.mark.parametrize("which", ["reportlog", "dialect"])
def test_report_log_answers_as_pytest_json_report_plus_subtests(three_reports, which):
    reportlog, dialect, json_report, last = three_reports
    path = reportlog if which == "reportlog" else dialect
    got, want = summary(path), summary(json_report)
    assert got["format"] == "reportlog" and want["format"] == "pytest-json"
    # pytest-json-report has no subtest data: apart from the subtest fields the counts agree
    subtest_keys = ("subtests_passed", "subtests_failed", "passed_with_failed_subtests")
    assert {k: v for k, v in got["counts"].items() if k not in subtest_keys} == {
        k: v for k, v in want["counts"].items() if k not in subtest_keys
    }
    # ...and pytest's own summary line reconciles with them (docs/ENGINE.md, *Subtests*)
    # (pytest counts reports: test_teardown_error, whose call failed and teardown
    # errored, is one "failed" and one "error" there; the summary counts it an error)
    c, line = got["counts"], _pytest_counts(last)
    assert line["failed"] == c["failed"] + c["subtests_failed"] - c["passed_with_failed_subtests"] + 1
    assert line["errors"] == c["errors"]
    assert line["passed"] == c["passed"] + c["passed_with_failed_subtests"]
    assert line["subtests passed"] == c["subtests_passed"] == 3
    assert (c["subtests_failed"], c["passed_with_failed_subtests"]) == (3, 1)
    # every failure of a test without subtests is the same, byte for byte
    by_id = {f["node_id"]: f for f in want["failures"]}
    subtest_parents = {f["node_id"] for f in got["failures"] if f["subtest"] is not None}
    compared = 0
    for failure in got["failures"]:
        if failure["node_id"] in subtest_parents:
            continue
        expected = by_id[failure["node_id"]]
        location = failure["location"]
        if which == "reportlog" and location is not None:
            # pytest-reportlog writes no root: a crash path stays absolute
            location["path"] = location["path"].removeprefix(f"{path.parent / 'project'}/")
        assert failure == expected
        compared += 1
    assert compared >= 9
    assert got["collection_errors"] == want["collection_errors"] != []
    assert got["slowest"] == want["slowest"] or which == "dialect"  # the dialect drops passing setups


def test_subtests_are_listed_with_pytest_labels(three_reports):
    reportlog, dialect, _, _ = three_reports
    for path in (reportlog, dialect):
        s = summary(path)
        listed = [(f["node_id"].split("::", 1)[1], f["subtest"], f["message"]) for f in s["failures"]]
        assert ("test_subtests", "[check] (i=1)", "assert 1 < 1") in listed
        assert ("test_subtests", "[check] (i=2)", "assert 2 < 1") in listed
        assert ("TestUnit::test_sub", "(i=1)", "1 != 0") in listed
        # the unittest parent pytest counts passed is listed failed, in pytest's wording
        assert ("TestUnit::test_sub", None, "contains 1 failed subtest") in listed
        # the fixture flavour's parent fails on its own, as pytest says
        assert ("test_subtests", None, "contains 2 failed subtests") in listed


@pytest.mark.parametrize("tb", ["long", "short", "native", "line"])
def test_rendered_longrepr_is_pytests_longreprtext_and_its_frames_are_the_texts(tmp_path, tb):
    """The dialect plugin writes pytest's ``report.longreprtext`` next to each serialised
    report: the reader's rendering of the serialised form must be those exact bytes (so
    the traceback cutting and location rules see what pytest-json-report gives them).
    The frames it reads from the entries themselves (docs/ENGINE.md, *Frames as data*)
    are the frame lines a reader of that text finds, each on its line, with the text's
    separator and chain lines, so the cut gives the same lines from either; a chained
    failure's root ends at the text's first chain line; a native-style entry gives its
    frames only as text."""
    _, last = run_pytest(tmp_path, f"--tb={tb}", "-l", "--continue-on-collection-errors", "--dialect-log=d.jsonl")
    assert "failed" in last
    project_code = PureProjectCode(str(tmp_path / "project"), ("pkg",))
    compared = with_frames = chained = 0
    for line in (tmp_path / "project" / "d.jsonl").read_text().splitlines():
        data = json.loads(line)
        longrepr = data.get("longrepr")
        if not isinstance(longrepr, dict):
            continue
        text, _, frames = _longrepr(longrepr, stripped=data["$report_type"] != "CollectReport")
        assert text == data["longreprtext"], data["nodeid"]
        compared += 1
        tracebacks = [element[0] for element in longrepr.get("chain") or [[longrepr["reprtraceback"]]]]
        native = any(e["type"] == "ReprEntryNative" for tb_ in tracebacks for e in tb_["reprentries"])
        assert (frames is None) == native, data["nodeid"]
        if frames is None:
            continue
        with_frames += 1
        pairs = [(f.path, f.line) for f in frames.frames]
        assert pairs == list(text_frames(text)), data["nodeid"]
        lines = text.split("\n")
        assert all(text_frames(lines[f.at]) for f in frames.frames), data["nodeid"]  # each on its line
        # the separator and chain lines are the text's
        assert [(at, chain) for at, chain in frames.boundaries] == [
            (i, is_chain_line(line)) for i, line in enumerate(lines) if is_chain_line(line) or is_separator(line)
        ], data["nodeid"]
        # the cut reads the same frames from the data as from the text, whatever the budgets
        for max_lines, context_lines, project in [
            (40, 3, None),
            (12, 0, None),
            (8, 3, project_code),
            (5, 0, project_code),
        ]:
            from_data = _cut_lines(text, max_lines, 200, project, context_lines, frames)
            assert from_data == _cut_lines(text, max_lines, 200, project, context_lines), data["nodeid"]
        first_chain = next((i for i, line in enumerate(lines) if is_chain_line(line)), None)
        if first_chain is None:
            assert frames.root is None, data["nodeid"]
            continue
        chained += 1
        assert frames.root is not None
        n, at = frames.root
        assert at == len("\n".join(lines[:first_chain])) + 1
        assert pairs[:n] == list(text_frames(text[:at])), data["nodeid"]
    assert compared >= 12
    assert with_frames >= (0 if tb == "native" else compared - 1)  # an exception group is native
    assert chained >= (0 if tb in ("native", "line") else 1)


def test_sniffing_picks_the_report_log(tmp_path):
    assert sniff("x", b'{"pytest_version": "9.2.0", "$report_type": "SessionStart"}\n{"a": 1}') == "reportlog"
    assert sniff("x", b'\xef\xbb\xbf  {"$report_type": "TestReport"}') == "reportlog"
    # the key on a later line only: a JSON document, pytest-json-report's format
    assert sniff("x", b'{"created": 1}\n{"$report_type": "TestReport"}') == "pytest-json"
    # a first line longer than the 4 KiB read
    assert sniff("x", b'{"x": "' + b"a" * 5000) == "pytest-json"


def test_killed_run_summarises_the_complete_lines_and_says_the_last_was_cut(three_reports, tmp_path):
    _, dialect, _, _ = three_reports
    lines = dialect.read_bytes().splitlines(keepends=True)
    # cut in the middle of the first failed call report: the run was killed while writing it
    cut_at = next(i for i, line in enumerate(lines) if b'"when": "call"' in line and b'"outcome": "failed"' in line)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(lines[:cut_at]) + lines[cut_at][: len(lines[cut_at]) // 2])
    s = RunReport.model_validate(summary(cut))
    assert s.truncated == [str(cut)]
    assert 1 <= s.counts.total < summary(dialect)["counts"]["total"]
    # the same file with its last line complete is not cut
    complete = tmp_path / "complete.jsonl"
    complete.write_bytes(b"".join(lines[:cut_at]))
    assert summary(complete)["truncated"] == []


def test_a_test_without_teardown_is_emitted_at_the_end(tmp_path):
    log = tmp_path / "killed.jsonl"
    log.write_text(
        '{"$report_type": "SessionStart", "pytest_version": "9.2.0", "root": "/r", "start": 1.0}\n'
        '{"$report_type": "TestReport", "nodeid": "t.py::a", "when": "call", "outcome": "failed",'
        ' "duration": 0.5, "longrepr": "E   boom", "sections": []}\n'
        '{"$report_type": "TestStart", "nodeid": "t.py::b", "start": 2.0}\n'
        '{"$report_type": "TestReport", "nodeid": "t.py::b", "when": "setup", "outcome": "passed", "duration": 0.1}\n'
    )
    s = summary(log)
    assert s["counts"]["total"] == 1 and s["counts"]["failed"] == 1
    assert s["failures"][0]["message"] == "boom"
    assert s["truncated"] == []


START = '{"$report_type": "SessionStart"}\n'


def report(**fields: object) -> str:
    """One TestReport line (a call of test ``a`` unless ``fields`` say otherwise)."""
    return (
        json.dumps({"$report_type": "TestReport", "nodeid": "a", "when": "call", "outcome": "passed", **fields}) + "\n"
    )


@pytest.mark.parametrize(
    ("content", "where"),
    [
        (START + "not json\n", "line 2"),
        (START + "[1, 2]\n", "line 2"),
        (START + "\n" + report(nodeid=3), "line 3"),
        (START + report(when="lunch"), "line 2"),
        (START + report(outcome="great"), "line 2"),
        (START + report(duration="1.5"), "line 2"),
        (START + report(sections=[["Captured stdout call"]]), "line 2"),
        ('{"$report_type": 7}\n', "line 1"),
        (START + report(outcome="failed", longrepr={"reprcrash": None, "reprtraceback": {"reprentries": 5}}), "line 2"),
        (START + report(outcome="failed", longrepr={"reprcrash": {"path": "p"}, "reprtraceback": {}}), "line 2"),
        (START + "[" * 200 + "]" * 200 + "\n", "line 2"),
        # the dialect's counts of what the plugin cut: integers from 0 to 2^53
        (START + report(text_bytes_cut=-1), "line 2"),
        (START + report(text_bytes_cut=2**53 + 1), "line 2"),
        (START + report(text_bytes_cut=1.0), "line 2"),
        (START + report(sections_bytes_cut=[["Captured stdout call", 5]]), "line 2"),
        (START + report(sections_bytes_cut={"Captured stdout call": "5"}), "line 2"),
        (START + report(outcome="failed", text_bytes_cut=True), "line 2"),
        (START + report(**{"$report_type": "SubTestReport", "outcome": "failed", "text_bytes_cut": -3}), "line 2"),
        (
            START
            + json.dumps(
                {"$report_type": "CollectReport", "nodeid": "t.py", "outcome": "failed", "text_bytes_cut": "9"}
            )
            + "\n",
            "line 2",
        ),
    ],
)
def test_bad_lines_are_malformed_naming_the_line(tmp_path, content, where):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    assert kind_in_both(path) == "malformed"
    for backend in ("native", "pure"):
        with pytest.raises(ReportError) as info:
            summarize_bytes(path, backend=backend)  # type: ignore[arg-type]
        assert info.value.position == where
        assert where in str(info.value)


def test_what_the_plugin_cut_of_a_report_is_counted_as_omitted(tmp_path):
    # the server's plugin cuts a report too large to write whole and says how much it cut
    # (docs/ENGINE.md, *pytest report-log*): the bytes are the failure's, added to what
    # the engine's own caps drop, in both backends
    crash = {"path": "/r/t.py", "lineno": 3, "message": "ValueError: big[... 900 bytes cut by pytest-mcp-server ...]"}
    entry = {"type": "ReprEntry", "data": {"lines": ["E   ValueError: big"], "style": "long"}}
    longrepr = {"reprcrash": crash, "reprtraceback": {"reprentries": [entry]}}
    output = "o" * 5000  # the engine keeps 2,048 bytes of it (its default budget)
    lines = [
        '{"$report_type": "SessionStart", "root": "/r"}',
        json.dumps(
            {
                "$report_type": "TestReport",
                "nodeid": "t.py::a",
                "when": "call",
                "outcome": "failed",
                "longrepr": longrepr,
                "sections": [["Captured stdout call", output], ["Captured stderr call", "e"]],
                "text_bytes_cut": 1800,
                "sections_bytes_cut": {"Captured stdout call": 7000, "Captured stderr teardown": 11},
            }
        ),
        # the teardown report carries the call's section again: the first one is taken, once
        json.dumps(
            {
                "$report_type": "TestReport",
                "nodeid": "t.py::a",
                "when": "teardown",
                "outcome": "passed",
                "sections": [["Captured stdout call", output]],
                "sections_bytes_cut": {"Captured stdout call": 7000},
            }
        ),
        json.dumps(
            {
                "$report_type": "SubTestReport",
                "nodeid": "t.py::b",
                "outcome": "failed",
                "longrepr": longrepr,
                "text_bytes_cut": 40,
            }
        ),
        json.dumps({"$report_type": "TestReport", "nodeid": "t.py::b", "when": "teardown", "outcome": "passed"}),
        json.dumps(
            {
                "$report_type": "CollectReport",
                "nodeid": "u.py",
                "outcome": "failed",
                "longrepr": "E   x",
                "text_bytes_cut": 5,
            }
        ),
        # a passing report's count says nothing the answer shows
        json.dumps(
            {
                "$report_type": "TestReport",
                "nodeid": "t.py::c",
                "when": "teardown",
                "outcome": "passed",
                "text_bytes_cut": 3,
            }
        ),
    ]
    path = tmp_path / "cut.jsonl"
    path.write_text("\n".join(lines) + "\n")
    s = RunReport.model_validate(summary_in_both(path))
    failures = {(f.node_id, f.subtest): f for f in s.failures}
    test = failures[("t.py::a", None)]
    assert test.text_bytes_omitted == 1800
    assert test.output_bytes_omitted == (5000 - 2048) + 7000  # stderr's 11 were of a section not taken
    assert test.stdout == "o" * 2048
    assert failures[("t.py::b", "")].text_bytes_omitted == 40
    assert s.collection_errors[0].text_bytes_omitted == 5
    assert s.omitted.text_bytes == 1800 + 40 + 5
    assert s.omitted.output_bytes == (5000 - 2048) + 7000


def test_json_lines_without_report_type_are_not_a_report(tmp_path):
    path = tmp_path / "other.jsonl"
    path.write_text('{"Action": "run", "$report_type": "x"}\n{"Action": "pass"}\n')
    # the first line has the key: a report log (unknown types are ignored)
    assert summary(path)["counts"]["total"] == 0
    path.write_text('{"Action": "run"}\n{"Action": "pass"}\n')
    # sniffed as pytest-json: not the report log asked for
    assert kind_in_both(path, fmt="reportlog") == "not_a_report"
    # the key on the first line only as a value: the reader finds no $report_type
    path.write_text('{"Action": "\\"$report_type\\""}\n{"Action": "pass"}\n')
    assert kind_in_both(path, fmt="reportlog") == "not_a_report"


def test_auto_backend_reads_report_logs(three_reports):
    """``auto`` answers for a report log as the chosen backend does, whether the format
    is sniffed or named."""
    reportlog, _, _, _ = three_reports
    pure = summarize_bytes(reportlog, backend="pure")
    assert summarize_bytes(reportlog, backend="auto") == pure
    assert summarize_bytes(reportlog, backend="auto", format="reportlog") == pure


@needs_native
@pytest.mark.parametrize("name", ["run.reportlog.jsonl", "run.dialect.jsonl", "short.dialect.jsonl"])
def test_committed_fixtures_give_identical_bytes(name, tmp_path):
    """The files ``fixtures/reportlog/generate.py`` wrote with real pytest, whole and cut
    at every line and in the middle of lines: the same bytes (or error kind) in both."""
    data = (HERE / name).read_bytes()
    s = summary(HERE / name)
    assert s["counts"]["failed"] >= 10 and s["counts"]["subtests_failed"] == 3
    cut = tmp_path / name
    step = max(len(data) // 97, 1)
    for end in range(0, len(data), step):
        cut.write_bytes(data[:end])
        result_in_both(cut)
    for budgets in ({"max_output_bytes": 3, "max_log_bytes": 5}, {"failures_listed": 1, "max_traceback_lines": 3}):
        result_in_both(HERE / name, budgets)


def test_cli_summarize_reads_a_report_log(three_reports):
    reportlog = three_reports[0]
    for fmt in ("auto", "reportlog"):
        proc = subprocess.run(
            [sys.executable, "-m", "pytest_mcp_server", "summarize", "--format", fmt, "--json", str(reportlog)],
            capture_output=True,
            timeout=120,
        )
        assert proc.returncode == 1, proc.stderr  # some tests failed
        assert json.loads(proc.stdout)["format"] == "reportlog"


def _us(seconds: float) -> int:
    """docs/ENGINE.md *Durations*, written again: seconds -> integer microseconds."""
    return int(seconds * 1e6 + 0.5) if 0 <= seconds < 1e9 else 0


def test_duration_is_pytests_session_time_and_the_tests_sum_is_apart(three_reports, tmp_path):
    reportlog, dialect, json_report, _ = three_reports
    dialect_lines = [json.loads(line) for line in dialect.read_text().splitlines()]
    finish = dialect_lines[-1]
    assert finish["$report_type"] == "SessionFinish"
    s = summary(dialect)
    assert s["duration_s"] == _us(finish["duration"]) / 1e6
    # the lean lines keep each report's duration: the tests' sum is theirs
    tests_us = 0
    for line in dialect_lines:
        if line["$report_type"] == "TestReport":
            tests_us += _us(line["duration"])
    assert s["tests_duration_s"] == tests_us / 1e6
    # pytest-reportlog writes no session duration: last report stop - first report start
    reports = [json.loads(line) for line in reportlog.read_text().splitlines()]
    timed = [r for r in reports if "start" in r and r["$report_type"] in ("TestReport", "SubTestReport")]
    assert summary(reportlog)["duration_s"] == _us(timed[-1]["stop"] - timed[0]["start"]) / 1e6
    # pytest-json-report: its top-level duration
    assert summary(json_report)["duration_s"] == _us(json.loads(json_report.read_text())["duration"]) / 1e6
    # shards add up
    both = summary_in_both([dialect, dialect])
    assert both["duration_s"] == 2 * _us(finish["duration"]) / 1e6
    assert both["tests_duration_s"] == 2 * tests_us / 1e6

    # a log without any session time counts its tests' sum
    def untimed(line: dict) -> str:
        dropped = ("start", "stop") if line["$report_type"] == "TestReport" else ("start", "stop", "duration")
        return json.dumps({k: v for k, v in line.items() if k not in dropped}) + "\n"

    no_times = tmp_path / "no_times.jsonl"
    # (TestStart lines go: their start is what names the running test, required)
    no_times.write_text("".join(untimed(line) for line in dialect_lines if line["$report_type"] != "TestStart"))
    s = summary(no_times)
    assert s["duration_s"] == s["tests_duration_s"] == tests_us / 1e6


def test_xdist_run_with_interleaved_tests_answers_as_pytest_json_report(tmp_path):
    """With pytest-xdist the workers' reports interleave in the log: each test is still
    assembled from its own lines (held until its teardown)."""
    _, last = run_pytest(
        tmp_path,
        "-n",
        "2",
        "--continue-on-collection-errors",
        f"--report-log={tmp_path / 'x.jsonl'}",
        "--json-report",
        f"--json-report-file={tmp_path / 'x.json'}",
    )
    assert "failed" in last
    got, want = summary(tmp_path / "x.jsonl"), summary(tmp_path / "x.json")
    subtest_keys = ("subtests_passed", "subtests_failed", "passed_with_failed_subtests")
    assert {k: v for k, v in got["counts"].items() if k not in subtest_keys} == {
        k: v for k, v in want["counts"].items() if k not in subtest_keys
    }
    assert got["counts"]["subtests_failed"] == 3
    assert {f["node_id"] for f in got["failures"]} == {f["node_id"] for f in want["failures"]}


def test_a_doctest_failure_in_a_plain_report_log_names_its_file_relative_to_the_run(tmp_path):
    """pytest writes a doctest's location line with the absolute path
    (``/tmp/.../pkg/mod.py:3: DocTestFailure``) and pytest-reportlog keeps it; both
    readers read it as pytest writes traceback paths, relative to the run's directory,
    so the failure and its group are located at ``pkg/mod.py:3`` as in the server's runs."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text(
        'def double(x):\n    """\n    >>> double(2)\n    5\n    """\n    return 2 * x\n'
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--doctest-modules", "--report-log=run.jsonl"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "1 failed" in proc.stdout, proc.stdout + proc.stderr
    written = (tmp_path / "run.jsonl").read_text()
    assert f"{tmp_path}/pkg/mod.py:3: DocTestFailure" in written.replace("\\\\", "\\")  # what pytest wrote
    answer = summary(tmp_path / "run.jsonl")
    (failure,) = answer["failures"]
    assert failure["location"] == {"path": "pkg/mod.py", "line": 3}
    assert answer["groups"][0]["location"] == {"path": "pkg/mod.py", "line": 3}
    assert f"{tmp_path}/pkg" not in json.dumps(answer)
