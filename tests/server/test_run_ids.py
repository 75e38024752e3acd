"""Run ids: a run's start time, UTC, to the millisecond, unique per project, sorting as
the runs started (``run.rundirs``), on real directories."""

from __future__ import annotations

import time
from pathlib import Path

from pytest_mcp_server.run.rundirs import RunDirectories, run_id


def test_a_run_id_is_its_utc_start_time_to_the_millisecond():
    assert run_id(0) == "19700101-000000-000"
    assert run_id(1_796_000_000_123) == "20261130-005320-123"
    # fixed width: ids sort as their times do
    stamps = [0, 999, 1_000, 59_999, 1_796_000_000_123, 1_796_000_000_124, 253_402_300_799_999]
    assert sorted(run_id(s) for s in stamps) == [run_id(s) for s in stamps]
    assert len({len(run_id(s)) for s in stamps}) == 1


def test_runs_started_in_the_same_millisecond_get_the_next_ids_in_order(tmp_path, monkeypatch):
    (tmp_path / "proj").mkdir()
    runs = RunDirectories(tmp_path / "proj", tmp_path / "art", max_timeout_s=60)
    frozen = 1_796_000_000_500 * 1_000_000
    monkeypatch.setattr(time, "time_ns", lambda: frozen)
    made = [runs.new() for _ in range(3)]
    assert [p.name for p in made] == [run_id(1_796_000_000_500 + i) for i in range(3)]
    assert all(p.is_dir() and p.parent == runs.runs_dir for p in made)
    # another server of the same project whose clock reads the same millisecond
    other = RunDirectories(tmp_path / "proj", tmp_path / "art", max_timeout_s=60)
    assert other.new().name == run_id(1_796_000_000_503)
    assert sorted(Path(p).name for p in runs.runs_dir.iterdir()) == [run_id(1_796_000_000_500 + i) for i in range(4)]
