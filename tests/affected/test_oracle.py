"""The selection against an oracle: on one project, a seeded sequence of generated edits
(constants, a derived constant, a table entry, class attributes, a subclass's attribute,
docstrings, a name entering and leaving ``__all__`` behind a star import, a conftest
fixture, a helper module under ``tests/``, the keys of a registry filled at import by a
decorator and by ``__init_subclass__``, comments and unrelated names), each followed
by an affected call through the real server over real stdio and by a full run of the
suite. Every test whose outcome differs between the full runs before and after an edit
(or that is new) must have been run by the affected call: the rules may select more,
never fewer.

The project's tests assert the values the project had when it was made, so an edit
that changes a value a test reads makes that test fail, and reverting it makes it pass.

Kept small for CI (``ORACLE_EDITS``, per recorder); ``PYTEST_MCP_ORACLE_EDITS=200``
runs a longer sequence (and ``PYTEST_MCP_ORACLE_SEED`` another one).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.affected_support import affected_run
from helpers.server_support import TYPED, committed_project, connect, run
from helpers.server_support import stdio_server as server

from pytest_mcp_server.run.argv import child_env
from pytest_mcp_server.run.events import PLUGIN_NAME

ORACLE_EDITS = {"3.12": 10, "3.11": 6}
"""Edits per recorder in a normal run (each costs an affected call and a full run)."""

INITIAL = {
    "rate": 2,
    "scale": 10,
    "ta": 1,
    "tb": 2,
    "factor": 3,
    "sides": 4,
    "kind": "square",
    "doc": "A shape.",
    "ops_doc": "Rated.",
    "exported": False,
    "base": 5,
    "limit": 7,
    "noise": 0,
    "extra_name": 0,
    "reg_key": "hello",
    "plugin_key": "json",
    "plugin_tag": "fast",
}


def project_files(k: dict) -> dict[str, str]:
    """The project's files with the knobs ``k``; its tests assert ``INITIAL``'s values."""
    i = INITIAL
    exports = ["rated", "table", "derived"] + (["extra"] if k["exported"] else [])
    return {
        "pkg/__init__.py": "from .ops import *\n",
        "pkg/consts.py": (
            f'"""Constants."""\nRATE = {k["rate"]}\nSCALE = {k["scale"]}\n'
            f'TABLE = {{"a": {k["ta"]}, "b": {k["tb"]}}}\nDERIVED = RATE * {k["factor"]}\n'
            + "".join(f"UNUSED_{n} = {n}\n" for n in range(k["extra_name"]))
        ),
        "pkg/shapes.py": (
            "from pkg.consts import SCALE\n\n\n"
            f'class Shape:\n    """{k["doc"]}"""\n\n    sides = {k["sides"]}\n    unit = "cm"\n\n'
            "    def area(self):\n        return self.sides * SCALE\n\n\n"
            f'class Square(Shape):\n    kind = "{k["kind"]}"\n' + f"# noise {k['noise']}\n"
        ),
        "pkg/ops.py": (
            f"from .consts import DERIVED, RATE, TABLE\n\n__all__ = {exports!r}\n\n\n"
            f'def rated(x):\n    """{k["ops_doc"]}"""\n    return x * RATE\n\n\n'
            "def table(key):\n    return TABLE[key]\n\n\n"
            "def derived():\n    return DERIVED\n\n\n"
            "def extra():\n    return 1\n"
        ),
        # a registry filled at import, by a decorator and by __init_subclass__
        "pkg/registry.py": (
            "REGISTRY = {}\n\n\ndef register(name):\n    def deco(f):\n        REGISTRY[name] = f\n"
            "        return f\n\n    return deco\n\n\nclass Plugin:\n    def __init_subclass__(cls, **kw):\n"
            "        REGISTRY['plugin:' + cls.key] = cls\n"
            "        for value in vars(cls).values():\n            if isinstance(value, str):\n"
            "                REGISTRY['value:' + value] = cls\n"
        ),
        "pkg/plugins.py": (
            "from .registry import Plugin, register\n\n\n"
            f"@register({k['reg_key']!r})\ndef hello():\n    return 'hi'\n\n\n"
            f"class Json(Plugin):\n    key = {k['plugin_key']!r}\n    tag = {k['plugin_tag']!r}\n"
        ),
        "tests/test_registry.py": (
            "import pkg.plugins  # noqa: F401\nfrom pkg.registry import REGISTRY\n\n\n"
            f"def test_registered():\n    assert {i['reg_key']!r} in REGISTRY\n\n\n"
            f"def test_plugin():\n    assert {'plugin:' + i['plugin_key']!r} in REGISTRY\n\n\n"
            f"def test_tagged():\n    assert {'value:' + i['plugin_tag']!r} in REGISTRY\n"
        ),
        "tests/helpers.py": f"LIMIT = {k['limit']}\n\n\ndef limit():\n    return LIMIT\n",
        "tests/conftest.py": (
            "import sys\nfrom pathlib import Path\n\nimport pytest\n\n"
            "sys.path.insert(0, str(Path(__file__).parents[1]))\nsys.path.insert(0, str(Path(__file__).parent))\n\n\n"
            f"@pytest.fixture(scope='session')\ndef base():\n    return {k['base']}\n"
        ),
        "tests/test_values.py": (
            "import pkg\nfrom pkg.ops import derived, rated, table\n\n\n"
            f"def test_rated():\n    assert rated(2) == {2 * i['rate']}\n\n\n"
            f"def test_table_a():\n    assert table('a') == {i['ta']}\n\n\n"
            f"def test_table_b():\n    assert table('b') == {i['tb']}\n\n\n"
            f"def test_derived():\n    assert derived() == {i['rate'] * i['factor']}\n\n\n"
            f"def test_star():\n    assert hasattr(pkg, 'extra') is {i['exported']}\n\n\n"
            f"def test_rated_doc():\n    assert rated.__doc__ == {i['ops_doc']!r}\n\n\n"
            "def test_plain():\n    assert True\n"
        ),
        "tests/test_shapes.py": (
            "from pkg.shapes import Shape, Square\n\n\n"
            f"def test_area():\n    assert Shape().area() == {i['sides'] * i['scale']}\n\n\n"
            f"def test_kind():\n    assert Square.kind == {i['kind']!r}\n\n\n"
            f"def test_doc():\n    assert Shape.__doc__ == {i['doc']!r}\n\n\n"
            "def test_unit():\n    assert Square().unit == 'cm'\n"
        ),
        "tests/test_fixtures.py": (
            "from helpers import limit\n\n\n"
            f"def test_base(base):\n    assert base == {i['base']}\n\n\n"
            f"def test_base_again(base):\n    assert base > 0 and base == {i['base']}\n\n\n"
            f"def test_limit():\n    assert limit() == {i['limit']}\n"
        ),
    }


def edit_knob(knobs: dict, rng: random.Random) -> str:
    """Change one knob (a new value, or back to its first one); returns its name."""
    name = rng.choice(sorted(INITIAL))
    value = knobs[name]
    if name == "exported":
        knobs[name] = not value
    elif name in ("kind", "doc", "ops_doc", "reg_key", "plugin_key", "plugin_tag"):
        knobs[name] = rng.choice([INITIAL[name], INITIAL[name] + " x", INITIAL[name].upper()])
    elif name in ("noise", "extra_name"):
        knobs[name] = (value + 1) % 3
    else:
        knobs[name] = rng.choice([INITIAL[name], value + 1, value - 1])
    return name


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)


def outcomes(records: Path) -> dict[str, str]:
    """Each test's outcome in a record file (failed if any phase failed)."""
    found: dict[str, str] = {}
    for line in records.read_text().splitlines():
        record = json.loads(line)
        if record.get("$report_type") != "TestReport":
            continue
        node_id, outcome = record["nodeid"], record["outcome"]
        if outcome == "failed" or node_id not in found:
            found[node_id] = "failed" if outcome == "failed" else found.get(node_id, outcome)
    return found


