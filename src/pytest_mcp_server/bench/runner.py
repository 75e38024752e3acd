"""One measurement in its own process: ``python -m pytest_mcp_server.bench.runner JOB``.

``JOB`` is a JSON object: ``fmt`` (``junit``, ``pytest-json`` or ``shards``), ``parser``
(a name from ``parsers.PARSERS`` / ``parsers.SHARD_MODES``), ``paths`` (list of files),
``warmup`` and ``reps`` (counts of runs), ``mem_limit`` (bytes of address space, 0 for
none; a parser that needs more fails with ``MemoryError`` and is reported so).

The process imports the parser's library, notes its resident size (the baseline), runs
the parser ``warmup`` times untimed-for-the-result, then ``reps`` times timed with
``time.perf_counter`` (wall) and ``time.process_time`` (CPU, all threads). The files are
read through the page cache (the warm-up brings them in; the bench machine has the RAM
for it), so the figures are parsing speed, not disk speed.

stdout, one line each: ``PROGRESS <runs done> <runs total>`` after every run, then
``RESULT <json>`` with ``ok``, ``error`` (str or None), ``times_s``, ``warmup_s``,
``cpu_s`` (user+system per timed run), ``counts`` (of the last run), ``baseline_rss``
and ``peak_rss`` (bytes: ``VmRSS`` after imports, and ``VmHWM``, the peak resident set
of the whole process, from ``/proc/self/status`` (0 on Windows); ``ru_maxrss`` is not used because after
``fork`` + ``exec`` it can carry the parent's peak), ``threads`` (the process's threads
after the runs, e.g. 1 + rayon's pool).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from typing import Any


def _status_kb(field: str) -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:  # pragma: no cover - not Linux
        pass
    return 0


def peak_rss_bytes() -> int:
    """``VmHWM`` (peak resident set) of this process in bytes; on systems without
    ``/proc`` the ``ru_maxrss`` of this process (KiB on Linux, bytes on macOS)."""
    kb = _status_kb("VmHWM")
    if kb:
        return kb * 1024
    if sys.platform == "win32":  # pragma: no cover
        return 0
    import resource  # pragma: no cover - POSIX only

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # pragma: no cover
    return rss if sys.platform == "darwin" else rss * 1024  # pragma: no cover


def _cpu() -> float:
    # user + system CPU of the whole process, all threads (getrusage's RUSAGE_SELF on POSIX)
    return time.process_time()


def failed_result(error: str | None) -> dict[str, Any]:
    """A result dict with no runs in it: ``ok`` False, ``error`` as given, empty lists and
    zero sizes, with the keys of ``RESULT`` (module docstring). ``run`` starts from it, and
    the parent process gives it when the runner timed out or died before answering."""
    return {
        "ok": False,
        "error": error,
        "times_s": [],
        "warmup_s": [],
        "cpu_s": [],
        "counts": None,
        "baseline_rss": 0,
        "peak_rss": 0,
        "threads": 0,
    }


def run(job: dict[str, Any]) -> dict[str, Any]:
    """Run one job (see the module docstring) and return the result dict."""
    from .parsers import lookup

    out = failed_result(None)
    if job.get("mem_limit"):
        import resource  # POSIX only: the benchmarks run on Linux

        limit = int(job["mem_limit"])
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    name, _, func, module = lookup(job["fmt"], job["parser"])
    paths = list(job["paths"])
    total = int(job["warmup"]) + int(job["reps"])
    done = 0
    try:
        if module:
            importlib.import_module(module)
        if name in ("native", "pure") or name.startswith(("native-", "pure")):
            importlib.import_module("pytest_mcp_server.engine")
            import orjson  # noqa: F401  (used to read the summary)
        out["baseline_rss"] = _status_kb("VmRSS") * 1024
        for i in range(total):
            c0, t0 = _cpu(), time.perf_counter()
            counts = func(paths)
            dt, dc = time.perf_counter() - t0, _cpu() - c0
            if i < int(job["warmup"]):
                out["warmup_s"].append(dt)
            else:
                out["times_s"].append(dt)
                out["cpu_s"].append(dc)
            out["counts"] = counts
            done += 1
            print(f"PROGRESS {done} {total}", flush=True)
        out["ok"] = True
    except MemoryError:
        out["error"] = f"MemoryError (address space limited to {job.get('mem_limit', 0) / 2**30:.0f} GiB)"
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - pyo3's PanicException is a BaseException
        text = str(exc).strip().splitlines()
        out["error"] = f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
    out["peak_rss"] = peak_rss_bytes()
    out["threads"] = _status_kb("Threads")
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    job = json.loads(argv[0])
    if job.get("env"):
        os.environ.update(job["env"])
    result = run(job)
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
