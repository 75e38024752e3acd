#!/usr/bin/env python
"""Size of ``execute_tests``' answer against ``pytest -q --tb=short`` on the fixture projects.

For each project (default: ``every_outcome`` and ``many_failures`` from ``tests/fixtures``),
copied to a temporary directory, it runs the real workflow in-process
(``app.execute.execute_tests`` with default arguments, then ``to_mcp_result`` as the server does)
and ``python -m pytest -q --tb=short -p no:cacheprovider`` in the same copy, and prints
one row per project: text bytes (the answer's text block), wire bytes (the JSON of the
whole ``CallToolResult``: content and structured content, as ``benches/real_bugs.py``
measures it), their ratio, and the bytes of pytest's own stdout; next to each, its o200k
tokens (``benches/tokens.py``), and the answer's tokens over pytest's.

Usage::

    python benches/answer_size.py [--show PROJECT] [PROJECT ...]

``--show`` prints that project's text block too. Exit status 0; nothing is asserted
(``tests/server/test_server_answer_size.py`` holds the bounds).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
from tokens import count_tokens  # benches/tokens.py: this script's directory is on sys.path

from pytest_mcp_server.adapters.mcp.catalogue import TOOLS_BY_NAME
from pytest_mcp_server.adapters.mcp.server import to_mcp_result
from pytest_mcp_server.adapters.text import render_execute
from pytest_mcp_server.app.execute import execute_tests
from pytest_mcp_server.app.runner import Runner
from pytest_mcp_server.domain.config import ServerConfig
from pytest_mcp_server.domain.tools import ExecuteParams

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"


def measure(name: str, work: Path) -> tuple[str, str, str]:
    """(answer text, wire JSON, pytest --tb=short stdout) of project ``name``."""
    root = work / name
    shutil.copytree(FIXTURES / name, root)
    runner = Runner(ServerConfig(root=root, artifacts_dir=work / f"{name}-artifacts"))
    result = anyio.run(execute_tests, runner, ExecuteParams())
    text = render_execute(result)
    wire = to_mcp_result(TOOLS_BY_NAME["execute_tests"], result).model_dump_json(by_alias=True, exclude_none=True)
    short = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--tb=short", "-p", "no:cacheprovider"],
        cwd=root,
        capture_output=True,
        check=False,
    ).stdout.decode(errors="replace")
    return text, wire, short


def main() -> int:
    """Measure the projects named on the command line and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("projects", nargs="*", default=["every_outcome", "many_failures"])
    parser.add_argument("--show", action="append", default=[], help="print this project's text block")
    args = parser.parse_args()
    print(
        f"{'project':<16} {'text B':>7} {'text tok':>8} {'wire B':>7} {'wire tok':>8} {'wire/text':>9} "
        f"{'--tb=short B':>12} {'--tb=short tok':>14} {'tok text/short':>14}"
    )
    with tempfile.TemporaryDirectory(prefix="answer-size-") as tmp:
        for name in args.projects:
            text, wire, short = measure(name, Path(tmp))
            text_bytes, wire_bytes, short_bytes = len(text.encode()), len(wire.encode()), len(short.encode())
            text_tokens, wire_tokens, short_tokens = count_tokens(text), count_tokens(wire), count_tokens(short)
            print(
                f"{name:<16} {text_bytes:>7} {text_tokens:>8} {wire_bytes:>7} {wire_tokens:>8} "
                f"{wire_bytes / text_bytes:>9.2f} {short_bytes:>12} {short_tokens:>14} "
                f"{text_tokens / short_tokens if short_tokens else 0:>14.2f}"
            )
            if name in args.show:
                print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
