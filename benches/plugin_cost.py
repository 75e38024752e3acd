"""CPU time the server's pytest plugins add to a run: plain pytest vs the server's exact argv.

Runs the project ``pytest-mcp-server bench suite`` generates (20,000 tests, cached in
``~/.cache/pytest-mcp-server/bench``; run that command once first) several times, the
ways alternating in every round so that drift and other load hit them alike:

* ``plain``: the server's argv without its plugin (``-p ...`` and ``--mcp-*`` removed,
  as ``bench suite`` does for its ``pytest`` way; ``-o`` options kept);
* ``plugins``: the argv ``execute_tests`` runs (``run.argv.execute_argv``), with the
  server's environment for the child (``run.argv.child_env``: the plugin directory first on
  ``PYTHONPATH``, the run token);
* ``plugins@LABEL`` for each ``--plugins LABEL=DIR``: the same argv with the plugins
  imported from DIR instead, e.g. an older commit's, extracted with
  ``git archive caf5c4b src/pytest_mcp_server/_pytest_plugin | tar -x -C /tmp/old``.

For each run it prints the child's user and system CPU seconds (``RUSAGE_CHILDREN``) and
its wall time; then per way the median and range. CPU time is less disturbed than wall
time by other processes on a shared machine, but not immune (caches, frequency): compare
medians over several rounds. Usage::

    python benches/plugin_cost.py --reps 4 [--plugins old=/tmp/old/src/pytest_mcp_server/_pytest_plugin]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import anyio

from pytest_mcp_server.app.runner import Runner
from pytest_mcp_server.bench.suite import _from_server_argv
from pytest_mcp_server.domain.config import ServerConfig
from pytest_mcp_server.domain.tools import ExecuteParams
from pytest_mcp_server.run.argv import child_env, execute_argv

DEFAULT_PROJECT = Path.home() / ".cache/pytest-mcp-server/bench/suite-20000-s20240611-v1"


def measure(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float]:
    """(user s, system s, wall s) of one pytest child; pytest's exit status 0-2 is expected."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, stdin=subprocess.DEVNULL, start_new_session=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1, 2):
        raise SystemExit(f"pytest exited with {proc.returncode}: {proc.stderr.decode(errors='replace')[-2000:]}")
    return after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--project", type=Path, default=DEFAULT_PROJECT, help="the generated suite's directory")
    parser.add_argument("--reps", type=int, default=4, help="rounds (each runs every way once)")
    parser.add_argument("--plugins", action="append", default=[], metavar="LABEL=DIR", help="another plugin dir")
    args = parser.parse_args()
    if not args.project.is_dir():
        raise SystemExit(f"{args.project} does not exist: run `pytest-mcp-server bench suite` once to generate it")
    runner = Runner(ServerConfig(root=args.project))
    interp = anyio.run(runner.interpreter)
    work = Path(tempfile.mkdtemp(prefix="plugin-cost-"))
    server_env = child_env(run=True)
    plain_env = {k: v for k, v in server_env.items() if k != "PYTHONPATH"}
    ways: dict[str, tuple[Path, dict[str, str]]] = {"plain": (work / "plain", plain_env)}
    ways["plugins"] = (work / "plugins", server_env)
    for spec in args.plugins:
        label, _, directory = spec.partition("=")
        ways[f"plugins@{label}"] = (work / label, dict(server_env, PYTHONPATH=str(Path(directory).resolve())))
    results: dict[str, list[tuple[float, float, float]]] = {way: [] for way in ways}
    print(f"load average at the start: {os.getloadavg()}", flush=True)
    try:
        for rep in range(args.reps):
            for way, (run_dir, env) in ways.items():
                shutil.rmtree(run_dir, ignore_errors=True)
                run_dir.mkdir()
                argv = execute_argv(ExecuteParams(), interp, run_dir)
                if way == "plain":
                    argv = _from_server_argv(argv)
                user, system, wall = measure(argv, env, args.project)
                results[way].append((user, system, wall))
                print(f"{rep} {way:16s} cpu {user + system:6.2f} (sys {system:4.2f}) wall {wall:6.2f}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average at the end: {os.getloadavg()}")
    for way, rows in results.items():
        cpu = [u + s for u, s, _ in rows]
        wall = [w for _, _, w in rows]
        print(
            f"{way:16s} cpu median {statistics.median(cpu):6.2f} ({min(cpu):.2f}-{max(cpu):.2f})"
            f"  wall median {statistics.median(wall):6.2f} ({min(wall):.2f}-{max(wall):.2f})"
        )


if __name__ == "__main__":
    main()
