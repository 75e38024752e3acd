"""The server's policy: every number (and the names it goes by) that shapes what the
server does or answers, once.

The engine's own limits stay with the engine (``engine.models.Budgets`` and its bounds);
this module holds the server's choices on top of them, by what they govern. (The
plugin loaded into the child pytest imports nothing of the server: its own caps are in
``run/pytest_plugin``.)
"""

from __future__ import annotations

from pytest_mcp_server.engine.models import Budgets, budget_bounds

SERVER_NAME = "pytest-mcp-server"
"""The distribution name: the MCP server name, the console script, the cache directory."""

# -- Budget presets of the tools ------------------------------------------------

EXECUTE_BUDGETS = Budgets(max_traceback_lines=30, max_output_bytes=512, max_frame_context_lines=0)
"""``execute_tests``' default budgets: a run's answer is read in full at once, so its
tracebacks and captured output are shorter than the engine's defaults (``Budgets()``),
and each frame is one ``path:N: statement`` line (no source context: docs/ENGINE.md,
*The shown traceback*, rule 8), as in ``pytest --tb=short``: an answer costs fewer
tokens than that (benches/RESULTS.md, section 6); ``summarize_report`` with node ids
gives every frame whole."""

FULL_STORY = Budgets(
    max_traceback_lines=400,
    max_line_chars=1000,
    max_message_chars=4000,
    max_output_bytes=32_768,
    max_frame_context_lines=1000,
)
"""``summarize_report``'s default budgets when ``node_ids`` is given: the full story of a
few tests (long tracebacks, messages and output, every frame whole: its ``def`` line,
docstring and source up to the ``>`` line), without re-running them."""


EVERY_OUTCOME = budget_bounds("max_outcomes")[1]
"""The ``max_outcomes`` budget of a run whose every test's outcome the server needs (a
``repeat``, an ``affected`` run, ``coverage``'s suspects): the most the engine allows."""


# -- What an answer shows --------------------------------------------------------

LINE_CHARS = 400
"""Characters kept per line of an ``execute_tests`` text (a longer line keeps
``LINE_CHARS - 1`` and ends with ``…``). Longer than any line the engine keeps with
``execute_tests``' budgets (traceback lines of 200 characters, messages of 300 after an
exception name), so it cuts what the engine does not: lines of captured output, node
ids, paths."""

SLOW_S = 1.0
"""A test is named as slow when it took at least this many seconds (shorter ones are
not worth an agent's attention)."""

ALSO_IN_IDS = 3
"""Node ids named on a group's ``also in`` line (the rest are counted)."""

FLAKY_LISTED_IN_ERRORS = 10
"""Flaky tests of the finished runs listed in the text of a repeated call that failed."""


# -- Limits on what an agent may send --------------------------------------------

# Oversized lists or strings are refused, not cut.
MAX_NODE_IDS = 500
MAX_NODE_ID_CHARS = 1000
MAX_EXPRESSION_CHARS = 1000
MAX_REPORT_PATHS = 64
MAX_PATH_CHARS = 4096

# Largest budgets an agent may ask for (the engine accepts more; an answer this large
# would not help a model).
MAX_FAILURES_LISTED = 1000
EXECUTE_MAX_TRACEBACK_LINES = 2000
EXECUTE_MAX_OUTPUT_BYTES = 262_144
MAX_WORKERS = 64

MAX_REPEAT = 20
"""Most runs of one ``execute_tests`` call (``repeat``)."""

MAX_DISCOVER_OFFSET = 10_000_000
MAX_DISCOVER_LIMIT = 2000
DEFAULT_DISCOVER_LIMIT = 100
"""``discover_tests``' page: largest ``offset``, largest and default ``limit``."""


# -- Server options --------------------------------------------------------------

DEFAULT_MAX_TIMEOUT_S = 600.0
"""``--max-timeout`` when not given, seconds."""

TIMEOUT_LIMIT_S = 7 * 24 * 3600.0
"""The largest timeout anyone may set (server option or tool argument), seconds: a week."""

DEFAULT_MAX_CONCURRENT = 2
"""``--max-concurrent`` when not given: the machine's cores are shared with the tests."""

MAX_CONCURRENT_LIMIT = 64
"""The largest ``--max-concurrent``."""


DEFAULT_TASK_AFTER_S = 30.0
"""``--task-after`` when not given, seconds: an ``execute_tests`` call of a client that opted
in to tasks becomes a task when it is expected to run this long, or has run this long
without an answer (docs/SERVER.md, *Tasks*). Well below the two minutes after which
Claude Code is reported to move a plain call to the background, where it does not survive
the session."""

DEFAULT_TASK_TTL_S = 3600.0
"""``--task-ttl`` when not given, seconds: how long a task's answer is kept after its run
ended (its record file stays in its run directory after that)."""


# -- Coverage answers ------------------------------------------------------------

