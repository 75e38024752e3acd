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

BENCHES = Path(__file__).resolve().parents[1] / "benches"
sys.path.insert(0, str(BENCHES))

import real_bugs  # noqa: E402  (benches/ is not a package)
import tokens  # noqa: E402


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
