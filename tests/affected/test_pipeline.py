"""The stages of an affected call's selection, each on its own: changed elements
(``domain.reach.changed_elements``), each reach rule and their union, the recorded tests
the selection reads, the map state read from a real map and real files
(``app.map_state.read_map_state``), and the proof that no test can fail
(``app.collection_proof``: ``Proven`` or ``Unproven`` with the reason)."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_mcp_server.app.collection_proof import (
    LastCollection,
    Proven,
    Unproven,
    last_full_collection,
    nothing_can_fail,
)
from pytest_mcp_server.app.map_state import CONFIG_PARTS_KEY, MapState, read_map_state, selection_before_run
from pytest_mcp_server.domain.blocks import file_blocks
from pytest_mcp_server.domain.reach import (
    EVERY_TEST,
    Changes,
    Importers,
    MapSnapshot,
    Reach,
    ReachInput,
    TestEntry,
    blocks_rule,
    changed_elements,
    every_test_rule,
    importing,
    importing_rule,
    pending_rule,
    reach,
)
from pytest_mcp_server.domain.selection import RecordedTest, recorded_tests
from pytest_mcp_server.domain.tools import ExecuteParams
from pytest_mcp_server.run.pytest_plugin.pytest_mcp_server_shared import stat_key
from pytest_mcp_server.run.recording import CollectionDelta, config_file_parts, config_fingerprint
from pytest_mcp_server.run.testmap import open_map

SNAPSHOT = MapSnapshot(
    blocks={
        1: ("a.py", "f1"),
        2: ("b.py", "gone"),
        3: ("b.py", "other"),
        4: ("c.py", "deleted file"),
        5: ("t.py", "t"),
    },
    tests={
        "t.py::same": TestEntry("passed", "c", frozenset({1, 5})),
        "t.py::edited": TestEntry("passed", "c", frozenset({2, 3, 5})),
        "t.py::gone_file": TestEntry("failed", "c", frozenset({4})),
        "u.py::importer": TestEntry("passed", "c", frozenset(), pending=frozenset({"tables.py"})),
    },
    import_code={
        EVERY_TEST: frozenset({("hooks.py", "h"), ("a.py", "f1")}),
        importing("m.py"): frozenset({("cases.py", "make")}),
        importing("v.py"): frozenset({("a.py", "f1")}),
    },
)
NOW = {"a.py": {"f1", "module"}, "b.py": {"other"}, "t.py": {"t"}, "hooks.py": {"h2"}, "tables.py": {"m2"}}


def test_changed_elements_are_the_blocks_and_keys_whose_fingerprints_are_gone():
    read: list[str] = []

    def current(path: str) -> set[str]:
        read.append(path)
        return NOW.get(path, set())

    changes = changed_elements(SNAPSHOT, current)
    assert changes == Changes(
        blocks=frozenset({2, 4}),
        every_test=frozenset({"hooks.py"}),
        importing={"m.py": frozenset({"cases.py"})},
        changed_files={"b.py": frozenset({"gone", "other"}), "c.py": frozenset({"deleted file"})},
    )
    assert sorted(read) == sorted(set(read))  # each file read once
    assert changes.import_sources == ["m.py"]


def test_each_rule_reaches_its_own_tests_and_the_union_adds_them_up():
    changes = changed_elements(SNAPSHOT, lambda path: NOW.get(path, set()))
    asked: list[str] = []

    def importers(path: str) -> Importers:
        asked.append(path)
        return Importers(frozenset({"m.py", "u.py", "a.py"}))

    given = ReachInput(SNAPSHOT, importers)
    assert blocks_rule(changes, given) == Reach(
        {"t.py::edited": frozenset({"b.py"}), "t.py::gone_file": frozenset({"c.py"})}
    )
    assert every_test_rule(changes, given) == Reach(everyone=frozenset({"hooks.py"}))
    assert pending_rule(changes, given) == Reach({"u.py::importer": frozenset({"tables.py"})})
    # the tests that ran code in an importer of m.py (a.py) and the tests of the importing files
    assert importing_rule(changes, given) == Reach(
        {"t.py::same": frozenset({"cases.py"}), "u.py::importer": frozenset({"cases.py"})}
    )
    assert asked == ["m.py"]  # the graph is asked only for what a rule needs
    blind = ReachInput(SNAPSHOT, lambda path: Importers(frozenset(), ("x.py:3 calls __import__ with a computed name",)))
    wide = importing_rule(changes, blind)
    assert wide.everyone == {"cases.py"} and wide.tests == {}
    assert wide.wide == (
        "code run at import changed in m.py and the import graph cannot tell who imports it "
        "(x.py:3 calls __import__ with a computed name): every test depends on it"
    )
    union = reach(changes, given)
    assert union.tests["u.py::importer"] == {"cases.py", "tables.py"}
    assert union.everyone == {"hooks.py"} and union.wide is None
    assert recorded_tests(SNAPSHOT, union)["t.py::edited"] == RecordedTest("passed", "c", frozenset({"b.py"}))
    assert recorded_tests(SNAPSHOT, union)["t.py::gone_file"] == RecordedTest("failed", "c", frozenset({"c.py"}))


def _project(root: Path) -> None:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "calc.py").write_text("def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n")
    (root / "test_calc.py").write_text("def test_add():\n    pass\n\n\ndef test_mul():\n    pass\n")


def _blocks(root: Path, *pairs: str) -> set[tuple[str, str]]:
    """The module block and the named function's block of each (path, function) pair."""
    found = set()
    for path, name in zip(pairs[::2], pairs[1::2], strict=True):
        blocks = file_blocks((root / path).read_bytes())
        function = blocks.named(name)
        assert function is not None
        found |= {(path, blocks.module.fingerprint), (path, function.fingerprint)}
    return found


