"""Line coverage through the real server over real stdio: ``execute_tests`` with
``coverage`` on a project made here in a real git repository (a branch and a function
no test runs, committed; then a change that adds a function no test calls), and
``summarize_report`` on the ``coverage json`` and ``coverage xml`` reports of that run.
Without the server: the combining of several pytest processes' data (real pytest-cov
runs) and the Cobertura reader's refusals (real files).

What an agent relies on: the missed lines and the changed lines not run are exact (the
changed-and-not-run line is the headline), the project's ``.coveragerc`` decides what
is measured (``omit``) and what is not code (``exclude_lines``), no coverage data lands
in the project, pytest-xdist workers are measured too, both report formats give the
same figures, an interpreter without coverage.py or pytest-cov gets a tool error
naming what to install, a project's strict coverage configuration (a sys.monitoring
core, every warning an error) never breaks a green suite on 3.11 or 3.12, and a call in
which no test ran claims no changed lines not run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import coverage
import pytest
from helpers.interpreters import link_distribution, python_with
from helpers.server_support import committed_project, connect, git, run, text_of
from helpers.server_support import typed_stdio_server as server

from pytest_mcp_server.domain.coverage_answer import CoverageSummary
from pytest_mcp_server.domain.failures import ToolFailureDetail
from pytest_mcp_server.domain.tools import ExecuteResult, SummarizeResult
from pytest_mcp_server.engine.coverage_reports import read_coverage_reports
from pytest_mcp_server.engine.models import ReportError
from pytest_mcp_server.run.coverage_run import COVERAGE_ARGV, coverage_env, finish_coverage
from pytest_mcp_server.run.git import changed_lines
from pytest_mcp_server.run.interpreter import probe_interpreter

CALC = """\
def classify(n):
    if n < 0:
        return "negative"
    return "non-negative"


def never_called():
    return 42


def debug_only():
    return "debug"
"""
ADDED = """

def added_later(x):
    doubled = x * 2
    return doubled
"""
TEST = """\
from pkg.calc import classify


def test_non_negative():
    assert classify(3) == "non-negative"
