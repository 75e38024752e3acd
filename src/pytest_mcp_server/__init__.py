"""pytest-mcp-server: run pytest for AI agents and summarise its reports.

The public report API is ``summarize`` (see ``pytest_mcp_server.engine``), with
``Budgets``, ``ReportError`` and ``ReportSummary``. They load on first use (PEP 562), so
importing a module of this package (the CLI's, say) loads neither pydantic nor the engine
until it asks for them, and never the MCP SDK or the server: the CLI decides what its
process loads (``cli._without_openssl``) and starts fast and small.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_mcp_server.engine import summarize
    from pytest_mcp_server.engine.models import Budgets, ReportError, ReportSummary

__all__ = ["summarize", "Budgets", "ReportError", "ReportSummary"]


def __getattr__(name: str) -> Any:
    """The public names, imported when first asked for; ``AttributeError`` for others."""
    if name == "summarize":
        from pytest_mcp_server.engine import summarize

        return summarize
    if name in __all__:
        from pytest_mcp_server.engine import models

        return getattr(models, name)
    raise AttributeError(f"module 'pytest_mcp_server' has no attribute {name!r}")
