#!/usr/bin/env python
"""Commit-history replay: edit to answer with ``execute_tests(affected=true)``, the full suite and pytest-testmon.

An agent edits code and wants the answer to "what did I break" as fast as it can be
had. This benchmark replays real commits of projects with public histories as the
agent's uncommitted edits and measures, per commit, what a change-aware call selects,
whether that is safe, and how long the answer takes against a plain full run and
pytest-testmon:

* projects (``PROJECTS``: more-itertools, marshmallow, attrs, click; attrs' logic lives
  in class bodies and module tables and its ``__init__`` imports by a computed name,
  click's examples call ``__import__`` with one): git directories already on this
  machine (``--mirrors``), each
  cloned once (``git clone --shared``) into ``WORK/trees/<name>``. Their commits: the
  last ``--commits`` commits of the default branch's first-parent history that change
  a ``*.py`` file (``git log --first-parent -- '*.py'``), replayed oldest first. A merge
  is replayed as its diff against its first parent;
* two virtualenvs per project, made once from the tree at the branch tip: the project
  installed editable with its test dependencies (``Spec.deps``) and pytest at this
  interpreter's version; the second also with pytest-testmon 2.2.0 and coverage.py
  (this interpreter's version), its data file outside the tree (``TESTMON_DATAFILE``).
  With ``--python-version X.Y`` both are made from that CPython's base interpreter
  (``pythons.find_python``), else from this one (seeing its packages);
* one server per project for the whole replay (the agent's session): ``pytest-mcp-server
  --root TREE --python VENV_PYTHON --artifacts-dir WORK/artifacts`` over the MCP SDK's
  stdio client (``real_bugs.server_params``; ``--server-src`` pins its source). The map
  is built from nothing at the first commit's parent and kept up to date from then on,
  as an agent's would be;
* per commit C with first parent P:

  1. the tree is reset to P (``git reset --hard``, ``git clean -fd``, ``git checkout
     --detach P``: ignored files such as byte code stay);
  2. at P: the plain full run (``python -m pytest -q -p no:cacheprovider -rfE
     --tb=no``, wall time: the reference failing set), a collect-only run (the node
     ids), one ``execute_tests(affected=true)`` (the map brought to P, timed apart: the
     cost of keeping it, not of the edit) and one ``pytest --testmon`` (testmon's data
     brought to P, timed apart);
  3. C's changes are applied as uncommitted edits (``git diff --binary P C | git
     apply``; the tree's ``HEAD`` stays P; the byte code of the changed files is
     removed);
  4. at C, in this order: ONE ``execute_tests(affected=true)`` (wall time of the tool
     call: the edit-to-answer time; the tests it ran are read from its run's record file
     ``records.jsonl``), the plain full run (wall time, its failing set), a collect-only
     run (the node ids) and ``pytest --testmon -rA`` (wall time, the tests it ran and its
     failing set).

Figures per commit: ``must_run``: the tests whose outcome differs between P's and C's
full runs (failing at one of them only; a collection error counts by its file) and the
tests new at C; ``missed``: those the affected call did not run (a collection error's
file counts as run when the answer shows its collection error); the same for testmon.
``selected``/``total`` from the call's ``selection``; the time fraction is the call's
wall time over C's plain run. A call that selected nothing and did not start pytest
(no ``pytest_started``, nothing in its record file) is an answer without pytest: the
commit changed no Python the suite runs (docs, typing stubs, tooling), counted apart.
Server start (the stdio client's connect and ``initialize``) is measured once per
project and reported beside the medians: add it when the agent starts a new server.

Usage::

    python benches/history.py [--work DIR] [--only NAME ...] [--commits N] [--python-version X.Y]
                              [--server-src DIR] [--timeout S] [--json FILE] [--markdown FILE]
                              [--report-only]

With ``--json``, rows and setup facts (per project: its branch tip, the first and last
commit replayed, the pytest, pytest-testmon and coverage.py versions) are appended as
they come to ``FILE.rows.jsonl`` and ``FILE.projects.jsonl``; ``--report-only`` rebuilds
the table and the JSON from them after a run cut short. The JSON's ``provenance``
(``pytest_mcp_server.bench.common.provenance``) names the server's commit: that of the
``--server-src`` checkout when given, else this one (``meta.bench_commit``: this script's).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from pytest_mcp_server.bench.common import load_average, provenance

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "benches"))
import affected as mutation  # noqa: E402  (benches/affected.py: timed runs, tool calls, testmon's argv, pins)
import pythons  # noqa: E402  (benches/pythons.py: another CPython's base interpreter)
import real_bugs  # noqa: E402  (benches/real_bugs.py: stdio server parameters, failing ids)
import real_projects  # noqa: E402  (scripts/real_projects.py: venvs, pytest summary parsing)

MIRRORS = Path("/work/.mirror")


@dataclass(frozen=True)
class Spec:
    """A project: its git directory under ``--mirrors``, default branch and test dependencies."""

    name: str
    mirror: str  # <owner>+<name>/repo under --mirrors
    branch: str
    deps: tuple[str, ...] = ()


PROJECTS = (
    Spec("more-itertools", "more-itertools+more-itertools/repo", "master"),
    Spec("marshmallow", "marshmallow-code+marshmallow/repo", "dev", ("simplejson", "pytz")),
    # tests group less pytest-xdist (not used by its addopts) and mypy's plugin (its yml cases take minutes)
    Spec("attrs", "python-attrs+attrs/repo", "main", ("hypothesis", "pympler", "cloudpickle")),
    # its tests group is pytest alone; its examples import by a computed name (``__import__``);
    # pytest 8 as in its history: its filterwarnings = ["error"] turns pytest 9's deprecation of
    # parametrize over a non-Collection iterable into a collection error in tests/test_basic.py
    Spec("click", "pallets+click/repo", "main", ("pytest==8.4.2",)),
)
TESTMON = mutation.TESTMON
VERBOSE = re.compile(r"^(\S+::.+?) (?:PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
"""A verbose line of pytest's: ``tests/test_x.py::test_y[a b] SKIPPED (reason) [ 10%]``."""
PLAIN = ("-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE", "--tb=no")
TARGETS = {
    "commits": "50 per project, >= 4 projects (suites of 1-120 s)",
    "safety_pct": 100.0,
    "median_time_ratio": "<= 0.25x on suites over 10 s, <= 0.5x on suites of 1-5 s",
    "nothing_changed_ratio": "<= 0.15x",
    "vs_testmon": "median time ratio below testmon's",
    "all_selected_ratio": "<= 1.15x on Python 3.12+ (a call that selects every test)",
}


