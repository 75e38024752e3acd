"""``bench reports``: every parser on generated reports of several sizes, side by side.

For each size and format: the cached report (generated when missing), then each
available parser in its own process (``bench.runner``): ``warmup`` untimed runs and
``reps`` timed runs. Rows carry the median and min-max wall time, MB/s (decimal MB over
the median), CPU seconds, peak RSS of the whole process, the median time divided by the
native backend's (``vs_native``: 10.0 means ten times slower than native), and the
parser's counts checked against the generator's truth (a wrong parser is marked with its
mismatches, never dropped).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import common, parsers
from .generate import format_size

if TYPE_CHECKING:
    from rich.progress import Progress

# The speed and memory targets of the report engine (benches/RESULTS.md, section 1). Reported, never asserted.
TARGETS = {
    "junit": {"mb_s": 400.0, "vs_pure": 10.0, "vs_best_alt": 8.0, "peak_rss": 64 * 2**20},
    "pytest-json": {"mb_s": 300.0, "vs_pure": 10.0, "vs_best_alt": 8.0, "peak_rss": 64 * 2**20},
}
PURE_PEAK_RSS_TARGET = 128 * 2**20


def default_reps(size: int) -> int:
    """Timed runs per parser: 5 below 500 MB, 3 from there (a pure run of 1 GB takes
    tens of seconds)."""
    return 5 if size < 500 * common.MB else 3


def run_reports(
    sizes: list[int],
    formats: list[str],
    *,
    cache: Path,
    seed: int,
    parser_names: list[str] | None,
    reps: int | None,
    warmup: int,
    timeout: float,
    mem_limit: int,
    progress: Progress,
) -> list[dict[str, Any]]:
    """Measure; returns one row per (size, format, parser) in that order (see module doc)."""
    rows: list[dict[str, Any]] = []
    for size in sizes:
        for fmt in formats:
            path, truth, _ = common.ensure_report(cache, fmt, size, seed, progress)
            n = reps if reps is not None else default_reps(size)
            group: list[dict[str, Any]] = []
            for parser in parsers.PARSERS[fmt]:
                name, desc, _, _ = parser
                if parser_names and name not in parser_names:
                    continue
                row: dict[str, Any] = {
                    "bench": "reports",
                    "format": fmt,
                    "size": format_size(size),
                    "target_bytes": size,
                    "bytes": truth["bytes"],
                    "tests": truth["tests"],
                    "parser": name,
                    "description": desc,
                    "file": str(path),
                }
                if not parsers.available(parser):
                    row.update(available=False, ok=False, error="not installed")
                    group.append(row)
                    continue
                task = progress.add_task(f"{fmt} {format_size(size)}: {name}", total=warmup + n)
                job = {
                    "fmt": fmt,
                    "parser": name,
                    "paths": [str(path)],
                    "warmup": warmup,
                    "reps": n,
                    "mem_limit": mem_limit,
                }
                t0 = time.monotonic()
                res = common.spawn(job, timeout=timeout, on_progress=common.progress_callback(progress, task))
                progress.remove_task(task)
                row.update(_row_from_result(res, truth, truth["bytes"]))
                row["process_s"] = time.monotonic() - t0
                group.append(row)
            _add_ratios(group)
            rows.extend(group)
    return rows


def _row_from_result(res: dict[str, Any], truth: dict[str, Any], nbytes: int) -> dict[str, Any]:
    st = common.stats(res["times_s"])
    ok_counts, mismatch = common.check_counts(res["counts"], truth) if res["ok"] else (None, {})
    cpu = common.stats(res["cpu_s"])["median"]
    return {
        "available": True,
        "ok": bool(res["ok"]),
        "error": res["error"],
        "reps": len(res["times_s"]),
        "warmup_s": res["warmup_s"],
        "times_s": res["times_s"],
        "median_s": st["median"],
        "min_s": st["min"],
        "max_s": st["max"],
        "mb_s": (nbytes / common.MB / st["median"]) if st["median"] else None,
        "cpu_s": cpu,
        "peak_rss": res["peak_rss"] or None,
        "baseline_rss": res["baseline_rss"] or None,
        "threads": res["threads"],
        "counts": res["counts"],
        "truth_ok": ok_counts,
        "mismatch": mismatch,
    }


def _add_ratios(group: list[dict[str, Any]]) -> None:
    native = next((r for r in group if r["parser"] == "native" and r.get("median_s")), None)
    for r in group:
        r["vs_native"] = (r["median_s"] / native["median_s"]) if native and r.get("median_s") else None


def target_checks(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The issues' targets, per format: throughput at the largest size measured (the
    issue says "on 1 GB"), the ratios at every size, peak RSS over all sizes. Each is
    ``{format, size, target, value, unit, met}`` (``met`` None when a figure is
    missing; a figure from a parser whose counts are wrong never meets a target)."""
    out: list[dict[str, Any]] = []
    by_fmt: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_fmt.setdefault(r["format"], []).append(r)
    for fmt, frows in by_fmt.items():
        tg = TARGETS[fmt]

        def add(size: str, target: str, value: float | None, met: bool | None, unit: str, fmt: str = fmt) -> None:
            out.append({"format": fmt, "size": size, "target": target, "value": value, "unit": unit, "met": met})

        sizes = sorted({r["target_bytes"] for r in frows})
        at_size = {n: {r["parser"]: r for r in frows if r["target_bytes"] == n} for n in sizes}
        largest = sizes[-1]
        native = at_size[largest].get("native")
        nat_ok = bool(native and native.get("ok") and native.get("truth_ok"))
        v = native.get("mb_s") if native is not None and nat_ok else None
        add(
            format_size(largest),
            f"native >= {tg['mb_s']:.0f} MB/s",
            v,
            (v >= tg["mb_s"]) if v is not None else None,
            "MB/s",
        )
        for n in sizes:
            at = at_size[n]
            nat = at.get("native")
            if not (nat and nat.get("ok") and nat.get("truth_ok")):
                continue
            pure = at.get("pure")
            v = pure.get("vs_native") if pure and pure.get("ok") else None
            add(
                format_size(n),
                f"native >= {tg['vs_pure']:.0f}x pure",
                v,
                (v >= tg["vs_pure"]) if v is not None else None,
                "x",
            )
            alts = [r for p, r in at.items() if p not in ("native", "pure") and r.get("ok") and r.get("vs_native")]
            best = min(alts, key=lambda r: r["vs_native"]) if alts else None
            v = best["vs_native"] if best else None
            add(
                format_size(n),
                f"native >= {tg['vs_best_alt']:.0f}x fastest alternative" + (f" ({best['parser']})" if best else ""),
                v,
                (v >= tg["vs_best_alt"]) if v is not None else None,
                "x",
            )
        all_sizes = f"{format_size(sizes[0])}-{format_size(largest)}" if len(sizes) > 1 else format_size(largest)
        for parser, limit in (("native", tg["peak_rss"]), ("pure", PURE_PEAK_RSS_TARGET)):
            peaks = [r["peak_rss"] for r in frows if r["parser"] == parser and r.get("ok") and r.get("peak_rss")]
            v = max(peaks) / 2**20 if peaks else None
            add(
                all_sizes,
                f"{parser} peak RSS <= {limit // 2**20} MiB (whole process, every size)",
                v,
                (v <= limit / 2**20) if v is not None else None,
                "MiB",
            )
    return out
