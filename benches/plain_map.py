#!/usr/bin/env python
"""What a plain ``execute_tests`` call pays for reading the test map an earlier affected
call left (``app/map_suspects.py``): the whole call with and without a map, and the steps
it adds after pytest, on a generated project in a git work tree.

The project: ``--modules`` modules of ``--functions`` functions each, one test file per
module testing each function with ``--params`` values (``modules x functions x params``
tests, each an assert on a returned value). An affected call builds the map; then a
one-line wrong-value bug goes into ``mod_0.f_0`` (its ``--params`` tests fail in the
test's assert, no traceback through the bug).

The ways, in-process through ``app.execute.execute_tests`` (the tool's workflow, no MCP
round trip), alternating in every round (round 0 a warm-up, not counted):

* ``failing, no map`` / ``failing, map``: the buggy project, with the map directory
  moved aside / in place (the call with a map names the suspect and regroups);
* ``green, no map`` / ``green, map``: the bug reverted (a call with a map only reads
  each test's outcome; it never opens the map).

And the steps a call with a map adds, each timed ``--repeat`` times per round on the
buggy project's last run (median of all): the engine's reading of the record file with
each test's outcome against without (what a green call pays), the git diff
(``run.git.changed_lines``), the map read and ranking (``suspects_from_map``), the second
engine reading grouped by the top suspect (``app.runner.regrouped``), and all of it
together (``app.map_suspects.with_map_suspects``). The ways' order swaps every round.

Prints the load average, each round, then markdown tables; ``--json FILE`` writes them
and every run. Usage::

    python benches/plain_map.py [--modules 20 --functions 10 --params 10] [--rounds 7]
                                [--repeat 20] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from spread import spread

from pytest_mcp_server.app.execute import execute_run, execute_tests
from pytest_mcp_server.app.map_suspects import recorded_map, suspects_from_map, with_map_suspects
from pytest_mcp_server.app.runner import Runner, regrouped
from pytest_mcp_server.bench.common import PROVENANCE_KEY, load_average, provenance
from pytest_mcp_server.domain.config import ServerConfig
from pytest_mcp_server.domain.suspects import Suspect
from pytest_mcp_server.domain.tools import ExecuteParams
from pytest_mcp_server.run.git import changed_lines
from pytest_mcp_server.run.interpreter import Interpreter
from pytest_mcp_server.run.process import ProcessOutcome

BASELINE = "failing, no map"
"""The way the call ratios divide by: the buggy project's plain call without a map."""
CORRECT = "        return x * 0 + 0\n"
BUG = "        return x * 0 + 1\n"  # mod_0.f_0: a wrong value, caught by the test's assert