COVERAGE_FILES_LISTED = 20
"""Files with missed lines listed in a coverage answer (most missed lines first); the
others are counted in ``coverage.omitted.files``. The same number bounds the files of
``changed_not_run`` (the rest in ``coverage.omitted.changed_files``)."""

RANGE_CHARS = 160
"""Characters of missed-line ranges kept per file (``7, 12-13, ...``); the line numbers
cut are counted in ``coverage.omitted.lines``."""

SUSPECTS_LISTED = 3
"""Changed hunks an answer names as run by the failing tests (``domain.suspects``), best
first."""


# -- Running pytest --------------------------------------------------------------

TAIL_BYTES = 8192
"""Bytes of a child's stdout and of its stderr kept (the end)."""
OUTPUT_FILE_BYTES = 8 << 20
"""Bytes a child's stdout or stderr file may hold before the server keeps its tail and
empties it (checked every ``OUTPUT_CHECK_S``): the disk a run's output can take."""
OUTPUT_CHECK_S = 1.0
"""Seconds between two checks of a running child's output files against ``OUTPUT_FILE_BYTES``."""

KILL_GRACE_S = 2.0
"""Seconds between SIGTERM and SIGKILL when a run is stopped (POSIX; Windows has no SIGTERM)."""

KILL_POLL_S = 0.03
"""Seconds between two looks at a stopped run's processes (``run.process.kill_group``)."""

KILL_REPEATS = 25
"""Kills sent to a run's processes, ``KILL_POLL_S`` apart, before the server gives up on
one that still runs (logged): a kill cannot be ignored, the repeats catch forks."""

PROCESS_CLOCK_SLACK_S = 2.0
"""Seconds before a run's start that a process may have been created and still be looked
at as the run's: psutil's creation times and ``time.time()`` differ by up to a second on
Linux (its boot time is whole seconds)."""

INTERRUPT_GRACE_S = 5.0
"""Seconds a run interrupted on request (``run.process.Interrupt``: SIGINT, as Ctrl-C)
gets to end its session and report what finished before its group is killed."""

ON_TIMEOUT_S = 1.5
"""Seconds the ``on_timeout`` hook of ``run_process`` may take before the group is killed."""

PROBE_TIMEOUT_S = 60.0
"""Seconds the project's interpreter gets to answer the probe (a cold start on a slow
disk can take long)."""

SPARE_READY_WAIT_S = 30.0
"""Seconds at most a call waits for the warm spare to finish its preload (``run.warm``)
before it is discarded and the run starts cold."""

SPARE_READY_FACTOR = 3.0
"""A preload imports what the last run through a spare imported, so that run's time (or
the last preload's) bounds it: one still going this many times that after its start
hangs (``run.warm``), waited for at least ``SPARE_READY_FLOOR_S``."""

SPARE_READY_FLOOR_S = 2.0
"""Seconds a call always waits for a preloading warm spare (a first preload has nothing
to compare with, and a loaded machine slows any)."""

SPARE_POLL_S = 0.005
"""Seconds between two looks for a preloading warm spare's ready file (only while a call
waits for it)."""

SPARE_EXCLUDED_MAX = 64
"""Top-level modules the warm start leaves out of every preload after one was found
unsafe to import ahead of a run (it warned, raised, imported the project or left a
project file open); past this many, warm starts stop for the server's life."""

STALE_RUN_GRACE_S = 60.0
"""A run directory whose ``running`` marker is older than the longest a run may take plus
this many seconds belongs to a run that died: rotation may remove it."""
KEEP_RUNS = 20
"""Run directories kept per project (the newest; a run in progress is never removed)."""

STACK_DUMP_WAIT_S = 1.0
"""Seconds to wait for a timeout's stack dump to be written (it is written at once unless
the process is stopped; within ``ON_TIMEOUT_S``)."""

ERROR_LINE_CHARS = 500
"""Characters kept of the error line quoted from a pytest that failed before running tests."""

STACK_FRAMES = 6
"""Frames kept of the running test's stack (the outermost two and the innermost rest)."""

GIT_TIMEOUT_S = 10.0
"""Seconds each git command may take before the change is treated as unknown."""

REPORT_TIMEOUT_S = 120.0
"""Seconds the project's interpreter gets to combine the data and write the JSON report."""


# -- Affected runs (the test map) ------------------------------------------------

AFFECTED_FILES_NAMED = 3
"""Changed files the first line of an ``affected`` answer names."""

AFFECTED_FILES_KEPT = 20
"""Changed files a selection keeps in its structured content (``Selection.changed_files``)."""

MONITORING_PYTHON = (3, 12)
"""The first Python whose per-test recorder is the plugin's own on ``sys.monitoring``
(PEP 669, new in 3.12); older ones record through coverage.py's C tracer, which needs
coverage.py installed (coverage.py's own sys.monitoring core records no dynamic
contexts: coverage.py issues #2150 and #2200)."""

