#!/usr/bin/env python
"""Mutation replay: ``execute_tests(affected=true)`` against the full suite and pytest-testmon.

An agent that edits one line wants the tests that line can break, fast, and the answer
to point at the line. This benchmark replays single mutations of real projects' source
as working-tree changes and measures, per mutant, what a change-aware run selects,
whether that is safe, what it costs and whether the answer names the change:

* projects are the real-bug catalogue's (``benches/real_bugs.toml``): a PyPI sdist
  unpacked, installed editable into a virtualenv and made a git work tree whose ``HEAD``
  is the clean sdist (``real_bugs.prepare`` and ``real_bugs.commit_tree``: the same
  helpers as the real-bug benchmark). A second virtualenv of the same tree has
  pytest-testmon 2.2.0 (its data file outside the tree, ``TESTMON_DATAFILE``). By
  default both venvs are this interpreter's and see its packages (pytest, coverage.py);
  with ``--python-version X.Y`` they are made from that CPython's base interpreter
  (``pythons.find_python``: PATH, else ``~/.pyenv/versions/X.Y.*``) and see
  none of this one's: pytest at this interpreter's version and the catalogue's ``deps``
  in both, coverage.py (this interpreter's version) only beside testmon. The server
  always runs in this interpreter (``--python VENV_PYTHON``); ``--server-src`` pins its
  source (a worktree of the commit measured);
* mutants come from cosmic-ray 8.7 (its operators' ``mutation_positions`` over parso's
  tree of each library file, tests excluded; ``cosmic_ray.mutating.mutate_code``
  applies one). cosmic-ray was chosen over mutmut 3.8 because it lists and applies one
  mutation of one file as a plain function call; mutmut 3 rewrites whole files into
  trampolines. Operators that need arguments are not used (cosmic-ray's own default).
  The mutants of a project are sorted and sampled with ``random.Random(f"{seed}:{name}")``
  (``--mutants`` per project, ``--seed``): the same arguments give the same mutants;
* on the clean tree: a plain run (``python -m pytest -q -p no:cacheprovider -rfE``,
  ``--plain-runs`` times, the median), the map-building run (``execute_tests`` with
  ``affected: true`` and no map, through the SDK's stdio client against
  ``pytest-mcp-server --root TREE --python VENV_PYTHON``), and testmon's data-building run
  (``pytest --testmon``);
* per mutant, written into the file (byte code removed):
  1. the full run, ``python -m pytest -q -p no:cacheprovider -rfE --tb=short`` (wall
     time): the failing set (``FAILED``/``ERROR`` lines, less the clean tree's) and
     whether ``--tb=short`` names the mutated ``file:line`` (+-2, ``real_bugs.names``);
  2. ``discover_tests`` with ``affected: true`` (not timed): the plan, every selected
     node id;
  3. ``execute_tests`` with ``affected: true`` (wall time of the tool call, map upkeep
     included): ``selection.selected``/``total``, the failed count, whether the text names
     the mutated line (+-2), whether a structured ``suspects`` entry holds it;
  4. ``pytest --testmon -q -p no:cacheprovider -rfE`` in the testmon venv (wall time):
     the tests it ran (its summary's outcomes) and its failing set;
  5. the mutant is reverted, then one affected call and one testmon run bring the map
     and testmon's data back to the clean tree (timed, reported apart: the cost of the
     next edit, not of this one).

Figures per mutant: ``killed`` (the full run fails a test the clean run does not) or
survived; ``safe`` (every test failing in the full run is in the affected plan; for
testmon: fails in its run too); the selected fraction; affected/full and testmon/full
time; mutated line named (killed mutants only) by the answer and by ``--tb=short``.
A mutant whose full run exceeds ``--timeout`` (an endless loop) is ``timeout``: left
out of the figures, listed.

Usage::

    python benches/affected.py [--work DIR] [--only NAME ...] [--mutants N] [--mutants-for NAME=N ...]
                               [--seed S] [--python-version X.Y] [--server-src DIR]
                               [--json FILE] [--markdown FILE] [--report-only]

With ``--json``, rows and each project's setup times are appended as they come to
``FILE.rows.jsonl`` and ``FILE.projects.jsonl``, and what the measuring run was (its
command, start, load, sample sizes; its length and end load when it ends) to
``FILE.run.json``; ``--report-only`` rebuilds the table and the JSON from them after a run
cut short (the projects that finished), or to record another provenance: its ``meta``
is the measuring run's (``rebuilt`` says when and how it was rebuilt), and a measuring
run without that file leaves its date, load and length None.

Needs cosmic-ray (``pip install cosmic-ray==8.7.0``) in this interpreter and pip access
to PyPI for the sdists and pytest-testmon the first time (``--work`` is reused).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from mcp import Client

from pytest_mcp_server.bench.common import PROVENANCE_KEY, load_average, provenance

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "benches"))
import pythons  # noqa: E402  (benches/pythons.py: another CPython's base interpreter)
import real_bugs  # noqa: E402  (benches/real_bugs.py: catalogue, venvs, git tree, stdio server)
import real_projects  # noqa: E402  (scripts/real_projects.py: pytest summary parsing, venvs)

DEFAULT_PROJECTS = ("toolz", "cachetools", "isodate")
TESTMON = "pytest-testmon==2.2.0"
RUN_RECORD_KEYS = ("date", "command", "load_start", "load_end", "seconds", "mutants_per_project")
"""What ``FILE.run.json`` keeps of the measuring run's ``meta`` for ``--report-only`` (its
``date`` is when the run ended; when it started, for a run cut short)."""
FULL_FLAGS = ("-q", "-p", "no:cacheprovider", "-rfE")
SETUP_TIMEOUT_FACTOR = 5
"""The clean tree's runs (plain, collection, testmon's data build) may take this many ``--timeout``s."""
TARGETS = {
    "projects": 4,
    "killed": 200,
    "survived": 30,
    "safety_pct": 100.0,
    "median_selected_pct": "<= median_testmon_selected_pct",
    "build_ratio": "<= 1.15 on Python 3.12+ (testmon 2.5x); before 3.12 no worse than the 4b7b61d run",
    "line_named_pct": 95.0,
}


@dataclass(frozen=True)
class Mutant:
    """One cosmic-ray mutation: ``path`` relative to the project root, its 1-based line."""

    path: str
    operator: str
    occurrence: int  # the operator's n-th position in the file (cosmic-ray's numbering)
    line: int
    col: int

    @property
    def key(self) -> str:
        """``path:line op#occurrence``: how the tables and the JSON name the mutant."""
        return f"{self.path}:{self.line} {self.operator.removeprefix('core/')}#{self.occurrence}"


