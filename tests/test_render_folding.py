"""Entries that repeat an earlier entry's traceback but for numbers and their own file.

A test body copied into several modules (or one check failing on other values at other
sites) gives one group per assertion site, by the grouping rule; the text then shows the
first entry in full and each repeat as its header, its own exception line (with its
values) and a pointer to the first, instead of the same traceback again. Checked on a
real pytest run's JUnit XML through the real CLI, in both engine backends.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BODY = """
def check(total):
    assert {{"total": total}} == {{"total": 28}}


def test_total():
    check({value})
"""

OTHER = """
def test_other():
    values = [1, 2]
    assert values[0] == {value}
"""


def summarize_text(tmp_path: Path, backend: str, modules: dict[str, str]) -> str:
    """Run pytest on ``modules`` (name -> source) and return the CLI's text of its report."""
    tests = tmp_path / "tests"
    tests.mkdir()
    for name, source in modules.items():
        (tests / name).write_text(source)
    junit = tmp_path / "junit.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}", "tests"],
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
    )
    cli = [sys.executable, "-m", "pytest_mcp_server", "summarize", "--backend", backend, str(junit)]
    done = subprocess.run(cli, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    return done.stdout


def test_a_copied_failure_is_one_line_pointing_at_the_first(tmp_path, backend):
    text = summarize_text(
        tmp_path,
        backend,
        {"test_a.py": BODY.format(value=27), "test_b.py": BODY.format(value=26), "test_c.py": OTHER.format(value=5)},
    )
    first, repeat = "tests/test_a.py::test_total", "tests/test_b.py::test_total"
    # the first in full, the repeat with its own location and values and a pointer
    assert text.count('assert {"total": total} == {"total": 28}') == 1, text
    assert f"- FAILED {repeat}  at tests/test_b.py:3" in text, text
    assert "{'total': 26} == {'total': 28}" in text, text
    assert f"    same traceback as {first}, with other values" in text, text
    # a different traceback is never folded: test_c's is shown
    assert "- FAILED tests/test_c.py::test_other  at tests/test_c.py:4" in text
    assert ">       assert values[0] == 5" in text, text
    assert text.count("same traceback as") == 1, text
