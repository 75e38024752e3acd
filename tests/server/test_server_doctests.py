"""Doctest failures in an answer read like any other failure: located relative to the
root, the failing example shown once, and what went wrong as the message.

The real server over stdio runs the real pytest with ``--doctest-modules`` (the
project's ``pytest.ini``) on a package whose docstrings hold a wrong expected value
(``DocTestFailure``: the failing example is the docstring's first line) and an example
that raises (``UnexpectedException``); once in one process and once with two xdist
workers (the controller then gets each report as a string). A wrong value's message is
``Expected: <want> Got: <got>`` and its location the example's line (pytest writes it
with the absolute path, ``/root/pkg/calc.py:2: DocTestFailure``; the server's plugin
writes it relative); an example that raises gives the exception it raised, its message
and its traceback, located at the raising frame as any test's, and the docstring's
listing before the example is not shown. ``summarize_report`` on the run's report gives
the same locations.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from helpers.backends import summary_in_both
from helpers.server_support import TYPED, committed_project, connect, run, text_of, typed_stdio_server
from helpers.server_support import stdio_server as server

from pytest_mcp_server.domain.tools import ExecuteResult, SummarizeResult
from pytest_mcp_server.engine import ProjectCode, summarize_bytes
from pytest_mcp_server.engine.models import SuspectGroup

CALC = '''\
def add(a, b):
    """>>> add(1, 2)
    4
    """
    return a + b
'''

BOOM = '''\
"""Explodes.

>>> explode()
3
"""


def explode():
    raise ValueError("boom")
'''


@pytest.mark.parametrize("workers", [None, 2])
def test_doctest_failures_are_located_in_the_root_and_shown_once(tmp_path: Path, workers: int | None):
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "calc.py").write_text(CALC)
    (root / "pkg" / "boom.py").write_text(BOOM)
    (root / "pytest.ini").write_text("[pytest]\naddopts = --doctest-modules\n")
    params = typed_stdio_server(root, tmp_path / "artifacts")

    async def body():
        async with connect(params, "auto") as client:
            executed = await client.call_tool("execute_tests", {"workers": workers} if workers else {})
            report = executed.structured_content["report_path"]
            summarized = await client.call_tool("summarize_report", {"paths": [report]})
            return executed, summarized

    executed, summarized = run(body)
    text = text_of(executed)
    result = ExecuteResult.model_validate(executed.structured_content)
    assert result.summary.counts.failed == 2, text
    locations = {f.node_id: (f.exception, f.location.path, f.location.line) for f in result.summary.failures}
    assert locations == {
        "pkg/calc.py::pkg.calc.add": ("DocTestFailure", "pkg/calc.py", 2),
        "pkg/boom.py::pkg.boom": ("ValueError", "pkg/boom.py", 9),
    }, text
    assert "at pkg/calc.py:2" in text and "at pkg/boom.py:9" in text, text
    messages = {f.node_id: f.message for f in result.summary.failures}
    assert messages == {"pkg/calc.py::pkg.calc.add": "Expected: 4 Got: 3", "pkg/boom.py::pkg.boom": "boom"}, text
    # the location lines are written relative too; the root appears only in Python's own
    # traceback of the unexpected exception (``File "/root/pkg/boom.py"``), as pytest prints it
    assert str(root) + "/pkg/calc.py" not in text, text
    # each example's line once, and not the docstring's listing before it
    assert text.count(">>> add(1, 2)") == 1 and text.count(">>> explode()") == 1, text
    assert "Explodes." not in text and "UNEXPECTED EXCEPTION" not in text, text
    # what went wrong once: doctest's blocks say the message, the traceback's last line the exception
    assert " Got:\n     3\n" in text and "DocTestFailure: Expected: 4 Got: 3" not in text, text
    assert text.count("ValueError: boom") == 1, text

    summary = SummarizeResult.model_validate(summarized.structured_content).summary
    assert summary is not None
    assert {f.node_id: (f.exception, f.location.path, f.location.line) for f in summary.failures} == locations
    assert text_of(summarized).count(">>> add(1, 2)") == 1


LISTS = '''\
def natural_list(items):
    """Natural list.

    >>> natural_list(["one", "two"])
    'one and two'
    """
    if len(items) == 1:
        return str(items[0])
    head = ", ".join(str(i) for i in items[:-1])
    return head + " and " + str(items[-1])
'''
LISTS_TESTS = """\
from pkg.lists import natural_list


