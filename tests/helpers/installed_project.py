"""A small project really installed with pip into a venv's site-packages (not editable), for
tests of the project's own code wherever it is installed.

``install_project(tmp_path, files)`` writes the project's files, a PEP 517 in-tree build
backend (so ``pip install --no-deps --no-build-isolation`` needs neither network nor the
``wheel`` package), makes a venv with ``--system-site-packages`` (so it has pytest and
its plugins) and installs the project into it; pip writes the real ``RECORD``,
dist-info (without ``top_level.txt``) and ``direct_url.json``.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

# A minimal PEP 517 backend: a pure-Python wheel of the packages and modules listed in
# pyproject's [tool.mini] include, with METADATA, WHEEL and a hashed RECORD.
_BACKEND = """
import base64, hashlib, os, tomllib, zipfile

def _config():
    with open("pyproject.toml", "rb") as f:
        data = tomllib.load(f)
    mini = data["tool"]["mini"]
    return data["project"]["name"].replace("-", "_"), data["project"]["version"], mini["include"], mini["where"]

def _digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name, version, include, where = _config()
    wheel_name = f"{name}-{version}-py3-none-any.whl"
    dist_info = f"{name}-{version}.dist-info"
    files = []
    for top in include:
        if os.path.isdir(os.path.join(where, top)):
            for base, _dirs, names in os.walk(os.path.join(where, top)):
                files += [os.path.relpath(os.path.join(base, n), where) for n in names if n.endswith(".py")]
        else:
            files.append(top)
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w") as whl:
        def add(arcname, data):
            whl.writestr(arcname, data)
            record.append(f"{arcname},{_digest(data)},{len(data)}")
        for path in sorted(files):
            with open(os.path.join(where, path), "rb") as f:
                add(path.replace(os.sep, "/"), f.read())
        add(f"{dist_info}/METADATA", f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n".encode())
        wheel = b"Wheel-Version: 1.0\\nGenerator: mini\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
        add(f"{dist_info}/WHEEL", wheel)
        record.append(f"{dist_info}/RECORD,,")
        whl.writestr(f"{dist_info}/RECORD", "\\n".join(record) + "\\n")
    return wheel_name
"""


@dataclass(frozen=True)
class InstalledProject:
    """``root``: the project's source tree; ``python``: the venv's interpreter;
    ``site_packages``: where pip put the project's packages."""

    root: Path
    python: Path
    site_packages: Path


def install_project(
    tmp_path: Path, name: str, include: list[str], files: dict[str, str], where: str = "."
) -> InstalledProject:
    """Write ``files`` under ``tmp_path/name`` with a pyproject whose wheel holds
    ``include`` (package dirs and modules, relative to ``where``: ``"src"`` for the src
    layout), then pip-install it into a fresh venv."""
    root = tmp_path / name
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "mini_backend.py").write_text(_BACKEND)
    includes = ", ".join(f'"{i}"' for i in include)
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "mini_backend"\nbackend-path = ["."]\n'
        f'[project]\nname = "{name}"\nversion = "0.1"\n[tool.mini]\ninclude = [{includes}]\nwhere = "{where}"\n'
    )
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", str(root)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, f"pip install of the fixture project failed:\n{done.stdout}\n{done.stderr}"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return InstalledProject(root=root, python=python, site_packages=Path(site))
