"""The lines a change added or modified, from git: what ``execute_tests`` with
``coverage`` intersects with the lines no test ran.

``parse_unified_diff`` is a pure function over the lines of ``git diff --unified=0``;
``changed_lines`` runs git with a fixed argv (no shell, nothing from the agent, a
timeout) in the project root and adds the untracked files (``git ls-files --others
--exclude-standard``), every line of which is new. Paths are relative to the root, with
``/`` separators, as coverage.py writes the files under its current directory.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

import anyio

from pytest_mcp_server.domain.coverage_answer import ChangedLines
from pytest_mcp_server.domain.policy import GIT_TIMEOUT_S

# The same output whatever the user's git configuration says: fixed a/ b/ prefixes (not
# diff.noprefix or diff.mnemonicPrefix), no colour, no external diff or textconv driver,
# paths unquoted unless they hold a quote, a backslash or a control character; no
# fsmonitor hook started. ``--relative`` limits the diff to the root and writes its
# paths relative to it.
GIT_DIFF_ARGV = (
    "git",
    "-c",
    "core.quotePath=false",
    "-c",
    "core.fsmonitor=false",
    "diff",
    "--unified=0",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "--relative",
    "HEAD",
    "--",
)
GIT_UNTRACKED_ARGV = ("git", "-c", "core.fsmonitor=false", "ls-files", "--others", "--exclude-standard", "-z", "--")

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def parse_unified_diff(lines: Iterable[str]) -> dict[str, list[tuple[int, int]]]:
    """The added or modified lines of each file in a ``git diff --unified=0`` with the
    ``a/``/``b/`` prefixes: path (the ``+++ b/<path>`` line, unquoted) -> sorted
    ``(first, last)`` ranges of the new file, from the hunk headers ``@@ -a,b +c,d @@``
    (``d`` lines from ``c``; ``d`` absent means 1, ``0`` a pure deletion). Deleted files
    (``+++ /dev/null``) and files with no added line are left out. Rule: git's
    "combined diff"-free unified format (``git help diff``, *Generating patch text*)."""
    return _parse_hunks(lines)[0]


def _parse_hunks(lines: Iterable[str]) -> tuple[dict[str, list[tuple[int, int]]], dict[str, list[int]]]:
    """``parse_unified_diff``'s ranges, and the pure deletions of the same diff (hunks
    ``+c,0``): path -> sorted lines ``c`` of the new file after which lines were deleted
    (0: at the top)."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    deletions: dict[str, list[int]] = {}
    path: str | None = None
    for line in lines:
        if line.startswith("+++ "):
            # git ends the name with a tab when it holds a space (a name with a tab is quoted)
            target = _unquote(line[4:].rstrip("\n").removesuffix("\t"))
            path = target[2:] if target.startswith("b/") else None
            continue
        if path is None or not line.startswith("@@"):
            continue
        hunk = _HUNK.match(line)
        if hunk is None:
            continue
        first, count = int(hunk.group(1)), int(hunk.group(2) or "1")
        if count:
            ranges.setdefault(path, []).append((first, first + count - 1))
        else:
            deletions.setdefault(path, []).append(first)
    return {p: sorted(r) for p, r in ranges.items()}, {p: sorted(d) for p, d in deletions.items()}


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquote(text: str) -> str:
    """A path as git writes it: as is, or C-quoted (``"b/a\\tb.py"``, octal escapes for
    bytes) when it holds a quote, a backslash or a control character."""
    if not (len(text) >= 2 and text[0] == '"' and text[-1] == '"'):
        return text
    out = bytearray()
    body = text[1:-1]
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567" and re.match(r"[0-7]{3}", body[i + 1 : i + 4]):
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            out.append(_ESCAPES.get(nxt, ord(nxt)))
            i += 2
            continue
        out += char.encode()
        i += 1
    return out.decode("utf-8", "surrogateescape")


async def _git(argv: tuple[str, ...], root: Path) -> str | None:
    """The stdout of ``argv`` run in ``root``, or None when git is missing, fails (not a
    repository, no ``HEAD`` yet) or takes longer than ``GIT_TIMEOUT_S``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}  # the root's repository, not another
    env["GIT_TERMINAL_PROMPT"] = "0"
    try:
        with anyio.fail_after(GIT_TIMEOUT_S):
            proc = await anyio.run_process(list(argv), cwd=root, env=env, check=False)
    except (OSError, TimeoutError):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout.decode("utf-8", "surrogateescape")


async def changed_lines(root: Path) -> ChangedLines | None:
    """The lines added or modified in ``root``'s working tree and index relative to
    ``HEAD`` (``GIT_DIFF_ARGV``), and its untracked files (``GIT_UNTRACKED_ARGV``).

    Returns None when ``root`` is not in a git repository with a commit, or git is
    missing or too slow (``GIT_TIMEOUT_S``); never raises for that."""
    diff = await _git(GIT_DIFF_ARGV, root)
    if diff is None:
        return None
    untracked = await _git(GIT_UNTRACKED_ARGV, root)
    ranges, deletions = _parse_hunks(diff.splitlines())
    return ChangedLines(
        ranges=ranges,
        new_files={p for p in (untracked or "").split("\0") if p},
        deletions=deletions,
    )
