"""Helpers of the real-bug benchmark (benches/real_bugs.py, benches/tokens.py) on real inputs.

Token counts come from the real o200k vocabulary (bpe-openai); the ``--tb=short`` readers
read the output of a real pytest run of a small project whose library raises while
handling another exception and whose test also warns, so that the output has a chain,
a second failure and a warnings summary after the failure sections.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import real_bugs  # benches/, on pytest's pythonpath
import tokens


def test_token_counts_are_o200k_counts() -> None:
    """Known o200k counts: a word and a spaced word are one token each; empty text is none."""
    assert tokens.count_tokens("") == 0
    assert tokens.count_tokens("hello") == 1
    assert tokens.count_tokens("hello world") == 2


def test_special_token_spelling_is_counted_as_text() -> None:
    """A test's output may print ``<|endoftext|>``: it is plain text (several tokens), not an error."""
    assert tokens.count_tokens("<|endoftext|>") > 1


def test_long_text_counted_in_pieces_equals_the_whole() -> None:
    """Cutting after newlines (pieces of CHUNK_CHARS) gives the count of the text in one piece."""
    line = "tests/test_mod.py:12: in test_thing\n    assert frobnicate(3) == 4\nE   assert 5 == 4\n"
    text = line * (3 * tokens.CHUNK_CHARS // len(line))
    assert len(text) > 2 * tokens.CHUNK_CHARS
    whole = len(tokens._encoding().encode_ordinary(text))
    assert tokens.count_tokens(text) == whole


def test_text_beyond_the_tokenizers_input_limit_is_counted() -> None:
    """bpe-openai refuses 1,000,000 characters in one call; the counter takes any length."""
    text = "E   AssertionError: values differ\n" * 40_000
    assert len(text) > 1_000_000
    with pytest.raises(ValueError):
        tokens._encoding().encode_ordinary(text)
    assert tokens.count_tokens(text) == 40_000 * tokens.count_tokens("E   AssertionError: values differ\n")


@pytest.fixture(scope="module")
def chained_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project whose library raises ``LookupError from KeyError``; the first test also warns."""
    root = tmp_path_factory.mktemp("chained")
    (root / "lib.py").write_text(
        textwrap.dedent(
            """\
            TABLE = {"a": 1}


            def lookup(key):
                try:
                    return TABLE[key.upper()]
                except KeyError as err:
                    raise LookupError(f"no entry {key!r}") from err
            """
        )
    )
    (root / "test_lib.py").write_text(
        textwrap.dedent(
            """\
            import warnings

            from lib import lookup


            def test_lookup():
                warnings.warn("old API", DeprecationWarning)
                assert lookup("a") == 1


            def test_value():
                assert lookup("A") == 2
            """
        )
    )
    return root


def short_output(root: Path, *args: str) -> str:
    """stdout of ``pytest -q --tb=short ARGS`` in ``root`` (failures expected)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--tb=short", "-p", "no:cacheprovider", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "80"},  # the width pytest centres section titles in
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return proc.stdout


def test_first_section_reads_the_chain_and_stops_before_the_next_failure(chained_project: Path) -> None:
    """The first failure's frames: its test, the root cause (lib.py:6), then the raise (lib.py:8)."""
    output = short_output(chained_project)
    assert "test_value" in output
    section = real_bugs.first_section(output)
    assert any(line in real_bugs.CHAIN_LINES for line in section)
    assert not any("test_value" in line for line in section)
    frames = real_bugs.first_section_frames(output)
    assert ("lib.py", 6) in frames
    assert frames[-1] == ("lib.py", 8)
    assert real_bugs.first_test_frame(output) == ("test_lib.py", 8)


def test_first_section_ends_before_the_warnings_summary(chained_project: Path) -> None:
    """A warning's ``test_lib.py:7: DeprecationWarning`` after the only failure is not one of its frames."""
    output = short_output(chained_project, "-k", "test_lookup")
    assert "test_lib.py:7: DeprecationWarning" in output
    frames = real_bugs.first_section_frames(output)
    assert frames[-1] == ("lib.py", 8)
    assert ("test_lib.py", 7) not in frames


def test_a_failure_title_wider_than_the_terminal_starts_a_section(tmp_path: Path) -> None:
    """A long parametrized id gets ``_ title _`` (one underscore each side): still a section of its own."""
    (tmp_path / "test_long.py").write_text(
        textwrap.dedent(
            """\
            import pytest


            @pytest.mark.parametrize("value", ["x" * 90, "y" * 90])
            def test_value(value):
                assert value == "z"
            """
        )
    )
    output = short_output(tmp_path)
    assert "\n_ test_value[" in output
    assert real_bugs.first_section_frames(output) == [("test_long.py", 6)]
    assert real_bugs.first_test_frame(output) == ("test_long.py", 6)


def test_token_parts_split_pytest_output_into_values_frames_and_the_rest(chained_project: Path) -> None:
    """Every line of a real ``--tb=short`` output lands in one part: the ``E`` lines are
    values, ``path:N: in f`` and its source lines are frames, and the progress, banners,
    titles and summary are the rest; the parts add up to the whole within BPE merges."""
    output = short_output(chained_project)
    parts = real_bugs.token_parts("", output)
    assert [answer for answer, _ in parts.values()] == [0, 0, 0]
    values, frames, rest = (pytest_tokens for _, pytest_tokens in parts.values())
    e_lines = [line for line in output.splitlines() if line.startswith("E ")]
    assert e_lines and values == sum(tokens.count_tokens(line + "\n") for line in e_lines)
    frame_lines = [line for line in output.splitlines() if real_bugs.FRAME_LINE.match(line)]
    assert len(frame_lines) >= 3 and frames > sum(tokens.count_tokens(line + "\n") for line in frame_lines)
    assert rest >= tokens.count_tokens("2 failed in 0.01s\n")
    whole = tokens.count_tokens(output)
    assert abs(values + frames + rest - whole) <= whole // 20


def test_a_run_above_a_target_says_which_part_of_the_answer_costs_more() -> None:
    """``misses`` names the token target a run misses and the part over pytest's, and
    a raising bug split into groups with each group's exception and site."""
    row = real_bugs.Row("p", "b", "kind", "editable", raises=True, failures=1, groups=2, frame=True, test_loc=True)
    row.text_tokens, row.short_tokens = 90, 100
    row.token_parts = {"values": [60, 20], "frames": [20, 30], "the rest": [10, 50]}
    row.group_sites = ["KeyError at lib.py:6 x1", "AssertionError at tests/test_lib.py:3 x1"]
    (tokens_miss, why), (groups_miss, sites) = real_bugs.misses(row)
    assert tokens_miss == "never above 0.8x in tokens (0.90x)"
    assert (
        "values 60 vs 20" in why
        and "alone are 0.50x" in why
        and why.endswith("given whole (pytest -q cuts long reprs to `...`) (+40)")
    )
    assert groups_miss == "one group per raising bug (2 groups)"
    assert sites.endswith("KeyError at lib.py:6 x1; AssertionError at tests/test_lib.py:3 x1")
    row.text_tokens = 55  # 0.55x: within both token targets
    assert real_bugs.misses(row)[0][0] == "one group per raising bug (2 groups)"


def test_compact_json_is_what_json_stringify_writes() -> None:
    """No spaces after separators, non-ASCII characters as they are, newlines escaped."""
    assert (
        real_bugs.compact_json({"answer": "É\nx", "counts": {"total": 2}}) == '{"answer":"É\\nx","counts":{"total":2}}'
    )


def test_a_line_in_a_json_string_is_named_once_its_escapes_are_read() -> None:
    """A doctest's frame in Python's format (``File "path", line N``) has its quotes
    escaped in JSON: the strings, decoded, name it as the text does."""
    structured = {"answer": 'FAILED\n  File "pkg/lib.py", line 6, in f\n', "status": "failed"}
    assert not real_bugs.names(real_bugs.compact_json(structured), "pkg/lib.py", 6)
    assert real_bugs.names(real_bugs.json_strings(structured), "pkg/lib.py", 6)


def test_the_views_of_a_real_answer_are_measured(chained_project: Path, tmp_path: Path) -> None:
    """A tiny run of the measurement: the real server (``structured`` view, and a second
    one in the ``typed`` view that reads the run's report back by the ``report_path`` the
    answer gives) on the chained project; each view's tokens and whether it names the
    root cause's line, ``lib.py:6``."""
    import anyio
    from mcp import Client

    root = tmp_path / "chained"
    root.mkdir()
    for name in ("lib.py", "test_lib.py"):
        (root / name).write_text((chained_project / name).read_text())
    setup = real_bugs.Setup(spec=None, mode="editable", python=Path(sys.executable), root=root, library=root)
    bug = real_bugs.Bug("p", "lookup-upper", "typo", True, True, "lib.py", 6, "old", "new")

    async def body():
        served = real_bugs.server_params(setup, tmp_path, None, "structured")
        typed = real_bugs.server_params(setup, tmp_path, None, "typed")
        async with Client(served) as client, Client(typed) as reader:
            result = await client.call_tool("execute_tests", {})
            return result, await real_bugs.typed_summary(reader, result)

    result, summary = anyio.run(body)
    text = result.content[0].text
    row = real_bugs.Row("p", bug.id, bug.kind, "editable")
    real_bugs.measure_views(row, bug, text, result.structured_content)
    assert result.structured_content["answer"] == text
    # the structured view: the answer JSON-escaped and the typed fields
    assert row.structured_tokens == tokens.count_tokens(real_bugs.compact_json(result.structured_content))
    fields = {k: v for k, v in result.structured_content.items() if k != "answer"}
    assert row.fields_tokens == tokens.count_tokens(real_bugs.compact_json(fields)) and row.fields_tokens < 60
    assert row.text_tokens == 0  # measure() counts the text; measure_views only the other views
    row.text_tokens = tokens.count_tokens(text)
    assert row.view_tokens("both") == row.text_tokens + row.fields_tokens
    # a JSON string costs about a token more per line (``\n`` escaped) and per quote (``\"``)
    escapes = text.count("\n") + text.count('"')
    assert row.text_tokens < row.structured_tokens <= row.text_tokens + escapes + row.fields_tokens + 3
    assert real_bugs.names(text, "lib.py", 6) and row.frame_structured and row.frame_both
    # the typed summary of the same run: its groups and failures
    assert summary is not None and summary["counts"]["failed"] == 2
    assert [f["node_id"] for f in summary["failures"]] == ["test_lib.py::test_lookup", "test_lib.py::test_value"]


def test_the_views_report_gives_each_view_against_its_targets() -> None:
    """Per call and view: the median and worst ratio, the runs above 1.0x and the bug's
    line named; per kind too; rows measured before the views are left out."""
    rows = []
    for i, (text, structured, fields, frame) in enumerate([(30, 40, 8, True), (60, 70, 8, False), (20, 28, 8, True)]):
        row = real_bugs.Row("p", f"b{i}", "k", "editable", raises=True, frame=frame, frame_in_short=frame)
        row.text_tokens, row.structured_tokens, row.fields_tokens, row.short_tokens = text, structured, fields, 100
        row.frame_structured = row.frame_both = frame
        rows.append(row)
    rows.append(real_bugs.Row("p", "old", "k", "editable", raises=True, text_tokens=50, short_tokens=100))
    figures = real_bugs.view_figures(rows)
    assert figures["text"]["runs"] == 4 and figures["structured"]["runs"] == 3 and figures["both"]["runs"] == 3
    assert figures["structured"]["median_token_ratio_tb_short"] == 0.4
    assert figures["both"]["max_token_ratio_tb_short"] == 0.68
    assert figures["structured"]["frame_named"] == "67% (2/3)"
    assert figures["structured"]["max_tokens_beyond_105pc_of_text"] == 8.5  # 40 - 1.05 * 30
    report = real_bugs.views_report(rows)
    assert "| plain | structured | 3 | 0.4 | 0.7 | 0 | 67% (2/3) | 100% (2/2) |" in report
    assert "plain, structured: target median_token_ratio_tb_short <= 0.35: **not met** (0.4)" in report
    assert "| plain | other, raises | 3 | 0.3 / 0.6 | 0.4 / 0.7 | 0.38 / 0.68 | 2/3 / 2/3 / 2/3 / 2/3 |" in report


def test_the_structured_view_is_compared_with_the_text_before(tmp_path: Path) -> None:
    """``--text-before``: each run's structured view against the text an earlier run
    answered for the same bug, mode and call; a run the earlier file lacks is left out."""
    import json

    earlier = tmp_path / "before.json"
    earlier.write_text(
        json.dumps(
            {
                "rows": [
                    {"project": "p", "bug": "a", "mode": "editable", "call": "plain", "text_tokens": 100},
                    {"project": "p", "bug": "b", "mode": "editable", "call": "plain", "text_tokens": 200},
                    {"project": "p", "bug": "a", "mode": "editable", "call": "affected", "text_tokens": 50},
                ]
            }
        )
    )
    rows = []
    for bug, call, text, structured, fields in (
        ("a", "plain", 90, 140, 40),
        ("b", "plain", 190, 250, 40),
        ("a", "affected", 45, 100, 45),
        ("c", "plain", 10, 60, 40),  # not in the earlier run
    ):
        row = real_bugs.Row("p", bug, "k", "editable", call=call, text_tokens=text, short_tokens=400)
        row.structured_tokens, row.fields_tokens = structured, fields
        rows.append(row)
    figures = real_bugs.against_text_before(rows, real_bugs.text_before([earlier]))
    assert figures["plain"]["runs"] == 2 and figures["affected"]["runs"] == 1
    assert figures["plain"]["median_structured_over_text_before"] == 1.325  # (1.4 + 1.25) / 2
    assert figures["plain"]["max_tokens_beyond_105pc_of_text_before"] == 40.0  # 250 - 210
    assert figures["plain"]["max_tokens_beyond_105pc_of_text_before_and_fields"] == 0.0  # 250 - 40 - 210
    assert figures["affected"]["max_tokens_beyond_105pc_of_text_before_and_fields"] == 2.5  # 100 - 45 - 52.5
    report = real_bugs.against_text_before_report(figures)
    assert "| plain | 2 | 1.325 | 1.4 | 0.925 | 40.0 | 0.0 | 40.0 | 40 |" in report, report
