"""What every saved benchmark result records (``pytest_mcp_server.bench.common.provenance``)."""

from __future__ import annotations

import datetime
import os
import subprocess
from pathlib import Path


def check_provenance(recorded: dict) -> None:
    """A saved result's ``provenance`` (``bench.common.provenance``): this checkout's
    commit, whether its tree was clean, the date, the machine and the load."""
    repo = Path(__file__).resolve().parents[2]
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert recorded["commit"] == head.strip()
    assert isinstance(recorded["clean"], bool)
    date = datetime.datetime.strptime(recorded["date"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    assert abs((datetime.datetime.now(datetime.UTC) - date).total_seconds()) < 600
    assert recorded["machine"]["cpus"] == os.cpu_count()
    assert recorded["machine"]["memory_gib"] > 0
    assert set(recorded["machine"]) == {"cpus", "memory_gib", "cpu", "platform", "python"}
    assert len(recorded["load"]["start"]) == 3 and len(recorded["load"]["end"]) == 3