@dataclass
class Row:
    """One replayed commit (see the module docstring)."""

    project: str
    commit: str
    parent: str
    subject: str
    py_files: int = 0  # .py files the commit changes
    status: str = ""  # measured, apply failed, tool error, timeout
    total: int = 0  # selection.total
    selected: int = 0  # selection.selected
    reasons: dict[str, int] = field(default_factory=dict)
    changed_files: list[str] = field(default_factory=list)
    pytest_started: str = ""  # selection.pytest_started (selected nothing and still started pytest)
    no_pytest: bool = False  # answered without starting pytest
    ran: int = 0  # tests in the call's record file
    affected_status: str = ""
    affected_failed: int = 0
    affected_s: float = 0.0
    first_line: str = ""
    plain_p_s: float = 0.0
    plain_s: float = 0.0
    plain_line: str = ""
    tests_c: int = 0  # C's collect-only count
    failing_p: list[str] = field(default_factory=list)
    failing_c: list[str] = field(default_factory=list)
    new_tests: int = 0
    must_run: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    renumbered: list[str] = field(default_factory=list)  # of those, ones whose function ran under other ids
    testmon_ran: int = 0
    testmon_s: float = 0.0
    testmon_failing: list[str] = field(default_factory=list)
    testmon_missed: list[str] = field(default_factory=list)
    testmon_renumbered: list[str] = field(default_factory=list)
    upkeep_s: float = 0.0  # the affected call at P (the map brought to P)
    upkeep_selected: int = 0
    testmon_upkeep_s: float = 0.0
    unstable: list[str] = field(default_factory=list)  # must_run ids whose function's ids churn (mark_churning)
    notes: list[str] = field(default_factory=list)

    @property
    def measured(self) -> bool:
        return self.status == "measured"


# -- git ------------------------------------------------------------------------------


def git(tree: Path, *argv: str, stdin: str | None = None, check: bool = True) -> str:
    """stdout of ``git -C tree ARGV``; raises RuntimeError with stderr when it fails and ``check``."""
    proc = subprocess.run(["git", "-C", str(tree), *argv], input=stdin, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(argv)}: {proc.stderr.strip()[-1000:]}")
    return proc.stdout


def tree_of(spec: Spec, args: argparse.Namespace) -> Path:
    """``WORK/trees/<name>``: a shared clone of the mirror (made once), reset to the branch tip."""
    tree = args.work / "trees" / spec.name
    if not (tree / ".git").exists():
        tree.parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            ["git", "clone", "-q", "--shared", str(args.mirrors / spec.mirror), str(tree)],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise SystemExit(f"cloning {spec.name}: {proc.stderr[-1000:]}")
    reset(tree, f"origin/{spec.branch}")
    return tree


def reset(tree: Path, commit: str) -> None:
    """The tree at ``commit`` (detached), no changes or untracked files (ignored ones stay)."""
    git(tree, "reset", "-q", "--hard")
    git(tree, "clean", "-fdq")
    git(tree, "checkout", "-q", "--detach", commit)