@dataclass
class Row:
    """The measurements of one mutant (see the module docstring)."""

    project: str
    mutant: str
    path: str
    line: int
    status: str = ""  # killed, survived, timeout, tool error
    total: int = 0  # tests the affected run's collection found
    full_failing: list[str] = field(default_factory=list)
    full_s: float = 0.0
    short_named: bool = False
    planned: int = 0  # discover_tests(affected) plan size
    selected: int = 0  # execute_tests(affected) selection.selected
    reasons: dict[str, int] = field(default_factory=dict)
    affected_failed: int = 0
    affected_status: str = ""
    affected_s: float = 0.0
    missed: list[str] = field(default_factory=list)  # failing in the full run, not in the plan
    renumbered: list[str] = field(default_factory=list)  # of those, ones whose id the plan's collection renamed
    text_named: bool = False
    suspect_named: bool = False
    first_line: str = ""
    testmon_ran: int = 0
    testmon_failing: list[str] = field(default_factory=list)
    testmon_missed: list[str] = field(default_factory=list)
    testmon_s: float = 0.0
    revert_affected_s: float = 0.0
    revert_testmon_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def killed(self) -> bool:
        return self.status == "killed"

    @property
    def measured(self) -> bool:
        return self.status in ("killed", "survived")


# -- mutants ------------------------------------------------------------------------


def library_files(root: Path, package_dir: Path) -> list[Path]:
    """The package's ``.py`` files under ``package_dir`` (or the module itself), test files left out.

    Sorted by path; a test file is one ``real_bugs.TEST_FILE`` matches relative to ``root``.
    """
    files = [package_dir] if package_dir.is_file() else sorted(package_dir.rglob("*.py"))
    return [f for f in files if not real_bugs.TEST_FILE.search(f.relative_to(root).as_posix())]


def list_mutants(root: Path, files: Iterable[Path]) -> list[Mutant]:
    """Every single mutation cosmic-ray's argument-free operators make in ``files``.

    In cosmic-ray's order (per file, per operator, per position). Paths are relative to
    ``root``.
    """
    import cosmic_ray.plugins
    from cosmic_ray.ast import ast_nodes, get_ast

    operators = []
    for name in cosmic_ray.plugins.operator_names():
        cls = cosmic_ray.plugins.get_operator(name)
        if not cls.arguments():
            operators.append((name, cls()))
    mutants = []
    for path in files:
        module = get_ast(path.read_text(encoding="utf-8"))
        rel = path.relative_to(root).as_posix()
        for name, operator in operators:
            positions = (pos for node in ast_nodes(module) for pos in operator.mutation_positions(node))
            for occurrence, (start, _end) in enumerate(positions):
                mutants.append(Mutant(rel, name, occurrence, start[0], start[1]))
    return mutants


def sample_mutants(mutants: list[Mutant], count: int, seed: int, project: str) -> list[Mutant]:
    """``count`` mutants drawn without replacement, the same for the same inputs.

    The population is sorted first (path, line, column, operator, occurrence), so the draw
    does not depend on the order the operators were loaded in; the sample keeps that order.
    All of them when ``count`` is at least their number.
    """
    population = sorted(set(mutants), key=lambda m: (m.path, m.line, m.col, m.operator, m.occurrence))
    if count >= len(population):
        return population
    chosen = random.Random(f"{seed}:{project}").sample(range(len(population)), count)
    return [population[i] for i in sorted(chosen)]


def mutated_source(original: str, mutant: Mutant) -> str | None:
    """``original`` with ``mutant`` applied by cosmic-ray; None when cosmic-ray applies nothing."""
    import cosmic_ray.plugins
    from cosmic_ray.mutating import mutate_code

    return mutate_code(original, cosmic_ray.plugins.get_operator(mutant.operator)(), mutant.occurrence)


def write_source(path: Path, text: str) -> None:
    """Write ``text`` and drop the file's byte code (validated by mtime and size only)."""
    path.write_text(text, encoding="utf-8")
    for cached in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):
        cached.unlink()


# -- figures ------------------------------------------------------------------------


