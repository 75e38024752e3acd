"""Python stacks as ``faulthandler`` writes them, cut to the frames of the running test.

Two dumps reach the server: the one the event plugin asks for when a run times out
(``SIGUSR1``, every thread, into the run's stacks file), and the one pytest's own
``faulthandler`` plugin writes to stderr when the interpreter dies from a fatal signal
(``Fatal Python error: Segmentation fault`` and the crashing thread's stack). Both look
like (CPython 3.8-3.14)::

    Current thread 0x00007f... (most recent call first):
      File "/project/tests/test_x.py", line 17 in wait_for_server
      File "/project/tests/test_x.py", line 21 in test_hangs
      File ".../site-packages/_pytest/python.py", line 187 in pytest_pyfunc_call
      ...

``test_stack`` picks the thread running the test and keeps the frames above pytest's
own machinery (the test function, its helpers, the library call it is stuck in),
outermost first, at most ``STACK_FRAMES`` of them.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import anyio

from pytest_mcp_server.domain.policy import STACK_DUMP_WAIT_S, STACK_FRAMES
from pytest_mcp_server.run.events import stack_dump_armed

_THREAD = re.compile(r"^(Current thread|Thread) 0x[0-9a-fA-F]+ .*\(most recent call first\):\s*$|^Stack \(most recent")
_FRAME = re.compile(r'^\s+File "(?P<path>.*)", line (?P<line>\d+|\?\?\?) in (?P<name>.*?)\s*$')
# pytest's and pluggy's frames: where the test's own chain ends
_MACHINERY = re.compile(r"[/\\](_pytest|pluggy)[/\\]")
_LIBRARY = re.compile(r"[/\\](?:site-packages|dist-packages)[/\\]|[/\\]lib[/\\]python\d+\.\d+[/\\]")
FATAL_ERROR = "Fatal Python error: "
"""How faulthandler's report of a fatal signal starts."""


@dataclass(frozen=True)
class Frame:
    """One frame of a dump: ``path`` as written, ``line`` (None when unknown), function ``name``."""

    path: str
    line: int | None
    name: str


@dataclass(frozen=True)
class Thread:
    """One thread of a dump: ``current`` (the thread that handled the signal) and its
    frames, innermost first (as faulthandler writes them)."""

    current: bool
    frames: list[Frame]


def parse_dump(text: str) -> list[Thread]:
    """The threads of a faulthandler dump in ``text`` (other lines are ignored), in the
    order written. Empty when ``text`` holds no dump."""
    threads: list[Thread] = []
    for line in text.splitlines():
        header = _THREAD.match(line)
        if header:
            threads.append(Thread(current=line.startswith(("Current thread", "Stack")), frames=[]))
            continue
        frame = _FRAME.match(line)
        if frame and threads:
            number = frame["line"]
            threads[-1].frames.append(Frame(frame["path"], int(number) if number.isdigit() else None, frame["name"]))
    return threads


def fatal_error(text: str) -> tuple[str, list[Thread]] | None:
    """faulthandler's last fatal-error report in ``text`` (a stderr tail): (its first
    line, e.g. ``Fatal Python error: Segmentation fault``, the threads it dumped), or
    None when there is none."""
    start = text.rfind(FATAL_ERROR)
    if start < 0:
        return None
    report = text[start:]
    return report.splitlines()[0].strip(), parse_dump(report)


def _runs_the_test(thread: Thread) -> bool:
    return any(_MACHINERY.search(f.path) and f.name == "pytest_runtest_call" for f in thread.frames)


