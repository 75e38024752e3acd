"""Measuring line coverage in ``execute_tests`` (``coverage: true``), with pytest-cov in
the project's interpreter.

Each pytest process of a call measures through pytest-cov (``COVERAGE_ARGV``: fixed
options, no source given, so the project's own coverage configuration, ``.coveragerc``,
``setup.cfg``, ``tox.ini`` or ``pyproject.toml`` ``[tool.coverage]``, decides what is
measured, omitted and excluded; only its measuring core is the server's, one that
records per-test contexts, and its warnings never fail a test) and writes its data file
into the call's run directory (``coverage_env``: ``COVERAGE_FILE`` set to
``<run_dir>/coverage/run-<n>``; never a ``.coverage`` in the project).
``finish_coverage`` then combines every data file of the call (coverage.py's combine: a
line ran when it ran in any process), writes ``coverage.json`` with the project's
interpreter and configuration, reads it
(``coverage_report``; the server's own pytest plugins left out) and intersects the
missed lines with the lines changed since ``HEAD`` (``run.git.changed_lines``, given by
the caller). It also writes the per-test contexts of the changed files
(``contexts.json``), from which ``find_suspects`` names the changed code the failing
tests ran; ``rank_in_root`` ranks such contexts from either source (this report, or an
``affected`` run's map data).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio

from pytest_mcp_server.domain.coverage_answer import ChangedLines, CoverageSummary, relative_path, summarize_coverage
from pytest_mcp_server.domain.failures import ToolFailure
from pytest_mcp_server.domain.policy import REPORT_TIMEOUT_S, SUSPECTS_LISTED, TAIL_BYTES
from pytest_mcp_server.domain.suspects import FAILING_OUTCOMES, Suspect, rank_suspects
from pytest_mcp_server.engine.coverage_reports import (
    CoverageFormat,
    LineContexts,
    LineSets,
    read_coverage_reports,
    read_line_contexts,
)
from pytest_mcp_server.engine.models import ReportError
from pytest_mcp_server.run.events import PLUGIN_DIR
from pytest_mcp_server.run.interpreter import Interpreter

COVERAGE_ARGV = (
    "--cov",
    "--cov-report=",
    "--cov-fail-under=0",
    "--cov-context=test",
    "-Wignore::coverage.exceptions.CoverageWarning",
    "-Wignore::pytest_cov.PytestCovWarning",
)
"""pytest-cov's options of a measured run: measure (what the project's configuration
says; with none, all code outside the standard library and installed packages), print
no report, never fail the run for a low total (the project's ``fail_under`` would turn
a green run into exit 1; the answer gives the figure), and record which test ran each
line (one coverage.py context per test, ``<node id>|run``: the changed code the failing
tests ran, ``domain.suspects``). The two ``-W`` filters keep coverage.py's and
pytest-cov's own warnings from failing a green run under a project's
``filterwarnings = error`` (``Can't use core=sysmon``, ``dynamic_context=test_function``
detected, ...): pytest applies its command line's filters after the ini's, in every
phase, pytest-cov's start-up included, so they win."""

COVERAGE_DIR = "coverage"
"""The run directory's subdirectory holding one data file per pytest process run."""
COMBINED_DATA = "coverage.data"
"""The data file combining a call's runs, in the run directory."""
JSON_REPORT = "coverage.json"
"""The ``coverage json`` report of the combined data, in the run directory."""
CONTEXTS_REPORT = "contexts.json"
"""The ``coverage json --show-contexts`` report of the changed Python files only, in the
run directory (written when some are measured)."""