def pct(part: int, whole: int) -> float | None:
    """``part`` of ``whole`` in percent, one decimal; None when ``whole`` is 0."""
    return round(100.0 * part / whole, 1) if whole else None


def median(values: list[float]) -> float | None:
    """The median, 3 decimals; None for no values."""
    return round(statistics.median(values), 3) if values else None


def figures(rows: list[Row], setup_times: dict[str, float]) -> dict[str, Any]:
    """The summary of ``rows`` (one project's, or all): counts, safety, medians, names.

    ``setup_times``: ``plain_s``, ``build_s`` and ``testmon_build_s`` of the clean tree
    (summed over projects for the overall figures). Safety and ratios are over measured
    mutants (killed or survived); names over killed ones.
    """
    measured = [r for r in rows if r.measured]
    killed = [r for r in measured if r.killed]
    safe = [r for r in killed if not r.missed]
    safe_but_ids = [r for r in killed if len(r.missed) == len(r.renumbered)]
    testmon_safe = [r for r in killed if not r.testmon_missed]
    plain = setup_times.get("plain_s", 0.0)
    return {
        "mutants": len(rows),
        "killed": len(killed),
        "survived": len(measured) - len(killed),
        "timeout": sum(r.status == "timeout" for r in rows),
        "other": sum(not r.measured and r.status != "timeout" for r in rows),
        "safety_pct": pct(len(safe), len(killed)),
        "safety_ids_stable_pct": pct(len(safe_but_ids), len(killed)),
        "testmon_safety_pct": pct(len(testmon_safe), len(killed)),
        "median_selected_pct": median([100.0 * r.selected / r.total for r in measured if r.total]),
        "median_testmon_selected_pct": median([100.0 * r.testmon_ran / r.total for r in measured if r.total]),
        "median_time_ratio": median([r.affected_s / r.full_s for r in measured if r.full_s]),
        "median_testmon_ratio": median([r.testmon_s / r.full_s for r in measured if r.full_s]),
        "median_full_s": median([r.full_s for r in measured]),
        "median_affected_s": median([r.affected_s for r in measured]),
        "median_testmon_s": median([r.testmon_s for r in measured]),
        "median_revert_affected_s": median([r.revert_affected_s for r in measured]),
        "median_revert_testmon_s": median([r.revert_testmon_s for r in measured]),
        "build_ratio": round(setup_times["build_s"] / plain, 2) if plain and "build_s" in setup_times else None,
        "testmon_build_ratio": round(setup_times["testmon_build_s"] / plain, 2)
        if plain and "testmon_build_s" in setup_times
        else None,
        "line_named_pct": pct(sum(r.text_named for r in killed), len(killed)),
        "suspect_named_pct": pct(sum(r.suspect_named for r in killed), len(killed)),
        "short_named_pct": pct(sum(r.short_named for r in killed), len(killed)),
    }


def line_ranges(lines: object) -> list[tuple[int, int]]:
    """``(first, last)`` ranges of a suspect's ``lines`` (``"12-13, 20"``, a list, or an int)."""
    text = json.dumps(lines) if not isinstance(lines, str) else lines
    return [(int(a), int(b or a)) for a, b in re.findall(r"(\d+)(?:\s*-\s*(\d+))?", text)]


def suspect_names(suspects: list[dict] | None, path: str, line: int) -> bool:
    """Whether a suspect's ``path`` ends with ``path`` and its lines come within
    ``real_bugs.LINE_SLACK`` of ``line``."""
    slack = real_bugs.LINE_SLACK
    for suspect in suspects or []:
        shown = str(suspect.get("path", "")).replace("\\", "/")
        if shown == path or shown.endswith("/" + path):
            if any(a - slack <= line <= b + slack for a, b in line_ranges(suspect.get("lines"))):
                return True
    return False


def missed_ids(failing: set[str], planned: set[str], shown_errors: str) -> list[str]:
    """The ids of ``failing`` that the affected run neither planned nor showed, sorted.

    A collection error's id is its file (``ERROR pkg/tests/test_x.py``): it counts as
    selected when a planned id is in that file or the affected answer's collection errors
    (``shown_errors``, their JSON) name the file: a module that no longer imports is
    always collected and shown (docs/SERVER.md, *Change-aware runs*).
    """
    return sorted(
        f
        for f in failing
        if f not in planned
        and not any(p.startswith(f + "::") for p in planned)
        and not ("::" not in f and json.dumps(f)[1:-1] in shown_errors)
    )


def renumbered(missed: list[str], planned: set[str], clean_ids: set[str]) -> list[str]:
    """The ``missed`` ids whose test function has planned ids that a clean collection does not have.

    A parametrized test whose ids depend on the process (isodate parametrizes over a
    set: ``expected0`` is whichever case the set yields first) is planned under ids that
    the full run names otherwise; a miss by id is then not necessarily a test left out.
    """
    foreign = {p.split("[", 1)[0] for p in planned if p not in clean_ids}
    return [m for m in missed if m.split("[", 1)[0] in foreign]


# -- running ------------------------------------------------------------------------


async def timed(argv: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None) -> tuple[str, float]:
    """stdout of ``argv`` and its wall seconds; raises TimeoutError after ``timeout`` seconds (process killed)."""

    def run() -> tuple[str, float]:
        start = time.monotonic()
        try:
            proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise TimeoutError(f"{' '.join(argv)} ran over {timeout:.0f}s in {cwd}") from exc
        return proc.stdout, time.monotonic() - start

    return await anyio.to_thread.run_sync(run)


