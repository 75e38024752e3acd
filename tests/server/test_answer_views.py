"""Answer views end to end: the real server over real stdio with the SDK's client (and raw
JSON-RPC lines for a client without ``clientInfo``), real pytest with pytest-cov, in both
protocol eras.

What must hold (docs/SERVER.md, *Answer views*): in the default view, the structured
content is the answer text (``answer``, equal to the text block) and the typed fields;
in the ``text`` view, the typed fields alone; for each kind of failure an agent meets
(a wrong value with its suspect line, a chained exception, a doctest, a fixture error,
a timeout), so that what the text says is in the structured content. ``auto`` shapes by
``clientInfo.name`` (at ``initialize``, or in a 2026-07-28 request's ``_meta``); a client
without one gets the default; ``--answer-view`` overrides; an unknown view is refused at
start. Every answer the SDK's client receives is checked against the tool's published
output schema by the client itself.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers.server_support import (
    MODES,
    TYPED,
    committed_project,
    found_report,
    line_of,
    run,
    stdio_server,
    text_of,
)
from mcp import Client
from mcp.types import Implementation

from pytest_mcp_server.adapters.mcp.views import ANSWER_VIEW_OPTIONS, CLIENT_VIEWS
from pytest_mcp_server.domain.tools import ExecuteResult

PRICES = '''\
def total(items):
    return sum(items)


def format_price(value):
    """The price with two decimals.

    >>> format_price(3)
    '3.00'
    """
    return str(float(value))


def parse_price(text):
    try:
        return float(text)
    except ValueError as exc:
        raise LookupError(f"no price in {text!r}") from exc
'''
TESTS = """\
import pytest

from pkg.prices import parse_price, total


@pytest.fixture
def db():
    raise ConnectionError("db down at 10.0.0.7")


def test_total():
    assert total([1, 2]) == 3


def test_parse_a_price():
    assert parse_price("2.50") == 2.5


def test_parse():
    assert parse_price("abc") == 0


def test_uses_db(db):
    pass
