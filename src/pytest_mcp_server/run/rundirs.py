"""Run directories: one per pytest run of ``execute_tests``, under
``<artifacts>/runs/<project>-<hash>/<run id>/`` (never inside the project), holding the
run's record file, stack dumps, coverage data and the project code its answer used
(``PROJECT_FILE``); only the newest ``KEEP_RUNS`` of a project are kept, and a run in
progress is never removed. Beside them, the project's record of its last failures
(``FAILURES_FILE``), which every run updates and ``last_failed`` reads.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from pathlib import Path

from pydantic import ValidationError

from pytest_mcp_server.domain.policy import KEEP_RUNS, STALE_RUN_GRACE_S
from pytest_mcp_server.engine.models import ProjectCode
from pytest_mcp_server.run.argv import RECORDS_FILE
from pytest_mcp_server.run.pytest_plugin.pytest_mcp_server_shared import FAILURES_FILE as SHARED_FAILURES_FILE

RUNNING_MARKER = "running"
"""A file in a run directory while its pytest runs (``rotate`` never removes that run)."""


PROJECT_FILE = "project.json"
"""A file in a run directory: the ``ProjectCode`` (JSON) the run's answer was summarised
with, so that ``summarize_report`` on the run's report uses the same project code."""


FAILURES_FILE = SHARED_FAILURES_FILE
"""In a project's runs directory, beside its run directories: the server's record of the
tests that failed when they last ran, ``{"failed": [node ids]}``, kept by the record plugin
(``--mcp-failures``; the name is the shared module's) in place of pytest's ``.pytest_cache``."""


def run_id(stamp_ms: int) -> str:
    """The id of a run started at ``stamp_ms`` (milliseconds since the epoch), its UTC
    time: ``%Y%m%d-%H%M%S-mmm`` (``20261206-222336-285``, about 8 o200k tokens where
    nanoseconds and a random suffix took 14: the answer views name a run's report by it,
    ``adapters.mcp.structured.run_report_path``). Fixed width until the year 10000, so
    that ids sort as their times do (UTC: no DST repeats)."""
    seconds, millis = divmod(stamp_ms, 1000)
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime(seconds)) + f"-{millis:03d}"


def write_project(run_dir: Path, project: ProjectCode) -> None:
    """Write ``project`` into ``run_dir``'s ``PROJECT_FILE``. Raises ``OSError``."""
    (run_dir / PROJECT_FILE).write_text(project.model_dump_json(), encoding="utf-8")


class RunDirectories:
    """The run directories of the project at ``root`` under ``artifacts_base``.

    ``max_timeout_s``: the longest a run may take (seconds); a run directory whose
    ``RUNNING_MARKER`` is younger than that (plus ``STALE_RUN_GRACE_S``) is a run in progress."""

    def __init__(self, root: Path, artifacts_base: Path, max_timeout_s: float) -> None:
        key = hashlib.sha256(str(root).encode()).hexdigest()[:10]
        self.runs_dir = artifacts_base / "runs" / f"{root.name or 'root'}-{key}"
        self.max_timeout_s = max_timeout_s

    def new(self) -> Path:
        """Create ``<runs_dir>/<run id>`` (mode 0700) and remove the oldest run directories
        beyond ``KEEP_RUNS``. The id is the start time, UTC, to the millisecond:
        ``20261206-222336-285`` (``run_id``); ids sort by start time, and an id taken (a run
        started in the same millisecond, by this server or another of the project) gives
        the next millisecond's, ``mkdir`` deciding atomically which run has which."""
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        stamp_ms = time.time_ns() // 1_000_000
        while True:
            run_dir = self.runs_dir / run_id(stamp_ms)
            try:
                run_dir.mkdir(mode=0o700)
                break
            except FileExistsError:
                stamp_ms += 1
        self.rotate()
        return run_dir

    def last_report(self) -> Path | None:
        """The record file (``RECORDS_FILE``) of this project's newest finished run (its
        ``RUNNING_MARKER`` gone), or None when no run has finished and kept one."""
        try:
            runs = sorted((p for p in self.runs_dir.iterdir() if p.is_dir() and not p.is_symlink()), reverse=True)
        except FileNotFoundError:
            return None
        for run in runs:
            records = run / RECORDS_FILE
            if not (run / RUNNING_MARKER).exists() and records.is_file():
                return records
        return None

    def recorded_project(self, report: Path) -> ProjectCode | None:
        """The ``ProjectCode`` recorded (``write_project``) in the run directory of
        ``report`` when ``report`` (a resolved path) is a file directly inside one of
        this project's run directories; None for any other file, or when the run
        recorded none or its file does not read as a ``ProjectCode``."""
        try:
            runs_dir = self.runs_dir.resolve()
        except (OSError, RuntimeError):
            return None
        if report.parent.parent != runs_dir:
            return None
        try:
            return ProjectCode.model_validate_json((report.parent / PROJECT_FILE).read_bytes())
        except (OSError, ValidationError):
            return None

    def rotate(self) -> None:
        """Keep the newest ``KEEP_RUNS`` run directories of this project; a run still in
        progress (its ``RUNNING_MARKER`` was made within the maximum timeout) is never
        removed, however many newer runs there are."""
        try:
            runs = sorted(p for p in self.runs_dir.iterdir() if p.is_dir() and not p.is_symlink())
        except FileNotFoundError:
            return
        now = time.time()
        for old in runs[:-KEEP_RUNS]:
            try:
                if now - (old / RUNNING_MARKER).stat().st_mtime < self.max_timeout_s + STALE_RUN_GRACE_S:
                    continue
            except FileNotFoundError:
                pass
            shutil.rmtree(old, ignore_errors=True)