def ran_count(output: str) -> int:
    """Tests pytest ran, from its summary line (every outcome but ``deselected``; 0 for ``no tests ran``)."""
    _, counts = real_projects.parse_pytest_line(output)
    return sum(counts[k] for k in real_projects.OUTCOMES)


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[Any, float]:
    """The tool result and the call's wall seconds; raises RuntimeError with the text on a tool error."""
    start = time.monotonic()
    result = await client.call_tool(tool, arguments)
    took = time.monotonic() - start
    if result.is_error:
        raise RuntimeError(f"{tool} {arguments}: {result.content[0].text[:2000]}")
    return result, took


@dataclass
class Project:
    """One project ready to replay: its tree, both venvs, its clean failing set and setup times."""

    name: str
    root: Path
    python: Path
    testmon_python: Path
    testmon_env: dict[str, str]
    baseline: set[str]
    times: dict[str, float]
    available: int = 0
    clean_ids: set[str] = field(default_factory=set)  # a collect-only run of the clean tree
    tag: str = ""  # "-pyX.Y" with --python-version: names testmon's cache


def testmon_argv(project: Project, work: Path) -> list[str]:
    """``pytest --testmon -q -rfE --tb=no`` in the testmon venv. testmon 2.2.0 reads the
    cache plugin's ``--lf`` option (``KeyError: 'lf'`` under ``-p no:cacheprovider``), so
    the cache stays on, its directory outside the tree."""
    cache = work / "testmon" / f"{project.name}{project.tag}-cache"
    return [
        str(project.testmon_python),
        "-m",
        "pytest",
        "--testmon",
        "-q",
        "-rfE",
        "--tb=no",
        "-o",
        f"cache_dir={cache}",
    ]


def pinned(requirement: str, deps: Iterable[str]) -> list[str]:
    """``[name==VERSION]`` at this interpreter's version of distribution ``requirement``,
    unless ``deps`` already pin it (python-dateutil's ``pytest==8.3.5``)."""
    from importlib import metadata

    if any(re.match(rf"{re.escape(requirement)}\s*[=<>~!]", d, re.IGNORECASE) for d in deps):
        return []
    return [f"{requirement}=={metadata.version(requirement)}"]


def project_venvs(spec: real_bugs.BugProject, args: argparse.Namespace) -> tuple[real_bugs.Setup, Path]:
    """The project's editable setup and its testmon venv's python (both made once, see the module docstring)."""
    name = spec.project.name
    deps = spec.project.deps
    if args.base_python is None:
        setup = real_bugs.prepare(spec, "editable", args.work)
        testmon_python = real_projects.make_venv(
            args.work / "venvs" / f"{name}-testmon",
            [["-e", str(setup.root)], [TESTMON], list(deps)],
            f"{name} (testmon)",
        )
    else:  # venvs of the other interpreter: pytest at this one's version, no coverage.py but testmon's
        setup = real_bugs.prepare(spec, "editable", args.work, args.base_python, tuple(pinned("pytest", deps)))
        testmon_python = real_projects.make_venv(
            args.work / "venvs" / f"{name}-testmon{args.tag}",
            [["-e", str(setup.root)]],
            f"{name} (testmon)",
            args.base_python,
            [*pinned("pytest", deps), TESTMON, *pinned("coverage", deps), *deps],
        )
    return setup, testmon_python


async def measure_builds(spec: real_bugs.BugProject, args: argparse.Namespace) -> dict[str, Any]:
    """``--build-rounds N``: N rounds of a plain run, a map-building run (no map, a new server)
    and testmon's data build (no data file), one after the other, so that a change of the
    machine's load weighs on all three alike. Per round the two ratios; their medians."""
    setup, testmon_python = project_venvs(spec, args)
    name = spec.project.name
    real_bugs.commit_tree(setup.root)
    testmon_data = args.work / "testmon" / f"{name}{args.tag}.testmondata"
    testmon_data.parent.mkdir(parents=True, exist_ok=True)
    testmon_env = dict(os.environ, TESTMON_DATAFILE=str(testmon_data))
    project = Project(name, setup.root, setup.python, testmon_python, testmon_env, set(), {})
    project.tag = args.tag
    limit = args.timeout * SETUP_TIMEOUT_FACTOR
    rounds = []
    for _ in range(args.build_rounds):
        _, plain = await timed([str(setup.python), "-m", "pytest", *FULL_FLAGS, "--tb=no"], setup.root, limit)
        for old_map in (args.work / "artifacts" / "maps").glob(f"{setup.root.name}-*"):
            old_map.unlink()
        async with Client(real_bugs.server_params(setup, args.work, args.server_src), read_timeout_seconds=limit) as c:
            result, build = await call(c, "execute_tests", {"affected": True})
        no_map = ((result.structured_content.get("selection") or {}).get("reasons") or {}).get("no_map")
        testmon = None
        if name not in args.build_skip_testmon:
            testmon_data.unlink(missing_ok=True)
            _, testmon = await timed(testmon_argv(project, args.work), setup.root, limit, testmon_env)
        rounds.append({"plain_s": plain, "build_s": build, "testmon_build_s": testmon, "no_map": no_map})
        print(f"  {name}: plain {plain:.2f}s, map build {build:.2f}s (no_map {no_map}), testmon {testmon}s", flush=True)
    return {
        "rounds": rounds,
        "build_ratio": median([r["build_s"] / r["plain_s"] for r in rounds]),
        "testmon_build_ratio": median([r["testmon_build_s"] / r["plain_s"] for r in rounds if r["testmon_build_s"]]),
    }


