"""The page of collected node ids the report-log readers keep when asked (docs/ENGINE.md,
*Session*): ``read_report(..., collected_page=CollectedPage(offset, limit, max_files))``
gives ``session.collected_ids``, read from the server plugin's ``CollectedIds`` lines in
the same pass as the rest of the file.

Each case runs both backends, which must write the same bytes (``summary_in_both``),
and checks the page against the ids written: a window in the middle of the ids (across
a line boundary), at their end and beyond it, over several files read in input order
(the same as over one file holding their lines), with more files than ``max_files``;
and the memory a page costs, which does not grow with the ids.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.backends import result_in_both, summary_in_both
from helpers.peak_memory import measure

from pytest_mcp_server.engine.models import CollectedPage

START = {"$report_type": "SessionStart", "pytest_version": "9.2.0", "root": "/r"}
FINISH = {"$report_type": "SessionFinish", "exitstatus": 0, "duration": 0.5}


def collected_lines(*chunks: list[object]) -> list[dict[str, object]]:
    """The lines a collect-only run writes for these chunks of ids."""
    return [{"$report_type": "CollectedIds", "nodeids": chunk} for chunk in chunks]


def write_log(path: Path, lines: list[dict[str, object]]) -> str:
    """A record file of ``lines`` between a SessionStart and a SessionFinish."""
    path.write_text("".join(json.dumps(line) + "\n" for line in [START, *lines, FINISH]))
    return str(path)


def collected_ids(paths: str | list[str], offset: int, limit: int, max_files: int = 500) -> dict[str, object]:
    """The session's ``collected_ids`` both backends give for that page."""
    page = CollectedPage(offset=offset, limit=limit, max_files=max_files)
    summary = summary_in_both(paths, collected_page=page)
    return summary["session"]["collected_ids"]


# 7 ids of 3 files in 3 lines, with values that are not node ids among them (skipped)
IDS = [f"a.py::t{i}" for i in range(3)] + ["b.py::t[x::y]", "c.py::t0", "a.py::t3", "c.py"]
LINES = collected_lines(IDS[:2] + [7, None], IDS[2:5], [{"id": 1}, *IDS[5:]])


@pytest.mark.parametrize(
    ("offset", "limit", "page"),
    [
        (1, 3, IDS[1:4]),  # the middle, across the first line's end
        (5, 10, IDS[5:]),  # the end: fewer than asked
        (0, 7, IDS),  # all of them
        (7, 10, []),  # just after the last
        (100, 10, []),  # far beyond
        (2, 0, []),  # an empty page
    ],
)
def test_the_page_is_the_window_of_the_string_ids(tmp_path, offset, limit, page):
    """The window counts only the string ids, in the order written, and the total and
    the tests per file are the whole file's whatever the window."""
    got = collected_ids(write_log(tmp_path / "r.jsonl", LINES), offset, limit)
    assert got == {"total": 7, "files": {"a.py": 4, "b.py": 1, "c.py": 2}, "files_omitted": 0, "page": page}


def test_several_files_page_as_the_one_file_of_their_lines_in_input_order(tmp_path):
    """A page over several files is the page over their ids in input order: the window
    crosses from one file into the next (the reader of each file is told how many ids
    the earlier files hold), and a file's counts add up over the files."""
    first = write_log(tmp_path / "1.jsonl", collected_lines(IDS[:2], IDS[2:4]))
    second = write_log(tmp_path / "2.jsonl", collected_lines(IDS[4:6]))
    third = write_log(tmp_path / "3.jsonl", collected_lines(IDS[6:]))
    whole = write_log(tmp_path / "whole.jsonl", collected_lines(IDS[:2], IDS[2:4], IDS[4:6], IDS[6:]))
    for offset, limit in [(0, 7), (3, 2), (3, 4), (5, 1), (6, 5), (9, 1)]:
        several = collected_ids([first, second, third], offset, limit, max_files=2)
        assert several == collected_ids(whole, offset, limit, max_files=2)
        assert several["page"] == IDS[offset : offset + limit]
    assert several["total"] == 7 and several["files"] == {"a.py": 4, "b.py": 1}
    assert several["files_omitted"] == 1  # c.py, in two files


