#!/usr/bin/env python
"""Run real open-source test suites through the MCP server and compare with pytest.

For each project below: download its sdist from PyPI (``pip download --no-binary``; the
sdists ship their tests), unpack it, install it into a virtualenv that also sees this
interpreter's packages (pytest, pytest-json-report, pytest-xdist), then

1. run ``python -m pytest`` in the unpacked tree directly and read pytest's own summary
   line (``1210 passed, 3 skipped in 4.2s``);
2. run ``execute_tests`` (no arguments: the project's configured test paths) through the
   SDK's stdio client against ``pytest-mcp-server --root <tree> --python <venv python>``
   and read the summary's counts;
3. compare. pytest counts a test whose call passed but whose teardown errored as one
   pass *and* one error; the server counts it once, as an error (docs/ENGINE.md), so
   those tests are added back before comparing ("explained"). Subtests (pytest 9's
   ``subTest`` and ``subtests``) are compared too: the server's counts are put in
   pytest's terms by the rule of docs/ENGINE.md, *Subtests* (``pytest_view``).

Usage::

    python scripts/real_projects.py [--work DIR] [--only NAME ...] [--markdown FILE]

Needs network access to PyPI (pip) the first time; later runs reuse ``--work``.
Exit status: 0 when every project matches (exactly, or explained), 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tarfile
import time
import venv
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters


@dataclass(frozen=True)
class Project:
    name: str  # PyPI name
    version: str
    deps: tuple[str, ...] = ()  # extra test dependencies (PyPI requirement strings)


PROJECTS = (
    Project("more-itertools", "11.2.1"),
    Project("idna", "3.20"),
    Project("toolz", "1.2.0"),
)

OUTCOMES = ("passed", "failed", "errors", "skipped", "xfailed", "xpassed")
COMPARED = (*OUTCOMES, "subtests_passed")
"""What is compared: the six outcomes and pytest 9's "N subtests passed"."""


@dataclass
class Outcome:
    project: Project
    pytest_line: str = ""
    pytest_counts: dict[str, int] = field(default_factory=dict)
    pytest_s: float = 0.0
    mcp_counts: dict[str, int] = field(default_factory=dict)
    mcp_status: str = ""
    mcp_s: float = 0.0
    mcp_text_bytes: int = 0
    mcp_first_line: str = ""
    teardown_after_pass: int = 0
    verdict: str = ""


def sh(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), cwd=cwd, text=True, capture_output=True, check=False)


def prepare(project: Project, work: Path) -> tuple[Path, Path]:
    """The unpacked source tree and the virtualenv's python (created once)."""
    tree = unpack_sdist(project, work)
    python = make_venv(work / "venvs" / project.name, [[str(tree)], list(project.deps)], project.name)
    return tree, python


def unpack_sdist(project: Project, work: Path) -> Path:
    """Download ``project``'s sdist into ``work/sdists`` (once) and unpack it under ``work/src``.

    Returns the unpacked tree (``work/src/<name>-<version>``). Raises SystemExit when pip
    cannot download the sdist (no network, no such version).
    """
    sdists = work / "sdists"
    sdists.mkdir(parents=True, exist_ok=True)
    spec = f"{project.name}=={project.version}"
    found = [p for p in sdists.glob("*.tar.gz") if _sdist_matches(p.name, project)]
    if not found:
        proc = sh(sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", str(sdists), spec)
        if proc.returncode != 0:
            raise SystemExit(f"pip download {spec} failed:\n{proc.stderr[-2000:]}")
        found = [p for p in sdists.glob("*.tar.gz") if _sdist_matches(p.name, project)]
    sdist = found[0]
    tree = work / "src" / sdist.name.removesuffix(".tar.gz")
    if not tree.exists():
        with tarfile.open(sdist) as tar:
            tar.extractall(work / "src", filter="data")
    return tree


def make_venv(
    env_dir: Path,
    installs: list[list[str]],
    label: str,
    base_python: Path | None = None,
    requirements: tuple[str, ...] | list[str] = (),
) -> Path:
    """Create ``env_dir`` (once) as a virtualenv; returns its python.

    Without ``base_python``: a venv of this interpreter that also sees its packages
    (pytest, pytest-json-report, coverage); each non-empty entry of ``installs`` is one
    ``pip install -q --no-deps`` argument list (``[tree]``, ``["-e", tree]``, requirement
    strings). ``requirements`` are then unused.

    With ``base_python`` (another CPython, ``benches/pythons.py``'s ``find_python``): a venv of that
    interpreter that sees none of this one's packages; ``requirements`` (pytest, the
    project's test dependencies, ...) are installed first *with* their dependencies, then
    ``installs`` with ``--no-deps`` (so that the tree's editable install replaces a copy
    of the project a requirement pulled in).

    On a failed install the half-made venv is removed and SystemExit names ``label`` and
    pip's error, so the next run starts clean.
    """
    python = env_dir / "bin" / "python"
    if not python.exists():
        if base_python is None:
            venv.EnvBuilder(system_site_packages=True, with_pip=True).create(env_dir)
            steps = [["--no-deps", *args] for args in installs if args]
        else:
            proc = sh(str(base_python), "-m", "venv", str(env_dir))
            if proc.returncode != 0:
                raise SystemExit(f"{base_python} -m venv {env_dir} failed for {label}:\n{proc.stderr[-2000:]}")
            steps = [list(requirements)] if requirements else []
            steps += [["--no-deps", *args] for args in installs if args]
        for args in steps:
            proc = sh(str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *args)
            if proc.returncode != 0:
                shutil.rmtree(env_dir)
                raise SystemExit(f"installing {args} for {label} failed:\n{proc.stderr[-2000:]}")
    return python


def _sdist_matches(filename: str, project: Project) -> bool:
    norm = re.sub(r"[-_.]+", "_", project.name).lower()
    return filename.lower().startswith(f"{norm}-{project.version}.") or filename.lower().startswith(
        f"{project.name.lower()}-{project.version}."
    )


_SUMMARY = re.compile(r"^=*\s*((?:\d+ [a-z]+(?: [a-z]+)?(?:, )?)+|no tests ran) in [\d.]+s")


def parse_pytest_line(output: str) -> tuple[str, dict[str, int]]:
    """pytest's final summary line and its counts (``error``/``errors`` -> ``errors``)."""
    for line in reversed(output.splitlines()):
        m = _SUMMARY.match(line.strip())
        if m:
            counts = {k: 0 for k in COMPARED}
            for n, word in re.findall(r"(\d+) ([a-z]+(?: [a-z]+)?)", m.group(1)):
                key = {"error": "errors", "subtests passed": "subtests_passed"}.get(word, word)
                if key in counts:
                    counts[key] = int(n)
            return line.strip(" ="), counts
    raise ValueError("no pytest summary line in the output:\n" + output[-2000:])


def run_pytest(tree: Path, python: Path) -> tuple[str, dict[str, int], float]:
    start = time.monotonic()
    proc = sh(str(python), "-m", "pytest", "-p", "no:cacheprovider", "-q", cwd=tree)
    took = time.monotonic() - start
    line, counts = parse_pytest_line(proc.stdout)
    return line, counts, took


async def run_mcp(tree: Path, python: Path, artifacts: Path) -> tuple[dict, str, float]:
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "pytest_mcp_server",
            "--root",
            str(tree),
            "--python",
            str(python),
            "--artifacts-dir",
            str(artifacts),
            "--answer-view",
            "typed",  # the summary's counts are read from the typed result
        ],
    )
    async with Client(params, read_timeout_seconds=1800) as client:
        start = time.monotonic()
        result = await client.call_tool("execute_tests", {"timeout_s": 1500, "failures_listed": 1000})
        took = time.monotonic() - start
    if result.is_error:
        raise SystemExit(f"execute_tests failed for {tree.name}:\n{result.content[0].text}")
    return result.structured_content, result.content[0].text, took


