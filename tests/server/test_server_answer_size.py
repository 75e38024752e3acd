"""The size and the economy of execute_tests' answer, end to end: the real server over
real stdio with the SDK's client, the real pytest on fixture projects.

What is held: the text is small (many_failures' 256 failures; every_outcome's size is
held by test_server_outcomes.py), one failing test answers in fewer bytes than ``pytest -q --tb=short`` prints
(run here in a subprocess on the same project), every line is capped and the cut is
counted. In the default (``structured``) view the structured content is the answer text
and a few typed fields: its JSON, what Claude Code hands its model, is at most a tenth
larger than the text and a few hundred bytes (``STRUCTURED_OVER_TEXT``). In the ``typed``
view (for programs) the wire (the JSON of the whole CallToolResult: the text plus the
structured content) is at most 4 times the text, because the structured content carries
each failure's facts once and leaves tracebacks and output tails to the text (the text
writes each frame on one line, so the facts weigh more beside it than they did beside
pytest's long frames: 3 times until then).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import anyio
import pytest
from helpers.server_support import TYPED, Project, connect, run, text_of

from pytest_mcp_server.adapters.text import render_text
from pytest_mcp_server.domain.policy import LINE_CHARS
from pytest_mcp_server.domain.tools import ExecuteParams, ExecuteResult
from pytest_mcp_server.engine import summarize
from pytest_mcp_server.run.argv import execute_argv
from pytest_mcp_server.run.events import PLUGIN_NAME
from pytest_mcp_server.run.interpreter import Interpreter, probe_interpreter, version_numbers

WIRE_TO_TEXT = 4
"""Largest wire bytes per text byte (``typed`` view)."""
STRUCTURED_OVER_TEXT = (1.1, 400)
"""In the default view, the structured content's compact JSON is at most this factor of
the text's bytes plus this many bytes: the answer JSON-escaped, and the typed fields
(``report_path`` is as long as the machine's directories: left out)."""


def wire_bytes(result) -> int:
    """Bytes of the CallToolResult as the SDK's client received it, in JSON, without the
    structured content's ``command`` and ``report_path``: their paths are as long as the
    machine's directories (a temporary directory here), whatever the answer says."""
    data = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    for key in ("command", "report_path"):
        (data.get("structuredContent") or {}).pop(key, None)
    return len(json.dumps(data, separators=(",", ":")).encode())


def call_execute(project: Project, arguments: dict | None = None, *, typed: bool = False):
    """``execute_tests`` with ``arguments`` on the real server, in the default view or,
    ``typed``, the ``typed`` view."""

    async def body():
        async with connect(project.params(*(TYPED if typed else ())), "auto") as client:
            return await client.call_tool("execute_tests", arguments or {})

    return run(body)


def structured_bytes(result) -> int:
    """Bytes of the structured content as a client's ``JSON.stringify`` writes it (compact,
    non-ASCII as is), without ``report_path`` (see ``STRUCTURED_OVER_TEXT``)."""
    content = {k: v for k, v in result.structured_content.items() if k != "report_path"}
    return len(json.dumps(content, separators=(",", ":"), ensure_ascii=False).encode())


def test_every_outcome_runs_as_pytest_does_and_wire_at_most_4x_text(tmp_path):
    # its text size (every problem named) is held by test_server_outcomes.py
    project = Project("every_outcome", tmp_path)
    result = call_execute(project, typed=True)
    res = ExecuteResult.model_validate(result.structured_content)
    text = text_of(result)
    size = len(text.encode())
    assert wire_bytes(result) <= WIRE_TO_TEXT * size, (wire_bytes(result), size)
    assert max(len(line) for line in text.splitlines()) <= LINE_CHARS
    # pytest ran at its own verbosity: its differing items, its own cut of the whole
    # dicts, and none of its hints to rerun verbose
    assert not any(arg == "-q" or arg.startswith(("-v", "-o", "verbosity")) for arg in res.command), res.command
    assert "{'roles': ['admin', 'dev']} != {'roles': ['admin']}" in text and "{'age': 36} != {'age': 37}" in text
    assert "assert {'name': 'ada...@example.org'} == {'name': 'ada...@example.org'}" in text, text
    assert "Omitting 2 identical items\n" in text, text
    for hint in ("use -vv", "Use -v", "-vv to show", "use -v to show"):
        assert hint not in text, hint
    # the structure names each entry of the text by its facts, without traceback or output
    entries = ["- " + block for block in text.split("\n- ")[1:]]
    assert len(res.summary.failures) == len(entries) == 8
    for failure, entry in zip(res.summary.failures, entries, strict=True):
        assert failure.location is not None
        # the location is named once: in the header, or as the frame line that starts with it
        where = f"{failure.location.path}:{failure.location.line}"
        header = entry.split("\n", 1)[0]
        assert header.endswith((f" {failure.node_id}  at {where}", f" {failure.node_id}")), header
        assert (f"  at {where}" in header) != (f"\n {where}: " in entry), entry
        assert failure.message and failure.message[:40] in text
        assert failure.traceback == "" and failure.stdout is None and failure.stderr is None
    # every group has one failure, listed: a group table would only repeat the entries
    assert "Failure groups" not in text and "also in" not in text


def test_256_failures_from_3_causes_are_3_entries_with_counts_and_a_few_ids(tmp_path):
    project = Project("many_failures", tmp_path)
    result = call_execute(project, typed=True)
    res = ExecuteResult.model_validate(result.structured_content)
    text = text_of(result)
    size = len(text.encode())
    assert size <= 2048, (size, text)
    assert wire_bytes(result) <= WIRE_TO_TEXT * size, (wire_bytes(result), size)
    groups = {g.id: g for g in res.summary.groups}
    assert len(res.summary.failures) == len(groups) == 3
    assert {f.group for f in res.summary.failures} == set(groups)
    # every other failure is counted: in omitted, and on its group's "also in" line
    assert res.summary.omitted.failures == 256 - 3
    lines = text.splitlines()
    for failure in res.summary.failures:
        group = groups[failure.group]
        entry = lines.index(f"- FAILED {failure.node_id}")
        also = next(line for line in lines[entry + 1 :] if line.startswith(" also in "))
        others = [n.removeprefix("tests/test_many.py::") for n in group.examples if n != failure.node_id]
        assert also == f" also in {group.count - 1} more: {', '.join(others)}, ...", also
    assert "Failure groups" not in text and "more failures" not in text
    assert sum(line.startswith(("- FAILED", "- ERROR")) for line in lines) == 3


SHOP = """PRICES = {"apple": 1.10, "plum": 0.40}


def price_of(name):
    return PRICES[name]


def line_total(quantity, name):
    return quantity * price_of(name)


def cart_total(lines):
    return sum(line_total(q, n) for q, n in lines)
"""

ONE_FAILURE = {
    # an assertion in the test that pytest explains
    "assertion": ("assert cart_total([(3, 'apple')]) == 3.3", "3.3000000000000003", "tests/test_shop.py"),
    # an exception four frames deep in the project's code
    "library": ("assert cart_total([(2, 'apple'), (1, 'pear')]) == 2.6", "KeyError: 'pear'", "shop.py"),
}


@pytest.mark.parametrize("case", sorted(ONE_FAILURE))
def test_one_failing_test_answers_in_fewer_bytes_than_pytest_tb_short(tmp_path, case):
    failing, essential, where = ONE_FAILURE[case]
    project = Project("every_outcome", tmp_path)
    shutil.rmtree(project.root / "tests")
    (project.root / "tests").mkdir()
    (project.root / "shop.py").write_text(SHOP)
    tests = ["from shop import cart_total, line_total\n"]
    for n in range(12):
        tests.append(f"\n\ndef test_line_{n}():\n    assert line_total({n}, 'plum') == {n} * 0.40\n")
    tests.append(f"\n\ndef test_cart():\n    {failing}\n")
    (project.root / "tests" / "test_shop.py").write_text("".join(tests))
    with (project.root / "conftest.py").open("a") as conftest:
        conftest.write("\nimport sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n")
    result = call_execute(project)
    text = text_of(result)
    assert result.structured_content["counts"] == {"total": 13, "passed": 12, "failed": 1}
    # what a structured-only client hands its model: the same answer, hardly larger
    assert result.structured_content["answer"] == text
    factor, extra = STRUCTURED_OVER_TEXT
    assert structured_bytes(result) <= factor * len(text.encode()) + extra, (structured_bytes(result), text)
    # the header names the test; the frame line that starts with the location names the bug's line
    assert "- FAILED tests/test_shop.py::test_cart\n" in text and f"\n {where}:" in text, text
    assert essential in text, text
    pytest_short = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--tb=short", "-p", "no:cacheprovider"],
        cwd=project.root,
        capture_output=True,
        check=False,
    )
    assert pytest_short.returncode == 1 and essential.encode() in pytest_short.stdout
    assert len(text.encode()) < len(pytest_short.stdout), (text, pytest_short.stdout.decode())


