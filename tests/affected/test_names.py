"""Per-name reach on its own: the module-level elements a file is cut into
(``domain.elements.module_elements``), the names a block refers to (a superset of what
CPython compiles into its code objects' ``co_names``), and each element rule
(``domain.reach``: one per kind, with the propagation of a changed name through the
statements that read it)."""

from __future__ import annotations

import ast
import types

import pytest

from pytest_mcp_server.domain.blocks import file_blocks
from pytest_mcp_server.domain.elements import COMPUTED, module_elements, referenced_names
from pytest_mcp_server.domain.reach import (
    EVERY_TEST,
    BlockFacts,
    Changes,
    ElementChange,
    Importers,
    MapSnapshot,
    Reach,
    ReachInput,
    TestEntry,
    element_changes,
    elements_rule,
    fixtures_rule,
    importing,
    propagate,
)

SOURCE = '''\
"""The module."""
import os
from dataclasses import dataclass

from pkg import util

__all__ = ["area", "Shape"]
RATE = 2
DOUBLE = RATE * 2
TABLE = {"a": 1}
TABLE["b"] = 2
register(area)


def area(w, h=RATE):
    """The area."""
    return w * h * SCALE


@dataclass(slots=True)
class Shape(util.Base):
    """A shape."""

    sides: int = 4

    def describe(self):
        """Describe it."""
        return getattr(self, "sides")
'''


def elements(source: str) -> dict[str, tuple]:
    return {
        e.key: (e.kind, e.fingerprint, sorted(e.names), e.owner, e.calls)
        for e in module_elements("m.py", ast.parse(source))
    }


def test_a_file_is_cut_into_keyed_elements_and_an_edit_changes_only_its_own():
    found = elements(SOURCE)
    kinds = {key: value[0] for key, value in found.items()}
    assert {k: v for k, v in kinds.items() if not k.startswith("!")} == {
        "__doc__": "doc",
        "os": "binding",
        "dataclass": "binding",
        "util": "binding",
        "__all__": "binding",
        "*area": "export",
        "*Shape": "export",
        "RATE": "binding",
        "DOUBLE": "binding",
        "TABLE": "binding",
        "area": "function",
        "area.__doc__": "doc",
        "Shape": "class",
        "Shape.__doc__": "doc",
        "Shape.sides": "class",
        "Shape.describe": "class",
        "Shape.describe.__doc__": "doc",
    }
    (effect,) = [value for key, value in found.items() if key.startswith("!")]
    assert effect[0] == "effect"  # register(area): run for its effect
    assert found["Shape"][4] == ("dataclasses", "pkg")  # its decorator and its base call code of theirs
    # making the class runs its decorator and its base's __init_subclass__ on its body: the body shares its calls
    assert found["Shape.sides"][2:] == (["Shape", "sides"], "Shape", ("dataclasses", "pkg"))

    def changed(old: str, new: str) -> set[str]:
        after = elements(SOURCE.replace(old, new))
        return {
            k for k in found.keys() | after.keys() if found.get(k, (None, None))[1] != after.get(k, (None, None))[1]
        }

    assert changed("RATE = 2", "RATE = 3") == {"RATE"}
    assert changed('TABLE["b"] = 2', 'TABLE["b"] = 3') == {"TABLE"}  # a store into it is its too
    assert changed('"""A shape."""', '"""A shape, with sides."""') == {"Shape.__doc__"}
    assert changed("sides: int = 4", "sides: int = 5") == {"Shape.sides"}
    assert changed("@dataclass(slots=True)", "@dataclass") == {"Shape"}
    assert changed("h=RATE", "h=3") == {"area"}  # a default is the def's header
    assert changed("return w * h * SCALE", "return w * h") == set()  # the body is the function's block
    assert changed('["area", "Shape"]', '["area", "Shape", "perimeter"]') == {"__all__", "*perimeter"}
    # each name an import binds is its own: one name dropped from it changes no other
    assert changed("import os\n", "import os, sys as system\n") == {"system"}
    assert changed("from dataclasses import dataclass", "from dataclasses import dataclass, field") == {"field"}