def test_two():
    assert natural_list(["a", "b"]) == "a and b"


def test_three():
    assert natural_list(["a", "b", "c"]) == "a, b and c"


def test_one():
    assert natural_list(["a"]) == "a"
"""


@pytest.mark.parametrize("mode", ["affected", "coverage"])
def test_a_doctest_failing_beside_unit_tests_for_one_changed_line_is_one_group_counted_in_the_suspect(tmp_path, mode):
    """One edited line breaks two unit tests (two assertion sites) and the docstring's
    example: the answer counts all three under the changed line and lists them as one
    group, shown by its first assertion (a doctest never labels a group of assertion
    failures: docs/ENGINE.md, *Groups*), the doctest named among its other failures and
    listed with its Expected/Got as its message."""
    root = committed_project(
        tmp_path / "lists",
        {
            "pkg/__init__.py": "",
            "pkg/lists.py": LISTS,
            "tests/test_lists.py": LISTS_TESTS,
            "pytest.ini": "[pytest]\naddopts = --doctest-modules\n",
        },
    )

    async def body():
        async with connect(server(root, tmp_path / "artifacts", *TYPED), "auto") as client:
            if mode == "affected":
                await client.call_tool("execute_tests", {"affected": True})
            lists = root / "pkg" / "lists.py"
            lists.write_text(lists.read_text().replace('" and " + str', '" & " + str'))
            answer = await client.call_tool("execute_tests", {mode: True})
            return ExecuteResult.model_validate(answer.structured_content), text_of(answer)

    result, text = run(body)
    assert result.summary.counts.failed == 3, text
    assert "pkg/lists.py:10 (3 of 3 failing" in text, text
    (group,) = result.summary.groups
    assert group.count == 3, text
    doctest = "pkg/lists.py::pkg.lists.natural_list"
    assert group.examples[0] == doctest, text
    assert (group.exception, group.location.path) == ("AssertionError", "tests/test_lists.py"), text
    assert "- FAILED tests/test_lists.py::test_two\n" in text, text
    assert f"also in 2 more: {doctest}, test_three" in text, text
    listed = summary_in_both([result.report_path])["failures"]
    assert any(f["message"] == "Expected: 'one and two' Got: 'one & two'" for f in listed), listed


def test_doctest_failures_read_alike_from_every_report_format_in_both_backends(tmp_path):
    """Real pytest writes the same two doctest failures and a chained unit-test failure
    as JUnit XML, pytest-json-report and a report log (pytest-reportlog); each report
    gives both backends the same bytes, and all three the same failures: the wrong
    value as ``Expected: ... Got: ...`` at its example's line, the example that raises
    as the exception it raised at its raising frame, the chain line kept."""
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "calc.py").write_text(CALC)
    (root / "pkg" / "boom.py").write_text(BOOM)
    (root / "test_chain.py").write_text(
        "def test_chain():\n    try:\n        {}['k']\n    except KeyError:\n        raise RuntimeError('lookup')\n"
    )
    reports = {"junit": root / "r.xml", "json": root / "r.json", "log": root / "r.jsonl"}
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--doctest-modules"]
    argv += [f"--junitxml={reports['junit']}", "--json-report", f"--json-report-file={reports['json']}"]
    argv += [f"--report-log={reports['log']}"]
    subprocess.run(argv, cwd=root, capture_output=True, check=False, timeout=120)
    project = ProjectCode(root=str(root), packages=["pkg"])
    seen = []
    for path in reports.values():
        native, pure = (summarize_bytes([path], backend=b, project=project) for b in ("native", "pure"))
        assert native == pure, path
        summary = orjson.loads(native)
        seen.append({f["node_id"]: (f["exception"], f["message"], f["location"]) for f in summary["failures"]})
        chained = next(f for f in summary["failures"] if f["node_id"] == "test_chain.py::test_chain")
        assert "During handling of the above exception, another exception occurred:" in chained["traceback"]
    assert seen[0] == seen[1] == seen[2]
    assert seen[0]["pkg/calc.py::pkg.calc.add"] == (
        "DocTestFailure",
        "Expected: 4 Got: 3",
        {"path": "pkg/calc.py", "line": 2},
    )
    assert seen[0]["pkg/boom.py::pkg.boom"] == ("ValueError", "boom", {"path": "pkg/boom.py", "line": 9})


SENTENCES = '''\
def natural_list(items):
    """Natural list.

    >>> natural_list(["one", "two"])
    'one and two'
    """
    if len(items) == 1:
        return str(items[0])
    head = ", ".join(str(i) for i in items[:-1])
    return head + " and " + str(items[-1])


def sentence(items):
    """A sentence.

    >>> sentence(["x", "y"])
    'x and y.'
    """
    return natural_list(items) + "."
'''
SENTENCES_TESTS = """\
import pytest

