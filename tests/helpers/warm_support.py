"""What the warm start's tests compare: a run's answer and record stream, without the
values that differ per process or moment (``tests/server/test_warm_start.py``,
``tests/server/test_warm_real_suites.py``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

VOLATILE = {"start", "stop", "duration"}
"""Record keys whose values are times."""
ADDRESS = re.compile(r" at 0x[0-9a-f]+")
"""An object's default repr names its address (``<C object at 0x7f31...>``): per process."""


def normalized(records: Path) -> list[dict]:
    """The record stream without what differs per process or moment."""
    out = []
    for line in records.read_text().splitlines():
        record = json.loads(ADDRESS.sub(" at 0x?", line))
        for key in VOLATILE:
            record.pop(key, None)
        out.append(record)
    return out


def answer(result) -> tuple[dict, list[dict]]:
    """A typed-view ``CallToolResult``'s structured content and its run's normalized records."""
    content = result.structured_content
    assert content is not None, result
    return content, normalized(Path(content["report_path"]))


def same_answer(warm: dict, cold: dict) -> None:
    """Assert that two typed answers agree on status, exit code, counts and every failure."""
    for key in ("status", "exit_code", "deselected"):
        assert warm[key] == cold[key], key
    assert warm["summary"]["counts"] == cold["summary"]["counts"]
    assert [f["node_id"] for f in warm["summary"]["failures"]] == [f["node_id"] for f in cold["summary"]["failures"]]
    assert warm["summary"]["failures"] == cold["summary"]["failures"]
