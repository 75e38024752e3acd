"""The ``Omitted:`` line of an answer counts what the answer leaves out, as shown.

The real server over stdio runs the real pytest on a project of 15 causes (13 in
``test_many.py``: ten of two failures, three of one; one check copied into two more
modules with other values, which the text folds into ``same traceback as ...``). With
the default budgets the engine lists 10 groups and 20 failures: the listed failures of
the groups it cut still get entries, so those groups are shown, and only one group (one
failure) is named nowhere. The test reads what the text shows (its entries, ``also in``
counts, group lines and ``... [N lines omitted]`` markers) and checks every count of the
``Omitted:`` line against it: for ``execute_tests`` (whose structured content counts the
same traceback lines), and for ``summarize_report`` with node ids (every listed failure
in full, no group table).
"""

from __future__ import annotations

import re
from pathlib import Path

from helpers.server_support import connect, run, stdio_server, text_of, typed_stdio_server

from pytest_mcp_server.adapters.text import FULL_STORY_HINT

MANY = (
    """\
import pytest


def test_single_a():
    raise KeyError("a")


def test_single_b():
    raise ZeroDivisionError("b")
"""
    + "".join(
        f"""

@pytest.mark.parametrize("i", [0, 1])
def test_pair_{n}(i):
    raise {exc}("p{n}")
"""
        for n, exc in enumerate(
            [
                "ValueError",
                "TypeError",
                "LookupError",
                "RuntimeError",
                "OSError",
                "AttributeError",
                "NameError",
                "IndexError",
                "NotImplementedError",
                "UnicodeError",
            ]
        )
    )
    + """

def test_single_c():
    raise ArithmeticError("c")
"""
)

COPY = """\
def total(xs):
    return sum(xs)


def test_sum():
    assert total([1, 2]) == {expected}
"""

CAUSES = 15
FAILURES = 25


def cause_of(node_id: str) -> str:
    """The cause of a failure of the project: its test function (a parametrised test's
    cases share it), in its own file."""
    return node_id.split("[", 1)[0]


def shown_counts(text: str) -> tuple[int, set[str], int]:
    """What ``text`` shows: failures it names (entries, ``also in N more`` and group
    lines ``gID xN``), the causes it names (entries' tests, group lines' examples) and the
    traceback lines its ``... [N lines omitted]`` markers say were cut."""
    named = 0
    causes: set[str] = set()
    last_file = ""
    for line in text.splitlines():
        if entry := re.match(r"- (?:FAILED|ERROR)(?: in \w+)? (\S+)", line):
            named += 1
            causes.add(cause_of(entry.group(1)))
            last_file = entry.group(1).split("::", 1)[0]
        elif also := re.match(r" also in (\d+) more", line):
            named += int(also.group(1))
        elif group := re.match(r"  g[0-9a-f]+ x(\d+) ", line):
            named += int(group.group(1))
        elif examples := re.match(r"      e\.g\. (.+)", line):
            first = examples.group(1).split(", ")[0]
            causes.add(cause_of(first if "::" in first else f"{last_file}::{first}"))
    cut = sum(int(n) for n in re.findall(r"\.\.\. \[(\d+) lines? omitted\]", text))
    return named, causes, cut


def omitted_counts(text: str) -> dict[str, int]:
    """The counts of the ``Omitted:`` line by what they count (``failures``, ``groups``,
    ``traceback lines``, ...); ``{}`` without the line."""
    line = next((line for line in text.splitlines() if line.startswith("Omitted: ")), None)
    if line is None:
        return {}
    counts = {}
    # an execute_tests answer's line ends with where the rest is
    for part in line.removeprefix("Omitted: ").removesuffix(". " + FULL_STORY_HINT).split("; "):
        number, _, what = part.partition(" ")
        counts[re.sub(r"^more | \(.*\)$", "", what)] = int(number)
    return counts


def expected_omitted(text: str, failures: int, causes: int) -> dict[str, int]:
    """The ``Omitted:`` counts ``text`` must carry for a report (or selection) of
    ``failures`` failures from ``causes`` causes: what it shows nowhere."""
    named, shown_causes, cut = shown_counts(text)
    expected = {"failures": failures - named, "groups": causes - len(shown_causes), "traceback lines": cut}
    return {what: n for what, n in expected.items() if n}


