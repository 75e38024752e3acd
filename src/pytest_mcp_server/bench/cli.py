"""``pytest-mcp-server bench {reports,shards,suite,markdown,generate} ...``.

Exit status: 0 when every measured parser/mode ran and every count matched the truth;
1 when some parser failed or counted wrong (the table marks it); 2 for bad arguments.
Timing targets never change the exit status (they are reported, not asserted).

Output: a table on stdout (progress bars on stderr); ``--json`` prints one JSON document
instead (``{"bench", "provenance", "command", "machine", "started", "elapsed_s", "rows", "targets"}``;
``provenance``: ``common.provenance``);
``--save FILE.json`` also writes that document (``bench markdown FILE.json`` turns it into
the tables of ``benches/RESULTS.md``); ``--plot FILE.png`` draws the figures (needs
matplotlib: the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from . import common
from .generate import DEFAULT_SEED, FORMATS, parse_size


def _sizes(text: str) -> list[int]:
    try:
        return [parse_size(s) for s in text.split(",") if s.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _formats(text: str) -> list[str]:
    out = [s.strip() for s in text.split(",") if s.strip()]
    for f in out:
        if f not in FORMATS:
            raise argparse.ArgumentTypeError(f"unknown format {f!r}; choose from {', '.join(FORMATS)}")
    return out


def _names(text: str) -> list[str]:
    return [s.strip() for s in text.split(",") if s.strip()]


def _common(p: argparse.ArgumentParser, *, reps_default: str) -> None:
    p.add_argument("--json", action="store_true", help="print a JSON document instead of the table")
    p.add_argument(
        "--save",
        type=Path,
        default=None,
        metavar="FILE.json",
        help="also write the JSON document to FILE.json (for 'bench markdown')",
    )
    p.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help=f"where generated files are kept between runs (default: {common.default_cache_dir()})",
    )
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"generator seed (default {DEFAULT_SEED})")
    p.add_argument("--reps", type=int, default=None, help=f"timed runs per measurement ({reps_default})")
    p.add_argument("--warmup", type=int, default=1, help="untimed runs first (default 1)")
    p.add_argument(
        "--timeout", type=float, default=1800.0, metavar="SECONDS", help="limit per measuring process (default 1800)"
    )
    p.add_argument(
        "--mem-limit",
        type=_size,
        default=parse_size("16GiB"),
        metavar="SIZE",
        help="address-space limit per measuring process; a parser that needs more is reported as failed "
        "(default 16GiB; 0 for none)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pytest-mcp-server bench",
        description="Benchmarks of the report engine and the server (figures: benches/RESULTS.md).",
    )
    sub = p.add_subparsers(dest="mode", required=True, metavar="{reports,shards,suite,markdown,generate}")

    r = sub.add_parser("reports", help="every parser on generated reports of several sizes, side by side")
    r.add_argument(
        "--sizes", type=_sizes, default=_sizes("10MB,100MB,1GB"), help="comma-separated (default 10MB,100MB,1GB)"
    )
    r.add_argument("--formats", type=_formats, default=list(FORMATS), help="junit,pytest-json (default both)")
    r.add_argument(
        "--parsers",
        type=_names,
        default=None,
        help="only these (native,pure,etree,lxml,junitparser,json,orjson,ijson; default all available)",
    )
    r.add_argument("--plot", default=None, metavar="FILE.png", help="draw throughput and peak RSS against size")
    _common(r, reps_default="default 5 below 500 MB, 3 above")

    s = sub.add_parser("shards", help="many report files at once: native parallel merge vs one-by-one")
    s.add_argument("--files", type=int, default=64, help="number of shard files (default 64)")
    s.add_argument("--shard-size", type=_size, default=parse_size("4MB"), help="size of each shard (default 4MB)")
    s.add_argument("--formats", type=_formats, default=list(FORMATS), help="junit,pytest-json (default both)")
    s.add_argument(
        "--modes",
        type=_names,
        default=None,
        help="only these (native-parallel,native-1-thread,native-one-by-one,pure; default the three native ones)",
    )
    _common(s, reps_default="default 5")

    u = sub.add_parser("suite", help="a generated pytest project run plainly, over MCP, and through the CLI")
    u.add_argument("--tests", type=int, default=20_000, help="number of tests (default 20000)")
    u.add_argument("--ways", type=_names, default=None, help="only these of: pytest,mcp,cli (default all)")
    _common(u, reps_default="default 3")

    md = sub.add_parser("markdown", help="print the Markdown tables of saved runs (--save files), for RESULTS.md")
    md.add_argument("files", nargs="+", type=Path)

    g = sub.add_parser("generate", help="write one synthetic report and its truth sidecar")
    g.add_argument("out", type=Path)
    g.add_argument("--format", choices=FORMATS, default="junit")
    g.add_argument("--size", type=_size, default=parse_size("10MB"))
    g.add_argument("--seed", type=int, default=DEFAULT_SEED)
    g.add_argument("--module-offset", type=int, default=0)
    return p


def main(argv: list[str]) -> int:
    """Run a bench mode; returns the exit status (see module docstring)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: 2 on errors, 0 for --help
        return int(exc.code or 0)
    if args.mode == "generate":
        from .generate import main as gen_main

        return gen_main(
            [
                str(args.out),
                "--format",
                args.format,
                "--size",
                str(args.size),
                "--seed",
                str(args.seed),
                "--module-offset",
                str(args.module_offset),
            ]
        )
    if args.mode == "markdown":
        from .render import markdown

        for f in args.files:
            doc = json.loads(f.read_text(encoding="utf-8"))
            if doc["bench"] == "reports":  # derived from the rows: always by the current rules
                from .reports import target_checks

                doc["targets"] = target_checks(doc["rows"])
            sys.stdout.write(markdown(doc) + "\n")
        return 0
    if args.reps is not None and args.reps < 1:
        parser.error("--reps must be >= 1")
    cache = args.cache_dir or common.default_cache_dir()
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    machine = common.machine_info()
    t0 = time.monotonic()
    progress = common.make_progress(enabled=not args.no_progress)
    targets: list[dict[str, Any]] = []
    with progress:
        if args.mode == "reports":
            from .reports import run_reports, target_checks

            rows = run_reports(
                args.sizes,
                args.formats,
                cache=cache,
                seed=args.seed,
                parser_names=args.parsers,
                reps=args.reps,
                warmup=args.warmup,
                timeout=args.timeout,
                mem_limit=args.mem_limit,
                progress=progress,
            )
            targets = target_checks(rows)
        elif args.mode == "shards":
            from .shards import SHARDS_TARGET, run_shards

            rows = run_shards(
                args.formats,
                files=args.files,
                shard_size=args.shard_size,
                cache=cache,
                seed=args.seed,
                modes=args.modes,
                reps=args.reps or 5,
                warmup=args.warmup,
                timeout=args.timeout,
                mem_limit=args.mem_limit,
                progress=progress,
            )
            for r in rows:
                if r["parser"] == "native-parallel":
                    v = r.get("vs_one_by_one")
                    targets.append(
                        {
                            "format": r["format"],
                            "size": f"{r['files']} x {r['size']}",
                            "target": f"parallel merge >= {SHARDS_TARGET}x one-by-one",
                            "value": v,
                            "unit": "x",
                            "met": (v >= SHARDS_TARGET) if v is not None else None,
                        }
                    )
        else:
            from .suite import run_suite

            rows, targets = run_suite(
                tests=args.tests,
                ways=args.ways,
                cache=cache,
                seed=args.seed,
                reps=args.reps or 3,
                warmup=args.warmup,
                timeout=args.timeout,
                progress=progress,
            )
    elapsed = time.monotonic() - t0
    machine["loadavg_end"] = common.machine_info().get("loadavg")
    measured = common.provenance(machine.get("loadavg"))
    command = "pytest-mcp-server bench " + shlex.join(argv)
    doc = {
        "bench": args.mode,
        common.PROVENANCE_KEY: measured,
        "command": command,
        "machine": machine,
        "started": started,
        "elapsed_s": round(elapsed, 1),
        "rows": rows,
        "targets": targets,
    }
    if getattr(args, "plot", None):
        from .render import plot_reports

        try:
            plot_reports(
                rows,
                args.plot,
                f"{command}\n{machine.get('cpu', '?')}, {machine.get('cpus')} CPUs, "
                f"Python {machine['python']}, {started}",
            )
        except ImportError:
            print(
                "pytest-mcp-server bench: --plot needs matplotlib: pip install matplotlib",
                file=sys.stderr,
            )
            return 2
    if args.save is not None:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        args.save.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    if args.json:
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    else:
        _print_tables(doc)
    bad = [r for r in rows if r.get("available", True) and (not r.get("ok") or r.get("truth_ok") is False)]
    return 1 if bad else 0


def _print_tables(doc: dict[str, Any]) -> None:
    from rich.console import Console

    from .render import reports_table, suite_table, targets_table

    console = Console(width=max(140, Console().width))
    m = doc["machine"]
    title = (
        f"{doc['command']}  ({m.get('cpu', '?')}, {m.get('cpus')} CPUs, load {m.get('loadavg')}, "
        f"{doc['elapsed_s']:.0f} s)"
    )
    if doc["bench"] == "suite":
        console.print(suite_table(doc["rows"], title))
    else:
        console.print(reports_table(doc["rows"], title))
    if doc["targets"]:
        console.print(targets_table(doc["targets"]))
