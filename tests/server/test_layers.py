"""The package's layers, read from the code: imports go one way, and only the MCP
adapter knows the MCP SDK (besides the benchmark's client, ``bench/suite.py``).

Layers, top to bottom: the entry points (``cli``, ``__init__``, ``__main__``),
``adapters``, ``app``, ``run``, ``domain``, ``engine``. A module may import its own
layer and the layers below it, never one above; the benchmark harness (``bench``) uses
only the engine. docs/ARCHITECTURE.md lists every module of the package; a module added
or removed without it fails here.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "src" / "pytest_mcp_server"
ARCHITECTURE = Path(__file__).resolve().parents[2] / "docs" / "ARCHITECTURE.md"
PACKAGE = "pytest_mcp_server"
LAYERS = ("engine", "domain", "run", "app", "adapters")
"""Bottom to top."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    # the plugin files loaded into the child pytest are not part of the package's import graph
    return {
        _module_name(p): p
        for p in sorted(PACKAGE_DIR.rglob("*.py"))
        if "pytest_plugin" not in p.relative_to(PACKAGE_DIR).parts
    }


def _imports(module: str, path: Path) -> set[str]:
    """Absolute names of the modules ``module`` imports (relative imports resolved)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS + ("bench",) else None


def _own(imported: set[str], modules: dict[str, Path]) -> set[str]:
    return {name for name in imported if name in modules}


def test_every_import_goes_down_the_layers():
    modules = _modules()
    wrong = []
    for module, path in modules.items():
        layer = _layer(module)
        if layer is None:
            continue  # the entry points may import any layer
        for target in _own(_imports(module, path), modules):
            target_layer = _layer(target)
            if layer == "bench":
                allowed = target_layer in ("bench", "engine")
            else:
                allowed = target_layer in LAYERS and LAYERS.index(target_layer) <= LAYERS.index(layer)
            if not allowed:
                wrong.append(f"{module} imports {target}")
    assert wrong == []


def test_the_engine_and_the_domain_import_nothing_above_them():
    # stated apart from the general rule: the two layers other code builds on
    modules = _modules()
    for module, path in modules.items():
        layer = _layer(module)
        if layer in ("engine", "domain"):
            above = {t for t in _own(_imports(module, path), modules) if _layer(t) not in ("engine", layer)}
            assert above == set(), module


def test_only_the_mcp_adapter_imports_the_sdk_statically():
    modules = _modules()
    users = sorted(
        module
        for module, path in modules.items()
        if any(name == "mcp" or name.startswith("mcp.") for name in _imports(module, path))
    )
    # bench.suite drives the server as a client, with the SDK's client (loaded only when it runs)
    client = f"{PACKAGE}.bench.suite"
    assert users and all(module.startswith(f"{PACKAGE}.adapters.mcp.") or module == client for module in users), users


def test_nothing_below_the_mcp_adapter_loads_the_sdk():
    # the hexagon at run time: every module but the adapter's imports without loading mcp
    below = sorted(m for m in _modules() if not m.startswith(f"{PACKAGE}.adapters.mcp") and m != f"{PACKAGE}.__main__")
    assert f"{PACKAGE}.app.execute" in below
    code = (
        "import importlib, sys\n"
        f"for name in {below!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


@pytest.mark.parametrize("layer", LAYERS)
def test_architecture_doc_lists_each_module_of_the_layer(layer):
    # docs/ARCHITECTURE.md names every module as `layer/module.py` and every subpackage as `layer/pkg/`
    named = r"`((?:adapters|app|run|domain|engine|bench)/[\w/.]*)`"
    documented = {d for d in re.findall(named, ARCHITECTURE.read_text()) if d.startswith(layer + "/")}
    actual = set()
    for module, path in _modules().items():
        if _layer(module) != layer:
            continue
        rel = path.relative_to(PACKAGE_DIR).as_posix()
        if rel.startswith("engine/pure/"):
            continue  # the pure twin mirrors rust/core/src; ENGINE.md maps it file for file
        actual.add(rel.removesuffix("__init__.py"))
    unlisted = {"engine/pure/", "run/pytest_plugin/"}  # a folder named as a whole
    assert (sorted(actual - documented), sorted(documented - actual - unlisted)) == ([], [])
