"""The tools' workflows: find the project's interpreter, run pytest safely, summarise.

No MCP import here. ``Runner`` is built once from a ``ServerConfig``; its methods
``execute``, ``discover`` and ``summarize`` take validated parameter models
(``tools.py``) and return result models, or raise ``ToolFailure``.

How pytest is run (``run_process``):

* ``python -m pytest`` with an argv built only from validated fields (never a shell,
  never a free-form argument, never ``-p`` from the agent), cwd = the project root,
  stdin = /dev/null, the server's own environment plus ``PYTHONPATH`` for the event
  plugin (``_pytest_plugin/pytest_mcp_server_events.py``); nothing from the agent.
* In its own session/process group (``start_new_session``). Timeout, cancellation and
  server shutdown kill the whole group: SIGTERM, then SIGKILL after ``KILL_GRACE_S``.
  After a normal exit the group is also killed, so processes a test left behind do not
  survive the run. Processes that left the group (``setsid``) are found by the run's
  token in their environment (``RUN_MARKER``, Linux) and killed with it. If the server
  itself dies, the event plugin in pytest does the same (``PR_SET_PDEATHSIG``).
* stdout/stderr are read in chunks as they come and only a bounded tail is kept
  (``TAIL_BYTES``), so a test printing 1 GB does not grow the server's memory.
* Progress: the plugin appends a line per finished test to an events file, which the
  server follows (``EventFollower``) and reports at most ``PROGRESS_INTERVAL_S`` apart.

Each run's reports are kept in ``<artifacts>/<project>-<hash>/<run id>/`` (JUnit XML
always, pytest-json-report when the project has the plugin); only the newest
``KEEP_RUNS`` run directories of a project are kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import anyio
import anyio.abc

from .engine import summarize as engine_summarize
from .models import Budgets, ReportError, ReportSummary
from .tools import (
    DiscoverParams,
    DiscoverResult,
    ExecuteParams,
    ExecuteResult,
    RunStatus,
    ServerConfig,
    SummarizeParams,
    SummarizeResult,
    ToolFailure,
    check_node_ids_exist,
    default_artifacts_base,
    invalid,
    resolve_inside,
)

KEEP_RUNS = 20
TAIL_BYTES = 8192
KILL_GRACE_S = 2.0
PROGRESS_INTERVAL_S = 0.25
PROBE_TIMEOUT_S = 60.0
MAX_FILES_LISTED = 500
PLUGIN_DIR = Path(__file__).resolve().parent / "_pytest_plugin"
PLUGIN_NAME = "pytest_mcp_server_events"

ProgressFn = Callable[[int, int | None], Awaitable[None]]
"""``await progress(done, total)``: tests finished so far and tests collected (None
until collection finished)."""

# Process groups started by this process and not yet reaped; killed at exit as a last
# resort (the normal paths kill them themselves).
LIVE_GROUPS: set[int] = set()

RUN_MARKER = "PYTEST_MCP_SERVER_RUN"
"""Set in each run's environment (a fresh token per run) and inherited by every process
the run starts: with it the server finds (Linux, /proc) the run's processes that left its
process group (``setsid``, double fork), wherever they were re-parented."""


# --------------------------------------------------------------------------------------
# Interpreter


@dataclass(frozen=True)
class Interpreter:
    """The project's Python and what it can import (found once by ``probe``)."""

    python: str
    pytest_version: str
    has_json_report: bool
    has_xdist: bool


_PROBE = (
    "import importlib.util as u, json, sys\n"
    "try:\n"
    "    import pytest\n"
    "    v = pytest.__version__\n"
    "    e = None\n"
    "except Exception as x:\n"
    "    v = None\n"
    "    e = type(x).__name__ + ': ' + str(x)\n"
    "print(json.dumps({'pytest': v, 'error': e, 'json_report': u.find_spec('pytest_jsonreport') is not None,"
    " 'xdist': u.find_spec('xdist') is not None, 'version': sys.version.split()[0]}))\n"
)