"""
COVERAGERC = """\
[run]
omit = tests/*

[report]
exclude_lines =
    def debug_only
"""


def make_project(tmp_path: Path) -> Path:
    """The project, committed, then changed: ``added_later`` appended to pkg/calc.py
    (lines 13-17), line 4 edited (a line that runs), pkg/extra.py untracked."""
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "calc.py").write_text(CALC)
    (root / "tests" / "test_calc.py").write_text(TEST)
    (root / ".coveragerc").write_text(COVERAGERC)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    calc = root / "pkg" / "calc.py"
    calc.write_text(CALC.replace('return "non-negative"', 'return "non-negative"  # edited') + ADDED)
    (root / "pkg" / "extra.py").write_text("VALUE = 1\n")
    return root


def test_missed_and_changed_lines_are_exact_and_both_report_formats_agree(tmp_path):
    root = make_project(tmp_path)

    async def body():
        async with connect(server(root, tmp_path / "artifacts"), "auto") as client:
            measured = await client.call_tool("execute_tests", {"coverage": True})
            with_workers = await client.call_tool("execute_tests", {"coverage": True, "workers": 2})
            result = ExecuteResult.model_validate(measured.structured_content)
            data = result.coverage.data_path.replace("{run_dir}", os.path.dirname(result.report_path))
            for kind in ("json", "xml"):
                subprocess.run(
                    [sys.executable, "-m", "coverage", kind, f"--data-file={data}", "-o", f"cov.{kind}"],
                    cwd=root,
                    check=True,
                    capture_output=True,
                )
            from_json = await client.call_tool("summarize_report", {"paths": ["cov.json"]})
            from_xml = await client.call_tool("summarize_report", {"paths": ["cov.xml"]})
            return measured, with_workers, from_json, from_xml

    measured, with_workers, from_json, from_xml = run(body)
    assert not measured.is_error, text_of(measured)
    result = ExecuteResult.model_validate(measured.structured_content)
    assert result.status == "passed" and "--cov" in result.command
    coverage = result.coverage
    assert coverage is not None
    # tests/ omitted by .coveragerc; debug_only (11-12) excluded, so not missed although it never ran;
    # executable: 1-4, 7-8, 15-17; missed: the negative branch, never_called, added_later's body
    assert [(f.path, f.percent, f.missing) for f in coverage.files] == [("pkg/calc.py", 55.56, "3, 8, 16-17")]
    assert (coverage.percent, coverage.statements, coverage.missed, coverage.files_measured) == (55.56, 9, 4, 2)
    # line 4 changed but ran; 13-14 are blank; 15 (the def) ran at import
    assert [(c.path, c.lines) for c in coverage.changed_not_run] == [("pkg/calc.py", "16-17")]
    assert coverage.changed_not_measured == ["pkg/extra.py"]  # never imported
    assert coverage.data_path == "{run_dir}/coverage.data"

    text = text_of(measured)
    lines = text.splitlines()
    assert lines[0].startswith("PASSED 1 passed in ")
    assert lines[1:3] == ["changed lines not run: pkg/calc.py 16-17", "changed files not measured: pkg/extra.py"]
    assert "Coverage: 55.56% of 9 lines ran (4 missed, 2 files)" in lines
    assert "  pkg/calc.py 55.56%: 3, 8, 16-17" in lines

    # the data stays in the artifacts: no .coverage file in the project
    assert sorted(p.name for p in root.iterdir() if p.name.startswith(".coverage")) == [".coveragerc"]

    # xdist workers are measured and combined by pytest-cov: the same figures
    assert not with_workers.is_error, text_of(with_workers)
    assert ExecuteResult.model_validate(with_workers.structured_content).coverage == coverage.model_copy(
        update={"data_path": ExecuteResult.model_validate(with_workers.structured_content).coverage.data_path}
    )

    # coverage json and coverage xml of the same data: the same figures, no git part
    for answer in (from_json, from_xml):
        assert not answer.is_error, text_of(answer)
        summarized = SummarizeResult.model_validate(answer.structured_content)
        assert summarized.summary is None
        assert summarized.coverage == coverage.model_copy(
            update={"changed_not_run": None, "changed_not_measured": None, "data_path": None}
        )
        assert text_of(answer) == (
            "COVERAGE 55.56% of 9 lines ran (4 missed, 2 files)\n  pkg/calc.py 55.56%: 3, 8, 16-17\n"
        )


def test_the_data_files_of_several_pytest_processes_of_a_call_are_combined(tmp_path):
    """A call that runs pytest more than once (``repeat``) gives each process its own data
    file and answers with their union, as ``coverage combine`` does: a line ran when any
    process ran it. Two processes here, each running one of two tests that take the two
    sides of ``classify``'s branch."""
    root = make_project(tmp_path)
    (root / "tests" / "test_negative.py").write_text(
        "from pkg.calc import classify\n\n\ndef test_negative():\n    assert classify(-1) == 'negative'\n"
    )
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    interp = run(partial(probe_interpreter, sys.executable, cwd=root, env=dict(os.environ)))
    for number, test in enumerate(["tests/test_calc.py", "tests/test_negative.py"], 1):
        env = {k: v for k, v in os.environ.items() if k != "COVERAGE_FILE"} | coverage_env(run_dir, interp, number)
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *COVERAGE_ARGV, test]
        subprocess.run(argv, cwd=root, env=env, check=True, capture_output=True)
    assert sorted(p.name for p in (run_dir / "coverage").iterdir()) == ["run-1", "run-2"]

    changed = run(changed_lines, root)
    coverage = run(finish_coverage, sys.executable, root, dict(os.environ), run_dir, (), changed)

    # line 3 ran only in the second process, line 4 only in the first: neither is missed
    assert [(f.path, f.missing) for f in coverage.files] == [("pkg/calc.py", "8, 16-17")]
    assert (coverage.statements, coverage.missed) == (9, 3)
    assert [(c.path, c.lines) for c in coverage.changed_not_run] == [("pkg/calc.py", "16-17")]
    # the new test module is omitted by .coveragerc: a test file is not named as not measured
    assert coverage.changed_not_measured == ["pkg/extra.py"]
    assert sorted(p.name for p in root.iterdir() if p.name.startswith(".coverage")) == [".coveragerc"]


def test_repeat_with_coverage_finds_the_flaky_test_and_combines_every_runs_data(tmp_path):
    """``repeat`` and ``coverage`` together over the real server: a test that takes one
    side of ``classify``'s branch in run 1 and the other (and fails) in run 2 is flaky
    (``PF``), and the coverage is of both runs: neither side of the branch is missed,
    although each run alone missed one of them."""
    root = make_project(tmp_path)
    (root / "tests" / "test_calc.py").write_text(
        "from pathlib import Path\n\nfrom pkg.calc import classify\n\n"
        "COUNTER = Path(__file__).with_name('runs.txt')\n\n\n"
        "def test_alternates():\n"
        "    n = int(COUNTER.read_text()) if COUNTER.exists() else 0\n"
        "    COUNTER.write_text(str(n + 1))\n"
        "    assert classify(-1 if n % 2 else 3) == 'non-negative'\n"
    )

    async def body():
        async with connect(server(root, tmp_path / "artifacts"), "auto") as client:
            return await client.call_tool("execute_tests", {"coverage": True, "repeat": 2})

    answer = run(body)
    assert not answer.is_error, text_of(answer)
    result = ExecuteResult.model_validate(answer.structured_content)
    assert result.runs == 2
    assert [(f.node_id, f.pattern) for f in result.flaky] == [("tests/test_calc.py::test_alternates", "PF")]
    assert result.coverage is not None
    assert [(f.path, f.missing) for f in result.coverage.files] == [("pkg/calc.py", "8, 16-17")]
    assert [(c.path, c.lines) for c in result.coverage.changed_not_run] == [("pkg/calc.py", "16-17")]
    assert "changed lines not run: pkg/calc.py 16-17" in text_of(answer)


STRICT_PYPROJECT = """\
[tool.coverage.run]
core = "sysmon"
disable_warnings = ["no-sysmon"]
{more}
[tool.pytest.ini_options]
filterwarnings = ["error"]
"""
STRICT_VARIANTS = {
    # humanize 4.17.0's own: on 3.12 sysmon gives a line to the first test that runs it
    # only, and coverage.py's warning about it errors every test through filterwarnings
    "humanize": "",
    # a coverage.py warning while pytest-cov starts it (--include is ignored with --source)
    "coverage.py warns at start-up": 'source = ["pkg"]\ninclude = ["pkg/*"]\n',
    # a pytest-cov warning while it starts (CentralCovContextWarning)
    "pytest-cov warns at start-up": 'dynamic_context = "test_function"\n',
}
DOUBLE = "def double(n):\n    return n * 2\n"
DOUBLE_TESTS = """\
from pkg.calc import double


def test_double_one():
    assert double(1) == 2


def test_double_two():
    assert double(2) == 4
"""


@pytest.mark.parametrize("version", ["3.11", "3.12"])
def test_a_strict_coverage_configuration_never_breaks_a_green_suite(tmp_path, request, version):
    """``coverage: true`` on a green suite whose project turns every warning into an error
    (``filterwarnings = ["error"]``) and asks coverage.py for its sys.monitoring core
    (humanize 4.17.0's ``pyproject.toml``), on the server's Python 3.11 and on a 3.12
    project interpreter (where ``core = "sysmon"`` is real): every test passes, with a
    coverage percent, whether coverage.py or pytest-cov warns while starting, and each
    test's context holds the lines it ran (both tests ran ``double``'s body: sysmon would
    give it to the first only). Before, 3.12 answered every test errored, and on both a
    start-up warning stopped pytest before any test."""
    python = request.getfixturevalue("python312") if version == "3.12" else Path(sys.executable)
    files = {
        "pkg/__init__.py": "",
        "pkg/calc.py": DOUBLE,
        "tests/test_calc.py": DOUBLE_TESTS,
        "pyproject.toml": STRICT_PYPROJECT.format(more=""),
    }
    root = committed_project(tmp_path / "proj", files)

    async def body():
        answers = {}
        async with connect(server(root, tmp_path / "artifacts", "--python", str(python)), "auto") as client:
            for name, more in STRICT_VARIANTS.items():
                (root / "pyproject.toml").write_text(STRICT_PYPROJECT.format(more=more))
                answers[name] = await client.call_tool("execute_tests", {"coverage": True})
        return answers

    answers = run(body)
    for name, answer in answers.items():
        assert not answer.is_error, (name, text_of(answer))
        result = ExecuteResult.model_validate(answer.structured_content)
        assert result.command[0] == str(python)
        assert (result.status, result.summary.counts.passed, result.summary.counts.total) == ("passed", 2, 2), (
            name,
            text_of(answer),
        )
        assert result.coverage is not None and result.coverage.percent is not None, (name, result.coverage)
        assert text_of(answer).startswith("PASSED 2 passed in "), (name, text_of(answer))

    result = ExecuteResult.model_validate(answers["humanize"].structured_content)
    assert result.coverage.percent == 100.0
    data = coverage.CoverageData(result.coverage.data_path.replace("{run_dir}", os.path.dirname(result.report_path)))
    data.read()
    (calc,) = [f for f in data.measured_files() if f.endswith(os.path.join("pkg", "calc.py"))]
    assert sorted(data.contexts_by_lineno(calc)[2]) == [
        "tests/test_calc.py::test_double_one|run",
        "tests/test_calc.py::test_double_two|run",
    ]


def test_a_call_in_which_no_test_ran_claims_no_changed_lines_not_run(tmp_path):
    """With nothing run, "not run" says nothing of the change: a measured call whose
    ``keywords`` match no test (all deselected, pytest's exit 5), once and repeated, in a
    work tree with changed lines no test runs, keeps the coverage percent of what ran at
    collection but says neither ``changed lines not run`` nor ``every changed line ran``
    (``changed_not_run`` null). Before, it named the changed lines as if the tests had
    left them unrun."""
    root = make_project(tmp_path)

    async def body():
        async with connect(server(root, tmp_path / "artifacts"), "auto") as client:
            once = await client.call_tool("execute_tests", {"coverage": True, "keywords": "no_such_test"})
            repeated = await client.call_tool(
                "execute_tests", {"coverage": True, "keywords": "no_such_test", "repeat": 2}
            )
            return once, repeated

    for answer in run(body):
        assert not answer.is_error, text_of(answer)
        result = ExecuteResult.model_validate(answer.structured_content)
        assert result.summary.counts.total == 0 and result.deselected == 1, text_of(answer)
        measured = result.coverage
        assert measured is not None and measured.percent is not None, measured
        assert measured.changed_not_run is None
        assert answer.structured_content["coverage"]["changed_not_run"] is None
        assert measured.changed_not_measured == ["pkg/extra.py"]  # files, not lines: still true
        text = text_of(answer)
        assert "changed lines not run" not in text and "every changed line ran" not in text, text
        assert "Coverage: " in text, text


def test_an_interpreter_without_coverage_gets_a_tool_error_naming_what_to_install(tmp_path):
    root = make_project(tmp_path)
    python = python_with(tmp_path, "pytest")
    site = next(python.parent.parent.glob("lib/python*/site-packages"))

    async def body():
        async with connect(server(root, tmp_path / "artifacts", "--python", str(python)), "auto") as client:
            neither = await client.call_tool("execute_tests", {"coverage": True})
            plain = await client.call_tool("execute_tests", {})
            link_distribution("coverage", site)  # coverage.py, still no pytest-cov
            no_plugin = await client.call_tool("execute_tests", {"coverage": True})
            return neither, plain, no_plugin

    neither, plain, no_plugin = run(body)
    assert neither.is_error
    detail = ToolFailureDetail.model_validate(neither.structured_content)
    assert detail.kind == "coverage_missing"
    assert f"{python}, which lacks coverage and pytest-cov" in detail.message
    assert f"{python} -m pip install coverage pytest-cov" in detail.message
    assert text_of(neither).startswith("ERROR coverage_missing: coverage needs coverage.py and pytest-cov")
    assert not plain.is_error, text_of(plain)  # without coverage the same interpreter runs the tests
    assert ExecuteResult.model_validate(plain.structured_content).coverage is None
    # the server asks again after a failed check: installing needs no restart
    detail = ToolFailureDetail.model_validate(no_plugin.structured_content)
    assert detail.kind == "coverage_missing" and "which lacks pytest-cov;" in detail.message


