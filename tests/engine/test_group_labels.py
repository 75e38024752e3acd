"""A group is labelled by its most common exception and assertion site (docs/ENGINE.md,
*Groups*, label), in both backends, whether its lead is one of the failures the builder
keeps or has to be read again, and whether the report is one file or shards (merged
natively, read in order by the pure backend).

Only the suspect's group gathers failures of several exceptions and sites (one changed
line that several tests, assertion sites and doctests caught). Its label, its first
listed failure and that failure's place among the listed ones follow the rule; the
doctests it holds never label a group of assertion failures.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from helpers.backends import summary_in_both

from pytest_mcp_server.engine.models import ProjectCode, SuspectGroup


def doctest_text(function: str, line: int) -> str:
    """pytest's report of a doctest whose example printed another value."""
    return (
        f"{line - 1:03d} def {function}(items):\n"
        f'{line:03d}     """>>> {function}(["a", "b"])\n'
        "Expected:\n    'a and b'\nGot:\n    'a & b'\n\n"
        f"pkg/lists.py:{line}: DocTestFailure"
    )


def assertion_text(test: str, line: int, got: str) -> str:
    """pytest's long report of an assertion failing in a test module."""
    return (
        f"    def {test}():\n"
        f">       assert natural_list(['a', 'b']) == 'a and b'\n"
        f"E       AssertionError: assert '{got}' == 'a and b'\n\n"
        f"tests/test_lists.py:{line}: AssertionError"
    )


def raised_text(test: str, line: int) -> str:
    """pytest's long report of a test that raised (no frame of the project's code)."""
    return (
        f"    def {test}():\n>       raise ValueError('no and')\nE       ValueError: no and\n\n"
        f"tests/test_lists.py:{line}: ValueError"
    )


def report(path: Path, failures: list[tuple[str, str]]) -> str:
    """A pytest-json-report document with one failed test per (node id, longrepr)."""
    tests = [
        {"nodeid": node_id, "outcome": "failed", "call": {"duration": 0.01, "outcome": "failed", "longrepr": text}}
        for node_id, text in failures
    ]
    path.write_bytes(orjson.dumps({"exitcode": 1, "summary": {}, "tests": tests}))
    return str(path)


def summaries(tmp_path: Path, failures: list[tuple[str, str]], **budgets: int) -> list[dict]:
    """The summary of ``failures`` with every one of them explained by one changed line,
    read as one file and as three shards: both backends, the same bytes each way."""
    suspect = SuspectGroup(key="pkg/lists.py:10", node_ids=frozenset(node_id for node_id, _ in failures))
    project = ProjectCode(root=str(tmp_path), packages=["pkg"])
    whole = [report(tmp_path / "whole.json", failures)]
    third = -(-len(failures) // 3)
    shards = [report(tmp_path / f"shard{i}.json", failures[i * third : (i + 1) * third]) for i in range(3)]
    out = []
    for paths in (whole, shards):
        summary = summary_in_both(paths, project=project, suspect=suspect, **budgets)
        out.append({key: summary[key] for key in ("failures", "groups", "omitted")})
    assert out[0] == out[1]
    return out


DOCTESTS = [
    ("pkg/lists.py::pkg.lists.natural_list", doctest_text("natural_list", 4)),
    ("pkg/lists.py::pkg.lists.sentence", doctest_text("sentence", 14)),
]
PAIRS = [(f"tests/test_lists.py::test_pairs[{n}]", assertion_text("test_pairs", 7, f"a & {n}")) for n in range(5)]
OTHERS = [
    ("tests/test_lists.py::test_three", assertion_text("test_three", 11, "a, b & c")),
    ("tests/test_lists.py::test_sentence", assertion_text("test_sentence", 15, "a & b.")),
    ("tests/test_lists.py::test_sentence_two", assertion_text("test_sentence_two", 19, "a & c.")),
    ("tests/test_lists.py::test_four", assertion_text("test_four", 23, "a, b, c & d")),
]


@pytest.mark.parametrize("failures_listed", [20, 2])
def test_the_suspects_group_is_labelled_by_its_most_common_exception_and_site(tmp_path, failures_listed):
    """Two doctests first (the doctest modules are collected before the tests), then
    nine assertion failures at five sites, five of them at one parametrised test's: the
    group is the assertion at that test's line, listed first by its first case. With
    ``failures_listed`` 2 that case is not among the failures the builder keeps: it is
    read again."""
    failures = DOCTESTS + OTHERS[:2] + PAIRS + OTHERS[2:]
    summary, _ = summaries(tmp_path, failures, failures_listed=failures_listed)
    (group,) = summary["groups"]
    assert group["count"] == 11
    assert (group["exception"], group["location"]) == ("AssertionError", {"path": "tests/test_lists.py", "line": 7})
    assert group["message"] == "assert <str> == <str>"
    lead = summary["failures"][0]
    assert (lead["node_id"], lead["group"]) == ("tests/test_lists.py::test_pairs[0]", group["id"])
    # each site's first failure first among the examples, the doctests' too
    assert group["examples"] == [DOCTESTS[0][0], DOCTESTS[1][0], OTHERS[0][0]]
    # then the other failures in report order: the doctest that was first comes next
    listed = min(failures_listed, 11)
    assert [f["node_id"] for f in summary["failures"][1:3]] == [DOCTESTS[0][0], DOCTESTS[1][0]][: listed - 1]
    assert len(summary["failures"]) == listed
    assert summary["omitted"]["failures"] == 11 - listed


def test_ties_go_to_what_came_first_and_doctests_label_only_a_group_of_doctests(tmp_path):
    # two exceptions with two failures each: the one seen first; within it, two sites of
    # one failure each: the first
    failures = [
        ("tests/test_lists.py::test_raises", raised_text("test_raises", 30)),
        ("tests/test_lists.py::test_three", OTHERS[0][1]),
        ("tests/test_lists.py::test_raises_too", raised_text("test_raises_too", 34)),
        ("tests/test_lists.py::test_sentence", OTHERS[1][1]),
    ]
    summary, _ = summaries(tmp_path, failures)
    (group,) = summary["groups"]
    assert (group["exception"], group["location"]) == ("ValueError", {"path": "tests/test_lists.py", "line": 30})
    assert summary["failures"][0]["node_id"] == "tests/test_lists.py::test_raises"

    # three doctests and one assertion: the assertion labels the group
    failures = [*DOCTESTS, ("pkg/lists.py::pkg.lists.third", doctest_text("third", 24)), OTHERS[0]]
    summary, _ = summaries(tmp_path, failures)
    (group,) = summary["groups"]
    assert (group["exception"], group["location"]) == ("AssertionError", {"path": "tests/test_lists.py", "line": 11})
    assert summary["failures"][0]["node_id"] == OTHERS[0][0]

    # doctests alone: the first doctest's
    summary, _ = summaries(tmp_path, DOCTESTS)
    (group,) = summary["groups"]
    assert (group["exception"], group["location"]) == ("DocTestFailure", {"path": "pkg/lists.py", "line": 4})
    assert group["message"] == "Expected: <str> Got: <str>"
    assert summary["failures"][0]["node_id"] == DOCTESTS[0][0]
