"""A plain call (no ``affected``, no ``coverage``) with the test map an earlier affected
call left, through the real server over real stdio, on both recorders where the map is
built: sys.monitoring (a real CPython 3.12 virtualenv, ``python312``) and coverage.py's
C tracer (this Python 3.11).

What an agent relies on:

* after an affected call built the map and a one-line wrong-value bug went in (the
  assertion fails in the test: no traceback passes through the bug), a plain call names
  the changed line as a suspect, says it is the map's last recording and not this run,
  and groups the failures it caused as one entry;
* a module-level constant read by the code the failing tests ran is named by its name;
* a failing test the map never recorded is counted among the failing tests but points
  at nothing;
* outside git, the function the map saw change is named whole;
* the plain call's pytest gets no option of the map's (the typed view's ``command``),
  and the map's tables are as they were;
* without a map, or with a file there that is no map, the answer is the plain one, with
  no suspect and no notice, and the file is left as it is.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from helpers.affected_support import affected_run, edit
from helpers.server_support import committed_project, connect, run, text_of
from helpers.server_support import typed_stdio_server as server

from pytest_mcp_server.domain.tools import ExecuteResult

NUMBERS = """\
SEPARATOR = ","


def intcomma(value):
    text = str(value)
    if value < 0:
        return "-" + intcomma(-value)
    out = ""
    while len(text) > 3:
        out = SEPARATOR + text[-3:] + out
        text = text[:-3]
    return text + out


def clamp(value, low, high):
    if value < low:
        return low
    if value > high:
        return high
    return value
"""
TESTS = """\
import pytest

from pkg.numbers import clamp, intcomma


@pytest.mark.parametrize("n, text", [(1, "1"), (1000, "1,000"), (1234567, "1,234,567"), (-1000, "-1,000")])
def test_intcomma(n, text):
    assert intcomma(n) == text


def test_intcomma_in_a_sentence():
    assert f"total: {intcomma(5000)} items" == "total: 5,000 items"


@pytest.mark.parametrize("v, expected", [(5, 5), (-1, 0), (11, 10)])
def test_clamp(v, expected):
    assert clamp(v, 0, 10) == expected
"""
NEW_TEST = """\
from pkg.numbers import clamp


def test_clamp_new():
    assert clamp(3, 5, 10) == 6