def python_commits(tree: Path, branch: str, count: int) -> list[tuple[str, str, str]]:
    """``(commit, first parent, subject)`` of the last ``count`` first-parent commits of
    ``branch`` that change a ``*.py`` file, oldest first (root commits left out)."""
    out = git(tree, "log", "--first-parent", "--format=%H %P%x09%s", f"origin/{branch}", "--", "*.py")
    commits = []
    for line in out.splitlines():
        hashes, _, subject = line.partition("\t")
        commit, *parents = hashes.split()
        if parents:
            commits.append((commit, parents[0], subject))
        if len(commits) == count:
            break
    return commits[::-1]


def apply_commit(tree: Path, parent: str, commit: str) -> list[str]:
    """C's changes on the tree at P as uncommitted edits; returns the changed ``.py`` files
    (their byte code removed)."""
    diff = git(tree, "diff", "--binary", parent, commit)
    git(tree, "apply", "--whitespace=nowarn", "-", stdin=diff)
    changed = git(tree, "diff", "--name-only", parent, commit, "--", "*.py").split()
    for rel in changed:
        path = tree / rel
        for cached in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):
            cached.unlink()
    return changed


# -- runs -----------------------------------------------------------------------------


async def plain(project: Project, timeout: float) -> tuple[set[str], float, str]:
    """The plain full run: its failing ids, wall seconds and pytest's summary line."""
    out, took = await mutation.timed([str(project.python), *PLAIN], project.root, timeout)
    try:
        line, _ = real_projects.parse_pytest_line(out)
    except ValueError:
        line = (out.strip().splitlines() or ["(no output)"])[-1][:200]
    return real_bugs.failing_ids(out), took, line


COLLECT = """
import sys
import pytest


class Ids:
    def pytest_collection_finish(self, session):
        with open(sys.argv[1], "w", encoding="utf-8") as out:
            out.writelines(item.nodeid + "\\n" for item in session.items)


sys.exit(pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider"], plugins=[Ids()]))
"""
"""A collect-only pytest that writes the collected node ids to ``argv[1]``, one a line
(whatever the project's ``addopts`` make of ``-q``)."""


async def collected(project: Project, timeout: float) -> set[str]:
    """The node ids a collect-only run finds (``COLLECT``)."""
    ids = project.work / "collected.txt"
    ids.unlink(missing_ok=True)
    await mutation.timed([str(project.python), "-c", COLLECT, str(ids)], project.root, timeout)
    return set(ids.read_text(encoding="utf-8").splitlines()) if ids.exists() else set()


async def testmon(project: Project, timeout: float) -> tuple[set[str], set[str], float]:
    """``pytest --testmon -rA -v -v``: the ids it ran (its ``-rA`` lines, and its verbose
    lines for the skipped tests, which ``-rA`` does not name), its failing ids and its
    wall seconds. (``-v -v``: testmon's ``-q`` and the project's ``addopts`` leave it verbose.)"""
    argv = [*mutation.testmon_argv(project, project.work), "-rA", "-v", "-v"]  # type: ignore[arg-type]
    out, took = await mutation.timed(argv, project.root, timeout, project.testmon_env)
    ran = set()
    for line in out.splitlines():
        head, _, rest = line.partition(" ")
        if head in ("PASSED", "FAILED", "ERROR", "XFAIL", "XPASS"):
            ran.add(rest.split(" - ", 1)[0].strip())
        elif match := VERBOSE.match(line):
            ran.add(match.group(1))
    return ran, real_bugs.failing_ids(out), took


def record_outcomes(structured: dict[str, Any]) -> dict[str, str] | None:
    """The tests the call's run finished (node id -> outcome), from the run directory's
    ``records.jsonl`` as the engine reads it; None when the answer names no run
    directory with one."""
    from pytest_mcp_server.domain.policy import EVERY_OUTCOME
    from pytest_mcp_server.engine import read_report
    from pytest_mcp_server.engine.models import Budgets

    def outcomes(records: Path) -> dict[str, str]:
        return dict(read_report([str(records)], budgets=Budgets(max_outcomes=EVERY_OUTCOME)).outcomes or {})

    for key in ("report_path",):
        value = structured.get(key)
        if value:
            path = Path(value)
            records = (path if path.is_dir() else path.parent) / "records.jsonl"
            if records.exists():
                return outcomes(records)
    for arg in structured.get("command") or []:  # the answer's argv names its run directory
        if isinstance(arg, str) and "records.jsonl" in arg:
            records = Path(arg.split("=", 1)[-1])
            if records.exists():
                return outcomes(records)
    return None


def counted_as_run(node_id: str, ran: set[str], shown_errors: str) -> bool:
    """Whether ``node_id`` (a test, or a file for its collection error) is in ``ran`` or
    the answer shows its file's collection error (``shown_errors``: their JSON)."""
    if node_id in ran or any(r.startswith(node_id + "::") for r in ran):
        return True
    return "::" not in node_id and json.dumps(node_id)[1:-1] in shown_errors


