"""The three tools over Streamable HTTP, with the SDK's own HTTP client in both protocol
eras (2025-11-25 sessions after the ``initialize`` handshake, 2026-07-28 stateless
envelopes): the same structured content as over stdio, progress notifications during a
run, and cancellation by the client killing the run's whole process group.

Every server is the real console entry listening on 127.0.0.1 with ``--port 0`` and a
bearer token (``http_support.http_server``); fixture projects are copied per test.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from helpers.http_support import connect_http, http_server
from helpers.server_support import MODES, TYPED, Project, connect, pid_alive, run, still_serving, text_of, wait_for
from mcp.types import Implementation

ERAS = {"legacy": "2025-11-25", "auto": "2026-07-28"}
HANG = "hang/test_hang.py::test_hangs_with_children"


def stable(content: Any) -> Any:
    """``content`` without what differs from one run to the next: durations, the run's
    report path and the report files a summary was read from."""
    if isinstance(content, dict):
        return {
            k: stable(v)
            for k, v in content.items()
            if k not in ("duration_s", "tests_duration_s", "report_path", "files")
        }
    if isinstance(content, list):
        return [stable(v) for v in content]
    return content


async def three_tools(client) -> list[tuple[bool, Any, str]]:
    """execute_tests (everything), discover_tests (a page), summarize_report (one test of
    the run's report, and a refused path): (is_error, stable structured content, verdict)."""
    executed = await client.call_tool("execute_tests", {})
    report = executed.structured_content["report_path"]
    answers = [
        executed,
        await client.call_tool("discover_tests", {"offset": 2, "limit": 5}),
        await client.call_tool(
            "summarize_report", {"paths": [report], "node_ids": ["tests/test_errors.py::test_uses_database"]}
        ),
        await client.call_tool("summarize_report", {"paths": ["../outside.xml"]}),
    ]
    return [(a.is_error, stable(a.structured_content), text_of(a).split(" in ")[0]) for a in answers]


def test_both_eras_over_http_answer_as_stdio_does(tmp_path):
    project = Project("every_outcome", tmp_path)

    async def over_stdio():
        async with connect(project.params(*TYPED), "auto") as client:
            return await three_tools(client)

    async def over_http(url):
        answers = {}
        for mode, era in ERAS.items():
            async with connect_http(url, mode) as client:
                assert client.protocol_version == era
                answers[mode] = await three_tools(client)
        return answers

    expected = run(over_stdio)
    with http_server(project, *TYPED) as server:
        answers = run(over_http, server.url)
    assert [error for error, _, _ in expected] == [False, False, False, True]
    assert expected[0][1]["summary"]["counts"]["failed"] == 6
    for mode in ERAS:
        assert answers[mode] == expected, mode


@pytest.mark.parametrize("mode", MODES)
def test_progress_and_cancellation_over_http(tmp_path, mode):
    project = Project("slow", tmp_path)

    async def body(url):
        seen = []

        async def on_progress(progress, total, message):
            seen.append((progress, total, message))

        async with connect_http(url, mode) as client:
            result = await client.call_tool(
                "execute_tests", {"node_ids": ["tests/test_slow.py::test_step"]}, progress_callback=on_progress
            )
            project.clear_marks()
            async with anyio.create_task_group() as tg:

                async def hanging_call():
                    await client.call_tool("execute_tests", {"node_ids": [HANG]})

                tg.start_soon(hanging_call)
                await wait_for(
                    lambda: len(project.pytest_marks()) == 1 and len(project.child_pids()) == 2,
                    what="pytest and its children",
                )
                tg.cancel_scope.cancel()  # legacy: notifications/cancelled; 2026-07-28: the stream closes
            pids = [m["pid"] for m in project.pytest_marks()] + project.child_pids()
            # waited for without blocking: the client's event loop sends the cancellation
            await wait_for(lambda: not any(pid_alive(p) for p in pids), timeout=15, what="the run's processes to end")
            await still_serving(client, mode)
            return result, seen, pids

    with http_server(project, env={"SLOW_STEP_S": "0.2"}) as server:
        result, seen, pids = run(body, server.url)
    assert result.structured_content["counts"]["passed"] == 8
    assert len(seen) >= 2 and all(total == 8 for _, total, _ in seen), seen
    assert seen[-1][2] == f"{int(seen[-1][0])} of 8 tests done"
    assert len(pids) == 3


def test_over_http_the_answer_view_follows_the_client_in_both_eras(tmp_path):
    """``auto`` over HTTP as over stdio: a text-only client (Claude Desktop) gets the typed
    fields alone, a structured-only one (Claude Code) the answer text in them too."""
    project = Project("every_outcome", tmp_path)
    refused = {"node_ids": ["../elsewhere"]}

    async def body(url):
        seen = {}
        for mode in ERAS:
            for name in ("claude-ai", "claude-code"):
                async with connect_http(url, mode, client_info=Implementation(name=name, version="1")) as client:
                    result = await client.call_tool("execute_tests", refused)
                    seen[mode, name] = (result.structured_content, text_of(result))
        return seen

    with http_server(project) as server:
        seen = run(body, server.url)
    fields = {"kind": "invalid_argument", "field": "node_ids[0]"}
    for mode in ERAS:
        structured, text = seen[mode, "claude-ai"]
        assert structured == fields and text.startswith("ERROR invalid_argument: node_ids[0]: "), mode
        structured, text = seen[mode, "claude-code"]
        assert structured == {"answer": text, **fields}, mode
