"""What the text says once: repeated tracebacks and pytest's redundant dict diff.

A test body copied into several modules (or one check failing on other values at other
sites) gives one group per assertion site, by the grouping rule; the text then shows the
first entry in full and each repeat as its header, its own exception line (with its
values) and a pointer to the first, instead of the same traceback again. A dict
comparison's ``Full diff:`` block repeats its ``Differing items:`` block, and a short
list's repeats the assertion line that holds both lists whole: each becomes one line
saying so. Checked on a real pytest run's JUnit XML (pytest run with
``verbosity_assertions=2``, as a project's ``-vv`` run writes its diffs; pytest on CI
writes the same ``Full diff:`` blocks) through the real CLI, in both engine
backends. Which entry repeats which is the engine's ``same_as``: the text only presents
it, which a hand-made summary shows.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pytest_mcp_server.adapters.text import render_text, shown_in_full
from pytest_mcp_server.engine.models import Counts, Failure, Group, Location, Omitted, ReportSummary

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
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "verbosity_assertions=2"]
        + [f"--junitxml={junit}", "tests"],
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
    assert f" same traceback as {first}, with other values" in text.split("\n"), text
    # a different traceback is never folded: test_c's is shown
    assert "- FAILED tests/test_c.py::test_other  at tests/test_c.py:4" in text
    assert ">       assert values[0] == 5" in text, text
    assert text.count("same traceback as") == 1, text


DICTS = """
def test_totals():
    assert {"apples": 3, "pears": 5, "plums": 7} == {"apples": 3, "pears": 2, "plums": 7}


def test_lists():
    assert [1, 2, 3] == [1, 2, 4]


def test_long_lists():
    assert list(range(60)) == list(range(1, 61))
"""


def test_a_dict_or_short_list_diff_is_said_once_and_a_long_list_diff_kept(tmp_path, backend):
    text = summarize_text(tmp_path, backend, {"test_d.py": DICTS})
    assert "{'pears': 5} != {'pears': 2}" in text, text
    [dict_entry, list_entry, long_entry] = text.split("- FAILED ")[1:]
    assert "Full diff: [" in dict_entry and " lines left out: the differing items above]" in dict_entry, text
    assert "'apples': 3," not in dict_entry.split("Full diff:")[1], text
    # a short list's diff repeats the assert line, which holds both lists whole
    assert "assert [1, 2, 3] == [1, 2, 4]" in list_entry, text
    assert "lines left out: both sides are whole in the assert line above]" in list_entry, text
    # a long list's diff is kept: the assert line is cut, the diff is the only place with the values
    assert "…" in long_entry and "Full diff:" in long_entry and "lines left out" not in long_entry, text


CLASSES = """
import unittest


class Box:
    pass


class TestBox:
    def test_size(self):
        size = 2
        assert size == 3

    def test_box(self):
        box = Box()
        check(self, box)


def check(owner, box):
    assert box is None


class BoxCase(unittest.TestCase):
    def test_width(self):
        width = 2
        self.assertEqual(width, 3)
"""


def test_the_tests_own_instance_is_not_shown_other_arguments_are(tmp_path, backend):
    # pytest's long format prints a method's ``self``: the test's own instance says only
    # its class, which the entry's node id names; a helper's arguments stay
    text = summarize_text(tmp_path, backend, {"test_cls.py": CLASSES})
    for test in ("TestBox::test_size", "TestBox::test_box", "BoxCase::test_width"):
        assert f"- FAILED tests/test_cls.py::{test}" in text, text
    assert "self = <" not in text, text
    assert "owner = <test_cls.TestBox object at 0x" in text, text


def test_a_bare_exception_is_named_without_a_dangling_colon(tmp_path, backend):
    """``raise RuntimeError`` has no message: the failure's line and a group line name
    the exception alone (``RuntimeError``, not ``RuntimeError: ``)."""
    bare = "def test_bare():\n    raise RuntimeError\n"
    text = summarize_text(tmp_path, backend, {"test_bare.py": bare})
    assert "RuntimeError: \n" not in text and not any(line.endswith("RuntimeError: ") for line in text.split("\n"))
    assert "E       RuntimeError" in text, text


def _marked_summary() -> ReportSummary:
    """Two causes whose tracebacks differ in every way, the second marked by the engine
    as repeating the first (``same_as``), each with lines and output the engine's cut
    left out."""
    first = Failure(
        node_id="tests/test_a.py::test_one",
        outcome="failed",
        phase="call",
        exception="ValueError",
        message="bad 1",
        location=Location(path="tests/test_a.py", line=3),
        traceback="E   ValueError: bad 1\nfirst traceback line",
        traceback_lines_omitted=5,
        output_bytes_omitted=100,
        group="g00000001",
    )
    second = first.model_copy(
        update={
            "node_id": "tests/test_b.py::test_two",
            "message": "bad 2",
            "location": Location(path="tests/test_b.py", line=9),
            # it names its own location: the repeat's header must say it, its traceback is not shown
            "traceback": "a text the first never had\ntests/test_b.py:9: ValueError",
            "traceback_lines_omitted": 7,
            "output_bytes_omitted": 1000,
            "group": "g00000002",
            "same_as": "tests/test_a.py::test_one",
        }
    )
    groups = [
        Group(id=f.group, count=1, exception=f.exception, message=f.message, location=f.location)
        for f in (first, second)
    ]
    counts = Counts(total=2, passed=0, failed=2, errors=0, skipped=0, xfailed=0, xpassed=0, flaky=0)
    return ReportSummary(
        format="junit",
        files=["r.xml"],
        counts=counts,
        duration_s=1.0,
        tests_duration_s=1.0,
        failures=[first, second],
        groups=groups,
        omitted=Omitted(traceback_lines=12, output_bytes=1100),
    )


def test_the_text_folds_what_the_engine_marks_and_counts_only_the_tracebacks_it_shows():
    """The text compares nothing itself: an entry the engine marks ``same_as`` is folded
    even though its traceback is another text, and the ``Omitted`` line counts the
    engine's numbers of the entries shown in full only; for the tests asked for by node
    id (every failure in full) nothing is folded and both count."""
    summary = _marked_summary()
    text = render_text(summary)
    assert "- FAILED tests/test_b.py::test_two  at tests/test_b.py:9\n ValueError: bad 2\n" in text, text
    assert " same traceback as tests/test_a.py::test_one, with other values" in text.split("\n"), text
    assert "a text the first never had" not in text, text
    assert "Omitted: 5 traceback lines; 100 bytes of captured output" in text, text
    assert [f.node_id for f in shown_in_full(summary)] == ["tests/test_a.py::test_one"]

    every = render_text(summary, every_failure=True)
    assert "same traceback as" not in every and "a text the first never had" in every, every
    assert "Omitted: 12 traceback lines; 1100 bytes of captured output" in every, every
