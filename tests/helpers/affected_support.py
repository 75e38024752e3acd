"""What the change-aware tests share: an affected call over the real server, an edit
of a project file, and the map's rows as the tests read them."""

from __future__ import annotations

from pathlib import Path

from mcp import Client

from helpers.server_support import text_of
from pytest_mcp_server.domain.tools import DiscoverResult, ExecuteResult
from pytest_mcp_server.run.testmap import _unpack as unpack_blocks
from pytest_mcp_server.run.testmap import open_map


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (old, path)
    path.write_text(text.replace(old, new))


async def affected_run(client: Client, **args: object) -> tuple[ExecuteResult, str]:
    answer = await client.call_tool("execute_tests", {"affected": True, **args})
    assert not answer.is_error, text_of(answer)
    return ExecuteResult.model_validate(answer.structured_content), text_of(answer)


def ran(result: ExecuteResult) -> tuple[int, int]:
    """(passed, failed) of a run."""
    return result.summary.counts.passed, result.summary.counts.failed


def reasons(result: ExecuteResult | DiscoverResult) -> dict[str, int]:
    assert result.selection is not None
    return {name: count for name, count in result.selection.reasons.model_dump().items() if count}


def kept_stats(artifacts: Path) -> dict[str, str]:
    """Each file the one map under ``artifacts`` holds fingerprints of -> its stat key then."""
    (map_file,) = (artifacts / "maps").glob("*.sqlite")
    test_map, _ = open_map(map_file)
    with test_map:
        return {path: stat for path, (stat, _) in test_map.files().items()}


def map_rows(artifacts: Path) -> list[tuple[str, str, str, str]]:
    """Every (test, outcome, path, fingerprint) row of the tests of the one map under ``artifacts``."""
    (map_file,) = (artifacts / "maps").glob("*.sqlite")
    test_map, notice = open_map(map_file)
    assert notice is None
    with test_map:  # every entry as stored, the import entries included
        blocks = test_map.blocks()
        rows = test_map.connection.execute("SELECT node_id, outcome, blocks FROM tests").fetchall()
    return sorted((node_id, outcome, *blocks[i]) for node_id, outcome, packed in rows for i in unpack_blocks(packed))
