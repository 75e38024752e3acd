#!/usr/bin/env python
"""The server's latency targets (start-up and per-call overhead), measured, not asserted.

1. Start-up: from spawning ``python -m pytest_mcp_server`` to its answer to
   ``initialize``, by the MCP SDK's stdio client (``mcp.client.stdio.stdio_client`` +
   ``ClientSession``). Target < 0.5 s.
   For reference: ``python -c pass``, and importing the MCP SDK's server alone.
2. Overhead on a small suite: ``execute_tests`` measured at the SDK client (one server
   started once, warm) against the very same pytest argv run directly with the same
   environment (the server's record plugin included), interleaved.
   Target: median overhead < 50 ms.

Usage: ``python benches/server_latency.py [--reps 15] [--tests 20] [--json]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import anyio

from pytest_mcp_server.bench.common import PROVENANCE_KEY, load_average, provenance

PLUGIN_DIR = Path(__file__).resolve().parents[1] / "src" / "pytest_mcp_server" / "run" / "pytest_plugin"


def timed(argv: list[str], **kw) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, **kw)
    return time.perf_counter() - start


async def initialize_s(root: Path) -> float:
    """Seconds from spawning the server for ``root`` (its stderr discarded) to its answer
    to ``initialize``, over the SDK's stdio client; the server is stopped after. Raises
    what the SDK raises when the server does not start or answer (``OSError``,
    ``mcp.MCPError``)."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "pytest_mcp_server", "--root", str(root)], env=dict(os.environ)
    )
    with open(os.devnull, "w") as errlog:
        start = time.perf_counter()
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return time.perf_counter() - start


def startup(root: Path, reps: int) -> dict[str, float]:
    """Medians over ``reps`` of: a server's start-up to its ``initialize`` answer
    (``initialize_s``), a bare ``python -c pass``, and importing the MCP SDK's server; seconds."""
    answers = [anyio.run(initialize_s, root) for _ in range(reps)]
    python = [timed([sys.executable, "-c", "pass"]) for _ in range(reps)]
    sdk = [timed([sys.executable, "-c", "import mcp.server.lowlevel, mcp.server.stdio"]) for _ in range(reps)]
    return {
        "initialize_answered_s": statistics.median(answers),
        "python_bare_s": statistics.median(python),
        "import_mcp_server_s": statistics.median(sdk),
    }


def make_suite(root: Path, n: int) -> None:
    (root / "tests").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\naddopts = "-p no:hypothesispytest -p no:anyio"\n'
    )
    body = "".join(f"def test_{i}():\n    assert {i} + 1 == {i + 1}\n\n" for i in range(n))
    (root / "tests" / "test_small.py").write_text(body)


async def overhead(root: Path, artifacts: Path, reps: int) -> dict[str, float]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        # the typed view: the run's command and duration are read from the result
        args=[
            "-m",
            "pytest_mcp_server",
            "--root",
            str(root),
            "--artifacts-dir",
            str(artifacts),
            "--answer-view",
            "typed",
        ],
        env=dict(os.environ),
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PLUGIN_DIR), env.get("PYTHONPATH", "")) if p)
    via_mcp, direct, outside = [], [], []
    async with Client(params, mode="legacy") as client:
        for i in range(reps + 2):
            start = time.perf_counter()
            result = await client.call_tool("execute_tests", {})
            took = time.perf_counter() - start
            assert result.structured_content["status"] == "passed", result.content[0].text
            with tempfile.TemporaryDirectory() as tmp:
                # the answer writes the run's directory as {run_dir} (docs/SERVER.md, execute_tests)
                argv = [a.replace("{run_dir}", tmp) for a in result.structured_content["command"]]
                direct_s = await anyio.to_thread.run_sync(partial(timed, argv, cwd=root, env=env))
            if i >= 2:  # warm-up
                via_mcp.append(took)
                direct.append(direct_s)
                outside.append(took - result.structured_content["duration_s"])
    return {
        "mcp_median_s": statistics.median(via_mcp),
        "direct_median_s": statistics.median(direct),
        "overhead_median_ms": (statistics.median(via_mcp) - statistics.median(direct)) * 1000,
        "overhead_paired_median_ms": statistics.median(a - b for a, b in zip(via_mcp, direct, strict=False)) * 1000,
        # the part spent outside pytest's session (interpreter start-up, MCP round trip, validation, summary)
        "outside_pytest_median_ms": statistics.median(outside) * 1000,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--tests", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "suite"
        make_suite(root, args.tests)
        load_start = load_average()
        out = {"reps": args.reps, "tests": args.tests, "load_avg_1m": (load_start or [0.0])[0]}
        out.update(startup(root, max(5, args.reps // 2)))
        out.update(anyio.run(overhead, root, Path(tmp) / "artifacts", args.reps))
    if args.json:
        print(
            json.dumps({PROVENANCE_KEY: provenance(load_start, Path(__file__).resolve().parents[1]), **out}, indent=2)
        )
    else:
        for k, v in out.items():
            print(f"{k:28s} {v:.3f}" if isinstance(v, float) else f"{k:28s} {v}")
        print(f"target: initialize < 0.5 s -> {'met' if out['initialize_answered_s'] < 0.5 else 'NOT met'}")
        print(f"target: overhead < 50 ms   -> {'met' if out['overhead_median_ms'] < 50 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
