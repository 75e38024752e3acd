"""The project's static import graph (``domain.imports``): what each file may import,
worked out by hand from Python's import system on small projects, then checked against
the real interpreter: every project file a real ``import M`` runs must be reachable from
the static edges of a probe file holding ``import M`` (the graph may say more, never
less), on a hand-written project and on generated ones.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers.strategies import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

from pytest_mcp_server.app.map_state import ImportGraph
from pytest_mcp_server.domain.imports import (
    FileImports,
    ProjectFiles,
    file_imports,
    importers,
    opaque_files,
)


def _graph(sources: dict[str, str]) -> dict[str, FileImports]:
    """``file_imports`` of every file of ``sources``, resolved among them: the whole
    project's graph, as ``app.map_state.import_reach`` builds it from the files."""
    encoded = {path: text.encode() for path, text in sources.items()}
    files = ProjectFiles(encoded, encoded.get)
    return {path: file_imports(path, content, files) for path, content in encoded.items() if path in files.paths}


def _targets(sources: dict[str, str], path: str) -> set[str]:
    return set(_graph(sources)[path].targets)


def _reached(graph: dict[str, FileImports], start: FileImports) -> set[str]:
    """The files reachable from ``start``'s targets (forward closure)."""
    seen, todo = set(start.targets), list(start.targets)
    while todo:
        imports = graph.get(todo.pop())
        for target in imports.targets if imports else ():
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


PACKAGE = {
    "a/__init__.py": "",
    "a/b/__init__.py": "",
    "a/b/c.py": "",
    "a/b/d.py": "NAME = 1\n",
    "a/e.py": "",
}


# --------------------------------------------------------------------------------------
# Resolution of one file's imports


def test_import_names_each_package_init_on_the_way():
    sources = {**PACKAGE, "user.py": "import a.b.c\n"}
    assert _targets(sources, "user.py") == {"a/__init__.py", "a/b/__init__.py", "a/b/c.py"}


def test_from_import_of_a_name_and_of_a_submodule():
    sources = {**PACKAGE, "name.py": "from a.b.d import NAME\n", "sub.py": "from a.b import c, MISSING\n"}
    assert _targets(sources, "name.py") == {"a/__init__.py", "a/b/__init__.py", "a/b/d.py"}
    # c is a submodule (an edge); MISSING is a name of a/b/__init__.py (no file of its own)
    assert _targets(sources, "sub.py") == {"a/__init__.py", "a/b/__init__.py", "a/b/c.py"}


@pytest.mark.parametrize(
    "importer, statement, expected",
    [
        ("a/b/c.py", "from . import d", {"a/b/__init__.py", "a/b/d.py"}),
        ("a/b/c.py", "from .d import NAME", {"a/b/__init__.py", "a/b/d.py"}),
        ("a/b/c.py", "from .. import e", {"a/__init__.py", "a/e.py"}),
        ("a/b/c.py", "from ..b.d import NAME", {"a/__init__.py", "a/b/__init__.py", "a/b/d.py"}),
        ("a/b/c.py", "from ... import top", {"top.py"}),  # the root as a package
        ("a/b/c.py", "from .... import top", set()),  # above the project: nothing of it
        # in a package's __init__.py, "." is the package itself, not its parent
        ("a/b/__init__.py", "from . import c", {"a/b/c.py"}),
        ("a/b/__init__.py", "from .. import e", {"a/__init__.py", "a/e.py"}),
    ],
)
def test_relative_imports_resolve_against_the_importing_files_package(importer, statement, expected):
    sources = {**PACKAGE, "top.py": "", importer: statement + "\n"}
    assert _targets(sources, importer) == expected


def test_a_src_layout_and_a_tests_dir_on_sys_path_resolve_by_path_suffix():
    sources = {
        "src/pkg/__init__.py": "",
        "src/pkg/tables.py": "ESCAPES = {'<': '&lt;'}\n",
        "src/otherpkg/tables.py": "",  # ends with pkg/tables.py, but not at a component boundary
        "tests/helpers.py": "",
        "tests/test_fmt.py": "import helpers\nfrom pkg.tables import ESCAPES\n",
    }
    assert _targets(sources, "tests/test_fmt.py") == {"tests/helpers.py", "src/pkg/__init__.py", "src/pkg/tables.py"}


