"""An affected call's answer as the default (``structured``) view gives it, over the real
server and stdio: each fact said once, and the typed fields a program branches on.

The selection line counts the tests the map left out, so the verdict line does not; the
suspect line names the changed line, so the selection line does not name its file; a
suspect line without passing tests gives the failing count alone; the typed fields hold
the selection's ``selected`` and ``total`` (the counts per reason are in the text).
"""

from __future__ import annotations

import re

from helpers.affected_support import edit
from helpers.server_support import committed_project, connect, run, stdio_server, text_of

CALC = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
TESTS = {
    "tests/test_add.py": "from pkg.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    "tests/test_mul.py": "from pkg.calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
}


def test_an_affected_answer_says_each_fact_once_and_its_fields_are_the_selection_numbers(tmp_path):
    root = committed_project(tmp_path / "proj", {"pkg/__init__.py": "", "pkg/calc.py": CALC, **TESTS})

    async def body():
        async with connect(stdio_server(root, tmp_path / "artifacts"), "auto") as client:
            first = await client.call_tool("execute_tests", {"affected": True})  # builds the map
            edit(root / "pkg" / "calc.py", "return a * b", "return a + b")
            return first, await client.call_tool("execute_tests", {"affected": True})

    first, broken = run(body)
    assert not first.is_error and first.structured_content["status"] == "passed", text_of(first)
    text = text_of(broken)
    lines = text.splitlines()
    assert lines[0] == "Affected: 1 of 2 tests (1 changed)", text
    assert re.fullmatch(r"FAILED 1 failed in \d+\.\d+s", lines[1]), text
    assert lines[2] == "changed code run by failing tests: pkg/calc.py:6 (1 of 1 failing)", text
    # the test's line and the wrong value, under the entry's header, indented by one space
    assert "\n- FAILED tests/test_mul.py::test_mul\n tests/test_mul.py:5: assert mul(2, 3) == 6\n" in text, text
    assert "\n E       assert 5 == 6\n" in text, text

    fields = dict(broken.structured_content)
    report = fields.pop("report_path")
    assert re.fullmatch(r"\d{8}-\d{6}-\d{3}/records\.jsonl", report), report
    assert fields == {
        "answer": text,
        "status": "failed",
        "exit_code": 1,
        "counts": {"total": 1, "failed": 1},
        "selection": {"selected": 1, "total": 2},
    }