def test_files_beyond_max_files_are_counted_once_each_not_listed(tmp_path):
    """The first ``max_files`` files in collection order are listed with all their tests
    (a listed file's later tests too); each other distinct file counts once in
    ``files_omitted``, however many tests it has."""
    ids = ["a.py::1", "b.py::1", "c.py::1", "d.py::1", "c.py::2", "a.py::2", "d.py::2", "e.py::1"]
    path = write_log(tmp_path / "r.jsonl", collected_lines(ids))
    got = collected_ids(path, 0, 2, max_files=2)
    assert got == {"total": 8, "files": {"a.py": 2, "b.py": 1}, "files_omitted": 3, "page": ids[:2]}
    assert collected_ids(path, 0, 0, max_files=0)["files"] == {}
    assert collected_ids(path, 0, 0, max_files=0)["files_omitted"] == 5


def test_nothing_of_the_ids_is_kept_unless_a_page_is_asked_for(tmp_path):
    """A normal reading keeps none of the ids (``collected_ids`` null); a page asked of a
    file without ``CollectedIds`` lines (a run that was not collect-only) is empty."""
    with_ids = write_log(tmp_path / "ids.jsonl", LINES)
    assert summary_in_both(with_ids)["session"]["collected_ids"] is None
    without = write_log(tmp_path / "none.jsonl", [{"$report_type": "CollectionFinish", "collected": 0}])
    assert collected_ids(without, 0, 10) == {"total": 0, "files": {}, "files_omitted": 0, "page": []}


@pytest.mark.parametrize("nodeids", [None, "a.py::t", {"a.py::t": 1}])
@pytest.mark.parametrize("page", [None, CollectedPage(offset=0, limit=10, max_files=10)], ids=["no-page", "page"])
def test_a_collected_ids_line_without_an_array_is_malformed(tmp_path, nodeids, page):
    """``nodeids`` is required and an array, as the other session lines' fields are
    typed (docs/ENGINE.md, *pytest report-log*): else the line is ``malformed``, whether
    a page is asked for or not."""
    line = {"$report_type": "CollectedIds"} if nodeids is None else {"$report_type": "CollectedIds", "nodeids": nodeids}
    result = result_in_both(write_log(tmp_path / "r.jsonl", [line]), collected_page=page)
    assert result[:2] == ("error", "malformed") and "line 2" in result[2]


PAGE_BOUND_MB = 4
"""Peak RSS growth allowed for a page of 10 ids (under 1 MB measured on both backends):
far below what holding ids costs (a page of 100,000 of them grew it by about 20 MB)."""


def write_collect_only(path: Path, ids: int) -> str:
    """A collect-only record file of ``ids`` node ids (about 50 bytes each) over 1,000
    files, in lines of about 64 KB as the plugin writes them."""
    node_ids = [f"tests/pkg_{i % 1000:04d}/test_module.py::TestCase::test_{i:09d}" for i in range(ids)]
    chunks = [node_ids[i : i + 1200] for i in range(0, ids, 1200)]
    return write_log(path, collected_lines(*chunks))


def test_a_page_costs_the_same_memory_for_100k_and_400k_ids(tmp_path, backend):
    """Memory is bounded by the page, not the ids: the same small peak for a page of a
    100,000- and a 400,000-id collection; a page of 100,000 ids costs far more (so the
    bound tells a reader that keeps the ids from one that does not)."""
    for ids in (100_000, 400_000):
        path = write_collect_only(tmp_path / f"{ids}.jsonl", ids)
        r = measure([path], backend, PAGE_BOUND_MB, collected_page=(ids // 2, 10, 500))
        assert r.kind == "ok", r
        assert r.growth_kb <= PAGE_BOUND_MB * 1024, f"peak RSS grew by {r.growth_kb // 1024} MB for {ids} ids"
        collected = r.summary["session"]["collected_ids"]
        assert (collected["total"], len(collected["files"]), collected["files_omitted"]) == (ids, 500, 500)
        assert collected["page"][0].endswith(f"test_{ids // 2:09d}") and len(collected["page"]) == 10
    large_page = measure([path], backend, 256, collected_page=(0, 100_000, 500))
    assert large_page.kind == "ok" and large_page.growth_kb > 2 * PAGE_BOUND_MB * 1024, large_page.growth_kb
