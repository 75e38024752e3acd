#!/usr/bin/env python
"""What the per-test recorder of change-aware runs costs a pytest session, against plain pytest.

The recorder (``pytest_mcp_server_recorder``, loaded by the server's plugin with
``--mcp-map-data``) is sys.monitoring's on Python 3.12+ and coverage.py's C tracer with a
dynamic context per test before. This benchmark runs one project's suite, alternating in
every round (round 0 a warm-up, not counted), in each of these ways, per interpreter:

* ``plain``: ``python -m pytest -q -p no:cacheprovider`` (what "by hand" costs);
* ``recorder``: the same with the server's plugin recording (``-p pytest_mcp_server_events
  --mcp-map-data=DIR``), what an affected call's map-building run pays;
* ``coverage contexts``: pytest-cov with one context per test under coverage.py's C
  tracer (``--cov --cov-context=test``, ``COVERAGE_CORE=ctrace``): the recorder before
  this one, and what pytest-testmon's approach costs;
* on 3.12+, ``sysmon coverage`` and ``sysmon coverage + recorder``: the suite under
  ``coverage run`` with coverage.py's own sys.monitoring core, without and with the
  recorder beside it (two sys.monitoring tools in one process: the recorder re-arms only
  its own events, so coverage.py's should cost what they cost alone).

CPU time (user + system) and wall time of the whole pytest process, median of the
rounds; the tables give CPU time first, which a loaded machine disturbs less. Each interpreter needs
pytest, coverage.py and pytest-cov; the project's tests must run with its root on
``sys.path`` (``python -m pytest`` in the root).

Usage::

    python benches/recorder_cost.py --project DIR --python PY [--python PY ...] [--rounds N]
                                    [--json FILE] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from spread import spread

from pytest_mcp_server.bench.common import PROVENANCE_KEY, load_average, provenance

PLUGIN_DIR = Path(__file__).resolve().parents[1] / "src" / "pytest_mcp_server" / "run" / "pytest_plugin"
PLAIN = ["-m", "pytest", "-q", "-p", "no:cacheprovider"]


def version_of(python: str) -> tuple[int, int]:
    """(major, minor) of ``python``."""
    out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True)
    major, minor = out.stdout.split()
    return int(major), int(minor)


def ways(python: str, scratch: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Each way's argv and extra environment for ``python``."""
    env = {"PYTHONPATH": str(PLUGIN_DIR)}
    record = ["-p", "pytest_mcp_server_events", f"--mcp-map-data={scratch}"]
    out = {
        "plain": ([python, *PLAIN], {}),
        "recorder": ([python, *PLAIN, *record], env),
        "coverage contexts": (
            [python, *PLAIN, "--cov", "--cov-report=", "--cov-context=test"],
            {"COVERAGE_CORE": "ctrace", "COVERAGE_FILE": str(scratch / ".coverage")},
        ),
    }
    if version_of(python) >= (3, 12):
        coverage = [python, "-m", "coverage", "run", f"--data-file={scratch / '.coverage-sysmon'}", *PLAIN]
        out["sysmon coverage"] = (coverage, {"COVERAGE_CORE": "sysmon"})
        out["sysmon coverage + recorder"] = ([*coverage, *record], {**env, "COVERAGE_CORE": "sysmon"})
    return out


def run_once(argv: list[str], env: dict[str, str], root: Path) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system of the process and its children) and exit
    code of one run in ``root``. CPU time holds up on a loaded machine; wall time does not."""
    full = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "COVERAGE_CORE")}
    full.update(env)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=root, env=full, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


def measure(root: Path, python: str, rounds: int) -> dict[str, object]:
    """The medians of every way for one interpreter (round 0 is a warm-up)."""
    times: dict[str, list[float]] = {}
    cpus: dict[str, list[float]] = {}
    codes: dict[str, set[int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        for number in range(rounds + 1):
            for name, (argv, env) in ways(python, scratch).items():
                for leftover in scratch.iterdir():
                    shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()
                seconds, cpu, code = run_once(argv, env, root)
                codes.setdefault(name, set()).add(code)
                if number:
                    times.setdefault(name, []).append(seconds)
                    cpus.setdefault(name, []).append(cpu)
    plain = statistics.median(times["plain"])
    plain_cpu = statistics.median(cpus["plain"])
    rows = {
        name: {
            **spread(values, plain),
            "cpu_median_s": round(statistics.median(cpus[name]), 3),
            "cpu_ratio": round(statistics.median(cpus[name]) / plain_cpu, 3),
            "exit_codes": sorted(codes[name]),
        }
        for name, values in times.items()
    }
    return {"python": python, "version": ".".join(map(str, version_of(python))), "ways": rows}


def markdown(project: str, results: list[dict[str, object]]) -> str:
    """One table per project: ways by interpreter, median CPU seconds and ratio to plain
    (and the wall-time ratio)."""
    lines = [f"### {project}", "", "| way | " + " | ".join(f"Python {r['version']}" for r in results) + " |"]
    lines.append("|---|" + "---:|" * len(results))
    names = list(dict.fromkeys(name for r in results for name in r["ways"]))  # type: ignore[attr-defined]
    for name in names:
        cells = []
        for r in results:
            row = r["ways"].get(name)  # type: ignore[attr-defined]
            cells.append(f"{row['cpu_median_s']} s ({row['cpu_ratio']}x); wall {row['ratio']}x" if row else "-")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", type=Path, action="append", required=True, help="a project's root (repeatable)")
    parser.add_argument("--python", action="append", required=True, help="an interpreter (repeatable)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--markdown", type=Path, default=None)
    args = parser.parse_args(argv)
    load_start = load_average()
    report: dict[str, object] = {
        "command": "python benches/recorder_cost.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "projects": {},
    }
    text = []
    for root in args.project:
        results = [measure(root.resolve(), python, args.rounds) for python in args.python]
        report["projects"][root.name] = results  # type: ignore[index]
        text.append(markdown(root.name, results))
        print(text[-1], flush=True)
    if args.json:
        report = {PROVENANCE_KEY: provenance(load_start, Path(__file__).resolve().parents[1]), **report}
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    if args.markdown:
        args.markdown.write_text("\n".join(text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
