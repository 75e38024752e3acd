"""Peak memory of one backend call, measured in a separate worker process.

Every bounded-memory test goes through ``measure``: the call runs in a long-lived worker
process per backend (imports done once), which resets its resident-set high-water mark
just before the call (``/proc/self/clear_refs``) and reads it after (``VmHWM``); the
growth of the peak RSS during the call, in KiB, is what the tests bound. Unlike
``ru_maxrss`` this peak is per call, and unlike ``tracemalloc`` it sees the native
allocations too. Meanwhile the test process watches the worker's RSS and kills it as soon
as it grows past the bound, so a parser that holds a whole 100 MB value fails fast
instead of swapping; a hung call is killed after ``TIME_BOUND_S``.

Linux only (``/proc``): elsewhere ``measure`` skips the test. Set
``HOSTILE_FIGURES=path.jsonl`` to append every measurement (docs/RELIABILITY.md).
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import IO, Any

import orjson
import pytest

# A generous hang bound for one call, in seconds (not a speed assertion).
TIME_BOUND_S = 120
# How far past the caller's bound the watcher lets the RSS grow before it kills the worker
# (the exact peak comes with the answer; the watcher only stops a runaway early), in MiB.
KILL_MARGIN_MB = 8

# The worker: one request per line on stdin, {"paths", "backend", "fmt", "budgets",
# "collected_page"}; it answers "ready" with its RSS, then the result with the growth of
# the peak RSS.
_WORKER = r"""
import base64, gc, json, re, sys, time
def status(field):
    with open("/proc/self/status") as f:
        return int(re.search(field + r":\s+(\d+)", f.read()).group(1))
from pytest_mcp_server.engine import summarize_bytes
from pytest_mcp_server.engine.models import Budgets, CollectedPage, ReportError
import orjson, ijson
import pytest_mcp_server.engine.pure.junit, pytest_mcp_server.engine.pure.pytest_json
backend = sys.argv[1]
for line in sys.stdin:
    req = json.loads(line)
    budgets = Budgets(**req["budgets"])
    page = req["collected_page"]
    page = CollectedPage(offset=page[0], limit=page[1], max_files=page[2]) if page else None
    gc.collect()
    base = status("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    print(json.dumps({"ready": True, "base_kb": base}), flush=True)
    t = time.monotonic()
    try:
        out = summarize_bytes(req["paths"], backend=backend, format=req["fmt"], budgets=budgets, collected_page=page)
        res = {"result": "ok", "summary": base64.b64encode(out).decode()}
    except ReportError as e:
        res = {"result": "error", "kind": e.kind, "message": str(e), "position": e.position}
    res.update(seconds=round(time.monotonic() - t, 3), base_kb=base, growth_kb=status("VmHWM") - base)
    print(json.dumps(res), flush=True)
"""


@dataclass
class Measured:
    """One measured call.

    ``result``: ``("ok", summary bytes)`` or ``("error", kind, message)`` as
    ``backends.run_backend`` gives them, ``("crash", description)`` when the worker died,
    or ``("killed", why)`` when it was killed for memory or time. ``growth_kb``: growth of
    the peak RSS during the call, KiB. ``seconds``: the call's duration (None if killed or
    crashed). ``position``: where an error stopped reading, or None.
    """

    result: tuple
    growth_kb: int
    seconds: float | None = None
    position: str | None = None

    @property
    def kind(self) -> str:
        """``"ok"``, the error kind, ``"crash"`` or ``"killed"``."""
        return self.result[1] if self.result[0] == "error" else self.result[0]

    @property
    def summary(self) -> dict[str, Any]:
        """The parsed summary (asserts the call summarised)."""
        assert self.result[0] == "ok", self.result
        return orjson.loads(self.result[1])


class _Worker:
    """A backend in its own process; restarted after a crash or a kill."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.proc: subprocess.Popen[str] | None = None
        self.errfile: IO[bytes] | None = None

    def _start(self) -> subprocess.Popen[str]:
        if self.proc is None or self.proc.poll() is not None:
            self.errfile = tempfile.TemporaryFile()
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _WORKER, self.backend],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.errfile,
                text=True,
                bufsize=1,
            )
        return self.proc

    def _crash(self, proc: subprocess.Popen[str]) -> Measured:
        proc.wait(timeout=30)
        assert self.errfile is not None
        self.errfile.seek(0)
        stderr = self.errfile.read().decode(errors="replace")[-3000:]
        return Measured(("crash", f"worker exited with {proc.returncode}: {stderr}"), 0)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def run(self, request: dict[str, Any], bound_mb: int) -> Measured:
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        stdout = proc.stdout
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        ready = json.loads(stdout.readline() or "{}")
        if not ready.get("ready"):
            return self._crash(proc)
        answer: list[str] = []
        reader = threading.Thread(target=lambda: answer.append(stdout.readline()), daemon=True)
        reader.start()
        limit_kb = ready["base_kb"] + (bound_mb + KILL_MARGIN_MB) * 1024
        start = time.monotonic()
        peak_kb = ready["base_kb"]
        killed = None
        while reader.is_alive():
            try:
                with open(f"/proc/{proc.pid}/status") as f:
                    found = re.search(r"VmRSS:\s+(\d+)", f.read())
                peak_kb = max(peak_kb, int(found.group(1))) if found else peak_kb
            except OSError:  # the worker is exiting
                pass
            if peak_kb > limit_kb:
                killed = f"RSS grew by {(peak_kb - ready['base_kb']) // 1024} MB (bound {bound_mb} MB)"
            elif time.monotonic() - start > TIME_BOUND_S:
                killed = f"no answer within {TIME_BOUND_S} s"
            if killed:
                proc.kill()
                proc.wait()
                reader.join(timeout=10)
                return Measured(("killed", killed), peak_kb - ready["base_kb"])
            reader.join(timeout=0.02)
        line = answer[0] if answer else ""
        if not line.strip():
            return self._crash(proc)
        res = json.loads(line)
        if res["result"] == "ok":
            result: tuple = ("ok", base64.b64decode(res["summary"]))
        else:
            result = ("error", res["kind"], res["message"])
        return Measured(result, res["growth_kb"], res["seconds"], res.get("position"))