from pkg.lists import natural_list, sentence


@pytest.mark.parametrize("n", range(6))
def test_pairs(n):
    assert natural_list(["a", str(n)]) == "a and " + str(n)


def test_three():
    assert natural_list(["a", "b", "c"]) == "a, b and c"


def test_sentence():
    assert sentence(["a", "b"]) == "a and b."


def test_sentence_again():
    assert sentence(["a", "c"]) == "a and c."


def test_one():
    assert natural_list(["a"]) == "a"
"""


def test_a_group_of_assertion_failures_and_doctests_is_labelled_by_its_assertions(tmp_path):
    """The issue's case (issue 39): one changed line fails 9 unit tests at four assertion
    sites (six cases of one parametrised test) and 2 doctests, which pytest runs first.
    The group is labelled by its most common exception and site, the parametrised
    test's assertion, and shown by its first case; the doctests are named among its
    other failures. Both backends agree on the run's report, also when the lead is not
    among the failures the builder keeps (read again)."""
    root = committed_project(
        tmp_path / "lists",
        {
            "pkg/__init__.py": "",
            "pkg/lists.py": SENTENCES,
            "tests/test_lists.py": SENTENCES_TESTS,
            "pytest.ini": "[pytest]\naddopts = --doctest-modules\n",
        },
    )
    lists = root / "pkg" / "lists.py"
    lists.write_text(lists.read_text().replace('" and " + str', '" & " + str'))

    async def body():
        async with connect(server(root, tmp_path / "artifacts", *TYPED), "auto") as client:
            answer = await client.call_tool("execute_tests", {"coverage": True})
            return ExecuteResult.model_validate(answer.structured_content), text_of(answer)

    result, text = run(body)
    assert result.summary.counts.failed == 11, text
    (group,) = result.summary.groups
    assert group.count == 11
    pairs_line = 8  # the parametrised test's assert
    assert group.exception == "AssertionError", text
    assert (group.location.path, group.location.line) == ("tests/test_lists.py", pairs_line), text
    entry = f"- FAILED tests/test_lists.py::test_pairs[0]\n tests/test_lists.py:{pairs_line}: assert natural_list"
    assert entry in text, text
    assert "DocTestFailure" not in text, text
    assert "also in 10 more: pkg/lists.py::pkg.lists.natural_list, pkg/lists.py::pkg.lists.sentence" in text, text

    failing = frozenset(f["node_id"] for f in summary_in_both([result.report_path])["failures"])
    assert len(failing) == 11
    suspect = SuspectGroup(key="pkg/lists.py:10", node_ids=failing)
    project = ProjectCode(root=str(root), packages=["pkg"])
    for failures_listed in (20, 2):
        summary = summary_in_both(
            [result.report_path], project=project, suspect=suspect, failures_listed=failures_listed
        )
        assert summary["failures"][0]["node_id"] == "tests/test_lists.py::test_pairs[0]"
        assert summary["groups"][0]["exception"] == "AssertionError"
