"""The server's configuration: ``ServerConfig`` (command-line options, never an agent's),
the artifacts directory default, the server's name and version.

Imports neither the MCP SDK nor the workflows: the CLI checks the options with it before
the SDK is loaded, so a bad option fails fast.
"""

from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import platformdirs
from pydantic import Field, ValidationInfo, field_validator

from pytest_mcp_server.domain.policy import (
    DEFAULT_MAX_CONCURRENT,
    DEFAULT_MAX_TIMEOUT_S,
    DEFAULT_TASK_AFTER_S,
    DEFAULT_TASK_TTL_S,
    MAX_CONCURRENT_LIMIT,
    SERVER_NAME,
    TIMEOUT_LIMIT_S,
)
from pytest_mcp_server.engine.models import _Frozen


def package_version() -> str:
    """The installed version of ``pytest-mcp-server``, or ``"unknown"`` when running from
    a checkout that was never installed."""
    try:
        return version(SERVER_NAME)
    except PackageNotFoundError:  # pragma: no cover - a bare checkout
        return "unknown"


def default_artifacts_base() -> Path:
    """The user cache directory for run reports (``platformdirs.user_cache_dir``):
    ``$XDG_CACHE_HOME/pytest-mcp-server`` (``~/.cache`` when unset) on Linux,
    ``~/Library/Caches/pytest-mcp-server`` on macOS, ``%LOCALAPPDATA%\\pytest-mcp-server\\Cache``
    on Windows."""
    return Path(platformdirs.user_cache_dir(SERVER_NAME, appauthor=False))


def _unusable_directory(path: Path) -> str | None:
    """Why the directory ``path`` (absolute) could not hold the server's files, else
    None: it exists and is not a writable directory, or the nearest existing directory
    above it is one this user cannot create directories in. Creates nothing."""
    if path.exists():
        if not path.is_dir():
            return "exists and is not a directory"
        return None if os.access(path, os.W_OK | os.X_OK) else "is not writable"
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                return f"cannot be created: {parent} is not a directory"
            return None if os.access(parent, os.W_OK | os.X_OK) else f"cannot be created: {parent} is not writable"
    return "cannot be created"


class ServerConfig(_Frozen):
    """The server's own options (from the command line, never from an agent).

    ``root``: the project directory; every path an agent gives must resolve inside it
    (made absolute and symlink-free here). ``python``: the interpreter that runs the
    project's tests, or None to find one (``interpreter.find_python``).
    ``max_timeout_s``: the largest ``timeout_s`` an agent may get, seconds.
    ``max_concurrent``: pytest processes at once. ``artifacts_dir``: where run reports
    are kept (None: ``default_artifacts_base()``); it must not be inside ``root``.
    ``tasks``: whether a client that opts in to the MCP Tasks extension gets long
    ``execute_tests`` calls as tasks; ``task_after_s``: how long a call must be expected
    to run (or have run) to become one, seconds; ``task_ttl_s``: how long a task's answer
    is kept after its run ended, seconds (docs/SERVER.md, *Tasks*). ``warm_start``:
    whether runs start in a warm spare process (``run.warm``; docs/SERVER.md, *Warm
    start*).

    Raises ``pydantic.ValidationError`` when ``root`` is not a directory, ``python`` does
    not exist, or ``artifacts_dir`` is inside ``root`` or cannot be created and written
    (``_unusable_directory``).
    """

    root: Path
    python: Path | None = None
    max_timeout_s: float = Field(DEFAULT_MAX_TIMEOUT_S, gt=0, le=TIMEOUT_LIMIT_S)
    max_concurrent: int = Field(DEFAULT_MAX_CONCURRENT, ge=1, le=MAX_CONCURRENT_LIMIT)
    artifacts_dir: Path | None = None
    tasks: bool = True
    task_after_s: float = Field(DEFAULT_TASK_AFTER_S, ge=0, le=TIMEOUT_LIMIT_S)
    task_ttl_s: float = Field(DEFAULT_TASK_TTL_S, gt=0, le=TIMEOUT_LIMIT_S)
    warm_start: bool = True

    @field_validator("root")
    @classmethod
    def _root_is_a_directory(cls, value: Path) -> Path:
        resolved = value.expanduser().resolve()
        if not resolved.is_dir():
            raise ValueError(f"{value} is not a directory; pass the project directory with --root")
        return resolved

    @field_validator("python")
    @classmethod
    def _python_exists(cls, value: Path | None) -> Path | None:
        if value is None:
            return None
        path = value.expanduser()
        if not path.is_absolute():
            path = Path.cwd() / path
        if not path.is_file() or not os.access(path, os.X_OK):
            raise ValueError(f"{value} is not an executable file; pass the project's Python with --python")
        return path  # not resolved: a venv's python is a symlink whose location matters

    @field_validator("artifacts_dir")
    @classmethod
    def _artifacts_outside_root(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        if value is None:
            return None
        resolved = value.expanduser().resolve()
        root = info.data.get("root")
        if root is not None and (resolved == root or root in resolved.parents):
            raise ValueError(
                f"{resolved} is inside the project {root}; choose a directory outside it "
                "(reports must not land in the project)"
            )
        problem = _unusable_directory(resolved)
        if problem is not None:
            raise ValueError(f"{resolved} {problem}; choose a directory this user can create and write")
        return resolved

    @property
    def artifacts_base(self) -> Path:
        """``artifacts_dir``, or the user cache directory when it was not given."""
        return self.artifacts_dir or default_artifacts_base()
