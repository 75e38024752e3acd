"""Per-name reach of module-level changes, through the real server over real stdio, on
both recorders (sys.monitoring in a real CPython 3.12 virtualenv, coverage.py's C tracer
on this 3.11).

What an agent relies on: a change to module-level code selects the tests that read what
it binds, not every test that imports its module:

* a module-level constant read by one of three tests selects that test;
* a function added to ``__all__`` and star-imported by the package selects only the new
  test that uses it;
* a class attribute selects the tests that read it or ran the class's code;
* a statement run at import in a plugin module loaded by ``import_module`` with a computed
  relative name selects the tests of its importers (the loader's), not every test: the
  computed name is bounded to the package's modules, and a computed ``__import__`` in a
  file no test ever ran blinds nothing;
* a docstring-only edit selects nothing (no doctest, nothing reads ``__doc__``), and no
  pytest starts;
* a change to a conftest's session fixture selects the tests whose fixture closure holds
  it, not only the first, for which its body ran;
* a helper module under ``tests/`` imported by the conftest is source like any other:
  its constant selects the test that reads it.
"""

from __future__ import annotations

import pytest
from helpers.affected_support import affected_run, edit, ran, reasons
from helpers.server_support import TYPED, committed_project, connect, run
from helpers.server_support import stdio_server as server

CORE = '''\
__all__ = ["area", "rated", "scaled", "Shape"]

RATE = 2
SCALE = 10


def area(w, h):
    """The area of a w by h rectangle."""
    return w * h


def rated(x):
    return x * RATE


def scaled(x):
    return x * SCALE


class Shape:
    """A shape with sides."""

    sides = 4
    name = "square"

    def describe(self):
        return f"a {self.name}"
'''
FILES = {
    "pkg/__init__.py": "from .core import *\n",
    "pkg/core.py": CORE,
    "pkg/plugins/__init__.py": (
        "import importlib\n\n\ndef load(name):\n    return importlib.import_module(f'.{name}', __package__)\n"
    ),
    "pkg/plugins/alpha.py": "import sys\n\nVALUE = 1\nsys.modules[__name__].LOADED = True\n",
    # a computed import in a file no test runs
    "examples/cli.py": "def main(name):\n    return __import__(name)\n",
    "tests/helpers.py": "LIMIT = 5\nWIDTH = 3\n\n\ndef limit():\n    return LIMIT\n",
    "tests/conftest.py": (
        "import sys\nfrom pathlib import Path\n\nimport pytest\n\n"
        "sys.path.insert(0, str(Path(__file__).parents[1]))\n"
        "sys.path.insert(0, str(Path(__file__).parent))\n\n"
        "import helpers  # noqa: E402\n\n\n"
        "@pytest.fixture(scope='session')\ndef base():\n    return 3\n\n\n"
        "@pytest.fixture\ndef other():\n    return helpers.WIDTH + 1\n"
    ),
    "tests/test_rate.py": (
        "from pkg.core import area, rated, scaled\n\n\n"
        "def test_rated():\n    assert rated(2) == 4\n\n\n"
        "def test_scaled():\n    assert scaled(2) == 20\n\n\n"
        "def test_area():\n    assert area(2, 3) == 6\n"
    ),
    "tests/test_shape.py": (
        "from pkg import Shape\n\n\n"
        "def test_sides():\n    assert Shape.sides == 4\n\n\n"
        "def test_describe():\n    assert Shape().describe() == 'a square'\n"
    ),
    "tests/test_plugins.py": (
        "from pkg.plugins import load\n\n\ndef test_alpha():\n    assert load('alpha').VALUE == 1\n"
    ),
    "tests/test_fixtures.py": (
        "def test_base(base):\n    assert base == 3\n\n\ndef test_base_again(base):\n    assert base > 2\n\n\n"
        "def test_other(other):\n    assert other == 4\n"
    ),
    "tests/test_helpers.py": (
        "from helpers import limit\n\n\ndef test_limit():\n    assert limit() == 5\n\n\n"
        "def test_plain():\n    assert True\n"
    ),
}
NEW_TEST = "from pkg import perimeter\n\n\ndef test_perimeter():\n    assert perimeter(1, 2) == 6\n"


@pytest.fixture(params=["3.11", "3.12"])
def project_python(request: pytest.FixtureRequest) -> list[str]:
    """The server's ``--python`` option for each recorder: none (this 3.11, coverage.py's
    C tracer) or the 3.12 virtualenv (sys.monitoring)."""
    if request.param == "3.11":
        return []
    return ["--python", str(request.getfixturevalue("python312"))]