def full_run(python: str, root: Path, records: Path) -> dict[str, str]:
    records.unlink(missing_ok=True)
    subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", PLUGIN_NAME, f"--mcp-records={records}"],
        cwd=root,
        env=child_env(),
        capture_output=True,
        check=False,
    )
    return outcomes(records)


@pytest.fixture(params=["3.12", "3.11"])
def recorder(request: pytest.FixtureRequest) -> tuple[str, list[str]]:
    """The recorder's version, the project's interpreter and the server's options."""
    if request.param == "3.11":
        return request.param, [sys.executable]
    python = str(request.getfixturevalue("python312"))
    return request.param, [python, "--python", python]


def test_every_test_whose_outcome_an_edit_changes_is_selected(tmp_path, recorder):
    version, (python, *options) = recorder
    edits = int(os.environ.get("PYTEST_MCP_ORACLE_EDITS") or ORACLE_EDITS[version])
    rng = random.Random(int(os.environ.get("PYTEST_MCP_ORACLE_SEED") or 40))
    knobs = dict(INITIAL)
    root = committed_project(tmp_path / "oracle", project_files(knobs))
    artifacts = tmp_path / "artifacts"
    records = tmp_path / "full.jsonl"

    async def body():
        misses = []
        async with connect(server(root, artifacts, *TYPED, *options), "auto") as client:
            first, text = await affected_run(client)
            assert first.summary.counts.passed == 17, text
            before = full_run(python, root, records)
            for step in range(edits):
                changed = edit_knob(knobs, rng)
                write(root, project_files(knobs))
                result, text = await affected_run(client)
                ran = set(outcomes(Path(result.report_path)))
                after = full_run(python, root, records)
                must = {t for t in after if after[t] != before.get(t)}
                if must - ran:
                    misses.append((step, changed, dict(knobs), sorted(must - ran), text))
                before = after
        return misses

    misses = run(body)
    assert misses == []
