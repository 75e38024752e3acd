"""``bench suite``: a generated pytest project run plainly, over MCP and through the CLI.

The project (``make_project``, cached): ``N`` tests in modules of 200 parametrized cases
each (``tests/test_<area>_<n>.py``), every case's kind fixed by ``random.Random(seed)``
with the generator's mix (``generate.Mix``): 2 % fail (an assertion or an exception
raised three calls deep in ``app/``), 1 % error (70 % in a fixture's setup, 30 % in its
teardown), 3 % skipped, 0.5 % xfailed, 5 % print captured output. The truth (counts
with the engine's semantics: a teardown error counts as one ``errors`` and not as
``passed``, as the reports have it) is written beside it.

Ways (each run ``warmup`` times, then ``reps`` times, interleaved so drift hits all alike):

* ``pytest``: ``python -m pytest`` as the server runs it minus its record plugin (no
  report file: the server's argv without ``-p`` and ``--mcp-*``); the agent would read
  pytest's terminal output (its bytes are ``agent_bytes``). Its counts come from one more,
  untimed run with the record plugin, read by the report engine (pytest's terminal line
  counts a test with a teardown error twice).
* ``mcp``: ``execute_tests`` (only ``timeout_s`` given) over MCP's stdio transport, by
  the MCP SDK's own client (``mcp.client.stdio.stdio_client`` + ``ClientSession``, run
  with ``anyio.run``) talking to the real ``python -m pytest_mcp_server --root DIR
  --answer-view typed`` process (the typed result: its counts, command and duration are
  read), started once (its start-up and ``initialize`` are reported apart as
  ``startup_s``; the tool list, which the client checks each result's structured content
  against, is fetched once after that, untimed). The time is the tool call's round trip
  as the client sees it: from ``mcp.ClientSession.call_tool`` sending the request to its
  return of the parsed, checked result. ``agent_bytes`` is the text content of the tool
  result, ``structured_bytes`` its (typed) structured content as JSON.
* ``cli``: the human path: ``python -m pytest --junitxml=...`` then
  ``pytest-mcp-server summarize`` of the report; ``agent_bytes`` is the summary text.

``added_s`` / ``added_pct``: the median minus the ``pytest`` way's median. For ``mcp``,
``pytest_in_server_s`` lists the session time of the pytest run the server reports
(``duration_s`` of the result: pytest's own "in 17.55s", from the session's start to the
end of its terminal summary) and ``outside_pytest_median_s`` the median of the rest: the
pytest process's start (interpreter, imports, configuration) and exit, which a plain
``pytest`` pays too (about 1.6 s on 20,000 tests), and the server's own transport,
validation, reading and rendering.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import anyio
import anyio.to_thread

from . import common
from .generate import DEFAULT_MIX, Mix

if TYPE_CHECKING:
    from mcp import ClientSession
    from rich.progress import Progress, TaskID

# One row per way, keyed by way: the measured times, counts and errors (see run_suite).
Rows = dict[str, dict[str, Any]]

SUITE_VERSION = 1
CASES_PER_MODULE = 200
WAYS = ("pytest", "mcp", "cli")
MAX_ADDED_PCT = 5.0
MAX_AGENT_BYTES = 6 * 1024

_AREAS = ["users", "orders", "billing", "search", "auth", "storage", "reports", "sched"]

_CONFTEST = '''\
import pytest


@pytest.fixture
def resource(request):
    """Fails in setup for kind E and in teardown for kind T."""
    case = request.node.callspec.params["case"]
    kind = request.module.KINDS[case]
    if kind == "E":
        raise ConnectionError(f"database at 10.0.0.5:5432 refused the connection (case {case})")
    yield kind
    if kind == "T":
        raise RuntimeError(f"fixture left {case % 7 + 1} temporary files behind")
'''

_APP = '''\
"""Code under test: a few layers so that tracebacks have depth."""


def parse_amount(text):
    return int(text)


def price(order):
    total = 0
    for item in order["items"]:
        total += parse_amount(item["amount"]) * item["qty"]
    return total


def checkout(order):
    if not order["items"]:
        raise ValueError("empty order")
    return {"id": order["id"], "total": price(order), "status": "paid"}
'''

_MODULE = """\
import pytest