async def measure_project(spec: real_bugs.BugProject, args: argparse.Namespace) -> tuple[Project, list[Row]]:
    """Set the project up, build the map and testmon's data, then replay its sampled mutants."""
    name = spec.project.name
    setup, testmon_python = project_venvs(spec, args)
    real_bugs.commit_tree(setup.root)
    dirty = real_projects.sh("git", "status", "--porcelain", cwd=setup.root).stdout.strip()
    if dirty:
        raise SystemExit(f"{setup.root} has changes against HEAD (an interrupted run?):\n{dirty}\ndelete it and rerun")
    for old_map in (args.work / "artifacts" / "maps").glob(f"{setup.root.name}-*"):
        old_map.unlink()  # the map is built once per benchmark run, on the clean tree
    testmon_data = args.work / "testmon" / f"{name}{args.tag}.testmondata"
    testmon_data.parent.mkdir(parents=True, exist_ok=True)
    testmon_data.unlink(missing_ok=True)
    testmon_env = dict(os.environ, TESTMON_DATAFILE=str(testmon_data))
    files = library_files(
        setup.root,
        setup.library / spec.package
        if (setup.library / spec.package).is_dir()
        else setup.library / f"{spec.package}.py",
    )
    everything = list_mutants(setup.root, files)
    mutants = sample_mutants(everything, args.mutants_for.get(name, args.mutants), args.seed, name)
    full = [str(setup.python), "-m", "pytest", *FULL_FLAGS]

    plain = []
    for _ in range(args.plain_runs):
        out, took = await timed(full + ["--tb=no"], setup.root, args.timeout * SETUP_TIMEOUT_FACTOR)
        plain.append(took)
    baseline = real_bugs.failing_ids(out)
    collected, _ = await timed(
        [*full[:3], "--collect-only", "-q", "-p", "no:cacheprovider"], setup.root, args.timeout * SETUP_TIMEOUT_FACTOR
    )
    clean_ids = {line.strip() for line in collected.splitlines() if "::" in line}
    print(
        f"{name}: {len(files)} files, {len(everything)} mutants, {len(mutants)} sampled; clean run "
        f"{real_projects.parse_pytest_line(out)[0]} (median {statistics.median(plain):.2f}s)",
        flush=True,
    )
    project = Project(name, setup.root, setup.python, testmon_python, testmon_env, baseline, {}, len(everything))
    project.tag = args.tag
    project.clean_ids = clean_ids
    project.times["plain_s"] = statistics.median(plain)
    tm = testmon_argv(project, args.work)
    _, project.times["testmon_build_s"] = await timed(tm, setup.root, args.timeout * SETUP_TIMEOUT_FACTOR, testmon_env)

    rows: list[Row] = []
    params = real_bugs.server_params(setup, args.work, args.server_src)
    async with Client(params, read_timeout_seconds=args.timeout * 3) as client:
        result, project.times["build_s"] = await call(client, "execute_tests", {"affected": True})
        selection = result.structured_content.get("selection") or {}
        print(f"  map build {project.times['build_s']:.2f}s: {result.content[0].text.splitlines()[0]}", flush=True)
        if not selection.get("reasons", {}).get("no_map"):
            print(f"  note: the map-building run selected {selection} (a map left by an earlier run?)", flush=True)
        result, project.times["clean_again_s"] = await call(client, "execute_tests", {"affected": True})
        project.times["clean_again_selected"] = (result.structured_content.get("selection") or {}).get("selected", -1)
        if args.json:  # a run cut short keeps the setup times of the project it was in
            with args.json.with_suffix(".projects.jsonl").open("a") as progress:
                progress.write(json.dumps({"name": name, "available": project.available, "times": project.times}))
                progress.write("\n")
        for mutant in mutants:
            row = await replay(client, project, mutant, args)
            rows.append(row)
            if args.json:  # a run cut short keeps its rows
                with args.json.with_suffix(".rows.jsonl").open("a") as progress:
                    progress.write(json.dumps(asdict(row)) + "\n")
            print(
                f"  {row.mutant:<58} {row.status:<9} fail {len(row.full_failing):>3} "
                f"sel {row.selected:>3}/{row.total:<3} "
                f"tm {row.testmon_ran:>3} t {row.full_s:.2f}/{row.affected_s:.2f}/{row.testmon_s:.2f}s "
                f"named {'yn'[not row.text_named]}{'yn'[not row.short_named]}"
                f"{' MISSED ' + ','.join(row.missed[:3]) if row.missed else ''}"
                f"{' TM-MISSED ' + ','.join(row.testmon_missed[:3]) if row.testmon_missed else ''}"
                f"{' ' + '; '.join(row.notes) if row.notes else ''}",
                flush=True,
            )
    return project, rows


