"""The report engine of two (or more) installs side by side, in one run, on the same files.

Every engine change is measured with this script against the engine it replaces (the
commit on main, or an older one named by an issue), so a slowdown or a memory rise shows
next to the figure it is compared with, under the same load:

    python benches/engine_compare.py \\
        --engine 1d1053d=git:1d1053d --engine now=.venv/bin/python \\
        --formats junit,pytest-json --sizes 10MB,100MB,1GB --rounds 3

``--engine NAME=PYTHON`` is an interpreter with ``pytest_mcp_server`` installed (any
commit: only ``pytest_mcp_server.engine.summarize_bytes`` is used, which every commit
since the engine landed has). ``--engine NAME=git:REV`` builds the engine of commit
``REV`` once into ``--build-dir`` (``git archive`` + a venv + ``pip install``, release
profile; a few minutes) and reuses it afterwards.

The files are the bench generator's (``pytest-mcp-server bench generate``, run with the
first engine's interpreter into ``--data``, reused when present), or given with
``--file``. Each measurement is a fresh process (``python -c``) that imports the engine,
then calls the native backend ``--reps`` times on one file: the first call (page cache
warm, everything else cold: thread pool, allocator) and the best of the others are
reported, with the import time and ``VmHWM`` (peak resident set of the whole process,
interpreter included) from ``/proc/self/status``. Rounds alternate the engines' order
(``a b``, ``b a``, ...), so drift in the machine's load falls on both. Outcome counts are
compared between engines: a difference is printed as ``COUNTS DIFFER``.

Prints a Markdown table (best time, MB/s, first call, import, peak RSS, ratio to the first
engine) and, with ``--save``, writes every measurement as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from pytest_mcp_server.bench.common import PROVENANCE_KEY, load_average, provenance

REPO = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from pytest_mcp_server.engine import summarize_bytes
import_s = time.perf_counter() - t0
path, reps = sys.argv[1], int(sys.argv[2])
times = []
out = b""
for _ in range(reps):
    t = time.perf_counter()
    out = summarize_bytes([path], backend="native")
    times.append(time.perf_counter() - t)
peak_kb = 0
with open("/proc/self/status") as f:
    for line in f:
        if line.startswith("VmHWM:"):
            peak_kb = int(line.split()[1])
summary = json.loads(out)
print(json.dumps({"import_s": import_s, "times_s": times, "peak_rss_kib": peak_kb,
                  "counts": summary["counts"], "groups": len(summary.get("groups", [])),
                  "summary_bytes": len(out)}))
"""


def parse_size(text: str) -> int:
    """``10MB``, ``1GB``, ``300MB`` -> bytes (10^6 and 10^9, as the generator counts)."""
    units = {"KB": 10**3, "MB": 10**6, "GB": 10**9}
    for unit, factor in units.items():
        if text.upper().endswith(unit):
            return int(float(text[: -len(unit)]) * factor)
    return int(text)


def build_engine(rev: str, build_dir: Path) -> Path:
    """The interpreter of a venv with the engine of commit ``rev`` installed, built once.

    Raises ``subprocess.CalledProcessError`` when ``git`` or ``pip`` fail (their output is
    shown)."""
    sha = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", f"{rev}^{{commit}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    home = build_dir / sha[:12]
    python = home / "venv" / "bin" / "python"
    if python.exists():
        return python
    src = home / "src"
    src.mkdir(parents=True, exist_ok=True)
    print(f"building the engine of {rev} ({sha[:12]}) in {home} ...", file=sys.stderr)
    with tempfile.TemporaryFile() as archive:
        subprocess.run(["git", "-C", str(REPO), "archive", sha], check=True, stdout=archive)
        archive.seek(0)
        with tarfile.open(fileobj=archive) as tar:
            tar.extractall(src, filter="data")
    subprocess.run([sys.executable, "-m", "venv", str(home / "venv")], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(src)], check=True)
    return python


def engine_python(spec: str, build_dir: Path) -> Path:
    """``PYTHON`` or ``git:REV`` (see the module docstring) -> an interpreter path."""
    if spec.startswith("git:"):
        return build_engine(spec[4:], build_dir)
    return Path(spec)


def data_file(python: Path, fmt: str, size: str, data: Path) -> Path:
    """The generator's file of ``fmt`` and ``size`` in ``data``, generated when missing."""
    path = data / f"{fmt}-{size}.{'xml' if fmt == 'junit' else 'json'}"
    if not path.exists():
        data.mkdir(parents=True, exist_ok=True)
        cmd = [str(python), "-m", "pytest_mcp_server", "bench", "generate"]
        subprocess.run([*cmd, "--format", fmt, "--size", size, str(path)], check=True)
    return path


