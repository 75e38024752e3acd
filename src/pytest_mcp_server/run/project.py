"""The project's own code: the top-level import names the project at the server's root
provides, wherever it is installed (docs/ENGINE.md, *Project code*).

Two sources, joined:
* the root's files (``packages_in_root``): the package configuration of
  ``pyproject.toml`` (setuptools, hatch, flit, poetry, maturin) and ``setup.cfg`` where
  it is a plain list, the ``src/`` layout, and the package directories and modules at
  the top of the root;
* the project's interpreter (``INSTALLED_PROBE``, run by ``interpreter.probe_interpreter``):
  a distribution whose ``direct_url.json`` points at the root (``pip install .`` or
  ``pip install -e .``) or whose name is the root's ``distribution_name`` (the project
  installed from elsewhere: a wheel, tox's sdist install, a test-only checkout), its
  ``top_level.txt`` or ``RECORD`` giving the names.

``project_code`` turns them into the engine's ``models.ProjectCode``. Pure Python, no
MCP, no processes.
"""

from __future__ import annotations

import configparser
import os
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pytest_mcp_server.engine.models import ProjectCode

# Modules at the top of a root that are tooling, not the project's importable code.
_TOOLING_MODULES = frozenset({"setup", "conftest", "noxfile", "fabfile", "tasks", "manage"})
# Directories at the top of a root that are never the project's package.
_NOT_PACKAGES = frozenset({"tests", "test", "docs", "doc", "examples", "benches", "scripts", "build", "dist"})

INSTALLED_PROBE = (
    "def _installed_from(root, name):\n"
    "    import importlib.metadata as m, json, os, re, urllib.parse\n"
    "    here = os.path.realpath(root)\n"
    "    wanted = re.sub(r'[-_.]+', '-', name).lower() if name else None\n"
    "    names = set()\n"
    "    for d in m.distributions():\n"
    "        try:\n"
    "            dist_name = re.sub(r'[-_.]+', '-', d.metadata['Name'] or '').lower()\n"
    "            if dist_name != wanted:\n"
    "                raw = d.read_text('direct_url.json')\n"
    "                url = json.loads(raw).get('url', '') if raw else ''\n"
    "                if not url.startswith('file://'):\n"
    "                    continue\n"
    "                if os.path.realpath(urllib.parse.unquote(urllib.parse.urlparse(url).path)) != here:\n"
    "                    continue\n"
    "            top = d.read_text('top_level.txt')\n"
    "            if top:\n"
    "                names.update(line.strip() for line in top.splitlines())\n"
    "                continue\n"
    "            for f in d.files or []:\n"
    "                first = f.parts[0] if f.parts else ''\n"
    "                if first in ('', '..', 'bin', '__pycache__') or first.endswith(('.dist-info', '.data')):\n"
    "                    continue\n"
    "                if len(f.parts) == 1:\n"
    "                    if not first.endswith(('.py', '.so', '.pyd')):\n"
    "                        continue\n"
    "                    first = first.split('.')[0]\n"
    "                names.add(first)\n"
    "        except Exception:\n"
    "            continue\n"
    "    return sorted(n for n in names if n.isidentifier() and not n.startswith('__'))\n"
)
"""Python source defining ``_installed_from(root, name) -> list[str]``: the top-level
import names of the distributions installed from ``root`` (``direct_url.json`` is a
``file://`` URL of it) or named ``name`` (the root's ``distribution_name``, compared
normalized as PEP 503 does; ``""`` matches none), from ``top_level.txt``, else the
first parts of ``RECORD``: package directories, and modules (``.py``, ``.so``,
``.pyd``) at the top; ``..`` (scripts, data), ``bin``, ``__pycache__``, ``.dist-info``
and ``.data`` entries and dunder names (``__editable__*`` finders) are skipped. Runs
inside the project's interpreter (any Python >= 3.8), with its standard library only."""

# ``setup(... name="x" ...)`` with a literal name: enough for the plain setup.py of small projects.
_SETUP_PY_NAME = re.compile(r"""\bname\s*=\s*(['"])([A-Za-z0-9][A-Za-z0-9._-]*)\1""")


def _top_level(name: str) -> str | None:
    """``pkg`` of ``pkg.sub`` or ``src/pkg`` (a path's last part); None if not an
    import name."""
    last = name.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    top = last.removesuffix(".py").split(".", 1)[0]
    return top if top.isidentifier() else None