def test_the_map_state_reads_a_real_map_and_real_files(tmp_path: Path):
    root = tmp_path / "proj"
    _project(root)
    path = tmp_path / "m.sqlite"
    environment = {"<interpreter>": "i", "<distributions>": "d"}
    parts = {**config_file_parts(root), **environment}
    fingerprint = config_fingerprint(parts)
    with open_map(path)[0] as test_map:
        test_map.refresh(
            {
                "test_calc.py::test_add": (
                    "passed",
                    _blocks(root, "pkg/calc.py", "add") | _blocks(root, "test_calc.py", "test_add"),
                ),
                "test_calc.py::test_mul": (
                    "failed",
                    _blocks(root, "pkg/calc.py", "mul") | _blocks(root, "test_calc.py", "test_mul"),
                ),
            },
            fingerprint,
            meta={CONFIG_PARTS_KEY: json.dumps(parts)},
        )
    state = read_map_state(root, path)
    assert state.skip == ["test_calc.py::test_add"]  # test_mul failed last time
    assert state.recorded["test_calc.py::test_add"] == RecordedTest("passed", fingerprint)
    assert set(state.stats) == {"pkg/calc.py", "test_calc.py"} and state.notice is None
    calc = root / "pkg" / "calc.py"
    calc.write_text(calc.read_text().replace("return a + b", "return b + a"))
    state = read_map_state(root, path)
    assert state.skip == []
    assert state.recorded["test_calc.py::test_add"].changed == {"pkg/calc.py"}
    assert state.read["pkg/calc.py"][0] == stat_key(calc)  # read again: its stat changed
    assert set(state.changed_files) == {"pkg/calc.py"}
    before = selection_before_run(state)
    assert (before.selected, before.total, before.reasons.changed, before.reasons.failed_last) == (2, 2, 1, 1)


def test_the_proof_is_proven_or_unproven_with_the_reason(tmp_path: Path):
    root = tmp_path / "proj"
    _project(root)
    recorded = {"test_calc.py::test_add": RecordedTest("passed", "c")}
    last = {"collection": {"errors": []}, "environment": {}, "total": 1}
    quiet = MapState(recorded=recorded, skip=list(recorded), last_collection=last, now=config_file_parts(root))
    assert last_full_collection(quiet, ExecuteParams(node_ids=["test_calc.py"])) == Unproven(
        "the call narrows the selection (node_ids, markers, keywords or last_failed)"
    )
    assert last_full_collection(MapState(recorded=recorded), ExecuteParams()) == Unproven(
        "no full collection recorded yet"
    )
    found = LastCollection(last, CollectionDelta(None, []))
    assert nothing_can_fail(root, quiet, found) == Proven()
    affected = MapState(recorded=recorded, skip=[], last_collection=last, now=quiet.now)
    assert nothing_can_fail(root, affected, found) == Unproven("tests are affected")
    blocked = LastCollection(last, CollectionDelta("--doctest-modules collects doctests from every module", []))
    assert nothing_can_fail(root, quiet, blocked) == Unproven("--doctest-modules collects doctests from every module")
    written = MapState(recorded=recorded, skip=list(recorded), now=quiet.now, stats={"test_calc.py": "0:0:0:0"})
    assert nothing_can_fail(root, written, found) == Unproven("test_calc.py changed during the check")
    assert nothing_can_fail(root, quiet, Unproven("why")) == Unproven("why")
