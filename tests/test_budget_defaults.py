"""The budget defaults are the same in Rust, Python and docs/ENGINE.md.

``models.Budgets`` is the Python source; report-core's ``Budgets::default()`` (exposed by
the binding's ``default_budgets()``) is the Rust one, used by ``cargo test``, the fuzzers
and the benches. Both must agree on values and on the order of the names, which the
binding relies on (``Budgets::NAMES``) when it reads a budgets dict.
"""

from __future__ import annotations

import re
from pathlib import Path

import backends
import pytest

from pytest_mcp_server.engine.models import Budgets

ENGINE_MD = Path(__file__).resolve().parents[1] / "docs" / "ENGINE.md"


@backends.needs_native
def test_rust_defaults_equal_the_python_model_in_name_order() -> None:
    from pytest_mcp_server.engine import _native

    rust = _native.default_budgets()
    assert rust == Budgets().model_dump()
    # default_budgets() lists Budgets::NAMES in order.
    assert list(rust) == list(Budgets.model_fields)


def test_the_documented_defaults_are_the_model_defaults() -> None:
    section = ENGINE_MD.read_text().split("## Budgets (defaults)", 1)[1].split("\n## ", 1)[0]
    documented = {name: int(value) for name, value in re.findall(r"(max_\w+)=(\d+)", section)}
    if not documented:
        pytest.fail("docs/ENGINE.md has no `name=value` list under *Budgets (defaults)*")
    assert documented == Budgets().model_dump()
