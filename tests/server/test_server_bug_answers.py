"""Answers that point at the bug: the real server over real stdio, real pytest, on a project
that is installed with ``pip install`` (not editable) into a venv's site-packages, so the
frame at the bug is ``<venv>/lib/python3.X/site-packages/cachelike/core.py``. Run once per
engine backend (``PYTEST_MCP_SERVER_BACKEND``).

What must hold (docs/ENGINE.md, *Project code*, *Groups*, *Failures*): the answer names
the bug's line as ``<site-packages>/cachelike/core.py:LINE`` (location and traceback),
never a standard-library or pytest frame; one bug hit with many different values is one
group; one message at two assertion sites is two groups; a boolean parametrisation that
fails the same way is one group, and so is one assertion site whose compared values come in
different reprs (dict, defaultdict, an object without a repr). And, on a project of the
source tree: a chained exception whose chain line falls in the cut's omitted middle
keeps that line between the two exceptions, and a standard-library frame is shown as
``<stdlib>/...``, with no directory of the machine anywhere in the answer.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from helpers.installed_project import InstalledProject, install_project
from helpers.server_support import TYPED, committed_project, connect, run, text_of
from helpers.server_support import stdio_server as server
from mcp import StdioServerParameters

from pytest_mcp_server.domain.tools import ExecuteResult
from pytest_mcp_server.engine import BACKEND_ENV

CORE = '''\
import random


class Cache:
    """A tiny cache with two bugs."""

    def __init__(self, items=()):
        self._data = dict(items)

    def popitem(self):
        key = random.choice(list(self._data))  # BUG-EMPTY: IndexError when empty
        return key, self._data.pop(key)

    def store(self, value):
        return self._check(value)

    def _check(self, value):
        if not isinstance(value, int):
            raise TypeError(f"cannot store {value!r}")  # BUG-CHECK
        return value
'''

TESTS = """\
import collections

import pytest

from cachelike.core import Cache


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __repr__(self):
        return f"Point(x={self.x}, y={self.y})"


def test_popitem_of_a_full_cache():
    assert Cache({"a": 1}).popitem() == ("a", 1)


def test_popitem_of_an_empty_cache_raises_key_error():
    with pytest.raises(KeyError):
        Cache().popitem()


@pytest.mark.parametrize("value", [Point(1, 2), "text", 1.5, None, [1, 2], object(), b"raw", {"k": 3}])
def test_store(value):
    assert Cache().store(value) == value


def test_store_here():
    assert Cache().store(1) == 2


def test_store_there():
    assert Cache().store(1) == 2


@pytest.mark.parametrize("a", [True, False])
@pytest.mark.parametrize("b", [True, False])
def test_flags(a, b):
    assert [a, b] == [not a, b]


class Box:
    def __init__(self, items):
        self.items = items


@pytest.mark.parametrize("wrap", [dict, lambda items: collections.defaultdict(int, items), Box])
def test_store_in(wrap):
    assert wrap({1: Cache().store(1)}) == wrap({1: 2})
"""


def line_of(text: str, needle: str) -> int:
    """1-based line of the first line of ``text`` containing ``needle``."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> InstalledProject:
    """``cachelike`` (src layout) installed into a venv's site-packages; its tests at the
    root (``python -m pytest`` from the root cannot import it from the source tree)."""
    files = {"src/cachelike/__init__.py": "", "src/cachelike/core.py": CORE, "tests/test_cachelike.py": TESTS}
    return install_project(tmp_path_factory.mktemp("bug-answers"), "cachelike", ["cachelike"], files, where="src")


def execute(installed: InstalledProject, backend: str, tmp_path: Path) -> tuple[ExecuteResult, str]:
    """``execute_tests`` through the real server with the venv's Python, on ``backend``."""
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)
    env[BACKEND_ENV] = backend
    args = ["-m", "pytest_mcp_server", "--root", str(installed.root), "--python", str(installed.python), *TYPED]
    params = StdioServerParameters(
        command=sys.executable, args=[*args, "--artifacts-dir", str(tmp_path / "artifacts")], env=env
    )

    async def body():
        async with connect(params, "auto") as client:
            return await client.call_tool("execute_tests", {"traceback_lines": 2000, "failures_listed": 50})

    result = run(body)
    assert not result.is_error, text_of(result)
    return ExecuteResult.model_validate(result.structured_content), text_of(result)


