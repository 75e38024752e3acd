"""Helpers of the mutation-replay benchmark (benches/affected.py): sampling, reading, figures.

The pytest summaries read here come from a real pytest run of a small project (one
passing, one failing, one deselected test), not from written-out strings.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import affected  # benches/, on pytest's pythonpath


def _mutants(count: int) -> list[affected.Mutant]:
    return [affected.Mutant(f"pkg/m{i % 3}.py", "core/NumberReplacer", i, 10 + i, 4) for i in range(count)]


def test_sample_is_the_same_for_the_same_seed_and_project_and_ignores_input_order() -> None:
    """A re-run draws the same mutants whatever order cosmic-ray listed them in."""
    population = _mutants(50)
    first = affected.sample_mutants(population, 10, seed=19, project="toolz")
    again = affected.sample_mutants(list(reversed(population)), 10, seed=19, project="toolz")
    assert first == again
    assert len(set(first)) == 10


def test_sample_differs_by_project_and_seed_and_keeps_sorted_order() -> None:
    population = _mutants(50)
    toolz = affected.sample_mutants(population, 10, seed=19, project="toolz")
    assert toolz != affected.sample_mutants(population, 10, seed=19, project="isodate")
    assert toolz != affected.sample_mutants(population, 10, seed=20, project="toolz")
    keys = [(m.path, m.line, m.col, m.operator, m.occurrence) for m in toolz]
    assert keys == sorted(keys)


def test_sample_of_more_than_there_are_is_all_of_them_once() -> None:
    population = _mutants(5) * 2
    assert affected.sample_mutants(population, 100, seed=1, project="p") == sorted(
        set(population), key=lambda m: (m.path, m.line, m.col, m.operator, m.occurrence)
    )


def test_suspect_ranges_are_read_from_compact_text_and_lists() -> None:
    assert affected.line_ranges("12-13, 20") == [(12, 13), (20, 20)]
    assert affected.line_ranges([7, "9-11"]) == [(7, 7), (9, 11)]


def test_a_suspect_names_a_line_within_the_slack_of_its_range_in_the_same_file_only() -> None:
    suspects = [{"path": "src/pkg/calc.py", "lines": "12-13"}]
    assert affected.suspect_names(suspects, "pkg/calc.py", 15)  # 2 lines after the range
    assert not affected.suspect_names(suspects, "pkg/calc.py", 16)
    assert not affected.suspect_names(suspects, "pkg/other.py", 12)
    assert not affected.suspect_names(None, "pkg/calc.py", 12)


def test_a_miss_is_renumbered_only_when_the_plan_names_that_function_under_unknown_ids() -> None:
    """isodate's set-parametrized ids change between processes: such misses are told apart."""
    clean = {"t.py::test_a[x0]", "t.py::test_a[x1]", "t.py::test_b"}
    planned = {"t.py::test_a[y0]", "t.py::test_b"}
    assert affected.renumbered(["t.py::test_a[x1]", "t.py::test_c"], planned, clean) == ["t.py::test_a[x1]"]
    assert affected.renumbered(["t.py::test_a[x1]"], {"t.py::test_a[x0]"}, clean) == []