def renumbered(missed: list[str], ran: set[str], ids: set[str]) -> list[str]:
    """The ``missed`` ids whose test function ran under ids that the collection (``ids``)
    does not have: ids made from the clock or the process (marshmallow parametrizes
    ``test_invalid_datetime_deserialization`` over ``dt.datetime.now()`` strings) differ
    between any two pytest processes, so a miss by id is then no test left out."""
    foreign = {r.split("[", 1)[0] for r in ran if r not in ids}
    return [m for m in missed if m.split("[", 1)[0] in foreign]


@dataclass
class Project:
    """One project being replayed: its tree, venvs, testmon's environment and setup facts."""

    name: str
    root: Path
    python: Path
    testmon_python: Path
    testmon_env: dict[str, str]
    work: Path
    tag: str = ""
    facts: dict[str, Any] = field(default_factory=dict)


def package_version(python: Path, distribution: str) -> str | None:
    """The version of ``distribution`` installed for ``python`` (None: not installed)."""
    code = f"from importlib import metadata; print(metadata.version({distribution!r}))"
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=False)
    return done.stdout.strip() or None


def setup(spec: Spec, args: argparse.Namespace) -> Project:
    """The tree at the branch tip, both venvs (made once), testmon's data file removed, old maps removed."""
    tree = tree_of(spec, args)
    pins = mutation.pinned("pytest", spec.deps)
    if args.base_python is None:
        python = real_projects.make_venv(
            args.work / "venvs" / spec.name, [["-e", str(tree)], list(spec.deps)], spec.name
        )
        testmon_python = real_projects.make_venv(
            args.work / "venvs" / f"{spec.name}-testmon",
            [["-e", str(tree)], [TESTMON], list(spec.deps)],
            f"{spec.name} (testmon)",
        )
    else:
        python = real_projects.make_venv(
            args.work / "venvs" / f"{spec.name}{args.tag}",
            [["-e", str(tree)]],
            spec.name,
            args.base_python,
            [*pins, *spec.deps],
        )
        testmon_python = real_projects.make_venv(
            args.work / "venvs" / f"{spec.name}-testmon{args.tag}",
            [["-e", str(tree)]],
            f"{spec.name} (testmon)",
            args.base_python,
            [*pins, TESTMON, *mutation.pinned("coverage", spec.deps), *spec.deps],
        )
    for old_map in (args.work / "artifacts" / "maps").glob(f"{tree.name}-*"):
        old_map.unlink()
    data = args.work / "testmon" / f"{spec.name}{args.tag}.testmondata"
    data.parent.mkdir(parents=True, exist_ok=True)
    for old in data.parent.glob(f"{data.name}*"):
        old.unlink()
    env = dict(os.environ, TESTMON_DATAFILE=str(data))
    return Project(spec.name, tree, python, testmon_python, env, args.work, args.tag)


async def measure_project(spec: Spec, args: argparse.Namespace) -> tuple[Project, list[Row]]:
    """Replay the project's commits through one server (see the module docstring)."""
    project = setup(spec, args)
    commits = python_commits(project.root, spec.branch, args.commits_for.get(spec.name, args.commits))
    print(f"{spec.name}: {len(commits)} commits from {commits[0][0][:8]} to {commits[-1][0][:8]}", flush=True)
    # what was replayed, with what: the JSON's provenance of the projects' side
    project.facts["branch"] = spec.branch
    project.facts["tip"] = git(project.root, "rev-parse", f"origin/{spec.branch}").strip()
    project.facts["commits"] = [commits[0][0], commits[-1][0]]
    project.facts["versions"] = {
        "pytest": package_version(project.python, "pytest"),
        "pytest-testmon": package_version(project.testmon_python, "pytest-testmon"),
        "coverage (testmon's)": package_version(project.testmon_python, "coverage"),
    }
    reset(project.root, commits[0][1])
    rows: list[Row] = []
    params = real_bugs.server_params(project, args.work, args.server_src)  # type: ignore[arg-type]
    starts = []
    for _ in range(3):  # server start: connect and initialize, nothing called
        start = time.monotonic()
        async with Client(params, read_timeout_seconds=args.timeout * 3):
            starts.append(time.monotonic() - start)
    project.facts["server_start_s"] = statistics.median(starts)
    start = time.monotonic()
    async with Client(params, read_timeout_seconds=args.timeout * 3) as client:
        project.facts["first_connect_s"] = time.monotonic() - start
        result, project.facts["build_s"] = await mutation.call(client, "execute_tests", {"affected": True})
        print(
            f"  map build at {commits[0][1][:8]} {project.facts['build_s']:.2f}s: "
            f"{result.content[0].text.splitlines()[0]}",
            flush=True,
        )
        _, _, project.facts["testmon_build_s"] = await testmon(project, args.timeout)
        if args.json:
            with args.json.with_suffix(".projects.jsonl").open("a") as progress:
                progress.write(json.dumps({"name": spec.name, "facts": project.facts}) + "\n")
        for commit, parent, subject in commits:
            row = await replay(client, project, commit, parent, subject, args)
            rows.append(row)
            if args.json:
                with args.json.with_suffix(".rows.jsonl").open("a") as progress:
                    progress.write(json.dumps(asdict(row)) + "\n")
            print(
                f"  {commit[:8]} {row.status:<8} py {row.py_files:>2} sel {row.selected:>4}/{row.total:<4} "
                f"{'NOPYTEST ' if row.no_pytest else ''}t aff {row.affected_s:.2f} plain {row.plain_s:.2f} "
                f"tm {row.testmon_s:.2f} ({row.testmon_ran} ran) must {len(row.must_run)}"
                f"{' MISSED ' + ','.join(row.missed[:3]) if row.missed else ''}"
                f"{' TM-MISSED ' + ','.join(row.testmon_missed[:3]) if row.testmon_missed else ''}"
                f"{' ' + '; '.join(row.notes)[:200] if row.notes else ''}",
                flush=True,
            )
            if time.monotonic() > args.stop_at:
                print("  --stop-after reached: the remaining commits are left out", flush=True)
                break
    reset(project.root, f"origin/{spec.branch}")
    return project, rows


