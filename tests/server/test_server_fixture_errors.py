"""Fixture errors in an answer: a fixture pytest cannot give is shown with pytest's
listing of the functions that asked for it, ``def`` lines included (a misspelt
parameter is there), every path relative to the root, and located at the function that
asked, as pytest's closing line says.

The real server over stdio runs the real pytest on a project whose ``conftest.py`` has
a fixture asking for a misspelt one (``def client(dbb)``) and a fixture that raises,
and whose test module has a test asking for a missing fixture itself. pytest writes a
fixture lookup error with absolute paths (``file /abs/tests/conftest.py, line 9`` ...
``/abs/tests/conftest.py:9``); the answer must not. The run's report log and a
pytest-json-report of the same tests are then summarised by both backends with
``execute_tests``' budgets and ``summarize_report``'s full story (docs/ENGINE.md,
*Fixture lookup errors*).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
from helpers.backends import summary_in_both
from helpers.server_support import TYPED, committed_project, connect, line_of, run, text_of
from helpers.server_support import stdio_server as server

from pytest_mcp_server.domain.policy import EXECUTE_BUDGETS, FULL_STORY
from pytest_mcp_server.engine import ProjectCode

CONFTEST = """\
import pytest


@pytest.fixture
def db():
    raise RuntimeError("db is down")


@pytest.fixture
def client(dbb):
    return dbb
"""

TESTS = """\
def test_uses_db(db):
    assert db


def test_uses_client(client):
    assert client


def test_asks_for_nothing_known(missing_fixture):
    assert missing_fixture
"""

CLIENT = "tests/test_app.py::test_uses_client"
DIRECT = "tests/test_app.py::test_asks_for_nothing_known"
DB = "tests/test_app.py::test_uses_db"


def test_a_fixture_error_keeps_its_def_lines_and_paths_relative_to_the_root(tmp_path: Path):
    root = committed_project(
        tmp_path / "proj",
        {"tests/conftest.py": CONFTEST, "tests/test_app.py": TESTS},
        use_git=False,
    )
    conftest, tests = root / "tests" / "conftest.py", root / "tests" / "test_app.py"
    client_at = line_of(conftest, "def client") - 1  # pytest names a function by its first (decorator) line
    direct_at = line_of(tests, "def test_asks_for_nothing_known")

    async def body():
        # the typed view: report_path is the absolute path the engine reads below
        async with connect(server(root, tmp_path / "artifacts", *TYPED), "auto") as client:
            executed = await client.call_tool("execute_tests", {})
            report = executed.structured_content["report_path"]
            story = await client.call_tool("summarize_report", {"paths": [report], "node_ids": [CLIENT]})
            return text_of(executed), report, text_of(story)

    answer, report, story = run(body)

    assert answer.startswith("FAILED 3 errors"), answer
    assert str(root) not in answer and str(root) not in story, answer
    # the misspelt parameter's line and the listing it is in, as pytest shows them
    listing = [
        f" file tests/test_app.py, line {line_of(tests, 'def test_uses_client')}",
        "   def test_uses_client(client):",
        f" file tests/conftest.py, line {client_at}",
        "   @pytest.fixture",
        "   def client(dbb):",
        " E       fixture 'dbb' not found",
    ]
    assert "\n".join(listing) in answer, answer
    assert f"- ERROR in setup {CLIENT}  at tests/conftest.py:{client_at}" in answer, answer
    # the test that asks for a missing fixture itself has the same message but for the
    # name: the same group (docs/ENGINE.md, *Groups*, values folded), named by the entry
    assert "\n also in 1 more: test_asks_for_nothing_known" in answer, answer
    # the fixture that raised: its frame's statement, as before
    assert f'\n tests/conftest.py:{line_of(conftest, "raise RuntimeError")}: raise RuntimeError("db is down")' in answer
    # summarize_report's full story shows the same listing (the whole text: nothing cut)
    assert "\n   def client(dbb):\n" in story and f"at tests/conftest.py:{client_at}" in story, story

    # both backends, on the report log the server wrote and on a pytest-json-report of
    # the same run: the listing is never cut and the location is the closing line's
    json_report = tmp_path / "report.json"
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--json-report"]
    subprocess.run([*argv, f"--json-report-file={json_report}"], cwd=root, capture_output=True, timeout=120)
    project = ProjectCode(root=str(root), packages=[])
    for path in (report, json_report):
        for budgets in (EXECUTE_BUDGETS, FULL_STORY):
            summary = summary_in_both([path], project=project, **budgets.model_dump())
            failures = {f["node_id"]: f for f in summary["failures"]}
            typo = failures[CLIENT]
            assert typo["location"] == {"path": "tests/conftest.py", "line": client_at}, (path, typo)
            assert typo["message"] == "fixture 'dbb' not found"
            assert typo["traceback_lines_omitted"] == 0, (path, typo["traceback"])
            assert "  def client(dbb):" in typo["traceback"].split("\n"), (path, typo["traceback"])
            # pytest's closing line says what the header's location says: it goes
            assert not typo["traceback"].rstrip().endswith(f":{client_at}"), typo["traceback"]
            assert str(root) not in orjson.dumps(summary["failures"]).decode()
            assert failures[DIRECT]["location"] == {"path": "tests/test_app.py", "line": direct_at}
            assert failures[DB]["location"] == {"path": "tests/conftest.py", "line": line_of(conftest, "raise")}
