"""The warm start: a spare process of the project's interpreter, started after each run,
that has imported pytest and the third-party modules the last run imported when the next
call hands it that call's argv; it runs pytest once, as ``python -m pytest`` would, and
exits (docs/SERVER.md, *Warm start*). Drip's way: a fresh spare per run, never forked, so
it works the same on Linux, macOS and Windows.

The spare's own side is ``pytest_mcp_server_spare`` in the plugin directory
(``events.PLUGIN_DIR``; its docstring gives the protocol): it never imports the project's
code, and it says when a module cannot be imported ahead of a run (``Spoiled``). This
module keeps at most one spare (``WarmStart``), hands it to one call at a time, and
checks before each use that nothing it imported could be stale:

* the interpreter and the run's environment are those it was started with (the run's
  ``RUN_MARKER`` token is the spare's own: one spare serves one run);
* every file it loaded or read while preloading (module files, a configuration file a
  plugin reads at import) is as it was (``recording.stat_key``), and the directories on
  its ``sys.path`` hold the same names (an install changes them; a new ``__pycache__``
  does not); a directory under the root may
  change, unless it now holds a module named as one the spare preloaded (the run would
  import that one);
* no ``sitecustomize``/``usercustomize`` of the user's or project's runs at start (it ran
  earlier in a spare than in a cold process): then warm starts stop.

A spare that fails a check, died, or did not get ready within ``SPARE_READY_WAIT_S`` is
discarded and the run starts cold, its answer saying why in one line
(``Runner.run_pytest`` puts it in ``ProcessOutcome.cold_start``). The spare is a run group
like a run's (``process.spawn_group``): listed in ``LIVE_GROUPS`` from its start, so a
server that stops kills it, and an idle spare also exits when its stdin closes (the
server gone). Nothing of it is in the project: its files are in
``<artifacts>/spares/``.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.machinery
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import orjson
import psutil

from pytest_mcp_server.domain.policy import (
    ERROR_LINE_CHARS,
    SPARE_EXCLUDED_MAX,
    SPARE_POLL_S,
    SPARE_READY_FACTOR,
    SPARE_READY_FLOOR_S,
    SPARE_READY_WAIT_S,
)
from pytest_mcp_server.run.process import (
    RUN_MARKER,
    ProcessOutcome,
    Started,
    forget_group,
    kill_group,
    output_files,
    spawn_group,
    supervise,
)
from pytest_mcp_server.run.pytest_plugin.pytest_mcp_server_shared import HASH_CHARS, stat_key

logger = logging.getLogger(__name__)

SPARE_MODULE = "pytest_mcp_server_spare"
"""The spare's program, beside the record plugin (``python -m pytest_mcp_server_spare``)."""
SPARES_DIR = "spares"
"""The spares' directory in the artifacts directory: one directory per spare, removed
when it is used or discarded."""
PYTEST_ARGV = ("-m", "pytest")
"""What follows the interpreter in every argv a spare can serve."""


@dataclass
class Spare:
    """One started spare: its process (``started``), the interpreter and environment it
    was started with (``env`` holds the run's token), its ``directory`` (config, ready
    file, the module list its run writes) and when it started (``time.monotonic()``)."""

    started: Started
    python: str
    env: dict[str, str]
    directory: Path
    since: float

    @property
    def ready_file(self) -> Path:
        """Where the spare writes what it preloaded (its docstring's READY)."""
        return self.directory / "ready.json"


@dataclass
class Known:
    """What the last run that went through a spare imported: the modules the next spare
    may preload, in import order (``[name, origin]``), and the directories under the
    root on its ``sys.path``."""

    modules: list[list[str]] = field(default_factory=list)
    shadow_dirs: list[str] = field(default_factory=list)