def pytest_view(counts: dict[str, int]) -> dict[str, int]:
    """The server's counts as pytest's summary line gives them (docs/ENGINE.md, *Subtests*):
    pytest counts each failed subtest as failed and a test whose subtests failed as passed.
    The subtest counts are left out of the structured content when all are 0."""
    view = {k: counts[k] for k in OUTCOMES}
    with_failed_subtests = counts.get("passed_with_failed_subtests", 0)
    view["failed"] += counts.get("subtests_failed", 0) - with_failed_subtests
    view["passed"] += with_failed_subtests
    view["subtests_passed"] = counts.get("subtests_passed", 0)
    return view


def compare(outcome: Outcome, structured: dict) -> None:
    summary = structured["summary"]
    outcome.mcp_counts = pytest_view(summary["counts"])
    outcome.mcp_status = structured["status"]
    # tests whose call passed and whose teardown errored: pytest counts them as passed too
    outcome.teardown_after_pass = sum(
        1 for f in summary["failures"] if f["outcome"] == "error" and f["phase"] == "teardown"
    )
    if outcome.mcp_counts == outcome.pytest_counts:
        outcome.verdict = "match"
        return
    adjusted = dict(outcome.mcp_counts)
    adjusted["passed"] += outcome.teardown_after_pass
    outcome.verdict = "match (teardown errors explained)" if adjusted == outcome.pytest_counts else "MISMATCH"


def markdown(outcomes: list[Outcome]) -> str:
    rows = [
        "| project | pytest's summary line | execute_tests counts | verdict | pytest s | MCP s | text bytes |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for o in outcomes:
        mcp = ", ".join(f"{n} {k}" for k, n in o.mcp_counts.items() if n)
        rows.append(
            f"| {o.project.name} {o.project.version} | `{o.pytest_line}` | {mcp} ({o.mcp_status}) | {o.verdict} "
            f"| {o.pytest_s:.1f} | {o.mcp_s:.1f} | {o.mcp_text_bytes} |"
        )
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "pytest-mcp-server" / "real-projects")
    parser.add_argument("--only", nargs="*", default=None, help="project names (default: all)")
    parser.add_argument("--markdown", type=Path, default=None, help="also write the table to this file")
    args = parser.parse_args(argv)
    outcomes = []
    for project in PROJECTS:
        if args.only and project.name not in args.only:
            continue
        tree, python = prepare(project, args.work)
        o = Outcome(project)
        o.pytest_line, o.pytest_counts, o.pytest_s = run_pytest(tree, python)
        structured, text, o.mcp_s = anyio.run(run_mcp, tree, python, args.work / "artifacts")
        o.mcp_text_bytes = len(text.encode())
        o.mcp_first_line = text.splitlines()[0]
        compare(o, structured)
        outcomes.append(o)
        print(f"{project.name}: pytest `{o.pytest_line}` | server `{o.mcp_first_line}` -> {o.verdict}", flush=True)
    table = markdown(outcomes)
    print()
    print(table)
    if args.markdown:
        args.markdown.write_text(table)
    print(json.dumps([{"project": o.project.name, "verdict": o.verdict} for o in outcomes]))
    return 0 if all(o.verdict.startswith("match") for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