def test_docstrings_and_comments_leave_a_blocks_fingerprint_as_it_was():
    before = file_blocks(SOURCE.encode())
    after = file_blocks(SOURCE.replace('"""The area."""', '"""The area of w by h."""').encode())
    assert before.fingerprints() == after.fingerprints()
    edited = file_blocks(SOURCE.replace("return w * h * SCALE", "return w * h").encode())
    assert {b.name for b in edited.functions if b.fingerprint not in before.fingerprints()} == {"area"}


CODE_SAMPLES = [
    SOURCE,
    "import json\n\ndef f(x):\n    return json.dumps({'a': x.attr.inner}, default=str)\n",
    "class A:\n    def m(self):\n        global G\n        G = [y.z for y in self.items if y]\n"
    "        return lambda q: q.w\n",
    "def g():\n    from pkg.mod import thing as t\n    import os.path\n    return t(os.path.join('a', 'b'))\n",
    "async def h(a):\n    async with a.lock as l:\n        await l.go(key=1)\n"
    "    try:\n        pass\n    except E as e:\n        raise R from e\n",
]


@pytest.mark.parametrize("source", CODE_SAMPLES)
def test_a_blocks_names_hold_every_name_its_code_objects_refer_to(source):
    """The names of each function block are a superset of the ``co_names`` (globals,
    attributes, imports) of the code objects CPython compiles for it."""
    blocks = file_blocks(source.encode())
    classes = {n.name for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef)}
    code = compile(source, "m.py", "exec")
    todo = [code]
    while todo:
        current = todo.pop()
        todo.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
        if current.co_name in ("<module>", "<lambda>", "<listcomp>", "<genexpr>", "<dictcomp>", "<setcomp>"):
            continue  # the module's code, or part of a function's block
        if current.co_qualname.rpartition(".")[2] in classes:
            continue  # a class body: its statements are elements (domain.elements)
        block = blocks.named(current.co_qualname)
        assert block is not None, current.co_qualname
        assert set(current.co_names) <= block.names, (current.co_qualname, set(current.co_names) - block.names)


@pytest.mark.parametrize(
    ("code", "blind"),
    [
        (
            "import pkg\ndef f(n):\n    return getattr(pkg, n)\n",
            "line:3 calls getattr on a module with a computed name",
        ),
        ("def f(n):\n    return globals()[n]\n", "line:2 calls globals()"),
        ("import sys\ndef f(n):\n    return sys.modules[n]\n", "line:3 reads sys.modules"),
        (
            "import importlib\ndef f(m, n):\n    return getattr(importlib.import_module(m), n)\n",
            "line:3 calls getattr on a module with a computed name",
        ),
        # an object's attributes by a computed name, a module named in the code: not a module's names
        ("def f(self, n):\n    return getattr(self, n)\n", None),
        ("import sys\ndef f():\n    return sys.modules[__name__].X\n", None),
    ],
)
def test_code_reading_a_modules_names_by_a_computed_name_is_blind(code, blind):
    tree = ast.parse(code)
    modules = frozenset(a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names)
    assert referenced_names([tree], modules)[1] == blind


# -- the rules ------------------------------------------------------------------------

CORE = "RATE = 2\nDOUBLE = RATE * 2\nOTHER = 1\n"
HELPERS = "from core import DOUBLE\nTABLE = build()\n"