def test_the_answer_points_at_the_bug_in_the_installed_package(installed, backend, tmp_path):
    res, text = execute(installed, backend, tmp_path)
    summary = res.summary
    assert (summary.counts.failed, summary.counts.passed) == (18, 1)
    assert (installed.site_packages / "cachelike" / "core.py").is_file()
    empty_line = line_of(CORE, "BUG-EMPTY")
    check_line = line_of(CORE, "BUG-CHECK")
    by_id = {f.node_id: f for f in summary.failures}

    # The empty-cache bug: raised inside random.py, located at the package's line.
    empty = by_id["tests/test_cachelike.py::test_popitem_of_an_empty_cache_raises_key_error"]
    assert empty.exception == "IndexError"
    assert (empty.location.path, empty.location.line) == ("<site-packages>/cachelike/core.py", empty_line)
    # The text holds the tracebacks: the package's frame keeps its header and source line.
    assert f"<site-packages>/cachelike/core.py:{empty_line}: in popitem" in text
    assert "key = random.choice(list(self._data))" in text
    # the location is named once, by the frame line that starts with it
    assert f"\n <site-packages>/cachelike/core.py:{empty_line}:" in text

    # Eight different values hit one line of the package: one group, located there.
    groups = {
        (g.exception, g.location.path if g.location else None, g.location.line if g.location else None): g
        for g in summary.groups
    }
    store = groups[("TypeError", "<site-packages>/cachelike/core.py", check_line)]
    assert store.count == 8
    # The largest group comes first, and its first failure is listed first.
    assert summary.groups[0].id == store.id and summary.failures[0].group == store.id
    assert f"\n <site-packages>/cachelike/core.py:{check_line}:" in text

    # The same message at two assertion sites: two groups, each of one failure; a listed failure
    # is its group's whole story, so the structured content names such a group by the failure only.
    here = by_id["tests/test_cachelike.py::test_store_here"]
    there = by_id["tests/test_cachelike.py::test_store_there"]
    assert here.group != there.group and here.message == there.message
    assert here.location.line == line_of(TESTS, "def test_store_here") + 1
    assert there.location.line == line_of(TESTS, "def test_store_there") + 1
    assert not {here.group, there.group} & {g.id for g in summary.groups}

    # Four boolean parametrisations failing the same way: one group.
    flags = groups[("AssertionError", "tests/test_cachelike.py", line_of(TESTS, "assert [a, b] == [not a, b]"))]
    assert flags.count == 4
    assert flags.message == "assert [<bool>, <bool>] == [<bool>, <bool>]"

    # One assertion site whose values come as a dict, a defaultdict and an object without a
    # repr (three different messages): one group.
    shapes = groups[("AssertionError", "tests/test_cachelike.py", line_of(TESTS, "assert wrap({1: Cache()"))]
    assert shapes.count == 3

    assert len({g.id for g in summary.groups} | {f.group for f in summary.failures}) == 6
    # Never the standard library or pytest as a location.
    for failure in summary.failures:
        assert failure.location is not None
        assert "python3." not in failure.location.path and "_pytest" not in failure.location.path


PARSE = """\
import re


def compile_pattern(pattern):
    return re.compile(pattern)


def parse(text, pattern):
    try:
        return compile_pattern(pattern).match(text)
    except re.error:
        return fallback(text, 0)


def fallback(text, depth):
    if depth < 12:
        return fallback(text, depth + 1)
    raise NotImplementedError("no fallback for " + text)
"""


@pytest.mark.parametrize("backend", ["native", "pure"])
def test_a_chain_line_in_the_cut_middle_stays_and_the_standard_library_is_shown_as_stdlib(tmp_path, backend):
    """A regex typo raises ``re.error`` in the standard library; the code handling it
    raises ``NotImplementedError`` thirteen calls down. The cut leaves out the middle of
    that long chained traceback, but not the line saying the second exception happened
    while handling the first; the ``re`` frame is ``<stdlib>/re/...``."""
    root = committed_project(
        tmp_path / "parsing",
        {
            "pkg/__init__.py": "",
            "pkg/parse.py": PARSE,
            "tests/test_parse.py": "from pkg.parse import parse\n\n\ndef test_parse():\n    assert parse('a', '(a')\n",
        },
    )

    async def body():
        params = server(root, tmp_path / "artifacts", *TYPED)
        assert params.env is not None
        params.env[BACKEND_ENV] = backend
        async with connect(params, "auto") as client:
            answer = await client.call_tool("execute_tests", {"traceback_lines": 20})
            return ExecuteResult.model_validate(answer.structured_content), text_of(answer), answer.structured_content

    result, text, structured = run(body)
    assert result.summary.counts.failed == 1, text
    lines = text.split("\n")
    marker = "During handling of the above exception, another exception occurred:"
    (at,) = [i for i, line in enumerate(lines) if line.strip() == marker]
    assert lines[at + 1].strip().startswith("... ["), text  # the middle of the handling is cut
    assert "re.error: missing )" in lines[at - 1], text  # right after the first exception
    assert lines[at + 2].strip() == "pkg/parse.py:18: NotImplementedError", text
    assert "<stdlib>/re/_parser.py:" in text, text
    # the failures and groups spell out no directory (``command`` and ``report_path`` are
    # the run's own facts, for the agent to use, and keep theirs)
    shown = str([structured["summary"].get(key) for key in ("failures", "groups")])
    for prefix in {sys.prefix, sys.base_prefix, os.path.dirname(sys.executable), str(tmp_path)}:
        assert prefix not in text and prefix not in shown, prefix
