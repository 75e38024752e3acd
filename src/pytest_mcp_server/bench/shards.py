"""``bench shards``: many report files at once (CI shards), native parallel merge vs
one-by-one.

``files`` shards of ``shard_size`` bytes each are generated per format (shard ``i`` with
seed ``seed + i`` and module numbers from ``i * 1_000_000``, so node ids differ between
shards as they do in a split suite). Modes, each in its own process
(``parsers.SHARD_MODES``):

* ``native-parallel``: ``summarize_bytes(all files)`` (rayon parses the files in
  parallel threads, then merges in input order);
* ``native-1-thread``: the same call with ``RAYON_NUM_THREADS=1``;
* ``native-one-by-one``: one ``summarize_bytes([file])`` per file, nothing merged (what a
  caller without the multi-file API would do);
* ``pure``: the pure backend on all files in one call (only with ``--modes ...,pure``:
  at about 6 MB/s it takes minutes).

Rows carry the same figures as ``bench reports`` plus ``threads`` (threads of the process
after the runs: 1 + the rayon pool), ``parallelism`` (CPU seconds / wall seconds of the
median run) and ``vs_one_by_one`` (one-by-one median / this median; >= 1.7 on 2 cores is
the target). Merged counts are checked against the sum of the shards' truths.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import common, parsers
from .generate import format_size
from .reports import _row_from_result

if TYPE_CHECKING:
    from rich.progress import Progress

SHARDS_TARGET = 1.7
DEFAULT_MODES = ("native-parallel", "native-1-thread", "native-one-by-one")  # pure: only when asked for


def run_shards(
    formats: list[str],
    *,
    files: int,
    shard_size: int,
    cache: Path,
    seed: int,
    modes: list[str] | None,
    reps: int,
    warmup: int,
    timeout: float,
    mem_limit: int,
    progress: Progress,
) -> list[dict[str, Any]]:
    """Measure; one row per (format, mode)."""
    rows: list[dict[str, Any]] = []
    for fmt in formats:
        sub = cache / f"shards-{fmt}-{files}x{format_size(shard_size)}"
        paths: list[str] = []
        truths: list[dict[str, Any]] = []
        task = progress.add_task(f"{fmt}: {files} shards of {format_size(shard_size)}", total=files)
        for i in range(files):
            path, truth, _ = common.ensure_report(
                sub, fmt, shard_size, seed + i, None, suffix=f"-shard{i:03d}", module_offset=i * 1_000_000
            )
            paths.append(str(path))
            truths.append(truth)
            progress.advance(task)
        progress.remove_task(task)
        truth = common.sum_truths(truths)
        group: list[dict[str, Any]] = []
        for mode in parsers.SHARD_MODES:
            name, desc, _, _ = mode
            if (modes and name not in modes) or (not modes and name not in DEFAULT_MODES):
                continue
            row: dict[str, Any] = {
                "bench": "shards",
                "format": fmt,
                "files": files,
                "size": format_size(shard_size),
                "bytes": truth["bytes"],
                "parser": name,
                "description": desc,
            }
            if not parsers.available(mode):
                row.update(available=False, ok=False, error="not installed")
                group.append(row)
                continue
            env = {"RAYON_NUM_THREADS": "1"} if name == "native-1-thread" else {}
            t = progress.add_task(f"{fmt} shards: {name}", total=warmup + reps)
            job = {
                "fmt": "shards",
                "parser": name,
                "paths": paths,
                "warmup": warmup,
                "reps": reps,
                "mem_limit": mem_limit,
            }
            res = common.spawn(job, timeout=timeout, env=env, on_progress=common.progress_callback(progress, t))
            progress.remove_task(t)
            row.update(_row_from_result(res, truth, truth["bytes"]))
            row["env"] = env
            row["parallelism"] = (row["cpu_s"] / row["median_s"]) if row.get("median_s") and row.get("cpu_s") else None
            group.append(row)
        base = next((r for r in group if r["parser"] == "native-one-by-one" and r.get("median_s")), None)
        native = next((r for r in group if r["parser"] == "native-parallel" and r.get("median_s")), None)
        for r in group:
            r["vs_one_by_one"] = (base["median_s"] / r["median_s"]) if base and r.get("median_s") else None
            r["vs_native"] = (r["median_s"] / native["median_s"]) if native and r.get("median_s") else None
        rows.extend(group)
    return rows


def cpu_count() -> int:
    """CPUs this process may run on (the affinity mask, else ``os.cpu_count()``)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover
        return os.cpu_count() or 1