def test_a_name_two_files_can_be_is_an_edge_to_both():
    sources = {"src/util.py": "", "tests/util/__init__.py": "", "lib/xutil.py": "", "user.py": "import util\n"}
    assert _targets(sources, "user.py") == {"src/util.py", "tests/util/__init__.py"}


def test_a_namespace_package_needs_no_init():
    sources = {"ns/part/mod.py": "", "user.py": "from ns.part import mod\n"}
    assert _targets(sources, "user.py") == {"ns/part/mod.py"}


def test_imports_anywhere_in_the_file_count():
    text = """\
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import a.e

try:
    import a.b.c
except ImportError:
    from a.b import d


def lazy():
    from a.b import d

    class Inner:
        def method(self):
            import top


async def run(x):
    async with x:
        match x:
            case [1]:
                import w1
            case _:
                while x:
                    import w2
    for _ in x:
        pass
    else:
        with x:
            import w3
"""
    sources = {**PACKAGE, "top.py": "", "w1.py": "", "w2.py": "", "w3.py": "", "user.py": text}
    assert _targets(sources, "user.py") == {
        "a/__init__.py",
        "a/e.py",
        "a/b/__init__.py",
        "a/b/c.py",
        "a/b/d.py",
        "top.py",
        "w1.py",
        "w2.py",
        "w3.py",
    }


def test_stdlib_and_third_party_imports_are_dropped():
    text = "import os, sys\nimport json.decoder\nfrom collections import abc\nimport numpy as np\nimport a.e\n"
    assert _targets({**PACKAGE, "user.py": text}, "user.py") == {"a/__init__.py", "a/e.py"}


def test_star_import_of_a_module_is_an_edge_of_a_package_loads_what_its_all_names():
    """``from package import *`` loads the submodules the package's ``__all__`` names
    (none without one): read from its ``__init__.py``, which the importing file then
    reads; an ``__all__`` built otherwise leaves the importing file opaque."""
    sources = {**PACKAGE, "mod.py": "from a.b.d import *\n", "pkg.py": "x = 1\nfrom a.b import *\n"}
    graph = _graph(sources)
    assert graph["mod.py"] == FileImports(frozenset({"a/__init__.py", "a/b/__init__.py", "a/b/d.py"}), None)
    assert graph["pkg.py"] == FileImports(
        frozenset({"a/__init__.py", "a/b/__init__.py"}), reads=frozenset({"a/b/__init__.py"})
    )
    named = _graph({**sources, "a/b/__init__.py": "__all__ = ['c', 'NAME']\n"})
    assert (
        named["pkg.py"].targets == {"a/__init__.py", "a/b/__init__.py", "a/b/c.py"} and named["pkg.py"].opaque is None
    )
    for built in (
        "__all__ = ['c']\n__all__ += ['d']\n",
        "__all__ = names()\n",
        "__all__ = ['c']\n__all__.append('d')\n",
    ):
        opaque = _graph({**sources, "a/b/__init__.py": built})["pkg.py"]
        assert (
            opaque.opaque == "pkg.py:2 imports * from the package a/b/__init__.py: its __all__ is not a list of names"
        )


@pytest.mark.parametrize(
    "importer, call, expected",
    [
        ("user.py", "importlib.import_module('a.b.c')", {"a/__init__.py", "a/b/__init__.py", "a/b/c.py"}),
        ("user.py", "import_module('a.e')", {"a/__init__.py", "a/e.py"}),
        ("user.py", "importlib.import_module('.c', 'a.b')", {"a/__init__.py", "a/b/__init__.py", "a/b/c.py"}),
        ("user.py", "importlib.import_module('..e', package='a.b')", {"a/__init__.py", "a/e.py"}),
        ("a/b/c.py", "importlib.import_module('.d', __package__)", {"a/b/__init__.py", "a/b/d.py"}),
        ("a/b/__init__.py", "importlib.import_module('.c', __name__)", {"a/b/c.py"}),
        ("user.py", "importlib.import_module('json')", set()),
        ("user.py", "__import__('a.b.c')", {"a/__init__.py", "a/b/__init__.py", "a/b/c.py"}),
        ("user.py", "importlib.__import__('a.e')", {"a/__init__.py", "a/e.py"}),
        ("user.py", "__import__('a.b', fromlist=['d'])", {"a/__init__.py", "a/b/__init__.py", "a/b/d.py"}),
        ("a/b/c.py", "__import__('', globals(), None, ('d',), 1)", {"a/b/__init__.py", "a/b/d.py"}),
    ],
)
def test_import_calls_with_constant_arguments_resolve_like_imports(importer, call, expected):
    sources = {**PACKAGE, importer: f"import importlib\nfrom importlib import import_module\n{call}\n"}
    graph = _graph(sources)
    assert graph[importer] == FileImports(frozenset(expected), None)


