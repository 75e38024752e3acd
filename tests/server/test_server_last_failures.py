"""The server's own record of the last failures, over real stdio with the real pytest:
its runs leave pytest's cache plugins out (``--lf``'s ``cache/lastfailed`` and ``--nf``'s
``cache/nodeids`` are neither read nor rewritten in the project), ``last_failed`` selects
from the server's record (in xdist's workers too, which collect), the record forgets a
test once it passes, and a project whose own options use ``--lf`` keeps pytest's."""

from __future__ import annotations

import json

from helpers.server_support import TYPED, committed_project, connect, run, stdio_server

from pytest_mcp_server.domain.tools import ExecuteResult
from pytest_mcp_server.run.rundirs import FAILURES_FILE

FILES = {
    "tests/test_a.py": (
        "import pathlib\n\n"
        "def test_ok():\n    pass\n\n"
        "def test_bad():\n"
        "    assert not (pathlib.Path(__file__).parent / 'broken').exists()\n"
    ),
    "tests/test_b.py": "def test_ok_too():\n    pass\n\ndef test_ok_three():\n    pass\n",
    "tests/broken": "",
}


def _calls(root, artifacts, calls):
    async def body():
        async with connect(stdio_server(root, artifacts, *TYPED), "auto") as client:
            answers = []
            for arguments, before in calls:
                if before is not None:
                    before()
                answer = await client.call_tool("execute_tests", arguments)
                answers.append(ExecuteResult.model_validate(answer.structured_content))
            return answers

    return run(body)


def test_last_failed_reads_the_servers_record_not_the_projects_cache(tmp_path):
    root = committed_project(tmp_path / "proj", FILES, use_git=False)
    artifacts = tmp_path / "artifacts"
    full, only_failed, in_workers, after_fix, none_left = _calls(
        root,
        artifacts,
        [
            ({}, None),
            ({"last_failed": True}, None),
            ({"last_failed": True, "workers": 2}, None),
            ({"last_failed": True}, (root / "tests" / "broken").unlink),
            ({"last_failed": True}, None),
        ],
    )
    assert (full.summary.counts.total, full.summary.counts.failed) == (4, 1)
    cache = root / ".pytest_cache" / "v" / "cache"
    assert not (cache / "lastfailed").exists() and not (cache / "nodeids").exists()
    assert "--mcp-last-failed" in only_failed.command and "--lf" not in only_failed.command
    assert (only_failed.summary.counts.total, only_failed.summary.counts.failed) == (1, 1)
    assert only_failed.deselected == 3
    # under xdist the workers collect, so they select (xdist tells the controller no deselection)
    assert (in_workers.summary.counts.total, in_workers.summary.counts.failed) == (1, 1)
    # the fixed test ran alone and passed; then nothing had failed, so everything runs (pytest's --lfnf=all)
    assert (after_fix.summary.counts.total, after_fix.status) == (1, "passed")
    assert (none_left.summary.counts.total, none_left.deselected) == (4, 0)
    records = list(artifacts.rglob(FAILURES_FILE))
    assert len(records) == 1 and json.loads(records[0].read_text()) == {"failed": []}


def test_a_project_whose_addopts_use_lf_keeps_pytests_cache(tmp_path):
    root = committed_project(tmp_path / "proj", {**FILES, "pytest.ini": "[pytest]\naddopts = --lf\n"}, use_git=False)
    first, second = _calls(root, tmp_path / "artifacts", [({}, None), ({}, None)])
    assert (first.summary.counts.total, first.summary.counts.failed) == (4, 1)
    lastfailed = json.loads((root / ".pytest_cache" / "v" / "cache" / "lastfailed").read_text())
    assert list(lastfailed) == ["tests/test_a.py::test_bad"]
    # pytest's own --lf, from the project's options, ran only the failure the second time
    assert (second.summary.counts.total, second.summary.counts.failed) == (1, 1)


def test_a_module_that_failed_to_collect_runs_whole_once_it_imports(tmp_path):
    files = dict(FILES)
    files["tests/test_c.py"] = "import pathlib\nassert not (pathlib.Path(__file__).parent / 'broken').exists()\n"
    files["tests/test_c.py"] += "\ndef test_c1():\n    pass\n\ndef test_c2():\n    pass\n"
    root = committed_project(tmp_path / "proj", files, use_git=False)
    broken, fixed = _calls(
        root, tmp_path / "artifacts", [({}, None), ({"last_failed": True}, (root / "tests" / "broken").unlink)]
    )
    # a collection error stops the session before any test runs: the module is the one failure
    assert (broken.status, broken.summary.counts.errors, broken.summary.counts.total) == ("interrupted", 1, 1)
    # once it imports, its two tests run in its place, and the four others are deselected
    assert (fixed.summary.counts.total, fixed.summary.counts.passed, fixed.deselected) == (2, 2, 4)
