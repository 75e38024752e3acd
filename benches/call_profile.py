#!/usr/bin/env python
"""Where the wall time of a small call goes, cold and warm (issue 42, benches/RESULTS.md
section 17).

A call that selects 1-10 tests, on real projects (PyPI sdists that ship their tests,
each installed editable into its own CPython venv under ``--work``, ``PROJECTS``), over
the real server (stdio, the MCP SDK's client), split into stages by real timestamps
(``time.time()``, one clock on one machine):

* the client: when the call was sent and its answer came back;
* the server: the server runs under this script's ``--serve`` mode, which wraps (before
  anything runs) ``Runner.run_pytest`` (the pytest process, from spawn or the warm
  spare's hand-over to its end, the whole group stopped), ``WarmStart.take`` (the
  spare's checks), ``Runner.read_records`` (the engine's reading) and the affected
  call's ``read_map_state``, ``select_from_run`` and ``refresh_map``, and logs each
  one's start and end;
* the pytest process: a ``.pth`` file in the venv (active only under this script's
  environment variable) notes when ``site`` ran (the interpreter is up), and a probe
  plugin loaded through ``PYTEST_PLUGINS`` (imported after the entry-point plugins)
  notes its own import and the hooks: ``pytest_load_initial_conftests`` (around the
  initial conftests), ``pytest_sessionstart``, ``pytest_collection`` (around the
  collection), ``pytest_runtestloop`` (around the tests), ``pytest_sessionfinish`` and
  the last ``pytest_unconfigure``; it also sums the time spent in the per-test
  recorder's own methods (``Recording``: start, switch, boundary, finish).

Stages: server before pytest (sent -> ``run_pytest``); process start (-> ``site``);
pytest and plugin import (-> the probe's import); configuration and conftests (-> session
start); collection (with the imports of the test modules and the project); the tests
(less the recorder's own time in them); the recorder (its methods); session end and exit
(-> ``run_pytest`` returns, the group stopped); server after pytest (-> the answer).
Where a warm spare started earlier, a stage that ended before the hand-over counts 0.

With ``--importtime`` one more cold call per project runs under ``-X importtime``
(``PYTHONPROFILEIMPORTTIME``, ``PYTEST_ADDOPTS=-s`` so that collection's imports reach
the file; its stderr sent to a file by the ``.pth``) and the import time is split by
who was imported: pytest and its plugins, the standard library, third-party packages,
the project (its packages, conftests and test modules).

The server and its children run without ``PYTHONDONTWRITEBYTECODE`` (this machine sets
it): byte code, and pytest's rewritten test modules, are written and read back as on a
developer's machine.

Calls per project and mode (``cold``: ``--no-warm-start``; ``warm``: the default): two
warm-up calls, then ``--rounds`` rounds of one ``execute_tests(node_ids)`` and one
``execute_tests(affected=true)`` after a one-line edit of a function (a ``pass`` added
or removed: its tests run as ``changed``). The map is built once, before, in the shared
artifacts directory. Medians per stage.

Usage::

    python benches/call_profile.py [--work /tmp/cp] [--rounds 5] [--only NAME ...]
        [--importtime] [--json benches/results/call_profile.json] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
ENV_DIR = "CALL_PROFILE_DIR"
"""The directory the server's wrapper, the ``.pth`` and the probe write their timestamps to."""


@dataclass(frozen=True)
class Spec:
    name: str  # PyPI name
    version: str
    deps: tuple[str, ...]
    node_ids: tuple[str, ...]  # what execute_tests runs
    edit_file: str  # the function edited before each affected call
    edit_def: str


