"""What each test took when it last ran, read from the record files of the project's kept
run directories (``run.rundirs``): the least time a call that runs those tests again can
take (``RecordedDurations.at_least``).

A test's duration is the sum of the ``duration`` of its setup, call and teardown reports
(pytest's own measure, as ``--durations`` gives it), from the newest finished run that ran
it. A run directory is read once, when it has finished (its ``RUNNING_MARKER`` gone); its
lines are streamed (``run.events.RecordLines``), and of a long line (a failure's complete
report) only its head is looked at, where the plugin writes a report's node id and, in a
lean report, its duration (a complete report whose duration lies beyond that head counts
0: the sum stays a lower bound).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from pytest_mcp_server.domain.policy import DURATIONS_KEPT
from pytest_mcp_server.run.argv import RECORDS_FILE
from pytest_mcp_server.run.events import RecordLines, record_type
from pytest_mcp_server.run.rundirs import RUNNING_MARKER, RunDirectories

_NODE_ID = re.compile(rb'\{"\$report_type":"TestReport","nodeid":("(?:[^"\\]|\\.)*")')
# a key of the report object itself: inside a string (captured output) its quotes are escaped
_DURATION = re.compile(rb'(?<!\\)"duration":(-?[0-9][0-9.eE+-]*)')


def durations_in(records: Path) -> dict[str, float]:
    """Each test's duration in the record file ``records`` (node id -> seconds, its
    reports' durations summed); empty when the file cannot be read. Blocking."""
    out: dict[str, float] = {}
    try:
        for head, _whole in RecordLines(records):
            if record_type(head) != b"TestReport":
                continue
            node = _NODE_ID.match(head)
            duration = _DURATION.search(head)
            if node is None:
                continue
            node_id = json.loads(node[1])
            seconds = float(duration[1]) if duration is not None else 0.0
            out[node_id] = out.get(node_id, 0.0) + max(seconds, 0.0)
    except (OSError, ValueError):
        return out
    return out


def _under(node_id: str, selection: Sequence[str]) -> bool:
    """Whether pytest run with ``selection`` (paths and node ids, relative to the root)
    runs the test ``node_id``: it is one of them, or lies under one (a directory, a file,
    a class, a parametrized test's name)."""
    for given in selection:
        if node_id == given or node_id.startswith((given + "::", given + "/", given + "[")):
            return True
    return False


class RecordedDurations:
    """The recorded duration of each test of one project (``durations_in``), the newest
    run's for a test that ran in several; at most ``DURATIONS_KEPT`` tests (the others are
    not counted, which keeps ``at_least`` a lower bound). Not shared between threads."""

    def __init__(self, run_dirs: RunDirectories) -> None:
        self._run_dirs = run_dirs
        self._read: set[str] = set()  # the run directories read (their names)
        self._seconds: dict[str, tuple[str, float]] = {}  # node id -> (run it is from, seconds)

    def refresh(self) -> None:
        """Read the finished run directories not read yet. Blocking."""
        try:
            runs = sorted(p for p in self._run_dirs.runs_dir.iterdir() if p.is_dir() and not p.is_symlink())
        except OSError:
            return
        self._read &= {run.name for run in runs}  # rotated away: a name is never reused
        for run in runs:
            if run.name in self._read or (run / RUNNING_MARKER).exists():
                continue
            self._read.add(run.name)
            for node_id, seconds in durations_in(run / RECORDS_FILE).items():
                known = self._seconds.get(node_id)
                if known is not None and known[0] > run.name:
                    continue  # a newer run's duration wins (run names sort by start time)
                if known is None and len(self._seconds) >= DURATIONS_KEPT:
                    continue
                self._seconds[node_id] = (run.name, seconds)

    def at_least(self, selection: Sequence[str]) -> float:
        """Seconds the recorded tests under ``selection`` took together (every recorded
        test when ``selection`` is empty or the root, ``.``): the least time running them
        again takes on one worker, if they take as long as they did (tests added since,
        pytest's start and its collection add to it)."""
        wanted = [s.removeprefix("./").rstrip("/") for s in selection]
        if not wanted or "." in wanted or "" in wanted:
            return sum(seconds for _, seconds in self._seconds.values())
        return sum(seconds for node_id, (_, seconds) in self._seconds.items() if _under(node_id, wanted))
