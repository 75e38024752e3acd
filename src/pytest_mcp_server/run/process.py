"""Process control on Linux, macOS and Windows: run a child in a process group of its
own, keep only a bounded tail of its output, and stop it with every process it started.

This is the riskiest code of the server: a bug here leaves processes running on the
user's machine. The API (``run_process`` is what the tools use; the rest is for code that
starts and stops a child itself):

* ``run_process(argv, cwd=, env=, timeout_s=, watch=, on_timeout=)`` -> ``ProcessOutcome``:
  start, wait with a timeout, stop everything the run started, return the exit code and
  the output tails.
* ``spawn_group(argv, cwd=, env=, stdout=, stderr=, stdin=)`` -> (``anyio.abc.Process``,
  ``RunGroup``): start a child in a new process group, listed in ``LIVE_GROUPS`` until
  ``kill_group`` has stopped it (then ``forget_group``).
* ``supervise(Started(...), timeout_s=, watch=, on_timeout=)`` -> ``ProcessOutcome``: wait
  for a child started earlier (with its ``output_files``) as ``run_process`` waits for its
  own: the warm spare handed a run (``run.warm``).
* ``run_members(group)``: the processes of a run still running; ``kill_group(group)``:
  stop them; ``kill_live_groups_now()``: kill every listed run at once (at exit).
* ``OutputFile`` / ``Tail``: a child's stdout or stderr kept as a bounded tail.
* ``platform_limits()``: what this OS does not allow, for the server's start-up log.

How a child is run and stopped:

* In a process group of its own, stdin = the null device, never a shell: on POSIX a new
  session (``start_new_session``), on Windows a new process group
  (``CREATE_NEW_PROCESS_GROUP``). Timeout, cancellation and server shutdown stop the
  whole run (``kill_group``); so does a normal exit, so that processes a test left behind
  do not survive the run.
* The run's processes (``run_members``, through psutil on every OS) are the child, the
  members of its process group (POSIX), the descendants of any of them, and the
  processes that left the group and the tree (``setsid``, a double fork, a detached
  process on Windows) found by the run's token in their environment (``RUN_MARKER``;
  ``psutil.Process.environ``). Only processes created after the run started are looked
  at, and zombies do not count (a killed grandchild re-parented to an init that never
  reaps it stays a zombie).
* Stopping: on POSIX, SIGTERM to the group and to each member, SIGKILL to whatever still
  runs after ``KILL_GRACE_S``; Windows has no SIGTERM, so every member is ended at once
  (``TerminateProcess``, through psutil), without pytest's teardown. Processes forked
  meanwhile are stopped as they appear. If the server itself dies, the event plugin in
  pytest stops the run on Linux (``PR_SET_PDEATHSIG``); on macOS and Windows the run
  goes on (``platform_limits`` says so at start).
* stdout/stderr go to temporary files the child appends to (``OutputFile``; removed from
  the directory at once on POSIX, deleted on close on Windows), not pipes: the server is
  not woken for each of pytest's writes (a progress character per test), which on two
  cores cost a run of 6,000 fast tests several percent. Only a bounded tail is kept
  (``TAIL_BYTES``): on POSIX a file beyond ``OUTPUT_FILE_BYTES`` has its tail kept and is
  emptied, so a test printing 1 GB grows neither the server's memory nor the disk. On
  Windows a child's handle cannot be made append-only, so the file is not emptied while
  the run goes on (its disk is freed when the run ends).

* A caller may ask the runs it started to stop as Ctrl-C in a terminal would
  (``Interrupt``, made current with ``interruptible``): on POSIX the group gets SIGINT,
  pytest ends its session as interrupted and reports what finished, and a run still
  going ``INTERRUPT_GRACE_S`` later is stopped as on a timeout; Windows cannot send
  Ctrl-C to another process group, so there the run is stopped at once.

Nothing here knows about pytest or MCP.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import psutil

from pytest_mcp_server.domain.policy import (
    INTERRUPT_GRACE_S,
    KILL_GRACE_S,
    KILL_POLL_S,
    KILL_REPEATS,
    ON_TIMEOUT_S,
    OUTPUT_CHECK_S,
    OUTPUT_FILE_BYTES,
    PROCESS_CLOCK_SLACK_S,
    TAIL_BYTES,
)

logger = logging.getLogger(__name__)

WINDOWS = sys.platform == "win32"
"""True on Windows: no process sessions, no SIGTERM/SIGKILL, no append-only handles."""

KILLED_EXIT_CODE = -9
"""The exit code given to a child whose end could not be waited for (as if SIGKILLed)."""

RUN_MARKER = "PYTEST_MCP_SERVER_RUN"
"""Set in each run's environment (a fresh token per run) and inherited by every process
the run starts: with it the server finds (``psutil.Process.environ``, on every OS) the
run's processes that left its process group and tree (``setsid``, double fork),
wherever they were re-parented."""


@dataclass(frozen=True)
class RunGroup:
    """A started run: ``pid`` of its first process, which leads its process group (POSIX:
    the group id; Windows: the ``CREATE_NEW_PROCESS_GROUP`` group), the run's ``token``
    (the ``RUN_MARKER`` value in its environment; None: escapees are not looked for), and
    ``started`` (``time.time()`` just before the start: processes created earlier are not
    the run's)."""

    pid: int
    token: str | None
    started: float


LIVE_GROUPS: dict[int, RunGroup] = {}
"""Runs started by this process and not yet stopped, by pid; ``kill_live_groups_now``
kills them at exit as a last resort (the normal paths stop them themselves)."""


class Interrupt:
    """A request to stop the runs of one caller as Ctrl-C in a terminal would: SIGINT to
    each run's process group (pytest then ends its session as interrupted, exit 2, and
    writes what finished), the run stopped if it still runs ``INTERRUPT_GRACE_S`` later
    (on Windows at once: see the module docstring).

    Made current with ``interruptible``; ``run_process`` obeys the current one.
    ``started`` counts the ``run_process`` calls made under it, ``live`` those not yet
    returned (0: no process to interrupt)."""

    def __init__(self) -> None:
        self._requested = anyio.Event()
        self.started = 0
        self.live = 0

    @property
    def requested(self) -> bool:
        """Whether ``request`` was called."""
        return self._requested.is_set()

    def request(self) -> None:
        """Interrupt the runs under this request, and every later one at its start."""
        self._requested.set()

    async def wait(self) -> None:
        """Return once ``request`` was called."""
        await self._requested.wait()


_CURRENT_INTERRUPT: ContextVar[Interrupt | None] = ContextVar("pytest_mcp_server_interrupt", default=None)


@contextlib.contextmanager
def interruptible(interrupt: Interrupt) -> Iterator[Interrupt]:
    """Make ``interrupt`` the one obeyed by the ``run_process`` calls of this context (and
    of the tasks it starts) for the ``with`` body."""
    token = _CURRENT_INTERRUPT.set(interrupt)
    try:
        yield interrupt
    finally:
        _CURRENT_INTERRUPT.reset(token)


def interrupt_requested() -> bool:
    """Whether the current ``Interrupt`` (``interruptible``) was requested: a caller making
    several runs (``repeat``) starts no further one."""
    current = _CURRENT_INTERRUPT.get()
    return current is not None and current.requested


async def _interrupt_when_requested(interrupt: Interrupt, group: RunGroup) -> None:
    """Once ``interrupt`` is requested, SIGINT the run's process group, as Ctrl-C in a
    terminal sends it to its foreground group, and stop the run if it still runs
    ``INTERRUPT_GRACE_S`` later (a test that swallows KeyboardInterrupt, a wait in native
    code). Windows has no way to send Ctrl-C to another process group: the run is stopped
    at once."""
    await interrupt.wait()
    if not WINDOWS:
        try:
            os.killpg(group.pid, signal.SIGINT)
        except OSError:  # the group is gone
            pass
        await anyio.sleep(INTERRUPT_GRACE_S)
    await kill_group(group)


class Tail:
    """The last ``limit`` bytes of a stream (older bytes are dropped as they come)."""

    def __init__(self, limit: int = TAIL_BYTES) -> None:
        self.limit = limit
        self.buf = bytearray()
        self.total = 0

    def skip(self, n: int) -> None:
        """Count ``n`` bytes of the stream that came before the next ``feed`` and are not kept."""
        if n > 0:
            self.total += n
            self.buf.clear()

    def feed(self, chunk: bytes) -> None:
        """Append ``chunk``, dropping what falls out of the last ``limit`` bytes."""
        self.total += len(chunk)
        self.buf += chunk[-self.limit :]
        if len(self.buf) > self.limit:
            del self.buf[: len(self.buf) - self.limit]

    def text(self) -> str:
        """The tail as text (invalid UTF-8 replaced; a cut first character dropped),
        preceded by a line counting the bytes not kept."""
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


class OutputFile:
    """A child's stdout or stderr: a temporary file read into a ``Tail``. On POSIX it is
    opened for appending (the child's writes go to its end, also after ``bound`` empties
    it) and removed from its directory at once; on Windows it is deleted when the last
    handle closes, and never emptied while the child runs (``bound`` does nothing: a
    Windows handle cannot be made append-only, and the child would write past the end).
    Raises ``OSError`` when the file cannot be made."""

    def __init__(self, cap: int = OUTPUT_FILE_BYTES) -> None:
        made, path = tempfile.mkstemp(prefix="pytest-mcp-output-")
        if sys.platform == "win32":
            os.close(made)  # a file cannot be opened for deletion while another handle is open
            self.fd = os.open(path, os.O_RDWR | os.O_BINARY | os.O_TEMPORARY)
        else:
            try:
                self.fd = os.open(path, os.O_RDWR | os.O_APPEND)
            finally:
                os.close(made)
                os.unlink(path)
        self.cap = cap
        self.tail = Tail()

    def _read_at(self, offset: int, size: int) -> bytes:
        if sys.platform == "win32":  # no pread; the offset is read only after the child ended
            os.lseek(self.fd, offset, os.SEEK_SET)
            chunks = []
            while size > 0 and (chunk := os.read(self.fd, size)):
                chunks.append(chunk)
                size -= len(chunk)
            return b"".join(chunks)
        return os.pread(self.fd, size, offset)

    def _take(self) -> int:
        """Move the file's content into the tail (the last ``TAIL_BYTES`` read); its size."""
        size = os.fstat(self.fd).st_size
        keep = min(size, self.tail.limit)
        self.tail.skip(size - keep)
        if keep:
            self.tail.feed(self._read_at(size - keep, keep))
        return size

    def bound(self) -> None:
        """Keep the tail and empty the file when it holds more than ``cap`` bytes (a
        write between the two is lost: the tail's count of bytes not kept stays right).
        Does nothing on Windows (see the class)."""
        if WINDOWS:
            return
        if os.fstat(self.fd).st_size > self.cap:
            self._take()
            os.ftruncate(self.fd, 0)

    def text(self) -> str:
        """The tail of everything written (``Tail.text``); closes the file."""
        try:
            self._take()
        finally:
            os.close(self.fd)
        return self.tail.text()


async def _bound_outputs(files: tuple[OutputFile, ...]) -> None:
    while True:
        await anyio.sleep(OUTPUT_CHECK_S)
        for output in files:
            output.bound()


@dataclass(frozen=True)
class ProcessOutcome:
    """How a child ended: ``exit_code`` (negative: killed by that signal, POSIX),
    ``timed_out``, wall ``duration_s`` (seconds), and the tails of its output. Set by
    the runner's warm start (``run.warm``): ``warm``, the child was a warm spare; and
    ``cold_start``, why a spare that was there could not serve the run (a phrase)."""

    exit_code: int
    timed_out: bool
    duration_s: float
    stdout_tail: str
    stderr_tail: str
    warm: bool = False
    cold_start: str | None = None


def signal_name(exit_code: int) -> str | None:
    """The name of the signal that ended a child (``SIGKILL``) from its negative exit
    code; None for a normal exit (and on Windows, where exit codes are not negative)."""
    if exit_code >= 0:
        return None
    try:
        return signal.Signals(-exit_code).name
    except ValueError:
        return f"signal {-exit_code}"


def _group_of(pid: int) -> int | None:
    """The process group of ``pid`` (POSIX), None when it is gone or on Windows."""
    if sys.platform == "win32":
        return None
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _carries(proc: psutil.Process, token: str) -> bool:
    try:
        return proc.environ().get(RUN_MARKER) == token
    except (psutil.Error, OSError):  # gone, another user's, or not readable on this OS
        return False


def run_members(group: RunGroup) -> list[psutil.Process]:
    """The running processes of a run (see the module docstring): its first process, the
    members of its process group, their descendants, and the processes carrying its
    token; zombies and processes created before ``group.started`` left out. One pass
    over the system's processes (psutil); a process that cannot be read is left out."""
    since = group.started - PROCESS_CLOCK_SLACK_S  # create times of psutil vs time.time()
    recent: dict[int, tuple[psutil.Process, int | None]] = {}
    for proc in psutil.process_iter(["ppid", "create_time", "status"]):
        info = proc.info
        created = info.get("create_time")
        if created is None or created < since or info.get("status") in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
            continue
        recent[proc.pid] = (proc, info.get("ppid"))
    members = {
        pid
        for pid in recent
        if pid == group.pid
        or _group_of(pid) == group.pid
        or (group.token is not None and _carries(recent[pid][0], group.token))
    }
    grown = True
    while grown:  # the descendants of members (a child keeps its parent's pid while the parent runs)
        more = {pid for pid, (_, ppid) in recent.items() if ppid in members and pid not in members}
        members |= more
        grown = bool(more)
    return [recent[pid][0] for pid in sorted(members)]


def _signal_run(group: RunGroup, members: Iterable[psutil.Process], *, kill: bool) -> None:
    """Stop ``members`` (and on POSIX the whole process group, for what forked since the
    scan): SIGKILL when ``kill``, else SIGTERM; on Windows each is ended at once."""
    if sys.platform != "win32":
        sig = signal.SIGKILL if kill else signal.SIGTERM
        try:
            os.killpg(group.pid, sig)
        except OSError:  # the group is empty, or not ours
            pass
    for proc in members:
        try:
            if sys.platform == "win32" or kill:
                proc.kill()  # psutil checks the pid still names the process it scanned
            else:
                proc.terminate()
        except (psutil.Error, OSError):
            pass


async def kill_group(group: RunGroup, grace_s: float = KILL_GRACE_S) -> None:
    """Stop a run: SIGTERM its process group and every other process of the run
    (``run_members``), SIGKILL whatever still runs after ``grace_s`` seconds; on Windows
    end them at once. Processes forked meanwhile are stopped as they appear.

    Returns as soon as nothing of the run is running (zombies aside), or shortly after
    the last kill (``KILL_REPEATS`` rounds ``KILL_POLL_S`` apart). Safe to call on a run
    that is already gone. Does not remove the run from ``LIVE_GROUPS`` (``forget_group``).
    """
    members = run_members(group)
    if not members:
        return
    if not WINDOWS:
        signalled = {proc.pid for proc in members}
        _signal_run(group, members, kill=False)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            await anyio.sleep(KILL_POLL_S)
            members = run_members(group)
            if not members:
                return
            new = [proc for proc in members if proc.pid not in signalled]
            if new:
                signalled.update(proc.pid for proc in new)
                _signal_run(group, new, kill=False)
    for _ in range(KILL_REPEATS):  # a kill cannot be ignored; repeat for anything forked meanwhile
        _signal_run(group, members, kill=True)
        await anyio.sleep(KILL_POLL_S)
        members = run_members(group)
        if not members:
            return
    logger.warning("processes of a stopped run still run: %s", ", ".join(str(p.pid) for p in members))


def kill_live_groups_now() -> None:
    """Kill every run still listed in ``LIVE_GROUPS`` (last resort at interpreter exit):
    one kill of each run's processes, without waiting."""
    for pid, group in list(LIVE_GROUPS.items()):
        try:
            _signal_run(group, run_members(group), kill=True)
        except (psutil.Error, OSError):
            pass
        LIVE_GROUPS.pop(pid, None)


def forget_group(group: RunGroup) -> None:
    """Take a stopped run off ``LIVE_GROUPS``."""
    LIVE_GROUPS.pop(group.pid, None)


def new_group_options() -> dict[str, Any]:
    """The keyword arguments of ``anyio.open_process`` (and ``subprocess.Popen``) that
    start a child in a process group of its own on this OS."""
    if sys.platform == "win32":
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    return {"start_new_session": True}


async def spawn_group(
    argv: list[str], *, cwd: Path, env: dict[str, str], stdout: int, stderr: int, stdin: int = subprocess.DEVNULL
) -> tuple[anyio.abc.Process, RunGroup]:
    """Start ``argv`` (no shell, stdin the null device unless ``stdin`` says otherwise:
    ``subprocess.PIPE`` for a warm spare, ``run.warm``) in ``cwd`` with exactly ``env``,
    in a process group of its own, its stdout and stderr the file descriptors given; the
    run is listed in ``LIVE_GROUPS`` (its token: ``env[RUN_MARKER]``). The caller must
    stop it with ``kill_group`` and then ``forget_group``. Raises ``OSError`` when the
    program cannot be started."""
    started = time.time()
    proc = await anyio.open_process(
        argv, stdin=stdin, stdout=stdout, stderr=stderr, cwd=cwd, env=env, **new_group_options()
    )
    group = RunGroup(pid=proc.pid, token=env.get(RUN_MARKER), started=started)
    LIVE_GROUPS[group.pid] = group
    return proc, group


async def run_process(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    watch: Callable[[], Coroutine[Any, Any, None]] | None = None,
    on_timeout: Callable[[int], Awaitable[None]] | None = None,
) -> ProcessOutcome:
    """Run ``argv`` in a new process group and wait for it (see the module docstring).

    ``timeout_s``: seconds before the run is stopped and ``timed_out`` set. ``watch``:
    a task run while the child runs (e.g. following its progress), cancelled when it
    ends. ``on_timeout``: awaited with the child's pid when the timeout expires, before
    the run is stopped (e.g. to ask the child for a stack dump); shielded, and cut
    after ``ON_TIMEOUT_S`` seconds. The pid is still the child's then (not yet reaped).
    If the caller is cancelled, the run is stopped (shielded) before the cancellation
    propagates. Processes of the run that left the group are stopped with it
    (``env[RUN_MARKER]`` identifies them). Under an ``Interrupt`` (``interruptible``)
    the run is interrupted once it is requested (see ``Interrupt``). Raises ``OSError``
    when the program cannot be started.
    """
    out, err = output_files()
    try:
        proc, group = await spawn_group(argv, cwd=cwd, env=env, stdout=out.fd, stderr=err.fd)
    except OSError:
        out.text(), err.text()  # closes them
        raise
    return await supervise(Started(proc, group, out, err), timeout_s=timeout_s, watch=watch, on_timeout=on_timeout)


def output_files() -> tuple[OutputFile, OutputFile]:
    """A child's stdout and stderr files (``OutputFile``). Raises ``OSError``."""
    out = OutputFile()
    try:
        return out, OutputFile()
    except OSError:
        os.close(out.fd)
        raise


@dataclass(frozen=True)
class Started:
    """A child started by ``spawn_group`` with its output files, not yet supervised:
    ``run_process``'s own, or a warm spare handed a run (``run.warm``)."""

    proc: anyio.abc.Process
    group: RunGroup
    out: OutputFile
    err: OutputFile


async def supervise(
    started: Started,
    *,
    timeout_s: float,
    watch: Callable[[], Coroutine[Any, Any, None]] | None = None,
    on_timeout: Callable[[int], Awaitable[None]] | None = None,
) -> ProcessOutcome:
    """Wait for a started child as ``run_process`` does (timeout, ``watch``,
    ``on_timeout``, the current ``Interrupt``, cancellation), then stop its whole run
    and close its output files; ``duration_s`` counts from this call."""
    interrupt = _CURRENT_INTERRUPT.get()
    if interrupt is not None:
        interrupt.started += 1
        interrupt.live += 1
        try:
            return await _supervise(started, timeout_s, watch, on_timeout, interrupt)
        finally:
            interrupt.live -= 1
    return await _supervise(started, timeout_s, watch, on_timeout, None)


async def _supervise(
    started: Started,
    timeout_s: float,
    watch: Callable[[], Coroutine[Any, Any, None]] | None,
    on_timeout: Callable[[int], Awaitable[None]] | None,
    interrupt: Interrupt | None,
) -> ProcessOutcome:
    start = time.monotonic()
    proc, group, out, err = started.proc, started.group, started.out, started.err
    timed_out = False
    stopped = False  # the run was stopped once: a second scan of the system's processes finds nothing
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_bound_outputs, (out, err))
            if watch is not None:
                tg.start_soon(watch)
            if interrupt is not None:
                tg.start_soon(_interrupt_when_requested, interrupt, group)
            with anyio.move_on_after(timeout_s) as scope:
                await proc.wait()
            timed_out = scope.cancelled_caught
            with anyio.CancelScope(shield=True):
                if timed_out and on_timeout is not None:
                    with anyio.move_on_after(ON_TIMEOUT_S):
                        await on_timeout(proc.pid)
                await kill_group(group)
                stopped = True
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            if not stopped:
                await kill_group(group)
            forget_group(group)
            with anyio.move_on_after(5):
                await proc.aclose()
            stdout_tail, stderr_tail = out.text(), err.text()
    code = proc.returncode if proc.returncode is not None else KILLED_EXIT_CODE
    return ProcessOutcome(
        exit_code=code,
        timed_out=timed_out,
        duration_s=round(time.monotonic() - start, 3),
        stdout_tail=stdout_tail,
        stderr_tail=stderr_tail,
    )


def platform_limits() -> list[str]:
    """What this OS does not let the server do (one sentence each, for its start-up log;
    empty on Linux when psutil can read process environments)."""
    limits = []
    try:
        psutil.Process().environ()
    except (psutil.Error, OSError, NotImplementedError) as exc:
        limits.append(
            "processes that leave a run's process group and tree (setsid, a double fork) cannot be found "
            f"and stopped: psutil cannot read process environments here ({type(exc).__name__})"
        )
    if WINDOWS:
        limits.append("Windows has no SIGTERM: a stopped run's processes are ended at once, without pytest's teardown")
        limits.append(
            "on Windows a run's output files are not emptied while it runs: a test printing 1 GB takes 1 GB "
            "of the temporary directory until the run ends"
        )
    if not sys.platform.startswith("linux"):
        limits.append(
            "if the server itself is killed (a crash, SIGKILL), its pytest runs go on: only Linux tells a "
            "child its parent died (PR_SET_PDEATHSIG)"
        )
    return limits