PROJECTS = (
    Spec(
        "more-itertools",
        "11.2.1",
        (),
        ("tests/test_more.py::ChunkedTests",),
        "more_itertools/more.py",
        "def chunked(",
    ),
    Spec(
        "marshmallow",
        "4.4.0",
        ("simplejson",),
        ("tests/test_options.py::TestFieldOrdering",),
        "src/marshmallow/utils.py",
        "def timedelta_to_microseconds(",
    ),
    Spec(
        "mizani",
        "0.14.6",
        ("pytest-cov", "numpy", "scipy", "pandas"),
        ("tests/test_bounds.py::test_rescale_max",),
        "mizani/bounds.py",
        "def rescale_max(",
    ),
)

PTH = (
    "import os; exec('try:\\n import call_profile_site\\nexcept ImportError:\\n pass') "
    f"if os.environ.get('{ENV_DIR}') else None\n"
)

SITE_MODULE = """import os, sys, time
SITE_TIME = time.time()
if os.environ.get("CALL_PROFILE_IMPORTTIME"):
    fd = os.open(os.path.join(os.environ["CALL_PROFILE_DIR"], f"importtime.{os.getpid()}.txt"),
                 os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 2)
"""

PROBE_MODULE = '''"""call_profile's probe: timestamps of pytest's hooks (benches/call_profile.py)."""
import json, os, sys, time
import pytest

T = {"probe_import": time.time()}
_site = sys.modules.get("call_profile_site")
if _site is not None:
    T["site"] = _site.SITE_TIME
RECORDER = [0.0]

def _mark(name):
    T[name] = time.time()
    if os.environ.get("CALL_PROFILE_IMPORTTIME"):
        os.write(2, ("call-profile-mark " + name + "\\n").encode())

_mark("probe_import")

try:
    import pytest_mcp_server_recorder as _rec
    for _name in ("__init__", "switch", "boundary", "finish"):
        _orig = getattr(_rec.Recording, _name)
        def _timed(*a, _orig=_orig, **k):
            t = time.perf_counter()
            try:
                return _orig(*a, **k)
            finally:
                RECORDER[0] += time.perf_counter() - t
        setattr(_rec.Recording, _name, _timed)
except ImportError:
    pass

@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    _mark("conftests_start")
    yield
    _mark("conftests_end")

@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    _mark("session_start")

@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_collection(session):
    _mark("collection_start")
    yield
    _mark("collection_end")

@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtestloop(session):
    T["recorder_before_tests"] = RECORDER[0]
    _mark("tests_start")
    yield
    _mark("tests_end")
    T["recorder_in_tests"] = RECORDER[0] - T["recorder_before_tests"]

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    _mark("sessionfinish")

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    _mark("unconfigure_end")
    T["recorder_total"] = RECORDER[0]
    with open(os.path.join(os.environ["CALL_PROFILE_DIR"], f"probe.{os.getpid()}.json"), "w") as f:
        json.dump(T, f)
'''


# -- the server under instrumentation ---------------------------------------------------


def serve(argv: list[str]) -> int:
    """The server (``pytest_mcp_server.cli.main``) with its stages logged to
    ``$CALL_PROFILE_DIR/server.jsonl``: name, start, end (``time.time()``)."""
    import functools
    import inspect

    from pytest_mcp_server.app import affected_call, runner
    from pytest_mcp_server.run import process, warm

    log = Path(os.environ[ENV_DIR]) / "server.jsonl"

    def record(name: str, start: float) -> None:
        with log.open("a") as f:
            f.write(json.dumps({"name": name, "start": start, "end": time.time()}) + "\n")

    def wrap(owner: Any, attr: str, name: str) -> None:
        original = getattr(owner, attr)
        if inspect.iscoroutinefunction(original):

            @functools.wraps(original)
            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                start = time.time()
                try:
                    return await original(*args, **kwargs)
                finally:
                    record(name, start)

            setattr(owner, attr, timed_async)
        else:

            @functools.wraps(original)
            def timed(*args: Any, **kwargs: Any) -> Any:
                start = time.time()
                try:
                    return original(*args, **kwargs)
                finally:
                    record(name, start)

            setattr(owner, attr, timed)

    wrap(runner.Runner, "run_pytest", "run_pytest")
    wrap(runner.Runner, "read_records", "read_records")
    wrap(warm.WarmStart, "take", "warm_take")
    wrap(warm.WarmStart, "replenish", "warm_replenish")
    wrap(process, "kill_group", "kill_group")
    for attr in ("read_map_state", "select_from_run", "refresh_map", "last_full_collection", "nothing_can_fail"):
        wrap(affected_call, attr, attr)
    from pytest_mcp_server.cli import main

    return main(argv)


