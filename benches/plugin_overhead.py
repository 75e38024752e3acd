#!/usr/bin/env python
"""Wall time of a run through the server against plain pytest, on a generated suite of
fast parametrized tests or on a given project (``--project``, e.g. an unpacked sdist).

The ways, alternating in every round so that drift and other load hit them alike:

* ``pytest -q``: pytest by hand, as an agent types it in a shell (``python -m pytest -q``
  in the suite, the server's environment without its plugin directory): the baseline of
  every ratio;
* ``pytest -q, no cache``: the same with ``-p no:cacheprovider`` (pytest's cache provider
  rewrites ``.pytest_cache``'s ``lastfailed`` and ``nodeids`` after every run);
* ``server argv``: the exact argv and environment of a run of ``execute_tests``
  (``run.argv.execute_argv``, ``run.argv.child_env``: the record plugin writing its file,
  the stack dump armed), run directly;
* ``server argv, no cache``: the same with ``-p no:cacheprovider`` added: what the record
  plugin alone costs (the server keeps the cache provider's ``cache`` fixture and leaves
  its ``lfplugin``/``nfplugin`` out);
* ``execute_tests``: the tool itself, called over stdio on a server started once (the
  time the client waits: pytest, then the summary, the answer and the MCP round trip);
* ``execute_tests (before)``, with ``--before-python PATH``: the same tool of another
  install of the server (e.g. a venv with an earlier commit installed), started as
  ``PATH -m pytest_mcp_server --python <this interpreter>`` so that both servers run the
  project's tests with the same interpreter.

``--direct`` adds the two ``server argv`` ways (left out by default: on a real project
they only repeat what ``execute_tests`` shows).

Prints the load average, each run, then a markdown table: median and range of each way
over the rounds, and its ratio to ``pytest -q``'s median; ``--json FILE`` writes the same
(and every run) as JSON. Usage::

    python benches/plugin_overhead.py [--tests 6006 --files 6 | --project DIR] [--rounds 7]
                                      [--before-python PATH] [--direct] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
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

from pytest_mcp_server.app.runner import Runner
from pytest_mcp_server.bench.common import PROVENANCE_KEY, load_average, provenance
from pytest_mcp_server.domain.config import ServerConfig
from pytest_mcp_server.domain.tools import ExecuteParams
from pytest_mcp_server.run.argv import child_env, execute_argv

BASELINE = "pytest -q"
"""The way every ratio divides by: pytest by hand."""


def make_suite(root: Path, tests: int, files: int) -> None:
    """``files`` test files sharing ``tests`` fast parametrized tests (each an assert on ints)."""
    (root / "tests").mkdir(parents=True)
    per_file, extra = divmod(tests, files)
    for n in range(files):
        count = per_file + (1 if n < extra else 0)
        (root / "tests" / f"test_gen_{n}.py").write_text(
            "import pytest\n\n\n"
            f"@pytest.mark.parametrize('i', range({count}))\n"
            "def test_value(i):\n"
            "    assert i + 1 > i\n"
        )
    (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\ntestpaths = ['tests']\n")


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Wall seconds of one pytest child (exit 0 expected)."""
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, stdin=subprocess.DEVNULL)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{argv[:4]} exited with {proc.returncode}: {proc.stdout.decode(errors='replace')[-2000:]}")
    return took


