"""The budget defaults are the same in Rust, Python and docs/ENGINE.md.

``models.Budgets`` is the Python source; docs/ENGINE.md lists the defaults (``name=value``,
in the model's field order), and report-core's ``Budgets::default()`` and
``Budgets::NAMES`` (used by ``cargo test``, the fuzzers and the benches) are checked
against that list by ``cargo test`` (rust/core/src/budgets.rs). The binding reads every
budget from the model by name, and names every field of report-core's ``Budgets`` (a new
budget does not build until it reads it).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_mcp_server.engine.models import Budgets

ENGINE_MD = Path(__file__).resolve().parents[2] / "docs" / "ENGINE.md"


def test_the_documented_defaults_are_the_model_defaults() -> None:
    section = ENGINE_MD.read_text().split("## Budgets (defaults)", 1)[1].split("\n## ", 1)[0]
    documented = [(name, int(value)) for name, value in re.findall(r"\b([a-z_]+)=(\d+)", section)]
    if not documented:
        pytest.fail("docs/ENGINE.md has no `name=value` list under *Budgets (defaults)*")
    # the same values, and the names in the model's order (the order the Rust test reads)
    assert documented == list(Budgets().model_dump().items())
