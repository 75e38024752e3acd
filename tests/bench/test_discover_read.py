"""benches/discover_read.py: it collects a real suite with the plugin, reads the page
through each install and refuses installs that disagree on it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import discover_read  # benches/, on pytest's pythonpath
import pytest
from helpers.provenance import check_provenance


def test_the_page_is_read_from_a_real_collection_and_the_figures_are_saved(tmp_path: Path) -> None:
    saved = tmp_path / "out.json"
    python = sys.executable
    args = ["--engine", f"a={python}", "--engine", f"b={python}", "--tests", "300", "--offset", "150"]
    args += ["--rounds", "2", "--reps", "1", "--work", str(tmp_path / "work"), "--save", str(saved)]
    assert discover_read.main(args) == 0
    figures = json.loads(saved.read_text())
    check_provenance(figures["provenance"])
    assert [row["engine"] for row in figures["rows"]] == ["a", "b"]
    assert all(row["best_s"] > 0 for row in figures["rows"])
    # the page is the engine's reading of the 300 ids pytest collected
    m = discover_read.measure(Path(python), tmp_path / "work" / "collect-300.jsonl", 150, 4, 1)
    assert m["total"] == 300
    modules = sorted(f"tests/test_c{m}.py" for m in range(100))  # pytest collects a directory sorted
    assert m["page"] == [f"{module}::test_v[{v}]" for module in modules for v in range(3)][150:154]


def test_engines_that_disagree_on_the_page_stop_the_run(tmp_path: Path, monkeypatch) -> None:
    answers = iter([{"times_s": [0.1], "total": 3, "page": ["a"]}, {"times_s": [0.1], "total": 3, "page": ["b"]}])
    monkeypatch.setattr(discover_read, "collect", lambda tests, work: work / "x.jsonl")
    monkeypatch.setattr(discover_read, "measure", lambda *a: next(answers))
    args = ["--engine", f"a={sys.executable}", "--engine", f"b={sys.executable}", "--rounds", "1"]
    with pytest.raises(SystemExit, match="disagree"):
        discover_read.main([*args, "--work", str(tmp_path)])
