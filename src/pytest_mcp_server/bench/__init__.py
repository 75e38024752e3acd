"""Benchmarks of the report engine and the server: ``pytest-mcp-server bench ...``.

* ``generate``: deterministic synthetic JUnit XML / pytest-json-report files with their
  truth (``pytest_mcp_server.bench.generate``).
* ``reports``, ``shards``, ``suite``: the measurements (``pytest_mcp_server.bench.cli``).

The console script's ``bench`` subcommand calls ``main(argv_after_bench)``.
"""

from __future__ import annotations


def main(argv: list[str]) -> int:
    """Run ``pytest-mcp-server bench <mode> ...``; returns the exit status."""
    from .cli import main as cli_main

    return cli_main(argv)
