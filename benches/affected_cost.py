#!/usr/bin/env python
"""What an ``affected`` call that selects every test costs, split by stage, against plain pytest.

A change that reaches every test (or no map yet) makes ``execute_tests(affected=true)``
run the whole suite with the per-test recorder, then read what it recorded and rewrite
every test's map entry. This benchmark measures that call on one project, beside the
same suite run by hand, in rounds whose order rotates (round 0 a warm-up, not counted):

* ``plain``: ``python -m pytest -q -p no:cacheprovider`` in the root (what "by hand" costs);
* ``server plain``: ``execute_tests`` without ``affected`` (the server's plugin writing its
  record file, no recorder: the server's own fixed cost);
* ``affected edit``: ``execute_tests(affected=true)`` after an edit that reaches every test
  (``--edit FILE``: a computed binding, ``globals()["_cost_probe"] = N`` with a new ``N``
  each round, appended to FILE: names cannot bound it, so it reaches every test of the
  files importing FILE);
* ``affected no map``: the same call with the map removed first (the map-building call);
* ``answer first``: what the agent would wait for if the call answered first and recorded
  after (issue 40): the ``affected edit`` call with the recorder off and the map left as
  it was (``skip_options(measure=False)``, no ``refresh_map``). The refresh in the
  background would then cost another ``affected edit`` run on top (the tests run twice).

The calls run in this process, on the server's own ``Runner`` and tool handler, with the
answer rendered as the MCP adapter renders it (``to_mcp_result``); only the JSON-RPC
transport is left out. Each stage of the call is timed by wrapping the function that does
it (wall time, this process's CPU time, and the CPU time of the children it waited for,
``RUSAGE_CHILDREN``, i.e. pytest's):

* before pytest: ``read_map_state`` (map read, diff, parse, changed elements, reach),
  ``proof`` (``last_full_collection``, ``nothing_can_fail``, ``narrowed_files``);
* ``pytest``: the pytest process (``Runner.run_pytest``), ``records``: the engine reading
  its record file (``Runner.read_records``);
* after pytest: ``select_from_run``, ``read_map_data`` (the recorders' files),
  ``tests_blocks`` (lines into blocks, names, elements), ``map write`` (``open_map`` and
  ``TestMap.refresh``), ``answer`` (``to_mcp_result``);
* ``other``: the rest of the call (run directory, argv, the slot, the event loop).

CPU time (user + system) is what the decision rests on: a loaded machine disturbs it less
than wall time. Figures are medians over the counted rounds; the ratio of each way's whole
CPU (this process's and pytest's) to ``plain``'s.

Usage::

    python benches/affected_cost.py --project DIR --python PY --edit REL_PATH [--rounds N]
                                    [--profile N] [--json FILE]

``--profile N`` prints the N costliest functions (cumulative) of each server stage run in
a worker thread (cProfile), from the last round.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import json
import os
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from pytest_mcp_server.bench.common import PROVENANCE_KEY, load_average, provenance

PLAIN = ["-m", "pytest", "-q", "-p", "no:cacheprovider"]
WAYS = ("plain", "server plain", "affected edit", "affected no map", "answer first")
STAGES = (
    "read_map_state",
    "proof",
    "pytest",
    "records",
    "select_from_run",
    "read_map_data",
    "tests_blocks",
    "map write",
    "answer",
    "other",
)


def cpu_now() -> tuple[float, float, float]:
    """(wall, this process's CPU, waited-for children's CPU), seconds."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter(), own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