async def replay(
    client: Client, project: Project, commit: str, parent: str, subject: str, args: argparse.Namespace
) -> Row:
    """One commit: P's runs and upkeep, C's edits, then the timed affected call, plain run and testmon run."""
    row = Row(project.name, commit[:10], parent[:10], subject[:100])
    try:
        reset(project.root, parent)
        failing_p, row.plain_p_s, _ = await plain(project, args.timeout)
        ids_p = await collected(project, args.timeout)
        result, row.upkeep_s = await mutation.call(
            client, "execute_tests", {"affected": True, "timeout_s": args.timeout}
        )
        row.upkeep_selected = (result.structured_content.get("selection") or {}).get("selected", 0)
        _, _, row.testmon_upkeep_s = await testmon(project, args.timeout)
        try:
            changed = apply_commit(project.root, parent, commit)
        except RuntimeError as exc:
            row.status, row.notes = "apply failed", [str(exc)[:300]]
            return row
        row.py_files = len(changed)

        result, row.affected_s = await mutation.call(
            client, "execute_tests", {"affected": True, "timeout_s": args.timeout, "failures_listed": 1000}
        )
        data = result.structured_content
        selection = data.get("selection") or {}
        row.selected, row.total = selection.get("selected", 0), selection.get("total", 0)
        row.reasons = {k: v for k, v in (selection.get("reasons") or {}).items() if v}
        row.changed_files = list(selection.get("changed_files") or [])
        row.pytest_started = str(selection.get("pytest_started") or "")
        counts = (data.get("summary") or {}).get("counts") or {}
        row.affected_failed = int(counts.get("failed", 0)) + int(counts.get("errors", counts.get("error", 0)))
        row.affected_status = str(data.get("status", ""))
        text = result.content[0].text
        row.first_line = text.splitlines()[0] if text else ""
        outcomes = record_outcomes(data)
        if outcomes is None:
            ran: set[str] = set()
            row.notes.append("no record file found: the call's tests are taken as none")
        else:
            ran = set(outcomes)
        row.ran = len(ran)
        row.no_pytest = row.selected == 0 and not row.pytest_started and not ran
        shown_errors = json.dumps((data.get("summary") or {}).get("collection_errors") or [])

        failing_c, row.plain_s, row.plain_line = await plain(project, args.timeout)
        ids_c = await collected(project, args.timeout)
        tm_ran, tm_failing, row.testmon_s = await testmon(project, args.timeout)
    except TimeoutError as exc:
        row.status, row.notes = "timeout", [str(exc)[:300]]
        return row
    except RuntimeError as exc:
        row.status, row.notes = "tool error", [str(exc)[:500]]
        return row
    row.status = "measured"
    row.tests_c = len(ids_c)
    row.failing_p, row.failing_c = sorted(failing_p), sorted(failing_c)
    new = ids_c - ids_p
    row.new_tests = len(new)
    row.must_run = sorted((failing_p ^ failing_c) | new)
    # a test gone at C cannot run: its failing at P alone does not make it a miss
    gone = {t for t in failing_p - failing_c if "::" in t and t not in ids_c}
    row.must_run = [t for t in row.must_run if t not in gone]
    row.missed = [t for t in row.must_run if not counted_as_run(t, ran, shown_errors)]
    row.testmon_ran = len(tm_ran)
    row.testmon_failing = sorted(tm_failing)
    row.testmon_missed = [t for t in row.must_run if not counted_as_run(t, tm_ran | tm_failing, "")]
    row.renumbered = renumbered(row.missed, ran, ids_c)
    row.testmon_renumbered = renumbered(row.testmon_missed, tm_ran | tm_failing, ids_c)
    if row.affected_failed != len(failing_c & ran) and outcomes is not None:
        row.notes.append(
            f"affected call failed {row.affected_failed}, full run fails {len(failing_c & ran)} of its tests"
        )
    return row


