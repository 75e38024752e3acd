"""Native vs pure at scale: generated reports until N test records were compared.

The hypothesis parity tests (tests/engine/test_property_parity.py) explore odd inputs a few
thousand at a time; this run checks volume: the bench generator's reports (pytest's long
tracebacks, site-packages frames, captured output, parametrized ids, collection errors;
JUnit XML and pytest-json-report alternately, each from its own seed) summarised by both
backends, with budgets large enough that hundreds of failures are listed, cut and
located (half of them in one line per frame: ``execute_tests``' budgets), and every
test counted, timed and ranked, with and without a project. A case
is one test record; a divergence is a summary whose bytes differ, kept for replay
(``--keep DIR``: the report, its seed and both summaries).

    python benches/differential.py --cases 10000000 --size 20MB --save benches/results/differential.json

Prints one line per report and a final line; exits 1 on any divergence.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from pytest_mcp_server.bench.common import PROVENANCE_KEY, load_average, provenance
from pytest_mcp_server.bench.generate import generate, parse_size
from pytest_mcp_server.engine import summarize_bytes
from pytest_mcp_server.engine.models import Budgets, ProjectCode

# Wide budgets: the rules of many failures are compared, not only the first twenty's.
WIDE = Budgets(failures_listed=500, max_groups=200, max_examples=5, max_slowest=50, max_collection_errors=50)
# The same with execute_tests' one line per frame (docs/ENGINE.md, *The shown traceback*, rule 8).
WIDE_COMPACT = WIDE.model_copy(update={"max_frame_context_lines": 0})
# The generator's project code lives under app/ (tests under tests/).
PROJECT = ProjectCode(root="/srv/checkout", packages=["app"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=10_000_000, help="test records to compare in all")
    parser.add_argument("--size", default="20MB", help="bytes per generated report")
    parser.add_argument("--seed", type=int, default=1, help="seed of the first report (then +1 each)")
    parser.add_argument("--keep", type=Path, help="where to keep diverging reports")
    parser.add_argument("--save", type=Path, help="write the run's figures as JSON")
    args = parser.parse_args(argv)

    started = time.time()
    load_start = load_average()
    cases = reports = divergences = 0
    seed = args.seed
    size = parse_size(args.size)
    work = Path(tempfile.mkdtemp(prefix="differential-"))
    rows = []
    try:
        while cases < args.cases:
            fmt = "junit" if seed % 2 else "pytest-json"
            path = work / f"report-{seed}.{'xml' if fmt == 'junit' else 'json'}"
            truth = generate(path, fmt, size, seed=seed)
            project = PROJECT if seed % 4 < 2 else None
            budgets = WIDE_COMPACT if seed % 8 < 4 else WIDE
            t0 = time.perf_counter()
            native = summarize_bytes([path], backend="native", budgets=budgets, project=project)
            t1 = time.perf_counter()
            pure = summarize_bytes([path], backend="pure", budgets=budgets, project=project)
            t2 = time.perf_counter()
            same = native == pure
            tests = truth["tests"]
            cases += tests
            reports += 1
            listed = len(json.loads(native)["failures"])
            rows.append(
                {
                    "seed": seed,
                    "format": fmt,
                    "project": project is not None,
                    "compact_frames": budgets is WIDE_COMPACT,
                    "tests": tests,
                    "listed_failures": listed,
                    "same": same,
                    "native_s": t1 - t0,
                    "pure_s": t2 - t1,
                }
            )
            print(
                f"seed {seed} {fmt} project={project is not None} compact={budgets is WIDE_COMPACT}: "
                f"{tests} tests, {listed} failures listed, "
                f"{'same' if same else 'DIVERGES'} (native {t1 - t0:.2f} s, pure {t2 - t1:.2f} s); "
                f"{cases:,} cases so far",
                flush=True,
            )
            if not same:
                divergences += 1
                if args.keep:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    shutil.copy(path, args.keep / path.name)
                    (args.keep / f"{path.name}.native.json").write_bytes(native)
                    (args.keep / f"{path.name}.pure.json").write_bytes(pure)
            os.unlink(path)
            Path(f"{path}.truth.json").unlink(missing_ok=True)
            seed += 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    elapsed = time.time() - started
    print(
        f"{cases:,} test records in {reports} reports (seeds {args.seed}-{seed - 1}), "
        f"{divergences} divergences, {elapsed / 60:.1f} min"
    )
    if args.save:
        args.save.write_text(
            json.dumps(
                {
                    PROVENANCE_KEY: provenance(load_start, Path(__file__).resolve().parents[1]),
                    "cases": cases,
                    "reports": reports,
                    "seeds": [args.seed, seed - 1],
                    "size": args.size,
                    "divergences": divergences,
                    "minutes": elapsed / 60,
                    "rows": rows,
                },
                indent=1,
            )
        )
    return 1 if divergences else 0


if __name__ == "__main__":
    sys.exit(main())