# -- projects -------------------------------------------------------------------------


def sh(*argv: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(list(argv), cwd=cwd, env=env, text=True, capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr[-2000:]}")
    return done.stdout


def setup(spec: Spec, work: Path, python: str) -> tuple[Path, Path]:
    """The project's tree (the sdist unpacked) and its venv's Python: the project
    installed editable with pytest and ``spec.deps``; the ``.pth`` in its site-packages."""
    stem = f"{spec.name.replace('-', '_')}-{spec.version}"
    tree = next((p for p in (work / stem, work / f"{spec.name}-{spec.version}") if p.is_dir()), None)
    if tree is None:
        sdists = work / "sdists"
        sh(
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-binary",
            ":all:",
            "--no-deps",
            "-d",
            str(sdists),
            f"{spec.name}=={spec.version}",
        )
        archive = next(sdists.glob(f"{spec.name.replace('-', '_')}-{spec.version}.tar.gz"), None) or next(
            sdists.glob(f"{spec.name}-{spec.version}.tar.gz")
        )
        with tarfile.open(archive) as tar:
            tar.extractall(work, filter="data")
        tree = next(p for p in (work / stem, work / f"{spec.name}-{spec.version}") if p.is_dir())
    venv = work / f"venv-{tree.name}"
    py = venv / "bin" / "python"
    if not py.exists():
        sh(python, "-m", "venv", str(venv))
        sh(str(py), "-m", "pip", "install", "-q", "pytest", *spec.deps)
        sh(str(py), "-m", "pip", "install", "-q", "-e", str(tree))
    site = Path(sh(str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    (site / "call_profile_probe.pth").write_text(PTH)
    return tree, py


def toggle_edit(tree: Path, spec: Spec) -> None:
    """Add ``pass`` as the first statement of the edited function, or remove it."""
    path = tree / spec.edit_file
    text = path.read_text()
    marker = "    pass  # call_profile edit\n"
    if marker in text:
        path.write_text(text.replace(marker, "", 1))
        return
    start = text.index(spec.edit_def)
    # the body starts after the signature's closing '):' line (docstring or not, pass goes first)
    sig_end = re.compile(r"\)\s*(->[^:]*)?:\s*\n").search(text, start)
    assert sig_end is not None
    path.write_text(text[: sig_end.end()] + marker + text[sig_end.end() :])


# -- measuring ------------------------------------------------------------------------


def read_stages(out: Path, sent: float, answered: float) -> dict[str, float] | None:
    """The stages of the one call between ``sent`` and ``answered`` (seconds), from the
    server's log and the probe's file of the pytest process it ran."""
    events = [json.loads(line) for line in (out / "server.jsonl").read_text().splitlines()]
    events = [e for e in events if sent <= e["start"] <= answered]
    runs = [e for e in events if e["name"] == "run_pytest"]
    if len(runs) != 1:
        return None
    run = runs[0]
    probes = []
    for path in out.glob("probe.*.json"):
        data = json.loads(path.read_text())
        if run["start"] - 60 <= data["unconfigure_end"] <= run["end"] + 1:
            probes.append(data)
            path.unlink()
    if len(probes) != 1:
        return None
    p = probes[0]
    after_hand_over = max([run["start"], *(e["end"] for e in events if e["name"] == "warm_take")])
    site = max(p.get("site", after_hand_over), after_hand_over)
    imported = max(p["probe_import"], site)
    session = max(p["session_start"], imported)
    recorder_in_tests = p.get("recorder_in_tests", 0.0)
    recorder = p.get("recorder_total", 0.0)
    took = {
        name: sum(e["end"] - e["start"] for e in events if e["name"] == name)
        for name in (
            "read_records",
            "read_map_state",
            "select_from_run",
            "refresh_map",
            "warm_take",
            "last_full_collection",
            "nothing_can_fail",
            "warm_replenish",
        )
    }
    stops = [e for e in events if e["name"] == "kill_group" and run["start"] <= e["start"] <= run["end"]]
    return {
        "server before pytest": run["start"] - sent,
        "spare checks": took["warm_take"],
        "process start": site - after_hand_over,
        "pytest and plugin import": imported - site,
        "configuration and conftests": session - imported,
        "collection": p["collection_end"] - session,
        "tests": p["tests_end"] - p["tests_start"] - recorder_in_tests,
        "recorder": recorder,
        "session end and exit": run["end"] - p["tests_end"] - (recorder - recorder_in_tests),
        "server after pytest": answered - run["end"],
        "of which reading the records": took["read_records"],
        "of which the map (read, select, refresh)": took["read_map_state"]
        + took["select_from_run"]
        + took["refresh_map"]
        + took["last_full_collection"]
        + took["nothing_can_fail"],
        "of which starting the next spare": took["warm_replenish"],
        "between collection and tests": p["tests_start"] - p["collection_end"],
        "of which session finish to unconfigure": p["unconfigure_end"] - p["sessionfinish"],
        "of which stopping the run's group": sum(e["end"] - e["start"] for e in stops),
        "of which unconfigure to exit seen": (min(e["start"] for e in stops) if stops else run["end"])
        - p["unconfigure_end"],
        "total": answered - sent,
        "fixed cost (total less the tests)": answered - sent - (p["tests_end"] - p["tests_start"]),
    }


async def measure(spec: Spec, tree: Path, py: Path, work: Path, mode: str, rounds: int) -> list[dict[str, Any]]:
    from mcp import Client, StdioServerParameters

    out = work / f"profile-{tree.name}-{mode}"
    out.mkdir(exist_ok=True)
    for stale in out.iterdir():
        stale.unlink()
    probe_dir = work / "probe"
    probe_dir.mkdir(exist_ok=True)
    (probe_dir / "call_profile_probe.py").write_text(PROBE_MODULE)
    (probe_dir / "call_profile_site.py").write_text(SITE_MODULE)
    env = dict(os.environ)
    env[ENV_DIR] = str(out)
    env["PYTEST_PLUGINS"] = "call_profile_probe"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(probe_dir)])
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # byte code written, as on a developer's machine
    args = [
        str(Path(__file__).resolve()),
        "--serve",
        "--root",
        str(tree),
        "--python",
        str(py),
        "--artifacts-dir",
        str(work / "artifacts"),
        "--answer-view",
        "typed",
    ]
    if mode == "cold":
        args.append("--no-warm-start")
    rows = []
    async with Client(StdioServerParameters(command=sys.executable, args=args, env=env), read_timeout_seconds=900) as c:
        await c.call_tool("execute_tests", {"affected": True})  # the map as it is now
        for _ in range(2):  # warm-up: the spare's module list
            await c.call_tool("execute_tests", {"node_ids": list(spec.node_ids)})
        for round_no in range(rounds):
            for kind in ("execute", "affected"):
                if kind == "affected":
                    toggle_edit(tree, spec)
                arguments = {"node_ids": list(spec.node_ids)} if kind == "execute" else {"affected": True}
                time.sleep(1.0)  # the next spare's preload ends before the call, as between an agent's calls
                sent = time.time()
                result = await c.call_tool("execute_tests", arguments)
                answered = time.time()
                s = result.structured_content or {}
                stages = read_stages(out, sent, answered)
                selection = s.get("selection") or {}
                rows.append(
                    {
                        "project": spec.name,
                        "mode": mode,
                        "kind": kind,
                        "round": round_no,
                        "status": s.get("status"),
                        "tests": (s.get("summary") or {}).get("counts", {}).get("total"),
                        "selected": selection.get("selected"),
                        "session_s": s.get("duration_s"),
                        "cold_start": s.get("cold_start"),
                        "stages": stages,
                    }
                )
                print(
                    f"{spec.name} {mode} {kind} {round_no}: {answered - sent:.3f}s tests={rows[-1]['tests']} "
                    f"cold_start={s.get('cold_start')}",
                    file=sys.stderr,
                    flush=True,
                )
        if mode == "warm":
            rows.append({"project": spec.name, "mode": mode, "kind": "idle spare", **idle_spare_memory(tree, work)})
    return rows


def idle_spare_memory(tree: Path, work: Path) -> dict[str, Any]:
    """The idle spare's memory once its preload is over (psutil: RSS and USS, MiB)."""
    import psutil

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list((work / "artifacts" / "spares").glob("*/ready.json")):
        time.sleep(0.05)
    for proc in psutil.Process().children(recursive=True):
        try:
            if "pytest_mcp_server_spare" in proc.cmdline() and proc.cwd() == str(tree):
                info = proc.memory_full_info()
                return {"rss_mib": round(info.rss / 2**20, 1), "uss_mib": round(info.uss / 2**20, 1)}
        except psutil.Error:
            continue
    return {"rss_mib": None, "uss_mib": None}


async def importtime(spec: Spec, tree: Path, py: Path, work: Path) -> dict[str, float]:
    """One cold ``execute_tests(node_ids)`` under ``-X importtime``: import time (s) by
    who was imported, per phase (before the probe: pytest's start; after it)."""
    from mcp import Client, StdioServerParameters

    out = work / f"importtime-{tree.name}"
    out.mkdir(exist_ok=True)
    for stale in out.iterdir():
        stale.unlink()
    probe_dir = work / "probe"
    env = dict(os.environ)
    env.update(
        {
            ENV_DIR: str(out),
            "PYTEST_PLUGINS": "call_profile_probe",
            "CALL_PROFILE_IMPORTTIME": "1",
            "PYTHONPROFILEIMPORTTIME": "1",
            "PYTEST_ADDOPTS": "-s",
            "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(probe_dir)]),
        }
    )
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # byte code written, as on a developer's machine
    args = [
        str(Path(__file__).resolve()),
        "--serve",
        "--root",
        str(tree),
        "--python",
        str(py),
        "--artifacts-dir",
        str(work / "artifacts-importtime"),
        "--no-warm-start",
    ]
    async with Client(StdioServerParameters(command=sys.executable, args=args, env=env), read_timeout_seconds=900) as c:
        await c.call_tool("execute_tests", {"node_ids": list(spec.node_ids)})
    files = sorted(out.glob("importtime.*.txt"), key=lambda p: p.stat().st_size)
    text = files[-1].read_text(errors="replace")
    project = {spec.name.replace("-", "_"), "tests", "conftest", spec.edit_file.split("/")[-2]}
    pytest_names = {
        "pytest",
        "_pytest",
        "pluggy",
        "iniconfig",
        "packaging",
        "pygments",
        "py",
        "pytest_mcp_server_events",
        "pytest_mcp_server_recorder",
        "call_profile_probe",
        "pytest_cov",
    }
    stdlib = set(sys.stdlib_module_names)
    totals: dict[str, float] = {}
    phase = "pytest start"
    for line in text.splitlines():
        if line.startswith("call-profile-mark "):
            phase = "pytest start" if line.endswith("probe_import") else "the run"
            continue
        m = re.match(r"import time:\s+(\d+) \|\s+\d+ \| (\s*)(\S+)", line)
        if not m:
            continue
        top = m.group(3).split(".")[0]
        who = (
            "pytest and plugins"
            if top in pytest_names
            else "project"
            if top in project or top.startswith("test_")
            else "standard library"
            if top in stdlib
            else "third-party"
        )
        key = f"{phase}: {who}"
        totals[key] = totals.get(key, 0.0) + int(m.group(1)) / 1e6
    return {k: round(v, 3) for k, v in sorted(totals.items())}


STAGES = (
    "server before pytest",
    "spare checks",
    "process start",
    "pytest and plugin import",
    "configuration and conftests",
    "collection",
    "tests",
    "recorder",
    "session end and exit",
    "server after pytest",
    "total",
    "fixed cost (total less the tests)",
)


def medians(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, float]]:
    out: dict[tuple[str, str, str], dict[str, float]] = {}
    keys = {(r["project"], r["kind"], r["mode"]) for r in rows if "stages" in r}
    for key in sorted(keys):
        measured = [r["stages"] for r in rows if (r["project"], r["kind"], r["mode"]) == key and r["stages"]]
        if measured:
            out[key] = {name: round(statistics.median(s[name] for s in measured), 3) for name in measured[0]}
    return out