# -- figures --------------------------------------------------------------------------


def median(values: list[float]) -> float | None:
    """The median, 3 decimals; None for no values."""
    return round(statistics.median(values), 3) if values else None


def pct(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 1) if whole else None


def base(node_id: str) -> str:
    """A node id without its parametrization (``test_x[1]`` -> ``test_x``)."""
    return node_id.split("[", 1)[0]


def mark_churning(rows: list[Row]) -> None:
    """Count as renumbered the misses of a test function that the project's rows miss
    under two or more different ids: its ids change from one pytest process to the next
    (made from the clock, as marshmallow's ``test_invalid_datetime_deserialization[09:34:54
    2026-11-28]``), so no other process can run the id one collection saw. This also
    covers the answers without pytest, which run nothing to compare with."""
    for project in {r.project for r in rows}:
        mine = [r for r in rows if r.project == project]
        seen: dict[str, set[str]] = {}
        for r in mine:
            for m in (*r.missed, *r.testmon_missed):
                seen.setdefault(base(m), set()).add(m)
        churning = {b for b, ids in seen.items() if len(ids) > 1}
        for r in mine:
            r.unstable = [m for m in r.must_run if base(m) in churning]
            r.renumbered = sorted(set(r.renumbered) | {m for m in r.missed if base(m) in churning})
            r.testmon_renumbered = sorted(
                set(r.testmon_renumbered) | {m for m in r.testmon_missed if base(m) in churning}
            )


def figures(rows: list[Row], facts: dict[str, Any]) -> dict[str, Any]:
    """One project's (or all projects') summary of ``rows``."""
    measured = [r for r in rows if r.measured]
    ran_pytest = [r for r in measured if not r.no_pytest]
    nothing = [r for r in measured if r.no_pytest]
    with_must = [r for r in measured if r.must_run]
    ratio = [r.affected_s / r.plain_s for r in measured if r.plain_s]
    tm_ratio = [r.testmon_s / r.plain_s for r in measured if r.plain_s]
    return {
        "commits": len(rows),
        "measured": len(measured),
        "not_measured": len(rows) - len(measured),
        "median_tests": median([float(r.tests_c) for r in measured]),
        "median_plain_s": median([r.plain_s for r in measured]),
        "commits_with_changed_outcomes": sum(len(r.must_run) > len(r.unstable) for r in with_must),
        "safety_pct": pct(sum(not r.missed for r in measured), len(measured)),
        "safety_ids_stable_pct": pct(sum(len(r.missed) == len(r.renumbered) for r in measured), len(measured)),
        "testmon_safety_pct": pct(sum(not r.testmon_missed for r in measured), len(measured)),
        "testmon_safety_ids_stable_pct": pct(
            sum(len(r.testmon_missed) == len(r.testmon_renumbered) for r in measured), len(measured)
        ),
        "median_selected_pct": median([100.0 * r.selected / r.total for r in measured if r.total]),
        "median_testmon_pct": median([100.0 * r.testmon_ran / r.tests_c for r in measured if r.tests_c]),
        "median_affected_s": median([r.affected_s for r in measured]),
        "median_testmon_s": median([r.testmon_s for r in measured]),
        "median_time_ratio": median(ratio),
        "median_testmon_ratio": median(tm_ratio),
        "affected_faster_pct": pct(sum(r.affected_s < r.testmon_s for r in measured), len(measured)),
        "median_time_ratio_pytest_started": median([r.affected_s / r.plain_s for r in ran_pytest if r.plain_s]),
        "all_selected_calls": sum(bool(r.total) and r.selected == r.total for r in measured),
        "median_time_ratio_all_selected": median(
            [r.affected_s / r.plain_s for r in measured if r.plain_s and r.total and r.selected == r.total]
        ),
        "no_pytest_calls": len(nothing),
        "median_no_pytest_ratio": median([r.affected_s / r.plain_s for r in nothing if r.plain_s]),
        "median_no_pytest_s": median([r.affected_s for r in nothing]),
        "zero_selected_pytest_started": sum(r.selected == 0 and not r.no_pytest for r in measured),
        "median_upkeep_s": median([r.upkeep_s for r in measured]),
        "median_testmon_upkeep_s": median([r.testmon_upkeep_s for r in measured]),
        "server_start_s": round(facts["server_start_s"], 3) if "server_start_s" in facts else None,
        "build_s": round(facts["build_s"], 2) if "build_s" in facts else None,
        "testmon_build_s": round(facts["testmon_build_s"], 2) if "testmon_build_s" in facts else None,
    }


