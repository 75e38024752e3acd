"""Another CPython for the tests and the benchmarks: the base ``python<X.Y>`` a virtualenv
of that version is made from.

One module shared by both, as ``tokens.py`` is: ``benches/`` is on pytest's
``pythonpath`` (the tests ``import pythons`` by name, ``tests/helpers/interpreters.py``)
and on the benchmark scripts' ``sys.path`` (their own directory; ``history.py`` and
``affected.py`` pass the result to ``scripts/real_projects.py``'s ``make_venv``). The
standard library only, so that importing it costs nothing.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from pathlib import Path


def find_python(version: str) -> Path:
    """The base ``python<version>`` executable (``version`` as ``"3.12"``): on PATH when it
    is not a pyenv shim (a shim may refuse a version the local pyenv setting does not
    name), else pyenv's ``$PYENV_ROOT/versions/<version>.*`` in sorted order (``~/.pyenv``
    when ``PYENV_ROOT`` is unset). A candidate counts only if it starts
    (``python -c 'import sys'`` exits 0). Raises ``LookupError`` naming where it looked."""
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates = sorted(glob.glob(os.path.join(root, "versions", f"{version}.*", "bin", f"python{version}")))
    on_path = shutil.which(f"python{version}")
    if on_path and "shims" not in on_path:
        candidates.insert(0, on_path)
    for candidate in candidates:
        done = subprocess.run([candidate, "-c", "import sys"], capture_output=True)
        if done.returncode == 0:
            return Path(candidate)
    raise LookupError(f"no working python{version} on PATH or under {root}/versions; install CPython {version}")
