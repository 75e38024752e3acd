"""The subtest plugin in a real pytest child: every subtest named in the JUnit XML, in
subtest order, and no report of the running test carrying them before its teardown;
the marker file written next to a JUnit report whose directory does not exist yet.

pytest copies a test's user properties into every report it makes for the test (and a
subtest report serialises them); the plugin used to add one property per subtest as the
subtest reported, so a test with thousands of subtests copied a growing list thousands
of times (quadratic: 7 s more on more-itertools' suite). JUnit XML reads a test's
properties from its teardown report only, so the plugin holds them until the teardown
starts. This checks both halves of that with real reports, not with timings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from pytest_mcp_server.app.workflows import SUBTESTS_PLUGIN_NAME
from pytest_mcp_server.run.events import PLUGIN_DIR
from pytest_mcp_server.run.pytest_plugin.pytest_mcp_server_subtests import SUBTEST_PROPERTY

SUBTESTS = 50

TESTS = f"""
import pytest


def test_many(subtests, request):
    request.node.user_properties.append(("own", "before"))
    for i in range({SUBTESTS}):
        with subtests.test(msg="step", i=i):
            assert i % 10 != 3
    request.node.user_properties.append(("own", "after"))


def test_plain():
    pass
"""

# Records, per report of the call stage, how many subtest properties it carries.
CONFTEST = f"""
import json
import os


def pytest_runtest_logreport(report):
    if report.when == "call":
        named = sum(1 for name, _ in report.user_properties if name == {SUBTEST_PROPERTY!r})
        with open(os.environ["PROPERTY_COUNTS"], "a") as out:
            out.write(json.dumps([report.nodeid, named]) + "\\n")
"""


def test_subtests_are_named_in_order_and_only_the_teardown_report_carries_them(tmp_path: Path) -> None:
    (tmp_path / "test_many.py").write_text(TESTS)
    (tmp_path / "conftest.py").write_text(CONFTEST)
    counts = tmp_path / "counts.jsonl"
    junit = tmp_path / "out" / "junit.xml"
    env = dict(os.environ, PYTHONPATH=str(PLUGIN_DIR), PROPERTY_COUNTS=str(counts))
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", SUBTESTS_PLUGIN_NAME]
    proc = subprocess.run(
        [*argv, f"--junitxml={junit}"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the failing subtests

    # no call-stage report of test_many (its subtests' and its own) carries a subtest's
    # property: they reach the test only when its teardown starts
    reports = [json.loads(line) for line in counts.read_text().splitlines()]
    assert [named for node_id, named in reports if node_id.endswith("::test_many")] == [0] * (SUBTESTS + 1)

    (case,) = [c for c in ET.parse(junit).getroot().iter("testcase") if c.get("name") == "test_many"]
    properties = [(p.get("name"), p.get("value")) for p in case.iter("property")]
    named = [value for name, value in properties if name == SUBTEST_PROPERTY]
    expected = [f"{'failed' if i % 10 == 3 else 'passed'} [step] (i={i})" for i in range(SUBTESTS)]
    assert named == expected
    assert [p for p in properties if p[0] == "own"] == [("own", "before"), ("own", "after")]
    # the marker the server looks for, although pytest had not made the report's directory yet
    assert (junit.parent / "subtests").is_file()