def test_stack(
    threads: list[Thread], root: Path, *, prefer_current: bool, function: str | None = None
) -> tuple[list[str], str | None]:
    """The running test's stack and its innermost own frame.

    The stack: ``"<path>:<line> in <function>"`` lines, outermost first: the frames
    above pytest's own (``_pytest``, ``pluggy``) of the thread running the test, at
    most ``STACK_FRAMES`` (the two outermost, ``... N frames``, the innermost).
    ``prefer_current``: take the thread that handled the signal (a fatal error is
    reported by the thread that crashed); else the one inside ``pytest_runtest_call``,
    then the current one, then the first; among those inside ``pytest_runtest_call``,
    one with a frame of ``function`` (the running test's function: with xdist, each
    worker's dump has a test running) comes first. Paths under ``root`` are relative to it;
    library paths keep their part after ``site-packages/`` or ``lib/pythonX.Y/``.
    The innermost own frame: the line of the innermost of those frames under ``root``
    (where the test's code waits or crashed), else of the innermost frame; None when
    no thread has a frame.
    """
    candidates = [t for t in threads if t.frames]
    if not candidates:
        return [], None
    running = [t for t in candidates if _runs_the_test(t)]
    if function is not None:
        running.sort(key=lambda t: not any(f.name == function for f in t.frames))  # stable: named first
    current = [t for t in candidates if t.current]
    order = (current + running) if prefer_current else (running + current)
    thread = (order or candidates)[0]
    chain: list[Frame] = []
    for frame in thread.frames:
        if _MACHINERY.search(frame.path):
            break
        chain.append(frame)
    if not chain:  # stuck inside pytest itself (collection, a hook): its innermost frames
        chain = thread.frames[:STACK_FRAMES]
    own = next((f for f in chain if _is_under(f.path, root)), chain[0])
    chain.reverse()
    lines = [_frame_line(f, root) for f in chain]
    if len(lines) > STACK_FRAMES:
        cut = len(lines) - STACK_FRAMES + 1
        lines = [*lines[:2], f"... {cut} frames", *lines[2 + cut :]]
    return lines, _frame_line(own, root)


def _is_under(path: str, root: Path) -> bool:
    return Path(path).is_relative_to(root)


def _frame_line(frame: Frame, root: Path) -> str:
    path = frame.path
    try:
        path = Path(path).relative_to(root).as_posix()
    except ValueError:
        libraries = list(_LIBRARY.finditer(path))
        if libraries:
            path = path[libraries[-1].end() :]
    line = f":{frame.line}" if frame.line is not None else ""
    return f"{path}{line} in {frame.name}"


STACK_DUMP_SIGNAL: int | None = getattr(signal, "SIGUSR1", None)
"""Sent to pytest when a run times out: the record plugin's faulthandler then dumps every
thread's stack into the run's stacks file (the plugin's ``STACK_DUMP_SIGNAL``). None where
the OS has no SIGUSR1 (Windows): the plugin does not arm the dump there, and a timed-out
run's answer names the running test without its stack (``stack_dump_limits``)."""


def stack_dump_limits() -> list[str]:
    """What this OS does not allow of the timeout's stack dump (for the server's start-up
    log; empty where SIGUSR1 exists)."""
    if STACK_DUMP_SIGNAL is not None:
        return []
    return ["no SIGUSR1 on this OS: a run that times out is answered without the running test's stack"]


async def dump_stacks(records: Path, stacks: Path, stopped_at: list[float], pid: int) -> None:
    """A run's timeout hook: note the time in ``stopped_at``, send pytest (``pid``) the
    stack-dump signal if the plugin armed it (the record file's first line says so),
    and its xdist workers (each armed its own ``<stacks>.<pid>``, and is in pytest's
    process group), and wait until the dumps stop growing (at most
    ``STACK_DUMP_WAIT_S``)."""
    stopped_at.append(time.time())
    if STACK_DUMP_SIGNAL is None or not stack_dump_armed(records):
        return  # not armed: the signal would kill pytest instead
    try:
        os.kill(pid, STACK_DUMP_SIGNAL)
    except OSError:
        return
    dumps = [stacks]
    for worker in worker_dumps(stacks):
        try:
            if sys.platform != "win32" and os.getpgid(int(worker.suffix[1:])) == pid:  # still this run's worker
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


def worker_dumps(stacks: Path) -> list[Path]:
    """The stack dumps xdist workers armed next to ``stacks`` (``<stacks>.<pid>``)."""
    return sorted(stacks.parent.glob(stacks.name + ".*"))


def read_dumps(stacks: Path) -> str:
    """The text of the stack dump ``stacks`` and of its xdist workers' dumps ("" for a
    file that is missing or unreadable)."""
    texts = []
    for path in [stacks, *worker_dumps(stacks)]:
        try:
            texts.append(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
    return "".join(texts)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