def stale_reason(ready: Mapping[str, Any], root: Path) -> str | None:
    """Why a spare whose ready file says ``ready`` could differ now from a cold process
    (a phrase for the answer's line), or None when it cannot. Blocking (one ``stat`` per
    file it loaded; a listing per changed directory under the root)."""
    root_dir = os.path.realpath(root)

    def shown(path: str) -> str:  # a project file by its path in the root: shorter
        real = os.path.realpath(path)
        return os.path.relpath(real, root_dir) if real.startswith(root_dir + os.sep) else path

    for path, key in (ready.get("files") or {}).items():
        if key is None:
            return f"{shown(path)} was gone when the warm spare had imported it"
        if stat_key(Path(path)) != key:
            return f"{shown(path)} changed since the warm spare imported it"
    tops = set(ready.get("tops") or ())
    for directory, (key, names) in (ready.get("dirs") or {}).items():
        if stat_key(Path(directory)) == key:
            continue
        if os.path.realpath(directory) == root_dir or os.path.realpath(directory).startswith(root_dir + os.sep):
            shadowing = sorted(tops & module_names(directory))
            if shadowing:
                return f"{shown(directory)} now holds {shadowing[0]}, which the warm spare imported from elsewhere"
            continue
        if names_hash(directory) != names:  # an entry came or went (an install), not a byte code cache
            return f"{directory} changed since the warm spare started (an install?)"
    return None


def names_hash(directory: str) -> str | None:
    """A hash of the names ``directory`` holds, ``__pycache__`` aside (the spare's
    ``_names_hash`` is its twin); None when it cannot be listed. Blocking."""
    try:
        names = sorted(name for name in os.listdir(directory) if name != "__pycache__")
    except OSError:
        return None
    return hashlib.sha256("\0".join(names).encode("utf-8", "surrogateescape")).hexdigest()[:HASH_CHARS]


def module_names(directory: str) -> set[str]:
    """The top-level names the modules and regular packages in ``directory`` give (the
    spare's ``_shadowed`` is its twin): a file with an import suffix, a directory holding
    ``__init__.py``. Blocking; empty when it cannot be listed."""
    suffixes = tuple(importlib.machinery.all_suffixes())
    names: set[str] = set()
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return names
    for entry in entries:
        if entry.name.endswith(suffixes):
            names.add(entry.name.split(".", 1)[0])
        elif "." not in entry.name and os.path.isfile(os.path.join(entry.path, "__init__.py")):
            names.add(entry.name)
    return names