def find_python(config: ServerConfig, environ: dict[str, str] | None = None) -> Path:
    """The interpreter that runs the project's tests: ``config.python``, else
    ``<root>/.venv``, ``<root>/venv``, ``$VIRTUAL_ENV``, else the server's own."""
    environ = os.environ if environ is None else environ
    if config.python is not None:
        return config.python
    exe = ("Scripts", "python.exe") if os.name == "nt" else ("bin", "python")
    candidates = [config.root / ".venv", config.root / "venv"]
    if environ.get("VIRTUAL_ENV"):
        candidates.append(Path(environ["VIRTUAL_ENV"]))
    for venv in candidates:
        python = venv.joinpath(*exe)
        if python.is_file() and os.access(python, os.X_OK):
            return python
    return Path(sys.executable)


# --------------------------------------------------------------------------------------
# Processes


class Tail:
    """The last ``limit`` bytes of a stream (older bytes are dropped as they come)."""

    def __init__(self, limit: int = TAIL_BYTES) -> None:
        self.limit = limit
        self.buf = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.buf += chunk[-self.limit :]
        if len(self.buf) > self.limit:
            del self.buf[: len(self.buf) - self.limit]

    def text(self) -> str:
        """The tail as text (invalid UTF-8 replaced; a cut first character dropped)."""
        data = bytes(self.buf)
        if self.total > len(data):
            # cut forward to a character boundary
            i = 0
            while i < min(4, len(data)) and (data[i] & 0xC0) == 0x80:
                i += 1
            data = data[i:]
            prefix = f"[... {self.total - len(data)} earlier bytes not kept]\n"
        else:
            prefix = ""
        return prefix + data.decode("utf-8", errors="replace")


class EventFollower:
    """Follows the event plugin's file: collected total and finished tests.

    ``poll()`` reads the lines appended since the last call (a partial last line waits
    for the next poll). ``follow(progress)`` polls until cancelled and reports progress
    at most every ``PROGRESS_INTERVAL_S``.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.total: int | None = None
        self.done = 0

    def poll(self) -> None:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read(1 << 20)
        except FileNotFoundError:
            return
        end = data.rfind(b"\n")
        if end < 0:
            return
        self.offset += end + 1
        for line in data[:end].split(b"\n"):
            if line == b"t":
                self.done += 1
            elif line.startswith(b"c "):
                try:
                    self.total = int(line[2:])
                except ValueError:
                    pass

    async def follow(self, progress: ProgressFn) -> None:
        sent = (-1, None)
        while True:
            await anyio.sleep(PROGRESS_INTERVAL_S)
            self.poll()
            state = (self.done, self.total)
            if state != sent and (self.total is not None or self.done):
                sent = state
                await progress(self.done, self.total)


@dataclass(frozen=True)
class ProcessOutcome:
    """How a child ended: ``exit_code`` (negative: killed by that signal),
    ``timed_out``, wall ``duration_s``, and the tails of its output."""

    exit_code: int
    timed_out: bool
    duration_s: float
    stdout_tail: str
    stderr_tail: str


_PROC = Path("/proc")


def _proc_stat(pid: str) -> tuple[bytes, int] | None:
    """(state, process group) of a process from /proc, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return fields[0], int(fields[2])
    except (OSError, IndexError, ValueError):
        return None


def _run_token_of(pid: str) -> str | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read()
    except OSError:
        return None
    prefix = RUN_MARKER.encode() + b"="
    for item in env.split(b"\0"):
        if item.startswith(prefix):
            return item[len(prefix) :].decode("ascii", "replace")
    return None


def run_members(pgid: int, token: str | None) -> tuple[bool, list[int]]:
    """The running processes of a run: (any member of group ``pgid`` is running, pids
    outside the group that carry the run's ``token``).

    Linux reads /proc, where zombies do not count (a killed grandchild stays a zombie
    until its new parent reaps it, which a container's init may never do). Elsewhere
    only ``killpg(pgid, 0)`` decides (EPERM counts as running) and escapees are not seen.
    """
    if not _PROC.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False, []
        except PermissionError:
            return True, []
        return True, []
    in_group = False
    escaped: list[int] = []
    for entry in os.scandir(_PROC):
        if not entry.name.isdigit():
            continue
        stat = _proc_stat(entry.name)
        if stat is None or stat[0] in (b"Z", b"X"):
            continue
        if stat[1] == pgid:
            in_group = True
        elif token is not None and _run_token_of(entry.name) == token:
            escaped.append(int(entry.name))
    return in_group, escaped