_WORKERS: dict[str, _Worker] = {}


def close_workers() -> None:
    """End the worker processes (tests/conftest.py does it after each test module)."""
    for worker in _WORKERS.values():
        worker.close()
    _WORKERS.clear()


def measure(
    paths: list[str],
    backend: str,
    bound_mb: int,
    fmt: str = "auto",
    budgets: dict[str, int] | None = None,
    collected_page: tuple[int, int, int] | None = None,
) -> Measured:
    """Run ``summarize_bytes(paths, backend=backend, format=fmt, budgets=Budgets(**budgets))``
    (with ``collected_page=CollectedPage(offset, limit, max_files)`` when given) in the
    backend's worker process and measure the growth of its peak RSS (KiB). The
    worker is killed if its RSS grows more than ``bound_mb`` + ``KILL_MARGIN_MB`` MiB or the
    call lasts over ``TIME_BOUND_S``; the caller asserts its own bound on ``growth_kb``."""
    if not os.path.exists("/proc/self/clear_refs"):
        pytest.skip("measuring the peak RSS of one call needs Linux /proc/self/clear_refs")
    worker = _WORKERS.setdefault(backend, _Worker(backend))
    request = {
        "paths": paths,
        "backend": backend,
        "fmt": fmt,
        "budgets": budgets or {},
        "collected_page": collected_page,
    }
    measured = worker.run(request, bound_mb)
    figures = os.environ.get("HOSTILE_FIGURES")
    if figures:
        with open(figures, "a") as f:
            row = {
                "test": os.environ.get("PYTEST_CURRENT_TEST", "?"),
                "backend": backend,
                "result": measured.kind,
                "seconds": measured.seconds,
                "growth_kb": measured.growth_kb,
            }
            f.write(json.dumps(row) + "\n")
    return measured
