"""The warm spare: a process of the project's interpreter that imports pytest and the
third-party modules the last run imported, then waits for one run's arguments and runs
pytest once, in-process, as ``python -m pytest`` would, and exits (docs/SERVER.md,
*Warm start*). Drip's way: a fresh spare per run, never forked, never reused.

Not for users: the server (``run.warm``) starts it as ``python -m
pytest_mcp_server_spare CONFIG`` in the project's root, with the environment of the run
it will serve (the run's ``PYTEST_MCP_SERVER_RUN`` token included: one spare, one run),
in a process group of its own, its stdout and stderr the run's output files, its stdin a
pipe. It imports nothing of the server, only the standard library (Python 3.8+), as the
record plugin beside it.

CONFIG (JSON, written by the server): ``{"root", "exclude": [top-level names never
imported here: the project's packages, and modules an earlier spare found unsafe],
"modules": [[name, origin], ...] (the last run's, in import order), "shadow_dirs": [the
directories under the root on the last run's sys.path], "ready": path}``.

1. Preload: ``import pytest`` (with ``PYTEST_VERSION`` set as pytest's ``main`` sets it
   before its plugins load, from pytest 8.2), then each module of ``modules`` in order,
   when it is not the project's (under the root outside any site directory, or under an
   excluded name), its parent was imported, it resolves to the same file as in the last
   run, and no directory under the root on the last run's ``sys.path`` holds a module of
   that top-level name (the run would import that one). Any of these makes the spare
   *spoiled* (it writes why, names the module, and exits without running anything): an
   import that raises, that emits a warning (pytest would have recorded it in the run),
   that imports a module of the project, or that leaves open a file under the root.
   Warnings are caught without losing the filters a module adds at import.
2. Writes READY (JSON, atomically): ``{"pid", "spoiled": null or {"module", "why"},
   "files": {path: stat key} (every module file loaded, every file opened while
   preloading), "dirs": {directory: [stat key, names hash]} (sys.path's directories and
   the shadow directories; the hash of the names each holds, ``__pycache__`` aside),
   "tops": [top-level names preloaded], "sitecustomize": path or null (a
   sitecustomize/usercustomize outside the base installation), "seconds"}``, and the
   module being imported in a file ``importing`` beside it while preloading.
3. Waits for stdin to close. Empty: exits (the server stopped or discarded it).
   Otherwise the JSON ``{"args": [pytest's arguments], "modules": path}``: stdin becomes
   the null device (as a cold run's), ``PYTEST_VERSION`` is removed again, ``sys.argv``
   and ``sys.orig_argv`` become those of ``python -m pytest ARGS``, and pytest runs as
   ``-m`` runs it (``runpy.run_module("pytest", run_name="__main__", alter_sys=True)``),
   its ``SystemExit`` leaving this process as it would leave a cold one.
4. Before leaving, writes to ``modules`` the modules loaded, in import order, that the
   next spare may preload: ``{"modules": [[name, origin], ...], "shadow_dirs": [...]}``,
   leaving out the project's, pytest's assertion-rewritten ones (the next run's pytest
   rewrites them as it imports them: a preloaded one would not be), and those first
   imported while the environment differed from the run's start (a conftest that sets
   a variable and then imports a library that reads it at import), watched by a finder
   on ``sys.meta_path`` that answers nothing.
"""

from __future__ import annotations

import builtins
import hashlib
import importlib
import importlib.machinery
import importlib.util
import io
import json
import os
import runpy
import sys
import time
import warnings
import weakref
from typing import Any

_VOLATILE_ENV = ("PYTEST_CURRENT_TEST", "PYTEST_VERSION")
"""Variables pytest itself sets while it runs (not the project's doing)."""


def _stat_key(path: str) -> str | None:
    # the server's run.recording.stat_key, the same string on both sides
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"


_REAL_DIRS: dict[str, str] = {}


def _real(path: str) -> str:
    # the real path, its directory's resolved once (a thousand modules share a few dozen
    # directories: the module list is made on the run's way out)
    head, tail = os.path.split(path)
    real_head = _REAL_DIRS.get(head)
    if real_head is None:
        real_head = _REAL_DIRS[head] = os.path.realpath(head)
    joined = os.path.join(real_head, tail)
    return os.path.normcase(os.path.realpath(joined) if os.path.islink(joined) else joined)


