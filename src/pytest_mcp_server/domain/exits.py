"""The console script's exit statuses by name (``pytest-mcp-server serve`` and
``summarize``; ``bench`` keeps its own). Imports nothing of the package, so the CLI names
them before it loads anything else."""

from __future__ import annotations

from enum import IntEnum


class CommandExit(IntEnum):
    """What a ``pytest-mcp-server`` process exits with. A server stopped by a signal exits
    with 128 + the signal's number, as a shell reports a process killed by it."""

    OK = 0
    """``summarize``: no test failed or errored; ``serve``: the client closed stdin."""
    TESTS_FAILED = 1
    """``summarize``: some test failed or errored."""
    USAGE = 2
    """An unknown command, a bad option, an input that cannot be read or is not a report,
    an address that cannot be bound: a message on stderr says which (argparse's status)."""