def _names_in(directory: Path) -> set[str]:
    """Package directories (with ``__init__.py``) and modules directly in ``directory``,
    tooling and test modules aside."""
    names: set[str] = set()
    try:
        entries = list(directory.iterdir())
    except OSError:
        return names
    for entry in entries:
        stem = entry.name
        if entry.is_dir():
            if stem.isidentifier() and stem not in _NOT_PACKAGES and (entry / "__init__.py").is_file():
                names.add(stem)
        elif stem.endswith(".py"):
            module = stem[:-3]
            if (
                module.isidentifier()
                and module not in _TOOLING_MODULES
                and not module.startswith("test_")
                and not module.endswith("_test")
            ):
                names.add(module)
    return names


def _strings(value: Any) -> list[str]:
    """The strings of a TOML value that should be a list of strings (others ignored)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def _table(data: Any, *keys: str) -> dict[str, Any]:
    """``data[k1][k2]...`` when each step is a TOML table, else ``{}``."""
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _tops(values: Any) -> set[str]:
    return {top for top in map(_top_level, _strings(values)) if top}


def _from_pyproject(root: Path, data: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    setuptools = _table(data, "tool", "setuptools")
    packages = setuptools.get("packages")
    if isinstance(packages, list):
        names |= _tops(packages)
    for where in _strings(_table(setuptools, "packages", "find").get("where", [])):
        names |= _names_in(root / where)
    names |= _tops(setuptools.get("py-modules"))
    names |= _tops(_table(data, "tool", "hatch", "build", "targets", "wheel").get("packages"))
    names |= _tops(_table(data, "tool", "flit", "module").get("name"))
    poetry_packages = _table(data, "tool", "poetry").get("packages")
    for entry in poetry_packages if isinstance(poetry_packages, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("include"), str):
            names |= _tops(entry["include"].split("/", 1)[0])
    maturin = _table(data, "tool", "maturin")
    names |= _tops(maturin.get("module-name")) | _tops(maturin.get("python-packages"))
    return names


def _from_setup_cfg(root: Path, parser: configparser.ConfigParser) -> set[str]:
    names: set[str] = set()
    if not parser.has_section("options"):
        return names
    packages = parser.get("options", "packages", fallback="").strip()
    if packages.startswith("find:") or packages.startswith("find_namespace:"):
        where = parser.get("options.packages.find", "where", fallback=".").strip() or "."
        names |= _names_in(root / where)
    else:
        names.update(filter(None, map(_top_level, packages.replace(",", "\n").split())))
    modules = parser.get("options", "py_modules", fallback="")
    names.update(filter(None, map(_top_level, modules.replace(",", "\n").split())))
    return names


def _pyproject(root: Path) -> dict[str, Any]:
    """``root/pyproject.toml`` parsed; ``{}`` when missing, unreadable or invalid."""
    try:
        return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def _setup_cfg(root: Path) -> configparser.ConfigParser:
    """``root/setup.cfg`` parsed; empty when missing, unreadable or invalid."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(root / "setup.cfg", encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        parser = configparser.ConfigParser(interpolation=None)
    return parser


def distribution_name(root: Path) -> str | None:
    """The distribution name the project at ``root`` declares, as written: ``[project]
    name`` of ``pyproject.toml`` (PEP 621), else its ``[tool.poetry] name``, else
    ``[metadata] name`` of ``setup.cfg``, else (best-effort) the first literal
    ``name="..."`` after ``setup(`` in ``setup.py`` (a name computed in code is not
    found). None when none declares one; unreadable or invalid files count as absent."""
    data = _pyproject(root)
    for table in (_table(data, "project"), _table(data, "tool", "poetry")):
        if isinstance(table.get("name"), str) and table["name"].strip():
            return str(table["name"]).strip()
    name = _setup_cfg(root).get("metadata", "name", fallback="").strip()
    if name:
        return name
    try:
        setup_py = (root / "setup.py").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    call = setup_py.find("setup(")
    found = _SETUP_PY_NAME.search(setup_py, call) if call >= 0 else None
    return found.group(2) if found else None


def packages_in_root(root: Path) -> set[str]:
    """The top-level import names the project at ``root`` declares or lays out: its
    ``pyproject.toml``/``setup.cfg`` package configuration (when plain), ``src/``, and
    the package directories and modules at the top of ``root``. Unreadable or invalid
    configuration files are skipped (the layout still counts); never raises for them."""
    names: set[str] = set()
    names |= _from_pyproject(root, _pyproject(root))
    names |= _from_setup_cfg(root, _setup_cfg(root))
    names |= _names_in(root / "src")
    names |= _names_in(root)
    return names


def project_code(root: Path, installed: Iterable[str] = ()) -> ProjectCode:
    """The engine's description of the project at ``root``: its absolute root and the
    names of ``packages_in_root`` joined with ``installed`` (from the interpreter's
    ``INSTALLED_PROBE``; names that are not identifiers are dropped)."""
    names = packages_in_root(root) | {n for n in installed if n.isidentifier()}
    return ProjectCode(root=os.path.abspath(root), packages=tuple(sorted(names)))