class Stages:
    """Wall, own CPU and children's CPU per stage of the call being measured; with
    ``profile``, a cProfile of each sync stage (run in a worker thread) too."""

    def __init__(self, profile: bool) -> None:
        self.times: dict[str, list[float]] = {}
        self.profile = profile
        self.profiles: dict[str, cProfile.Profile] = {}

    def reset(self) -> None:
        self.times = {}
        self.profiles = {}

    def add(self, stage: str, before: tuple[float, float, float]) -> None:
        after = cpu_now()
        got = self.times.setdefault(stage, [0.0, 0.0, 0.0])
        for i in range(3):
            got[i] += after[i] - before[i]

    def wrap_sync(self, stage: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            before = cpu_now()
            profiler = self.profiles.setdefault(stage, cProfile.Profile()) if self.profile else None
            try:
                if profiler is not None:
                    return profiler.runcall(function, *args, **kwargs)
                return function(*args, **kwargs)
            finally:
                self.add(stage, before)

        return timed

    def wrap_async(self, stage: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        async def timed(*args: Any, **kwargs: Any) -> Any:
            before = cpu_now()
            try:
                return await function(*args, **kwargs)
            finally:
                self.add(stage, before)

        return timed


def instrument(stages: Stages) -> None:
    """Wrap the functions of each stage where the affected call looks them up."""
    from pytest_mcp_server.app import affected_call, runner
    from pytest_mcp_server.run import testmap

    for name in ("read_map_state",):
        setattr(affected_call, name, stages.wrap_sync(name, getattr(affected_call, name)))
    for name in ("last_full_collection", "nothing_can_fail", "narrowed_files"):
        setattr(affected_call, name, stages.wrap_sync("proof", getattr(affected_call, name)))
    for name in ("read_map_data", "tests_blocks"):
        setattr(affected_call, name, stages.wrap_sync(name, getattr(affected_call, name)))
    affected_call.select_from_run = stages.wrap_sync("select_from_run", affected_call.select_from_run)
    affected_call.open_map = stages.wrap_sync("map write", affected_call.open_map)
    testmap.TestMap.refresh = stages.wrap_sync("map write", testmap.TestMap.refresh)  # type: ignore[method-assign]
    runner.Runner.run_pytest = stages.wrap_async("pytest", runner.Runner.run_pytest)  # type: ignore[method-assign]
    runner.Runner.read_records = stages.wrap_async("records", runner.Runner.read_records)  # type: ignore[method-assign]


class AnswerFirst:
    """While entered, the affected call runs its tests without the recorder and leaves the
    map as it was (what ``answer first`` measures)."""

    def __enter__(self) -> None:
        from pytest_mcp_server.app import affected_call
        from pytest_mcp_server.run.recording import MapData

        self.saved = {n: getattr(affected_call, n) for n in ("skip_options", "write_line_spans", "refresh_map")}
        skip_options = self.saved["skip_options"]

        def unmeasured(*args: Any, **kwargs: Any) -> Any:
            return skip_options(*args, **{**kwargs, "measure": False})

        async def no_refresh(*args: Any, **kwargs: Any) -> Any:
            return MapData()

        affected_call.skip_options = unmeasured
        affected_call.write_line_spans = lambda *args: None
        affected_call.refresh_map = no_refresh

    def __exit__(self, *exc: object) -> None:
        from pytest_mcp_server.app import affected_call

        for name, value in self.saved.items():
            setattr(affected_call, name, value)


def plain_run(python: str, root: Path) -> dict[str, float]:
    """``python -m pytest`` by hand: wall, CPU (its own and its children's)."""
    before = cpu_now()
    proc = subprocess.run([python, *PLAIN], cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = cpu_now()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"the plain run exited {proc.returncode}")
    return {"wall": after[0] - before[0], "cpu": after[2] - before[2], "pytest_cpu": after[2] - before[2]}


async def server_call(runner: Any, arguments: dict[str, Any], stages: Stages) -> dict[str, Any]:
    """One ``execute_tests`` call as the MCP adapter makes it, timed by stage."""
    from pytest_mcp_server.adapters.mcp.catalogue import TOOLS_BY_NAME
    from pytest_mcp_server.adapters.mcp.server import to_mcp_result

    spec = TOOLS_BY_NAME["execute_tests"]
    stages.reset()
    before = cpu_now()
    result = await spec.handler(runner, spec.parse(arguments), None)
    answer_before = cpu_now()
    answer = to_mcp_result(spec, result, "typed")
    stages.add("answer", answer_before)
    after = cpu_now()
    total = {"wall": after[0] - before[0], "own_cpu": after[1] - before[1], "pytest_cpu": after[2] - before[2]}
    total["cpu"] = total["own_cpu"] + total["pytest_cpu"]
    known = [0.0, 0.0, 0.0]
    for got in stages.times.values():
        for i in range(3):
            known[i] += got[i]
    stages.times["other"] = [total["wall"] - known[0], total["own_cpu"] - known[1], total["pytest_cpu"] - known[2]]
    selection = (answer.structured_content or {}).get("selection") or {}
    total["selected"] = selection.get("selected", -1)
    total["stages"] = {k: {"wall": v[0], "own_cpu": v[1], "pytest_cpu": v[2]} for k, v in stages.times.items()}
    return total


def edit(path: Path, original: bytes, number: int) -> None:
    """``original`` with ``globals()["_cost_probe"] = number`` appended: a computed binding
    at module level, new each round."""
    path.write_bytes(original + f'\nglobals()["_cost_probe"] = {number}\n'.encode())
    for cached in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):
        cached.unlink()


def median(values: list[float]) -> float:
    return round(statistics.median(values), 3) if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, required=True)
    parser.add_argument("--python", required=True, help="the project's interpreter (Python 3.12+ for sys.monitoring)")
    parser.add_argument("--edit", required=True, help="a module every test imports, relative to the project")
    parser.add_argument("--rounds", type=int, default=5, help="rounds after the warm-up (5)")
    parser.add_argument("--ways", nargs="*", default=list(WAYS), choices=WAYS)
    parser.add_argument("--profile", type=int, default=0, help="print the N costliest functions per stage")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    from pytest_mcp_server.app.runner import Runner
    from pytest_mcp_server.domain.config import ServerConfig

    root = args.project.resolve()
    target = root / args.edit
    original = target.read_bytes()
    stages = Stages(profile=args.profile > 0)
    instrument(stages)
    artifacts = Path(tempfile.mkdtemp(prefix="affected-cost-"))
    runner = Runner(ServerConfig(root=root, python=Path(args.python), artifacts_dir=artifacts, max_timeout_s=900))
    load_start = load_average()
    rows: list[dict[str, Any]] = []
    number = 0

    async def rounds() -> None:
        nonlocal number
        await server_call(runner, {"affected": True}, stages)  # the map, as the calls after an edit find it
        for round_ in range(args.rounds + 1):
            order = args.ways[round_ % len(args.ways) :] + args.ways[: round_ % len(args.ways)]
            for way in order:
                load = os.getloadavg()[0]
                if way == "plain":
                    got: dict[str, Any] = await anyio.to_thread.run_sync(plain_run, args.python, root)
                elif way == "server plain":
                    got = await server_call(runner, {}, stages)
                elif way == "answer first":
                    number += 1
                    edit(target, original, number)
                    with AnswerFirst():
                        got = await server_call(runner, {"affected": True}, stages)
                else:
                    if way == "affected no map":
                        shutil.rmtree(artifacts / "maps", ignore_errors=True)
                    number += 1
                    edit(target, original, number)
                    got = await server_call(runner, {"affected": True}, stages)
                got.update(way=way, round=round_, load=load)
                rows.append(got)
                print(
                    f"round {round_} {way:<16} wall {got['wall']:6.2f} cpu {got['cpu']:6.2f} "
                    f"(pytest {got['pytest_cpu']:6.2f}) sel {got.get('selected', '')} load {load:.1f}",
                    flush=True,
                )

    try:
        anyio.run(rounds)
    finally:
        target.write_bytes(original)
        shutil.rmtree(artifacts, ignore_errors=True)
    counted = [r for r in rows if r["round"] > 0]
    base_cpu = median([r["cpu"] for r in counted if r["way"] == "plain"])
    base_wall = median([r["wall"] for r in counted if r["way"] == "plain"])
    summary: dict[str, Any] = {}
    for way in args.ways:
        mine = [r for r in counted if r["way"] == way]
        entry: dict[str, Any] = {
            "wall": median([r["wall"] for r in mine]),
            "cpu": median([r["cpu"] for r in mine]),
            "pytest_cpu": median([r["pytest_cpu"] for r in mine]),
        }
        entry["cpu_ratio"] = round(entry["cpu"] / base_cpu, 3)
        entry["wall_ratio"] = round(entry["wall"] / base_wall, 3)
        if way != "plain":
            entry["stages"] = {
                stage: {
                    key: median([r["stages"].get(stage, {}).get(key, 0.0) for r in mine])
                    for key in ("wall", "own_cpu", "pytest_cpu")
                }
                for stage in STAGES
            }
        summary[way] = entry
    print(f"\nmedians of {args.rounds} rounds (plain CPU {base_cpu} s, wall {base_wall} s)")
    print(f"{'way':<16} {'cpu':>8} {'ratio':>6} {'wall':>8} {'ratio':>6} {'pytest cpu':>10}")
    for way, entry in summary.items():
        print(
            f"{way:<16} {entry['cpu']:8.3f} {entry['cpu_ratio']:6.3f} {entry['wall']:8.3f} "
            f"{entry['wall_ratio']:6.3f} {entry['pytest_cpu']:10.3f}"
        )
    for way, entry in summary.items():
        if "stages" not in entry:
            continue
        print(f"\n{way}: stage wall / own CPU / pytest CPU (s)")
        for stage, got in entry["stages"].items():
            print(f"  {stage:<16} {got['wall']:7.3f} {got['own_cpu']:7.3f} {got['pytest_cpu']:7.3f}")
    if args.profile:
        for stage, profiler in stages.profiles.items():
            print(f"\n--- {stage} (last call) ---")
            pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(args.profile)
    if args.json:
        payload = {
            PROVENANCE_KEY: provenance(load_start, Path(__file__).resolve().parents[1]),
            "command": "python benches/affected_cost.py " + " ".join(sys.argv[1:] if argv is None else argv),
            "summary": summary,
            "rows": rows,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
