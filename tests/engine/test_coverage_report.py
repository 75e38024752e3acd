"""The coverage reader and the coverage part of an answer, on report files written here
in coverage.py's JSON and Cobertura's XML shapes: which files count as coverage reports,
how several reports merge (a line ran when any report says so), and how the budgets cut
a long answer with every cut counted, so an agent never reads a partial list as whole."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_mcp_server.adapters.text import coverage_lines
from pytest_mcp_server.domain.coverage_answer import summarize_coverage
from pytest_mcp_server.domain.policy import COVERAGE_FILES_LISTED, RANGE_CHARS
from pytest_mcp_server.engine.coverage_reports import LineSets, read_coverage_reports, sniff_coverage


def coverage_json(path: Path, files: dict[str, tuple[list[int], list[int]]], *, pretty: bool = False) -> str:
    """Write a coverage.py JSON report (``files``: path -> (executed, missing)) with the
    parts real reports have around the line lists (summary, contexts, functions)."""
    doc = {
        "meta": {"format": 3, "version": "7.6.0", "branch_coverage": False, "show_contexts": True},
        "files": {
            name: {
                "executed_lines": ran,
                "summary": {"covered_lines": len(ran), "num_statements": len(ran) + len(missed)},
                "missing_lines": missed,
                "excluded_lines": [],
                "contexts": {str(line): ["tests/test_a.py::test_a|run"] for line in ran},
                "functions": {"f": {"executed_lines": [999], "missing_lines": [998]}},
            }
            for name, (ran, missed) in files.items()
        },
        "totals": {"covered_lines": 0},
    }
    path.write_text(json.dumps(doc, indent=4 if pretty else None))
    return str(path)


def test_coverage_reports_are_told_from_test_reports(tmp_path):
    cases = {
        "cov.json": coverage_json(tmp_path / "cov.json", {}, pretty=True),
        "cobertura.xml": '\ufeff<?xml version="1.0" ?>\n<!-- by a tool -->\n<coverage line-rate="1"></coverage>',
        "java.xml": '<?xml version="1.0"?>\n<!DOCTYPE coverage SYSTEM "coverage-04.dtd">\n<coverage line-rate="1"/>',
        "junit.xml": '<?xml version="1.0"?>\n<testsuites><testsuite name="coverage"/></testsuites>',
        "report.json": '{"created": 1, "exitcode": 0, "root": "/p", "summary": {}, "meta": {}}',
    }
    found = {}
    for name, text in cases.items():
        path = tmp_path / name
        if not path.exists():
            path.write_text(text)
        found[name] = sniff_coverage(str(path))
    assert found == {
        "cov.json": "coverage-json",
        "cobertura.xml": "cobertura",
        "java.xml": "cobertura",
        "junit.xml": None,
        "report.json": None,
    }


def test_reports_merge_as_coverage_combines_and_only_the_file_lines_count(tmp_path):
    first = coverage_json(tmp_path / "a.json", {"pkg/a.py": ([1, 2], [3, 4]), "pkg/b.py": ([1], [])})
    second = tmp_path / "b.xml"
    second.write_text(
        '<coverage line-rate="0.5"><packages><package><classes>'
        '<class filename="pkg/a.py"><lines><line number="1" hits="0"/><line number="3" hits="2"/>'
        '<line number="5" hits="0"/></lines></class></classes></package></packages></coverage>'
    )
    lines = read_coverage_reports([first, str(second)], ["coverage-json", "cobertura"])
    # line 3 ran in the second report, line 1 in the first; the functions' 998/999 are not file lines
    assert list(lines.files()) == [("pkg/a.py", 5, [4, 5]), ("pkg/b.py", 1, [])]
    summary = summarize_coverage(lines)
    assert (summary.percent, summary.statements, summary.missed, summary.files_measured) == (66.67, 6, 2, 2)
    assert [(f.path, f.percent, f.missing) for f in summary.files] == [("pkg/a.py", 60.0, "4-5")]


def test_the_budgets_cut_files_and_ranges_and_count_what_they_cut(tmp_path):
    # file i misses i + 100 lines, every other one: more files than listed, ranges longer than RANGE_CHARS
    files = {f"pkg/m{i:02d}.py": ([2], list(range(1, 2 * (i + 100), 2))) for i in range(COVERAGE_FILES_LISTED + 5)}
    path = coverage_json(tmp_path / "big.json", files)
    summary = summarize_coverage(read_coverage_reports([path], ["coverage-json"]))

    # most missed lines first; the 5 files with the fewest are counted, not listed
    assert [f.path for f in summary.files] == [f"pkg/m{i:02d}.py" for i in range(24, 4, -1)]
    assert summary.omitted.files == 5
    for listed in summary.files:
        assert len(listed.missing) <= RANGE_CHARS + len(", …") and listed.missing.endswith(", …")
    shown = sum(len(f.missing.removesuffix(", …").split(", ")) for f in summary.files)
    assert summary.omitted.lines == sum(len(files[f.path][1]) for f in summary.files) - shown

    headline, section = coverage_lines(summary)
    assert headline == []  # no git part for reports
    assert section[-1] == f"  ... 5 more files with missed lines; {summary.omitted.lines} more missed line numbers"


def test_test_files_count_in_the_totals_but_their_missed_lines_are_not_listed():
    """A test file's missed lines are its helpers and skipped branches: they say nothing
    of the code under test, so only the project's source files are listed, while the
    totals stay those coverage.py measured."""
    lines = LineSets()
    for line, hit in ((1, True), (2, False), (3, False)):
        lines.add("/r/pkg/calc.py", line, hit)
    for line in range(1, 9):
        lines.add("/r/tests/test_calc.py", line, line < 3)
    summary = summarize_coverage(lines, root="/r")
    assert [(f.path, f.missing) for f in summary.files] == [("pkg/calc.py", "2-3")]
    assert (summary.statements, summary.missed, summary.files_measured) == (11, 8, 2)
    assert summary.omitted.files == 0