# Run by the project's interpreter, in the root (so coverage.py reads the project's
# configuration), with one JSON argument: combine the data files ``files`` into
# ``combined``, write the JSON report to ``out`` and, when ``changed`` names files, the
# per-line contexts of those files only to ``contexts`` (a file coverage.py did not
# measure is simply absent); a source file that vanished since the run is skipped
# (ignore_errors).
_REPORT_SCRIPT = (
    "import json, os, sys, coverage\n"
    "spec = json.loads(sys.argv[1])\n"
    "cov = coverage.Coverage(data_file=spec['combined'])\n"
    "cov.combine(spec['files'], keep=True)\n"
    "cov.save()\n"
    "cov.json_report(outfile=spec['out'], ignore_errors=True)\n"
    "measured = {os.path.realpath(f): f for f in cov.get_data().measured_files()}\n"
    "changed = [measured[p] for p in map(os.path.realpath, spec['changed']) if p in measured]\n"
    "if changed:\n"
    "    cov.json_report(morfs=changed, outfile=spec['contexts'], ignore_errors=True, show_contexts=True)\n"
)


def missing_coverage(interp: Interpreter) -> ToolFailure | None:
    """``ToolFailure(coverage_missing)`` naming the interpreter, the packages it lacks
    (``coverage`` and/or ``pytest-cov``) and the command that installs them; None when
    it has both."""
    missing = [
        name for name, has in (("coverage", interp.has_coverage), ("pytest-cov", interp.has_pytest_cov)) if not has
    ]
    if not missing:
        return None
    names = " and ".join(missing)
    return ToolFailure(
        "coverage_missing",
        f"coverage needs coverage.py and pytest-cov in the project's interpreter {interp.python}, which lacks "
        f"{names}; install {'them' if len(missing) > 1 else 'it'} there ({interp.python} -m pip install "
        f"{' '.join(missing)}), or run without coverage",
    )


def project_lines(paths: list[str], formats: list[CoverageFormat]) -> LineSets:
    """``coverage_reports.read_coverage_reports`` without the server's own pytest plugins
    (``events.PLUGIN_DIR``): they run inside every measured pytest, outside the project's
    site-packages, so coverage.py measures them unless the project names its ``source``;
    they are never the project's code. Raises ``ReportError``."""
    lines = read_coverage_reports(paths, formats)
    lines.drop_under(str(PLUGIN_DIR))
    return lines


def coverage_env(run_dir: Path, interp: Interpreter, run_number: int = 1) -> dict[str, str]:
    """The environment variables a measured pytest process gets on top of the child's:
    ``COVERAGE_FILE``, its own data file ``<run_dir>/coverage/run-<run_number>`` (the
    directory is created), and ``COVERAGE_CORE``, coverage.py's measuring core:
    ``ctrace`` when ``interp`` (the project's interpreter, probed) has coverage.py's C
    tracer, else ``pytrace``. pytest-cov's xdist workers inherit both and are combined
    into the data file by pytest-cov."""
    data_dir = run_dir / COVERAGE_DIR
    data_dir.mkdir(exist_ok=True)
    # The per-test contexts need a core that records dynamic contexts: coverage.py's
    # sys.monitoring core (a project's ``core = "sysmon"``, or 3.14's default) does not
    # (it warns, and only the first test to run a line gets it). COVERAGE_CORE is
    # read after the configuration files and wins; ``ctrace`` only when it imports:
    # coverage.py exits at import when it is asked for and missing.
    core = "ctrace" if interp.has_ctracer else "pytrace"
    return {"COVERAGE_FILE": str(data_dir / f"run-{run_number}"), "COVERAGE_CORE": core}