from app.orders import checkout

KINDS = {kinds!r}


@pytest.mark.parametrize("case", range(len(KINDS)))
def test_checkout(case, resource):
    kind = resource
    order = {{"id": case, "items": [{{"amount": "12", "qty": 2}}, {{"amount": "3", "qty": 1}}]}}
    if kind == "O":
        print(f"order {{case}}: checking out with \\u2713 caf\\u00e9 and <tags> & quotes \\"x\\"")
        print("step 2 of 3 ... ok")
    elif kind == "S":
        pytest.skip("payment sandbox not configured")
    elif kind == "X":
        pytest.xfail("rounding bug #4711")
    elif kind == "F":
        print(f"order {{case}} before checkout")
        result = checkout(order)
        assert result == {{"id": case, "total": 28, "status": "paid"}}
    elif kind == "G":
        order["items"][0]["amount"] = "12.5"
        checkout(order)
    assert checkout(order)["total"] == 27
"""


def _kinds(rng: random.Random, n: int, mix: Mix) -> str:
    p_fail = mix.failed
    p_err = p_fail + mix.error
    p_skip = p_err + mix.skipped
    p_xfail = p_skip + mix.xfailed
    p_out = p_xfail + mix.output_passed
    out = []
    for _ in range(n):
        r = rng.random()
        if r < p_fail:
            out.append("F" if rng.random() < 0.5 else "G")
        elif r < p_err:
            out.append("E" if rng.random() < mix.setup_share_of_errors else "T")
        elif r < p_skip:
            out.append("S")
        elif r < p_xfail:
            out.append("X")
        elif r < p_out:
            out.append("O")
        else:
            out.append("P")
    return "".join(out)


def make_project(cache: Path, tests: int, seed: int, mix: Mix = DEFAULT_MIX) -> tuple[Path, dict[str, Any]]:
    """The cached project for ``(tests, seed)`` (written when missing) and its truth:
    ``{"tests", "counts", "modules"}``."""
    root = cache / f"suite-{tests}-s{seed}-v{SUITE_VERSION}"
    truth_file = root.with_name(root.name + ".truth.json")
    if root.is_dir() and truth_file.is_file():
        return root, json.loads(truth_file.read_text())
    if root.exists():
        shutil.rmtree(root)
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=root.name + ".", dir=cache))
    rng = random.Random(seed)
    (tmp / "app").mkdir()
    (tmp / "app" / "__init__.py").write_text("")
    (tmp / "app" / "orders.py").write_text(_APP)
    (tmp / "tests").mkdir()
    (tmp / "conftest.py").write_text(_CONFTEST)
    (tmp / "pytest.ini").write_text("[pytest]\ntestpaths = tests\naddopts = -p no:cacheprovider\n")
    all_kinds: list[str] = []
    n_mod = 0
    left = tests
    while left > 0:
        n = min(CASES_PER_MODULE, left)
        kinds = _kinds(rng, n, mix)
        all_kinds.append(kinds)
        name = f"test_{_AREAS[n_mod % len(_AREAS)]}_{n_mod:04d}.py"
        (tmp / "tests" / name).write_text(_MODULE.format(kinds=kinds))
        n_mod += 1
        left -= n
    joined = "".join(all_kinds)
    counts = {
        "passed": joined.count("P") + joined.count("O"),
        "failed": joined.count("F") + joined.count("G"),
        "errors": joined.count("E") + joined.count("T"),
        "skipped": joined.count("S"),
        "xfailed": joined.count("X"),
        "xpassed": 0,
    }
    counts["total"] = sum(counts.values())
    counts["flaky"] = 0
    truth = {"tests": tests, "modules": n_mod, "seed": seed, "counts": counts}
    os.replace(tmp, root)
    truth_file.write_text(json.dumps(truth, indent=1) + "\n")
    return root, truth


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _plain_argv() -> list[str]:
    return [sys.executable, "-m", "pytest"]


def _from_server_argv(server_argv: list[str]) -> list[str]:
    """The server's pytest argv without its plugin (and so without a report file)."""
    out: list[str] = [sys.executable]
    skip = False
    for a in server_argv[1:]:
        if skip:
            skip = False
            continue
        if a == "-p":
            skip = True  # the next item is the plugin name
            continue
        if a.startswith("--mcp-"):  # the plugin's options (records, stacks): it is not loaded here
            continue
        out.append(a)
    return out


