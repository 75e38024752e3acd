"""The blocks a test map records and the map's store, on real source text and real
SQLite files.

A block's fingerprint must change exactly when its code does: an edit inside one
function changes that function's block (and the functions around it), never a sibling
nor the module-level block; comments, blank lines and moving a function change nothing.
The store must refuse what it cannot trust (another program's database, a newer schema,
bytes that are not SQLite) by rebuilding, and keep a transaction all-or-nothing.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from pytest_mcp_server.domain.blocks import MODULE_BLOCK, WHOLE_FILE, file_blocks
from pytest_mcp_server.domain.nodeids import node_function, node_last_name, node_names, node_path
from pytest_mcp_server.domain.reach import EVERY_TEST, ImportKey, TestEntry, importing
from pytest_mcp_server.domain.selection import RecordedTest, select_affected
from pytest_mcp_server.run.recording import (
    IMPORTING_CONTEXT,
    MAP_DATA_DIR,
    RECORDER_FORMAT,
    read_map_data,
)
from pytest_mcp_server.run.recording import (
    tests_blocks as run_blocks,
)
from pytest_mcp_server.run.testmap import SCHEMA_VERSION, open_map

SOURCE = b"""\
import os

LIMIT = 3


@staticmethod
def decorated(x):
    return x + 1


class Shape:
    sides = 4

    def area(self):
        def inner():
            return 2
        return inner() * self.sides

    async def fetch(self):
        return 1


class Other:
    def area(self):
        def inner():
            return 2
        return inner() * self.sides
