"""discover_tests' reading of a collect-only record file, two installs side by side.

``discover_tests`` runs ``pytest --collect-only`` with the server's plugin and reads the
record file it writes for the collection errors, the tests per file and one page of node
ids. Before the engine read the page (930c317 and older) the server read that file twice:
the engine's ``read_report`` for the collection errors, then ``run.events.read_collected``
for the page; now ``read_report(..., collected_page=...)`` reads it once. This script
times the whole reading, in one run, for each install:

    python benches/discover_read.py --engine 930c317=git:930c317 --engine now=.venv/bin/python \\
        --tests 100000 --offset 50000 --rounds 5 --save discover_read.json

The suite is ``--tests`` parametrised tests in 100 modules, collected once into
``--work`` by the pytest and plugin of the interpreter running this script. Each measurement is
a fresh process that reads the file ``--reps`` times (the best is kept); rounds alternate
the engines' order. Every engine must give the same total and page, else the script
stops. ``--engine`` is as for ``engine_compare.py`` (``git:REV`` builds once into
``--build-dir``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from engine_compare import child_json, engine_python

from pytest_mcp_server.bench.common import PROVENANCE_KEY, load_average, provenance
from pytest_mcp_server.run.events import PLUGIN_DIR

CHILD = r"""
import json, sys, time
from pytest_mcp_server.engine import read_report
from pytest_mcp_server.engine.models import Budgets
from pytest_mcp_server.domain.policy import MAX_FILES_LISTED
path, offset, limit, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
try:  # the engine reads the page in the same pass
    from pytest_mcp_server.engine.models import CollectedPage
    def read():
        page = CollectedPage(offset=offset, limit=limit, max_files=MAX_FILES_LISTED)
        c = read_report([path], budgets=Budgets(failures_listed=0), collected_page=page).session.collected_ids
        return c.total, c.page
except ImportError:  # the server's second reader
    from pytest_mcp_server.run.events import read_collected
    def read():
        read_report([path], budgets=Budgets(failures_listed=0))
        total, _, _, page = read_collected(path, offset, limit)
        return total, page
times = []
for _ in range(reps):
    t = time.perf_counter()
    total, page = read()
    times.append(time.perf_counter() - t)
print(json.dumps({"times_s": times, "total": total, "page": page}))
"""


def collect(tests: int, work: Path) -> Path:
    """The record file of ``pytest --collect-only`` over ``tests`` tests in 100 modules,
    written by this interpreter's pytest and plugin (made once in ``work``)."""
    records = work / f"collect-{tests}.jsonl"
    if records.exists():
        return records
    suite = work / f"suite-{tests}"
    (suite / "tests").mkdir(parents=True, exist_ok=True)
    per_module = max(1, tests // 100)
    for m in range(100):
        (suite / "tests" / f"test_c{m}.py").write_text(
            f"import pytest\n\n\n@pytest.mark.parametrize('v', range({per_module}))\ndef test_v(v):\n    pass\n"
        )
    argv = [sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "pytest_mcp_server_events"]
    argv += [f"--mcp-records={records}", "-p", "no:cacheprovider"]
    subprocess.run(argv, cwd=suite, env={**os.environ, "PYTHONPATH": str(PLUGIN_DIR)}, check=True, capture_output=True)
    return records


def measure(python: Path, records: Path, offset: int, limit: int, reps: int) -> dict[str, Any]:
    """One fresh process reading ``records`` ``reps`` times."""
    return child_json(python, CHILD, records, offset, limit, reps)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engine", action="append", required=True, help="NAME=PYTHON or NAME=git:REV")
    parser.add_argument("--tests", type=int, default=100_000)
    parser.add_argument("--offset", type=int, default=50_000)
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "discover-read")
    parser.add_argument("--build-dir", type=Path, default=Path(tempfile.gettempdir()) / "engine-builds")
    parser.add_argument("--save", type=Path)
    args = parser.parse_args(argv)
    engines = [(name, engine_python(spec, args.build_dir)) for name, spec in (e.split("=", 1) for e in args.engine)]
    args.work.mkdir(parents=True, exist_ok=True)
    records = collect(args.tests, args.work)
    load_start = load_average()
    best: dict[str, float] = {}
    answers: dict[str, tuple[int, list[str]]] = {}
    for r in range(args.rounds):
        for name, python in engines if r % 2 == 0 else engines[::-1]:
            m = measure(python, records, args.offset, args.limit, args.reps)
            best[name] = min(best.get(name, float("inf")), min(m["times_s"]))
            answers[name] = (m["total"], m["page"])
            print(f"round {r} {name}: best {min(m['times_s']):.4f} s", file=sys.stderr)
    if len({json.dumps(a) for a in answers.values()}) != 1:
        raise SystemExit(f"the engines disagree on the total or the page: {answers}")
    first = best[engines[0][0]]
    load = (load_average() or [0.0])[0]
    when = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    print(f"\n{when}, load {load:.2f}; {args.tests} tests collected, page at {args.offset}")
    print("\n| engine | best s | x first |\n|---|---:|---:|")
    for name, _ in engines:
        print(f"| {name} | {best[name]:.4f} | {first / best[name]:.2f}x |")
    if args.save:
        rows = [{"engine": name, "best_s": best[name]} for name, _ in engines]
        meta = {"tests": args.tests, "offset": args.offset, "limit": args.limit, "rounds": args.rounds, "load": load}
        measured = provenance(load_start, Path(__file__).resolve().parents[1])
        args.save.write_text(json.dumps({PROVENANCE_KEY: measured, **meta, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
