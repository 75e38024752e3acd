"""The sample answers in the docs are what the real server answers today.

A doc marks a sample with an HTML comment naming the call, right before its ``text``
fence::

    <!-- sample answer: execute_tests {"keywords": "totals or database"} on examples/demo_project -->
    ```text
    FAILED 1 failed, 1 error, 12 deselected in 0.55s
    ...
    ```

The test starts the real server over stdio (the SDK's client) on a copy of that project,
makes each marked call, and compares the answer's text with the fence, line for line;
only the session time of the first line (``in 0.55s``) may differ. When the answer's
shape changes, the failure shows the new text to paste into the doc.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys

from helpers.docs_text import ROOT, doc_names
from helpers.server_support import run, text_of
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

MARKER = re.compile(
    r"<!-- sample answer: (?P<tool>\w+) (?P<arguments>\{.*?\}) on (?P<project>[\w/.-]+) -->\n```text\n(?P<text>.*?)```",
    re.S,
)
SESSION_TIME = re.compile(r" in \d+(?:\.\d+)?s$")


def samples() -> list[tuple[str, int, str, dict, str, str]]:
    """(doc, line, tool, arguments, project, text) of every marked sample."""
    found = []
    for name in doc_names():
        text = (ROOT / name).read_text(encoding="utf-8")
        for m in MARKER.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            found.append((name, line, m["tool"], json.loads(m["arguments"]), m["project"], m["text"]))
    return found


def _without_time(text: str) -> list[str]:
    lines = text.rstrip("\n").split("\n")
    return [SESSION_TIME.sub(" in Ns", lines[0]), *lines[1:]]


def test_the_readme_has_a_sample_answer():
    assert any(doc == "README.md" for doc, *_ in samples()), "README.md has no marked sample answer"


def test_sample_answers_are_what_the_server_answers(tmp_path):
    marked = samples()
    projects = {project for *_, project, _ in marked}
    for project in projects:
        shutil.copytree(ROOT / project, tmp_path / project)

    async def answers() -> list[str]:
        out = []
        env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
        for project in sorted(projects):
            args = ["-m", "pytest_mcp_server", "--root", str(tmp_path / project)]
            args += ["--artifacts-dir", str(tmp_path / "artifacts")]
            params = StdioServerParameters(command=sys.executable, args=args, env=env)
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                for _doc, _line, tool, arguments, where, _text in marked:
                    if where == project:
                        out.append(text_of(await session.call_tool(tool, arguments)))
        return out

    got = iter(run(answers))
    problems = []
    for project in sorted(projects):
        for doc, line, tool, arguments, where, text in marked:
            if where != project:
                continue
            answer = next(got)
            if _without_time(answer) != _without_time(text):
                problems.append(f"{doc}:{line}: {tool} {json.dumps(arguments)} on {project} now answers:\n{answer}")
    assert not problems, "\n".join(problems)