def selected(result) -> list[str]:  # noqa: ANN001 - ExecuteResult
    """The node ids a run ran, from its command's record file."""
    import json
    from pathlib import Path

    ids = []
    for line in Path(result.report_path).read_text().splitlines():
        record = json.loads(line)
        if record.get("$report_type") == "TestReport" and record.get("when") == "call":
            ids.append(record["nodeid"])
    return sorted(ids)


def test_a_module_level_change_selects_the_tests_that_read_what_it_binds(tmp_path, project_python):
    root = committed_project(tmp_path / "names", FILES)
    artifacts = tmp_path / "artifacts"
    core = root / "pkg" / "core.py"

    async def body():
        steps = {}
        async with connect(server(root, artifacts, *TYPED, *project_python), "auto") as client:
            steps["first"] = await affected_run(client)
            edit(core, "RATE = 2", "RATE = 1 + 1")
            steps["constant"] = await affected_run(client)
            edit(core, '"Shape"]', '"Shape", "perimeter"]')
            edit(core, "def rated(x):", "def perimeter(w, h):\n    return 2 * (w + h)\n\n\ndef rated(x):")
            (root / "tests" / "test_perimeter.py").write_text(NEW_TEST)
            steps["exported"] = await affected_run(client)
            edit(core, "sides = 4", "sides = 2 + 2")
            steps["class_attribute"] = await affected_run(client)
            edit(root / "pkg" / "plugins" / "alpha.py", ".LOADED = True", ".LOADED = 1")
            steps["computed_relative_import"] = await affected_run(client)
            edit(core, '"""A shape with sides."""', '"""A shape, with its sides."""')
            edit(core, '"""The area of a w by h rectangle."""', '"""The area of a rectangle."""')
            steps["docstrings"] = await affected_run(client)
            edit(root / "tests" / "conftest.py", "    return 3\n", "    return 1 + 2\n")
            steps["fixture"] = await affected_run(client)
            edit(root / "tests" / "helpers.py", "LIMIT = 5", "LIMIT = 4 + 1")
            steps["helper_module"] = await affected_run(client)
            steps["unchanged"] = await affected_run(client)
        return steps

    steps = run(body)
    first, text = steps["first"]
    assert ran(first) == (11, 0), text

    def only(name: str, *node_ids: str, new: int = 0) -> None:
        result, text = steps[name]
        assert selected(result) == sorted(node_ids), (name, text)
        assert ran(result) == (len(node_ids), 0), (name, text)
        expected = {"changed": len(node_ids) - new, "new": new}
        assert reasons(result) == {k: v for k, v in expected.items() if v}, (name, text)

    only("constant", "tests/test_rate.py::test_rated")
    only("exported", "tests/test_perimeter.py::test_perimeter", new=1)
    only("class_attribute", "tests/test_shape.py::test_describe", "tests/test_shape.py::test_sides")
    only("computed_relative_import", "tests/test_plugins.py::test_alpha")
    docstrings, text = steps["docstrings"]
    assert docstrings.status == "no_tests" and docstrings.selection.pytest_started is None, text
    # the session fixture's body ran for test_base only; test_base_again holds it in its closure
    only("fixture", "tests/test_fixtures.py::test_base", "tests/test_fixtures.py::test_base_again")
    only("helper_module", "tests/test_helpers.py::test_limit")
    unchanged, text = steps["unchanged"]
    assert unchanged.status == "no_tests" and unchanged.selection.pytest_started is None, text


def test_a_deleted_conftest_whose_hook_ran_outside_tests_is_forgotten_after_the_call_that_saw_it_go(
    tmp_path, project_python
):
    """attrs deleted its root conftest.py (a ``pytest_configure``): the code it ran at
    configure, outside any test, stayed in the map's import code for good, so every later
    call saw that file changed and selected every test (the history replay, 47 of 50
    commits). The call that sees it gone runs what it reached; the next answers without
    pytest."""
    root = committed_project(
        tmp_path / "gone",
        {
            **FILES,
            "conftest.py": (
                "def pytest_configure(config):\n    config.addinivalue_line('markers', 'slow: a slow test')\n"
            ),
        },
    )
    artifacts = tmp_path / "artifacts"

    async def body():
        async with connect(server(root, artifacts, *TYPED, *project_python), "auto") as client:
            first = await affected_run(client)
            (root / "conftest.py").unlink()
            deleted = await affected_run(client)
            after = await affected_run(client)
        return first, deleted, after

    (first, text), (deleted, deleted_text), (after, after_text) = run(body)
    assert ran(first) == (11, 0), text
    assert ran(deleted) == (11, 0), deleted_text
    assert after.status == "no_tests" and after.selection.pytest_started is None, after_text