async def measure(
    root: Path, work: Path, rounds: int, before_python: str | None, direct: bool
) -> dict[str, list[float]]:
    from mcp import Client, StdioServerParameters

    runner = Runner(ServerConfig(root=root, artifacts_dir=work / "artifacts"))
    interp = await runner.interpreter()
    server_env = child_env(run=True)
    plain_env = {k: v for k, v in server_env.items() if k != "PYTHONPATH"}
    by_hand = [sys.executable, "-m", "pytest", "-q"]
    times: dict[str, list[float]] = {BASELINE: [], "pytest -q, no cache": []}
    if direct:
        times |= {"server argv": [], "server argv, no cache": []}
    times["execute_tests"] = []

    def server(python: str, artifacts: str) -> StdioServerParameters:
        args = ["-m", "pytest_mcp_server", "--root", str(root), "--artifacts-dir", str(work / artifacts)]
        return StdioServerParameters(command=python, args=[*args, "--python", sys.executable], env=dict(os.environ))

    async with contextlib.AsyncExitStack() as stack:
        clients = {"execute_tests": await stack.enter_async_context(Client(server(sys.executable, "a"), mode="legacy"))}
        if before_python:
            times["execute_tests (before)"] = []
            before = Client(server(before_python, "b"), mode="legacy")
            clients["execute_tests (before)"] = await stack.enter_async_context(before)
        for rnd in range(rounds + 1):  # round 0 warms the caches and is not counted
            took = {BASELINE: await anyio.to_thread.run_sync(timed, by_hand, root, plain_env)}
            no_cache_by_hand = [*by_hand, "-p", "no:cacheprovider"]
            took["pytest -q, no cache"] = await anyio.to_thread.run_sync(timed, no_cache_by_hand, root, plain_env)
            if direct:
                run_dir = work / "direct"
                shutil.rmtree(run_dir, ignore_errors=True)
                run_dir.mkdir()
                argv = execute_argv(ExecuteParams(), interp, run_dir)
                took["server argv"] = await anyio.to_thread.run_sync(timed, argv, root, server_env)
                no_cache = [*argv, "-p", "no:cacheprovider"]
                took["server argv, no cache"] = await anyio.to_thread.run_sync(timed, no_cache, root, server_env)
            for way, client in clients.items():
                start = time.perf_counter()
                result = await client.call_tool("execute_tests", {})
                took[way] = time.perf_counter() - start
                if result.structured_content is None or result.structured_content["status"] != "passed":
                    raise SystemExit(f"{way} did not pass: {result.content[0]}")
            print(f"round {rnd}: " + ", ".join(f"{k} {v:.2f}s" for k, v in took.items()), flush=True)
            if rnd:
                for way, seconds in took.items():
                    times[way].append(seconds)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, default=6006, help="tests in the generated suite")
    parser.add_argument("--files", type=int, default=6, help="test files they are spread over")
    parser.add_argument("--rounds", type=int, default=7, help="counted rounds (each runs every way once)")
    parser.add_argument("--project", type=Path, help="an existing project (its tests must pass) instead of the suite")
    parser.add_argument("--before-python", help="interpreter of another install of the server to compare with")
    parser.add_argument("--direct", action="store_true", help="also run the server's argv directly")
    parser.add_argument("--json", type=Path, help="also write the table and every run here")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="plugin-overhead-"))
    try:
        if args.project:
            root = args.project.resolve()
            what = str(root)
        else:
            root = work / "suite"
            make_suite(root, args.tests, args.files)
            what = f"{args.tests} generated tests"
        load_start = load_average()
        print(f"{what}, {args.rounds} rounds; load average at the start {load_start}", flush=True)
        times = anyio.run(measure, root, work, args.rounds, args.before_python, args.direct)
        load_end = load_average()
        print(f"load average at the end {load_end}\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = statistics.median(times[BASELINE])
    ways = {way: {**spread(runs, base), "runs_s": [round(r, 3) for r in runs]} for way, runs in times.items()}
    print(f"| way | median (s) | range (s) | / {BASELINE} |")
    print("|---|---:|---:|---:|")
    for way, row in ways.items():
        print(f"| {way} | {row['median_s']:.2f} | {row['min_s']:.2f}-{row['max_s']:.2f} | {row['ratio']:.3f}x |")
    if args.json:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        written = {
            PROVENANCE_KEY: provenance(load_start, Path(__file__).resolve().parents[1]),
            "suite": what,
            "rounds": args.rounds,
            "commit": commit,
            "load_average": {"start": load_start, "end": load_end},
            "baseline": BASELINE,
            "ways": ways,
        }
        args.json.write_text(json.dumps(written, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