async def finish_coverage(
    python: str,
    root: Path,
    env: dict[str, str],
    run_dir: Path,
    measured_dirs: Sequence[Path] = (),
    changed: ChangedLines | None = None,
    tests_ran: bool = True,
) -> CoverageSummary:
    """Combine the data files of a call (every file under ``<dir>/coverage`` of each
    run directory in ``measured_dirs``, the runs of a repeated call; default just
    ``run_dir``), have ``python`` (the project's interpreter, cwd ``root``, environment
    ``env``) write ``<run_dir>/coverage.json`` (and ``contexts.json`` for the changed
    Python files: ``find_suspects``), and summarise it with ``changed``, the changed
    lines of ``root`` (``run.git.changed_lines``; None outside git). ``tests_ran``
    False (no test of the call's runs had its function called, ``domain.coverage_answer.ran_a_test``)
    leaves the changed lines not run out (``summarize_coverage``).

    Never raises for a run that measured nothing or a report that cannot be written:
    the summary then has ``percent`` None and ``problem`` saying why (the tests' results
    stay the answer)."""
    data_dirs = [d / COVERAGE_DIR for d in (measured_dirs or [run_dir])]
    files = sorted(str(p) for d in data_dirs if d.is_dir() for p in d.iterdir() if p.is_file())
    if not files:
        return CoverageSummary(percent=None, problem="no coverage data was written (pytest-cov did not start?)")
    combined, report = run_dir / COMBINED_DATA, run_dir / JSON_REPORT
    changed_python = [str(root / p) for p in (changed.touched() if changed else []) if p.endswith(".py")]
    spec = {
        "combined": str(combined),
        "out": str(report),
        "contexts": str(run_dir / CONTEXTS_REPORT),
        "changed": changed_python,
        "files": files,
    }
    argv = [python, "-c", _REPORT_SCRIPT, json.dumps(spec)]
    env = {k: v for k, v in env.items() if k != "COVERAGE_FILE"}
    try:
        with anyio.fail_after(REPORT_TIMEOUT_S):
            proc = await anyio.run_process(argv, cwd=root, env=env, check=False)
    except (OSError, TimeoutError) as exc:
        return CoverageSummary(percent=None, problem=f"coverage.py's report did not finish: {exc or 'timeout'}")
    if proc.returncode != 0 or not report.is_file():
        stderr = proc.stderr.decode("utf-8", "replace")[-TAIL_BYTES:].strip().splitlines()
        why = stderr[-1] if stderr else f"exit {proc.returncode}"
        return CoverageSummary(percent=None, data_path=str(combined), problem=f"coverage.py wrote no report: {why}")
    try:
        lines = await anyio.to_thread.run_sync(lambda: project_lines([str(report)], ["coverage-json"]))
    except ReportError as exc:
        return CoverageSummary(percent=None, data_path=str(combined), problem=str(exc))
    return summarize_coverage(
        lines, root=os.fspath(root), changed=changed, data_path=str(combined), tests_ran=tests_ran
    )


async def find_suspects(
    run_dir: Path, root: Path, changed: ChangedLines | None, outcomes: Mapping[str, str]
) -> list[Suspect] | None:
    """The changed code the failing tests of a measured run ran (``domain.suspects``),
    from ``<run_dir>/contexts.json`` (``finish_coverage``) and the changed files'
    source; ``outcomes``: node id -> outcome of each test of the run
    (``engine.read_report``'s ``outcomes``). None when there is nothing to say: no git
    (``changed`` None), no failing test, or no measured changed file (then no contexts
    were written). Never raises: an unreadable contexts report gives None."""
    report = run_dir / CONTEXTS_REPORT
    if changed is None or not report.is_file() or not any(o in FAILING_OUTCOMES for o in outcomes.values()):
        return None

    def rank() -> list[Suspect]:
        measured = {
            relative_path(path, os.fspath(root)): lines for path, lines in read_line_contexts(str(report)).items()
        }
        return rank_in_root(root, changed, measured, outcomes)

    try:
        return await anyio.to_thread.run_sync(rank)
    except ReportError:
        return None


def rank_in_root(
    root: Path, changed: ChangedLines, measured: Mapping[str, LineContexts], outcomes: Mapping[str, str]
) -> list[Suspect]:
    """``domain.suspects.rank_suspects`` of ``measured`` (per changed file, relative to
    ``root``), each file's source read from ``root`` now (a file deleted since the run
    is read as module-level code only); at most ``SUSPECTS_LISTED``."""
    sources = {}
    for path in measured:
        try:
            sources[path] = (root / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
    return rank_suspects(changed, measured, outcomes, sources, SUSPECTS_LISTED)