"""
HANG = "import time\n\n\ndef test_quick():\n    pass\n\n\ndef test_hang():\n    time.sleep(600)\n"
BUG = ("    return sum(items)\n", "    return sum(items) + 1\n")
RUN = {"node_ids": ["pkg", "tests/test_prices.py"], "coverage": True}
"""The run with failures of four kinds (coverage: the changed line is named)."""
HANGS = {"node_ids": ["tests/test_hang.py"], "timeout_s": 3}
"""The run that is killed: the fifth kind, a timeout."""


def make_project(tmp_path: Path) -> Path:
    """The project, committed, then the bug written (the change the answer names)."""
    root = committed_project(
        tmp_path / "shop",
        {
            "pkg/__init__.py": "",
            "pkg/prices.py": PRICES,
            "tests/test_prices.py": TESTS,
            "tests/test_hang.py": HANG,
            "pytest.ini": "[pytest]\naddopts = --doctest-modules\n",
        },
    )
    prices = root / "pkg" / "prices.py"
    prices.write_text(prices.read_text().replace(*BUG))
    return root


def answers(root: Path, artifacts: Path, mode: str, *options: str):
    """The answers of one server started with ``options``: the run with failures, the
    timeout, and ``summarize_report`` of the chained exception's test in the first run's
    report, named by the ``report_path`` of its answer."""

    async def body():
        async with Client(stdio_server(root, artifacts, *options), mode=mode) as c:
            failed = await c.call_tool("execute_tests", RUN)
            timeout = await c.call_tool("execute_tests", HANGS)
            story = await c.call_tool(
                "summarize_report",
                {"paths": [failed.structured_content["report_path"]], "node_ids": ["tests/test_prices.py::test_parse"]},
            )
            return failed, timeout, story

    return run(body)


def check_hang_tail(tail: str) -> None:
    """pytest's stdout up to the hang, as pytest prints it at its own verbosity: the
    session header first, and last the test file's line with test_quick's progress dot."""
    lines = tail.strip().splitlines()
    assert "test session starts" in lines[0], tail
    assert lines[-1] == "tests/test_hang.py .", tail


def without_answer(structured: dict) -> dict:
    return {k: v for k, v in structured.items() if k != "answer"}


@pytest.mark.parametrize("mode", MODES)
def test_the_default_view_carries_the_whole_answer_for_every_kind_of_failure(tmp_path, mode):
    root = make_project(tmp_path)
    failed, timeout, story = answers(root, tmp_path / "artifacts", mode)

    text = text_of(failed)
    assert not failed.is_error, text
    structured = failed.structured_content
    assert structured["answer"] == text  # what a structured-only client's model reads is the whole answer
    assert list(structured)[0] == "answer"
    fields = without_answer(structured)
    found_report(tmp_path / "artifacts", fields.pop("report_path"))
    coverage = fields.pop("coverage")
    assert set(coverage) == {"percent", "statements", "missed"} and 0 < coverage["percent"] < 100
    assert fields == {
        "status": "failed",
        "exit_code": 1,
        "counts": {"total": 5, "passed": 1, "failed": 3, "errors": 1},
    }
    # each kind, in the answer: the wrong value and the changed line the failing test ran
    bug_line = line_of(root / "pkg" / "prices.py", BUG[1].strip())
    assert f"changed code run by failing tests: pkg/prices.py:{bug_line}" in text
    assert "assert 4 == 3" in text
    # a chained exception: both exceptions and the line that joins them
    assert "ValueError: could not convert string to float: 'abc'" in text
    assert "The above exception was the direct cause of the following exception:" in text
    assert "LookupError: no price in 'abc'" in text
    # a doctest: its example's expected and actual values
    assert "Expected:" in text and "'3.00'" in text and "Got:" in text and "'3.0'" in text
    # a fixture error: the test, its phase and the raising line
    assert "- ERROR in setup tests/test_prices.py::test_uses_db" in text
    assert 'raise ConnectionError("db down at 10.0.0.7")' in text

    # a timeout is a tool error; its structured content carries its answer too
    said = text_of(timeout)
    assert timeout.is_error and said.startswith("ERROR timeout: pytest did not finish within 3s")
    hang_line = line_of(root / "tests" / "test_hang.py", "time.sleep(600)")
    assert f"tests/test_hang.py:{hang_line} in test_hang" in said
    error = timeout.structured_content
    assert error["answer"] == said and error["kind"] == "timeout"
    assert f"killed by {error['signal']}" in said
    # pytest's output tails are named in the text, not printed: they are in the structured content
    assert "Output tails: stdout_tail in the structured content" in said
    assert error == {"answer": said, "kind": "timeout", "signal": "SIGTERM", "stdout_tail": error["stdout_tail"]}
    check_hang_tail(error["stdout_tail"])

    # summarize_report takes the run's report as the answer names it
    told = text_of(story)
    assert not story.is_error, told
    assert "- FAILED tests/test_prices.py::test_parse" in told and "LookupError: no price in 'abc'" in told
    assert story.structured_content == {"answer": told, "counts": fields["counts"]}


def test_the_text_view_sends_the_typed_fields_alone_and_the_answer_as_text(tmp_path):
    root = make_project(tmp_path)
    failed, timeout, story = answers(root, tmp_path / "artifacts", "legacy", "--answer-view", "text")

    text = text_of(failed)
    assert "changed code run by failing tests: pkg/prices.py:" in text and "LookupError" in text
    fields = dict(failed.structured_content)
    found_report(tmp_path / "artifacts", fields.pop("report_path"))
    assert set(fields.pop("coverage")) == {"percent", "statements", "missed"}
    # the default view's typed fields, without the answer
    assert fields == {"status": "failed", "exit_code": 1, "counts": {"total": 5, "passed": 1, "failed": 3, "errors": 1}}
    said = text_of(timeout)
    assert said.startswith("ERROR timeout: ") and "Output tails: stdout_tail in the structured content" in said
    tail = timeout.structured_content.get("stdout_tail", "")
    check_hang_tail(tail)
    assert timeout.structured_content == {
        "kind": "timeout",
        "signal": "SIGTERM",
        "stdout_tail": tail,
    }
    assert "LookupError" in text_of(story) and story.structured_content == {"counts": fields["counts"]}


def test_the_typed_view_is_the_full_result_for_programs(tmp_path):
    root = make_project(tmp_path)

    async def body():
        async with Client(stdio_server(root, tmp_path / "artifacts", *TYPED), mode="legacy") as c:
            return await c.call_tool("execute_tests", {"node_ids": ["tests/test_prices.py"]})

    answer = run(body)
    result = ExecuteResult.model_validate(answer.structured_content)
    assert result.status == "failed" and result.exit_code == 1
    assert result.summary.format == "reportlog"
    assert result.command[1:3] == ["-m", "pytest"] and "-p" in result.command
    assert {f.node_id for f in result.summary.failures} >= {"tests/test_prices.py::test_uses_db"}
    assert "answer" not in answer.structured_content
    assert text_of(answer).startswith("FAILED 2 failed, 1 passed, 1 error in ")


REFUSED = {"node_ids": ["../elsewhere"]}
"""A call refused before any process starts: its answer shows the view at no cost."""


def empty_project(tmp_path: Path) -> Path:
    """An empty project directory (a refused call runs nothing in it)."""
    root = tmp_path / "proj"
    root.mkdir(exist_ok=True)
    return root


REFUSED_AS = {"kind": "invalid_argument", "field": "node_ids[0]"}
"""The typed fields of ``REFUSED``'s answer."""