"""
BUG_LINE = 10  # out = SEPARATOR + text[-3:] + out


def make_project(tmp_path: Path) -> Path:
    files = {"pkg/__init__.py": "", "pkg/numbers.py": NUMBERS, "tests/test_numbers.py": TESTS}
    return committed_project(tmp_path / "proj", files)


def map_tables(artifacts: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table of the one map under ``artifacts``, read without opening
    it for writing."""
    (map_file,) = (artifacts / "maps").glob("*.sqlite")
    con = sqlite3.connect(f"{map_file.as_uri()}?mode=ro", uri=True)
    try:
        names = [row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {name: sorted(con.execute(f"SELECT * FROM {name}").fetchall(), key=repr) for name in names}
    finally:
        con.close()


async def plain_run(client) -> tuple[ExecuteResult, str]:
    answer = await client.call_tool("execute_tests", {})
    assert not answer.is_error, text_of(answer)
    return ExecuteResult.model_validate(answer.structured_content), text_of(answer)


@pytest.fixture(params=["3.11", "3.12"])
def project_python(request: pytest.FixtureRequest) -> list[str]:
    """The server's ``--python`` option for each recorder: none (this 3.11, coverage.py's
    C tracer) or the 3.12 virtualenv (sys.monitoring)."""
    if request.param == "3.11":
        return []
    return ["--python", str(request.getfixturevalue("python312"))]


def test_a_plain_call_names_the_changed_line_the_map_saw_its_failing_tests_run(tmp_path, project_python):
    root = make_project(tmp_path)
    artifacts = tmp_path / "artifacts"
    numbers = root / "pkg" / "numbers.py"

    async def body():
        steps = {}
        async with connect(server(root, artifacts, *project_python), "auto") as client:
            steps["no_map"] = await plain_run(client)
            steps["built"] = await affected_run(client)
            steps["tables"] = map_tables(artifacts)
            edit(numbers, "out = SEPARATOR + text[-3:] + out", 'out = "." + text[-3:] + out')
            # another call writing the map meanwhile: the plain call reads what was committed, without waiting
            (map_file,) = (artifacts / "maps").glob("*.sqlite")
            writer = sqlite3.connect(map_file, isolation_level=None, timeout=1)
            writer.execute("BEGIN IMMEDIATE")
            writer.execute("INSERT INTO meta (key, value) VALUES ('held', 'by another call')")
            steps["bug"] = await plain_run(client)
            writer.execute("ROLLBACK")
            writer.close()
            steps["tables_after"] = map_tables(artifacts)
            (root / "tests" / "test_new.py").write_text(NEW_TEST)
            steps["new_test"] = await plain_run(client)
            edit(numbers, 'out = "." + text[-3:] + out', "out = SEPARATOR + text[-3:] + out")
            (root / "tests" / "test_new.py").unlink()
            edit(numbers, 'SEPARATOR = ","', 'SEPARATOR = "."')
            steps["constant"] = await plain_run(client)
        return steps

    steps = run(body)
    no_map, text = steps["no_map"]
    assert no_map.status == "passed" and no_map.suspects is None, text
    assert "{run_dir}/records.jsonl" in " ".join(no_map.command)  # the run directory written alike in both
    built, text = steps["built"]
    assert built.status == "passed" and built.summary.counts.passed == 8, text

    result, text = steps["bug"]
    assert result.summary.counts.failed == 4, text
    top = result.suspects[0]
    assert (top.path, top.lines, top.by) == ("pkg/numbers.py", str(BUG_LINE), "map_function"), text
    # the map recorded intcomma in the 5 intcomma tests: 4 fail now, test_intcomma[1-1] passes
    assert (top.failing, top.failing_total, top.passing, top.passing_total) == (4, 4, 1, 4)
    assert len(result.suspects) == 1
    lines = text.splitlines()
    assert lines[1] == (
        "changed code in a function failing tests ran (test map's last recording, not this run): "
        f"pkg/numbers.py:{BUG_LINE} (4 of 4 failing, 1 of 4 passing)"
    ), text
    # two assertion sites, one changed line: one group, one entry in full
    (group,) = result.summary.groups
    assert group.count == 4
    assert text.count("- FAILED ") == 1, text
    # the run was a plain one: pytest's command line is the one of a call with no map
    assert result.command == steps["no_map"][0].command
    assert not [arg for arg in result.command if arg.startswith(("--mcp-skip", "--mcp-map-data"))], result.command
    # the map is as the affected call left it
    assert steps["tables_after"] == steps["tables"]

    result, text = steps["new_test"]
    assert result.summary.counts.failed == 5, text
    top = result.suspects[0]
    # the new test counts among the failing ones, but the map never saw it run: no suspect from it
    assert (top.path, top.lines, top.failing, top.failing_total) == ("pkg/numbers.py", str(BUG_LINE), 4, 5), text
    assert "test_clamp_new" not in top.failing_tests

    result, text = steps["constant"]
    assert result.summary.counts.failed == 4, text
    top = result.suspects[0]
    # a module-level constant: the tests whose recorded code reads the name
    assert (top.path, top.lines, top.by, top.failing, top.passing) == ("pkg/numbers.py", "1", "map_name", 4, 1), text
    (group,) = result.summary.groups
    assert group.count == 4


def test_a_plain_call_outside_git_names_the_function_the_map_saw_change(tmp_path):
    """No diff to read: the functions whose fingerprints the map does not hold stand for
    the changed lines, as for an affected call, and the one the failing tests ran is
    named whole."""
    files = {"pkg/__init__.py": "", "pkg/numbers.py": NUMBERS, "tests/test_numbers.py": TESTS}
    root = committed_project(tmp_path / "proj", files, use_git=False)

    async def body():
        async with connect(server(root, tmp_path / "artifacts"), "auto") as client:
            await affected_run(client)
            edit(root / "pkg" / "numbers.py", "out = SEPARATOR + text[-3:] + out", 'out = "." + text[-3:] + out')
            return await plain_run(client)

    result, text = run(body)
    assert result.summary.counts.failed == 4, text
    # intcomma's body, lines 5-12; clamp did not change
    assert [(s.path, s.lines, s.by, s.failing) for s in result.suspects] == [
        ("pkg/numbers.py", "5-12", "map_function", 4)
    ]
    (group,) = result.summary.groups
    assert group.count == 4


def test_a_plain_call_without_a_map_answers_as_before(tmp_path):
    root = make_project(tmp_path)
    artifacts = tmp_path / "artifacts"
    edit(root / "pkg" / "numbers.py", "out = SEPARATOR + text[-3:] + out", 'out = "." + text[-3:] + out')

    async def body():
        async with connect(server(root, artifacts), "auto") as client:
            without = await plain_run(client)
            made = (artifacts / "maps").exists()  # a plain call makes no map
            # a file where the map would be that is no map: read as none, and left as it is
            await affected_run(client, node_ids=["tests/test_numbers.py::test_clamp"])
            (map_file,) = (artifacts / "maps").glob("*.sqlite")
            for extra in map_file.parent.glob(map_file.name + "-*"):
                extra.unlink()
            map_file.write_bytes(b"not a map")
            garbage = await plain_run(client)
            return without, made, garbage, map_file.read_bytes()

    (result, text), made, (garbage, garbage_text), left = run(body)
    assert result.summary.counts.failed == 4, text
    assert result.suspects is None and "changed code" not in text
    assert not made
    assert garbage.suspects is None and "changed code" not in garbage_text
    assert "test map" not in garbage_text
    assert left == b"not a map"


# -- Without the server: the hunks, the ranking and the read-only map on plain data ----

SOURCE = '''\
"""Module docstring."""
RATE = 3  # a constant


class Prices:
    TAX = 0.2

    @staticmethod
    def net(x):
        """Net price."""
        return x * (1 - Prices.TAX)


def outer(x):
    def inner(y):
        return y + RATE

    return inner(x)


def total(items,
          rate=RATE):
    # a comment
    return sum(items) * rate
'''


def hunks_of(ranges: dict[str, list[tuple[int, int]]]) -> list[tuple[str, str | None, frozenset[str]]]:
    from pytest_mcp_server.domain.blocks import file_blocks
    from pytest_mcp_server.domain.coverage_answer import ChangedLines
    from pytest_mcp_server.domain.suspects import changed_hunks

    changed = ChangedLines(ranges=ranges)
    found = changed_hunks(changed, {"m.py": SOURCE}, {"m.py": file_blocks(SOURCE.encode(), path="m.py")})
    return [(", ".join(map(str, h.lines)), h.function, h.names) for h in found]


def test_changed_lines_are_read_as_the_map_records_blocks():
    # the module docstring, a comment, a function's docstring: no executable line
    assert hunks_of({"m.py": [(1, 1), (10, 10), (23, 23)]}) == []
    # a constant: its name; a class attribute: its own name
    assert hunks_of({"m.py": [(2, 2)]}) == [("2", None, frozenset({"RATE"}))]
    assert hunks_of({"m.py": [(6, 6)]}) == [("6", None, frozenset({"TAX"}))]
    # a decorator, a method's body: the method (its fingerprint holds the decorator), one hunk
    assert hunks_of({"m.py": [(8, 8), (11, 11)]}) == [("8, 11", "Prices.net", frozenset())]
    # a nested function's def line and body are its own; the outer's last line is the outer's
    assert hunks_of({"m.py": [(15, 18)]}) == [
        ("15, 16", "outer.<locals>.inner", frozenset()),
        ("18", "outer", frozenset()),
    ]
    # a signature over two lines, a comment, the body: one function, one hunk
    assert hunks_of({"m.py": [(21, 24)]}) == [("21, 22, 24", "total", frozenset())]


def test_recorded_runs_rank_as_a_measured_run_ranks():
    from pytest_mcp_server.domain.suspects import ChangedHunk, RecordedRuns, rank_recorded

    outcomes = {"t::a": "failed", "t::b": "failed", "t::c": "passed", "t::d": "passed", "t::new": "failed"}
    hunks = [
        ChangedHunk("m.py", (11,), "Prices.net"),
        ChangedHunk("m.py", (24,), "total"),
        ChangedHunk("m.py", (2,), None, frozenset({"RATE"})),
        ChangedHunk("m.py", (16,), "outer.<locals>.inner"),
    ]
    recorded = RecordedRuns(
        functions={
            ("m.py", "Prices.net"): frozenset({"t::a", "t::c", "t::d"}),
            ("m.py", "total"): frozenset({"t::a", "t::b"}),
        },
        readers={"RATE": frozenset({"t::b", "t::c"})},
        at_import=frozenset({("m.py", "outer.<locals>.inner")}),
    )
    ranked = rank_recorded(hunks, recorded, outcomes, limit=4)
    got = [(s.lines, s.by, s.failing, s.passing, s.failing_total, s.passing_total) for s in ranked]
    assert got == [
        ("24", "map_function", 2, 0, 3, 2),  # 2 / sqrt(3 * 2)
        ("16", "map_import", 3, 2, 3, 2),  # 3 / sqrt(3 * 5): every test of the run
        ("2", "map_name", 1, 1, 3, 2),  # 1 / sqrt(3 * 2)
        ("11", "map_function", 1, 2, 3, 2),  # 1 / sqrt(3 * 3)
    ]
    assert ranked[0].failing_tests == {"t::a", "t::b"}  # t::new: the map never saw it run
    assert rank_recorded(hunks, recorded, {"t::c": "passed"}, limit=4) == []


def test_the_map_is_read_without_writing_or_waiting(tmp_path):
    from pytest_mcp_server.run.testmap import open_map, read_only_map

    assert read_only_map(tmp_path / "none.sqlite") is None
    foreign = tmp_path / "foreign.sqlite"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE meta (key TEXT, value TEXT)")
    con.commit()
    con.close()
    before = foreign.read_bytes()
    assert read_only_map(foreign) is None
    assert foreign.read_bytes() == before

    path = tmp_path / "maps" / "m.sqlite"
    test_map, _ = open_map(path)
    with test_map:
        test_map.refresh({"t::a": ("passed", [("m.py", "f1")])}, "config")
    reader = read_only_map(path)
    assert reader is not None
    with reader, reader.reading():
        assert reader.entries(["t::a", "t::b"]).keys() == {"t::a"}
        # a call writing the map while this read is open is not made to wait, and the read keeps its version
        writer, _ = open_map(path)
        with writer:
            writer.refresh({"t::b": ("failed", [("m.py", "f2")])}, "config")
        assert reader.entries(["t::a", "t::b"]).keys() == {"t::a"}
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            reader.connection.execute("DELETE FROM tests")
