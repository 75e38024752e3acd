"""The report corpora the tests read: the repository's own dialect corpus, always, and the
shared corpus of real-world reports, in addition, when it is present.

* ``DIALECTS``: ``tests/fixtures/dialects``, small JUnit XML and JSON files written for this
  repository, one per dialect feature (its README.md lists file -> feature). It is always
  there, so no corpus test is ever skipped on a fresh clone.
* ``SHARED``: the shared corpus (JUnit XML and JSON files of other projects' test suites,
  listed in its SOURCES.txt, under their own licences) at ``../shared/corpus`` next to the
  repository root, or where the environment variable ``PYTEST_MCP_CORPUS`` points;
  ``SHARED_AVAILABLE`` says whether it is there. It is an extra check, never required:
  when it is missing its files add no test parameters (nothing is skipped), and the run's
  header line says where it was looked for (``header_line``). Tests never write to it.

A corpus file is identified by ``relative(path)``: ``"dialects/<path in DIALECTS>"`` or
``"shared/<path in SHARED>"``; ``path(rel)`` is the inverse.

* ``files(pattern)``: the files of both corpora matching a glob, dialects first, each
  sorted (the shared ones only when present).
* ``params(paths)``: ``pytest.param`` per file, identified by ``relative(path)``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pytest

ENV_VAR = "PYTEST_MCP_CORPUS"
REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
DIALECTS = REPOSITORY_ROOT / "tests" / "fixtures" / "dialects"
SHARED = Path(os.environ.get(ENV_VAR) or REPOSITORY_ROOT.parent / "shared" / "corpus")
SHARED_AVAILABLE = SHARED.is_dir()
# The roots by the prefix of their files' ids; the shared one only when present.
ROOTS: dict[str, Path] = {"dialects": DIALECTS, **({"shared": SHARED} if SHARED_AVAILABLE else {})}
# Documentation beside the reports, not a report to read.
NOT_REPORTS = {"README.md", "SOURCES.txt"}


def files(pattern: str = "*") -> list[Path]:
    """The report files of every available corpus whose name matches the glob ``pattern``
    (searched recursively): the dialect files sorted, then the shared ones sorted (none
    when the shared corpus is missing). README.md and SOURCES.txt are left out."""
    out: list[Path] = []
    for root in ROOTS.values():
        out += sorted(p for p in root.rglob(pattern) if p.is_file() and p.name not in NOT_REPORTS)
    return out


def relative(path: Path) -> str:
    """The id of a corpus file: ``dialects/...`` or ``shared/...`` followed by its path
    in that corpus (``/``-separated). Raises ``ValueError`` for a path in neither."""
    for prefix, root in ROOTS.items():
        if path.is_relative_to(root):
            return f"{prefix}/{path.relative_to(root).as_posix()}"
    raise ValueError(f"{path} is in no corpus ({', '.join(str(r) for r in ROOTS.values())})")


def path(rel: str) -> Path:
    """The file whose id is ``rel`` (see ``relative``); the file may not exist. Raises
    ``KeyError`` when its corpus is not available."""
    prefix, _, rest = rel.partition("/")
    return ROOTS[prefix] / rest


def available(rel: str) -> bool:
    """Whether the corpus of the id ``rel`` is present (the dialects always are)."""
    return rel.partition("/")[0] in ROOTS


def params(paths: Iterable[Path], marks: dict[str, pytest.MarkDecorator] | None = None) -> list:
    """One ``pytest.param(path, id=relative(path))`` per path, with ``marks[relative(path)]``
    when given."""
    marks = marks or {}
    return [pytest.param(p, id=relative(p), marks=[marks[relative(p)]] if relative(p) in marks else []) for p in paths]


def header_line() -> str:
    """What the test run's header says about the corpora (tests/conftest.py prints it)."""
    dialects = f"report corpus: {len(files())} files"
    if SHARED_AVAILABLE:
        return f"{dialects} ({DIALECTS.relative_to(REPOSITORY_ROOT)} and the shared corpus at {SHARED})"
    return (
        f"{dialects} ({DIALECTS.relative_to(REPOSITORY_ROOT)}); the shared corpus is not at {SHARED}, so its "
        f"extra checks do not run (put it at ../shared/corpus next to the repository or set {ENV_VAR})"
    )
