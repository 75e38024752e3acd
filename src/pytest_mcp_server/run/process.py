"""Process-group control: run a child in its own process group, keep only a bounded tail
of its output, and kill it with everything it started.

This is the riskiest code of the server: a bug here leaves processes running on the
user's machine. How a child is run (``run_process``):

* In its own session/process group (``start_new_session``), stdin = /dev/null, never a
  shell. Timeout, cancellation and server shutdown kill the whole group: SIGTERM, then
  SIGKILL after ``KILL_GRACE_S``. After a normal exit the group is also killed, so
  processes a test left behind do not survive the run.
* Processes that left the group (``setsid``, double fork) are found by the run's token
  in their environment (``RUN_MARKER``; Linux, /proc) and killed with it. If the server
  itself dies, the event plugin in pytest does the same (``PR_SET_PDEATHSIG``).
* stdout/stderr go to unlinked temporary files the child appends to (``OutputFile``), not
  pipes: the server is not woken for each of pytest's writes (a progress character per
  test), which on two cores cost a run of 6,000 fast tests several percent. Only a
  bounded tail is kept (``TAIL_BYTES``): a file beyond ``OUTPUT_FILE_BYTES`` has its tail
  kept and is emptied, so a test printing 1 GB grows neither the server's memory nor the
  disk.
* ``LIVE_GROUPS`` lists the groups not yet reaped; ``kill_live_groups_now`` SIGKILLs
  them at exit as a last resort.
* A caller may ask the runs it started to stop as Ctrl-C in a terminal would
  (``Interrupt``, made current with ``interruptible``): the group gets SIGINT, pytest ends
  its session as interrupted and reports what finished; a group still running
  ``INTERRUPT_GRACE_S`` later is killed as on a timeout.

Nothing here knows about pytest or MCP.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from pytest_mcp_server.domain.policy import (
    INTERRUPT_GRACE_S,
    KILL_GRACE_S,
    ON_TIMEOUT_S,
    OUTPUT_CHECK_S,
    OUTPUT_FILE_BYTES,
    TAIL_BYTES,
)

# Process groups started by this process and not yet reaped; killed at exit as a last
# resort (the normal paths kill them themselves).
LIVE_GROUPS: set[int] = set()

RUN_MARKER = "PYTEST_MCP_SERVER_RUN"
"""Set in each run's environment (a fresh token per run) and inherited by every process
the run starts: with it the server finds (Linux, /proc) the run's processes that left its
process group (``setsid``, double fork), wherever they were re-parented."""

_PROC = Path("/proc")


class Interrupt:
    """A request to stop the runs of one caller as Ctrl-C in a terminal would: SIGINT to
    each run's process group (pytest then ends its session as interrupted, exit 2, and
    writes what finished), the group killed if it still runs ``INTERRUPT_GRACE_S`` later.

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


async def _interrupt_when_requested(interrupt: Interrupt, pgid: int, token: str | None) -> None:
    """SIGINT the group ``pgid`` once ``interrupt`` is requested, as Ctrl-C in a terminal
    sends it to its foreground group; kill the run if it still runs ``INTERRUPT_GRACE_S``
    later (a test that swallows KeyboardInterrupt, a wait in native code)."""
    await interrupt.wait()
    _signal_run(pgid, [], signal.SIGINT)
    await anyio.sleep(INTERRUPT_GRACE_S)
    await kill_group(pgid, token)


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
    """A child's stdout or stderr: an unlinked temporary file opened for appending (the
    child's writes go to its end, also after ``bound`` empties it), read into a ``Tail``.
    Raises ``OSError`` when the file cannot be made."""

    def __init__(self, cap: int = OUTPUT_FILE_BYTES) -> None:
        fd, path = tempfile.mkstemp(prefix="pytest-mcp-output-")
        os.unlink(path)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
        self.fd = fd
        self.cap = cap
        self.tail = Tail()

    def _take(self) -> int:
        """Move the file's content into the tail (the last ``TAIL_BYTES`` read); its size."""
        size = os.fstat(self.fd).st_size
        keep = min(size, self.tail.limit)
        self.tail.skip(size - keep)
        if keep:
            self.tail.feed(os.pread(self.fd, keep, size - keep))
        return size

    def bound(self) -> None:
        """Keep the tail and empty the file when it holds more than ``cap`` bytes (a
        write between the two is lost: the tail's count of bytes not kept stays right)."""
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
    """How a child ended: ``exit_code`` (negative: killed by that signal),
    ``timed_out``, wall ``duration_s`` (seconds), and the tails of its output."""

    exit_code: int
    timed_out: bool
    duration_s: float
    stdout_tail: str
    stderr_tail: str