@pytest.mark.parametrize(
    "call, phrase",
    [
        ("importlib.import_module(name)", "calls importlib.import_module with a computed name"),
        ("importlib.import_module(f'{name}.a')", "calls importlib.import_module with a computed name"),
        ("importlib.import_module('.' + name, base)", "calls importlib.import_module with a computed name"),
        ("importlib.import_module('.c', base)", "calls importlib.import_module with a computed package"),
        ("__import__(name)", "calls __import__ with a computed name"),
        ("__import__('a', fromlist=names)", "calls __import__ with a computed fromlist or level"),
        ("importlib.import_module(*args)", "calls importlib.import_module with unpacked arguments"),
        # handed on, a call under another name would not be seen
        ("importlib.import_module", "uses importlib.import_module other than by calling it"),
        ("map(__import__, names)", "uses __import__ other than by calling it"),
    ],
)
def test_import_calls_with_computed_arguments_make_the_file_opaque(call, phrase):
    text = f"import importlib\nimport a.e\n\n\ndef load(name, base, names, args):\n    return {call}\n"
    imports = _graph({**PACKAGE, "pkg/loader.py": text})["pkg/loader.py"]
    assert imports == FileImports(frozenset({"a/__init__.py", "a/e.py"}), f"pkg/loader.py:6 {phrase}")


@pytest.mark.parametrize(
    ("importer", "call", "expected"),
    [
        # every module whose name starts with the literal, and the packages on the way
        (
            "x.py",
            "importlib.import_module(f'a.b.{name}')",
            {"a/__init__.py", "a/b/__init__.py", "a/b/c.py", "a/b/d.py"},
        ),
        (
            "x.py",
            "importlib.import_module('a.' + name)",
            {"a/__init__.py", "a/b/__init__.py", "a/b/c.py", "a/b/d.py", "a/e.py"},
        ),
        ("x.py", "__import__('a.b.%s' % name)", {"a/__init__.py", "a/b/__init__.py", "a/b/c.py", "a/b/d.py"}),
        # relative to the file's own package: that package's modules
        (
            "a/b/__init__.py",
            "importlib.import_module(f'.{name}', __package__)",
            {"a/b/__init__.py", "a/b/c.py", "a/b/d.py"},
        ),
        ("a/b/c.py", "importlib.import_module('.' + name, package=__package__)", {"a/b/__init__.py", "a/b/d.py"}),
    ],
)
def test_a_computed_name_with_a_literal_start_imports_only_the_modules_it_can_name(importer, call, expected):
    text = f"import importlib\n\n\ndef load(name):\n    return {call}\n"
    imports = _graph({**PACKAGE, importer: text})[importer]
    assert imports.opaque is None
    assert set(imports.targets) == expected - {importer}


def test_import_module_imported_under_another_name_is_opaque():
    text = "import a.e\nfrom importlib import import_module as load\n\nload('a.b.c')\n"
    assert _graph({**PACKAGE, "x.py": text})["x.py"] == FileImports(
        frozenset({"a/__init__.py", "a/e.py"}),
        "x.py:2 uses from importlib import import_module as load other than by calling it",
    )


def test_the_first_opaque_reason_by_line_is_kept():
    text = "def f(n):\n    return __import__(n)\n\n\nfrom a.b import *\n"
    assert _graph({**PACKAGE, "x.py": text})["x.py"].opaque == "x.py:2 calls __import__ with a computed name"


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"import a.e\ndef broken(:\n", "x.py:2 does not parse as Python (SyntaxError)"),
        (b"import a\x00.e\n", "x.py does not parse as Python (SyntaxError)"),
    ],
)
def test_a_file_that_does_not_parse_is_opaque(content, reason):
    imports = file_imports("x.py", content, ProjectFiles(PACKAGE))
    assert imports == FileImports(frozenset(), reason, parsed=False)


