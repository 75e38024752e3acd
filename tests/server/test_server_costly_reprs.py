"""Values whose repr is costly, over real stdio: the run behaves as pytest's own.

``tests/fixtures/deep_repr`` fails seven ways whose values are costly to render: two
comparisons whose whole diff pytest renders at ``-vv`` in seconds (documents of nested
dicts, a list of objects whose repr recurses through their children), nested lists that
end in a RecursionError in pytest's pretty-printer at ``-vv``, a 100 MB repr, an 4 MB
message (which pytest puts into its report whole at any verbosity), a repr that raises
and one that recurses forever. The server runs pytest at pytest's own verbosity, so
each takes what it takes by hand (milliseconds: benches/RESULTS.md, *Run like pytest*,
has the -vv figures) and the record plugin bounds each report, counting what it cut.

The real server is started by the SDK's client, in the ``typed`` answer view (the test
reads the run's report file and the summary's ``omitted``); pytest is real. ``CI`` and
``BUILD_NUMBER`` are emptied in the server's environment: pytest renders whole diffs
on CI (``running_on_ci``), as by hand there, and this project measures its default.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from helpers.server_support import TYPED, Project, connect, run, text_of

from pytest_mcp_server.domain.tools import ExecuteResult
from pytest_mcp_server.run.pytest_plugin.pytest_mcp_server_events import REPORT_CAP, TEXT_CAP

FIXTURE_TESTS = Path(__file__).resolve().parents[1] / "fixtures" / "deep_repr" / "tests" / "test_reprs.py"
LARGE_MESSAGE_CHARS = int(re.search(r"LARGE_MESSAGE_CHARS = ([0-9_]+)", FIXTURE_TESTS.read_text())[1])
COSTLY_AT_VV = ("test_tree_documents_differ", "test_nodes_differ", "test_deeply_nested_lists")
"""The tests whose comparison pytest renders whole at -vv: seconds each, or a RecursionError."""


def test_costly_reprs_fail_as_under_pytest_with_a_bounded_record_and_answer(tmp_path):
    project = Project("deep_repr", tmp_path)

    async def body():
        async with connect(project.params(*TYPED, env={"CI": "", "BUILD_NUMBER": ""}), "auto") as client:
            return await client.call_tool("execute_tests", {})

    result = run(body)
    assert not result.is_error, result.content
    res = ExecuteResult.model_validate(result.structured_content)
    text = text_of(result)
    counts = res.summary.counts
    assert (counts.total, counts.failed, counts.passed, counts.errors) == (8, 7, 1, 0), text

    # pytest's own rendering: each comparison failed at once, with pytest's own cut values,
    # and its assertion plugin did not fail on any of them
    record = Path(res.report_path)
    calls = {}
    for line in record.read_text().splitlines():
        report = json.loads(line)
        if report.get("$report_type") == "TestReport" and report["when"] == "call":
            calls[report["nodeid"].split("::")[1]] = report
    for name in COSTLY_AT_VV:
        assert calls[name]["duration"] < 3.0, (name, calls[name]["duration"])
        assert f"- FAILED tests/test_reprs.py::{name}\n" in text, text
    assert "representation of details failed" not in text and "RecursionError: maximum" not in text, text
    assert "raised in repr()] Raises object at 0x" in text and "raised in repr()] Forever object at 0x" in text

    # one report of at most REPORT_CAP bytes, about, whatever the repr; the record file a
    # few hundred KB where -vv wrote over a GB
    assert record.stat().st_size < 2 * REPORT_CAP, record.stat().st_size
    assert max(len(line) for line in record.read_bytes().splitlines()) < 1.05 * REPORT_CAP
    # the 4 MB message is in the report four times (the crash and the E line, in the
    # traceback and its chain): each cut to its head and tail, every byte cut counted
    cut = calls["test_large_message"]["text_bytes_cut"]
    assert cut > 4 * (LARGE_MESSAGE_CHARS - TEXT_CAP), cut
    omitted = next(line for line in text.splitlines() if line.startswith("Omitted: "))
    text_bytes = int(re.search(r"([0-9]+) bytes of report text", omitted)[1])
    assert cut <= text_bytes < cut + 10_000, (cut, omitted)  # and the lines the text caps
    assert res.summary.omitted.text_bytes >= cut

    # the answer is small: an entry per failure, each line capped
    assert len(text.encode()) < 8_000, len(text.encode())