def given_map(**more) -> ReachInput:
    """A map of five tests: one reads RATE (through a block), one DOUBLE, one TABLE, one
    ran a method of Shape, one is a doctest of core.py."""
    blocks = {
        1: ("core.py", "rated"),
        2: ("core.py", "doubled"),
        3: ("t.py", "t"),
        4: ("shapes.py", "m"),
        5: ("h.py", "b"),
    }
    facts = {
        1: BlockFacts(frozenset({"RATE", "x"}), name="rated"),
        2: BlockFacts(frozenset({"DOUBLE"}), name="doubled"),
        3: BlockFacts(frozenset({"assert"})),
        4: BlockFacts(frozenset({"self", "sides"}), name="Shape.area"),
        5: BlockFacts(frozenset({"RATE", "register"}), name="build"),
    }
    tests = {
        "t.py::test_rate": TestEntry("passed", "c", frozenset({1, 3})),
        "t.py::test_double": TestEntry("passed", "c", frozenset({2, 3})),
        "t.py::test_table": TestEntry("passed", "c", frozenset({3}), frozenset({"TABLE"})),
        "t.py::test_shape": TestEntry("passed", "c", frozenset({4})),
        "core.py::core.rated": TestEntry("passed", "c", frozenset({1, 2})),  # a doctest
    }
    snapshot = MapSnapshot(blocks, tests, more.pop("import_code", {}))
    current = {
        "core.py": module_elements("core.py", ast.parse(CORE)),
        "helpers.py": module_elements("helpers.py", ast.parse(HELPERS)),
    }
    return ReachInput(snapshot, lambda path: Importers(frozenset({path, "t.py"})), facts, current, **more)


def change(path: str, old: str, new: str) -> Changes:
    before = module_elements(path, ast.parse(old))
    after = module_elements(path, ast.parse(new))
    return Changes(elements=element_changes({path: before}, {path: after}))


def test_a_changed_name_reaches_its_readers_and_what_is_computed_from_it():
    given = given_map()
    changes = change("core.py", CORE, CORE.replace("RATE = 2", "RATE = 3"))
    found, everyone = propagate(changes, given)
    assert [(c.path, c.key, c.derived) for c in found] == [
        ("core.py", "RATE", False),
        ("core.py", "DOUBLE", True),  # DOUBLE = RATE * 2
        ("helpers.py", "DOUBLE", True),  # from core import DOUBLE
    ]
    assert not everyone
    reached = elements_rule(changes, given)
    assert reached.tests == {
        "t.py::test_rate": {"core.py"},
        "t.py::test_double": {"core.py"},
        "core.py::core.rated": {"core.py"},
    }


def test_code_run_at_import_that_reads_a_changed_name_carries_it_further():
    # helpers.py's import ran build(), which reads RATE: what helpers binds by calling code is changed
    code = {importing("helpers.py"): frozenset({("h.py", "b")})}
    given = given_map(import_code=code)
    changes = change("core.py", CORE, CORE.replace("RATE = 2", "RATE = 3"))
    found, _ = propagate(changes, given)
    assert ("helpers.py", "TABLE") in {(c.path, c.key) for c in found}
    # TABLE = build() calls project code in a module whose import ran project code: its importers
    assert elements_rule(changes, given).tests["t.py::test_table"] == {"core.py"}
    everyone = given_map(import_code={EVERY_TEST: frozenset({("h.py", "b")})})
    assert elements_rule(changes, everyone).everyone == {"core.py"}


