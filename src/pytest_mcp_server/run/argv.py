"""How the child pytest is started: its argv, built only from validated fields, its
environment, and pytest's exit statuses by name.

Never a shell, never a free-form argument, never ``-p`` from the agent: every option
here is the server's own, and an agent's node ids come after ``--`` (pytest reads no
option after it, whatever the id looks like). The child's environment is the server's
own plus ``PYTHONPATH`` for the record plugin and the run's ``RUN_MARKER`` token;
nothing from the agent.

The run keeps pytest's own verbosity. The server adds no ``-q``, ``-v`` or
``-o verbosity_*`` option, so a test and its report are what ``pytest`` run by hand in the
root gives (the project's ``addopts`` apply as they do there).

Why, from pytest's source (9.2 here; 8.4 and 7.4 compare the same levels, 7.4 through
``config.getoption("verbose")``):

* ``-o verbosity_assertions=2`` (what the server forced until this was measured) makes
  pytest render every compared value whole: ``saferepr_unlimited`` in
  ``assertion/util.py`` ``assertrepr_compare``, no ``maxsize`` in
  ``assertion/rewrite.py`` ``_get_maxsize_for_saferepr``, a pretty-printed ``Full diff``
  of any two sequences or dicts (``_compare_eq_iterable``, ``difflib.ndiff``) and no
  truncation (``truncate.py``). That changes how long a test takes and what it raises:
  on ``tests/fixtures/deep_repr`` one comparison took seconds instead of milliseconds,
  another ended in a RecursionError inside pytest's pretty-printer, and a 100 MB repr
  went into the report several times (benches/RESULTS.md, *Run like pytest*).
* ``-q`` (verbosity -1) renders assertions as the default (0) does: every threshold in
  ``_pytest/assertion`` is ``> 1``, ``>= 2``, ``< 1``, ``<= 0`` or ``< 2``, true or false
  alike for -1 and 0; so are the traceback's locals and arguments (``nodes.py``: ``> 1``,
  ``> 2``). But it is not harmless: a test, a fixture or a plugin reads
  ``config.getoption("verbose")`` / ``pytest.Config.get_verbosity()`` as -1, and
  pytest's own subtests report differs (``subtests.py``: ``get_verbosity(VERBOSITY_SUBTESTS) == 0``,
  which the server had to undo with ``-o verbosity_subtests=0``). What ``-q`` saved is
  output volume only (the header and a file name per test file on the terminal), of which
  the server keeps only a bounded tail (``run.process``), so it is left out too.

With the default verbosity pytest cuts the reprs of an assertion's explanation (about
30 characters a side on its first line, 240 elsewhere) and truncates the explanation
past 8 lines or 640 characters, but for the truncation and sequence diffs not when the
``CI`` or ``BUILD_NUMBER`` environment variable is set (``running_on_ci``): exactly as by
hand, in the server's environment. The
record plugin still bounds what one report may write (``REPORT_CAP`` in
``run/pytest_plugin/pytest_mcp_server_events.py``): a message or captured output pytest
never truncates.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence
from enum import IntEnum
from pathlib import Path

from pytest_mcp_server.domain.tools import ExecuteParams, SelectionParams
from pytest_mcp_server.run.coverage_run import COVERAGE_ARGV
from pytest_mcp_server.run.events import PLUGIN_DIR, PLUGIN_NAME
from pytest_mcp_server.run.interpreter import Interpreter
from pytest_mcp_server.run.process import RUN_MARKER

RECORDS_FILE = "records.jsonl"
"""A run's record file, in its run directory (the plugin's ``--mcp-records``): the run's
report (``report_path``)."""
STACKS_FILE = "stacks.txt"
"""Where the plugin's stack dump goes, in the run directory (``--mcp-stacks``)."""


class ExitCode(IntEnum):
    """pytest's exit statuses (``pytest.ExitCode``; pytest's docs, *Exit codes*), named
    here because the server never imports pytest."""

    OK = 0
    TESTS_FAILED = 1
    INTERRUPTED = 2
    INTERNAL_ERROR = 3
    USAGE_ERROR = 4
    NO_TESTS_COLLECTED = 5


def child_env(*, run: bool = False) -> dict[str, str]:
    """The child's environment: the server's own, with the record plugin's directory
    first on ``PYTHONPATH``; for a run, a fresh ``RUN_MARKER`` token (how the process
    control finds the run's processes that left its group)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PLUGIN_DIR), env.get("PYTHONPATH", "")) if p)
    env.pop(RUN_MARKER, None)
    if run:
        env[RUN_MARKER] = secrets.token_hex(8)
    return env


def selection_argv(params: SelectionParams) -> list[str]:
    """pytest's arguments for a validated selection: ``-m``, ``-k``, then ``--`` and the
    node ids (after ``--`` pytest reads no option, whatever the id looks like)."""
    argv: list[str] = []
    if params.markers:
        argv += ["-m", params.markers]
    if params.keywords:
        argv += ["-k", params.keywords]
    if params.node_ids:
        argv += ["--", *params.node_ids]
    return argv


def execute_argv(
    params: ExecuteParams,
    interp: Interpreter,
    run_dir: Path,
    plugin_options: Sequence[str] = (),
) -> list[str]:
    """The exact argv of an ``execute_tests`` run: the record plugin writing ``run_dir``'s
    ``RECORDS_FILE`` (and its stack dump into ``STACKS_FILE``) and keeping the project's
    record of failures (``--mcp-failures``: ``run.rundirs.FAILURES_FILE`` beside
    ``run_dir``, in place of pytest's cache plugins), with the server's further
    ``plugin_options`` (``run.recording.skip_options``), then the agent's validated
    options and selection (``last_failed`` selects from that record). No option of
    verbosity: pytest renders as it does by hand (the module's docstring says why)."""
    argv = [interp.python, "-m", "pytest", "-p", PLUGIN_NAME, f"--mcp-records={run_dir / RECORDS_FILE}"]
    argv.append(f"--mcp-stacks={run_dir / STACKS_FILE}")
    argv.append("--mcp-failures")
    argv += plugin_options
    if params.max_failures is not None:
        argv.append(f"--maxfail={params.max_failures}")
    if params.failfast:
        argv.append("-x")
    if params.last_failed:
        argv.append("--mcp-last-failed")
    if params.workers is not None:
        argv += ["-n", str(params.workers)]
    if params.coverage:
        argv += COVERAGE_ARGV
    return argv + selection_argv(params)


def discover_argv(
    params: SelectionParams, interp: Interpreter, tmp: Path, plugin_options: Sequence[str] = ()
) -> list[str]:
    """The argv of a collect-only run: the record plugin writes ``tmp``'s ``RECORDS_FILE``
    (the collected node ids and the collection errors), with the server's further
    ``plugin_options`` (``run.recording.skip_options``) before the agent's selection."""
    argv = [interp.python, "-m", "pytest", "-p", PLUGIN_NAME, f"--mcp-records={tmp / RECORDS_FILE}"]
    argv += ["--collect-only", "-qq", *plugin_options]
    return argv + selection_argv(params)