def signal_name(exit_code: int) -> str | None:
    """The name of the signal that ended a child (``SIGKILL``) from its negative exit
    code; None for a normal exit."""
    if exit_code >= 0:
        return None
    try:
        return signal.Signals(-exit_code).name
    except ValueError:
        return f"signal {-exit_code}"


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
    ``grace_s`` seconds. Processes forked meanwhile are signalled as they appear.

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

    ``timeout_s``: seconds before the group is killed and ``timed_out`` set. ``watch``:
    a task run while the child runs (e.g. following its progress), cancelled when it
    ends. ``on_timeout``: awaited with the child's pid when the timeout expires, before
    the group is killed (e.g. to ask the child for a stack dump); shielded, and cut
    after ``ON_TIMEOUT_S`` seconds. The pid is still the child's then (not yet reaped).
    If the caller is cancelled, the group is killed (shielded) before the
    cancellation propagates. Processes of the run that left the group are killed with
    it (``env[RUN_MARKER]`` identifies them). Under an ``Interrupt`` (``interruptible``)
    the group is sent SIGINT once it is requested (see ``Interrupt``). Raises ``OSError``
    when the program cannot be started.
    """
    interrupt = _CURRENT_INTERRUPT.get()
    if interrupt is not None:
        interrupt.started += 1
        interrupt.live += 1
        try:
            return await _run_process(argv, cwd, env, timeout_s, watch, on_timeout, interrupt)
        finally:
            interrupt.live -= 1
    return await _run_process(argv, cwd, env, timeout_s, watch, on_timeout, None)


async def _run_process(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    watch: Callable[[], Coroutine[Any, Any, None]] | None,
    on_timeout: Callable[[int], Awaitable[None]] | None,
    interrupt: Interrupt | None,
) -> ProcessOutcome:
    token = env.get(RUN_MARKER)
    start = time.monotonic()
    out = OutputFile()
    try:
        err = OutputFile()
    except OSError:
        os.close(out.fd)
        raise
    try:
        proc = await anyio.open_process(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out.fd,
            stderr=err.fd,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    except OSError:
        out.text(), err.text()  # closes them
        raise
    pgid = proc.pid
    LIVE_GROUPS.add(pgid)
    timed_out = False
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_bound_outputs, (out, err))
            if watch is not None:
                tg.start_soon(watch)
            if interrupt is not None:
                tg.start_soon(_interrupt_when_requested, interrupt, pgid, token)
            with anyio.move_on_after(timeout_s) as scope:
                await proc.wait()
            timed_out = scope.cancelled_caught
            with anyio.CancelScope(shield=True):
                if timed_out and on_timeout is not None:
                    with anyio.move_on_after(ON_TIMEOUT_S):
                        await on_timeout(proc.pid)
                await kill_group(pgid, token)
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await kill_group(pgid, token)
            LIVE_GROUPS.discard(pgid)
            with anyio.move_on_after(5):
                await proc.aclose()
            stdout_tail, stderr_tail = out.text(), err.text()
    code = proc.returncode if proc.returncode is not None else -signal.SIGKILL
    return ProcessOutcome(
        exit_code=code,
        timed_out=timed_out,
        duration_s=round(time.monotonic() - start, 3),
        stdout_tail=stdout_tail,
        stderr_tail=stderr_tail,
    )
