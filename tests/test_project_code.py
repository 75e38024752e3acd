"""Which top-level import names are the project's own (``project_code``): read from real
project layouts on disk and from a real interpreter's installed distributions."""

from __future__ import annotations

import json
import subprocess
from functools import partial
from pathlib import Path

import pytest
from installed_project import install_project

from pytest_mcp_server.models import ProjectCode
from pytest_mcp_server.project_code import INSTALLED_PROBE, packages_in_root, project_code


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
    script = INSTALLED_PROBE + "import json, os\nprint(json.dumps(_installed_from(os.getcwd())))\n"
    run = partial(subprocess.run, [str(installed.python), "-c", script], check=True, capture_output=True, text=True)
    assert json.loads(run(cwd=installed.root).stdout) == ["probedemo", "probesolo"]
    # From another directory, nothing is the project's.
    assert json.loads(run(cwd=tmp_path).stdout) == []