def test_ran_count_reads_a_real_pytest_summary_without_the_deselected(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(
        textwrap.dedent(
            """
            def test_ok():
                pass

            def test_bad():
                assert 1 == 2

            def test_other():
                pass
            """
        )
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE", "--tb=no", "-k", "not other"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert affected.ran_count(proc.stdout) == 2
    assert affected.real_bugs.failing_ids(proc.stdout) == {"test_x.py::test_bad"}


def test_failing_ids_keep_parameters_with_spaces(tmp_path: Path) -> None:
    """python-dateutil's ids hold spaces (``test_parser[Thu, 25 Sep 2003 ...]``): the
    whole id, not its first word, is what the run failed."""
    (tmp_path / "test_x.py").write_text(
        textwrap.dedent(
            """
            import pytest

            @pytest.mark.parametrize("text", ["Thu, 25 Sep 2003 - late", "plain"])
            def test_parse(text):
                assert text == "never"
            """
        )
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE", "--tb=no"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert affected.real_bugs.failing_ids(proc.stdout) == {
        "test_x.py::test_parse[Thu, 25 Sep 2003 - late]",
        "test_x.py::test_parse[plain]",
    }


def test_figures_count_safety_over_killed_and_ratios_over_measured_mutants() -> None:
    killed_safe = affected.Row("p", "a", "m.py", 1, status="killed", total=100, selected=5, full_s=2.0, affected_s=1.0)
    killed_safe.full_failing, killed_safe.text_named, killed_safe.short_named = ["t::a"], True, False
    killed_missed = affected.Row("p", "b", "m.py", 2, status="killed", total=100, selected=10, full_s=2.0)
    killed_missed.full_failing, killed_missed.missed, killed_missed.affected_s = ["t::b"], ["t::b"], 3.0
    survived = affected.Row("p", "c", "m.py", 3, status="survived", total=100, selected=0, full_s=2.0, affected_s=0.5)
    timeout = affected.Row("p", "d", "m.py", 4, status="timeout")
    got = affected.figures(
        [killed_safe, killed_missed, survived, timeout], {"plain_s": 2.0, "build_s": 3.0, "testmon_build_s": 2.5}
    )
    assert (got["mutants"], got["killed"], got["survived"], got["timeout"]) == (4, 2, 1, 1)
    assert got["safety_pct"] == 50.0
    assert got["median_selected_pct"] == 5.0  # of 5, 10 and 0 per cent
    assert got["median_time_ratio"] == 0.5  # of 0.5, 1.5 and 0.25
    assert got["build_ratio"] == 1.5
    assert got["testmon_build_ratio"] == 1.25
    assert (got["line_named_pct"], got["short_named_pct"]) == (50.0, 0.0)


def test_a_file_that_no_longer_imports_counts_as_selected_when_the_answer_shows_it() -> None:
    """pytest's ``ERROR pkg/tests/test_x.py`` id is a file: planned tests in it, or the
    answer's collection errors naming it, make it selected; a test id needs the plan."""
    failing = {"pkg/tests/test_x.py", "pkg/tests/test_y.py", "pkg/tests/test_z.py", "pkg/tests/test_x.py::test_a"}
    planned = {"pkg/tests/test_y.py::test_b"}
    shown = '[{"path": "pkg/tests/test_x.py", "message": "ImportError"}]'
    assert affected.missed_ids(failing, planned, shown) == ["pkg/tests/test_x.py::test_a", "pkg/tests/test_z.py"]


def test_a_rebuilt_report_keeps_what_the_measuring_run_recorded(tmp_path: Path) -> None:
    """``--report-only`` rebuilds the report from the progress files; its ``meta`` is the
    measuring run's (``FILE.run.json``: command, date, load, length, sample sizes), and
    ``rebuilt`` says when and how it was rebuilt."""
    out = tmp_path / "replay.json"
    row = affected.Row("toolz", "a", "toolz/m.py", 1, status="killed", total=10, selected=2, full_s=2.0, affected_s=1.0)
    row.full_failing = ["t::a"]
    out.with_suffix(".rows.jsonl").write_text(json.dumps(dataclasses.asdict(row)) + "\n")
    times = {"plain_s": 2.0, "build_s": 2.5, "testmon_build_s": 3.0}
    out.with_suffix(".projects.jsonl").write_text(json.dumps({"name": "toolz", "available": 5, "times": times}) + "\n")
    record = {
        "date": "2026-12-07 04:26 UTC",
        "command": "python benches/affected.py --only toolz --mutants-for toolz=1 --json replay.json",
        "load_start": "0.95 1.67 1.80",
        "load_end": "0.94 0.78 1.27",
        "seconds": 2234.0,
        "mutants_per_project": {"toolz": 1},
    }
    out.with_suffix(".run.json").write_text(json.dumps(record))
    assert affected.main(["--report-only", "--only", "toolz", "--json", str(out)]) == 0
    written = json.loads(out.read_text())
    assert {key: written["meta"][key] for key in affected.RUN_RECORD_KEYS} == record
    assert written["meta"]["rebuilt"]["command"].startswith("python benches/affected.py --report-only")
    assert written["provenance"]["load"]["start"] == [0.95, 1.67, 1.8]
    assert written["summary"]["toolz"]["killed"] == 1
