"""Benchmarks of the report engine and the server: ``pytest-mcp-server bench ...``.

* ``generate``: deterministic synthetic JUnit XML / pytest-json-report files with their
  truth (``pytest_mcp_server.bench.generate``).
* ``reports``, ``shards``, ``suite``: the measurements (``pytest_mcp_server.bench.cli``).

The console script's ``bench`` subcommand calls ``main(argv_after_bench)``. The benchmarks
need the ``bench`` extra (``REQUIRED_MODULES``); the base install never imports them.
"""

from __future__ import annotations

import importlib
import sys

# Modules every bench mode needs (progress bars, tables), all from the ``bench`` extra in
# pyproject.toml. matplotlib, lxml and junitparser are in the extra too but optional:
# ``--plot`` and the alternative parsers report their absence themselves.
REQUIRED_MODULES = ("rich",)
INSTALL_HINT = "pip install rich"
"""What to run for ``REQUIRED_MODULES`` (works for a wheel and a checkout alike; from a
checkout ``pip install '.[bench]'`` adds the optional ones too)."""


def missing_modules() -> list[str]:
    """The names in ``REQUIRED_MODULES`` that cannot be imported here (empty when all can)."""
    missing = []
    for name in REQUIRED_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


def main(argv: list[str]) -> int:
    """Run ``pytest-mcp-server bench <mode> ...``; returns the exit status (2, with a
    message on stderr naming the missing packages and the install command, when the
    ``bench`` extra is not installed and the call is not for ``--help``)."""
    missing = missing_modules()
    if missing and not {"-h", "--help"} & set(argv):  # the help needs none of them
        print(
            f"pytest-mcp-server bench: the benchmarks need {', '.join(missing)}, which "
            f"{'is' if len(missing) == 1 else 'are'} not installed; install the bench extra: {INSTALL_HINT}",
            file=sys.stderr,
        )
        return 2
    from .cli import main as cli_main

    return cli_main(argv)
