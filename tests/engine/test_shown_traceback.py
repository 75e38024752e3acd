"""The shown traceback (docs/ENGINE.md, *Traceback cutting*, "The shown traceback"): the
engine, not the renderer, leaves out what pytest says twice (its closing line, carets
above the last frame, the test's own ``self``, a diff restating the assert line, a full
diff the lines above say) and advice to re-run verbose, shortens separators and folds
repeated lines; both backends give the same bytes.

The concrete cases are shared with the Rust unit tests of ``rust/core/src/cut.rs``
(``tests/fixtures/tracebacks/shown_cases.json``: a realistic pytest long- or
short-format text per rule, and the traceback the summary must list). Here each goes
through a real pytest-json-report file summarised by both backends, so the rules are
checked where they run: in the summary builder, with the location and exception the
builder itself derives.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from helpers.backends import needs_native, summary_in_both
from helpers.strategies import TRACE_LINES, fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

from pytest_mcp_server.engine.pure.cut import cut_traceback

CASES = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "tracebacks" / "shown_cases.json").read_text())


def _report(path: Path, failures: list[tuple[str, str]]) -> Path:
    """A pytest-json-report document with one failed test per (node id, longrepr)."""
    tests = [
        {"nodeid": node_id, "outcome": "failed", "call": {"duration": 0.01, "outcome": "failed", "longrepr": text}}
        for node_id, text in failures
    ]
    path.write_bytes(orjson.dumps({"exitcode": 1, "summary": {}, "tests": tests}))
    return path


@needs_native
@pytest.mark.parametrize("case", CASES, ids=[c["rule"] for c in CASES])
def test_each_rule_gives_the_documented_traceback_in_both_backends(tmp_path, case):
    budgets = {"max_frame_context_lines": case["context_lines"]} if "context_lines" in case else {}
    summary = summary_in_both(_report(tmp_path / "r.json", [(case["node_id"], case["text"])]), **budgets)
    [failure] = summary["failures"]
    location = failure["location"] and [failure["location"]["path"], failure["location"]["line"]]
    # the Rust unit tests pass these to the rules directly: they must be what the builder derives
    assert (failure["exception"], location) == (case["exception"], case["location"])
    assert failure["traceback"] == case["expected"]
    # the source before a compact frame's statement is counted as left out; nothing else is
    assert failure["traceback_lines_omitted"] == case.get("omitted", 0)


@needs_native
def test_markers_inside_a_left_out_full_diff_count_their_lines(tmp_path):
    """A ``Full diff`` the cut already shortened (its head and tail kept, a marker
    between): the one line counts the diff's lines, the marker's included, while
    ``traceback_lines_omitted`` still says what the cut left out (the text no longer
    shows the marker)."""
    diff = [f"E         -     'k{i}': {i}," for i in range(30)]
    text = "\n".join(
        [
            ">       assert {'total': 27} == {'total': 28}",
            "E       AssertionError: assert {'total': 27} == {'total': 28}",
            "E         Differing items:",
            "E         {'total': 27} != {'total': 28}",
            "E         Full diff:",
            *diff,
        ]
    )
    summary = summary_in_both(_report(tmp_path / "r.json", [("tests/test_x.py::test_t", text)]), max_traceback_lines=15)
    [failure] = summary["failures"]
    _, cut_omitted = cut_traceback(text, 15, 200)
    assert failure["traceback_lines_omitted"] == cut_omitted > 0
    assert failure["traceback"].split("\n") == [
        ">       assert {'total': 27} == {'total': 28}",
        "E       AssertionError: assert {'total': 27} == {'total': 28}",
        "E         Differing items:",
        "E         {'total': 27} != {'total': 28}",
        "E         Full diff: [30 lines left out: the differing items above]",
    ]
    assert summary["omitted"]["traceback_lines"] == cut_omitted


SHOWN_RULE_LINES = [line for line in TRACE_LINES if line.startswith(("E", "self", " ", "_", "tests/"))] + [
    "tests/test_mod.py:12: in test_it",
    "    return f(n - 1)",
    ">       assert {'a': 1} == {'a': 2}",
]


@needs_native
@fuzz_settings(50)
@given(
    texts=st.lists(st.lists(st.sampled_from(SHOWN_RULE_LINES), max_size=40), min_size=1, max_size=4),
    node_id=st.sampled_from(
        ["tests/test_mod.py::TestA::test_it", "tests/test_mod.py::CacheTest::test_clear[x]", "tests/test_mod.py::t"]
    ),
    max_lines=st.integers(3, 50),
    max_line_chars=st.integers(8, 90),
)
def test_the_rules_agree_in_both_backends_on_any_mix_of_their_lines(
    tmp_path_factory, texts, node_id, max_lines, max_line_chars
):
    """Lines every rule rewrites, in any order and any number, cut by any budgets: the
    two backends list the same bytes (``summary_in_both``) and every listed traceback
    counts what its cut left out."""
    failures = [(f"{node_id}{i}", "\n".join(lines)) for i, lines in enumerate(texts)]
    path = _report(tmp_path_factory.mktemp("shown") / "r.json", failures)
    summary = summary_in_both(path, max_traceback_lines=max_lines, max_line_chars=max_line_chars)
    assert sum(f["traceback_lines_omitted"] for f in summary["failures"]) == summary["omitted"]["traceback_lines"]
