"""Which tests a change can affect: the selection of ``execute_tests`` and
``discover_tests`` with ``affected`` (plain models and the pure selection rule; the
map itself is ``run.testmap``, its blocks ``domain.blocks``).

A collected test is selected, for the first of these reasons that holds (the order
of ``REASONS``):

* ``no_map``: the map of this root and interpreter holds no test yet (every test runs,
  and the run builds it);
* ``config_changed``: something the map cannot see changed since the test last ran:
  a ``conftest.py``, pytest's configuration files, the interpreter or its installed
  distributions (the test's recorded configuration fingerprint differs);
* ``new``: the map has no entry for the test;
* ``changed``: a change reaches the test (``domain.reach``: a block it ran last time
  is no longer in its file as it was, module-level code reached through imports, code
  run at import that every test depends on, passed as ``import_changed``);
* ``failed_last``: the test failed or errored when it last ran.

Any other test is left out. No I/O: the caller gives each recorded test's changed
files (``recorded_tests``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from pytest_mcp_server.domain.nodeids import node_path
from pytest_mcp_server.domain.policy import AFFECTED_FILES_KEPT
from pytest_mcp_server.domain.reach import MapSnapshot, Reach
from pytest_mcp_server.engine.models import _Frozen

Reason = Literal["no_map", "config_changed", "new", "changed", "failed_last"]
"""Why a test was selected (see the module docstring)."""
REASONS: tuple[Reason, ...] = ("no_map", "config_changed", "new", "changed", "failed_last")
"""The reasons in the order they are tried: a test is counted under the first that holds."""
FAILED_OUTCOMES = frozenset({"failed", "error"})
"""Recorded outcomes (``engine.read_report``'s, pytest-json-report's names) that select a test again."""


class SelectionReasons(_Frozen):
    """How many selected tests each reason selected (they add up to ``selected``)."""

    no_map: int = 0
    changed: int = 0
    new: int = 0
    failed_last: int = 0
    config_changed: int = 0


class AffectedTest(_Frozen):
    """One selected test and why (``Reason``)."""

    node_id: str
    reason: Reason


class Selection(_Frozen):
    """The selection of an ``affected`` call.

    ``selected`` of ``total`` collected tests (within the call's node ids, markers and
    keywords) are affected, ``reasons`` counts them per reason. ``changed_files``: the
    files whose changes selected them (paths relative to the root: files with a changed
    block, new tests' files, changed configuration files), the file selecting most
    tests first, at most ``AFFECTED_FILES_KEPT``. ``notice``: one line when the map could not be
    trusted and was rebuilt (corrupt, foreign or of a newer format), else None.
    ``tests``: ``discover_tests``' page of the selected tests with their reasons; None
    in ``execute_tests``' answer. ``pytest_started``: when no test was selected but the
    call still started pytest, why the server could not prove without it that nothing
    can fail (``app.collection_proof.nothing_can_fail``); None otherwise."""

    mode: Literal["affected"] = "affected"
    selected: int
    total: int
    reasons: SelectionReasons = Field(default_factory=SelectionReasons)
    changed_files: list[str] = Field(default_factory=list)
    notice: str | None = None
    tests: list[AffectedTest] | None = None
    pytest_started: str | None = None


@dataclass(frozen=True)
class RecordedTest:
    """A test's entry in the map as a selection reads it: its last ``outcome``
    (``engine.read_report``'s names), the configuration fingerprint of that run (``config``)
    and ``changed``: the changed files (paths relative to the root) that reach it
    (``domain.reach.Reach``)."""

    outcome: str
    config: str
    changed: frozenset[str] = frozenset()


def recorded_tests(snapshot: MapSnapshot, reached: Reach) -> dict[str, RecordedTest]:
    """The map's tests as the selection reads them (``snapshot``), each with the changed
    files that reach it (``reached``, ``domain.reach.reach``'s)."""
    empty: frozenset[str] = frozenset()
    return {
        node_id: RecordedTest(entry.outcome, entry.config, reached.tests.get(node_id, empty))
        for node_id, entry in snapshot.tests.items()
    }


def select_affected(
    collected: Sequence[str],
    recorded: Mapping[str, RecordedTest],
    config: str,
    config_files: Sequence[str] = (),
    import_changed: Iterable[str] = (),
) -> tuple[list[AffectedTest], dict[str, int]]:
    """The affected tests among ``collected`` (node ids, in collection order) and the
    files that selected them (path -> tests it selected).

    ``recorded``: the map's entries; empty means there is no map (every test
    ``no_map``). ``config``: the current configuration fingerprint.
    ``config_files``: the configuration files that differ from the last run's, named
    for ``config_changed`` tests. ``import_changed``: the files of the function blocks
    run at import (outside any test) that changed; every recorded test depends on
    those, so any makes every recorded test ``changed``."""
    selected: list[AffectedTest] = []
    files: Counter[str] = Counter()
    everyone = frozenset(import_changed)
    for node_id in collected:
        if not recorded:
            selected.append(AffectedTest(node_id=node_id, reason="no_map"))
            continue
        entry = recorded.get(node_id)
        if entry is not None and entry.config != config:
            selected.append(AffectedTest(node_id=node_id, reason="config_changed"))
            files.update(config_files)
            continue
        if entry is None:
            selected.append(AffectedTest(node_id=node_id, reason="new"))
            files[node_path(node_id)] += 1
            continue
        gone = everyone | entry.changed
        if gone:
            selected.append(AffectedTest(node_id=node_id, reason="changed"))
            files.update(gone)
        elif entry.outcome in FAILED_OUTCOMES:
            selected.append(AffectedTest(node_id=node_id, reason="failed_last"))
    return selected, dict(files)


def selection_of(
    tests: Sequence[AffectedTest], total: int, files: Mapping[str, int], notice: str | None = None
) -> Selection:
    """The ``Selection`` of ``tests`` (``select_affected``'s) of ``total`` collected,
    with its files most-selecting first (then by path), at most ``AFFECTED_FILES_KEPT``."""
    counts = Counter(test.reason for test in tests)
    ordered = sorted(files.items(), key=lambda item: (-item[1], item[0]))
    return Selection(
        selected=len(tests),
        total=total,
        reasons=SelectionReasons(**{reason: counts.get(reason, 0) for reason in REASONS}),
        changed_files=[path for path, _ in ordered[:AFFECTED_FILES_KEPT]],
        notice=notice,
    )
