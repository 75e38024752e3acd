"""Project code: which frame paths are the project's own code (and which of them test
code) and how a path is shown; the twin of ``rust/core/src/project.rs``, rule for rule.

The rules are in docs/ENGINE.md, *Project code*; ``tests/engine/test_rules_parity.py`` checks
both backends classify the same paths the same way.
"""

from __future__ import annotations

from collections.abc import Iterable

from pytest_mcp_server.engine.models import is_test_path

# Classes of a frame path.
LIBRARY = 0
PROJECT = 1
TEST = 2

_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_DIGITS = frozenset("0123456789")
# Install directories, and the placeholder a path inside one is shown with.
_PACKAGE_DIRS = (("/site-packages/", "<site-packages>/"), ("/dist-packages/", "<dist-packages>/"))

_LIBRARY_MARKERS = ("/site-packages/", "/dist-packages/", "/_pytest/", "/pluggy/", "/lib/python3.")


def is_library_path(path: str) -> bool:
    """Library code when no project is given: ``/`` + the path with ``\\`` read as ``/``
    contains a library marker (site-packages, dist-packages, _pytest, pluggy,
    lib/python3.), or the path starts with ``<frozen ``."""
    if path.startswith("<frozen "):
        return True
    p = "/" + path.replace("\\", "/")
    return any(m in p for m in _LIBRARY_MARKERS)


def _lexical(path: str) -> str | None:
    """An absolute ``/``-separated path with ``.``, ``..`` and empty parts resolved
    (``..`` at the top stays at the top); None for a relative path. Absolute: starts
    with ``/`` or a drive ``X:/``."""
    if path.startswith("/"):
        prefix, rest = "/", path[1:]
    elif len(path) >= 3 and path[0] in _LETTERS and path[1] == ":" and path[2] == "/":
        prefix, rest = path[:3], path[3:]
    else:
        return None
    parts: list[str] = []
    for part in rest.split("/"):
        if part == "" or part == ".":
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return prefix + "/".join(parts)


class ProjectCode:
    """The project whose code the answer is about: its root directory (absolute) and the
    top-level import names it installs (packages or single modules).

    ``root`` is read with ``\\`` as ``/`` and resolved lexically (``..``, ``.``); a root
    that is not absolute matches no absolute path (relative paths still count as the
    project's). Built from ``models.ProjectCode`` (validated) by ``engine.py``.
    """

    __slots__ = ("root", "packages")

    def __init__(self, root: str, packages: Iterable[str]) -> None:
        normalized = root.replace("\\", "/")
        self.root: str = _lexical(normalized) or ""
        self.packages: frozenset[str] = frozenset(packages)


def _package_dir_rest(p: str) -> tuple[int, str] | None:
    """For a ``/``-separated path: (index in ``p`` where the part after the last
    ``/site-packages/`` or ``/dist-packages/`` starts, the placeholder), searching
    ``"/" + p``; None when the path is in no install directory."""
    best: tuple[int, str] | None = None
    slashed = "/" + p
    for marker, placeholder in _PACKAGE_DIRS:
        at = slashed.rfind(marker)
        if at != -1 and (best is None or at + len(marker) - 1 > best[0]):
            best = (at + len(marker) - 1, placeholder)
    return best


def _stdlib_rest(p: str) -> int | None:
    """For a ``/``-separated path: the index in ``p`` where the part after the standard
    library's directory starts, after the last ``/lib/pythonX.Y/`` (or ``lib64``; ``X.Yt``
    for a free-threaded build) or ``/Lib/`` (Windows) of ``"/" + p``; None when there is
    none."""
    slashed = "/" + p
    best: int | None = None
    at = 0
    while at != -1:
        end = _stdlib_dir_end(slashed, at)
        if end is not None:
            best = end - 1
        at = slashed.find("/", at + 1)
    return best


def _digits_end(s: str, start: int) -> int:
    """The index after the ASCII digits of ``s`` from ``start``."""
    while start < len(s) and s[start] in _DIGITS:
        start += 1
    return start