async def replay(client: Client, project: Project, mutant: Mutant, args: argparse.Namespace) -> Row:
    """One mutant: full run, plan, affected run, testmon run, then revert and resync (see the module docstring)."""
    row = Row(project.name, mutant.key, mutant.path, mutant.line)
    path = project.root / mutant.path
    original = path.read_text(encoding="utf-8")
    mutated = mutated_source(original, mutant)
    if mutated is None or mutated == original:
        row.status = "not applied"
        return row
    full = [str(project.python), "-m", "pytest", *FULL_FLAGS, "--tb=short"]
    tm = testmon_argv(project, args.work)
    try:
        write_source(path, mutated)
        try:
            short, row.full_s = await timed(full, project.root, args.timeout)
        except TimeoutError as exc:
            row.status, row.notes = "timeout", [str(exc)]
            return row
        failing = real_bugs.failing_ids(short) - project.baseline
        row.full_failing = sorted(failing)
        row.status = "killed" if failing else "survived"
        row.short_named = real_bugs.names(short, mutant.path, mutant.line)
        plan, _ = await call(client, "discover_tests", {"affected": True, "limit": 2000})
        planned = set(plan.structured_content.get("node_ids") or [])
        row.planned = len(planned)
        result, row.affected_s = await call(
            client, "execute_tests", {"affected": True, "timeout_s": args.timeout, "failures_listed": 1000}
        )
        data = result.structured_content
        selection = data.get("selection") or {}
        row.selected, row.total = selection.get("selected", 0), selection.get("total", 0)
        row.reasons = {k: v for k, v in (selection.get("reasons") or {}).items() if v}
        counts = (data.get("summary") or {}).get("counts") or {}
        row.affected_failed = int(counts.get("failed", 0)) + int(counts.get("errors", counts.get("error", 0)))
        text = result.content[0].text
        row.first_line = text.splitlines()[0] if text else ""
        row.text_named = real_bugs.names(text, mutant.path, mutant.line)
        row.suspect_named = suspect_names(data.get("suspects"), mutant.path, mutant.line)
        row.affected_status = str(data.get("status", ""))
        shown_errors = json.dumps((data.get("summary") or {}).get("collection_errors") or [])
        row.missed = missed_ids(failing, planned, shown_errors)
        row.renumbered = renumbered(row.missed, planned, project.clean_ids)
        if row.selected != row.planned:
            row.notes.append(f"plan {row.planned} != selected {row.selected}")
        if len(failing) > row.affected_failed and not row.missed:
            row.notes.append(f"full run fails {len(failing)}, affected run {row.affected_failed}")
        try:
            out, row.testmon_s = await timed(tm, project.root, args.timeout, project.testmon_env)
            row.testmon_ran = ran_count(out)
            row.testmon_failing = sorted(real_bugs.failing_ids(out) - project.baseline)
            row.testmon_missed = sorted(set(row.full_failing) - set(row.testmon_failing))
        except (TimeoutError, ValueError) as exc:
            row.notes.append(f"testmon: {str(exc)[:300]}")
    except RuntimeError as exc:
        row.status, row.notes = "tool error", [str(exc)[:500]]
    finally:
        write_source(path, original)
    if row.status in ("killed", "survived", "tool error"):
        _, row.revert_affected_s = await call(client, "execute_tests", {"affected": True, "timeout_s": args.timeout})
        try:
            _, row.revert_testmon_s = await timed(tm, project.root, args.timeout, project.testmon_env)
        except TimeoutError as exc:
            row.notes.append(f"testmon revert: {exc}")
    return row


# -- report -------------------------------------------------------------------------


def fmt(value: object, suffix: str = "") -> str:
    return "n/a" if value is None else f"{value}{suffix}"


def markdown(summary: dict[str, dict[str, Any]], rows: list[Row], meta: dict[str, Any]) -> str:
    """The summary table (one column per project and overall), then the misses."""
    cols = list(summary)
    lines = [
        f"Mutation replay, {meta['date']}: `{meta['command']}`",
        "",
        f"Projects' Python {meta.get('python')}; server from {meta.get('server_src')} (engine "
        f"{meta.get('engine')}); load average {meta.get('load_start')} at the start, "
        f"{meta.get('load_end')} at the end.",
        "",
        "| | " + " | ".join(cols) + " | target |",
        "| --- | " + " | ".join("---" for _ in cols) + " | --- |",
    ]
    spec = [
        ("mutants replayed", "mutants", "", None),
        ("killed", "killed", "", ">= 200 (4+ projects)"),
        ("survived", "survived", "", ">= 30"),
        ("timeout (endless loop, left out)", "timeout", "", ""),
        ("safety: full-run failures all selected", "safety_pct", " %", "100 %"),
        ("safety, misses of renumbered ids left out", "safety_ids_stable_pct", " %", ""),
        ("testmon safety", "testmon_safety_pct", " %", ""),
        ("median selected (affected)", "median_selected_pct", " %", "<= testmon's"),
        ("median selected (testmon)", "median_testmon_selected_pct", " %", ""),
        ("median full run", "median_full_s", " s", ""),
        ("median affected run (tool call)", "median_affected_s", " s", ""),
        ("median testmon run", "median_testmon_s", " s", ""),
        ("median time affected / full", "median_time_ratio", "x", ""),
        ("median time testmon / full", "median_testmon_ratio", "x", ""),
        ("map-building run / plain run", "build_ratio", "x", "<= 1.15x (3.12)"),
        ("testmon data build / plain run", "testmon_build_ratio", "x", ""),
        ("median resync after revert (affected)", "median_revert_affected_s", " s", ""),
        ("median resync after revert (testmon)", "median_revert_testmon_s", " s", ""),
        ("mutated line named (answer text)", "line_named_pct", " %", ">= 95 %"),
        ("mutated line in `suspects`", "suspect_named_pct", " %", ""),
        ("mutated line named (`--tb=short`)", "short_named_pct", " %", ""),
    ]
    for label, key, suffix, target in spec:
        lines.append(
            f"| {label} | " + " | ".join(fmt(summary[c].get(key), suffix) for c in cols) + f" | {target or ''} |"
        )
    misses = [r for r in rows if r.missed]
    lines += ["", f"Safety misses (affected): {len(misses)}"]
    lines += [
        f"- {r.project} `{r.mutant}`: not selected {len(r.missed)} ({', '.join(r.missed[:3])}"
        f"{', ...' if len(r.missed) > 3 else ''}); {len(r.renumbered)} of them under a test function whose planned "
        f"ids a clean collection does not have; answer: {r.first_line}"
        for r in misses
    ]
    tm_misses = [r for r in rows if r.killed and r.testmon_missed]
    lines += ["", f"Safety misses (testmon): {len(tm_misses)}"]
    lines += [
        f"- {r.project} `{r.mutant}`: not run or not failing {', '.join(r.testmon_missed[:5])}" for r in tm_misses
    ]
    unnamed = [r for r in rows if r.killed and not r.text_named]
    lines += ["", f"Killed mutants whose line the answer does not name: {len(unnamed)}"]
    lines += [f"- {r.project} `{r.mutant}` ({len(r.full_failing)} failing)" for r in unnamed]
    odd = [r for r in rows if not r.measured]
    if odd:
        lines += ["", "Not measured:"]
        lines += [f"- {r.project} `{r.mutant}`: {r.status} {'; '.join(r.notes)[:300]}" for r in odd]
    return "\n".join(lines) + "\n"