def test_a_2600_character_output_line_is_capped_and_counted(tmp_path):
    project = Project("every_outcome", tmp_path)
    (project.root / "tests" / "test_loud.py").write_text(
        "def test_loud():\n    print('begin')\n    print('z' * 2600)\n    print('end')\n    assert False, 'too loud'\n"
    )
    # an output budget that keeps the whole output: only the line cap cuts
    result = call_execute(project, {"node_ids": ["tests/test_loud.py"], "output_bytes": 8192}, typed=True)
    text = text_of(result)
    assert max(len(line) for line in text.splitlines()) <= LINE_CHARS
    capped = next(line for line in text.splitlines() if "zzzz" in line)
    assert capped.endswith("…") and len(capped) == LINE_CHARS
    # the lines around it are whole, and the cut is counted
    assert "   begin" in text.split("\n") and "   end" in text.split("\n")
    cut = 2600 - capped.count("z")
    omitted = next(line for line in text.splitlines() if line.startswith("Omitted: "))
    assert f"{cut} bytes of report text" in omitted, omitted
    res = ExecuteResult.model_validate(result.structured_content)
    assert res.summary.omitted.text_bytes == 0  # the structure carries no output tail, so nothing was cut there
    assert json.dumps(result.structured_content).count("zzzz") == 0


