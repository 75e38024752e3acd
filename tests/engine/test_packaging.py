"""What an install that lacks a part still does: the package without its Rust extension,
and without the ``bench`` extra.

Each case runs in a fresh interpreter whose import system refuses the missing module (a
meta path finder raising ``ModuleNotFoundError`` for it, installed before the package is
imported), as on a platform with no wheel and no Rust, or a base install:

* without ``pytest_mcp_server.engine._native``: ``engine.native_available()`` is False, backend
  ``auto`` answers through the pure backend with the very bytes the native backend gives
  for the same files (examples/reports and a few corpus files), and the CLI's
  ``summarize`` prints the same text and JSON;
* without ``rich``: every module of the base package imports and ``summarize`` works, and
  ``pytest-mcp-server bench`` exits 2 naming what is missing and the install command.

The wheel itself (manylinux tag, installs without Rust on 3.11-3.13) is checked by
``scripts/check_wheel``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from helpers import backends, corpus

from pytest_mcp_server.bench import INSTALL_HINT
from pytest_mcp_server.engine import summarize_bytes

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_REPORTS = sorted(p for p in (REPO / "examples" / "reports").iterdir() if p.is_file())
# A few files of each format and dialect, by corpus id (tests/helpers/corpus.py; the shared ones
# when present). The whole corpora are compared in test_junit_corpus.py.
CORPUS_FILES = [
    rel
    for rel in (
        "dialects/json/pytest-json-report.json",
        "dialects/junit/pytest-xunit1.xml",
        "dialects/junit/surefire-flaky-reruns.xml",
        "dialects/junit/nested-suites.xml",
        "shared/pytest-json-report/sample_report.json",
        "shared/action-junit-report/test_results/python/report.xml",
        "shared/action-junit-report/test_results/maven_surefire_flaky/surefire-report.xml",
        "shared/action-junit-report/test_results/nested/multi-level.xml",
    )
    if corpus.available(rel)
]


def _blocking(modules: tuple[str, ...], code: str) -> str:
    """Python source that makes ``modules`` (and their submodules) unimportable, then runs
    ``code``."""
    return (
        "import sys\n"
        f"BLOCKED = {modules!r}\n"
        "class NotInstalled:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name in BLOCKED or name.startswith(tuple(m + '.' for m in BLOCKED)):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, NotInstalled())\n" + code
    )


def _run(args: list[str], *, block: tuple[str, ...] = (), timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    """The CLI (``pytest-mcp-server ARGS``) in a fresh interpreter, with ``block`` unimportable."""
    code = _blocking(block, "from pytest_mcp_server.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, timeout=timeout, cwd=REPO)


def _pure_fallback_summaries(paths: list[Path], out: Path) -> dict[str, object]:
    """Summarise each of ``paths`` with backend ``auto`` in an interpreter where the
    extension does not import; writes ``<out>/<i>.json`` per path and returns what the
    engine said about its backends there."""
    code = _blocking(
        ("pytest_mcp_server.engine._native",),
        "import json\n"
        "from pathlib import Path\n"
        "from pytest_mcp_server import engine\n"
        "out = Path(sys.argv[1])\n"
        "facts = {'native_available': engine.native_available(), 'auto': engine.resolve_backend('auto')}\n"
        "try:\n"
        "    engine.resolve_backend('native')\n"
        "except RuntimeError as exc:\n"
        "    facts['native_refused'] = str(exc)\n"
        "for i, path in enumerate(sys.argv[2:]):\n"
        "    (out / f'{i}.json').write_bytes(engine.summarize_bytes(path, backend='auto'))\n"
        "print(json.dumps(facts))\n",
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(out), *map(str, paths)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    facts: dict[str, object] = json.loads(proc.stdout)
    return facts


def _assert_pure_fallback_matches_native(paths: list[Path], tmp_path: Path) -> None:
    facts = _pure_fallback_summaries(paths, tmp_path)
    assert facts["native_available"] is False
    assert facts["auto"] == "pure"
    assert "pytest_mcp_server.engine._native did not import" in str(facts.get("native_refused"))
    for i, path in enumerate(paths):
        fallback = (tmp_path / f"{i}.json").read_bytes()
        assert fallback == summarize_bytes(path, backend="native"), path


@backends.needs_native
def test_without_the_extension_auto_uses_pure_with_the_native_bytes_on_the_examples(tmp_path: Path) -> None:
    """The examples shipped in the sdist summarise identically when the extension is missing."""
    assert EXAMPLE_REPORTS, "examples/reports is empty"
    _assert_pure_fallback_matches_native(EXAMPLE_REPORTS, tmp_path)


@backends.needs_native
def test_without_the_extension_auto_uses_pure_with_the_native_bytes_on_corpus_files(tmp_path: Path) -> None:
    """JUnit XML dialects and pytest-json-report files, through the fallback."""
    _assert_pure_fallback_matches_native([corpus.path(rel) for rel in CORPUS_FILES], tmp_path)


@backends.needs_native
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_cli_summarize_without_the_extension_prints_what_the_native_backend_prints(as_json: bool) -> None:
    """``pytest-mcp-server summarize`` on an install without the extension: same exit
    status (1: the demo has failures), same output."""
    args = ["summarize", str(REPO / "examples" / "reports" / "demo.junit.xml"), *(["--json"] if as_json else [])]
    fallback = _run(args, block=("pytest_mcp_server.engine._native",))
    native = _run([*args, "--backend", "native"])
    assert (fallback.returncode, native.returncode) == (1, 1), (fallback.stderr, native.stderr)
    assert fallback.stderr == b""
    assert fallback.stdout == native.stdout
    assert fallback.stdout.startswith(b'{"' if as_json else b"FAILED 3 failed, 6 passed, 2 errors, 2 skipped")


def test_bench_without_the_extra_exits_2_naming_the_missing_package_and_the_install_command() -> None:
    """The bench extra is optional: without rich, ``bench`` explains itself instead of a traceback."""
    proc = _run(["bench", "reports", "--sizes", "1kB"], block=("rich",))
    assert proc.returncode == 2
    assert proc.stdout == b""
    err = proc.stderr.decode()
    assert "Traceback" not in err
    assert "the benchmarks need rich, which is not installed" in err
    assert INSTALL_HINT == "pip install rich"
    assert err.rstrip().endswith(INSTALL_HINT)


@pytest.mark.parametrize("args", [["bench", "--help"], ["bench", "suite", "--help"]])
def test_bench_help_works_without_the_extra(args: list[str]) -> None:
    """``bench --help`` tells a user of the base install what the command does before
    they install anything."""
    proc = _run(args, block=("rich",))
    assert proc.returncode == 0, proc.stderr
    assert b"usage: pytest-mcp-server bench" in proc.stdout and b"Traceback" not in proc.stderr


def test_the_user_bench_extra_holds_what_the_bench_command_needs_and_no_benchmark_script_tool() -> None:
    """cosmic-ray (and through it sqlalchemy, aiohttp, gitpython) and the token counter
    are the benchmark scripts' needs (benches/requirements.txt), not a user's."""
    extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["bench"]
    names = {re.split(r"[<>=!~\[ ]", spec, maxsplit=1)[0] for spec in extra}
    assert names == {"rich", "matplotlib", "lxml", "junitparser"}
    scripts = (REPO / "benches" / "requirements.txt").read_text()
    assert "cosmic-ray" in scripts and "bpe-openai" in scripts


def test_base_package_never_imports_bench_dependencies() -> None:
    """Every module outside ``bench`` imports, and ``summarize`` runs, with rich unimportable:
    the base install (which does not have it) works."""
    code = _blocking(
        ("rich",),
        "import importlib, pkgutil\n"
        "import pytest_mcp_server as pkg\n"
        "names = [m.name for m in pkgutil.walk_packages(pkg.__path__, 'pytest_mcp_server.')\n"
        "         if not m.name.startswith(('pytest_mcp_server.bench', 'pytest_mcp_server.__main__'))]\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "from pytest_mcp_server.cli import main\n"
        "status = main(['summarize', 'examples/reports/demo.junit.xml'])\n"
        "print(len(names), status)\n",
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    imported, status = proc.stdout.splitlines()[-1].split()
    assert int(imported) >= 10  # the package's modules were walked, not an empty list
    assert status == "1"