"""


def fingerprints(source: bytes) -> dict[str, str]:
    blocks = file_blocks(source)
    return {MODULE_BLOCK: blocks.module.fingerprint} | {b.name: b.fingerprint for b in blocks.functions}


def test_a_line_belongs_to_the_innermost_function_body_and_definitions_to_the_code_around():
    blocks = file_blocks(SOURCE)
    owner = {line: blocks.owner(line).name for line in range(1, 28)}
    assert [b.name for b in blocks.functions] == [
        "decorated",
        "Shape.area",
        "Shape.area.<locals>.inner",
        "Shape.fetch",
        "Other.area",
        "Other.area.<locals>.inner",
    ]
    assert owner[1] == owner[3] == MODULE_BLOCK
    assert owner[6] == owner[7] == MODULE_BLOCK  # the decorator and the def line run at import
    assert owner[8] == "decorated"
    assert owner[12] == MODULE_BLOCK  # a class body is module-level code
    assert owner[14] == MODULE_BLOCK
    assert owner[15] == "Shape.area"  # the nested def line runs when area runs
    assert owner[16] == "Shape.area.<locals>.inner"
    assert owner[17] == "Shape.area"
    assert owner[20] == "Shape.fetch"
    # the blocks a run's lines belong to, in one pass: the same owners, each once
    for lines in ([8, 16, 17, 16], [1, 12, 14], [16, 500], list(range(0, 40)), []):
        assert sorted(b.name for b in blocks.owners_of(lines)) == sorted({blocks.owner(n).name for n in lines})


def test_an_edit_changes_its_own_blocks_only_and_formatting_changes_none():
    before = fingerprints(SOURCE)
    assert len(set(before.values())) == len(before)  # equal bodies in two classes are two blocks

    edited = fingerprints(
        SOURCE.replace(b"return inner() * self.sides\n\n    async", b"return inner() + 1\n\n    async")
    )
    assert {name for name in before if before[name] != edited[name]} == {"Shape.area"}

    inner_edited = fingerprints(
        SOURCE.replace(
            b"return 2\n        return inner() * self.sides\n\n    async",
            b"return 3\n        return inner() * self.sides\n\n    async",
        )
    )
    assert {name for name in before if before[name] != inner_edited[name]} == {
        "Shape.area",
        "Shape.area.<locals>.inner",
    }

    decorator = fingerprints(SOURCE.replace(b"@staticmethod\n", b"@classmethod\n"))
    assert {name for name in before if before[name] != decorator[name]} == {"decorated"}

    module = fingerprints(SOURCE.replace(b"LIMIT = 3", b"LIMIT = 4"))
    assert {name for name in before if before[name] != module[name]} == {MODULE_BLOCK}

    # comments, blank lines and moving a function up change no block
    moved = SOURCE.replace(b"\n\n@staticmethod\ndef decorated(x):\n    return x + 1\n", b"")
    moved = b"@staticmethod\ndef decorated(x):  # moved\n\n    return x + 1\n\n" + moved.replace(
        b"LIMIT = 3", b"LIMIT = 3  # why"
    )
    assert fingerprints(moved) == before

    # a new function changes no other block: the module-level block leaves functions out
    added = fingerprints(SOURCE + b"\n\ndef test_new():\n    assert True\n")
    assert {name: added[name] for name in before} == before


def test_a_file_that_does_not_parse_is_one_block_of_its_whole_content():
    broken = file_blocks(b"def f(:\n    return 1\n")
    assert broken.module.name == WHOLE_FILE and broken.functions == [] and broken.owner(2).name == WHOLE_FILE
    assert file_blocks(b"def f(:\n    return 2\n").module.fingerprint != broken.module.fingerprint
    assert file_blocks(b"x = 1\n", python=False).module.name == WHOLE_FILE


def test_a_node_id_names_its_file_and_test_function_whatever_its_parameters_hold():
    """Parameters may hold ``::`` and ``[``: the names end where they start."""
    assert node_function("tests/t.py::TestA::test_b[1-x::y]") == ("tests/t.py", "TestA.test_b")
    assert node_function("tests/t.py::test_c") == ("tests/t.py", "test_c")
    assert node_function("pkg/mod.py::pkg.mod.func") == ("pkg/mod.py", None)  # a doctest
    assert node_function("tests/t.py") == ("tests/t.py", None)
    assert node_path("tests/t.py::T::test[a::b]") == "tests/t.py" and node_path("tests/") == "tests/"
    assert node_names("tests/t.py::T::test[a::b[c]]") == ["T", "test"] and node_names("tests/t.py") == []
    assert node_last_name("tests/t.py::test_x[a::b]") == "test_x" and node_last_name("tests/t.py") is None


def test_the_selection_takes_the_first_reason_that_holds():
    recorded = {
        "t.py::same": RecordedTest("passed", "c1"),
        "t.py::edited": RecordedTest("failed", "c1", frozenset({"b.py"})),
        "t.py::failed": RecordedTest("error", "c1"),
        "t.py::old_config": RecordedTest("passed", "c0", frozenset({"b.py"})),
    }
    collected = ["t.py::same", "t.py::edited", "t.py::failed", "t.py::old_config", "u.py::fresh"]
    tests, files = select_affected(collected, recorded, "c1", ["conftest.py"])
    assert [(t.node_id, t.reason) for t in tests] == [
        ("t.py::edited", "changed"),
        ("t.py::failed", "failed_last"),
        ("t.py::old_config", "config_changed"),
        ("u.py::fresh", "new"),
    ]
    assert files == {"b.py": 1, "conftest.py": 1, "u.py": 1}
    no_map, _ = select_affected(collected, {}, "c1")
    assert {t.reason for t in no_map} == {"no_map"} and len(no_map) == 5
    # a function run at import changed: every recorded test is changed, new ones stay new
    everyone, files = select_affected(collected, recorded, "c1", import_changed=["a.py"])
    assert [t.reason for t in everyone] == ["changed", "changed", "changed", "config_changed", "new"]
    assert files["a.py"] == 3


def test_a_map_keeps_what_a_transaction_wrote_and_nothing_of_one_that_failed(tmp_path: Path):
    path = tmp_path / "maps" / "m.sqlite"
    test_map, notice = open_map(path)
    assert notice is None
    with test_map:
        test_map.refresh({"t::a": ("passed", [("a.py", "x")]), "t::b": ("failed", [("a.py", "x"), ("b.py", "y")])}, "c")
        with pytest.raises(sqlite3.IntegrityError):  # a failure half-way: nothing of it stays
            # t::a rewritten first, then t::c cannot be written (no outcome)
            test_map.refresh({"t::a": ("failed", [("a.py", "z")]), "t::c": (None, [("a.py", "w")])}, "c")  # type: ignore[dict-item]
        test_map.refresh({}, "c", gone=["t::b"])
        snapshot = test_map.snapshot()
        (x_block,) = [i for i, block in snapshot.blocks.items() if block == ("a.py", "x")]
        assert snapshot.tests == {"t::a": TestEntry("passed", "c", frozenset({x_block}))}
        assert test_map.connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        # blocks no test refers to any more are gone
        assert test_map.connection.execute("SELECT path, fingerprint FROM blocks").fetchall() == [("a.py", "x")]


def test_a_rewritten_entry_drops_only_the_blocks_no_other_test_or_key_refers_to(tmp_path: Path):
    """``refresh`` looks for blocks to remove among those that lost a reference: a block
    another test or the code run at import still holds stays."""
    with open_map(tmp_path / "m.sqlite")[0] as test_map:
        test_map.refresh(
            {"t::a": ("passed", [("a.py", "x"), ("a.py", "y")]), "t::b": ("passed", [("a.py", "y")])},
            "c",
            import_code={EVERY_TEST: {"h.py": {("h.py", "x")}}},
        )
        test_map.refresh({"t::a": ("passed", [("h.py", "x")])}, "c")
        assert set(test_map.blocks().values()) == {("a.py", "y"), ("h.py", "x")}  # a.py's x: no one's
        test_map.refresh({"t::b": ("passed", [("a.py", "z")])}, "c", import_code={EVERY_TEST: {"h.py": set()}})
        assert set(test_map.blocks().values()) == {("h.py", "x"), ("a.py", "z")}  # t::a still holds h.py's x
        test_map.refresh({"t::a": ("passed", [("a.py", "z")])}, "c")
        assert set(test_map.blocks().values()) == {("a.py", "z")}
        snapshot = test_map.snapshot()
        ids = {block: i for i, block in snapshot.blocks.items()}
        assert snapshot.tests["t::a"].blocks == snapshot.tests["t::b"].blocks == {ids[("a.py", "z")]}
        assert snapshot.import_code == {}


def test_code_run_at_import_is_kept_under_typed_keys_a_narrower_run_adds_and_a_dropped_key_goes(tmp_path: Path):
    """Each key's blocks of the files a run recorded replace that key's blocks of those
    files (the others stay); ``EVERY_TEST`` only adds when the run collected some files;
    an ``importing`` key is replaced whole; a dropped key and its blocks leave the map."""
    with open_map(tmp_path / "m.sqlite")[0] as test_map:
        test_map.refresh(
            {"t::a": ("passed", [("t.py", "a")])},
            "c",
            import_code={
                EVERY_TEST: {"hooks.py": {("hooks.py", "h1")}, "conftest.py": {("conftest.py", "c1")}},
                importing("pkg/m.py"): {"pkg/m.py": {("pkg/cases.py", "make1")}},
            },
        )
        test_map.refresh(
            {},
            "c",
            import_code={EVERY_TEST: {"hooks.py": {("hooks.py", "h2")}}},
            whole_collection=False,
        )
        assert test_map.import_code()[EVERY_TEST] == {("hooks.py", "h1"), ("hooks.py", "h2"), ("conftest.py", "c1")}
        test_map.refresh({}, "c", import_code={EVERY_TEST: {"hooks.py": {("hooks.py", "h3")}}})
        test_map.refresh({}, "c", import_code={importing("pkg/m.py"): {"pkg/m.py": {("pkg/cases.py", "make2")}}})
        code = test_map.import_code()
        assert code == {
            EVERY_TEST: {("hooks.py", "h3"), ("conftest.py", "c1")},
            ImportKey("importing", "pkg/m.py"): {("pkg/cases.py", "make2")},
        }
        test_map.refresh({}, "c", dropped=[importing("pkg/m.py")])
        assert set(test_map.import_code()) == {EVERY_TEST}
        assert ("pkg/cases.py", "make2") not in set(test_map.blocks().values())
        # no marker rows: the tests table holds tests only
        assert test_map.node_ids() == {"t::a"}


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda p: p.write_bytes(b"\0garbage" * 64), "was not readable as SQLite (file is not a database)"),
        (lambda p: sqlite3.connect(p).execute("CREATE TABLE notes (x)").connection.commit(), "another program's"),
        (
            lambda p: (
                sqlite3.connect(p)
                .execute(f"UPDATE schema_version SET version = {SCHEMA_VERSION + 1}")
                .connection.commit()
            ),
            f"was schema version {SCHEMA_VERSION + 1}, this server reads {SCHEMA_VERSION}",
        ),
    ],
    ids=["not_sqlite", "foreign", "newer"],
)
def test_a_map_that_cannot_be_trusted_is_rebuilt_empty_with_a_notice(tmp_path: Path, make, why: str):
    path = tmp_path / "m.sqlite"
    with open_map(path)[0] as test_map:
        test_map.refresh({"t::a": ("passed", [("a.py", "x")])}, "c")
    if why.startswith("was schema"):
        make(path)
    else:
        path.unlink()
        Path(f"{path}-wal").unlink(missing_ok=True)
        make(path)
    test_map, notice = open_map(path)
    with test_map:
        assert notice is not None and why in notice and notice.endswith("rebuilt empty (every test runs as no_map)")
        assert test_map.node_ids() == set()
    with open_map(path)[0] as again:  # the rebuilt map is trusted
        assert again.node_ids() == set()


def test_recorder_files_merge_across_processes_and_any_damage_is_a_problem_not_a_map(tmp_path: Path):
    """The recorders' files of one run (``map.<pid>.jsonl``, one per pytest process) merge
    into per-file, per-context lines (a line ran in a context when it did in any
    process). A file of another format, one whose process never ended it, and one with
    a broken line each give a problem (the caller then leaves the map as it was); a
    test a recorder marked unrecorded is named with why."""
    data_dir = tmp_path / MAP_DATA_DIR
    data_dir.mkdir()

    def write(name: str, *records: dict) -> None:
        (data_dir / name).write_text("".join(json.dumps(r) + "\n" for r in records))

    head = {"format": RECORDER_FORMAT, "recorder": "sys.monitoring", "pid": 1}
    write(
        "map.1.jsonl",
        head,
        {"file": 0, "path": "/p/a.py"},
        {"context": "t::one", "lines": [[0, [3, 1]]]},
        {"unrecorded": "t::two", "why": "it replaced the trace function (sys.settrace)"},
        {"context": "", "lines": [[0, [9]]]},
        {"end": True},
    )
    write(
        "map.2.jsonl",
        {**head, "pid": 2},
        {"file": 0, "path": "/p/b.py"},
        {"file": 1, "path": "/p/a.py"},
        {"context": "t::one", "lines": [[1, [2, 3]], [0, [5]]]},
        {"end": True},
    )
    whole = read_map_data(tmp_path)
    assert whole.problems == [] and whole.recorders == ["sys.monitoring", "sys.monitoring"]
    assert whole.lines == {"/p/a.py": {"t::one": [1, 2, 3], "": [9]}, "/p/b.py": {"t::one": [5]}}
    assert whole.unrecorded == {"t::two": "it replaced the trace function (sys.settrace)"}

    write("map.3.jsonl", {**head, "pid": 3}, {"file": 0, "path": "/p/c.py"})  # killed: no end line
    write("map.4.jsonl", {"format": 99, "recorder": "x", "pid": 4}, {"end": True})
    (data_dir / "map.5.jsonl").write_text(
        f'{{"format": {RECORDER_FORMAT}, "recorder": "coverage.py", "pid": 5}}\n{{"context": '
    )
    write("map.6.jsonl", {**head, "pid": 6}, {"problem": "its sys.monitoring tool id 3 was freed"}, {"end": True})
    damaged = read_map_data(tmp_path)
    assert damaged.problems[0] == "the recorder of pytest process 3 did not finish its file"
    assert damaged.problems[1] == f"the recorder's file map.4.jsonl is not of format {RECORDER_FORMAT}"
    assert damaged.problems[2].startswith("the recorder's file map.5.jsonl could not be read")
    assert damaged.problems[3] == "its sys.monitoring tool id 3 was freed"
    assert len(damaged.problems) == 4


def test_code_run_while_a_module_was_imported_is_that_modules_and_a_conftests_is_every_tests(tmp_path):
    """Function blocks run outside tests split by what was being imported: a test module's
    or a helper's import keeps them under that module; a ``conftest.py``'s import and code
    run with no module being imported (collection hooks) are every test's; each file run
    outside tests gives its module-level elements."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "pkg" / "cases.py").write_text("def make(n):\n    return n\n\n\ndef size():\n    return 2\n")
    (tmp_path / "tests" / "test_a.py").write_text("from pkg.cases import make\n\nA = make(1)\n")
    (tmp_path / "conftest.py").write_text("from pkg.cases import size\n")
    cases = str(tmp_path / "pkg" / "cases.py")
    data = {
        cases: {
            IMPORTING_CONTEXT + str(tmp_path / "tests" / "test_a.py"): [2],
            IMPORTING_CONTEXT + str(tmp_path / "conftest.py"): [6],
            IMPORTING_CONTEXT + cases: [1, 5],
        },
        str(tmp_path / "tests" / "test_a.py"): {IMPORTING_CONTEXT + str(tmp_path / "tests" / "test_a.py"): [1, 3]},
    }
    blocks = run_blocks(data, tmp_path, [])
    now = file_blocks((tmp_path / "pkg" / "cases.py").read_bytes())
    make, size = (("pkg/cases.py", now.named(name).fingerprint) for name in ("make", "size"))
    assert blocks.importing == {"tests/test_a.py": {make}, "pkg/cases.py": set()}
    assert blocks.at_import == {"pkg/cases.py": {size}, "tests/test_a.py": set()}
    # each file that ran keeps its module-level elements, to compare a later change with
    assert set(blocks.elements) == {"pkg/cases.py", "tests/test_a.py"}
    assert [e.key for e in blocks.elements["tests/test_a.py"][1]] == ["A", "make"]


def test_a_files_blocks_are_parsed_again_only_when_its_stat_changes(tmp_path):
    """The server keeps the blocks it parsed under the file's stat key: an unchanged file
    is not parsed again between calls (the same object comes back), a written one is."""
    from pytest_mcp_server.run.recording import read_blocks

    source = tmp_path / "mod.py"
    source.write_text("def f():\n    return 1\n")
    first = read_blocks(tmp_path, "mod.py")
    assert first is not None and read_blocks(tmp_path, "mod.py") is first
    source.write_text("def f():\n    return 2\n")
    again = read_blocks(tmp_path, "mod.py")
    assert again is not None and again is not first
    assert again.functions[0].fingerprint != first.functions[0].fingerprint
    assert read_blocks(tmp_path, "gone.py") is None