def _read_text(path: Path) -> str:
    """The text of ``path``, empty when it cannot be read. Blocking."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""


def _without_token(env: Mapping[str, str]) -> dict[str, str]:
    return {name: value for name, value in env.items() if name != RUN_MARKER}


class WarmStart:
    """The warm spare of one project (``Runner.warm``): at most one at a time.

    ``take`` hands the spare to one run (or says why the run starts cold), ``run`` runs
    pytest in it, ``replenish`` starts the next one, ``close`` discards it. Calls are
    served one spare each: a second call while the spare is taken starts cold, silently
    (nothing could differ: there was no spare for it).
    """

    def __init__(self, root: Path, artifacts_base: Path) -> None:
        self.root = root
        self.base = artifacts_base / SPARES_DIR
        self._spare: Spare | None = None
        self._starting = False
        self._known = Known()
        self._excluded: set[str] = set()
        self._off: str | None = None
        self._count = 0
        self._last_preload_s = 0.0
        self._last_run_s = 0.0
        self._clear_leftovers()

    @property
    def off(self) -> str | None:
        """Why warm starts stopped for this server's life, or None."""
        return self._off

    @property
    def idle(self) -> Spare | None:
        """The spare waiting for a run, if any (not taken)."""
        return self._spare

    def _clear_leftovers(self) -> None:
        """Remove the directories of spares of servers that no longer run."""
        try:
            entries = list(self.base.iterdir())
        except OSError:
            return
        for entry in entries:
            owner = entry.name.split("-", 1)[0]
            if owner.isdigit() and int(owner) != os.getpid() and not psutil.pid_exists(int(owner)):
                shutil.rmtree(entry, ignore_errors=True)

    async def replenish(self, python: str, env: dict[str, str], project_packages: tuple[str, ...]) -> None:
        """Start the next spare of ``python`` with ``env`` (the child's environment for
        a run, its token included) unless one is there or starting, or warm starts are
        off. ``project_packages``: the project's top-level names (never imported by the
        spare). Never raises: a spare that cannot start is logged, and runs start cold."""
        if self._spare is not None or self._starting or self._off is not None:
            return
        self._starting = True
        try:
            self._count += 1
            directory = self.base / f"{os.getpid()}-{self._count}"
            config = {
                "root": str(self.root),
                "exclude": sorted({*project_packages, *self._excluded}),
                "modules": self._known.modules,
                "shadow_dirs": self._known.shadow_dirs,
                "ready": str(directory / "ready.json"),
            }

            def write() -> None:
                directory.mkdir(parents=True, exist_ok=True)
                (directory / "config.json").write_bytes(orjson.dumps(config))

            await anyio.to_thread.run_sync(write)
            out, err = output_files()
            argv = [python, "-m", SPARE_MODULE, str(directory / "config.json")]
            try:
                proc, group = await spawn_group(
                    argv, cwd=self.root, env=env, stdout=out.fd, stderr=err.fd, stdin=subprocess.PIPE
                )
            except OSError:
                out.text(), err.text()  # closes them
                raise
            self._spare = Spare(Started(proc, group, out, err), python, dict(env), directory, time.monotonic())
        except OSError as exc:
            logger.warning("the warm spare could not be started (%s): runs start cold", exc)
        finally:
            self._starting = False

    async def take(self, argv: list[str], env: Mapping[str, str]) -> tuple[Spare | None, str | None]:
        """The spare for a run of ``argv`` with ``env`` (its token aside), taken: no
        other call gets it; or (None, why the run starts cold) when a spare was there but
        could differ from a cold process (the phrase for the answer's line); (None,
        None) when there was none, or ``argv`` is not ``python -m pytest ...``."""
        spare = self._spare
        if spare is None or tuple(argv[1:3]) != PYTEST_ARGV:
            return None, None
        self._spare = None
        try:
            why = await self._unusable(spare, argv[0], env)
        except BaseException:  # the call was cancelled while the spare finished its preload
            await self.discard(spare)
            raise
        if why is not None:
            await self.discard(spare)
            logger.info("warm spare not used: %s", why)
            return None, why
        return spare, None

    async def _unusable(self, spare: Spare, python: str, env: Mapping[str, str]) -> str | None:
        if spare.python != python:
            return "the warm spare was started for another interpreter"
        if _without_token(spare.env) != _without_token(env):
            return "the server's environment changed since the warm spare started"
        ready = await self._wait_ready(spare)
        if isinstance(ready, str):
            return ready
        if ready.get("sitecustomize"):
            self._off = f"{ready['sitecustomize']} runs at interpreter start, earlier in a spare than in a cold run"
            logger.warning("warm starts off: %s", self._off)
            return self._off
        spoiled = ready.get("spoiled")
        if spoiled:
            module = str(spoiled.get("module") or "")
            self._excluded.add(module.partition(".")[0])
            if len(self._excluded) > SPARE_EXCLUDED_MAX:
                self._off = f"more than {SPARE_EXCLUDED_MAX} modules cannot be imported ahead of a run"
            why = spoiled.get("why")
            return f"the warm spare could not import {module} ahead of the run ({why}); it is left out next time"
        return await anyio.to_thread.run_sync(stale_reason, ready, self.root)

    async def _wait_ready(self, spare: Spare) -> dict[str, Any] | str:
        """The spare's ready file once written, or why not (it exited, or did not get
        ready within ``SPARE_READY_WAIT_S``)."""
        proc = spare.started.proc
        # a preload imports what the last run did, which that run's own time bounds: one
        # taking far longer hangs (at most SPARE_READY_WAIT_S)
        known = max(self._last_preload_s, self._last_run_s)
        patience = min(SPARE_READY_WAIT_S, max(SPARE_READY_FLOOR_S, SPARE_READY_FACTOR * known))
        deadline = spare.since + patience
        while True:
            try:
                data = await anyio.to_thread.run_sync(spare.ready_file.read_bytes)
                ready = dict(orjson.loads(data))
                self._last_preload_s = float(ready.get("seconds") or 0.0)
                return ready
            except (OSError, orjson.JSONDecodeError, ValueError, TypeError):
                pass
            if proc.returncode is not None:
                return f"the warm spare had exited (status {proc.returncode}) before the call"
            if time.monotonic() > deadline:
                importing = await anyio.to_thread.run_sync(_read_text, spare.directory / "importing")
                if importing:
                    self._excluded.add(importing.partition(".")[0])
                    return (
                        f"the warm spare was still importing {importing} {patience:g}s after it started; "
                        "it is left out next time"
                    )
                return f"the warm spare was not ready {patience:g}s after it started"
            await anyio.sleep(SPARE_POLL_S)

    async def run(
        self,
        spare: Spare,
        argv: list[str],
        timeout_s: float,
        watch: Callable[[], Coroutine[Any, Any, None]] | None = None,
        on_timeout: Callable[[int], Awaitable[None]] | None = None,
    ) -> ProcessOutcome | str:
        """Hand ``argv`` (``python -m pytest ARGS``) to a taken spare and supervise the
        run as ``process.run_process`` does (timeout, cancellation, the whole group
        stopped after it); then keep the module list it wrote for the next spare.
        Returns the outcome, or why the spare could not be handed the run (it died since
        ``take``: nothing ran, the caller starts it cold)."""
        request = orjson.dumps({"args": argv[3:], "modules": str(spare.directory / "modules.json")})
        stdin = spare.started.proc.stdin
        try:
            assert stdin is not None
            await stdin.send(request)
            await stdin.aclose()
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            await self.discard(spare)
            return f"the warm spare could not be handed the run ({type(exc).__name__})"
        try:
            outcome = await supervise(spare.started, timeout_s=timeout_s, watch=watch, on_timeout=on_timeout)
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._keep_modules, spare.directory)
        self._last_run_s = outcome.duration_s
        return outcome

    def _keep_modules(self, directory: Path) -> None:
        """Read what the spare's run imported (its ``modules.json``) for the next spare,
        then remove the spare's directory. Blocking."""
        try:
            data = orjson.loads((directory / "modules.json").read_bytes())
            self._known = Known(list(data.get("modules") or []), list(data.get("shadow_dirs") or []))
        except (OSError, orjson.JSONDecodeError, AttributeError):
            pass  # a run killed before it wrote it: the next spare preloads what it knew
        shutil.rmtree(directory, ignore_errors=True)

    async def discard(self, spare: Spare) -> None:
        """Stop a spare that will not run (its stdin closed: an idle one exits; then its
        group stopped as a run's) and remove its files. Shielded."""
        with anyio.CancelScope(shield=True):
            proc = spare.started.proc
            if proc.stdin is not None:
                with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await proc.stdin.aclose()
            await kill_group(spare.started.group)
            forget_group(spare.started.group)
            with anyio.move_on_after(5):
                await proc.aclose()
            tail = spare.started.err.text()
            spare.started.out.text()
            if proc.returncode not in (None, 0) and tail.strip():
                logger.info("a discarded warm spare's stderr: %s", tail.strip()[-ERROR_LINE_CHARS:])
            await anyio.to_thread.run_sync(partial(shutil.rmtree, spare.directory, ignore_errors=True))

    async def close(self) -> None:
        """Discard the idle spare, if any (server shutdown; a run in a taken spare is
        stopped by its own call)."""
        spare, self._spare = self._spare, None
        if spare is not None:
            await self.discard(spare)