def test_every_pytest_runs_at_its_own_verbosity(tmp_path):
    # no -q, -v or -o verbosity_*: pytest renders (and takes the time) as it does by hand
    # (run/argv.py says why); the server's own options are its plugin's
    params = ExecuteParams(max_failures=2, failfast=True, node_ids=["tests/test_x.py"])
    for version in ((9, 2, 0), (8, 0), (7, 4, 4), ()):
        interp = Interpreter("/py", has_xdist=False, pytest_version=version)
        argv = execute_argv(params, interp, tmp_path)
        options = argv[3 : argv.index("--")]
        assert [o for o in options if not o.startswith("--mcp-")] == ["-p", PLUGIN_NAME, "--maxfail=2", "-x"], argv


def test_the_probe_keeps_the_interpreters_pytest_version(tmp_path):
    interp = anyio.run(lambda: probe_interpreter(sys.executable, cwd=tmp_path, env=dict(os.environ)))
    assert interp.pytest_version == version_numbers(pytest.__version__) and len(interp.pytest_version) >= 2
    assert version_numbers("8.3.0rc1") == (8, 3, 0) and version_numbers("9.0.dev12+g1") == (9, 0)
    assert version_numbers("unknown") == ()


def test_pytests_advice_to_rerun_verbose_is_left_out_of_the_text(tmp_path):
    # what pytest at its default verbosity writes into a failure's traceback
    body = (
        "def test_user():\n"
        "&gt;       assert user == expected\n"
        "E       AssertionError: assert {'name': 'ali...active': True} == {'name': 'ali...ctive': False}\n"
        "E         Omitting 2 identical items, use -vv to show\n"
        "E         Differing items:\n"
        "E         {'active': True} != {'active': False}\n"
        "E         Use -v to get more diff\n"
        "\ntests/test_u.py:2: AssertionError"
    )
    report = tmp_path / "junit.xml"
    report.write_text(
        '<testsuite tests="1"><testcase classname="tests.test_u" name="test_user" file="tests/test_u.py" time="0.1">'
        f'<failure message="AssertionError: assert" type="AssertionError">{body}</failure></testcase></testsuite>'
    )
    for backend in ("native", "pure"):
        text = render_text(summarize([str(report)], backend=backend))
        assert "E         Omitting 2 identical items\n" in text, text
        assert "{'active': True} != {'active': False}" in text
        assert "-vv" not in text and "Use -v" not in text, text


def test_an_error_answer_caps_its_lines_and_keeps_them_whole_in_the_structure(tmp_path):
    # a conftest that cannot be imported: pytest exits 4 with the error on its output
    project = Project("every_outcome", tmp_path)
    with (project.root / "conftest.py").open("a") as conftest:
        conftest.write("\nraise RuntimeError('broken conftest ' + 'q' * 2600)\n")
    result = call_execute(project, typed=True)
    assert result.is_error
    text = text_of(result)
    assert text.startswith("ERROR usage_error: ")
    assert max(len(line) for line in text.splitlines()) <= LINE_CHARS
    assert any(line.endswith("…") and "qqqq" in line for line in text.splitlines()), text
    tails = (result.structured_content.get("stdout_tail") or "") + (result.structured_content.get("stderr_tail") or "")
    assert "q" * 2600 in tails