def _run_pytest(argv: list[str], root: Path, timeout: float) -> tuple[float, int, int]:
    """(wall seconds, exit status, bytes of stdout+stderr)."""
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=root, env=_env(), capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    return time.perf_counter() - t0, proc.returncode, len(proc.stdout) + len(proc.stderr)


def _record_counts(argv: list[str], root: Path, run_dir: Path, timeout: float) -> dict[str, int]:
    """The counts of one untimed run of ``argv`` with the server's record plugin, as the
    report engine reads its record file."""
    from pytest_mcp_server.engine import summarize

    records = run_dir / "records.jsonl"
    env = _env()
    # run.events' PLUGIN_DIR and PLUGIN_NAME, spelled out: bench imports only the engine (tests/server/test_layers.py)
    plugin_dir = Path(__file__).resolve().parents[1] / "run" / "pytest_plugin"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(plugin_dir), env.get("PYTHONPATH", "")) if p)
    counted = [*argv[:3], "-p", "pytest_mcp_server_events", f"--mcp-records={records}", *argv[3:]]
    subprocess.run(counted, cwd=root, env=env, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    return summarize([str(records)]).counts.model_dump()


def run_suite(
    *,
    tests: int,
    ways: list[str] | None,
    cache: Path,
    seed: int,
    reps: int,
    warmup: int,
    timeout: float,
    progress: Progress,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Measure; returns (rows, target checks)."""
    ways = [w for w in WAYS if not ways or w in ways]
    root, truth = make_project(cache, tests, seed)
    work = Path(tempfile.mkdtemp(prefix="bench-suite-"))
    rows: Rows = {
        w: {
            "bench": "suite",
            "way": w,
            "tests": tests,
            "project": str(root),
            "times_s": [],
            "ok": True,
            "error": None,
            "agent_bytes": None,
            "truth_ok": None,
            "mismatch": {},
        }
        for w in ways
    }
    task = progress.add_task(f"suite of {tests} tests: {', '.join(ways)}", total=(warmup + reps) * len(ways))
    run = _Run(root, truth, work, ways, rows, reps, warmup, timeout, progress, task)
    try:
        if "mcp" in ways:
            _mcp_and_others(run)
        else:
            _measure_loop(run)
    finally:
        progress.remove_task(task)
        shutil.rmtree(work, ignore_errors=True)
    out: list[dict[str, Any]] = []
    base: float | None = None
    for w in ways:
        r = rows[w]
        st = common.stats(r["times_s"])
        r.update(median_s=st["median"], min_s=st["min"], max_s=st["max"], reps=len(r["times_s"]))
        if w == "pytest":
            base = r["median_s"]
        out.append(r)
    m = rows.get("mcp")
    if m is not None and m.get("pytest_in_server_s") and len(m["pytest_in_server_s"]) == len(m["times_s"]):
        inside = m["pytest_in_server_s"]
        m["pytest_in_server_median_s"] = common.stats(inside)["median"]
        m["outside_pytest_median_s"] = common.stats([t - p for t, p in zip(m["times_s"], inside, strict=False)])[
            "median"
        ]
    for r in out:
        if base and r.get("median_s") is not None and r["way"] != "pytest":
            r["added_s"] = r["median_s"] - base
            r["added_pct"] = 100.0 * (r["median_s"] - base) / base
    targets: list[dict[str, Any]] = []
    m = rows.get("mcp")
    if m is not None:
        v = m.get("added_pct")
        targets.append(
            {
                "format": "suite",
                "size": f"{tests} tests",
                "target": f"execute_tests <= {MAX_ADDED_PCT:.0f}% slower than plain pytest",
                "value": v,
                "unit": "%",
                "met": (v <= MAX_ADDED_PCT) if v is not None else None,
            }
        )
        v = m.get("agent_bytes")
        targets.append(
            {
                "format": "suite",
                "size": f"{tests} tests",
                "target": f"agent text < {MAX_AGENT_BYTES} bytes",
                "value": v,
                "unit": "bytes",
                "met": (v < MAX_AGENT_BYTES) if v is not None else None,
            }
        )
    return out, targets


@dataclass(frozen=True)
class _Run:
    """One measurement of a suite: its ``root`` and ``truth``, the scratch ``work``
    directory, the ``ways`` measured into ``rows``, ``warmup + reps`` rounds, each run's
    ``timeout`` (seconds), and the progress bar's ``task``."""

    root: Path
    truth: dict[str, Any]
    work: Path
    ways: list[str]
    rows: Rows
    reps: int
    warmup: int
    timeout: float
    progress: Progress
    task: TaskID


def _mcp_and_others(run: _Run) -> None:
    """Start the server once (the MCP SDK's stdio client, on ``anyio.run``), then measure
    every way; the server's stderr goes to ``<work>/server.log``. A failure of the
    session (the server not starting, no answer in time, the connection lost) ends the
    ``mcp`` row with its error; the other ways are then measured without the server if
    they were not yet."""
    artifacts = str(run.work / "artifacts")
    argv = [sys.executable, "-m", "pytest_mcp_server", "--root", str(run.root), "--artifacts-dir", artifacts]
    argv += ["--max-timeout", str(int(run.timeout))]
    argv += ["--answer-view", "typed"]  # the counts, command and duration are read from the typed result
    rows = run.rows
    try:
        with open(run.work / "server.log", "w", encoding="utf-8") as errlog:
            anyio.run(_mcp_session, argv, errlog, run)
    except Exception as exc:  # noqa: BLE001 - the row says what went wrong
        if rows["mcp"]["ok"]:
            rows["mcp"].update(ok=False, error=_describe(exc))
        others = [w for w in run.ways if w != "mcp"]
        if not any(rows[w]["times_s"] for w in others):
            _measure_loop(replace(run, ways=others))


async def _mcp_session(argv: list[str], errlog: TextIO, run: _Run) -> None:
    """One server (``argv``, its stderr to ``errlog``) and one SDK session with it for the
    whole measurement: ``startup_s`` is the spawn to ``initialize``'s answer (at most
    120 s, else ``TimeoutError``); then ``warmup + reps`` rounds of every way, the ``mcp``
    way first (the plain run reuses its argv), the others in a worker thread so that the
    client keeps reading the server's stdout. Raises what the SDK raises when the
    session fails (``mcp.MCPError`` on a timeout or a lost connection, ``OSError`` when
    the server cannot start)."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    rows, truth, timeout = run.rows, run.truth, run.timeout
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=_env())
    t0 = time.perf_counter()
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        with anyio.fail_after(120):
            await session.initialize()
            rows["mcp"]["startup_s"] = time.perf_counter() - t0
            await session.list_tools()  # the output schemas call_tool checks results against, cached untimed
        order = sorted(run.ways, key=lambda w: w != "mcp")
        for i in range(run.warmup + run.reps):
            timed = i >= run.warmup
            for w in order:
                if w == "mcp":
                    if rows["mcp"]["ok"]:
                        await _one_mcp(session, truth, rows["mcp"], timed=timed, timeout=timeout)
                else:
                    plain = partial(_one_plain, w, run.root, truth, run.work, rows, timed, timeout)
                    await anyio.to_thread.run_sync(plain)
                run.progress.advance(run.task)


def _describe(exc: BaseException) -> str:
    """``Type: message`` of ``exc`` (of the one exception inside an exception group, as
    anyio's task groups raise them), cut to 300 characters."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"[:300]


def _measure_loop(run: _Run) -> None:
    for i in range(run.warmup + run.reps):
        for w in run.ways:
            _one_plain(w, run.root, run.truth, run.work, run.rows, i >= run.warmup, run.timeout)
            run.progress.advance(run.task)


async def _one_mcp(
    session: ClientSession, truth: dict[str, Any], row: dict[str, Any], *, timed: bool, timeout: float
) -> None:
    """One ``execute_tests`` call on ``session`` into ``row``: its round trip (appended to
    ``times_s`` when ``timed``), the answer's bytes and counts checked against ``truth``;
    a tool error ends the row (``ok`` false, ``error``). Raises ``mcp.MCPError`` when no
    answer comes within ``timeout + 30`` seconds or the connection is lost, and
    ``RuntimeError`` when the SDK finds the structured content off the tool's output
    schema."""
    from mcp.types import TextContent

    t0 = time.perf_counter()
    result = await session.call_tool("execute_tests", {"timeout_s": timeout}, read_timeout_seconds=timeout + 30)
    dt = time.perf_counter() - t0
    texts = [c.text for c in result.content if isinstance(c, TextContent)]
    structured = result.structured_content
    if result.is_error or not structured:
        row.update(ok=False, error=("tool error: " + " ".join(texts))[:300])
        return
    row["agent_bytes"] = sum(len(t.encode("utf-8")) for t in texts)
    row["structured_bytes"] = len(json.dumps(structured, separators=(",", ":")).encode("utf-8"))
    row["server_command"] = structured.get("command")
    counts = dict(structured["summary"]["counts"])
    row["counts"] = counts
    row["truth_ok"], row["mismatch"] = common.check_counts(counts, {"counts": truth["counts"], "duration_us": None})
    if timed:
        row["times_s"].append(dt)
        row.setdefault("pytest_in_server_s", []).append(structured.get("duration_s"))


def _one_plain(
    way: str, root: Path, truth: dict[str, Any], work: Path, rows: Rows, timed: bool, timeout: float
) -> None:
    row = rows[way]
    if not row["ok"]:
        return
    run_dir = work / way
    run_dir.mkdir(exist_ok=True)
    try:
        if way == "pytest":
            server_cmd = rows.get("mcp", {}).get("server_command")
            argv = _from_server_argv(server_cmd) if server_cmd else _plain_argv()
            dt, status, nbytes = _run_pytest(argv, root, timeout)
            row["command"] = argv
            row["agent_bytes"] = nbytes
            counts = row.get("counts") or _record_counts(argv, root, run_dir, timeout)
        else:  # cli: pytest with a JUnit report, then the summary a person reads
            argv = [sys.executable, "-m", "pytest", f"--junitxml={run_dir / 'junit.xml'}"]
            dt1, status, _ = _run_pytest(argv, root, timeout)
            summ = [sys.executable, "-m", "pytest_mcp_server", "summarize", str(run_dir / "junit.xml")]
            t0 = time.perf_counter()
            proc = subprocess.run(summ, capture_output=True, env=_env(), timeout=timeout)
            dt = dt1 + (time.perf_counter() - t0)
            if proc.returncode not in (0, 1):
                raise RuntimeError(f"summarize exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-300:]}")
            row["command"] = argv + ["&&"] + summ
            row["agent_bytes"] = len(proc.stdout)
            js = subprocess.run(summ + ["--json"], capture_output=True, env=_env(), timeout=timeout)
            counts = dict(json.loads(js.stdout)["counts"])
        if status not in (0, 1):
            raise RuntimeError(f"pytest exited {status}")
        row["counts"] = counts
        ok, bad = common.check_counts(counts, {"counts": truth["counts"], "duration_us": None})
        row["truth_ok"], row["mismatch"] = ok, bad
        if timed:
            row["times_s"].append(dt)
    except Exception as exc:  # noqa: BLE001 - the row says what went wrong
        row.update(ok=False, error=f"{type(exc).__name__}: {exc}"[:300])