@pytest.mark.parametrize(
    ("client", "view"),
    [("claude-code", "structured"), ("claude-ai", "text"), ("a-client-nobody-knows", "structured")],
)
def test_auto_shapes_the_answer_by_the_client_named_at_initialize(tmp_path, client, view):
    async def body():
        info = Implementation(name=client, version="1.0")
        async with Client(
            stdio_server(empty_project(tmp_path), tmp_path / "artifacts"), mode="legacy", client_info=info
        ) as c:
            result = await c.call_tool("execute_tests", REFUSED)
            return result.structured_content, text_of(result)

    structured, text = run(body)
    assert text.startswith("ERROR invalid_argument: node_ids[0]: contains '..'")
    assert structured == ({"answer": text} | REFUSED_AS if view == "structured" else REFUSED_AS)


@pytest.mark.parametrize(("option", "view"), [("text", "text"), ("both", "text"), ("typed", "typed")])
def test_answer_view_overrides_what_the_client_says(tmp_path, option, view):
    async def body():
        info = Implementation(name="claude-code", version="2.1.280")
        params = stdio_server(empty_project(tmp_path), tmp_path / "artifacts", "--answer-view", option)
        async with Client(params, mode="legacy", client_info=info) as c:
            result = await c.call_tool("execute_tests", REFUSED)
            return result.structured_content

    structured = run(body)
    if view == "typed":
        assert structured["kind"] == "invalid_argument" and structured["message"].startswith("node_ids[0]: ")
    else:
        assert structured == REFUSED_AS


def raw_calls(root: Path, artifacts: Path, client_infos: list[dict | None]) -> list[dict]:
    """2026-07-28 ``tools/call`` requests of ``REFUSED`` written on one server's stdin as
    JSON-RPC lines, the ``i``-th with ``client_infos[i]`` in its ``_meta`` (left out when
    None); their results, in that order."""
    lines = []
    for i, info in enumerate(client_infos):
        meta: dict = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        if info is not None:
            meta["io.modelcontextprotocol/clientInfo"] = info
        params = {"name": "execute_tests", "arguments": REFUSED, "_meta": meta}
        lines.append(json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}) + "\n")
    server = stdio_server(root, artifacts)
    # stdin stays open until every answer is in: its end stops the calls still running
    proc = subprocess.Popen(
        [server.command, *server.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=server.env, text=True
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(lines))
        proc.stdin.flush()
        by_id = {}
        while len(by_id) < len(lines):
            answer = json.loads(proc.stdout.readline())
            by_id[answer["id"]] = answer["result"]
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return [by_id[i] for i in range(len(client_infos))]


def test_auto_shapes_each_2026_request_by_the_client_in_its_meta_and_without_one_gives_the_default(tmp_path):
    named = {
        "claude-code": "structured",
        "Visual Studio Code": "structured",
        "Visual Studio Code - Insiders": "structured",
        "cursor-vscode": "structured",
        "github-copilot-developer": "structured",
        "Anthropic/ClaudeAI": "text",
        "claude-ai": "text",
        "claude-ai-but-another": "structured",
        None: "structured",  # no clientInfo: the default
    }
    infos = [None if name is None else {"name": name, "version": "1.0"} for name in named]
    results = raw_calls(empty_project(tmp_path), tmp_path / "artifacts", infos)
    for (name, view), result in zip(named.items(), results, strict=True):
        text = result["content"][0]["text"]
        assert result["isError"] and text.startswith("ERROR invalid_argument: "), (name, result)
        expected = {"answer": text} | REFUSED_AS if view == "structured" else REFUSED_AS
        assert result["structuredContent"] == expected, name


def test_an_unknown_answer_view_is_refused_at_start_naming_the_valid_ones(tmp_path):
    params = stdio_server(empty_project(tmp_path), tmp_path / "artifacts", "--answer-view", "json")
    done = subprocess.run(
        [params.command, *params.args], input="", env=params.env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "--answer-view" in done.stderr and "'json'" in done.stderr
    for name in ANSWER_VIEW_OPTIONS:
        assert f"'{name}'" in done.stderr, done.stderr


def test_the_client_table_maps_each_documented_name():
    docs = (Path(__file__).resolve().parents[2] / "docs" / "SERVER.md").read_text()
    for name, _ in CLIENT_VIEWS:
        assert f"`{name.rstrip('*')}`" in docs, name
