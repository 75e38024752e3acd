"""``benches/pythons.py``: the base CPython of another version, shared by the tests
(``helpers.interpreters.make_venv``) and the benchmarks (``--python-version``).

The search order is checked on stand-in executables (shell scripts that exit 0 or 1 to
``-c 'import sys'``) on a PATH and under a ``PYENV_ROOT`` made by the test; the real
CPython 3.12 the change-aware tests need is found too.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import pythons  # benches/, on pytest's pythonpath


def _stand_in(path: Path, status: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\nexit {status}\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def places(tmp_path, monkeypatch):
    """An empty PATH directory and an empty ``PYENV_ROOT``, nothing else on either."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    root = tmp_path / "pyenv"
    (root / "versions").mkdir(parents=True)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("PYENV_ROOT", str(root))
    return bin_dir, root


def test_a_working_python_on_path_comes_first(places):
    bin_dir, root = places
    on_path = _stand_in(bin_dir / "python9.9", 0)
    _stand_in(root / "versions" / "9.9.1" / "bin" / "python9.9", 0)
    assert pythons.find_python("9.9") == on_path


def test_pyenv_shims_and_pythons_that_do_not_start_are_passed_over(tmp_path, places, monkeypatch):
    _, root = places
    shims = tmp_path / "shims"
    _stand_in(shims / "python9.9", 0)  # a shim may refuse a version pyenv's setting does not name
    monkeypatch.setenv("PATH", str(shims))
    _stand_in(root / "versions" / "9.9.0" / "bin" / "python9.9", 1)
    good = _stand_in(root / "versions" / "9.9.1" / "bin" / "python9.9", 0)
    _stand_in(root / "versions" / "9.10.0" / "bin" / "python9.10", 0)  # another version
    assert pythons.find_python("9.9") == good


def test_no_working_python_raises_lookup_error_naming_where_it_looked(places):
    _, root = places
    _stand_in(root / "versions" / "9.9.0" / "bin" / "python9.9", 1)
    with pytest.raises(LookupError, match=f"no working python9.9 on PATH or under {root}/versions"):
        pythons.find_python("9.9")


def test_the_cpython_3_12_of_this_machine_is_found():
    # the change-aware tests need it (helpers/interpreters.py); a machine without it fails here too
    python = pythons.find_python("3.12")
    assert os.access(python, os.X_OK)
    out = subprocess.run([python, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True)
    assert out.stdout.strip() == "(3, 12)"
