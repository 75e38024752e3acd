"""Which top-level import names are the project's own (``project_code``): read from real
project layouts on disk and from a real interpreter's installed distributions."""

from __future__ import annotations

import json
import os
import subprocess
from functools import partial
from pathlib import Path

import anyio
import pytest
from helpers.installed_project import install_project

from pytest_mcp_server.engine.models import ProjectCode
from pytest_mcp_server.run.interpreter import probe_interpreter
from pytest_mcp_server.run.project import INSTALLED_PROBE, distribution_name, packages_in_root, project_code


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize(
    "files, expected",
    [
        # The src/ layout and top-level packages/modules; tests, tooling and test modules are not packages.
        (
            {
                "src/mypkg/__init__.py": "",
                "tests/__init__.py": "",
                "setup.py": "",
                "conftest.py": "",
                "test_top.py": "",
                "single.py": "",
                "docs/conf.py": "",
            },
            {"mypkg", "single"},
        ),
        # setuptools: an explicit list (dotted names give their top level) and py-modules.
        (
            {"pyproject.toml": '[tool.setuptools]\npackages = ["alpha", "alpha.sub"]\npy-modules = ["beta"]\n'},
            {"alpha", "beta"},
        ),
        # setuptools' find in another directory.
        (
            {"pyproject.toml": '[tool.setuptools.packages.find]\nwhere = ["lib"]\n', "lib/gamma/__init__.py": ""},
            {"gamma"},
        ),
        # hatch, flit, poetry and maturin.
        ({"pyproject.toml": '[tool.hatch.build.targets.wheel]\npackages = ["src/delta"]\n'}, {"delta"}),
        ({"pyproject.toml": '[tool.flit.module]\nname = "epsilon"\n'}, {"epsilon"}),
        ({"pyproject.toml": '[tool.poetry]\npackages = [{include = "zeta", from = "src"}]\n'}, {"zeta"}),
        ({"pyproject.toml": '[tool.maturin]\nmodule-name = "eta._native"\n'}, {"eta"}),
        # setup.cfg, a plain list and find:.
        ({"setup.cfg": "[options]\npackages =\n    theta\n    theta.x\npy_modules = iota\n"}, {"theta", "iota"}),
        (
            {
                "setup.cfg": "[options]\npackages = find:\n[options.packages.find]\nwhere = src\n",
                "src/kappa/__init__.py": "",
            },
            {"kappa"},
        ),
        # Broken configuration files are skipped; the layout still counts.
        ({"pyproject.toml": "[tool.setuptools\n", "setup.cfg": "no section", "lam/__init__.py": ""}, {"lam"}),
    ],
)
def test_packages_declared_or_laid_out_in_the_root(tmp_path, files, expected):
    assert packages_in_root(_write(tmp_path, files)) == expected


def test_project_code_joins_installed_names_and_validates(tmp_path):
    _write(tmp_path, {"src/mypkg/__init__.py": ""})
    code = project_code(tmp_path, ["installed_only", "not-an-identifier"])
    assert code == ProjectCode(root=str(tmp_path), packages=("installed_only", "mypkg"))
    with pytest.raises(ValueError, match="absolute"):
        ProjectCode(root="relative/dir", packages=())


def test_the_probe_finds_what_pip_installed_from_the_root(tmp_path):
    """A real ``pip install --no-deps --no-build-isolation`` of a tiny project into a
    venv: the probe, run by that venv's Python from the root, names its packages."""
    installed = install_project(
        tmp_path, "probe-demo", ["probedemo", "probesolo.py"], {"probedemo/__init__.py": "", "probesolo.py": ""}
    )
    assert (installed.site_packages / "probedemo" / "__init__.py").is_file()
    script = INSTALLED_PROBE + "import json, os\nprint(json.dumps(_installed_from(os.getcwd(), '')))\n"
    run = partial(subprocess.run, [str(installed.python), "-c", script], check=True, capture_output=True, text=True)
    assert json.loads(run(cwd=installed.root).stdout) == ["probedemo", "probesolo"]
    # From another directory, nothing is the project's.
    assert json.loads(run(cwd=tmp_path).stdout) == []


@pytest.mark.parametrize(
    "files, expected",
    [
        ({"pyproject.toml": '[project]\nname = "Demo_Dist"\n[tool.poetry]\nname = "other"\n'}, "Demo_Dist"),
        ({"pyproject.toml": '[tool.poetry]\nname = "poetry-dist"\n'}, "poetry-dist"),
        # setup.cfg's [metadata] when pyproject declares no name (a build-system table only).
        (
            {"pyproject.toml": "[build-system]\nrequires = []\n", "setup.cfg": "[metadata]\nname = cfg.dist\n"},
            "cfg.dist",
        ),
        # setup.py, best-effort: the first literal name= after setup( (not a variable's name= before it).
        (
            {
                "setup.cfg": "[metadata]\nlicense_files = LICENSE\n",
                "setup.py": "x(name=\"not-it\")\nsetup(\n  name = 'six',\n)\n",
            },
            "six",
        ),
        ({"setup.py": "NAME = compute()\nsetup(name=NAME)\n"}, None),
        ({"pyproject.toml": "[project\n"}, None),
        ({}, None),
    ],
)
def test_distribution_name_declared_by_the_root(tmp_path, files, expected):
    assert distribution_name(_write(tmp_path, files)) == expected


def test_a_test_only_checkout_finds_the_installed_distribution_by_name(tmp_path):
    """A project pip-installed into a venv (src layout), tested from a checkout that has
    its pyproject.toml and tests but not its source (tox's layout): the directory is not
    where pip installed from, so only the declared name ties the installed packages to
    it. The real probe (``probe_interpreter``, run by the venv's Python in that
    directory) names them from pip's RECORD (no ``top_level.txt``; ``__pycache__`` and
    ``.dist-info`` entries left out); a checkout declaring another name gets none."""
    installed = install_project(
        tmp_path,
        "Probe.Named",
        ["namedpkg", "namedsolo.py"],
        {"src/namedpkg/__init__.py": "", "src/namedsolo.py": ""},
        where="src",
    )
    record = next(installed.site_packages.glob("Probe.Named-*.dist-info")) / "RECORD"
    assert "__pycache__/namedsolo" in record.read_text(), "pip compiled the module: the RECORD entry to skip"
    checkout = _write(
        tmp_path / "checkout", {"pyproject.toml": '[project]\nname = "probe-named"\n', "tests/test_x.py": ""}
    )
    assert packages_in_root(checkout) == set()

    def probe(cwd: Path) -> tuple[str, ...]:
        interp = anyio.run(lambda: probe_interpreter(str(installed.python), cwd=cwd, env=dict(os.environ)))
        return interp.project_packages

    assert probe(checkout) == ("namedpkg", "namedsolo")
    assert project_code(checkout, probe(checkout)).packages == ("namedpkg", "namedsolo")
    other = _write(tmp_path / "other", {"pyproject.toml": '[project]\nname = "something-else"\n'})
    assert probe(other) == ()
