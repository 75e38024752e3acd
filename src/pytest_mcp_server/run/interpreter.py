"""The project's interpreter: which Python runs the tests (``find_python``) and what it
can import (``probe_interpreter`` -> ``Interpreter``), and its version.

The probe starts the interpreter once with a short script; it asks for pytest (required)
and for the optional plugins the server uses when present: pytest-xdist (``workers``),
coverage.py and pytest-cov (``coverage``). (Runs write their report with the server's
own plugin, whatever else is installed.)
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio

from pytest_mcp_server.domain.config import ServerConfig
from pytest_mcp_server.domain.failures import ToolFailure
from pytest_mcp_server.domain.policy import ERROR_LINE_CHARS, PROBE_TIMEOUT_S, TAIL_BYTES
from pytest_mcp_server.run.project import INSTALLED_PROBE, distribution_name

_PROBE = INSTALLED_PROBE + (
    "import importlib.util as u, json, os, sys\n"
    "def _has_ctracer():\n"
    "    try:\n"
    "        return u.find_spec('coverage') is not None and u.find_spec('coverage.tracer') is not None\n"
    "    except Exception:\n"
    "        return False\n"
    "try:\n"
    "    import pytest\n"
    "    v = pytest.__version__\n"
    "    e = None\n"
    "except Exception as x:\n"
    "    v = None\n"
    "    e = type(x).__name__ + ': ' + str(x)\n"
    "print(json.dumps({'pytest': v, 'error': e,"
    " 'xdist': u.find_spec('xdist') is not None, 'coverage': u.find_spec('coverage') is not None,"
    " 'pytest_cov': u.find_spec('pytest_cov') is not None, 'version': list(sys.version_info[:2]),"
    " 'ctracer': _has_ctracer(),"
    " 'project_packages': _installed_from(os.getcwd(), sys.argv[1])}))\n"
)


@dataclass(frozen=True)
class Interpreter:
    """The project's Python (``python``, as found by ``find_python``), the optional
    pytest plugins it can import, and its pytest's version (``pytest_version``: the
    leading numbers of ``pytest.__version__``, ``(9, 2, 0)``; ``()`` when unknown)."""

    python: str
    has_xdist: bool
    pytest_version: tuple[int, ...] = ()
    # Top-level import names of the project's installed distributions (``project.INSTALLED_PROBE``).
    project_packages: tuple[str, ...] = ()
    # coverage.py and pytest-cov, which ``execute_tests`` with ``coverage`` needs (``coverage_run``).
    has_coverage: bool = False
    has_pytest_cov: bool = False
    # (major, minor) of the interpreter: from 3.12 the per-test recorder is sys.monitoring's.
    version: tuple[int, ...] = ()
    # coverage.py's C tracer imports: ``COVERAGE_CORE=ctrace`` is safe (coverage.py exits when it is not).
    has_ctracer: bool = False


def find_python(config: ServerConfig, environ: Mapping[str, str] | None = None) -> Path:
    """The interpreter that runs the project's tests: ``config.python``, else
    ``<root>/.venv``, ``<root>/venv``, ``$VIRTUAL_ENV`` (from ``environ``, default
    ``os.environ``), else the server's own."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    if config.python is not None:
        return config.python
    exe = ("Scripts", "python.exe") if os.name == "nt" else ("bin", "python")
    candidates = [config.root / ".venv", config.root / "venv"]
    if env.get("VIRTUAL_ENV"):
        candidates.append(Path(env["VIRTUAL_ENV"]))
    for venv in candidates:
        python = venv.joinpath(*exe)
        if python.is_file() and os.access(python, os.X_OK):
            return python
    return Path(sys.executable)


async def probe_interpreter(python: str, *, cwd: Path, env: dict[str, str]) -> Interpreter:
    """Ask ``python`` (run in ``cwd``, the project's root, with ``env``) whether it
    imports pytest, which optional plugins it has, and which top-level packages of its
    distributions are the project's (installed from ``cwd`` or named as ``cwd``
    declares, ``project.INSTALLED_PROBE``).

    Raises ``ToolFailure(pytest_missing)`` naming the interpreter and the fix when it
    cannot be started, does not answer within ``PROBE_TIMEOUT_S``, or cannot import
    pytest.
    """
    # The root's distribution name goes in as an argument: the project's Python may lack tomllib.
    argv = [python, "-c", _PROBE, distribution_name(cwd) or ""]
    try:
        with anyio.fail_after(PROBE_TIMEOUT_S):
            proc = await anyio.run_process(argv, cwd=cwd, env=env, check=False)
    except OSError as exc:
        raise ToolFailure(
            "pytest_missing",
            f"cannot start the project's interpreter {python}: {exc}; start the server with "
            "--python pointing at the project's Python",
            command=argv,
        ) from None
    except TimeoutError:
        raise ToolFailure(
            "pytest_missing", f"{python} did not answer within {PROBE_TIMEOUT_S:.0f}s when asked for pytest"
        ) from None
    info = None
    try:
        info = json.loads(proc.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        pass
    if proc.returncode != 0 or not info or not info.get("pytest"):
        why = (info or {}).get("error") or proc.stderr.decode("utf-8", "replace").strip()[-ERROR_LINE_CHARS:]
        raise ToolFailure(
            "pytest_missing",
            f"pytest cannot be imported by the project's interpreter {python} ({why}); install it there "
            f"({python} -m pip install pytest) or start the server with --python pointing at the "
            "interpreter that has the project's test dependencies",
            exit_code=proc.returncode,
            stderr_tail=proc.stderr.decode("utf-8", "replace")[-TAIL_BYTES:] or None,
        )
    return Interpreter(
        python,
        has_xdist=bool(info["xdist"]),
        pytest_version=version_numbers(str(info["pytest"])),
        project_packages=tuple(str(n) for n in info.get("project_packages") or ()),
        has_coverage=bool(info.get("coverage")),
        has_pytest_cov=bool(info.get("pytest_cov")),
        version=tuple(int(n) for n in info.get("version") or ()),
        has_ctracer=bool(info.get("ctracer")),
    )


def version_numbers(version: str) -> tuple[int, ...]:
    """The leading dot-separated numbers of a version string: ``"8.3.0rc1"`` ->
    ``(8, 3, 0)``, ``"9.0.dev12+g1"`` -> ``(9, 0)``; ``()`` when it starts with no number."""
    numbers: list[int] = []
    for part in version.split("."):
        digits = re.match(r"\d+", part)
        if digits is None:
            break
        numbers.append(int(digits.group()))
        if digits.end() != len(part):
            break
    return tuple(numbers)
