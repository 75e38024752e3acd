"""The tools' workflows: ``Runner.execute``, ``Runner.discover``, ``Runner.summarize``.

No MCP import. A ``Runner`` is built once from a ``ServerConfig``; its methods take
validated parameter models (``tool_models``) and return result models, or raise
``ToolFailure``. They build pytest's argv only from validated fields (never a shell,
never a free-form argument, never ``-p`` from the agent), run it with
``process.run_process`` (its own process group, bounded output, killed with everything
it started), cwd = the project root, the server's own environment plus ``PYTHONPATH``
for the event plugin and the run's ``RUN_MARKER`` token; nothing from the agent.

Each run writes one record file, ``<artifacts>/runs/<project>-<hash>/<run id>/records.jsonl``
(``RECORDS_FILE``: the server's plugin's stream in pytest-reportlog's format, ``events``):
the report engine summarises it, the server follows it for progress and reads the
warnings, counts and the running test from it; only the newest ``KEEP_RUNS`` run
directories of a project are kept. With ``repeat``, one call makes several such runs,
one after the other, and compares each test's outcomes (``flaky``).

When a run times out or pytest dies (a signal, ``os._exit``), the answer still says what
happened: the record file names the test that was running and since when, and its
complete lines hold every finished test, summarised through the report engine as usual.
On a timeout the plugin is first asked for a stack dump (``STACK_DUMP_SIGNAL``, before the
group is killed); after a fatal signal, pytest's own faulthandler dump on stderr gives
the stack (``stacks``).
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import signal
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine
from enum import IntEnum
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from pytest_mcp_server.domain.config import ServerConfig
from pytest_mcp_server.domain.coverage import summarize_coverage
from pytest_mcp_server.domain.failures import FailureKind, ToolFailure, ToolFailureDetail, invalid
from pytest_mcp_server.domain.flaky import FlakyTest, OutcomeHistory, last_failing_run
from pytest_mcp_server.domain.policy import KILL_GRACE_S
from pytest_mcp_server.domain.tools import (
    DiscoverParams,
    DiscoverResult,
    ExecuteParams,
    ExecuteResult,
    RunStatus,
    SelectionParams,
    SummarizeParams,
    SummarizeResult,
)
from pytest_mcp_server.domain.validation import check_node_ids_exist, resolve_inside
from pytest_mcp_server.engine import summarize as engine_summarize
from pytest_mcp_server.engine.coverage import CoverageFormat, sniff_coverage
from pytest_mcp_server.engine.models import Budgets, Failure, ProjectCode, ReportError, ReportSummary
from pytest_mcp_server.run.coverage import COVERAGE_ARGV, coverage_env, finish_coverage, missing_coverage, project_lines
from pytest_mcp_server.run.events import (
    PLUGIN_DIR,
    PLUGIN_NAME,
    EventFollower,
    ProgressFn,
    RunEvents,
    read_collected,
    read_outcomes,
    read_run_events,
    stack_dump_armed,
)
from pytest_mcp_server.run.interpreter import Interpreter, find_python, probe_interpreter
from pytest_mcp_server.run.process import RUN_MARKER, ProcessOutcome, run_process, signal_name
from pytest_mcp_server.run.project import project_code
from pytest_mcp_server.run.stacks import fatal_error, parse_dump, test_stack

RECORDS_FILE = "records.jsonl"
"""A run's record file, in its run directory (the plugin's ``--mcp-records``): the run's
report (``report_path``)."""
STACKS_FILE = "stacks.txt"
"""Where the plugin's stack dump goes, in the run directory (``--mcp-stacks``)."""
RUNNING_MARKER = "running"
"""A file in a run directory while its pytest runs (``rotate`` never removes that run)."""

KEEP_RUNS = 20
"""Run directories kept per project (the newest; a run in progress is never removed)."""

FULL_ASSERTION_DETAIL_SINCE = (8, 0)
"""The first pytest with the ``verbosity_assertions`` ini option (pytest's changelog, 8.0.0);
runs on it get ``-o verbosity_assertions=2``, assertion explanations in full."""


class ExitCode(IntEnum):
    """pytest's exit statuses (``pytest.ExitCode``; pytest's docs, *Exit codes*), named
    here because the server never imports pytest."""

    OK = 0
    TESTS_FAILED = 1
    INTERRUPTED = 2
    INTERNAL_ERROR = 3
    USAGE_ERROR = 4
    NO_TESTS_COLLECTED = 5