class _Places:
    """Where a file is: the project's (under the root, outside the interpreter's own
    directories and any site directory), or not."""

    def __init__(self, root: str) -> None:
        self.root = _real(root)
        outside = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.abspath(__file__))}
        self.outside = tuple(_real(p) + os.sep for p in outside)

    def project(self, path: str | None) -> bool:
        if not path:
            return False
        real = _real(path)
        if not real.startswith(self.root + os.sep):
            return False
        if real.startswith(self.outside):
            return False
        parts = real[len(self.root) :].split(os.sep)
        return not any(p in ("site-packages", "dist-packages") for p in parts)


def _origin(module: Any) -> str | None:
    spec = getattr(module, "__spec__", None)
    if spec is None or not getattr(spec, "has_location", False):
        return None
    origin = spec.origin
    return origin if isinstance(origin, str) else None


class _Opened:
    """Every file opened through ``open``/``io.open``/``os.open`` while active (the
    import system's own reads go through ``io.open_code``, not counted): their paths,
    and the ones under the root still open afterwards."""

    def __init__(self, places: _Places) -> None:
        self.places = places
        self.paths: dict[str, str] = {}  # path -> the module being imported
        self.objects: list[tuple[Any, str, str]] = []  # (weakref or fd, path, module)
        self.module = ""
        self._saved = (builtins.open, io.open, os.open)

    def __enter__(self) -> _Opened:
        real_open, real_io_open, real_os_open = self._saved

        def note(file: Any) -> str | None:
            if isinstance(file, int):
                return None
            try:
                path = os.path.abspath(os.fsdecode(file))
            except (TypeError, ValueError):
                return None
            self.paths.setdefault(path, self.module)
            return path

        def open_(file: Any, *args: Any, **kwargs: Any) -> Any:
            handle = real_io_open(file, *args, **kwargs)
            path = note(file)
            if path is not None and self.places.project(path):
                try:
                    self.objects.append((weakref.ref(handle), path, self.module))
                except TypeError:
                    pass
            return handle

        def os_open(path: Any, *args: Any, **kwargs: Any) -> int:
            fd = real_os_open(path, *args, **kwargs)
            name = note(path)
            if name is not None and self.places.project(name):
                self.objects.append((fd, name, self.module))
            return fd

        builtins.open = io.open = open_
        os.open = os_open
        return self

    def __exit__(self, *exc: object) -> None:
        builtins.open, io.open, os.open = self._saved

    def still_open(self) -> tuple[str, str] | None:
        """(path, module) of a project file opened here and still open."""
        for held, path, module in self.objects:
            if isinstance(held, int):
                try:
                    same = os.path.samestat(os.fstat(held), os.stat(path))
                except OSError:
                    continue
                if same:
                    return path, module
            else:
                handle = held()
                if handle is not None and not getattr(handle, "closed", True):
                    return path, module
        return None


class _Spoiled(Exception):
    def __init__(self, module: str, why: str) -> None:
        super().__init__(why)
        self.module = module
        self.why = why


def _import_quietly(name: str, caught: list[warnings.WarningMessage]) -> None:
    """Import ``name`` with every warning caught (``caught``), keeping the filters the
    import itself adds (``catch_warnings`` would drop them)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ours = warnings.filters[0]
        importlib.import_module(name)
        added = [f for f in warnings.filters if f is not ours]
    caught.extend(seen)
    if added != warnings.filters:
        warnings.filters[:] = added  # type: ignore[index]
        mutated = getattr(warnings, "_filters_mutated", None)  # the C side's cache (before 3.14)
        if mutated is not None:
            mutated()


def _shadowed(shadow_dirs: list[str]) -> set[str]:
    """Top-level names a module or regular package in ``shadow_dirs`` gives (the run's
    import would find the project's file first; a directory without ``__init__`` is a
    namespace portion, which never hides a module found later on sys.path). The
    server's ``run.warm.module_names`` is its twin."""
    suffixes = tuple(importlib.machinery.all_suffixes())
    names: set[str] = set()
    for directory in shadow_dirs:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith(suffixes):
                names.add(entry.name.split(".", 1)[0])
            elif "." not in entry.name and os.path.isfile(os.path.join(entry.path, "__init__.py")):
                names.add(entry.name)
    return names