def test_project_files_index_python_files_by_dotted_suffix():
    files = ProjectFiles(["src/pkg/__init__.py", "src/pkg/mod.py", "my-dir/pkg/mod.py", "pkg/mod.pyi", "README.md"])
    assert files.paths == {"src/pkg/__init__.py", "src/pkg/mod.py", "my-dir/pkg/mod.py"}
    assert files.named("pkg.mod") == {"src/pkg/mod.py", "my-dir/pkg/mod.py"}
    assert files.named("src.pkg") == {"src/pkg/__init__.py"}
    assert files.named("my-dir.pkg.mod") == set()  # no dotted name spells a non-identifier
    assert files.named("mod") == {"src/pkg/mod.py", "my-dir/pkg/mod.py"}
    assert files.under("src", "pkg.mod") == {"src/pkg/mod.py"}
    assert files.under("src/pkg", "") == {"src/pkg/__init__.py"}
    assert files.under("", "pkg") == set()


# --------------------------------------------------------------------------------------
# Importers


def test_a_changed_constant_selects_the_files_reading_it_through_imports():
    # the motivating case: ESCAPES in tables.py, read by fmt.py, used by a test
    sources = {
        "pkg/__init__.py": "",
        "pkg/tables.py": "ESCAPES = {'<': '&lt;'}\n",
        "pkg/fmt.py": "from .tables import ESCAPES\n\ndef fmt(s):\n    return ESCAPES.get(s, s)\n",
        "pkg/other.py": "import os\n",
        "tests/test_fmt.py": "from pkg.fmt import fmt\n",
        "tests/test_other.py": "import pkg.other\n",
    }
    graph = _graph(sources)
    assert importers(graph, ["pkg/tables.py"]) == {"pkg/tables.py", "pkg/fmt.py", "tests/test_fmt.py"}


def test_importers_through_three_files():
    sources = {"a.py": "", "b.py": "import a\n", "c.py": "from b import x\n", "d.py": "import c\n", "e.py": ""}
    graph = _graph(sources)
    assert importers(graph, ["a.py"]) == {"a.py", "b.py", "c.py", "d.py"}
    assert importers(graph, ["c.py"]) == {"c.py", "d.py"}
    assert importers(graph, ["d.py", "e.py"]) == {"d.py", "e.py"}
    assert importers(graph, []) == set()


def test_importers_of_a_cycle():
    sources = {"a.py": "import b\n", "b.py": "import c\n", "c.py": "import a\n", "d.py": "import b\n", "e.py": ""}
    graph = _graph(sources)
    assert importers(graph, ["a.py"]) == {"a.py", "b.py", "c.py", "d.py"}
    assert importers(graph, ["e.py"]) == {"e.py"}


def test_an_opaque_file_is_named_and_imports_only_what_its_edges_say():
    sources = {
        "a.py": "",
        "b.py": "",
        "loader.py": "import importlib\n\ndef load(n):\n    return importlib.import_module(n)\n",
        "app.py": "import loader\n",
        "bad.py": "def (:\n",
    }
    graph = _graph(sources)
    assert importers(graph, ["a.py"]) == {"a.py"}
    assert importers(graph, ["loader.py"]) == {"loader.py", "app.py"}
    assert importers(graph, []) == set()
    assert opaque_files(graph) == [
        "bad.py:1 does not parse as Python (SyntaxError)",
        "loader.py:4 calls importlib.import_module with a computed name",
    ]


# --------------------------------------------------------------------------------------
# Against the real interpreter

REAL_PROJECT = {
    "src/app/__init__.py": "from .config import LIMIT\n",
    "src/app/config.py": "LIMIT = 3\n",
    "src/app/tables.py": "ESCAPES = {'<': '&lt;'}\n",
    "src/app/fmt.py": "from app.tables import ESCAPES\n\n\ndef fmt(s):\n    return ESCAPES.get(s, s)\n",
    "src/app/sub/__init__.py": "",
    "src/app/sub/deep.py": "from ..fmt import fmt\nfrom . import helper\n",
    "src/app/sub/helper.py": "import importlib\n\nplugin = importlib.import_module('app.plugins.one')\n",
    "src/app/plugins/one.py": "VALUE = __import__('app.tables').tables.ESCAPES\n",  # a namespace package
    "src/app/lazy.py": "def load():\n    from app import tables\n\n    return tables\n",
    "src/app/star.py": "from app.config import *\n",
    "src/app/cycle_a.py": "import app.cycle_b\n",
    "src/app/cycle_b.py": "from app import cycle_a\n",
    "tests/helpers.py": "import json\nimport app.sub.deep\n",
    "tests/test_x.py": "import helpers\nfrom app.star import LIMIT\n",
}
"""Paths under ``src/`` and ``tests/``, both on ``sys.path``."""