def server_engine(server_src: Path | None) -> str:
    """The report engine the server would use (``native`` or ``pure``), asked of a fresh
    interpreter with ``server_src`` first on its path."""
    env = dict(os.environ)
    if server_src:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(server_src), env.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-c", "from pytest_mcp_server.engine import resolve_backend as r; print(r('auto'))"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() or f"unknown ({proc.stderr.strip()[-200:]})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "pytest-mcp-server" / "affected")
    parser.add_argument("--only", nargs="*", default=list(DEFAULT_PROJECTS), help="catalogue project names")
    parser.add_argument("--mutants", type=int, default=40, help="mutants sampled per project (40)")
    parser.add_argument(
        "--mutants-for",
        nargs="*",
        default=[],
        metavar="NAME=N",
        help="per-project sample sizes overriding --mutants (a slow suite gets fewer)",
    )
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--plain-runs", type=int, default=3, help="plain runs of the clean tree (median) (3)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per pytest run or tool call (120)")
    parser.add_argument("--catalogue", type=Path, default=real_bugs.CATALOGUE)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--markdown", type=Path, default=None)
    parser.add_argument("--server-src", type=Path, default=None, help="prepend DIR to the server's PYTHONPATH")
    parser.add_argument(
        "--python-version",
        default=None,
        help="run the projects under this CPython (3.12): venvs of its base interpreter (PATH or "
        "~/.pyenv/versions/X.Y.*), with pytest at this interpreter's version, the catalogue's deps and, for "
        "testmon, coverage; named <project>-editable-pyX.Y (default: venvs of this interpreter that see its "
        "packages, as before). The server always runs in this interpreter",
    )
    parser.add_argument(
        "--build-rounds",
        type=int,
        default=0,
        help="no mutants: N interleaved rounds of plain run, map build and testmon build per project; the median "
        "ratios (to --json)",
    )
    parser.add_argument(
        "--build-skip-testmon", nargs="*", default=[], metavar="NAME", help="--build-rounds without testmon's build"
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="no runs: rebuild the table and --json from the progress files of an earlier (cut short) run with "
        "the same --json (<json>.rows.jsonl, <json>.projects.jsonl)",
    )
    parser.add_argument(
        "--hash-seed",
        default="0",
        help="PYTHONHASHSEED for every run ('random' leaves it unset): isodate parametrizes over a set, so its "
        "node ids change between processes under hash randomization (0)",
    )
    parser.add_argument(
        "--no-bytecode",
        action="store_true",
        help="keep PYTHONDONTWRITEBYTECODE when the environment sets it (by default it is removed for every "
        "run: pytest then rewrites and compiles every test module on every start, which no agent's "
        "shell does by default and which inflates every start-up alike)",
    )
    args = parser.parse_args(argv)
    args.mutants_for = {k: int(v) for k, _, v in (item.partition("=") for item in args.mutants_for)}
    try:
        args.base_python = pythons.find_python(args.python_version) if args.python_version else None
    except LookupError as exc:
        raise SystemExit(str(exc)) from None
    args.tag = f"-py{args.python_version}" if args.python_version else ""
    if args.hash_seed != "random":
        os.environ["PYTHONHASHSEED"] = args.hash_seed
    if not args.no_bytecode:
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    projects, _ = real_bugs.load_catalogue(args.catalogue)
    by_name = {p.project.name: p for p in projects}
    unknown = [n for n in args.only if n not in by_name]
    if unknown:
        raise SystemExit(f"--only: {', '.join(unknown)} not in {args.catalogue}")
    command = "python benches/affected.py " + " ".join(sys.argv[1:] if argv is None else argv)
    start = time.monotonic()
    load_start = load_average()
    all_rows: list[Row] = []
    project_info: dict[str, dict[str, Any]] = {}
    if args.build_rounds:
        builds = {name: anyio.run(measure_builds, by_name[name], args) for name in args.only}
        print(json.dumps({n: {k: v for k, v in b.items() if k != "rounds"} for n, b in builds.items()}))
        if args.json:
            meta = {
                "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                "command": command,
                "load_start": " ".join(f"{x:.2f}" for x in load_start or ()),
                "load_end": " ".join(f"{x:.2f}" for x in load_average() or ()),
            }
            # the checkout measured is the server's (a worktree given as --server-src), as in benches/history.py
            meta["bench_commit"] = provenance(None, REPO)["commit"]
            measured = provenance(load_start, args.server_src or REPO)
            args.json.write_text(json.dumps({PROVENANCE_KEY: measured, "meta": meta, "builds": builds}, indent=1))
        return 0
    if args.report_only:
        if not args.json:
            raise SystemExit("--report-only needs the --json of the earlier run")
        all_rows = [Row(**json.loads(line)) for line in args.json.with_suffix(".rows.jsonl").read_text().splitlines()]
        for line in args.json.with_suffix(".projects.jsonl").read_text().splitlines():
            info = json.loads(line)
            project_info[info.pop("name")] = info
        for name in dict.fromkeys(r.project for r in all_rows):  # a project cut short: rows, no setup times
            project_info.setdefault(name, {"available": 0, "times": {}})
    else:
        for path in (
            (args.json.with_suffix(".rows.jsonl"), args.json.with_suffix(".projects.jsonl")) if args.json else ()
        ):
            path.unlink(missing_ok=True)
        if args.json:
            run_record = {
                "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                "command": command,
                "load_start": " ".join(f"{x:.2f}" for x in load_start or ()),
                "load_end": None,
                "seconds": None,
                "mutants_per_project": {n: args.mutants_for.get(n, args.mutants) for n in args.only},
            }
            args.json.with_suffix(".run.json").write_text(json.dumps(run_record, indent=1))
        for name in args.only:
            project, rows = anyio.run(measure_project, by_name[name], args)
            project_info[name] = {"available": project.available, "times": project.times}
            all_rows += rows
    summary = {n: figures([r for r in all_rows if r.project == n], info["times"]) for n, info in project_info.items()}
    totals = {
        k: sum(info["times"][k] for info in project_info.values() if k in info["times"])
        for k in ("plain_s", "build_s", "testmon_build_s")
    }
    summary["overall"] = figures(all_rows, totals)
    python = str(args.base_python) if args.base_python else sys.executable
    meta = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command,
        "python": real_projects.sh(python, "-c", "import sys; print(sys.version.split()[0])").stdout.strip(),
        "server_src": str(args.server_src or "the installed package"),
        "engine": server_engine(args.server_src),
        "load_start": " ".join(f"{x:.2f}" for x in load_start or ()),
        "load_end": " ".join(f"{x:.2f}" for x in load_average() or ()),
        "seed": args.seed,
        "hash_seed": args.hash_seed,
        "bytecode_cache": not args.no_bytecode,
        "mutants_per_project": {n: args.mutants_for.get(n, args.mutants) for n in project_info},
        "seconds": round(time.monotonic() - start, 1),
        "mutation_tool": "cosmic-ray 8.7 (argument-free operators)",
        "projects": {
            n: {"mutants_available": info["available"], **{k: round(v, 3) for k, v in info["times"].items()}}
            for n, info in project_info.items()
        },
    }
    record_path = args.json.with_suffix(".run.json") if args.json else None
    if args.report_only:
        # the rows were measured by an earlier run: its meta is that run's, as it recorded it
        measuring = json.loads(record_path.read_text()) if record_path and record_path.is_file() else {}
        rebuilt = {"date": meta["date"], "command": meta["command"]}
        for key in RUN_RECORD_KEYS:
            meta[key] = measuring.get(key)
        meta["rebuilt"] = rebuilt
    elif record_path is not None:
        record_path.write_text(json.dumps({k: meta[k] for k in RUN_RECORD_KEYS}, indent=1))
    # the checkout measured is the server's (a worktree given as --server-src), as in benches/history.py
    meta["bench_commit"] = provenance(None, REPO)["commit"]
    start_load = [float(x) for x in meta["load_start"].split()] if meta.get("load_start") else None
    measured = provenance(start_load, args.server_src or REPO)
    write_report(args, markdown(summary, all_rows, meta), meta, summary, TARGETS, all_rows, measured)
    print(f"{len(all_rows)} mutants in {meta['seconds'] or 0:.0f}s")
    return 0


def write_report(
    args: argparse.Namespace,
    table: str,
    meta: dict[str, Any],
    summary: Any,
    targets: Any,
    rows: list[Any],
    measured: dict[str, Any],
) -> None:
    """Print ``table`` and write it to ``--markdown``, and ``{provenance, meta, summary,
    targets, rows}`` (``measured``: ``pytest_mcp_server.bench.common.provenance``; each row a
    dataclass, as a dict) to ``--json``, when given (this benchmark's and
    ``benches/history.py``'s report)."""
    print()
    print(table)
    if args.markdown:
        args.markdown.write_text(table)
    if args.json:
        payload = {
            PROVENANCE_KEY: measured,
            "meta": meta,
            "summary": summary,
            "targets": targets,
            "rows": [asdict(r) for r in rows],
        }
        args.json.write_text(json.dumps(payload, indent=1))


if __name__ == "__main__":
    sys.exit(main())
