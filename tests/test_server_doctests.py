"""Doctest failures in an answer read like any other failure: located relative to the
root, and the example's line written once.

The real server over stdio runs the real pytest with ``--doctest-modules`` (the
project's ``pytest.ini``) on a package whose docstrings hold a wrong expected value
(``DocTestFailure``: the failing example is the docstring's first line) and an example
that raises (``UnexpectedException``); once in one process and once with two xdist
workers (the controller then gets each report as a string). pytest writes a doctest's
location line with the absolute path (``/root/pkg/calc.py:2: DocTestFailure``), where
its tracebacks write paths relative to the invocation directory: the server's plugin
writes it relative, so the engine's location is ``pkg/calc.py``; and the answer's
message line does not repeat the traceback's first line. ``summarize_report`` on the
run's report gives the same locations.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp import StdioServerParameters
from server_support import connect, run, text_of

from pytest_mcp_server.domain.tools import ExecuteResult, SummarizeResult

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
    args = ["-m", "pytest_mcp_server", "--root", str(root), "--artifacts-dir", str(tmp_path / "artifacts")]
    params = StdioServerParameters(command=sys.executable, args=args)

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
        "pkg/boom.py::pkg.boom": ("UnexpectedException", "pkg/boom.py", 3),
    }, text
    assert "at pkg/calc.py:2" in text and "at pkg/boom.py:3" in text, text
    # the location lines are written relative too; the root appears only in Python's own
    # traceback of the unexpected exception (``File "/root/pkg/boom.py"``), as pytest prints it
    assert str(root) + "/pkg/calc.py" not in text, text
    # each example's line once: in the traceback, not also as the message line
    assert text.count(">>> add(1, 2)") == 1, text
    assert text.count("Explodes.") == 1, text
    assert "    DocTestFailure\n" in text and "    UnexpectedException\n" in text, text
    assert "Got:\n        3" in text, text

    summary = SummarizeResult.model_validate(summarized.structured_content).summary
    assert summary is not None
    assert {f.node_id: (f.exception, f.location.path, f.location.line) for f in summary.failures} == locations
    assert text_of(summarized).count(">>> add(1, 2)") == 1