def _stdlib_dir_end(s: str, at: int) -> int | None:
    """When a standard library directory (``_stdlib_rest``) starts at ``s[at]`` (a
    ``/``), the index after its closing ``/``; else None."""
    if s.startswith("/Lib/", at):
        return at + 5
    for head in ("/lib/python", "/lib64/python"):
        if s.startswith(head, at):
            major = at + len(head)
            dot = _digits_end(s, major)
            if dot == major or not s.startswith(".", dot):
                return None
            minor_end = _digits_end(s, dot + 1)
            if minor_end == dot + 1:
                return None
            if s.startswith("t", minor_end):
                minor_end += 1
            return minor_end + 1 if s.startswith("/", minor_end) else None
    return None


def _last_three_start(p: str) -> int | None:
    """For an absolute ``/``-separated path with more than its last three components
    (a drive alone does not count): the index where those three start; else None."""
    if not (p.startswith("/") or (len(p) >= 3 and p[0] in _LETTERS and p[1:3] == ":/")):
        return None
    cut = len(p)
    for _ in range(3):
        cut = p.rfind("/", 0, cut)
        if cut <= 0:
            return None
    before = p[:cut]
    if before == "" or (len(before) == 2 and before[1] == ":"):
        return None
    return cut + 1


def _under_root(absolute: str, root: str) -> str | None:
    """The part of ``absolute`` below ``root`` (``""`` for the root itself), else None."""
    if not root:
        return None
    if absolute == root:
        return ""
    prefix = root if root.endswith("/") else root + "/"
    return absolute[len(prefix) :] if absolute.startswith(prefix) else None


def classify(path: str, project: ProjectCode | None) -> int:
    """``LIBRARY``, ``PROJECT`` or ``TEST`` for a frame path (docs/ENGINE.md, *Project
    code*). Without ``project``: library by ``is_library_path``, else project code."""
    p = path.replace("\\", "/")
    if project is None:
        if is_library_path(path):
            return LIBRARY
        return TEST if is_test_path(p) else PROJECT
    if path.startswith("<"):
        return LIBRARY
    installed = _package_dir_rest(p)
    if installed is not None:
        rest = p[installed[0] :]
        first = rest.split("/", 1)[0]
        name = first[:-3] if first.endswith(".py") else first
        if name not in project.packages:
            return LIBRARY
        return TEST if is_test_path(rest) else PROJECT
    absolute = _lexical(p)
    if absolute is None:
        absolute = _lexical(project.root + "/" + p) if project.root else None
        if absolute is None:  # no usable root: a relative path is the project's
            return TEST if is_test_path(p) else PROJECT
    below = _under_root(absolute, project.root)
    if below is None:
        return LIBRARY
    return TEST if is_test_path(below) else PROJECT


def display_path(path: str, project: ProjectCode | None) -> str:
    """How a frame path is shown (docs/ENGINE.md, *Project code*, shown paths): with a
    project, a path inside an install directory becomes ``<site-packages>/`` (or
    ``<dist-packages>/``) + the part after it; a path below the root (``root/`` starting
    it; a root of ``/`` alone excepted) the part after ``root/``, as pytest writes the
    project's files; a path in the standard library's directory ``<stdlib>/`` + the part
    after it; any other absolute path ``.../`` + its last three components, so that no
    answer spells out the machine's directories. Relative paths, pseudo-paths
    (``<frozen os>``) and every path without a project are unchanged."""
    if project is None:
        return path
    p = path.replace("\\", "/")
    installed = _package_dir_rest(p)
    if installed is not None:
        return installed[1] + path[installed[0] :]
    root = project.root
    if root and not root.endswith("/") and p.startswith(root + "/") and len(p) > len(root) + 1:
        return path[len(root) + 1 :]
    stdlib = _stdlib_rest(p)
    if stdlib is not None and stdlib < len(p):
        return "<stdlib>/" + path[stdlib:]
    last = _last_three_start(p)
    if last is not None:
        return ".../" + path[last:]
    return path
