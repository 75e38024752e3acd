"""Project interpreters of other Python versions for the server tests: a real virtualenv
of CPython 3.12 with pytest, coverage.py and pytest-cov installed from the package index,
made once per test session (``python312`` in conftest.py).

The per-test recorder differs by version (sys.monitoring from 3.12, coverage.py's C
tracer before), so the change-aware tests run on both. This machine's kind has 3.12
under pyenv; a machine without it fails the tests that need it, with the reason, rather
than skipping them.
"""

from __future__ import annotations

import subprocess
import sys
import venv
from importlib import metadata
from pathlib import Path

import pythons  # benches/pythons.py (on pytest's pythonpath): shared with the benchmarks
from packaging.requirements import Requirement

PACKAGES = ("pytest", "coverage", "pytest-cov")
"""Installed into the 3.12 virtualenv, at the versions this interpreter has (so both
versions run the same pytest)."""


def make_venv(version: str, home: Path) -> Path:
    """A virtualenv of CPython ``version`` at ``home`` with ``PACKAGES`` installed at this
    interpreter's versions; its python. Raises ``LookupError`` when no CPython
    ``version`` is found (``pythons.find_python``), ``subprocess.CalledProcessError`` when
    the install fails (the message names pip's output)."""
    base = pythons.find_python(version)
    subprocess.run([str(base), "-m", "venv", str(home)], check=True)
    python = home / "bin" / "python"
    pins = [f"{name}=={metadata.version(name)}" for name in PACKAGES]
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *pins],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise subprocess.CalledProcessError(done.returncode, done.args, done.stdout, done.stderr)
    return python


def this_version() -> str:
    """``3.11``-style version of the interpreter running the tests."""
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


def python_with(tmp_path: Path, *distributions: str) -> Path:
    """A virtualenv without system site-packages whose only third-party packages are
    ``distributions`` and what they require, linked from this interpreter's installs:
    pytest's without coverage.py, as a project that never installed it has."""
    home = tmp_path / "venv"
    venv.create(home, with_pip=False, symlinks=True)
    (site,) = home.glob("lib/python*/site-packages")
    for name in distributions:
        link_distribution(name, site)
    return home / "bin" / "python"


def link_distribution(name: str, site: Path) -> None:
    """Link the installed distribution ``name`` (its top-level modules, packages and
    metadata) into ``site``, and the distributions it requires here, recursively."""
    dist = metadata.distribution(name)
    for top in sorted({Path(str(f)).parts[0] for f in dist.files or ()}):
        source = Path(str(dist.locate_file(top)))
        if top != "__pycache__" and ".." not in top and source.exists() and not (site / top).exists():
            (site / top).symlink_to(source)
    for requirement in dist.requires or ():
        required = Requirement(requirement)
        if required.marker is None or required.marker.evaluate({"extra": ""}):
            link_distribution(required.name, site)