def test_cobertura_with_a_dtd_subset_is_refused_and_a_clover_report_is_not_cobertura(tmp_path):
    entity = tmp_path / "entity.xml"
    entity.write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE coverage [<!ENTITY x "y">]>\n'
        '<coverage line-rate="1"><packages><package><classes><class filename="a.py"><lines>'
        '<line number="1" hits="1"/></lines></class></classes></package></packages></coverage>\n'
    )
    external = tmp_path / "external.xml"  # Java Cobertura's own header: allowed, never fetched
    external.write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE coverage SYSTEM "http://cobertura.sourceforge.net/xml/coverage-04.dtd">\n'
        '<coverage line-rate="0.5"><packages><package><classes><class filename="a.py"><methods><method><lines>'
        '<line number="1" hits="1"/></lines></method></methods><lines>'
        '<line number="1" hits="1"/><line number="2" hits="0"/></lines></class></classes></package></packages>'
        "</coverage>\n"
    )
    try:
        read_coverage_reports([str(entity)], ["cobertura"])
    except ReportError as exc:
        assert exc.kind == "forbidden" and "DTD internal subset" in exc.message
    else:
        raise AssertionError("a DTD internal subset was read")
    lines = read_coverage_reports([str(external)], ["cobertura"])
    assert list(lines.files()) == [("a.py", 2, [2])]  # the method's copy of line 1 is not counted twice
    clover = tmp_path / "clover.xml"  # Clover's root is <coverage> too, without Cobertura's line-rate
    clover.write_text('<coverage generated="1" clover="4"><project><file name="a.py"/></project></coverage>\n')
    try:
        read_coverage_reports([str(clover)], ["cobertura"])
    except ReportError as exc:
        assert exc.kind == "not_a_report" and "not a Cobertura report" in exc.message
    else:
        raise AssertionError("a Clover report was read as Cobertura")


def test_summarize_report_refuses_a_coverage_report_mixed_with_a_test_report(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "cov.json").write_text(
        '{"meta": {"format": 3}, "files": {"a.py": {"executed_lines": [1], "missing_lines": [2]}}}'
    )
    (root / "junit.xml").write_text('<testsuite tests="1"><testcase classname="t" name="a"/></testsuite>')

    async def body():
        async with connect(server(root, tmp_path / "artifacts"), "auto") as client:
            mixed = await client.call_tool("summarize_report", {"paths": ["cov.json", "junit.xml"]})
            alone = await client.call_tool("summarize_report", {"paths": ["cov.json"]})
            return mixed, alone

    mixed, alone = run(body)
    detail = ToolFailureDetail.model_validate(mixed.structured_content)
    assert detail.kind == "report_error" and detail.report_error_kind == "mixed_formats"
    assert detail.field == "paths[1]"
    coverage = CoverageSummary.model_validate(alone.structured_content["coverage"])
    assert (coverage.percent, coverage.files[0].missing) == (50.0, "2")