def fmt(value: object, suffix: str = "") -> str:
    return "n/a" if value is None else f"{value}{suffix}"


SPEC = [
    ("commits replayed (measured)", "measured", "", "50 per project"),
    ("commits where an outcome changed or a test is new", "commits_with_changed_outcomes", "", ""),
    ("median tests collected", "median_tests", "", ""),
    ("median plain full run", "median_plain_s", " s", ""),
    ("safety: changed outcomes and new tests all run (affected)", "safety_pct", " %", "100 %"),
    ("safety, misses of renumbered ids left out (affected)", "safety_ids_stable_pct", " %", ""),
    ("safety (testmon)", "testmon_safety_pct", " %", ""),
    ("safety, misses of renumbered ids left out (testmon)", "testmon_safety_ids_stable_pct", " %", ""),
    ("median selected (affected)", "median_selected_pct", " %", ""),
    ("median run (testmon)", "median_testmon_pct", " %", ""),
    ("median edit to answer (affected call)", "median_affected_s", " s", ""),
    ("median testmon run", "median_testmon_s", " s", ""),
    ("median affected / plain", "median_time_ratio", "x", "<= 0.25x (>10 s), <= 0.5x (1-5 s)"),
    ("median testmon / plain", "median_testmon_ratio", "x", "affected below"),
    ("commits where affected is faster than testmon", "affected_faster_pct", " %", ""),
    ("median affected / plain, calls that started pytest", "median_time_ratio_pytest_started", "x", ""),
    ("calls that selected every test", "all_selected_calls", "", ""),
    ("median affected / plain, calls that selected every test", "median_time_ratio_all_selected", "x", "<= 1.15x"),
    ("answers without pytest", "no_pytest_calls", "", ""),
    ("median affected / plain, answers without pytest", "median_no_pytest_ratio", "x", "<= 0.15x"),
    ("calls selecting 0 that still started pytest", "zero_selected_pytest_started", "", ""),
    ("server start (connect + initialize)", "server_start_s", " s", ""),
    ("map build at the first parent", "build_s", " s", ""),
    ("testmon data build at the first parent", "testmon_build_s", " s", ""),
    ("median map upkeep at P (affected call)", "median_upkeep_s", " s", ""),
    ("median testmon upkeep at P", "median_testmon_upkeep_s", " s", ""),
]


