"""pytest-mcp-server: run pytest for AI agents and summarise its reports.

The public report API is ``summarize`` (see ``pytest_mcp_server.engine``). Importing
this package imports neither the MCP SDK nor the server: the CLI starts fast and small.
"""

from pytest_mcp_server.engine import summarize
from pytest_mcp_server.engine.models import Budgets, ReportError, ReportSummary

__all__ = ["summarize", "Budgets", "ReportError", "ReportSummary"]