def make_project(root: Path, modules: int, functions: int, params: int) -> None:
    """The generated project (module docstring), committed in a new git repository."""
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    for m in range(modules):
        body = "".join(
            f"def f_{f}(x):\n    if x >= 0:\n        return x * {f} + {m}\n    return -1\n\n\n"
            for f in range(functions)
        )
        (root / "pkg" / f"mod_{m}.py").write_text(body)
        tests = "".join(
            f"@pytest.mark.parametrize('x', range({params}))\ndef test_f_{f}(x):\n"
            f"    assert mod_{m}.f_{f}(x) == x * {f} + {m}\n\n\n"
            for f in range(functions)
        )
        (root / "tests" / f"test_mod_{m}.py").write_text(f"import pytest\n\nfrom pkg import mod_{m}\n\n\n{tests}")
    (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\ntestpaths = ['tests']\n")
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@example.invalid", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run([*git, *args], cwd=root, check=True)


def set_bug(root: Path, on: bool) -> None:
    path = root / "pkg" / "mod_0.py"
    text = path.read_text()
    old, new = (CORRECT, BUG) if on else (BUG, CORRECT)
    if old in text:
        path.write_text(text.replace(old, new, 1))


async def timed_call(runner: Runner, maps: Path, with_map: bool) -> tuple[float, Any]:
    """Wall seconds of one plain ``execute_tests``, the map directory in place or aside."""
    aside = maps.with_name("maps.aside")
    if not with_map:
        maps.rename(aside)
    try:
        start = time.perf_counter()
        result = await execute_tests(runner, ExecuteParams())
        return time.perf_counter() - start, result
    finally:
        if not with_map:
            aside.rename(maps)


async def timed_ms(repeat: int, step: Callable[[], Awaitable[object]]) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        await step()
        out.append((time.perf_counter() - start) * 1000)
    return out


async def time_steps(
    runner: Runner, interp: Interpreter, root: Path, path: Path, repeat: int
) -> tuple[list[float], ...]:
    """Each step a plain call with a map adds, ``repeat`` times (milliseconds), on one
    more run of the buggy project: the engine's reading with and without outcomes, the
    git diff, the map read and ranking, the regrouped reading."""
    answer = await execute_run(runner, ExecuteParams(), interp, 600.0, None, outcomes=True)
    records = Path(answer.result.report_path)
    outcome = ProcessOutcome(1, False, 0.0, "", "")
    budgets = ExecuteParams().budgets()
    argv = answer.result.command
    with_outcomes = await timed_ms(repeat, lambda: runner.read_records(records, budgets, outcome, argv, outcomes=True))
    without = await timed_ms(repeat, lambda: runner.read_records(records, budgets, outcome, argv))
    git = await timed_ms(repeat, lambda: changed_lines(root))
    changed = await changed_lines(root)

    async def rank() -> list[Suspect] | None:
        return await anyio.to_thread.run_sync(suspects_from_map, root, path, changed, answer.outcomes)

    ranking = await timed_ms(repeat, rank)
    suspects = await rank()
    if not suspects:
        raise SystemExit("the map named no suspect")
    top = suspects[0]
    regroup = await timed_ms(repeat, lambda: regrouped(runner, records, budgets, top))
    whole = await timed_ms(repeat, lambda: with_map_suspects(runner, ExecuteParams(), answer, path))
    return with_outcomes, without, git, ranking, regroup, whole


async def measure(root: Path, work: Path, rounds: int, repeat: int) -> tuple[dict[str, list[float]], dict[str, Any]]:
    runner = Runner(ServerConfig(root=root, artifacts_dir=work / "artifacts"))
    interp = await runner.interpreter()
    built = await execute_tests(runner, ExecuteParams(affected=True))
    if built.status != "passed":
        raise SystemExit(f"the affected call that builds the map did not pass: {built.status}")
    path = recorded_map(runner, interp)
    assert path is not None
    maps = path.parent
    calls: dict[str, list[float]] = {w: [] for w in ("failing, no map", "failing, map", "green, no map", "green, map")}
    steps: dict[str, list[float]] = {
        "engine reading, outcomes too": [],
        "engine reading, no outcomes": [],
        "git diff": [],
        "map read and ranking": [],
        "regrouped by the top suspect": [],
        "all a failing call adds after pytest (with_map_suspects)": [],
    }
    facts: dict[str, Any] = {}
    for rnd in range(rounds + 1):
        took: dict[str, float] = {}
        set_bug(root, True)
        failing_ways = [("failing, no map", False), ("failing, map", True)]
        for way, with_map in failing_ways[:: -1 if rnd % 2 else 1]:  # either goes first in turn
            took[way], result = await timed_call(runner, maps, with_map)
            if with_map:
                if not result.suspects:
                    raise SystemExit(f"no suspect named: {result.summary.counts}")
                top = result.suspects[0]
                facts |= {
                    "failed": result.summary.counts.failed,
                    "tests": result.summary.counts.total,
                    "top_suspect": f"{top.path}:{top.lines} ({top.by}, {top.failing} of {top.failing_total} failing)",
                    "groups": len(result.summary.groups),
                }
            else:
                facts["groups_without_map"] = len(result.summary.groups)
        # the steps, on one more run of the buggy project
        with_outcomes, without, git, ranking, regroup, whole = await time_steps(runner, interp, root, path, repeat)
        set_bug(root, False)
        green_ways = [("green, no map", False), ("green, map", True)]
        for way, with_map in green_ways[:: -1 if rnd % 2 else 1]:
            took[way], result = await timed_call(runner, maps, with_map)
            if result.status != "passed":
                raise SystemExit(f"{way} did not pass: {result.summary.counts}")
        print(
            f"round {rnd}: "
            + ", ".join(f"{k} {v:.2f}s" for k, v in took.items())
            + f"; steps (ms, median of {repeat}): outcomes {statistics.median(with_outcomes):.1f} vs "
            f"{statistics.median(without):.1f}, git {statistics.median(git):.1f}, "
            f"map {statistics.median(ranking):.1f}, regroup {statistics.median(regroup):.1f}, "
            f"all {statistics.median(whole):.1f}",
            flush=True,
        )
        if rnd:
            for way, seconds in took.items():
                calls[way].append(seconds)
            for name, values in zip(steps, (with_outcomes, without, git, ranking, regroup, whole), strict=True):
                steps[name] += values
    facts["map_bytes"] = sum(p.stat().st_size for p in maps.glob("*"))
    return calls | {f"step: {k}": v for k, v in steps.items()}, facts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modules", type=int, default=20)
    parser.add_argument("--functions", type=int, default=10)
    parser.add_argument("--params", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=7, help="counted rounds (each runs every way once)")
    parser.add_argument("--repeat", type=int, default=20, help="times each step is timed per round")
    parser.add_argument("--json", type=Path, help="also write the tables and every run here")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="plain-map-"))
    try:
        root = work / "proj"
        make_project(root, args.modules, args.functions, args.params)
        what = f"{args.modules * args.functions * args.params} generated tests ({args.modules} modules)"
        load_start = load_average()
        print(f"{what}, {args.rounds} rounds; load average at the start {load_start}", flush=True)
        times, facts = anyio.run(measure, root, work, args.rounds, args.repeat)
        load_end = load_average()
        print(f"load average at the end {load_end}\n{facts}\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = statistics.median(times[BASELINE])
    calls = {w: {**spread(v, base), "runs_s": [round(r, 3) for r in v]} for w, v in times.items() if ":" not in w}
    steps = {
        w.removeprefix("step: "): {
            "median_ms": round(statistics.median(v), 2),
            "min_ms": round(min(v), 2),
            "max_ms": round(max(v), 2),
        }
        for w, v in times.items()
        if w.startswith("step: ")
    }
    print(f"| call | median (s) | range (s) | / {BASELINE} |")
    print("|---|---:|---:|---:|")
    for way, row in calls.items():
        print(f"| {way} | {row['median_s']:.2f} | {row['min_s']:.2f}-{row['max_s']:.2f} | {row['ratio']:.3f}x |")
    print("\n| step | median (ms) | range (ms) |\n|---|---:|---:|")
    for name, row in steps.items():
        print(f"| {name} | {row['median_ms']:.1f} | {row['min_ms']:.1f}-{row['max_ms']:.1f} |")
    if args.json:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        written = {
            PROVENANCE_KEY: provenance(load_start, Path(__file__).resolve().parents[1]),
            "suite": what,
            "rounds": args.rounds,
            "repeat": args.repeat,
            "commit": commit,
            "load_average": {"start": load_start, "end": load_end},
            "facts": facts,
            "baseline": BASELINE,
            "calls": calls,
            "steps": steps,
        }
        args.json.write_text(json.dumps(written, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