def _signal_run(pgid: int, escaped: list[int], sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in escaped:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


async def kill_group(pgid: int, token: str | None = None, grace_s: float = KILL_GRACE_S) -> None:
    """Stop a run: SIGTERM its process group ``pgid`` and the processes that left the
    group but carry its ``token`` (see ``RUN_MARKER``); SIGKILL whatever still runs after
    ``grace_s``. Processes forked meanwhile are signalled as they appear.

    Returns as soon as nothing of the run is running (zombies aside), or shortly after
    the SIGKILL. Safe to call on a run that is already gone.
    """
    in_group, escaped = run_members(pgid, token)
    if not in_group and not escaped:
        return
    signalled = set(escaped)
    _signal_run(pgid, escaped, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        await anyio.sleep(0.03)
        in_group, escaped = run_members(pgid, token)
        if not in_group and not escaped:
            return
        new = [p for p in escaped if p not in signalled]
        if new:
            signalled.update(new)
            _signal_run(pgid, new, signal.SIGTERM)
    for _ in range(25):  # SIGKILL cannot be ignored; repeat for anything forked meanwhile
        _signal_run(pgid, escaped, signal.SIGKILL)
        await anyio.sleep(0.02)
        in_group, escaped = run_members(pgid, token)
        if not in_group and not escaped:
            return


def kill_live_groups_now() -> None:
    """SIGKILL every process group still running (last resort at interpreter exit)."""
    for pgid in list(LIVE_GROUPS):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        LIVE_GROUPS.discard(pgid)


async def _drain(stream: anyio.abc.ByteReceiveStream | None, tail: Tail, done: anyio.Event) -> None:
    try:
        if stream is not None:
            async for chunk in stream:
                tail.feed(chunk)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        pass
    finally:
        done.set()


async def run_process(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    events: EventFollower | None = None,
    progress: ProgressFn | None = None,
) -> ProcessOutcome:
    """Run ``argv`` in a new process group and wait for it (see the module docstring).

    Returns a ``ProcessOutcome``; on timeout the group is killed and ``timed_out`` is
    set. If the caller is cancelled, the group is killed (shielded) before the
    cancellation propagates. Processes of the run that left the group are killed with
    it (``env[RUN_MARKER]`` identifies them). Raises ``OSError`` when the program cannot
    be started.
    """
    token = env.get(RUN_MARKER)
    start = time.monotonic()
    proc = await anyio.open_process(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )
    pgid = proc.pid
    LIVE_GROUPS.add(pgid)
    out, err = Tail(), Tail()
    out_done, err_done = anyio.Event(), anyio.Event()
    timed_out = False
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_drain, proc.stdout, out, out_done)
            tg.start_soon(_drain, proc.stderr, err, err_done)
            if events is not None and progress is not None:
                tg.start_soon(events.follow, progress)
            with anyio.move_on_after(timeout_s) as scope:
                await proc.wait()
            timed_out = scope.cancelled_caught
            with anyio.CancelScope(shield=True):
                await kill_group(pgid, token)
            # The pipes reach EOF once every holder is dead; a process that escaped the
            # group (setsid) could hold them open: stop reading after a moment.
            with anyio.move_on_after(1.0):
                await out_done.wait()
                await err_done.wait()
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await kill_group(pgid, token)
            LIVE_GROUPS.discard(pgid)
            with anyio.move_on_after(5):
                await proc.aclose()
    code = proc.returncode if proc.returncode is not None else -signal.SIGKILL
    return ProcessOutcome(
        exit_code=code,
        timed_out=timed_out,
        duration_s=round(time.monotonic() - start, 3),
        stdout_tail=out.text(),
        stderr_tail=err.text(),
    )


def _signal_name(code: int) -> str | None:
    if code >= 0:
        return None
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


# --------------------------------------------------------------------------------------
# The runner


def _matches(node_id: str, wanted: str) -> bool:
    """A node id is selected by ``wanted`` when equal to it, or under it as a path
    (``tests/``, ``tests/test_x.py``), a class (``f.py::C``) or a parametrised test."""
    wanted = wanted.rstrip("/")
    return node_id == wanted or node_id.startswith((wanted + "::", wanted + "[", wanted + "/"))


class Runner:
    """The workflows behind the three tools, for one ``ServerConfig``.

    Holds no results between calls: only the configuration, the concurrency limit
    (``max_concurrent`` pytest processes) and the interpreter probe.
    """

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.root = config.root
        self.artifacts_base = config.artifacts_dir or default_artifacts_base()
        key = hashlib.sha256(str(self.root).encode()).hexdigest()[:10]
        self.runs_dir = self.artifacts_base / "runs" / f"{self.root.name or 'root'}-{key}"
        self._slots = anyio.Semaphore(config.max_concurrent)
        self._probe_lock = anyio.Lock()
        self._interpreter: Interpreter | None = None

    # -- environment ----------------------------------------------------------------

    def child_env(self, *, run: bool = False) -> dict[str, str]:
        """The child's environment: the server's own, with the event plugin's directory
        first on ``PYTHONPATH``; for a run, a fresh ``RUN_MARKER`` token."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PLUGIN_DIR), env.get("PYTHONPATH", "")) if p)
        env.pop(RUN_MARKER, None)
        if run:
            env[RUN_MARKER] = secrets.token_hex(8)
        return env

    async def interpreter(self, *, refresh: bool = False) -> Interpreter:
        """Probe the project's interpreter once (pytest version, plugins available).

        Raises ``ToolFailure(pytest_missing)`` naming the interpreter and the fix; a
        failed probe is retried on the next call (so installing pytest needs no restart).
        """
        async with self._probe_lock:
            if self._interpreter is not None and not refresh:
                return self._interpreter
            python = str(find_python(self.config))
            argv = [python, "-c", _PROBE]
            try:
                with anyio.fail_after(PROBE_TIMEOUT_S):
                    proc = await anyio.run_process(argv, cwd=self.root, env=self.child_env(), check=False)
            except OSError as exc:
                raise ToolFailure(
                    "pytest_missing",
                    f"cannot start the project's interpreter {python}: {exc}; start the server with "
                    "--python pointing at the project's Python",
                    command=argv,
                ) from None
            except TimeoutError:
                raise ToolFailure(
                    "pytest_missing", f"{python} did not answer within {PROBE_TIMEOUT_S:.0f}s when asked for pytest"
                ) from None
            info = None
            try:
                info = json.loads(proc.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
            except (ValueError, IndexError):
                pass
            if proc.returncode != 0 or not info or not info.get("pytest"):
                why = (info or {}).get("error") or proc.stderr.decode("utf-8", "replace").strip()[-500:]
                raise ToolFailure(
                    "pytest_missing",
                    f"pytest cannot be imported by the project's interpreter {python} ({why}); install it there "
                    f"({python} -m pip install pytest) or start the server with --python pointing at the "
                    "interpreter that has the project's test dependencies",
                    exit_code=proc.returncode,
                    stderr_tail=proc.stderr.decode("utf-8", "replace")[-TAIL_BYTES:] or None,
                )
            self._interpreter = Interpreter(python, info["pytest"], bool(info["json_report"]), bool(info["xdist"]))
            return self._interpreter

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
        progress (its events file was touched within the maximum timeout) is never
        removed, however many newer runs there are."""
        try:
            runs = sorted(p for p in self.runs_dir.iterdir() if p.is_dir() and not p.is_symlink())
        except FileNotFoundError:
            return
        now = time.time()
        for old in runs[:-KEEP_RUNS]:
            try:
                if now - (old / "events.txt").stat().st_mtime < self.config.max_timeout_s + 60:
                    continue
            except FileNotFoundError:
                pass
            shutil.rmtree(old, ignore_errors=True)

    # -- execute_tests --------------------------------------------------------------

    def execute_argv(self, params: ExecuteParams, interp: Interpreter, run_dir: Path, events: Path) -> list[str]:
        """The exact argv of a run, built only from validated fields."""
        argv = [interp.python, "-m", "pytest", "-p", PLUGIN_NAME, f"--mcp-events={events}"]
        argv.append(f"--junitxml={run_dir / 'junit.xml'}")
        if interp.has_json_report:
            argv += ["--json-report", f"--json-report-file={run_dir / 'report.json'}", "--json-report-omit=keywords"]
        if params.max_failures is not None:
            argv.append(f"--maxfail={params.max_failures}")
        if params.failfast:
            argv.append("-x")
        if params.last_failed:
            argv.append("--lf")
        if params.workers is not None:
            argv += ["-n", str(params.workers)]
        if params.markers:
            argv += ["-m", params.markers]
        if params.keywords:
            argv += ["-k", params.keywords]
        if params.node_ids:
            argv += ["--", *params.node_ids]
        return argv

    async def execute(self, params: ExecuteParams, progress: ProgressFn | None = None) -> ExecuteResult:
        """Run the selected tests and summarise the report (the ``execute_tests`` tool).

        Refuses (before starting pytest) node ids that do not exist inside the root and
        ``workers`` without pytest-xdist. Raises ``ToolFailure`` for timeouts, crashes,
        usage and internal errors; failing tests, collection errors (exit 2) and an
        empty selection (exit 5) are results.
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
        timeout = min(params.timeout_s or self.config.max_timeout_s, self.config.max_timeout_s)
        async with self._slots:
            run_dir = await anyio.to_thread.run_sync(self.new_run_dir)
            events_path = run_dir / "events.txt"
            events_path.touch()
            argv = self.execute_argv(params, interp, run_dir, events_path)
            keep = False
            try:
                outcome = await self._run(argv, timeout, EventFollower(events_path), progress)
                report = self._report_file(run_dir, interp)
                status = self._status(outcome, argv, report, timeout)
                summary = await self._summarize_run(report, params.budgets(), outcome, argv)
                keep = True
            finally:
                with anyio.CancelScope(shield=True):
                    events_path.unlink(missing_ok=True)
                    if not keep:
                        shutil.rmtree(run_dir, ignore_errors=True)
        return ExecuteResult(
            status=status,
            exit_code=outcome.exit_code,
            duration_s=outcome.duration_s,
            command=argv,
            report_path=str(report),
            summary=summary,
        )

    async def _run(
        self, argv: list[str], timeout: float, events: EventFollower | None, progress: ProgressFn | None
    ) -> ProcessOutcome:
        try:
            return await run_process(
                argv, cwd=self.root, env=self.child_env(run=True), timeout_s=timeout, events=events, progress=progress
            )
        except OSError as exc:
            raise ToolFailure(
                "pytest_missing",
                f"cannot start {argv[0]}: {exc}; start the server with --python pointing at the project's Python",
                command=argv,
            ) from None

    @staticmethod
    def _report_file(run_dir: Path, interp: Interpreter) -> Path:
        json_report = run_dir / "report.json"
        if interp.has_json_report and json_report.is_file() and json_report.stat().st_size > 0:
            return json_report
        return run_dir / "junit.xml"

    @staticmethod
    def _failure(kind: str, message: str, outcome: ProcessOutcome, argv: list[str]) -> ToolFailure:
        return ToolFailure(
            kind,  # type: ignore[arg-type]
            message,
            exit_code=outcome.exit_code if outcome.exit_code >= 0 else None,
            signal=_signal_name(outcome.exit_code),
            command=argv,
            duration_s=outcome.duration_s,
            stdout_tail=outcome.stdout_tail or None,
            stderr_tail=outcome.stderr_tail or None,
        )

    def _status(self, outcome: ProcessOutcome, argv: list[str], report: Path, timeout: float) -> RunStatus:
        """Map the exit to a status, or raise ``ToolFailure`` for execution failures."""
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
                f"pytest was killed by {_signal_name(code)} after {outcome.duration_s:g}s "
                "(out of memory, a crash in native code, or a test that killed its own process?); see the output tails",
                outcome,
                argv,
            )
        if code == 4:
            raise self._failure(
                "usage_error",
                "pytest refused the command line (exit 4): "
                + _error_line(outcome.stderr_tail + "\n" + outcome.stdout_tail),
                outcome,
                argv,
            )
        if code == 3:
            raise self._failure(
                "internal_error",
                "pytest hit an internal error (exit 3), often a plugin or conftest hook raising: "
                + _last_line(outcome.stdout_tail or outcome.stderr_tail),
                outcome,
                argv,
            )
        statuses: dict[int, RunStatus] = {0: "passed", 1: "failed", 2: "interrupted", 5: "no_tests"}
        if code not in statuses:
            raise self._failure(
                "crashed",
                f"pytest exited with {code}, a status pytest itself never uses (a test or conftest called "
                "sys.exit/os._exit?); see the output tails",
                outcome,
                argv,
            )
        if not report.is_file() or report.stat().st_size == 0:
            raise self._failure(
                "crashed",
                f"pytest exited with {code} but wrote no report ({report.name}): the process ended before pytest "
                "finished (a test called os._exit, or the interpreter crashed); see the output tails",
                outcome,
                argv,
            )
        return statuses[code]

    async def _summarize_run(
        self, report: Path, budgets: Budgets, outcome: ProcessOutcome, argv: list[str]
    ) -> ReportSummary:
        try:
            return await anyio.to_thread.run_sync(partial(engine_summarize, [str(report)], budgets=budgets))
        except ReportError as exc:
            raise self._failure(
                "crashed", f"the report pytest wrote cannot be read ({exc.kind}): {exc}", outcome, argv
            ) from None

    # -- discover_tests -------------------------------------------------------------

    def discover_argv(self, params: DiscoverParams, interp: Interpreter, tmp: Path) -> list[str]:
        """The argv of a collect-only run."""
        argv = [interp.python, "-m", "pytest", "-p", PLUGIN_NAME, f"--mcp-events={tmp / 'events.txt'}"]
        # JUnit only: pytest-json-report would list every collected item again (+70% time at 100k tests)
        argv += ["--collect-only", "-qq", f"--junitxml={tmp / 'junit.xml'}"]
        if params.markers:
            argv += ["-m", params.markers]
        if params.keywords:
            argv += ["-k", params.keywords]
        if params.node_ids:
            argv += ["--", *params.node_ids]
        return argv

    async def discover(self, params: DiscoverParams) -> DiscoverResult:
        """Collect the selected tests without running them (the ``discover_tests`` tool).

        Node ids are read from the event file line by line; only the requested page and
        the per-file counts are kept, so a 100k-test suite costs little memory.
        """
        check_node_ids_exist(params.node_ids, self.root)
        interp = await self.interpreter()
        async with self._slots:
            tmp = Path(await anyio.to_thread.run_sync(partial(tempfile.mkdtemp, prefix="pytest-mcp-discover-")))
            try:
                (tmp / "events.txt").touch()
                argv = self.discover_argv(params, interp, tmp)
                outcome = await self._run(argv, self.config.max_timeout_s, None, None)
                report = tmp / "junit.xml"
                self._status(outcome, argv, report, self.config.max_timeout_s)
                page = await anyio.to_thread.run_sync(
                    partial(_read_collected, tmp / "events.txt", params.offset, params.limit)
                )
                summary = await self._summarize_run(report, Budgets(max_failures=0), outcome, argv)
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
            duration_s=outcome.duration_s,
        )

    # -- summarize_report -----------------------------------------------------------

    async def summarize(self, params: SummarizeParams) -> SummarizeResult:
        """Summarise existing report files (the ``summarize_report`` tool).

        Paths must be regular files inside the project root or the artifacts directory.
        With ``node_ids``, only failures of those tests (or of tests under those paths)
        are listed, with the larger ``FULL_STORY`` budgets; counts and groups' counts stay
        the whole report's. Only the first 10,000 failures of a report can be filtered.
        Raises ``ToolFailure(report_error)`` for a file that is not a readable report.
        """
        bases = [self.root, self.artifacts_base.resolve() if self.artifacts_base.exists() else self.artifacts_base]
        paths = [str(resolve_inside(p, bases, f"paths[{i}]", must_be_file=True)) for i, p in enumerate(params.paths)]
        budgets = params.budgets()
        try:
            if not params.node_ids:
                summary = await anyio.to_thread.run_sync(partial(engine_summarize, paths, budgets=budgets))
                return SummarizeResult(summary=summary, not_failing=[])
            return await anyio.to_thread.run_sync(partial(_filtered_summary, paths, params.node_ids, budgets))
        except ReportError as exc:
            try:
                field = f"paths[{paths.index(exc.path)}]"
            except ValueError:
                field = "paths"
            raise ToolFailure(
                "report_error",
                f"{field}: {exc} ({exc.kind})",
                field=field,
                report_error_kind=exc.kind,
            ) from None


def _filtered_summary(paths: list[str], wanted: list[str], budgets: Budgets) -> SummarizeResult:
    """Two passes: find which failures match (tiny budgets), then summarise up to the
    last listed match with the real budgets and keep only the matches."""
    probe = engine_summarize(
        paths,
        budgets=Budgets(
            max_failures=10_000,
            max_traceback_lines=3,
            max_line_chars=8,
            max_message_chars=8,
            max_output_bytes=0,
            max_groups=0,
            max_examples=0,
            max_slowest=0,
            max_collection_errors=10_000,
        ),
    )
    matched = [i for i, f in enumerate(probe.failures) if any(_matches(f.node_id, w) for w in wanted)]
    listed = matched[: budgets.max_failures]
    not_failing = [
        w
        for w in wanted
        if not any(_matches(f.node_id, w) for f in probe.failures)
        and not any(_matches(c.path, w) for c in probe.collection_errors)
    ]
    full = engine_summarize(
        paths, budgets=budgets.model_copy(update={"max_failures": (listed[-1] + 1) if listed else 0})
    )
    failures = [f for f in full.failures if any(_matches(f.node_id, w) for w in wanted)][: budgets.max_failures]
    group_ids = {f.group for f in failures}
    groups = [g for g in full.groups if g.id in group_ids]
    coll = [c for c in full.collection_errors if any(_matches(c.path, w) for w in wanted)]
    omitted = full.omitted.model_copy(
        update={"failures": len(matched) - len(failures), "groups": 0, "collection_errors": 0}
    )
    summary = full.model_copy(
        update={"failures": failures, "groups": groups, "collection_errors": coll, "omitted": omitted}
    )
    return SummarizeResult(summary=summary, not_failing=not_failing)


def _read_collected(events: Path, offset: int, limit: int) -> tuple[int, dict[str, int], int, list[str]]:
    """Stream the event file of a collect-only run: (total, tests per file (first
    ``MAX_FILES_LISTED`` files), files not listed, node ids of the page)."""
    total = 0
    files: dict[str, int] = {}
    other_files: set[str] = set()
    page: list[str] = []
    with open(events, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.startswith("i "):
                continue
            try:
                node_id = json.loads(line[2:])
            except ValueError:
                continue
            if offset <= total < offset + limit:
                page.append(node_id)
            total += 1
            path = node_id.split("::", 1)[0]
            if path in files:
                files[path] += 1
            elif len(files) < MAX_FILES_LISTED:
                files[path] = 1
            else:
                other_files.add(path)
    return total, files, len(other_files), page


def _error_line(text: str) -> str:
    """pytest's own error line (``ERROR: not found: ...`` with its ``(...)`` detail, or
    argparse's ``...: error: ...``), else the last line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for i in range(len(lines) - 1, -1, -1):
        if re.match(r"(?i)error: (?!usage:)|\S+: error: ", lines[i]):
            detail = lines[i + 1] if i + 1 < len(lines) and lines[i + 1].startswith("(") else ""
            return (lines[i] + (" " + detail if detail else ""))[:500]
    return _last_line(text)


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:500] if lines else "(no output)"
