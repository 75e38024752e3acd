"""The sys.monitoring recorder writes a function's run as its entry, and the blocks the
server reads from that are the ones its lines give.

Real pytest in a real CPython 3.12 virtualenv (``python312``) with the server's plugin
recording (``--mcp-map-data``), its files read as an affected call reads them
(``read_map_data``, ``tests_blocks``): once with functions written as entries (the
default), once with the module named in ``LINE_SPANS_FILE`` with None (every line
written), once with one span (the lines of the function starting in it, and of the
function nested in it; entries elsewhere). All three must give each test the same
blocks: decorated functions, a one-line nested function, a generator resumed by a later
test, a lambda and a class body (lines either way).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from pytest_mcp_server.domain.blocks import MODULE_BLOCK
from pytest_mcp_server.run.events import PLUGIN_DIR
from pytest_mcp_server.run.recording import MAP_DATA_DIR, read_blocks, read_map_data, write_line_spans
from pytest_mcp_server.run.recording import tests_blocks as run_blocks

MOD = """\
import functools


def deco(f):
    @functools.wraps(f)
    def wrapper(*args):
        return f(*args)
    return wrapper


@deco
@deco
def decorated(x):
    return x + 1


def outer():
    def inner(): return 4
    return inner()


def gen():
    yield 1
    yield 2


def untouched():
    return 0


square = lambda x: x * x


class Shape:
    sides = 4

    def area(self):
        return self.sides * 2
"""
TESTS = """\
from pkg import mod

G = mod.gen()


def test_decorated():
    assert mod.decorated(1) == 2


def test_outer():
    assert mod.outer() == 4


def test_gen_start():
    assert next(G) == 1


def test_gen_resume():
    assert next(G) == 2


def test_lambda():
    assert mod.square(3) == 9


def test_area():
    assert mod.Shape().area() == 8
"""


def _record(
    root: Path, python: Path, run: Path, spans: list[tuple[int, int]] | None | str
) -> tuple[dict[str, set[str]], set[int]]:
    """Run the suite with the recorder into ``run``, ``mod.py``'s spans named in
    ``LINE_SPANS_FILE`` (``"none"``: the module not named); each test's blocks as names,
    and the lines of ``mod.py`` written for any context (an entry as its negative)."""
    (run / MAP_DATA_DIR).mkdir(parents=True)
    module = str(root / "pkg" / "mod.py")
    write_line_spans(run, {} if spans == "none" else {module: spans})
    env = dict(os.environ, PYTHONPATH=str(PLUGIN_DIR))
    argv = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "pytest_mcp_server_events"]
    done = subprocess.run([*argv, f"--mcp-map-data={run / MAP_DATA_DIR}"], cwd=root, env=env, capture_output=True)
    assert done.returncode == 0, done.stdout.decode()[-2000:]
    data = read_map_data(run)
    assert data.problems == [] and data.recorders == ["sys.monitoring"]
    written = {n for per in data.lines[module].values() for n in per}
    ids = [f"tests/test_mod.py::{name}" for name in TESTS.split("def ")[1:] for name in [name.split("(")[0]]]
    blocks = run_blocks(data.lines, root, ids)
    mod = read_blocks(root, "pkg/mod.py")
    assert mod is not None
    names = {b.fingerprint: b.name for b in [mod.module, *mod.functions]}
    by_test = {
        t.split("::")[1]: {names[fp] for path, fp in found if path == "pkg/mod.py"} for t, found in blocks.tests.items()
    }
    return by_test, written


def test_a_functions_entry_gives_the_blocks_its_lines_give(tmp_path: Path, python312: Path):
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "mod.py").write_text(MOD)
    (root / "tests" / "test_mod.py").write_text(TESTS)
    outer = (MOD.splitlines().index("def outer():") + 1, MOD.splitlines().index("def gen():") - 1)
    entries, entries_written = _record(root, python312, tmp_path / "entries", "none")
    lines, lines_written = _record(root, python312, tmp_path / "lines", None)
    spanned, spanned_written = _record(root, python312, tmp_path / "spans", [outer])
    assert entries == lines == spanned
    assert entries == {
        "test_decorated": {"deco.<locals>.wrapper", "decorated"},
        "test_outer": {"outer", "outer.<locals>.inner"},
        "test_gen_start": {"gen"},
        "test_gen_resume": {"gen"},  # resumed: its entry again, in this test
        "test_lambda": {MODULE_BLOCK},  # a lambda is module-level code
        "test_area": {"Shape.area"},
    }
    # what was written: entries for every function, or lines for every one, or lines for
    # outer and the function nested in it and entries for the others
    decorated, gen = MOD.splitlines().index("@deco") + 1, outer[1] + 2
    inner_body = outer[0] + 1
    assert -outer[0] in entries_written and -gen in entries_written and inner_body not in entries_written
    assert not any(n < 0 for n in lines_written) and inner_body in lines_written
    assert inner_body in spanned_written and -outer[0] not in spanned_written and -inner_body not in spanned_written
    assert -decorated in spanned_written and -gen in spanned_written and gen + 1 not in spanned_written


def test_the_recorder_reads_the_spans_file_or_records_entries_everywhere(tmp_path: Path):
    """``LINE_SPANS_FILE`` as the recorder reads it (``_line_spans``): paths normalized,
    a file named with None (every function) or spans; a file missing, unreadable or of
    another shape gives no spans at all (entries everywhere: the map's blocks stay right,
    only a failure's suspects lose their lines), never an error inside pytest."""
    from pytest_mcp_server.run.pytest_plugin import pytest_mcp_server_recorder as recorder
    from pytest_mcp_server.run.pytest_plugin.pytest_mcp_server_shared import LINE_SPANS_FILE

    spans_file = tmp_path / LINE_SPANS_FILE
    assert recorder._line_spans(str(tmp_path)) == {}
    spans_file.write_text('{"/p/./a.py": null, "/p/b.py": [[3, 7], [10, 12]]}')
    read = recorder._line_spans(str(tmp_path))
    assert read == {"/p/a.py": None, "/p/b.py": ((3, 7), (10, 12))}
    assert recorder._lines_asked(read, "/p/a.py", 99) and recorder._lines_asked(read, "/p/b.py", 7)
    assert not recorder._lines_asked(read, "/p/b.py", 8) and not recorder._lines_asked(read, "/p/c.py", 3)
    assert not recorder._lines_asked(read, None, 3)
    for other in ('["/p/a.py"]', '{"/p/b.py": [[3]]}', '{"/p/b.py": [["3", 7]]}', "not json"):
        spans_file.write_text(other)
        assert recorder._line_spans(str(tmp_path)) == {}