def child_json(python: Path, code: str, *args: object) -> dict[str, Any]:
    """Run ``code`` in a fresh ``python -c`` process with ``args`` and return the JSON
    object its last line of output prints. Exits (``SystemExit``, with the child's
    stderr) when the child fails."""
    proc = subprocess.run(
        [str(python), "-c", code, *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    if proc.returncode != 0:
        raise SystemExit(f"{python} failed on {args}:\n{proc.stderr}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def measure(python: Path, path: Path, reps: int) -> dict[str, Any]:
    """One fresh process: import the engine, summarise ``path`` ``reps`` times."""
    return child_json(python, CHILD, path, reps)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engine", action="append", required=True, metavar="NAME=PYTHON|git:REV")
    parser.add_argument("--formats", default="junit,pytest-json")
    parser.add_argument("--sizes", default="10MB,100MB,1GB")
    parser.add_argument("--file", action="append", default=[], help="a report file (instead of generated ones)")
    parser.add_argument("--data", type=Path, default=Path.home() / ".cache/pytest-mcp-server/bench")
    parser.add_argument("--build-dir", type=Path, default=Path.home() / ".cache/pytest-mcp-server/engines")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=0, help="calls per process (default: 5 below 500 MB, else 2)")
    parser.add_argument("--save", type=Path)
    args = parser.parse_args(argv)

    engines: list[tuple[str, Path]] = []
    for spec in args.engine:
        name, _, where = spec.partition("=")
        if not where:
            parser.error(f"--engine {spec!r}: expected NAME=PYTHON or NAME=git:REV")
        engines.append((name, engine_python(where, args.build_dir)))

    files = [Path(f) for f in args.file]
    if not files:
        for fmt in args.formats.split(","):
            for size in args.sizes.split(","):
                files.append(data_file(engines[-1][1], fmt, size, args.data))

    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    load_start = load_average() or [0.0, 0.0, 0.0]
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for path in files:
        nbytes = path.stat().st_size
        reps = args.reps or (5 if nbytes < 500 * 10**6 else 2)
        for rnd in range(args.rounds):
            order = engines if rnd % 2 == 0 else engines[::-1]
            for name, python in order:
                res = measure(python, path, reps)
                runs.setdefault((str(path), name), []).append(res)
                print(
                    f"{path.name} round {rnd} {name}: best {min(res['times_s'][1:] or res['times_s']):.3f} s, "
                    f"peak {res['peak_rss_kib'] / 1024:.1f} MiB",
                    file=sys.stderr,
                )

    rows = []
    for path in files:
        nbytes = path.stat().st_size
        base_best = None
        base_counts = None
        for name, _ in engines:
            results = runs[(str(path), name)]
            best = min(min(r["times_s"][1:] or r["times_s"]) for r in results)
            first = min(r["times_s"][0] for r in results)
            row = {
                "file": path.name,
                "bytes": nbytes,
                "engine": name,
                "best_s": best,
                "mb_per_s": nbytes / 1e6 / best,
                "first_call_s": first,
                "import_s": min(r["import_s"] for r in results),
                "peak_rss_mib": max(r["peak_rss_kib"] for r in results) / 1024,
                "groups": results[0]["groups"],
                "counts": results[0]["counts"],
            }
            if base_best is None:
                base_best, base_counts = best, {k: v for k, v in row["counts"].items() if k in OUTCOMES}
            row["speed_vs_first"] = base_best / best
            own = {k: v for k, v in row["counts"].items() if k in OUTCOMES}
            row["counts_agree"] = own == base_counts
            rows.append(row)

    load_end = load_average() or [0.0, 0.0, 0.0]
    print(
        f"\n{started}, load {load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end; "
        f"{args.rounds} rounds, engines alternating\n"
    )
    print("| file | engine | best s | MB/s | x first | first call s | import s | peak RSS MiB | groups | counts |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print(
            f"| {r['file']} | {r['engine']} | {r['best_s']:.3f} | {r['mb_per_s']:.0f} | {r['speed_vs_first']:.2f}x "
            f"| {r['first_call_s']:.3f} | {r['import_s']:.3f} | {r['peak_rss_mib']:.1f} | {r['groups']} "
            f"| {'same' if r['counts_agree'] else 'COUNTS DIFFER'} |"
        )
    if args.save:
        args.save.write_text(
            json.dumps(
                {
                    PROVENANCE_KEY: provenance(load_start, REPO),
                    "started": started,
                    "load": [load_start, load_end],
                    "rows": rows,
                    "engines": {n: str(p) for n, p in engines},
                },
                indent=1,
            )
        )
    return 0 if all(r["counts_agree"] for r in rows) else 1


OUTCOMES = ("passed", "failed", "errors", "skipped", "xfailed", "xpassed", "total")

if __name__ == "__main__":
    raise SystemExit(main())