BLOCKS_KEPT = 4096
"""Files whose parsed blocks (``domain.blocks.file_blocks``) the server keeps between
``affected`` calls, each under its stat key: a file unchanged since is not parsed again
(parsing is most of the map's upkeep after a run; the oldest go first)."""
STATEMENT_SHOWN_CHARS = 60
"""Characters of a module-level statement a notice shows when it names the statement
that made a change reach tests through imports (``domain.elements``: ``runs register(f)
at import``)."""
DOTTED_NAME_CHARS = 200
"""The longest string constant read as a dotted name a piece of code refers to
(``mock.patch("pkg.mod.RATE")``; ``domain.elements.referenced_names``); longer ones are
text."""
MAP_BUSY_TIMEOUT_S = 30.0
"""Seconds a write to the test map waits for another call's transaction on the same map."""
MAP_READ_TIMEOUT_S = 1.0
"""Seconds a plain call's read of the test map (``run.testmap.read_only_map``, for its
suspects) waits for the map when SQLite holds it exclusively (recovery after a crash);
beyond, the answer has no suspects. A WAL reader never waits for a writer otherwise."""


# -- Tasks (the MCP Tasks extension, adapters/mcp/tasks.py) -------------------------

TASK_POLL_S = 2.0
"""The poll interval a task suggests (``pollIntervalMs``), seconds: a status message
changes with every few tests, and a ``tasks/get`` costs next to nothing."""

TASKS_HELD = 128
"""Tasks held in memory at once, working and finished (at most ``--max-concurrent`` of them
working); beyond it the oldest finished task is forgotten before its TTL (its run's
record file stays in its run directory). Above ``MAX_CONCURRENT_LIMIT``."""

TASK_ANSWERS_BYTES = 32 << 20
"""Bytes of finished tasks' answers (their ``CallToolResult`` as JSON) held at once; beyond
it the oldest finished tasks are forgotten before their TTL (the newest is always kept)."""

TASKS_FORGOTTEN = 4096
"""Ids of expired or forgotten tasks remembered, so that ``tasks/get`` says the task has
expired (and where its run's record file is) rather than that it never existed."""

DURATIONS_KEPT = 50_000
"""Tests whose recorded duration (``run.durations``) the server keeps to tell how long a
call will take at least; a test beyond them is not counted (the estimate stays a lower
bound)."""


# -- HTTP transport --------------------------------------------------------------

DEFAULT_HTTP_HOST = "127.0.0.1"
"""``--host`` when not given: this machine only."""

DEFAULT_HTTP_PORT = 8765
"""``--port`` when not given."""

TOKEN_ENV = "PYTEST_MCP_SERVER_TOKEN"
"""The environment variable a bearer token may come from (``--token-file`` wins)."""

MIN_TOKEN_CHARS = 16
"""Shortest token accepted: 16 characters of base64url are 96 bits, beyond guessing over HTTP."""

MAX_REQUEST_BODY_BYTES = 4 * 1024 * 1024
"""Largest request body, bytes (413 beyond). 4 MiB is above the largest call the tools
accept, ``MAX_NODE_IDS`` node ids of ``MAX_NODE_ID_CHARS`` characters each
written as ``\\uXXXX`` escapes (3 MB), so it never refuses a call validation would take."""

MAX_SESSIONS = 32
"""Open 2025-11-25 sessions at once (503 for one more); 2026-07-28 requests open none."""

MAX_CONNECTIONS = 128
"""Open connections and requests at once (uvicorn's ``limit_concurrency``; 503 beyond). A
2025-11-25 client holds two (its notification stream and a call), a 2026-07-28 call one."""

SESSION_IDLE_TIMEOUT_S = 30 * 60.0
"""A 2025-11-25 session with no request in flight for this long is closed, seconds (its
runs, if any, are killed): the end of a client that vanished without closing its session."""

SHUTDOWN_GRACE_S = 5
"""On SIGTERM/SIGINT/SIGHUP, how long the stopped calls may take to kill their pytest
process groups (SIGTERM, then SIGKILL after ``KILL_GRACE_S``) and answer, and then
how long open connections may take to close before uvicorn cancels them, seconds."""
ANSWER_FLUSH_S = 0.5
"""Seconds a shutting-down HTTP server gives the answers of the calls it stopped to leave
over their streams (a legacy-era SSE stream is written by the session's own task) before
it closes the streams: under load, closing at once cut an answer off."""

MAX_FILES_LISTED = 500
"""Files ``discover_tests`` lists with their test counts, the first in collection order
(the others are counted): the ``max_files`` of the page it asks of the report engine
(``engine.models.CollectedPage``), and its cap with ``affected``."""
DISCOVER_FILES_SHOWN = 30
"""Files shown with their test counts in ``discover_tests``' text (the largest first)."""
