"""Flaky tests: each test's outcome in every run of a repeated ``execute_tests`` call
(``repeat``), written as one letter per run in run order (its *pattern*), and the tests
whose outcome changed between runs.

Letters (pytest's own short letters where it has a distinct one):

* ``P`` passed, ``F`` failed, ``E`` error (setup or teardown), ``S`` skipped,
  ``x`` xfailed, ``X`` xpassed;
* ``-`` not run: the run finished without a result for the test (``-x``/``--maxfail``
  stopped it earlier, the test was not collected that time);
* ``?`` an outcome this module does not know (a plugin's own category).

A test is flaky when the runs that ran it gave it at least two different letters
(``PFPF``, ``PPS``, ``xX``). A ``-`` says nothing about the test, so ``P-P`` is not
flaky. A test that failed in every run that ran it is a consistent failure, not flaky.

No MCP import, no processes: the workflow feeds each run's outcomes (the event plugin's
records, as ``engine.read_report`` reads them) into an ``OutcomeHistory``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pytest_mcp_server.engine.models import Failure, _Frozen

OUTCOME_LETTERS: dict[str, str] = {
    "passed": "P",
    "failed": "F",
    "error": "E",
    "skipped": "S",
    "xfailed": "x",
    "xpassed": "X",
}
"""The letter of each outcome of a test (pytest-json-report's outcome names)."""
NOT_RUN = "-"
"""The letter of a run that has no result for the test."""
UNKNOWN = "?"
"""The letter of an outcome not in ``OUTCOME_LETTERS``."""
FAILING_LETTERS = "FE"
"""The letters of a run in which the test failed or errored."""

LETTER_NAMES: dict[str, str] = {
    **{letter: outcome for outcome, letter in OUTCOME_LETTERS.items()},
    NOT_RUN: "not run",
    UNKNOWN: "other",
}
"""What each letter of a pattern means, in legend order."""


class FlakyTest(_Frozen):
    """A test whose outcome changed between the runs of one call.

    ``node_id``: the test. ``pattern``: its letter in each run, in run order (``PFPF``;
    see the module's docstring). ``failed_run``: the 1-based number of the last run in
    which it failed or errored, None when it never did (``PS``, ``xX``). ``failure``:
    that run's failure of the test, as the report engine summarised it (cut by the
    call's budgets); None when it never failed, or when that run's report could not be
    read any more, or beyond the flaky tests listed in full.
    """

    node_id: str
    pattern: str
    failed_run: int | None = None
    failure: Failure | None = None


class OutcomeHistory:
    """Each test's pattern over the runs added so far.

    ``add_run`` takes one run's outcomes (node id -> outcome name); ``runs`` counts the
    runs added. Memory: one short string per distinct test.
    """

    def __init__(self) -> None:
        self.runs = 0
        self._letters: dict[str, str] = {}  # node id -> letters up to its last run (padded on read)

    def add_run(self, outcomes: Mapping[str, str]) -> None:
        """Record the next run: ``outcomes`` maps each test the run finished to its
        outcome (``passed``, ``failed``, ``error``, ``skipped``, ``xfailed``,
        ``xpassed``); tests it does not name were not run."""
        for node_id, outcome in outcomes.items():
            before = self._letters.get(node_id, "").ljust(self.runs, NOT_RUN)
            self._letters[node_id] = before + OUTCOME_LETTERS.get(outcome, UNKNOWN)
        self.runs += 1

    def __len__(self) -> int:
        """Distinct tests seen in any run."""
        return len(self._letters)

    def pattern(self, node_id: str) -> str:
        """The test's letter in each run so far (``NOT_RUN`` in the runs it was absent
        from); all ``NOT_RUN`` for a test never seen."""
        return self._letters.get(node_id, "").ljust(self.runs, NOT_RUN)

    def flaky(self) -> list[tuple[str, str]]:
        """The flaky tests as (node id, pattern), in the order they were first seen."""
        out: list[tuple[str, str]] = []
        for node_id in self._letters:
            pattern = self.pattern(node_id)
            if is_flaky(pattern):
                out.append((node_id, pattern))
        return out


def is_flaky(pattern: str) -> bool:
    """True when ``pattern`` has at least two different letters besides ``NOT_RUN``."""
    return len(set(pattern) - {NOT_RUN}) > 1


def last_failing_run(pattern: str) -> int | None:
    """The 0-based index of the last run in which the test failed or errored
    (``FAILING_LETTERS``), or None."""
    index = max(pattern.rfind(letter) for letter in FAILING_LETTERS)
    return index if index >= 0 else None


def legend(patterns: Iterable[str]) -> str:
    """``"P passed, F failed"``: the meaning of the letters that occur in ``patterns``,
    in ``LETTER_NAMES`` order."""
    seen = set("".join(patterns))
    return ", ".join(f"{letter} {name}" for letter, name in LETTER_NAMES.items() if letter in seen)