_PYTEST_STATUSES: dict[int, RunStatus] = {
    ExitCode.OK: "passed",
    ExitCode.TESTS_FAILED: "failed",
    ExitCode.INTERRUPTED: "interrupted",
    ExitCode.NO_TESTS_COLLECTED: "no_tests",
}

STACK_DUMP_SIGNAL = signal.SIGUSR1
"""Sent to pytest when a run times out: the event plugin's faulthandler then dumps every
thread's stack into the run's stacks file (the plugin's ``STACK_DUMP_SIGNAL``)."""
STACK_DUMP_WAIT_S = 1.0
"""Seconds to wait for that dump to be written (it is written at once unless the process
is stopped; within ``policy.ON_TIMEOUT_S``)."""

ERROR_LINE_CHARS = 500
"""Characters kept of the error line quoted from a pytest that failed before running tests."""


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


class Runner:
    """The workflows behind the three tools, for one ``ServerConfig``.

    Holds no results between calls: only the configuration, the concurrency limit
    (``max_concurrent`` pytest processes) and the interpreter probe.
    """

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.root = config.root
        self.artifacts_base = config.artifacts_base
        key = hashlib.sha256(str(self.root).encode()).hexdigest()[:10]
        self.runs_dir = self.artifacts_base / "runs" / f"{self.root.name or 'root'}-{key}"
        self._slots = anyio.Semaphore(config.max_concurrent)
        self._probe_lock = anyio.Lock()
        self._interpreter: Interpreter | None = None

    # -- environment ----------------------------------------------------------------

    def child_env(self, *, run: bool = False) -> dict[str, str]:
        """The child's environment: the server's own, with the record plugin's directory
        first on ``PYTHONPATH``; for a run, a fresh ``RUN_MARKER`` token."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PLUGIN_DIR), env.get("PYTHONPATH", "")) if p)
        env.pop(RUN_MARKER, None)
        if run:
            env[RUN_MARKER] = secrets.token_hex(8)
        return env

    async def interpreter(self, *, refresh: bool = False) -> Interpreter:
        """The project's interpreter, probed once (``interpreter.probe_interpreter``).

        Raises ``ToolFailure(pytest_missing)``; a failed probe is retried on the next
        call (so installing pytest needs no restart), and ``refresh`` probes again.
        """
        async with self._probe_lock:
            if self._interpreter is None or refresh:
                python = str(find_python(self.config))
                self._interpreter = await probe_interpreter(python, cwd=self.root, env=self.child_env())
            return self._interpreter

    def project(self) -> ProjectCode:
        """The project's own code for the engine (``project_code.project_code``): the
        root's declared packages, and those installed from the root when the interpreter
        has been probed."""
        installed = self._interpreter.project_packages if self._interpreter is not None else ()
        return project_code(self.root, installed)

    # -- artifacts ------------------------------------------------------------------

    def new_run_dir(self) -> Path:
        """Create ``<runs_dir>/<run id>`` (ids sort by start time, UTC) and remove the oldest
        run directories beyond ``KEEP_RUNS``."""
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        now_ns = time.time_ns()  # one reading: the id's second and fraction must agree, or ids misorder
        seconds, fraction = divmod(now_ns, 1_000_000_000)
        run_id = (
            time.strftime("%Y%m%d-%H%M%S", time.gmtime(seconds)) + f"-{fraction:09d}-{secrets.token_hex(3)}"
        )  # UTC: no DST repeats
        run_dir = self.runs_dir / run_id
        run_dir.mkdir(mode=0o700)
        self.rotate()
        return run_dir

    def rotate(self) -> None:
        """Keep the newest ``KEEP_RUNS`` run directories of this project; a run still in
        progress (its ``RUNNING_MARKER`` was made within the maximum timeout) is never
        removed, however many newer runs there are."""
        try:
            runs = sorted(p for p in self.runs_dir.iterdir() if p.is_dir() and not p.is_symlink())
        except FileNotFoundError:
            return
        now = time.time()
        for old in runs[:-KEEP_RUNS]:
            try:
                if now - (old / RUNNING_MARKER).stat().st_mtime < self.config.max_timeout_s + 60:
                    continue
            except FileNotFoundError:
                pass
            shutil.rmtree(old, ignore_errors=True)

    # -- execute_tests --------------------------------------------------------------

    def execute_argv(self, params: ExecuteParams, interp: Interpreter, run_dir: Path) -> list[str]:
        """The exact argv of a run, built only from validated fields: the record plugin
        writing ``run_dir``'s ``RECORDS_FILE`` (and its stack dump into ``STACKS_FILE``)."""
        argv = [interp.python, "-m", "pytest", "-p", PLUGIN_NAME, f"--mcp-records={run_dir / RECORDS_FILE}"]
        argv.append(f"--mcp-stacks={run_dir / STACKS_FILE}")
        if interp.pytest_version >= FULL_ASSERTION_DETAIL_SINCE:
            # the whole differing values: pytest's default cuts them ("{'name': 'ali...", "use -vv to show")
            argv += ["-o", "verbosity_assertions=2"]
        if params.max_failures is not None:
            argv.append(f"--maxfail={params.max_failures}")
        if params.failfast:
            argv.append("-x")
        if params.last_failed:
            argv.append("--lf")
        if params.workers is not None:
            argv += ["-n", str(params.workers)]
        if params.coverage:
            argv += COVERAGE_ARGV
        return argv + selection_argv(params)

    async def execute(self, params: ExecuteParams, progress: ProgressFn | None = None) -> ExecuteResult:
        """Run the selected tests and summarise the report (the ``execute_tests`` tool).

        ``progress`` is awaited with (tests done, tests collected) as the run goes on.
        Refuses (before starting pytest) node ids that do not exist inside the root and
        ``workers`` without pytest-xdist. Raises ``ToolFailure`` for timeouts, crashes,
        usage and internal errors, and ``coverage`` without coverage.py and pytest-cov
        (``coverage_missing``); failing tests, collection errors (exit 2) and an empty
        selection (exit 5) are results. With ``coverage`` the run writes its data into
        the run directory and the result carries its ``coverage`` (``coverage_run``).
        With ``repeat`` above 1 the selection runs that many times
        (``_execute_repeated``).
        """
        check_node_ids_exist(params.node_ids, self.root)
        interp = await self.interpreter()
        if params.workers is not None and not interp.has_xdist:
            interp = await self.interpreter(refresh=True)
            if not interp.has_xdist:
                raise invalid(
                    "workers",
                    f"pytest-xdist is not installed in the project's interpreter {interp.python}; "
                    "omit workers, or install pytest-xdist there",
                )
        if params.coverage and missing_coverage(interp) is not None:
            interp = await self.interpreter(refresh=True)
            if (failure := missing_coverage(interp)) is not None:
                raise failure
        timeout = min(params.timeout_s or self.config.max_timeout_s, self.config.max_timeout_s)
        if params.repeat > 1:
            return await self._execute_repeated(params, interp, timeout, progress)
        return (await self._execute_run(params, interp, timeout, progress))[0]

    async def _execute_run(
        self, params: ExecuteParams, interp: Interpreter, timeout: float, progress: ProgressFn | None
    ) -> tuple[ExecuteResult, float]:
        """One complete run of ``execute_tests``: a fresh pytest in its own run directory
        (a pytest slot held while it runs), killed after ``timeout`` seconds, its record
        file summarised. Returns the result and the pytest process's wall time (seconds;
        the result's ``duration_s`` is pytest's own session time). Raises
        ``ToolFailure`` as ``execute`` says."""
        async with self._slots:
            run_dir = await anyio.to_thread.run_sync(self.new_run_dir)
            records = run_dir / RECORDS_FILE
            running = run_dir / RUNNING_MARKER
            running.touch()
            argv = self.execute_argv(params, interp, run_dir)
            watch = partial(EventFollower(records).follow, progress) if progress is not None else None
            stopped_at: list[float] = []  # when the timeout hook ran (unix time)
            on_timeout = partial(self._dump_stacks, records, run_dir / STACKS_FILE, stopped_at)
            keep = False
            try:
                measured = coverage_env(run_dir) if params.coverage else None
                outcome = await self._run(argv, timeout, watch, on_timeout, measured)
                ended_at = stopped_at[0] if stopped_at else time.time()
                run_events = await anyio.to_thread.run_sync(read_run_events, records, self.root)
                try:
                    status = self._status(outcome, argv, run_events, timeout)
                except ToolFailure as failure:
                    if failure.kind in ("timeout", "crashed"):
                        await self._explain_stop(failure, run_dir, run_events, ended_at, outcome, params.budgets())
                    raise
                summary = await self._summarize_run(records, params.budgets(), outcome, argv)
                coverage = None
                if params.coverage and params.repeat == 1:  # a repeated call combines all its runs at the end
                    coverage = await finish_coverage(interp.python, self.root, self.child_env(), run_dir)
                keep = True
            finally:
                with anyio.CancelScope(shield=True):
                    running.unlink(missing_ok=True)
                    if not keep:
                        shutil.rmtree(run_dir, ignore_errors=True)
        session_s = run_events.session_duration_s
        result = ExecuteResult(
            status=status,
            exit_code=outcome.exit_code,
            duration_s=round(session_s, 3) if session_s is not None else outcome.duration_s,
            command=argv,
            report_path=str(records),
            summary=summary,
            warnings=run_events.warnings,
            deselected=run_events.deselected,
            coverage=coverage,
        )
        return result, outcome.duration_s

    async def _execute_repeated(
        self, params: ExecuteParams, interp: Interpreter, timeout: float, progress: ProgressFn | None
    ) -> ExecuteResult:
        """Run the selection ``params.repeat`` times, one complete run after the other
        (``_execute_run``: a fresh pytest, its own run directory and reports, the argv
        of a single run), and find the tests whose outcome changed (``flaky.OutcomeHistory``, fed
        with each run's ``events.read_outcomes`` of its record file).

        ``timeout`` bounds the pytest time of all runs together (the processes' wall
        time): each run gets what the finished ones left. ``progress`` counts tests over all runs (done over the runs
        finished plus the current one; total as if every run left collects as many as
        the current one). Returns the last run's result with ``runs``,
        ``summary.counts.flaky`` and ``flaky`` (the first ``failures_listed`` flaky
        tests, each with the failure of its last failing run). A run that raises
        ``ToolFailure`` (a timeout, a crash) ends the call: the failure names the run
        and what the finished runs found (``_repeat_stop``).
        """
        history = OutcomeHistory()
        reports: list[str] = []
        spent = 0.0  # wall seconds of the finished runs' pytest processes
        tests_done = 0
        per_run: int | None = None
        result: ExecuteResult | None = None
        run_dirs: list[Path] = []
        for index in range(params.repeat):
            runs_left = params.repeat - index
            run_progress = (
                None if progress is None else partial(_progress_across_runs, progress, tests_done, runs_left, per_run)
            )
            try:
                if timeout - spent <= 0:
                    raise ToolFailure("timeout", "pytest was not started: no time was left.")
                result, wall_s = await self._execute_run(params, interp, timeout - spent, run_progress)
            except ToolFailure as failure:
                failure.detail = _repeat_stop(failure, index, params, timeout, spent, history)
                raise
            spent += wall_s
            outcomes = await anyio.to_thread.run_sync(read_outcomes, Path(result.report_path))
            history.add_run(outcomes)
            reports.append(result.report_path)
            run_dirs.append(Path(result.report_path).parent)
            tests_done += len(outcomes)
            per_run = len(outcomes)
        assert result is not None  # repeat >= 2: the loop ran
        flaky = history.flaky()
        listed = await self._flaky_failures(flaky[: params.failures_listed], reports, params.budgets())
        counts = result.summary.counts.model_copy(update={"flaky": len(flaky)})
        summary = result.summary.model_copy(update={"counts": counts})
        coverage = None
        if params.coverage:
            coverage = await finish_coverage(interp.python, self.root, self.child_env(), run_dirs[-1], run_dirs)
        return result.model_copy(
            update={"summary": summary, "runs": params.repeat, "flaky": listed, "coverage": coverage}
        )

    async def _flaky_failures(
        self, flaky: list[tuple[str, str]], reports: list[str], budgets: Budgets
    ) -> list[FlakyTest]:
        """``flaky`` (node id, pattern) as ``FlakyTest`` entries, each with the failure of
        its last failing run, read from that run's report (``reports``, in run order)
        through the report engine with a node-id selection, one pass per run. A report
        removed meanwhile (another call's runs rotated it away) leaves ``failure`` None."""
        by_run: dict[int, list[str]] = {}
        for node_id, pattern in flaky:
            run = last_failing_run(pattern)
            if run is not None:
                by_run.setdefault(run, []).append(node_id)
        failures: dict[tuple[int, str], Failure] = {}
        for run, node_ids in by_run.items():
            try:
                summary = await anyio.to_thread.run_sync(
                    partial(engine_summarize, [reports[run]], budgets=budgets, select=node_ids, project=self.project())
                )
            except ReportError:
                continue
            for failure in summary.failures:
                failures.setdefault((run, failure.node_id), failure)
        out: list[FlakyTest] = []
        for node_id, pattern in flaky:
            run = last_failing_run(pattern)
            failed_run = None if run is None else run + 1
            shown = failures.get((run, node_id)) if run is not None else None
            out.append(FlakyTest(node_id=node_id, pattern=pattern, failed_run=failed_run, failure=shown))
        return out

    async def _run(
        self,
        argv: list[str],
        timeout: float,
        watch: Callable[[], Coroutine[Any, Any, None]] | None = None,
        on_timeout: Callable[[int], Awaitable[None]] | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> ProcessOutcome:
        """Run ``argv`` in the root with the child's environment plus ``extra_env`` (the
        server's own variables, e.g. ``coverage_run.coverage_env``; never an agent's)."""
        env = self.child_env(run=True) | (extra_env or {})
        try:
            return await run_process(
                argv, cwd=self.root, env=env, timeout_s=timeout, watch=watch, on_timeout=on_timeout
            )
        except OSError as exc:
            raise ToolFailure(
                "pytest_missing",
                f"cannot start {argv[0]}: {exc}; start the server with --python pointing at the project's Python",
                command=argv,
            ) from None

    @staticmethod
    async def _dump_stacks(records: Path, stacks: Path, stopped_at: list[float], pid: int) -> None:
        """The timeout hook: note the time in ``stopped_at``, send pytest (``pid``) the
        stack-dump signal if the plugin armed it (the record file's first line says so),
        and its xdist workers (each armed its own ``<stacks>.<pid>``, and is in pytest's
        process group), and wait until the dumps stop growing (at most
        ``STACK_DUMP_WAIT_S``)."""
        stopped_at.append(time.time())
        if not stack_dump_armed(records):
            return  # not armed: the signal would kill pytest instead
        try:
            os.kill(pid, STACK_DUMP_SIGNAL)
        except OSError:
            return
        dumps = [stacks]
        for worker in _worker_dumps(stacks):
            try:
                if os.getpgid(int(worker.suffix[1:])) == pid:  # still one of this run's workers
                    os.kill(int(worker.suffix[1:]), STACK_DUMP_SIGNAL)
                    dumps.append(worker)
            except (OSError, ValueError):
                continue
        sizes: list[int] = []
        with anyio.move_on_after(STACK_DUMP_WAIT_S):
            while True:
                await anyio.sleep(0.05)
                now = [_size(path) for path in dumps]
                if all(now) and now == sizes:
                    return
                sizes = now

    async def _explain_stop(
        self,
        failure: ToolFailure,
        run_dir: Path,
        run_events: RunEvents,
        ended_at: float,
        outcome: ProcessOutcome,
        budgets: Budgets,
    ) -> None:
        """Add to a ``timeout`` or ``crashed`` failure what the record file says: the
        test that was running and for how long, its stack (the timeout's dump, or
        faulthandler's fatal-error report in stderr), and the summary of the tests that
        finished (the file's complete lines through the report engine). The message
        names the running test and its innermost frame."""
        update: dict[str, Any] = {}
        message = failure.detail.message
        running = next(iter(run_events.running), None)
        if failure.kind == "timeout":
            stacks = run_dir / STACKS_FILE
            text = "".join([await anyio.to_thread.run_sync(_read_text, p) for p in [stacks, *_worker_dumps(stacks)]])
            # the running test's function, to pick its thread among the xdist workers'
            function = running.rsplit("::", 1)[-1].split("[", 1)[0] if running else None
            stack, own_frame = test_stack(parse_dump(text), self.root, prefer_current=False, function=function)
        else:
            fatal = fatal_error(outcome.stderr_tail)
            stack, own_frame = test_stack(fatal[1], self.root, prefer_current=True) if fatal else ([], None)
            if fatal and outcome.exit_code < 0:
                # faulthandler's report says what the guess in the message only supposes
                message = (
                    f"pytest was killed by {signal_name(outcome.exit_code)} after {outcome.duration_s:g}s: "
                    f"{fatal[0]} (faulthandler's report is in stderr_tail)."
                )
        if run_events.running:
            node_id, started = next(iter(run_events.running.items()))
            update["running_test"] = node_id
            update["running_for_s"] = round(max(0.0, ended_at - started), 2)
            others = len(run_events.running) - 1
            also = f" (and {others} more)" if others else ""
            where = f", at {own_frame}" if own_frame else ""
            message += f" The test running was {node_id}{also}, for {update['running_for_s']:g}s{where}."
        elif own_frame:
            message += f" No test was running (collection, or a session fixture); pytest stood at {own_frame}."
        if stack:
            update["stack"] = stack
        records = run_dir / RECORDS_FILE
        # the engine reads the complete lines (a write cut by the kill is left out: its ``truncated``)
        if run_events.finished or run_events.collection_errors:
            try:
                update["summary"] = await anyio.to_thread.run_sync(
                    partial(engine_summarize, [str(records)], budgets=budgets, project=self.project())
                )
            except ReportError:
                pass  # the answer keeps the output tails
        update["message"] = message
        failure.detail = failure.detail.model_copy(update=update)

    @staticmethod
    def _failure(kind: FailureKind, message: str, outcome: ProcessOutcome, argv: list[str]) -> ToolFailure:
        return ToolFailure(
            kind,
            message,
            exit_code=outcome.exit_code if outcome.exit_code >= 0 else None,
            signal=signal_name(outcome.exit_code),
            command=argv,
            duration_s=outcome.duration_s,
            stdout_tail=outcome.stdout_tail or None,
            stderr_tail=outcome.stderr_tail or None,
        )

    def _status(self, outcome: ProcessOutcome, argv: list[str], run_events: RunEvents, timeout: float) -> RunStatus:
        """Map the exit to a status, or raise ``ToolFailure`` for execution failures
        (``run_events``: the run's record file, which says whether pytest's session
        finished)."""
        code = outcome.exit_code
        if outcome.timed_out:
            raise self._failure(
                "timeout",
                f"pytest did not finish within {timeout:g}s and was stopped: its process group was sent SIGTERM, "
                f"then SIGKILL after {KILL_GRACE_S:g}s. Run fewer tests (node_ids, markers, keywords), use workers, "
                "or raise timeout_s (the server allows up to "
                f"{self.config.max_timeout_s:g}s).",
                outcome,
                argv,
            )
        if code < 0:
            raise self._failure(
                "crashed",
                f"pytest was killed by {signal_name(code)} after {outcome.duration_s:g}s "
                "(out of memory, a crash in native code, or a test that killed its own process?); "
                "see the output tails.",
                outcome,
                argv,
            )
        if code == ExitCode.USAGE_ERROR:
            raise self._failure(
                "usage_error",
                "pytest refused the command line (exit 4): "
                + _error_line(outcome.stderr_tail + "\n" + outcome.stdout_tail),
                outcome,
                argv,
            )
        if code == ExitCode.INTERNAL_ERROR:
            raise self._failure(
                "internal_error",
                "pytest hit an internal error (exit 3), often a plugin or conftest hook raising: "
                + _last_line(outcome.stdout_tail or outcome.stderr_tail),
                outcome,
                argv,
            )
        if code not in _PYTEST_STATUSES:
            raise self._failure(
                "crashed",
                f"pytest exited with {code}, a status pytest itself never uses (a test or conftest called "
                "sys.exit/os._exit?); see the output tails.",
                outcome,
                argv,
            )
        if run_events.exit_status is None:
            raise self._failure(
                "crashed",
                f"pytest exited with {code} but its session never finished (no SessionFinish in {RECORDS_FILE}): "
                "the process ended before pytest did (a test called os._exit, or the interpreter crashed); "
                "see the output tails.",
                outcome,
                argv,
            )
        return _PYTEST_STATUSES[code]

    async def _summarize_run(
        self, report: Path, budgets: Budgets, outcome: ProcessOutcome, argv: list[str]
    ) -> ReportSummary:
        try:
            return await anyio.to_thread.run_sync(
                partial(engine_summarize, [str(report)], budgets=budgets, project=self.project())
            )
        except ReportError as exc:
            raise self._failure(
                "crashed", f"the report pytest wrote cannot be read ({exc.kind}): {exc}", outcome, argv
            ) from None

    # -- discover_tests -------------------------------------------------------------

    def discover_argv(self, params: DiscoverParams, interp: Interpreter, tmp: Path) -> list[str]:
        """The argv of a collect-only run: the record plugin writes ``tmp``'s
        ``RECORDS_FILE`` (the collected node ids and the collection errors)."""
        argv = [interp.python, "-m", "pytest", "-p", PLUGIN_NAME, f"--mcp-records={tmp / RECORDS_FILE}"]
        argv += ["--collect-only", "-qq"]
        return argv + selection_argv(params)

    async def discover(self, params: DiscoverParams) -> DiscoverResult:
        """Collect the selected tests without running them (the ``discover_tests`` tool).

        Node ids are read from the record file line by line; only the requested page and
        the per-file counts are kept, so a 100k-test suite costs little memory. The
        collection errors are the report engine's reading of the same file.
        """
        check_node_ids_exist(params.node_ids, self.root)
        interp = await self.interpreter()
        async with self._slots:
            tmp = Path(await anyio.to_thread.run_sync(partial(tempfile.mkdtemp, prefix="pytest-mcp-discover-")))
            try:
                records = tmp / RECORDS_FILE
                argv = self.discover_argv(params, interp, tmp)
                outcome = await self._run(argv, self.config.max_timeout_s)
                run_events = await anyio.to_thread.run_sync(read_run_events, records, self.root)
                self._status(outcome, argv, run_events, self.config.max_timeout_s)
                page = await anyio.to_thread.run_sync(partial(read_collected, records, params.offset, params.limit))
                summary = await self._summarize_run(records, Budgets(max_failures=0), outcome, argv)
            finally:
                with anyio.CancelScope(shield=True):
                    shutil.rmtree(tmp, ignore_errors=True)
        total, files, files_omitted, node_ids = page
        end = params.offset + len(node_ids)
        return DiscoverResult(
            total=total,
            files=files,
            files_omitted=files_omitted,
            node_ids=node_ids,
            next_offset=end if end < total else None,
            collection_errors=summary.collection_errors,
            duration_s=round(run_events.session_duration_s, 3)
            if run_events.session_duration_s is not None
            else outcome.duration_s,
        )

    # -- summarize_report -----------------------------------------------------------

    async def summarize(self, params: SummarizeParams) -> SummarizeResult:
        """Summarise existing report files (the ``summarize_report`` tool).

        Paths must be regular files inside the project root or the artifacts directory.
        With ``node_ids``, the engine selects those tests (or tests under those paths,
        ``engine.summarize(select=...)``, one pass) and the larger ``FULL_STORY`` budgets
        apply: failures, groups (with their counts), collection errors, slowest and
        ``omitted`` cover only the selected tests, counts stay the whole report's, and
        ``not_failing`` is the engine's ``unmatched``; the text then gives each listed
        failure in full (``full_story``). Coverage reports (coverage.py JSON, Cobertura
        XML) are answered with their ``coverage`` instead (``_summarize_coverage``). Raises
        ``ToolFailure(report_error)`` for a file that is not a readable report.
        """
        bases = [self.root, self.artifacts_base.resolve() if self.artifacts_base.exists() else self.artifacts_base]
        paths = [str(resolve_inside(p, bases, f"paths[{i}]", must_be_file=True)) for i, p in enumerate(params.paths)]
        formats = await anyio.to_thread.run_sync(lambda: [sniff_coverage(p) for p in paths])
        if any(formats):
            return await self._summarize_coverage(params, paths, formats)
        budgets = params.budgets()
        # an empty node_ids list means no filter (as the FULL_STORY choice in params.budgets())
        select = params.node_ids or None
        try:
            summary = await anyio.to_thread.run_sync(
                partial(engine_summarize, paths, budgets=budgets, select=select, project=self.project())
            )
        except ReportError as exc:
            raise _report_failure(exc, paths) from None
        return SummarizeResult(summary=summary, not_failing=summary.unmatched, full_story=select is not None)

    async def _summarize_coverage(
        self, params: SummarizeParams, paths: list[str], formats: list[CoverageFormat | None]
    ) -> SummarizeResult:
        """``summarize_report`` on coverage reports (``coverage_report.sniff_coverage``
        found one among ``paths``): all must be coverage reports, merged as coverage.py
        combines data; ``node_ids`` is refused (a coverage report names no tests)."""
        if params.node_ids:
            raise invalid("node_ids", "coverage reports hold no tests to select; omit node_ids")
        kinds = [kind for kind in formats if kind is not None]
        if len(kinds) != len(paths):
            other = paths[formats.index(None)]
            raise _report_failure(
                ReportError(
                    "mixed_formats",
                    other,
                    "this file is not a coverage report but others are; summarise test reports and coverage "
                    "reports in separate calls",
                ),
                paths,
            )
        try:
            lines = await anyio.to_thread.run_sync(project_lines, paths, kinds)
        except ReportError as exc:
            raise _report_failure(exc, paths) from None
        coverage = summarize_coverage(lines, root=str(self.root))
        return SummarizeResult(summary=None, not_failing=[], coverage=coverage)


def _report_failure(exc: ReportError, paths: list[str]) -> ToolFailure:
    """``ToolFailure(report_error)`` for a report that cannot be read, naming its
    argument (``paths[2]``)."""
    try:
        field = f"paths[{paths.index(exc.path)}]"
    except ValueError:
        field = "paths"
    return ToolFailure("report_error", f"{field}: {exc} ({exc.kind})", field=field, report_error_kind=exc.kind)


async def _progress_across_runs(
    progress: ProgressFn, done_before: int, runs_left: int, per_run_guess: int | None, done: int, total: int | None
) -> None:
    """Report one run's progress (``done`` of ``total`` tests) as progress over all runs
    of a repeated call: ``done_before`` tests finished in the earlier runs, and
    ``runs_left`` runs (this one included) of ``total`` tests each (``per_run_guess``,
    the previous run's, until this run has collected)."""
    per_run = total if total is not None else per_run_guess
    await progress(done_before + done, None if per_run is None else done_before + per_run * runs_left)


def _repeat_stop(
    failure: ToolFailure, index: int, params: ExecuteParams, timeout: float, spent: float, history: OutcomeHistory
) -> ToolFailureDetail:
    """The detail of a ``ToolFailure`` raised by run ``index`` (0-based) of
    ``params.repeat``, its message led by which run ended the call, for a timeout how the
    budget was spent (``timeout`` seconds for all runs, ``spent`` by the finished ones)
    and what to do, and how many flaky tests the finished runs found (``history``);
    ``runs_finished``, and ``flaky`` (the first ``failures_listed``, patterns only) say
    which (the text lists them, ``render.render_failure``). The lead comes first: the
    text caps the message line."""
    repeat = params.repeat
    finished = history.runs
    flaky = history.flaky()
    found = f"found {len(flaky) or 'no'} flaky test{'' if len(flaky) == 1 else 's'}"
    if failure.kind == "timeout":
        lead = f"Run {index + 1} of {repeat} ran out of time: timeout_s ({timeout:g}s) covers all {repeat} runs"
        if finished:
            lead += f", and {_runs_phrase(finished)} took {spent:.2f}s and {found}"
        lead += "; lower repeat or raise timeout_s."
    else:
        lead = f"Run {index + 1} of {repeat} failed" + (f" ({_runs_phrase(finished)} {found})." if finished else ".")
    return failure.detail.model_copy(
        update={
            "message": f"{lead} {failure.detail.message}",
            "runs_finished": finished,
            "flaky": [
                FlakyTest(node_id=node_id, pattern=pattern) for node_id, pattern in flaky[: params.failures_listed]
            ],
        }
    )


def _runs_phrase(count: int) -> str:
    """``"run 1"``, ``"runs 1-3"``: the first ``count`` runs."""
    return "run 1" if count == 1 else f"runs 1-{count}"


def _error_line(text: str) -> str:
    """pytest's own error line (``ERROR: not found: ...`` with its ``(...)`` detail, or
    argparse's ``...: error: ...``), else the last line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for i in range(len(lines) - 1, -1, -1):
        if re.match(r"(?i)error: (?!usage:)|\S+: error: ", lines[i]):
            detail = lines[i + 1] if i + 1 < len(lines) and lines[i + 1].startswith("(") else ""
            return (lines[i] + (" " + detail if detail else ""))[:ERROR_LINE_CHARS]
    return _last_line(text)


def _worker_dumps(stacks: Path) -> list[Path]:
    """The stack dumps xdist workers armed next to ``stacks`` (``<stacks>.<pid>``)."""
    return sorted(stacks.parent.glob(stacks.name + ".*"))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:ERROR_LINE_CHARS] if lines else "(no output)"