def markdown(summary: dict[str, dict[str, Any]], rows: list[Row], meta: dict[str, Any]) -> str:
    """The summary table (a column per project and overall), then the misses and the odd commits."""
    cols = list(summary)
    lines = [
        f"Commit-history replay, {meta['date']}: `{meta['command']}`",
        "",
        f"Projects' Python {meta.get('python')}; server from {meta.get('server_src')} (engine {meta.get('engine')}); "
        f"load average {meta.get('load_start')} at the start, {meta.get('load_end')} at the end.",
        "",
        "| | " + " | ".join(cols) + " | target |",
        "| --- | " + " | ".join("---" for _ in cols) + " | --- |",
    ]
    for label, key, suffix, target in SPEC:
        lines.append(f"| {label} | " + " | ".join(fmt(summary[c].get(key), suffix) for c in cols) + f" | {target} |")
    misses = [r for r in rows if len(r.missed) > len(r.renumbered)]
    churned = sorted({base(m) for r in rows for m in (*r.renumbered, *r.testmon_renumbered)})
    if churned:
        lines += ["", "Ids that change from one pytest process to the next (their misses are 'renumbered', left out):"]
        lines += [f"- `{b}`" for b in churned]
    lines += ["", f"Safety misses (affected), renumbered ids left out: {len(misses)}"]
    lines += [
        f"- {r.project} {r.commit} ({r.subject}): not run {', '.join(r.missed[:5])}"
        f"{', ...' if len(r.missed) > 5 else ''} ({len(r.renumbered)} renumbered); "
        f"failing at P {len(r.failing_p)}, at C {len(r.failing_c)}; "
        f"answer: {r.first_line}"
        for r in misses
    ]
    tm_misses = [r for r in rows if len(r.testmon_missed) > len(r.testmon_renumbered)]
    lines += ["", f"Safety misses (testmon), renumbered ids left out: {len(tm_misses)}"]
    lines += [
        f"- {r.project} {r.commit} ({r.subject}): not run {', '.join(r.testmon_missed[:5])}"
        f"{', ...' if len(r.testmon_missed) > 5 else ''} ({len(r.testmon_renumbered)} renumbered)"
        for r in tm_misses
    ]
    odd = [r for r in rows if not r.measured]
    if odd:
        lines += ["", "Not measured:"]
        lines += [f"- {r.project} {r.commit}: {r.status} {'; '.join(r.notes)[:300]}" for r in odd]
    lines += [
        "",
        "Per commit (must run: changed outcomes and new tests, churning ids left out; missed: by the "
        "affected call, by testmon; renumbered ones left out):",
        "",
    ]
    lines += [
        "| project | commit | .py | selected | affected s | plain s | testmon s | testmon ran | must run | missed |"
    ]
    lines += ["| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        if r.measured:
            lines.append(
                f"| {r.project} | {r.commit[:8]} | {r.py_files} | {r.selected}/{r.total}"
                f"{' (no pytest)' if r.no_pytest else ''} | {r.affected_s:.2f} | {r.plain_s:.2f} | "
                f"{r.testmon_s:.2f} | {r.testmon_ran} | {len(r.must_run) - len(r.unstable)} | "
                f"{len(r.missed) - len(r.renumbered)}, {len(r.testmon_missed) - len(r.testmon_renumbered)} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "pytest-mcp-server" / "history")
    parser.add_argument("--mirrors", type=Path, default=MIRRORS, help="where the projects' git directories are")
    parser.add_argument("--only", nargs="*", default=[p.name for p in PROJECTS])
    parser.add_argument("--commits", type=int, default=50, help="commits changing *.py per project (50)")
    parser.add_argument("--commits-for", nargs="*", default=[], metavar="NAME=N", help="per-project --commits")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per pytest run or tool call (300)")
    parser.add_argument("--stop-after", type=float, default=0.0, help="minutes: no new commit after this (0: none)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--markdown", type=Path, default=None)
    parser.add_argument("--server-src", type=Path, default=None, help="prepend DIR to the server's PYTHONPATH")
    parser.add_argument("--python-version", default=None, help="venvs of this CPython's base interpreter (3.12)")
    parser.add_argument("--hash-seed", default="0", help="PYTHONHASHSEED for every run ('random': unset) (0)")
    parser.add_argument("--report-only", action="store_true", help="rebuild from --json's progress files")
    args = parser.parse_args(argv)
    args.commits_for = {k: int(v) for k, _, v in (item.partition("=") for item in args.commits_for)}
    try:
        args.base_python = pythons.find_python(args.python_version) if args.python_version else None
    except LookupError as exc:
        raise SystemExit(str(exc)) from None
    args.tag = f"-py{args.python_version}" if args.python_version else ""
    args.work = args.work.resolve()
    if args.hash_seed != "random":
        os.environ["PYTHONHASHSEED"] = args.hash_seed
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    by_name = {p.name: p for p in PROJECTS}
    unknown = [n for n in args.only if n not in by_name]
    if unknown:
        raise SystemExit(f"--only: {', '.join(unknown)} unknown ({', '.join(by_name)})")
    start = time.monotonic()
    args.stop_at = start + 60 * args.stop_after if args.stop_after else float("inf")
    load_start = load_average()
    rows: list[Row] = []
    facts: dict[str, dict[str, Any]] = {}
    if args.report_only:
        if not args.json:
            raise SystemExit("--report-only needs the --json of the earlier run")
        rows = [Row(**json.loads(line)) for line in args.json.with_suffix(".rows.jsonl").read_text().splitlines()]
        for line in args.json.with_suffix(".projects.jsonl").read_text().splitlines():
            info = json.loads(line)
            facts[info["name"]] = info["facts"]
    else:
        for path in (
            (args.json.with_suffix(".rows.jsonl"), args.json.with_suffix(".projects.jsonl")) if args.json else ()
        ):
            path.unlink(missing_ok=True)
        for name in args.only:
            if time.monotonic() > args.stop_at:
                break
            project, project_rows = anyio.run(measure_project, by_name[name], args)
            facts[name] = project.facts
            rows += project_rows
    mark_churning(rows)
    summary = {n: figures([r for r in rows if r.project == n], f) for n, f in facts.items()}
    summary["overall"] = figures(rows, {})
    python = str(args.base_python) if args.base_python else sys.executable
    meta = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python benches/history.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "python": real_projects.sh(python, "-c", "import sys; print(sys.version.split()[0])").stdout.strip(),
        "server_src": str(args.server_src or "the installed package"),
        "engine": mutation.server_engine(args.server_src),
        "load_start": " ".join(f"{x:.2f}" for x in load_start or ()),
        "load_end": " ".join(f"{x:.2f}" for x in load_average() or ()),
        "hash_seed": args.hash_seed,
        "seconds": round(time.monotonic() - start, 1),
        "facts": facts,
    }
    # the server measured is --server-src's checkout when given (a worktree of the commit
    # under test), else this one; this script's own commit goes in meta
    meta["bench_commit"] = provenance(None, REPO)["commit"]
    measured = provenance(None if args.report_only else load_start, args.server_src or REPO)
    mutation.write_report(args, markdown(summary, rows, meta), meta, summary, TARGETS, rows, measured)
    return 0


if __name__ == "__main__":
    sys.exit(main())