class _Progress:
    """The module being imported, in a file of the spare's directory: a preload that
    hangs names its module (the server leaves it out of the next spare)."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)

    def now(self, name: str) -> None:
        data = name.encode("utf-8", "surrogateescape")
        os.lseek(self.fd, 0, os.SEEK_SET)
        os.write(self.fd, data)
        os.ftruncate(self.fd, len(data))

    def close(self) -> None:
        os.close(self.fd)


def _preload(config: dict[str, Any], places: _Places) -> tuple[dict[str, Any] | None, _Opened, list[str]]:
    exclude = set(config.get("exclude") or ())
    shadowed = _shadowed([config["root"], *(config.get("shadow_dirs") or ())])
    opened = _Opened(places)
    preloaded: list[str] = []
    progress = _Progress(os.path.join(os.path.dirname(config["ready"]), "importing"))
    try:
        return _preload_with(config, places, exclude, shadowed, opened, preloaded, progress)
    finally:
        progress.close()


def _preload_with(
    config: dict[str, Any],
    places: _Places,
    exclude: set[str],
    shadowed: set[str],
    opened: _Opened,
    preloaded: list[str],
    progress: _Progress,
) -> tuple[dict[str, Any] | None, _Opened, list[str]]:
    with opened:
        try:
            caught: list[warnings.WarningMessage] = []
            opened.module = "pytest"
            progress.now("pytest")
            try:
                _import_quietly("pytest", caught)
            except BaseException as exc:  # noqa: BLE001 - a cold run would fail the same way
                raise _Spoiled("pytest", f"importing it raised {type(exc).__name__}: {exc}") from None
            if caught:
                raise _Spoiled("pytest", f"importing it warned: {caught[0].message}")
            _set_pytest_version()
            for name, origin in config.get("modules") or ():
                if name in sys.modules:
                    continue
                top, _, _ = name.partition(".")
                parent = name.rpartition(".")[0]
                if top in exclude or top in shadowed or (parent and parent not in sys.modules):
                    continue
                try:
                    spec = importlib.util.find_spec(name)
                except Exception:  # a finder failing: leave the module to the run
                    continue
                if spec is None or spec.origin != origin or places.project(origin):
                    continue
                before = set(sys.modules)
                opened.module = name
                progress.now(name)
                try:
                    _import_quietly(name, caught)
                except BaseException as exc:  # noqa: BLE001 - whatever it raised, the run would meet it
                    raise _Spoiled(name, f"importing it raised {type(exc).__name__}: {exc}") from None
                if caught:
                    raise _Spoiled(name, f"importing it warned: {caught[0].message}")
                for new in set(sys.modules) - before:
                    module = sys.modules.get(new)
                    if new.partition(".")[0] in exclude or places.project(_origin(module)):
                        raise _Spoiled(name, f"importing it imported the project's {new}")
                preloaded.append(name)
            held = opened.still_open()
            if held is not None:
                raise _Spoiled(held[1], f"importing it left {held[0]} open")
        except _Spoiled as spoiled:
            return {"module": spoiled.module, "why": spoiled.why}, opened, preloaded
    return None, opened, preloaded


def _customize() -> str | None:
    """A sitecustomize/usercustomize run at start from outside the base installation
    (the user's or the project's, not the distribution's): it ran earlier here than in a
    cold process."""
    base = tuple(_real(p) + os.sep for p in {sys.base_prefix, sys.base_exec_prefix})
    for name in ("sitecustomize", "usercustomize"):
        origin = _origin(sys.modules.get(name))
        if origin and not _real(origin).startswith(base):
            return origin
    return None


def _names_hash(directory: str) -> str | None:
    # the server's run.warm.names_hash: what a directory holds, byte code caches aside
    try:
        names = sorted(name for name in os.listdir(directory) if name != "__pycache__")
    except OSError:
        return None
    return hashlib.sha256("\0".join(names).encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _write_json(path: str, data: object) -> None:
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8") as f:
        json.dump(data, f)
    os.replace(temporary, path)


def _file_key(files: dict[str, str | None], path: str) -> None:
    """Add ``path``'s stat key to ``files``; a module inside a zip archive counts by the
    archive's (a path that is gone counts as None: the server does not use the spare)."""
    key = _stat_key(path)
    if key is None:
        parent = os.path.dirname(path)
        while parent and parent != os.path.dirname(parent):
            if os.path.isfile(parent):
                path, key = parent, _stat_key(parent)
                break
            parent = os.path.dirname(parent)
    files.setdefault(path, key)


def _ready(config: dict[str, Any], spoiled: dict[str, Any] | None, opened: _Opened, tops: list[str], t0: float) -> None:
    files: dict[str, str | None] = {}
    _file_key(files, sys.executable)
    for module in list(sys.modules.values()):
        origin = _origin(module)
        if origin and origin not in files:
            _file_key(files, origin)
    for path in opened.paths:
        # a file opened and gone again outside the root (a temporary file) says nothing
        if path not in files and (opened.places.project(path) or _stat_key(path) is not None):
            _file_key(files, path)
    dirs = {}
    for directory in [*sys.path, config["root"], *(config.get("shadow_dirs") or ())]:
        path = os.path.abspath(directory or ".")
        dirs[path] = [_stat_key(path), _names_hash(path)]
    _write_json(
        config["ready"],
        {
            "pid": os.getpid(),
            "spoiled": spoiled,
            "files": files,
            "dirs": dirs,
            "tops": sorted({name.partition(".")[0] for name in tops}),
            "sitecustomize": _customize(),
            "seconds": round(time.monotonic() - t0, 3),
        },
    )


def _read_request() -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(0, 65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


class _ImportWatch:
    """A ``sys.meta_path`` finder that finds nothing: it notes the modules first
    imported while the environment differed from the run's start (pytest's own
    variables aside)."""

    def __init__(self) -> None:
        self.start = self._env()
        self.differed: set[str] = set()

    @staticmethod
    def _env() -> dict[Any, Any]:
        data = dict(getattr(os.environ, "_data", os.environ))
        for name in _VOLATILE_ENV:
            data.pop(os.environ.encodekey(name) if hasattr(os.environ, "encodekey") else name, None)
        return data

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if self._env() != self.start:
            self.differed.add(name)
        return None


def _next_modules(places: _Places, exclude: set[str], watch: _ImportWatch) -> dict[str, Any]:
    try:
        from _pytest.assertion.rewrite import AssertionRewritingHook
    except ImportError:  # pragma: no cover - every supported pytest has it
        AssertionRewritingHook = ()  # type: ignore[assignment,misc]
    modules = []
    for name, module in list(sys.modules.items()):
        origin = _origin(module)
        if origin is None or name in ("__main__", "__mp_main__") or name in watch.differed:
            continue
        if name.partition(".")[0] in exclude or places.project(origin):
            continue
        if isinstance(getattr(module.__spec__, "loader", None), AssertionRewritingHook):
            continue
        modules.append([name, origin])
    shadow = [os.path.abspath(p or ".") for p in sys.path]
    return {"modules": modules, "shadow_dirs": [p for p in shadow if places.project(p + os.sep + "x")]}


def _set_pytest_version() -> None:
    """Set ``sys.argv[0]`` as ``python -m pytest`` has it, and ``PYTEST_VERSION`` as
    pytest's ``main`` does (from 8.2) before it loads the plugins: what a module
    imported during a run reads of them."""
    pytest = sys.modules["pytest"]
    # what a plugin reading sys.argv at import sees in a cold run (its arguments aside)
    sys.argv = [os.path.join(os.path.dirname(str(pytest.__file__)), "__main__.py")]
    version = tuple(int(p) for p in pytest.__version__.split(".")[:2] if p.isdigit())
    if version >= (8, 2) and "PYTEST_VERSION" not in os.environ:
        os.environ["PYTEST_VERSION"] = pytest.__version__
        _SET.append("PYTEST_VERSION")


_SET: list[str] = []
"""The variables the preload set (removed again before the run: pytest sets them)."""


def main() -> None:
    t0 = time.monotonic()
    with open(sys.argv[1], encoding="utf-8") as f:
        config = json.load(f)
    places = _Places(config["root"])
    sys.argv = ["pytest"]
    spoiled, opened, preloaded = _preload(config, places)
    _ready(config, spoiled, opened, preloaded, t0)
    if spoiled is not None:
        return
    request = _read_request()
    if not request:
        return
    job = json.loads(request)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    for name in _SET:
        os.environ.pop(name, None)
    args = list(job["args"])
    sys.argv = [sys.argv[0], *args]
    if hasattr(sys, "orig_argv"):
        sys.orig_argv = [sys.orig_argv[0], "-m", "pytest", *args]
    watch = _ImportWatch()
    sys.meta_path.insert(0, watch)
    exclude = set(config.get("exclude") or ())
    try:
        runpy.run_module("pytest", run_name="__main__", alter_sys=True)
    finally:
        try:
            _write_json(job["modules"], _next_modules(places, exclude, watch))
        except Exception:  # noqa: BLE001 - the next spare preloads less; the run's answer stands
            pass


if __name__ == "__main__":
    main()
