"""Warm and cold give the same answer on real suites (issue 42, *Proof that warm and cold
give the same answer*): the bundled example project (every outcome: failures, a setup
and a teardown error, skips, xfail, xpass, captured output) and a part of this
repository's own test suite (a conftest that imports the package; hypothesis,
pytest-xdist and pytest-cov, third-party plugins that register hooks at import).

Each suite is run by the real server over stdio, once with ``--no-warm-start`` and then
warm: a run counts as warm when the spare that was ready before the call is gone after it
(``run.warm``: a spare's directory is removed when it is used or discarded) and the
answer says no cold start. The answers (typed view) and the record files are compared
with the values that differ per process or moment (times, durations) left out
(``helpers.warm_support.normalized``).
"""

from __future__ import annotations

import difflib
import json
import shutil
from pathlib import Path

import anyio
import pytest
from helpers.server_support import connect, run, typed_stdio_server
from helpers.warm_support import answer, same_answer

REPO = Path(__file__).resolve().parents[2]
OWN_SUITE = ["tests/engine/test_select.py", "tests/engine/test_group_labels.py", "tests/engine/test_reportlog.py"]
"""Modules of this repository's suite: real tests, hypothesis among them, quick to run."""
WARM_TRIES = 4
"""Calls after the first (which starts the first spare) allowed until one is served warm."""


def ready_spares(artifacts: Path) -> set[str]:
    return {p.parent.name for p in (artifacts / "spares").glob("*/ready.json")}


async def wait_ready(artifacts: Path, timeout: float = 60.0) -> set[str]:
    with anyio.fail_after(timeout):
        while not (ready := ready_spares(artifacts)):
            await anyio.sleep(0.05)
    return ready


def suite(name: str, tmp_path: Path) -> tuple[Path, dict]:
    """The root and ``execute_tests`` arguments of suite ``name``."""
    if name == "example":
        root = tmp_path / "demo_project"
        shutil.copytree(REPO / "examples" / "demo_project", root)
        return root, {}
    return REPO, {"node_ids": OWN_SUITE}


@pytest.mark.parametrize("name", ["example", "own"])
def test_a_real_suite_run_warm_gives_the_cold_answer_and_records(tmp_path, name):
    root, arguments = suite(name, tmp_path)
    warm_artifacts = tmp_path / "warm-art"

    async def body():
        async with connect(typed_stdio_server(root, tmp_path / "cold-art", "--no-warm-start"), "auto") as client:
            cold = answer(await client.call_tool("execute_tests", arguments))
        async with connect(typed_stdio_server(root, warm_artifacts), "auto") as client:
            await client.call_tool("execute_tests", arguments)  # no spare yet: the next is made after it
            for _ in range(WARM_TRIES):
                waiting = await wait_ready(warm_artifacts)
                warm = answer(await client.call_tool("execute_tests", arguments))
                if warm[0].get("cold_start") is None and not waiting & ready_spares(warm_artifacts):
                    return cold, warm
            raise AssertionError(f"no call was served warm in {WARM_TRIES}: {warm[0].get('cold_start')}")

    (cold, cold_records), (warm, warm_records) = run(body)
    if name == "example":
        assert cold["status"] == "failed" and cold["summary"]["counts"]["errors"] == 2, cold["summary"]["counts"]
    else:
        assert cold["status"] == "passed" and cold["summary"]["counts"]["passed"] > 50, cold["summary"]["counts"]
    same_answer(warm, cold)
    for index, (w, c) in enumerate(zip(warm_records, cold_records, strict=True)):
        if w != c:
            lines = difflib.unified_diff(*(json.dumps(r, indent=1).splitlines() for r in (c, w)), "cold", "warm", n=1)
            raise AssertionError(f"record {index} differs:\n" + "\n".join(lines))