def _module_name(path: str) -> str:
    parts = path.removesuffix(".py").split("/")[1:]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _really_imported(root: Path, module: str) -> set[str]:
    """The project files in ``sys.modules`` after ``import module`` in a fresh interpreter."""
    code = (
        "import json, sys\n"
        f"sys.path[:0] = [{str(root / 'src')!r}, {str(root / 'tests')!r}]\n"
        f"import {module}\n"
        "print(json.dumps(sorted(getattr(m, '__file__', None) or '' for m in list(sys.modules.values()))))"
    )
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True, timeout=60)
    return {Path(f).relative_to(root).as_posix() for f in json.loads(out.stdout) if f.startswith(str(root) + "/")}


def test_the_static_closure_covers_what_python_really_imports(tmp_path):
    for path, text in REAL_PROJECT.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    graph = _graph(REAL_PROJECT)
    files = ProjectFiles(REAL_PROJECT)
    loaded_by = {}
    for path in REAL_PROJECT:
        module = _module_name(path)
        probe = file_imports("probe.py", f"import {module}\n".encode(), files)
        loaded = _really_imported(tmp_path, module)
        assert path in loaded
        assert loaded <= _reached(graph, probe), module
        for file in loaded:  # the same, asked the way the caller asks
            assert "probe.py" in importers({**graph, "probe.py": probe}, [file])
        loaded_by[module] = loaded
    # the check is not empty: real chains through relative imports, import_module and __import__
    assert {"src/app/tables.py", "src/app/plugins/one.py", "src/app/config.py"} <= loaded_by["helpers"]
    assert graph["src/app/lazy.py"].targets == {"src/app/__init__.py", "src/app/tables.py"}
    assert "src/app/tables.py" not in loaded_by["app.lazy"]  # more than Python loads: the safe side
    assert opaque_files(graph) == []


# Generated projects: a fixed tree of packages (a namespace package among them), each
# file with random import statements, some that fail at run time, some in functions.
TREE = ["m0.py", "m1.py", "p/__init__.py", "p/a.py", "p/b.py", "p/s/__init__.py", "p/s/c.py", "n/d.py"]
MODULES = ["m0", "m1", "p", "p.a", "p.b", "p.s", "p.s.c", "n.d"]
NAMES = ["a", "b", "s", "c", "d", "X"]
LOG = "import builtins as _b\n_b.__dict__.setdefault('_ran', []).append(__file__)\nimport importlib\n"

statements = st.one_of(
    st.sampled_from(MODULES).map(lambda m: f"import {m}"),
    st.sampled_from([m for m in MODULES if "." in m]).map(lambda m: "from {} import {}".format(*m.rsplit(".", 1))),
    st.tuples(st.sampled_from(MODULES), st.sampled_from(NAMES)).map(lambda t: f"from {t[0]} import {t[1]}"),
    st.tuples(st.sampled_from([".", ".."]), st.sampled_from(["", "a", "s", "s.c", "b"]), st.sampled_from(NAMES)).map(
        lambda t: f"from {t[0]}{t[1]} import {t[2]}"
    ),
    st.sampled_from(["p", "p.s", "p.a", "m0"]).map(lambda m: f"from {m} import *"),
    st.sampled_from(MODULES + ["json"]).map(lambda m: f"importlib.import_module({m!r})"),
    st.tuples(st.sampled_from(NAMES), st.sampled_from(["'p'", "'p.s'", "__package__"])).map(
        lambda t: f"importlib.import_module('.{t[0]}', {t[1]})"
    ),
    st.sampled_from(MODULES).map(lambda m: f"__import__({m!r})"),
    st.tuples(st.sampled_from(MODULES), st.sampled_from(NAMES)).map(
        lambda t: f"__import__({t[0]!r}, fromlist=[{t[1]!r}])"
    ),
)


def _placed(statement: str, where: str) -> str:
    guarded = f"try:\n    {statement}\nexcept Exception:\n    pass\n"
    if where == "module":
        return guarded
    body = guarded.replace("\n", "\n    ").rstrip() + "\n"
    called = "try:\n    f()\nexcept Exception:\n    pass\n" if where == "called" else ""
    return f"def f():\n    {body}{called}"


