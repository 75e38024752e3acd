"""The changed lines and the compact line ranges behind coverage answers, against real
``git`` output: a repository made here, with lines modified, added, deleted, staged,
untracked, outside the root and in a file whose name git quotes. An off-by-one in a hunk
header or a misread path would name the wrong changed lines as "not run"."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from helpers.server_support import git

from pytest_mcp_server.domain.coverage_answer import line_ranges, ranges_text
from pytest_mcp_server.run.git import _parse_hunks, changed_lines, parse_unified_diff


def write_lines(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with one commit: ``proj/pkg/mod.py`` (10 lines), ``proj/pkg/gone.py``,
    ``proj/od"d name.py`` and ``outside.py`` next to the project root ``proj``."""
    write_lines(tmp_path / "proj" / "pkg" / "mod.py", [f"line{i} = {i}" for i in range(1, 11)])
    write_lines(tmp_path / "proj" / "pkg" / "gone.py", ["x = 1"])
    write_lines(tmp_path / "proj" / 'od"d name.py', ["a = 1", "b = 2"])
    write_lines(tmp_path / "outside.py", ["o = 1"])
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    return tmp_path / "proj"


def test_modified_added_staged_and_untracked_lines_relative_to_the_root(repo: Path):
    mod = repo / "pkg" / "mod.py"
    lines = mod.read_text().splitlines()
    lines[1] = "line2 = 'changed'"  # line 2 modified
    del lines[4]  # old line 5 deleted: nothing added there
    lines[6:6] = ["new_a = 1", "new_b = 2"]  # lines 7-8 of the new file added
    write_lines(mod, lines)
    (repo / "pkg" / "gone.py").unlink()  # a deleted file has no lines
    write_lines(repo / "pkg" / "staged.py", ["s = 1", "t = 2", "u = 3"])
    git(repo, "add", "pkg/staged.py")  # in the index only: still new relative to HEAD
    write_lines(repo / "pkg" / "fresh.py", ["f = 1"])  # untracked
    write_lines(repo / 'od"d name.py', ["a = 1", "b = 'quoted path'"])
    write_lines(repo.parent / "outside.py", ["o = 2"])  # outside the root: not the project's

    changed = anyio.run(changed_lines, repo)

    assert changed is not None
    assert changed.ranges == {"pkg/mod.py": [(2, 2), (7, 8)], "pkg/staged.py": [(1, 3)], 'od"d name.py': [(2, 2)]}
    assert changed.new_files == {"pkg/fresh.py"}
    assert changed.paths() == ['od"d name.py', "pkg/fresh.py", "pkg/mod.py", "pkg/staged.py"]
    assert changed.changed("pkg/mod.py", [1, 2, 3, 6, 7, 8, 9]) == [2, 7, 8]
    assert changed.changed("pkg/fresh.py", [1, 4]) == [1, 4]  # an untracked file is new throughout
    assert changed.changed("pkg/other.py", [1]) == []


def test_a_clean_tree_has_no_changed_lines_and_no_repository_gives_none(repo: Path, tmp_path_factory):
    clean = anyio.run(changed_lines, repo)
    assert clean is not None and clean.ranges == {} and clean.new_files == set()
    elsewhere = tmp_path_factory.mktemp("not_a_repo")
    assert anyio.run(changed_lines, elsewhere) is None


def test_a_repository_without_a_commit_gives_none(tmp_path: Path):
    git(tmp_path, "init", "-q")
    write_lines(tmp_path / "a.py", ["a = 1"])
    assert anyio.run(changed_lines, tmp_path) is None  # no HEAD to compare with


def test_hunk_headers_without_counts_and_pure_deletions():
    diff = [
        "diff --git a/x.py b/x.py",
        "--- a/x.py",
        "+++ b/x.py",
        "@@ -3 +3 @@",  # one line replaced: no count means 1
        "-a",
        "+b",
        "@@ -9,2 +8,0 @@",  # two lines deleted: nothing added
        "@@ -20,0 +21,4 @@ def f():",  # four lines inserted after 20
        "diff --git a/y.py b/y.py",
        "--- a/y.py",
        "+++ /dev/null",  # deleted file
        "@@ -1 +0,0 @@",
        '+++ "b/t\\tab\\303\\251.py"',  # git's C quoting, octal escapes for UTF-8 bytes
        "@@ -0,0 +1 @@",
        "+++ b/with space.py\t",  # git ends a name with a space with a tab
        "@@ -1,0 +2,2 @@",
    ]
    assert parse_unified_diff(diff) == {"x.py": [(3, 3), (21, 24)], "t\tabé.py": [(1, 1)], "with space.py": [(2, 3)]}
    assert _parse_hunks(diff)[1] == {"x.py": [8]}  # the pure deletion: after line 8 of the new file


def test_line_ranges_are_compact_and_cut_whole_with_the_rest_counted():
    assert line_ranges([7, 12, 13, 14, 20]) == [(7, 7), (12, 14), (20, 20)]
    assert ranges_text([7, 12, 13]) == ("7, 12-13", 0)
    assert ranges_text([]) == ("", 0)
    text, cut = ranges_text([1, 3, 5, 6, 7, 9, 11], max_chars=10)
    assert text == "1, 3, 5-7, …"  # whole ranges only: "9" would pass the 10 characters
    assert cut == 2  # lines 9 and 11