def test_the_omitted_line_counts_what_the_answer_leaves_out(tmp_path: Path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "test_many.py").write_text(MANY)
    (root / "test_copy_a.py").write_text(COPY.format(expected=4))
    (root / "test_copy_b.py").write_text(COPY.format(expected=5))
    params = typed_stdio_server(root, tmp_path / "artifacts")

    async def body():
        async with connect(params, "auto") as client:
            executed = await client.call_tool("execute_tests", {"traceback_lines": 3})
            report = executed.structured_content["report_path"]
            selected = await client.call_tool(
                "summarize_report",
                {"paths": [report], "node_ids": ["test_many.py"], "failures_listed": 4, "traceback_lines": 3},
            )
            return text_of(executed), executed.structured_content["summary"], text_of(selected)

    answer, structured, selected = run(body)

    # execute_tests: the groups cut from the engine's group list whose failures are listed are shown
    assert answer.startswith(f"FAILED {FAILURES} failed"), answer
    assert "same traceback as test_copy_a.py::test_sum, with other values" in answer
    assert "test_single_a" in answer and "test_single_b" in answer and "test_single_c" not in answer
    counts = omitted_counts(answer)
    assert counts == expected_omitted(answer, FAILURES, CAUSES), answer
    assert (counts["failures"], counts["groups"]) == (1, 1), answer
    assert counts["traceback lines"] > 0, answer
    # the structured content counts the same lines (its own groups count is the engine's list's)
    assert structured["omitted"]["traceback_lines"] == counts["traceback lines"]

    # summarize_report with node ids: four failures in full, none of the other 19 named
    assert selected.count("\n- FAILED ") == 4, selected
    counts = omitted_counts(selected)
    assert counts == expected_omitted(selected, FAILURES - 2, CAUSES - 2), selected
    assert (counts["failures"], counts["groups"]) == (19, 9), selected


LOUD = """\
import pytest


@pytest.mark.parametrize("i", [0, 1, 2])
def test_loud(i):
    print("x" * 4999)
    assert i < 0


def test_single():
    print("y" * 2999)
    raise ValueError("single")
"""


def test_captured_output_bytes_left_out_are_those_of_the_entries_shown(tmp_path: Path):
    """Each failure prints more than the call's ``output_bytes`` (2,048): an entry in full
    shows the tail and the ``Omitted:`` line counts the head it lost; the two other
    cases of ``test_loud``, named on its ``also in`` line without their output, are
    counted among the failures, not by their output's bytes."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "test_loud.py").write_text(LOUD)
    params = typed_stdio_server(root, tmp_path / "artifacts")

    async def body():
        async with connect(params, "auto") as client:
            executed = await client.call_tool("execute_tests", {"output_bytes": 2048})
            return text_of(executed), executed.structured_content["summary"]

    answer, structured = run(body)
    assert "also in 2 more" in answer, answer
    # 4,999 characters and a line break each, less the 2,048-byte tail shown
    shown_heads = (5000 - 2048) + (3000 - 2048)
    assert omitted_counts(answer)["bytes of captured output"] == shown_heads, answer
    assert structured["omitted"]["output_bytes"] == shown_heads


VENDOR = """\
def load(text):
    return _parse(text)


def _parse(text):
    value = text.strip()
    return int(value)
"""

CONF = """\
import vendorlib


class ConfigError(Exception):
    pass


def read_port(text):
    try:
        return vendorlib.load(text)
    except ValueError as e:
        raise ConfigError(f"bad port {text!r}") from e
"""

CONF_TEST = """\
from pkg.conf import read_port


def test_port():
    assert read_port("80x") == 80
"""


def test_traceback_lines_no_call_shows_are_not_counted(tmp_path: Path):
    """A chained exception through a library outside the root (a vendored module on
    ``sys.path``): the cut drops the library's middle frame, which no budget shows, and
    marks it; ``Omitted`` counts only the source lines before each shown statement,
    which ``summarize_report`` with node ids shows, and that call, showing them, counts
    nothing (docs/ENGINE.md, *Traceback cutting*, step 7)."""
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    vendor = tmp_path / "vendor"
    vendor.mkdir()
    (vendor / "vendorlib.py").write_text(VENDOR)
    (root / "conftest.py").write_text(f"import sys\n\nsys.path.insert(0, {str(vendor)!r})\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "conf.py").write_text(CONF)
    (root / "tests" / "test_conf.py").write_text(CONF_TEST)

    async def body():
        async with connect(stdio_server(root, tmp_path / "artifacts"), "auto") as client:
            executed = await client.call_tool("execute_tests", {})
            report = executed.structured_content["report_path"]
            story = await client.call_tool(
                "summarize_report", {"paths": [report], "node_ids": ["tests/test_conf.py::test_port"]}
            )
            return text_of(executed), text_of(story)

    answer, story = run(body)

    # every frame shown, one line each, and the chain line between the two exceptions
    assert "../vendor/vendorlib.py:7: return int(value)" in answer, answer
    assert "pkg/conf.py:10: return vendorlib.load(text)" in answer, answer
    assert "The above exception was the direct cause of the following exception:" in answer, answer
    # `load`'s frame (library code, not where an exception was raised) is marked, not counted
    library_marker = "... [4 lines omitted]"
    assert answer.count(library_marker) == 1 and story.count(library_marker) == 1, (answer, story)
    # counted: the lines before the statement of `read_port` (`text = '80x'`, a blank
    # line, `def`, `try:`; in the second exception after the blank line that starts an
    # entry, and with the `return` and `except` lines too) and of `_parse` (the blank
    # line, `text = '80x'`, a blank line, `def`, `value = ...`)
    assert omitted_counts(answer) == {"traceback lines": 4 + 7 + 5}, answer
    # the full story shows those lines, and leaves out only the library frame: no count
    assert "        except ValueError as e:" in story and "        value = text.strip()" in story, story
    assert "traceback lines" not in story and "Omitted" not in story, story
