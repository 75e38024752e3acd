#!/usr/bin/env python
"""A run through the server against plain pytest on values costly to render
(``tests/fixtures/deep_repr``): the wall time of ``execute_tests``, its record file and
its answer, and, once, what pytest does at ``-vv`` (the verbosity the server used to
force).

The ways, alternating in every round (round 0 warms the caches and is not counted):

* ``pytest -q``: pytest by hand (``python -m pytest -q`` in a copy of the fixture, the
  server's environment without its plugin directory): the baseline of every ratio;
* ``execute_tests``: the tool called over stdio on a server started once, in the
  ``typed`` answer view (the time the client waits: pytest with the record plugin, the
  engine's reading, the answer).

``--vv-reference`` adds one run of ``pytest -q -o verbosity_assertions=2`` with
pytest-reportlog's ``--report-log`` (the same JSON-lines format, never cut): what the
server's run took and wrote while it forced that option. It takes a minute and writes
over a GB into a temporary directory.

``CI`` and ``BUILD_NUMBER`` are emptied in every way's environment: pytest renders whole
diffs on CI (``running_on_ci``), and this measures its default. Prints the load average,
each run, a markdown table (median and range of each way, its ratio to ``pytest -q``'s
median, the record file and the answer), and each test's call duration from the last
record file (and from the ``-vv`` one); ``--json FILE`` writes the same. Usage::

    python benches/costly_reprs.py [--rounds 7] [--vv-reference] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from spread import spread

from pytest_mcp_server.run.argv import child_env

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "deep_repr"
BASELINE = "pytest -q"
"""The way every ratio divides by: pytest by hand."""
NOT_ON_CI = {"CI": "", "BUILD_NUMBER": ""}


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Wall seconds of one pytest child (exit 1 expected: the fixture's tests fail)."""
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, stdin=subprocess.DEVNULL)
    took = time.perf_counter() - start
    if proc.returncode != 1:
        raise SystemExit(f"{argv[:4]} exited with {proc.returncode}: {proc.stdout.decode(errors='replace')[-2000:]}")
    return took


def call_durations(records: Path) -> dict[str, float]:
    """Each test's call duration (seconds) in a report log."""
    out = {}
    with records.open("rb") as f:
        for line in f:
            if b'"when":"call"' not in line and b'"when": "call"' not in line:
                continue
            report = json.loads(line)
            if report.get("$report_type") == "TestReport" and report.get("when") == "call":
                out[report["nodeid"].split("::")[-1]] = round(report["duration"], 3)
    return out


async def measure(root: Path, work: Path, rounds: int) -> tuple[dict[str, list[float]], dict]:
    from mcp import Client, StdioServerParameters

    env = {**os.environ, **NOT_ON_CI}
    plain_env = {k: v for k, v in child_env().items() if k != "PYTHONPATH"} | NOT_ON_CI
    by_hand = [sys.executable, "-m", "pytest", "-q"]
    times: dict[str, list[float]] = {BASELINE: [], "execute_tests": []}
    last: dict = {}
    args = ["-m", "pytest_mcp_server", "--root", str(root), "--artifacts-dir", str(work / "artifacts")]
    args += ["--answer-view", "typed"]  # the typed result: the record file's path, pytest's session time
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    async with Client(params, mode="legacy", read_timeout_seconds=600) as client:
        for rnd in range(rounds + 1):
            took = {BASELINE: await anyio.to_thread.run_sync(timed, by_hand, root, plain_env)}
            start = time.perf_counter()
            result = await client.call_tool("execute_tests", {})
            took["execute_tests"] = time.perf_counter() - start
            content = result.structured_content
            if content is None or content["status"] != "failed":
                raise SystemExit(f"execute_tests did not fail as the fixture does: {result.content[0]}")
            records = Path(content["report_path"])
            last = {
                "record_bytes": records.stat().st_size,
                "answer_bytes": len(result.content[0].text.encode()),
                "session_s": content["duration_s"],
                "call_s": call_durations(records),
            }
            print(f"round {rnd}: " + ", ".join(f"{k} {v:.2f}s" for k, v in took.items()), flush=True)
            if rnd:
                for way, seconds in took.items():
                    times[way].append(seconds)
    return times, last


def vv_reference(root: Path, work: Path) -> dict:
    """One run at -vv, written by pytest-reportlog: wall time, file size, call durations."""
    records = work / "vv.jsonl"
    env = {k: v for k, v in child_env().items() if k != "PYTHONPATH"} | NOT_ON_CI
    argv = [sys.executable, "-m", "pytest", "-q", "-o", "verbosity_assertions=2", f"--report-log={records}"]
    took = timed(argv, root, env)
    reference = {"wall_s": round(took, 3), "record_bytes": records.stat().st_size, "call_s": call_durations(records)}
    records.unlink()
    return reference


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="counted rounds (each runs every way once)")
    parser.add_argument("--vv-reference", action="store_true", help="also one run at -vv (a minute, over a GB)")
    parser.add_argument("--json", type=Path, help="also write the table and every run here")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="costly-reprs-"))
    try:
        root = work / "deep_repr"
        shutil.copytree(FIXTURE, root)
        load_start = os.getloadavg()
        print(f"{FIXTURE.name}, {args.rounds} rounds; load average at the start {load_start}", flush=True)
        times, last = anyio.run(measure, root, work, args.rounds)
        reference = vv_reference(root, work) if args.vv_reference else None
        load_end = os.getloadavg()
        print(f"load average at the end {load_end}\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = statistics.median(times[BASELINE])
    ways = {way: {**spread(runs, base), "runs_s": [round(r, 3) for r in runs]} for way, runs in times.items()}
    print(f"| way | median (s) | range (s) | / {BASELINE} |")
    print("|---|---:|---:|---:|")
    for way, row in ways.items():
        print(f"| {way} | {row['median_s']:.2f} | {row['min_s']:.2f}-{row['max_s']:.2f} | {row['ratio']:.3f}x |")
    sizes = f"record file {last['record_bytes']:,} bytes, answer {last['answer_bytes']:,} bytes"
    print(f"\nexecute_tests, last round: {sizes}")
    if reference:
        print(f"-vv reference: {reference['wall_s']:.2f}s, report log {reference['record_bytes']:,} bytes")
    print("\n| test | call (s), execute_tests | call (s), -vv |")
    print("|---|---:|---:|")
    for name, seconds in last["call_s"].items():
        vv = reference["call_s"].get(name) if reference else None
        print(f"| {name} | {seconds:.3f} | {'' if vv is None else f'{vv:.3f}'} |")
    if args.json:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        written = {
            "fixture": "tests/fixtures/deep_repr",
            "rounds": args.rounds,
            "commit": commit,
            "load_average": {"start": load_start, "end": load_end},
            "baseline": BASELINE,
            "ways": ways,
            "execute_tests_last_round": last,
            "vv_reference": reference,
        }
        args.json.write_text(json.dumps(written, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