def markdown(med: dict[tuple[str, str, str], dict[str, float]], rows: list[dict[str, Any]]) -> str:
    """One table per kind of call (``execute``, ``affected``): a row per stage, a column
    per project and mode; then the idle spares' memory."""
    lines: list[str] = []
    for kind in ("execute", "affected"):
        columns = sorted((c for c in med if c[1] == kind), key=lambda c: (c[0], c[2]))
        if not columns:
            continue
        lines += ["| stage, median (s) | " + " | ".join(f"{p} {m}" for p, _, m in columns) + " |"]
        lines += ["|---|" + "---:|" * len(columns)]
        names = list(med[columns[0]].keys())
        ordered = [n for n in STAGES if n in names] + [n for n in names if n not in STAGES]
        for name in ordered:
            lines.append(f"| {name} | " + " | ".join(f"{med[c].get(name, 0):.3f}" for c in columns) + " |")
        tests = []
        for c in columns:
            ran = [r["tests"] for r in rows if (r["project"], r["kind"], r["mode"]) == c and "stages" in r]
            tests.append(str(statistics.median(ran)) if ran and all(t is not None for t in ran) else "?")
        lines += ["| tests run | " + " | ".join(tests) + " |", ""]
    memory = {r["project"]: r for r in rows if r.get("kind") == "idle spare"}
    if memory:
        lines += ["| idle spare (MiB) | RSS | USS |", "|---|---:|---:|"]
        lines += [f"| {name} | {r['rss_mib']} | {r['uss_mib']} |" for name, r in sorted(memory.items())]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--serve":
        return serve(["serve", *argv[1:]])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/cp"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--python", default=sys.executable, help="the CPython the venvs are made of")
    parser.add_argument("--importtime", action="store_true")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args(argv)
    import anyio

    from pytest_mcp_server.bench.common import PROVENANCE_KEY, load_average, provenance

    load_start = load_average()
    args.work.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    imports: dict[str, dict[str, float]] = {}
    loads: list[Any] = []
    for spec in PROJECTS:
        if args.only and spec.name not in args.only:
            continue
        tree, py = setup(spec, args.work, args.python)
        for mode in ("cold", "warm"):
            loads.append(load_average())
            rows += anyio.run(measure, spec, tree, py, args.work, mode, args.rounds)
        if args.importtime:
            imports[spec.name] = anyio.run(importtime, spec, tree, py, args.work)
    med = medians(rows)
    table = markdown(med, rows)
    print(table)
    for name, split in imports.items():
        print(name, json.dumps(split))
    if args.markdown:
        args.markdown.write_text(table)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        document = {
            PROVENANCE_KEY: provenance(load_start, REPO),
            "loads_per_mode": loads,
            "medians": {" ".join(k): v for k, v in med.items()},
            "importtime": imports,
            "rows": rows,
        }
        args.json.write_text(json.dumps(document, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
