"""Which listed failure repeats an earlier one: ``Failure.same_as`` (docs/ENGINE.md,
*Failures*).

A reader shows the first listed failure of each group in full; when such a failure's
exception, message, traceback, output and log are an earlier one's but for runs of
ASCII digits and its own test file (one check copied into several modules: one group
per assertion site), the engine names that earlier failure, so the reader points at it
instead of repeating the traceback. Checked on the three reports of one real pytest
run (JUnit XML, pytest-json-report, report log) and on a JUnit report with subtests,
each in both backends (the same bytes).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.backends import summary_in_both

CHECK = """
import pytest

VALUES = {values}


def check(total):
    assert {{"total": total}} == {{"total": 28}}


@pytest.mark.parametrize("value", VALUES)
def test_total(value):
    check(value)
"""
"""One check, its values as parameters (outside the lines a traceback shows): copied
into two modules with other values."""

OTHER = """
def test_other():
    values = [1, 2]
    assert values[0] == 5
"""
"""Another check: its traceback is its own."""

CODE = """
def test_code():
    code = "{code}"
    assert code == "x"
"""
"""A string check copied into three modules: with ``7``, ``٧`` (ARABIC-INDIC DIGIT
SEVEN: a digit to Python's ``\\d``, text to the rule) and ``8``."""

MODULES = {
    "test_a.py": CHECK.format(values=[27, 26]),
    "test_b.py": CHECK.format(values=[25]),
    "test_c.py": OTHER,
    "test_d.py": CODE.format(code="7"),
    "test_e.py": CODE.format(code="\u0667"),
    "test_f.py": CODE.format(code="8"),
}


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The reports of one pytest run of ``MODULES`` (in ``tests/``), by format."""
    root = tmp_path_factory.mktemp("copies")
    (root / "tests").mkdir()
    for name, source in MODULES.items():
        (root / "tests" / name).write_text(source, encoding="utf-8")
    paths = {"junit": root / "junit.xml", "pytest-json": root / "report.json", "reportlog": root / "log.jsonl"}
    args = [f"--junitxml={paths['junit']}", "--json-report", f"--json-report-file={paths['pytest-json']}"]
    args.append(f"--report-log={paths['reportlog']}")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, "tests"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "7 failed" in done.stdout, done.stdout + done.stderr
    return paths


@pytest.mark.parametrize("fmt", ["junit", "pytest-json", "reportlog"])
def test_a_copied_check_is_same_as_its_first_copy_and_nothing_else_is(reports, fmt):
    summary = summary_in_both(reports[fmt])
    listed = [(f["node_id"], f["same_as"]) for f in summary["failures"]]
    first = "tests/test_a.py::test_total[27]"
    assert listed == [
        (first, None),  # its group has two failures: listed first
        ("tests/test_b.py::test_total[25]", first),  # the same check, another module, another value
        ("tests/test_c.py::test_other", None),  # another traceback
        ("tests/test_d.py::test_code", None),
        ("tests/test_e.py::test_code", None),  # ٧ is not an ASCII digit: another text
        ("tests/test_f.py::test_code", "tests/test_d.py::test_code"),
        ("tests/test_a.py::test_total[26]", None),  # a later failure of a group: never
    ], listed
    # test_total[26] is marked by no rule but the group's: its texts are [27]'s but for numbers
    by_id = {f["node_id"]: f for f in summary["failures"]}
    assert [re.sub("[0-9]+", "N", by_id[f"tests/test_a.py::test_total[{n}]"]["traceback"]) for n in (26, 27)] == [
        re.sub("[0-9]+", "N", by_id[first]["traceback"])
    ] * 2
    assert by_id["tests/test_e.py::test_code"]["traceback"].count("\u0667") > 0


SUBTESTS = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.test_t" name="test_x" time="0.01"><failure message="AssertionError: 1">E   AssertionError: 1

tests/test_t.py:13: AssertionError</failure><failure message="AssertionError: 2">E   AssertionError: 2

tests/test_t.py:15: AssertionError</failure></testcase>
<testcase classname="tests.test_u" name="test_y" time="0.01"><failure message="AssertionError: 3">E   AssertionError: 3

tests/test_u.py:13: AssertionError</failure></testcase>
</testsuite></testsuites>
"""
"""pytest 9's JUnit XML of a test whose two subtests failed at two sites (two groups,
the same texts but for numbers), and of another test with the same texts in another
module."""


def test_a_subtest_is_never_same_as_its_own_test_but_another_test_can_be(tmp_path):
    """Both subtests are their groups' first failures with the same texts but for
    numbers; a pointer from the second to the first would name its own test: it has
    none. The other module's test points at the first."""
    report = tmp_path / "subtests.xml"
    report.write_text(SUBTESTS, encoding="utf-8")
    failures = summary_in_both(report)["failures"]
    subtests = [f for f in failures if f["subtest"] is not None]
    assert len(subtests) == 2 and subtests[0]["group"] != subtests[1]["group"]
    assert [f["same_as"] for f in subtests] == [None, None]
    [other] = [f for f in failures if f["node_id"] == "tests/test_u.py::test_y"]
    assert other["same_as"] == "tests/test_t.py::test_x"
