"""Smoke test of an installed pytest-mcp-server (a wheel or sdist install, not the checkout).

    python scripts/smoke_installed.py path/to/examples/reports/demo.junit.xml

Run it with the interpreter of the environment under test; the console script is taken
from that environment's scripts directory (``bin``/``Scripts``). Checks, in order, and
stops at the first failure with exit status 1 and a line saying what failed:

1. ``pytest-mcp-server --version`` prints ``pytest-mcp-server <version>``;
2. ``pytest-mcp-server summarize DEMO`` exits 1 (the demo has failures) and its first line
   is the verdict ``FAILED 3 failed, 6 passed, 2 errors, 2 skipped, 1 xfailed in ...``;
3. the native backend is the one in use: ``engine.native_available()`` is True, backend
   ``auto`` resolves to ``native``, and the package and its extension are imported from
   the environment, not from a source checkout on ``sys.path``;
   the extension exports exactly ``NATIVE_NAMES`` (no test-only function ships);
4. without the ``bench`` extra (rich not importable), ``pytest-mcp-server bench reports``
   exits 2 and names the install command.

Used by scripts/check_wheel (Linux, Python 3.11-3.13) and .github/workflows/release.yml
(every built wheel on its own platform).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import NoReturn

VERDICT = "FAILED 3 failed, 6 passed, 2 errors, 2 skipped, 1 xfailed in "
BENCH_HINT = "pip install rich"
# The public names of pytest_mcp_server.engine._native (rust/binding/lib.rs, engine/_native.pyi).
NATIVE_NAMES = {"FORMATS", "summarize_files", "version"}


def _fail(what: str) -> NoReturn:
    print(f"smoke_installed: FAILED: {what}", file=sys.stderr)
    sys.exit(1)


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def main(argv: list[str]) -> int:
    """Run the checks on the report ``argv[0]``; returns 0 when all pass (exits 1 otherwise)."""
    if len(argv) != 1 or not Path(argv[0]).is_file():
        _fail("usage: smoke_installed.py DEMO_JUNIT_XML (an existing file: examples/reports/demo.junit.xml)")
    demo = str(Path(argv[0]).resolve())
    scripts = sysconfig.get_path("scripts")
    exe = shutil.which("pytest-mcp-server", path=scripts)
    if exe is None:
        _fail(f"the console script pytest-mcp-server is not in {scripts}")

    proc = _run([exe, "--version"])
    if proc.returncode != 0 or not proc.stdout.startswith("pytest-mcp-server "):
        _fail(f"--version exited {proc.returncode}: {proc.stdout!r} {proc.stderr!r}")
    print(f"ok: {proc.stdout.strip()}")

    proc = _run([exe, "summarize", demo])
    first = proc.stdout.splitlines()[0] if proc.stdout else ""
    if proc.returncode != 1 or not first.startswith(VERDICT):
        _fail(f"summarize {demo} exited {proc.returncode} (expected 1) with {first!r}; stderr {proc.stderr!r}")
    print(f"ok: summarize exits 1: {first}")

    from pytest_mcp_server import engine

    site_dirs = {Path(sysconfig.get_paths()[key]).resolve() for key in ("purelib", "platlib")}
    native_spec = importlib.util.find_spec("pytest_mcp_server.engine._native")
    origin = Path(native_spec.origin).resolve() if native_spec and native_spec.origin else None
    if not engine.native_available() or engine.resolve_backend("auto") != "native":
        _fail(f"the native backend is not in use (extension found at {origin})")
    for path in (Path(engine.__file__).resolve(), origin):
        if path is None or not site_dirs & set(path.parents):
            _fail(f"{path} is not in the environment's site-packages: a source checkout shadows the install")
    print(f"ok: native backend in use ({origin})")
    from pytest_mcp_server.engine import _native

    exported = {name for name in dir(_native) if not name.startswith("_")}
    if exported != NATIVE_NAMES:
        _fail(f"the extension exports {sorted(exported)}, not {sorted(NATIVE_NAMES)}")
    print(f"ok: the extension exports {sorted(exported)} only")

    if importlib.util.find_spec("rich") is None:
        proc = _run([exe, "bench", "reports"])
        if proc.returncode != 2 or BENCH_HINT not in proc.stderr:
            _fail(f"bench without the extra exited {proc.returncode}: {proc.stderr!r}")
        print("ok: bench without the extra exits 2 naming the install command")
    else:
        print("note: rich is installed here; the bench-without-extra check was not run")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
