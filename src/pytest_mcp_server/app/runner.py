"""What the three workflows share for one project: the ``Runner`` (configuration, the
pytest slots, the project's interpreter, its own code, its run directories, starting
pytest) and the mapping of pytest's exit to a run status or a tool failure.

No MCP import. The workflows are ``app.execute``, ``app.discover`` and
``app.summarize``; each takes a ``Runner`` and a validated parameter model and returns a
result model, or raises ``ToolFailure``.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from pytest_mcp_server.domain.config import ServerConfig
from pytest_mcp_server.domain.failures import FailureKind, ToolFailure
from pytest_mcp_server.domain.policy import ERROR_LINE_CHARS, EVERY_OUTCOME, KILL_GRACE_S
from pytest_mcp_server.domain.suspects import Suspect
from pytest_mcp_server.domain.tools import ExecuteResult, RunStatus
from pytest_mcp_server.engine import read_report
from pytest_mcp_server.engine import summarize as engine_summarize
from pytest_mcp_server.engine.models import (
    Budgets,
    CollectedIds,
    CollectedPage,
    ProjectCode,
    ReportError,
    ReportSummary,
    RunReport,
    Session,
    SuspectGroup,
)
from pytest_mcp_server.run.argv import RECORDS_FILE, ExitCode, child_env
from pytest_mcp_server.run.interpreter import Interpreter, find_python, probe_interpreter
from pytest_mcp_server.run.process import WINDOWS, ProcessOutcome, run_process, signal_name
from pytest_mcp_server.run.project import project_code
from pytest_mcp_server.run.rundirs import RunDirectories
from pytest_mcp_server.run.warm import WarmStart

PYTEST_STATUSES: dict[int, RunStatus] = {
    ExitCode.OK: "passed",
    ExitCode.TESTS_FAILED: "failed",
    ExitCode.INTERRUPTED: "interrupted",
    ExitCode.NO_TESTS_COLLECTED: "no_tests",
}
"""The run status of each exit that is a result (the others are tool failures)."""


class Runner:
    """The project of one ``ServerConfig``, as the workflows use it.

    Holds no results between calls: only the configuration, the concurrency limit
    (``slots``: ``max_concurrent`` pytest processes), the interpreter probe and the run
    directories (``run_dirs``).
    """

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.root = config.root
        self.artifacts_base = config.artifacts_base
        self.run_dirs = RunDirectories(self.root, self.artifacts_base, config.max_timeout_s)
        self.slots = anyio.Semaphore(config.max_concurrent)
        self._probe_lock = anyio.Lock()
        self._interpreter: Interpreter | None = None
        # the warm spare (run.warm); None with --no-warm-start
        self.warm = WarmStart(self.root, self.artifacts_base) if config.warm_start else None

    async def interpreter(self, *, refresh: bool = False) -> Interpreter:
        """The project's interpreter, probed once (``interpreter.probe_interpreter``).

        Raises ``ToolFailure(pytest_missing)``; a failed probe is retried on the next
        call (so installing pytest needs no restart), and ``refresh`` probes again.
        """
        async with self._probe_lock:
            if self._interpreter is None or refresh:
                python = str(find_python(self.config))
                self._interpreter = await probe_interpreter(python, cwd=self.root, env=child_env())
            return self._interpreter

    def project(self) -> ProjectCode:
        """The project's own code for the engine (``run.project.project_code``): the
        root's declared packages, and those installed from the root when the interpreter
        has been probed."""
        installed = self._interpreter.project_packages if self._interpreter is not None else ()
        return project_code(self.root, installed)

    async def project_of_reports(self, reports: list[Path]) -> ProjectCode:
        """The project code to summarise ``reports`` (resolved paths) with: the one
        recorded with the first of them that is a record file of this server's runs
        (``RunDirectories.recorded_project``: the code the run's own answer used), else
        ``project()`` once the interpreter is probed (its installed packages count as
        for a run; a probe that fails leaves the root's declared packages alone)."""
        for report in reports:
            recorded = await anyio.to_thread.run_sync(self.run_dirs.recorded_project, report)
            if recorded is not None:
                return recorded
        try:
            await self.interpreter()
        except ToolFailure:
            pass  # no pytest there: summarising a report needs none
        return self.project()

    async def run_pytest(
        self,
        argv: list[str],
        timeout: float,
        watch: Callable[[], Coroutine[Any, Any, None]] | None = None,
        on_timeout: Callable[[int], Awaitable[None]] | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> ProcessOutcome:
        """Run ``argv`` in the root (``process.run_process``: its own process group, bounded
        output, killed after ``timeout`` seconds with everything it started) with the
        child's environment plus ``extra_env`` (the server's own variables, e.g.
        ``run.coverage_run.coverage_env``; never an agent's). Raises
        ``ToolFailure(pytest_missing)`` when the interpreter cannot be started.

        With the warm start on (``run.warm``), a run without ``extra_env`` goes to the
        spare when it is there and nothing it imported could differ (``warm`` set); else
        it starts cold, ``cold_start`` saying why when a spare was there. After the run
        the next spare is started."""
        env = child_env(run=True) | (extra_env or {})
        cold_start: str | None = None
        if self.warm is not None and not extra_env:
            spare, cold_start = await self.warm.take(argv, env)
            if spare is not None:
                served = await self.warm.run(spare, argv, timeout, watch, on_timeout)
                if isinstance(served, ProcessOutcome):
                    await self._replenish(argv[0])
                    return replace(served, warm=True)
                cold_start = served
        try:
            outcome = await run_process(
                argv, cwd=self.root, env=env, timeout_s=timeout, watch=watch, on_timeout=on_timeout
            )
        except OSError as exc:
            raise ToolFailure(
                "pytest_missing",
                f"cannot start {argv[0]}: {exc}; start the server with --python pointing at the project's Python",
                command=argv,
            ) from None
        await self._replenish(argv[0])
        return replace(outcome, cold_start=cold_start)

    async def _replenish(self, python: str) -> None:
        """Start the next warm spare of ``python`` (after a run that was not cancelled)."""
        if self.warm is not None:
            await self.warm.replenish(python, child_env(run=True), self.project().packages)

    async def close(self) -> None:
        """Stop what the runner keeps between calls: the idle warm spare."""
        if self.warm is not None:
            await self.warm.close()

    async def read_records(
        self,
        records: Path,
        budgets: Budgets,
        outcome: ProcessOutcome,
        argv: list[str],
        project: ProjectCode | None = None,
        *,
        outcomes: bool = False,
        collected_page: CollectedPage | None = None,
    ) -> RunRecords:
        """A run's record file read once by the engine (``engine.read_report``) with
        ``project`` (default ``project()``), each test's outcome too when ``outcomes``, and
        the ``collected_page`` of a collect-only run's node ids when given
        (``RunRecords.collected``). Raises nothing: a file the engine cannot read (a pytest
        that died before writing it) reads as a session that never finished, its summary
        the ``crashed`` failure that ``RunRecords.summary`` raises."""
        if outcomes:
            budgets = budgets.model_copy(update={"max_outcomes": EVERY_OUTCOME})
        reading = partial(
            read_report,
            [str(records)],
            budgets=budgets,
            project=project or self.project(),
            collected_page=collected_page,
        )
        try:
            return RunRecords(await anyio.to_thread.run_sync(reading))
        except ReportError as exc:
            failure = process_failure(
                "crashed", f"the report pytest wrote cannot be read ({exc.kind}): {exc}", outcome, argv
            )
            return RunRecords(None, failure)


@dataclass(frozen=True)
class RunAnswer:
    """One run of ``execute_tests``: its ``result``, the pytest process's wall time
    (``wall_s``, seconds; the result's ``duration_s`` is pytest's own session time) and,
    when asked for, each test's outcome by node id in report order (``outcomes``)."""

    result: ExecuteResult
    wall_s: float
    outcomes: dict[str, str]


class RunRecords:
    """What the engine read of a run's record file (``Runner.read_records``): ``report``
    (None when the file could not be read, ``unreadable`` saying why)."""

    def __init__(self, report: RunReport | None, unreadable: ToolFailure | None = None) -> None:
        self.report = report
        self.unreadable = unreadable

    @property
    def session(self) -> Session:
        """What the file says of the session (an unread file: a session that never
        finished, nothing running)."""
        return self.report.session or Session() if self.report is not None else Session()

    @property
    def collected(self) -> CollectedIds:
        """The collected node ids' page asked for with ``collected_page`` (the total, tests
        per file, the page: ``Session.collected_ids``); empty when none was asked for or
        the file could not be read."""
        return self.session.collected_ids or CollectedIds()

    @property
    def outcomes(self) -> dict[str, str]:
        """Each test's outcome by node id, in report order (asked for with ``outcomes``)."""
        return dict(self.report.outcomes or {}) if self.report is not None else {}

    @property
    def tests_or_errors(self) -> bool:
        """Whether some test finished or some collection error was recorded."""
        return self.report is not None and bool(self.report.counts.total or self.report.collection_errors)

    def session_s(self) -> float | None:
        """pytest's session time (seconds), None when the session never finished."""
        finished = self.report is not None and self.session.exit_status is not None
        return self.report.duration_s if finished and self.report is not None else None

    def summary(self) -> ReportSummary:
        """The summary alone. Raises the ``crashed`` ``ToolFailure`` of a file that could
        not be read."""
        if self.report is None:
            assert self.unreadable is not None
            raise self.unreadable
        return self.report.summary()


async def regrouped(runner: Runner, records: Path, budgets: Budgets, suspect: Suspect) -> ReportSummary | None:
    """The run's summary read again with ``suspect``, the top suspect, as a cause
    (``engine.summarize``'s ``suspect``: the failures of its failing tests that have no
    frame of the code under test group as one, before ``max_groups`` is applied); None
    when the file cannot be read again."""
    group = SuspectGroup(key=f"{suspect.path}:{suspect.lines}", node_ids=suspect.failing_tests)
    reading = partial(engine_summarize, [str(records)], budgets=budgets, project=runner.project(), suspect=group)
    try:
        return await anyio.to_thread.run_sync(reading)
    except ReportError:
        return None


def process_failure(kind: FailureKind, message: str, outcome: ProcessOutcome, argv: list[str]) -> ToolFailure:
    """A ``ToolFailure`` of ``kind`` for a pytest process: ``message`` with the process's
    exit code or signal, argv, wall time and output tails."""
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


_HOW_STOPPED = (
    "its processes were ended"  # Windows: no SIGTERM (run.process)
    if WINDOWS
    else f"its process group was sent SIGTERM, then SIGKILL after {KILL_GRACE_S:g}s"
)


def run_status(
    outcome: ProcessOutcome, argv: list[str], session: Session, timeout: float, max_timeout_s: float
) -> RunStatus:
    """Map pytest's exit to a run status (``PYTEST_STATUSES``), or raise ``ToolFailure``
    for execution failures: ``timeout``, ``crashed`` (a signal, an exit status pytest never
    uses, or a session that never finished: ``session``, what the run's record file says,
    has no exit status), ``usage_error`` (exit 4) and ``internal_error`` (exit 3, or a session
    whose recorded end says 3 though the process ended otherwise). ``timeout``:
    the run's, ``max_timeout_s``: the server's ceiling (seconds), named in the message."""
    code = outcome.exit_code
    if outcome.timed_out:
        raise process_failure(
            "timeout",
            f"pytest did not finish within {timeout:g}s and was stopped: {_HOW_STOPPED}. Run fewer tests "
            f"(node_ids, markers, keywords), use workers, or raise timeout_s (the server allows up to "
            f"{max_timeout_s:g}s).",
            outcome,
            argv,
        )
    if code < 0:
        raise process_failure(
            "crashed",
            f"pytest was killed by {signal_name(code)} after {outcome.duration_s:g}s "
            "(out of memory, a crash in native code, or a test that killed its own process?); "
            "see the output tails.",
            outcome,
            argv,
        )
    if code == ExitCode.USAGE_ERROR:
        raise process_failure(
            "usage_error",
            "pytest refused the command line (exit 4): "
            + _error_line(outcome.stderr_tail + "\n" + outcome.stdout_tail),
            outcome,
            argv,
        )
    # the session's own end says 3 when an error after it (a hook, a MemoryError) left another status
    if code == ExitCode.INTERNAL_ERROR or session.exit_status == ExitCode.INTERNAL_ERROR:
        raise process_failure(
            "internal_error",
            "pytest hit an internal error (exit 3), often a plugin or conftest hook raising: "
            + _internal_error_line(outcome.stdout_tail + "\n" + outcome.stderr_tail),
            outcome,
            argv,
        )
    if code not in PYTEST_STATUSES:
        raise process_failure(
            "crashed",
            f"pytest exited with {code}, a status pytest itself never uses (a test or conftest called "
            "sys.exit/os._exit?); see the output tails.",
            outcome,
            argv,
        )
    if session.exit_status is None:
        raise process_failure(
            "crashed",
            f"pytest exited with {code} but its session never finished (no SessionFinish in {RECORDS_FILE}): "
            "the process ended before pytest did (a test called os._exit, or the interpreter crashed); "
            "see the output tails.",
            outcome,
            argv,
        )
    return PYTEST_STATUSES[code]


def _internal_error_line(text: str) -> str:
    """The exception of pytest's ``INTERNALERROR>`` traceback (its last such line, prefix
    removed), else the last line of ``text``."""
    found = [ln.split(">", 1)[1].strip() for ln in text.splitlines() if ln.startswith("INTERNALERROR>")]
    found = [ln for ln in found if ln]
    return found[-1][:ERROR_LINE_CHARS] if found else _last_line(text)


def _error_line(text: str) -> str:
    """pytest's own error line (``ERROR: not found: ...`` with its ``(...)`` detail, or
    argparse's ``...: error: ...``), else the last line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for i in range(len(lines) - 1, -1, -1):
        if re.match(r"(?i)error: (?!usage:)|\S+: error: ", lines[i]):
            detail = lines[i + 1] if i + 1 < len(lines) and lines[i + 1].startswith("(") else ""
            return (lines[i] + (" " + detail if detail else ""))[:ERROR_LINE_CHARS]
    return _last_line(text)


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:ERROR_LINE_CHARS] if lines else "(no output)"
