"""Shared pieces of the benchmarks: the cache, subprocess measurements, statistics,
machine facts and progress bars."""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import generate as gen
from .runner import failed_result

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

MB = 1_000_000  # throughput and sizes use decimal megabytes (10^6 bytes)


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/pytest-mcp-server/bench`` (``~/.cache/...`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pytest-mcp-server" / "bench"


def report_path(cache: Path, fmt: str, size: int, seed: int, suffix: str = "") -> Path:
    """Cache file of a generated report: ``<fmt>-<size>-s<seed>-v<version><suffix>.<ext>``."""
    ext = "xml" if fmt == "junit" else "json"
    return cache / f"{fmt}-{gen.format_size(size)}-s{seed}-v{gen.GENERATOR_VERSION}{suffix}.{ext}"


def ensure_report(
    cache: Path,
    fmt: str,
    size: int,
    seed: int,
    progress: Progress | None = None,
    *,
    suffix: str = "",
    module_offset: int = 0,
) -> tuple[Path, dict[str, Any], bool]:
    """The cached report (generated first when missing or stale) and its truth, and
    whether it was generated now. ``progress``: a rich ``Progress`` to show generation."""
    path = report_path(cache, fmt, size, seed, suffix)
    truth = gen.load_truth(path)
    if truth is not None and truth["seed"] == seed and truth["target_bytes"] == size:
        return path, truth, False
    cache.mkdir(parents=True, exist_ok=True)
    if progress is None:
        return path, gen.generate(path, fmt, size, seed, module_offset=module_offset), True
    task = progress.add_task(f"generate {path.name}", total=size)

    def advance(written: int) -> None:
        progress.advance(task, written)

    truth = gen.generate(path, fmt, size, seed, module_offset=module_offset, progress=advance)
    progress.update(task, completed=size)
    progress.remove_task(task)
    return path, truth, True


def progress_callback(progress: Progress, task: TaskID) -> Callable[[int, int], None]:
    """An ``on_progress`` for ``spawn``: ``(runs done, runs in all)`` sets ``task``'s
    completed count to the runs done."""

    def update(done: int, _total: int) -> None:
        progress.update(task, completed=done)

    return update


def spawn(
    job: dict[str, Any],
    *,
    timeout: float,
    on_progress: Callable[[int, int], None] | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run ``bench.runner`` on ``job`` in a fresh interpreter and return its result dict
    (see ``runner``). A crash, a timeout or unreadable output gives ``ok=False`` with the
    reason in ``error``; the job is never retried."""
    cmd = [sys.executable, "-m", "pytest_mcp_server.bench.runner", json.dumps(job)]
    full_env = dict(os.environ)
    full_env.update(env or {})
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env)
    result: dict[str, Any] | None = None
    try:
        import selectors

        sel = selectors.DefaultSelector()
        assert proc.stdout is not None
        sel.register(proc.stdout, selectors.EVENT_READ)
        while True:
            left = timeout - (time.monotonic() - t0)
            if left <= 0:
                raise subprocess.TimeoutExpired(cmd, timeout)
            if not sel.select(timeout=min(left, 1.0)):
                continue
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith("PROGRESS ") and on_progress is not None:
                done, total = map(int, line.split()[1:3])
                on_progress(done, total)
            elif line.startswith("RESULT "):
                result = json.loads(line[7:])
        proc.wait(timeout=max(1.0, timeout - (time.monotonic() - t0)))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return failed_result(f"timed out after {timeout:.0f} s")
    stderr = proc.stderr.read() if proc.stderr else ""
    if result is None:
        tail = stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        return failed_result(f"the runner died (exit {proc.returncode}): {tail[0][:300]}")
    return result


def stats(times: list[float]) -> dict[str, float | None]:
    """``median``, ``min``, ``max`` of a list of seconds (None when empty)."""
    if not times:
        return {"median": None, "min": None, "max": None}
    return {"median": statistics.median(times), "min": min(times), "max": max(times)}


COMPARED = ("passed", "failed", "errors", "skipped", "xfailed", "xpassed", "total", "flaky", "duration_us")


def check_counts(
    counts: dict[str, int] | None, truth: dict[str, Any]
) -> tuple[bool | None, dict[str, list[int | None]]]:
    """Compare a parser's counts with the generator's truth: ``(ok, mismatches)`` where
    mismatches maps a key to ``[parser value, truth value]``. Keys a parser does not give
    (``flaky``, ``duration_us`` for the alternatives) are not compared; the six outcomes
    and ``total`` always are. ``ok`` is None when the parser gave no counts."""
    if counts is None:
        return None, {}
    expected = dict(truth["counts"])
    expected["duration_us"] = truth["duration_us"]
    bad: dict[str, list[int | None]] = {}
    for key in COMPARED:
        if key not in counts and key in ("flaky", "duration_us"):
            continue
        if counts.get(key) != expected.get(key):
            bad[key] = [counts.get(key), expected.get(key)]
    return not bad, bad


def sum_truths(truths: list[dict[str, Any]]) -> dict[str, Any]:
    """The truth of several files taken together (counts and durations add up)."""
    counts = {k: sum(t["counts"][k] for t in truths) for k in truths[0]["counts"]}
    return {
        "counts": counts,
        "duration_us": sum(t["duration_us"] for t in truths),
        "bytes": sum(t["bytes"] for t in truths),
    }


def machine_info() -> dict[str, Any]:
    """Facts about this machine and build for the results: CPU model and count, memory,
    Python, platform, package and engine versions, git commit, load averages."""
    info: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo", encoding="utf-8") as f:
            info["mem_gb"] = round(int(f.readline().split()[1]) / 2**20, 1)
    except OSError:  # pragma: no cover - not Linux
        pass
    try:
        info["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):  # pragma: no cover - no load average (Windows)
        pass
    try:
        from importlib.metadata import version

        info["package"] = version("pytest-mcp-server")
    except Exception:  # pragma: no cover - bare checkout
        info["package"] = None
    try:
        from pytest_mcp_server.engine import _native

        info["native"] = _native.version()
    except Exception:
        info["native"] = None
    try:
        here = Path(__file__).resolve().parent
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=5,
        )
        if commit.returncode == 0:
            info["git"] = commit.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return info


PROVENANCE_KEY = "provenance"
"""The key of every saved results JSON (``pytest-mcp-server bench --save``, the scripts of
``benches/``) under which ``provenance`` records where and when it was measured."""


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages, rounded to 0.01 (None where the OS has none:
    Windows)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def _git(repo: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def provenance(load_start: list[float] | None, repo: Path | None = None) -> dict[str, Any]:
    """Where and when a result was measured, for the ``PROVENANCE_KEY`` of its JSON:
    ``{"commit": full sha of HEAD or None, "clean": no tracked file differs from it (None
    without git), "date": UTC ISO 8601 to the second (when this is called: the end of the
    run), "machine": {"cpus", "memory_gib", "cpu", "platform", "python"}, "load": {"start":
    load_start, "end": now}}`` (load averages as ``load_average`` gives them). ``repo``:
    the checkout measured (default: the one this package is imported from). The README's
    figures show the commit and date (``scripts/readme_figures.py``), and
    ``tests/docs/test_docs_figures.py`` refuses a headline whose file lacks them."""
    repo = repo or Path(__file__).resolve().parent
    import psutil

    commit = _git(repo, "rev-parse", "HEAD")
    status = _git(repo, "status", "--porcelain", "--untracked-files=no") if commit else None
    machine = machine_info()
    return {
        "commit": commit,
        "clean": None if status is None else status == "",
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {
            "cpus": os.cpu_count(),
            "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
            "cpu": machine.get("cpu") or platform.processor() or None,
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "load": {"start": load_start, "end": load_average()},
    }


def make_progress(enabled: bool = True) -> Progress:
    """A rich ``Progress`` on stderr (bars, bytes or runs, elapsed and remaining time);
    disabled (a no-op stand-in) when ``enabled`` is false."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=not enabled,
        transient=False,
    )
