"""``pytest-mcp-server summarize`` on a run's report prints the failures of that run's
``execute_tests`` answer byte for byte: the engine writes each failure's whole text
(docs/ENGINE.md, *The shown traceback*), and the server adds only its headline and its
own sections (warnings, flaky tests, coverage, the report's path).

The real server over stdio runs the real pytest on a fixture project with several kinds
of failure (dict, list and long-string diffs, a deep exception, setup and teardown
errors, a test method's own ``self``, a restated string diff, a recursion, captured
output, one check copied into two modules); the CLI runs in a subprocess on the
``report_path`` of the answer's structured content, whatever format that report is,
with the budgets ``execute_tests`` uses. Run once per engine backend.
"""

from __future__ import annotations

import subprocess
import sys

from helpers.server_support import TYPED, Project, connect, run, text_of

from pytest_mcp_server.adapters.text import FULL_STORY_HINT
from pytest_mcp_server.domain.policy import EXECUTE_BUDGETS
from pytest_mcp_server.engine import BACKEND_ENV
from pytest_mcp_server.engine.models import Budgets

MORE_FAILURES = """\
class TestCart:
    def test_total(self):
        assert self.total([1, 2]) == 4

    def total(self, xs):
        return sum(xs)


def recurse(n):
    return recurse(n + 1)


def test_recursion():
    recurse(0)


def test_name():
    assert "B" == "C"
"""

SUM_CHECK = """\
def test_sum():
    assert sum([{a}, 2]) == {b}
"""
"""One check copied into two modules with other values: the answer folds the second
entry into ``same traceback as ...`` (render's fold of a repeated entry)."""

SERVER_SECTIONS = ("Warnings (", "Flaky tests", "Coverage", "More: ")
"""How the sections only the server writes start (render.render_execute)."""


def _without_server_sections(lines: list[str]) -> list[str]:
    """``lines`` (an answer's text after its first line) without the sections only the
    server writes: each runs from its title to the next blank line followed by a
    title, or to the end."""
    out: list[str] = []
    skipping = False
    for i, line in enumerate(lines):
        starts_section = i == 0 or not lines[i - 1]
        if line and starts_section and not line.startswith((" ", "- ")):
            skipping = line.startswith(SERVER_SECTIONS)
        if not skipping:
            out.append(line)
    while out and not out[-1]:
        out.pop()
    return out


def _budget_flags(budgets: Budgets) -> list[str]:
    """The CLI flags that give ``budgets`` (those differing from the defaults)."""
    defaults = Budgets()
    flags = []
    for name in Budgets.model_fields:
        if getattr(budgets, name) != getattr(defaults, name):
            flags += ["--" + name.replace("_", "-"), str(getattr(budgets, name))]
    return flags


def test_summarize_prints_the_failures_of_the_answer_byte_for_byte(tmp_path, backend):
    project = Project("every_outcome", tmp_path)
    (project.root / "tests" / "test_more.py").write_text(MORE_FAILURES)
    (project.root / "tests" / "test_sum_a.py").write_text(SUM_CHECK.format(a=1, b=4))
    (project.root / "tests" / "test_sum_b.py").write_text(SUM_CHECK.format(a=2, b=5))

    async def body():
        async with connect(project.params(*TYPED, env={BACKEND_ENV: backend}), "auto") as client:
            return await client.call_tool("execute_tests", {})

    result = run(body)
    answer = text_of(result)
    report = result.structured_content["report_path"]
    cli = [sys.executable, "-m", "pytest_mcp_server", "summarize", "--backend", backend, report]
    done = subprocess.run([*cli, *_budget_flags(EXECUTE_BUDGETS)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    printed = done.stdout.split("\n")

    # the same run: the headline's counts (the server's time is the run's wall time)
    assert answer.split(" in ")[0] == printed[0].split(" in ")[0]
    failures = answer.split("\n")[1:]
    assert "- FAILED tests/test_more.py::TestCart::test_total" in failures
    assert " same traceback as tests/test_sum_a.py::test_sum, with other values" in failures
    # the answer's Omitted line also says where the rest is, which the CLI's need not
    told = [line.removesuffix(". " + FULL_STORY_HINT) for line in failures]
    assert told != failures
    assert _without_server_sections(told) == _without_server_sections(printed[1:])