def test_each_kind_of_element_has_its_rule():
    given = given_map()

    def reached(path: str, old: str, new: str) -> Reach:
        return elements_rule(change(path, old, new), given)

    # a class attribute: the tests that ran the class's code or refer to the class or attribute
    shapes = "class Shape:\n    sides = 4\n"
    assert set(reached("shapes.py", shapes, shapes.replace("4", "5")).tests) == {"t.py::test_shape"}
    # a docstring: the doctests of its file, nothing else here (nothing reads __doc__)
    doc = '"""Core."""\nRATE = 2\n'
    assert set(reached("core.py", doc, doc.replace("Core.", "The core.")).tests) == {"core.py::core.rated"}
    # a conftest's hook reaches every test; its autouse fixture, the tests below it
    hook = "def pytest_configure(config):\n    pass\n"
    assert set(reached("conftest.py", "", hook).tests) == set(given.snapshot.tests)
    autouse = "import pytest\n@pytest.fixture(autouse=True)\ndef env():\n    pass\n"
    assert set(reached("sub/conftest.py", "", autouse).tests) == set()
    assert set(reached("conftest.py", "", autouse).tests) == set(given.snapshot.tests)
    # a name pytest reads of a test module: its tests
    assert set(reached("t.py", "", "import pytest\npytestmark = pytest.mark.slow\n").tests) == {
        "t.py::test_rate",
        "t.py::test_double",
        "t.py::test_table",
        "t.py::test_shape",
    }
    # a statement run for its effect: the tests of its importers (t.py) and those that ran code in them
    effect = reached("core.py", CORE, CORE + "register(RATE)\n")
    assert set(effect.tests) == set(given.snapshot.tests)
    alone = elements_rule(change("core.py", CORE, CORE + "register(RATE)\n"), given_map())
    assert alone.tests["t.py::test_shape"] == {"core.py"}
    # an import of a project module no test ever ran: its import's effects are unseen, the importers' tests
    unseen = given_map(resolve=lambda importer, dotted: frozenset({"newmod.py"}) if dotted == "newmod" else frozenset())
    imported = elements_rule(change("core.py", CORE, CORE + "from newmod import X\n"), unseen)
    assert set(imported.tests) == set(given.snapshot.tests)
    # a route's decorator fills the app object it calls a method of: the tests reaching the app (by its name)
    routes = "from flask import Flask\nTABLE = Flask(__name__)\n\n\n@TABLE.route('/x')\ndef view():\n    pass\n"
    route_moved = elements_rule(change("core.py", routes, routes.replace("'/x'", "'/y'")), given_map())
    assert set(route_moved.tests) == {"t.py::test_table"}
    known = given_map(resolve=lambda importer, dotted: frozenset({"shapes.py"}) if dotted == "shapes" else frozenset())
    assert elements_rule(change("core.py", CORE, CORE + "from shapes import X\n"), known).tests == {}


def test_a_blind_test_depends_on_module_level_changes_through_imports_and_the_notice_names_the_line():
    given = given_map()
    facts = dict(given.facts)
    facts[3] = BlockFacts(frozenset({"assert"}), "t.py:9 calls globals()")
    given.facts = facts
    reached = elements_rule(change("core.py", CORE, CORE.replace("OTHER = 1", "OTHER = 2")), given)
    assert set(reached.tests) == {"t.py::test_rate", "t.py::test_double", "t.py::test_table"}
    assert reached.blind is not None and reached.blind.startswith("t.py:9 calls globals() reads names computed")


def test_a_changed_element_is_compared_with_the_one_kept():
    kept = {"a.py": module_elements("a.py", ast.parse("X = 1\nY = 2\n"))}
    now = {"a.py": module_elements("a.py", ast.parse("X = 1\nZ = 2\n"))}
    assert [(c.key, c.before is None, c.now is None) for c in element_changes(kept, now)] == [
        ("Y", False, True),
        ("Z", True, False),
    ]
    assert [c.key for c in element_changes(kept, {})] == ["X", "Y"]  # the file is gone
    assert ElementChange("a.py", "X", None, kept["a.py"][0]).names == {"X"}
    assert COMPUTED == "*"


def test_a_changed_fixture_reaches_every_test_whose_closure_holds_it():
    """A session fixture's body ran for its first test only; the others ask for it by name."""
    snapshot = MapSnapshot(
        {1: ("conftest.py", "db-v1"), 2: ("t.py", "t")},
        {
            "t.py::test_first": TestEntry("passed", "c", frozenset({1, 2}), frozenset({"db"})),
            "t.py::test_second": TestEntry("passed", "c", frozenset({2}), frozenset({"db"})),
            "t.py::test_alias": TestEntry("passed", "c", frozenset({2}), frozenset({"database"})),
            "t.py::test_none": TestEntry("passed", "c", frozenset({2})),
        },
    )
    given = ReachInput(
        snapshot,
        lambda path: Importers(frozenset()),
        fixtures={("conftest.py", "db"): frozenset({"db", "database"})},
        qualnames={1: "db"},
    )
    reached = fixtures_rule(Changes(blocks=frozenset({1})), given)
    assert reached.tests == {
        "t.py::test_first": {"conftest.py"},
        "t.py::test_second": {"conftest.py"},
        "t.py::test_alias": {"conftest.py"},
    }
