"""The MCP surface end to end, in both protocol eras: tools/list (schemas generated from
the domain models, under 4 KB), annotations and instructions, progress notifications,
a server that answers pings and other calls during a run, and --max-concurrent.
"""

from __future__ import annotations

import json
import time

import anyio
import pytest
from helpers.server_support import (
    MODES,
    Project,
    connect,
    pid_alive,
    progress_delivered,
    run,
    stdio_server,
    still_serving,
    wait_for,
)

from pytest_mcp_server.adapters.mcp.catalogue import TOOLS, input_schema, output_schema


@pytest.fixture
def slow(tmp_path):
    return Project("slow", tmp_path)


@pytest.mark.parametrize("mode", MODES)
def test_tools_list_is_generated_from_the_domain_models_and_under_4kb(slow, mode):
    log = slow.marks.parent / "wire.log"
    # a byte-for-byte relay between the SDK's client and the server records the wire
    relay = (
        "import subprocess, sys, threading\n"
        "log = open(sys.argv[1], 'ab')\n"
        "p = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)\n"
        "def up():\n"
        "    for line in sys.stdin.buffer:\n"
        "        p.stdin.write(line); p.stdin.flush()\n"
        "    p.stdin.close()\n"
        "threading.Thread(target=up, daemon=True).start()\n"
        "for line in p.stdout:\n"
        "    log.write(line); log.flush()\n"
        "    sys.stdout.buffer.write(line); sys.stdout.buffer.flush()\n"
        "p.wait()\n"
    )
    server = slow.params()
    params = server.model_copy(update={"args": ["-c", relay, str(log), server.command, *server.args]})

    async def body():
        async with connect(params, mode) as client:
            return await client.list_tools()

    listed = run(body)
    by_name = {t.name: t for t in listed.tools}
    assert list(by_name) == ["execute_tests", "discover_tests", "summarize_report"]
    for spec in TOOLS:
        tool = by_name[spec.name]
        assert tool.input_schema == input_schema(spec.params)
        assert tool.output_schema == output_schema(spec.fields_model, spec.result)
        assert tool.annotations.read_only_hint is spec.read_only
    assert by_name["execute_tests"].input_schema["additionalProperties"] is False
    assert "env" not in by_name["execute_tests"].input_schema["properties"]
    answers = [json.loads(line) for line in log.read_bytes().splitlines()]
    (tools_answer,) = [line for line in log.read_bytes().splitlines() if b'"tools":[' in line]
    assert len(tools_answer) < 4096, len(tools_answer)
    instructions = [a["result"].get("instructions") for a in answers if "instructions" in a.get("result", {})]
    assert instructions and "0 tests" in instructions[0] and "report_path" in instructions[0]


@pytest.mark.parametrize("mode", MODES)
def test_progress_is_reported_as_tests_finish_at_most_a_few_per_second(slow, mode):
    async def body():
        seen = []

        async def on_progress(progress, total, message):
            seen.append((time.monotonic(), progress, total, message))

        async with connect(slow.params(), mode) as client:
            start = time.monotonic()
            result = await client.call_tool(
                "execute_tests", {"node_ids": ["tests/test_slow.py"]}, progress_callback=on_progress
            )
            took = time.monotonic() - start
            await progress_delivered()
            return result, seen, took

    result, seen, took = run(body)
    assert result.structured_content["counts"]["passed"] == 9
    assert len(seen) >= 3, seen
    assert all(total == 9 for _, _, total, _ in seen)
    done = [p for _, p, _, _ in seen]
    # the last notification, sent once pytest has exited, counts every test
    assert done == sorted(done) and done[-1] == 9
    assert seen[-1][3] == "9 of 9 tests done"
    # throttled: no more than 4 a second, plus the first and the last
    assert len(seen) <= took * 4 + 2


def test_a_run_shorter_than_the_progress_interval_still_reports_every_test(tmp_path):
    """Thirty tests that finish in a few milliseconds, between two polls of the record
    file: the follower is cancelled when pytest exits, so only the report made after
    the run can count them all; the last notification says 30 of 30."""
    root = tmp_path / "quick"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_quick.py").write_text(
        "import pytest\n\n\n@pytest.mark.parametrize('n', range(30))\ndef test_quick(n):\n    assert n >= 0\n"
    )
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, total))

    async def body():
        async with connect(stdio_server(root, tmp_path / "artifacts"), "auto") as client:
            result = await client.call_tool("execute_tests", {}, progress_callback=on_progress)
            await progress_delivered()
            return result

    result = run(body)
    assert result.structured_content["counts"]["passed"] == 30
    assert seen and seen[-1] == (30, 30), seen


@pytest.mark.parametrize("mode", MODES)
def test_server_answers_ping_and_other_calls_during_a_run(slow, mode):
    async def body():
        async with connect(slow.params(env={"SLOW_STEP_S": "0.5"}), mode) as client:
            state = {"run_done": False}
            async with anyio.create_task_group() as tg:

                async def long_run():
                    state["result"] = await client.call_tool(
                        "execute_tests", {"node_ids": ["tests/test_slow.py::test_step"]}
                    )
                    state["run_done"] = True

                tg.start_soon(long_run)
                await wait_for(lambda: len(slow.pytest_marks()) == 1, what="pytest to start")
                await still_serving(client, mode)  # ping (legacy) / tools/list (2026-07-28)
                listed = await client.list_tools()
                refused = await client.call_tool("execute_tests", {"node_ids": ["-x"]})
                assert not state["run_done"], "the run finished before the ping: the test proves nothing"
            return state["result"], listed, refused

    result, listed, refused = run(body)
    assert len(listed.tools) == 3 and refused.is_error
    assert result.structured_content["counts"]["passed"] == 8


def test_max_concurrent_bounds_parallel_runs(slow):
    async def body():
        async with connect(slow.params("--max-concurrent", "1", env={"SLOW_STEP_S": "0.3"}), "auto") as client:
            most_alive = 0
            results = []
            async with anyio.create_task_group() as tg:

                async def one(i):
                    results.append(
                        await client.call_tool(
                            "execute_tests",
                            {
                                "node_ids": [
                                    f"tests/test_slow.py::test_step[{i}]",
                                    f"tests/test_slow.py::test_step[{i + 1}]",
                                ]
                            },
                        )
                    )

                tg.start_soon(one, 0)
                tg.start_soon(one, 4)
                while len(results) < 2:
                    alive = sum(pid_alive(m["pid"]) for m in slow.pytest_marks())
                    most_alive = max(most_alive, alive)
                    await anyio.sleep(0.02)
            return most_alive, results

    most_alive, results = run(body)
    assert len(slow.pytest_marks()) == 2 and most_alive == 1
    assert all(r.structured_content["status"] == "passed" for r in results)
