"""Where the shared corpus of real-world reports is, for the tests that read it.

The corpus (JUnit XML and JSON files of other projects' test suites, listed in its
SOURCES.txt) lives outside the repository, in ``../shared/corpus`` next to the repository
root; the environment variable ``PYTEST_MCP_CORPUS`` points elsewhere. When it is missing,
every test that reads it is skipped with ``MISSING_REASON`` (never failed):

* ``ROOT``: the corpus directory (it may not exist); ``AVAILABLE``: whether it does.
* ``files(pattern)``: the corpus files matching a glob, sorted (empty when missing).
* ``params(paths)``: ``pytest.param`` per file, identified by its path in the corpus, or a
  single skipped param when the corpus is missing (for ``pytest.mark.parametrize``).
* ``needs_corpus``: the marker that skips a test when the corpus is missing; the
  ``corpus_dir`` fixture of tests/conftest.py gives ``ROOT`` or skips.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pytest

ENV_VAR = "PYTEST_MCP_CORPUS"
REPOSITORY_ROOT = Path(__file__).resolve().parent.parent
ROOT = Path(os.environ.get(ENV_VAR) or REPOSITORY_ROOT.parent / "shared" / "corpus")
AVAILABLE = ROOT.is_dir()
MISSING_REASON = (
    f"the shared report corpus is not at {ROOT}; put it at ../shared/corpus next to the repository "
    f"or set {ENV_VAR} to its directory"
)
needs_corpus = pytest.mark.skipif(not AVAILABLE, reason=MISSING_REASON)


def files(pattern: str = "*") -> list[Path]:
    """The files under ``ROOT`` whose path matches the glob ``pattern`` (recursively),
    sorted; empty when the corpus is missing."""
    return sorted(p for p in ROOT.rglob(pattern) if p.is_file()) if AVAILABLE else []


def relative(path: Path) -> str:
    """``path`` relative to the corpus root (the id of a corpus test)."""
    return str(path.relative_to(ROOT))


def params(paths: Iterable[Path], marks: dict[str, pytest.MarkDecorator] | None = None) -> list:
    """One ``pytest.param(path, id=relative(path))`` per path, with ``marks[relative(path)]``
    when given; a single skipped param when the corpus is missing, so the test shows up as
    skipped with ``MISSING_REASON`` instead of vanishing."""
    if not AVAILABLE:
        return [pytest.param(None, id="corpus-missing", marks=pytest.mark.skip(reason=MISSING_REASON))]
    marks = marks or {}
    out = []
    for path in paths:
        rel = relative(path)
        out.append(pytest.param(path, id=rel, marks=[marks[rel]] if rel in marks else []))
    return out