files_text = st.lists(
    st.tuples(statements, st.sampled_from(["module", "module", "called", "uncalled"])), max_size=3
).map(lambda placed: LOG + "".join(_placed(s, w) for s, w in placed))
# a package's __all__ names the submodules ``from package import *`` loads
exported = st.lists(st.sampled_from(["a", "b", "s", "c"]), max_size=2).map(
    lambda names: f"__all__ = {names!r}\n" if names else ""
)
init_text = st.tuples(files_text, exported).map("".join)


# One interpreter per example (not per module, for speed): before each module the
# project's modules are dropped from sys.modules, so each import runs from scratch; each
# file appends its path to a log as it runs (a file whose import fails still counts).
RUN_EACH = """\
import importlib, json, sys
sys.path.insert(0, sys.argv[1])
ran = {}
for module in json.loads(sys.argv[2]):
    for name in [n for n in sys.modules if n.split('.')[0] in ('m0', 'm1', 'p', 'n')]:
        del sys.modules[name]
    __builtins__._ran = []
    try:
        importlib.import_module(module)
    except Exception:
        pass
    ran[module] = list(__builtins__._ran)
print(json.dumps(ran))
"""


@pytest.mark.fuzz
@fuzz_settings(25)
@given(
    texts=st.fixed_dictionaries({path: init_text if path.endswith("__init__.py") else files_text for path in TREE}),
    prefix=st.sampled_from(["", "src/"]),
)
def test_generated_projects_the_static_closure_covers_what_python_runs(texts, prefix):
    sources = {prefix + path: text for path, text in texts.items()}
    sources["decoy/p/a.py"] = "import p.b\n"  # same suffix, not on sys.path: an extra edge, never a missing one
    graph = _graph(sources)
    files = ProjectFiles(sources)
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory).resolve()
        for path, text in sources.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
        out = subprocess.run(
            [sys.executable, "-I", "-S", "-c", RUN_EACH, str(root / prefix), json.dumps(MODULES)],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        ran = {m: {Path(f).relative_to(root).as_posix() for f in fs} for m, fs in json.loads(out.stdout).items()}
    for module, loaded in ran.items():
        probe = file_imports("probe.py", f"import {module}\n".encode(), files)
        reached = _reached(graph, probe)
        if any(graph[f].opaque for f in reached):
            # the graph cannot tell: the file is named, and every test depends on a change
            assert opaque_files(graph), module
            continue
        assert loaded <= reached, (module, loaded - reached)
        for file in loaded:
            assert "probe.py" in importers({**graph, "probe.py": probe}, [file])


def test_a_star_imports_edges_are_read_again_when_the_packages_all_changes(tmp_path):
    """The graph keeps each file's edges between calls while the file is unchanged, and
    also the package a star import read ``__all__`` from: when only that package's
    ``__all__`` changes, the importing file's edges are read again."""
    for path, text in {"a/__init__.py": "", "a/b.py": "X = 1\n", "tests/test_star.py": "from a import *\n"}.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    first = ImportGraph(tmp_path, None, frozenset())
    found = first.importers("a/b.py")
    assert "tests/test_star.py" not in found.reached and found.opaque == ()
    (tmp_path / "a" / "__init__.py").write_text("__all__ = ['b']\n")
    found = ImportGraph(tmp_path, first.cache, frozenset()).importers("a/b.py")
    assert "tests/test_star.py" in found.reached and found.opaque == ()


def test_a_computed_import_blinds_the_graph_only_in_a_file_that_ran(tmp_path):
    """A file whose imports the graph cannot tell counts as importing every file only when
    it ran (the map knows the files that did): an example script no test runs does not
    make every test depend on a change."""
    files = {"a/__init__.py": "", "a/b.py": "X = 1\n", "examples/cli.py": "def main(n):\n    return __import__(n)\n"}
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    assert ImportGraph(tmp_path, None, frozenset({"a/b.py"})).importers("a/b.py").opaque == ()
    ran = ImportGraph(tmp_path, None, frozenset({"a/b.py", "examples/cli.py"})).importers("a/b.py")
    assert ran.opaque == ("examples/cli.py:2 calls __import__ with a computed name",)
