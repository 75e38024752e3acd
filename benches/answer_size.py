#!/usr/bin/env python
"""Size of ``execute_tests``' answer against ``pytest -q --tb=short`` on the fixture projects.

For each project (default: ``every_outcome`` and ``many_failures`` from ``tests/fixtures``),
copied to a temporary directory, it runs the real workflow in-process
(``app.execute.execute_tests`` with default arguments, then ``to_mcp_result`` as the server
does, in the default ``structured`` view) and ``python -m pytest -q --tb=short -p
no:cacheprovider`` in the same copy, and prints one row per project: text bytes (the
answer's text block: what a text-only client's model reads), structured bytes (the
structured content's compact JSON, as ``JSON.stringify`` writes it: what a
structured-only client's model reads, ``benches/real_bugs.py``'s ``compact_json``), wire
bytes (the JSON of the whole ``CallToolResult``: both), and the bytes of pytest's own
stdout; next to each, its o200k tokens (``benches/tokens.py``), and the text's and the
structured content's tokens over pytest's.

Usage::

    python benches/answer_size.py [--show PROJECT] [PROJECT ...]

``--show`` prints that project's text block too. Exit status 0; nothing is asserted
(``tests/server/test_server_answer_size.py`` holds the bounds).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
from tokens import count_tokens  # benches/tokens.py: this script's directory is on sys.path

from pytest_mcp_server.adapters.mcp.catalogue import TOOLS_BY_NAME
from pytest_mcp_server.adapters.mcp.server import to_mcp_result
from pytest_mcp_server.adapters.mcp.views import DEFAULT_VIEW
from pytest_mcp_server.adapters.selection_text import render_execute_answer
from pytest_mcp_server.app.execute import execute_tests
from pytest_mcp_server.app.runner import Runner
from pytest_mcp_server.domain.config import ServerConfig
from pytest_mcp_server.domain.tools import ExecuteParams

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"


def measure(name: str, work: Path) -> tuple[str, str, str, str]:
    """(answer text, structured content's compact JSON, wire JSON, pytest --tb=short
    stdout) of project ``name``, in the default (``structured``) view."""
    root = work / name
    shutil.copytree(FIXTURES / name, root)
    runner = Runner(ServerConfig(root=root, artifacts_dir=work / f"{name}-artifacts"))
    result = anyio.run(execute_tests, runner, ExecuteParams())
    text = render_execute_answer(result)
    answer = to_mcp_result(TOOLS_BY_NAME["execute_tests"], result, DEFAULT_VIEW)
    structured = json.dumps(answer.structured_content, separators=(",", ":"), ensure_ascii=False)
    wire = answer.model_dump_json(by_alias=True, exclude_none=True)
    short = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--tb=short", "-p", "no:cacheprovider"],
        cwd=root,
        capture_output=True,
        check=False,
    ).stdout.decode(errors="replace")
    return text, structured, wire, short


def main() -> int:
    """Measure the projects named on the command line and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("projects", nargs="*", default=["every_outcome", "many_failures"])
    parser.add_argument("--show", action="append", default=[], help="print this project's text block")
    args = parser.parse_args()
    print(
        f"{'project':<16} {'text B':>7} {'text tok':>8} {'struct B':>8} {'struct tok':>10} {'wire B':>7} "
        f"{'wire tok':>8} {'--tb=short B':>12} {'--tb=short tok':>14} {'tok text/short':>14} {'tok struct/short':>16}"
    )
    with tempfile.TemporaryDirectory(prefix="answer-size-") as tmp:
        for name in args.projects:
            text, structured, wire, short = measure(name, Path(tmp))
            text_bytes, structured_bytes = len(text.encode()), len(structured.encode())
            wire_bytes, short_bytes = len(wire.encode()), len(short.encode())
            text_tokens, structured_tokens = count_tokens(text), count_tokens(structured)
            wire_tokens, short_tokens = count_tokens(wire), count_tokens(short)
            print(
                f"{name:<16} {text_bytes:>7} {text_tokens:>8} {structured_bytes:>8} {structured_tokens:>10} "
                f"{wire_bytes:>7} {wire_tokens:>8} {short_bytes:>12} {short_tokens:>14} "
                f"{text_tokens / short_tokens if short_tokens else 0:>14.2f} "
                f"{structured_tokens / short_tokens if short_tokens else 0:>16.2f}"
            )
            if name in args.show:
                print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
