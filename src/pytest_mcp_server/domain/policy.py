"""The server's policy: every number that shapes what the server does or answers, once.

The engine's own limits stay with the engine (``engine.models.Budgets`` and its bounds);
this module holds the server's choices on top of them: the budget presets of its tools.
"""

from __future__ import annotations

from pytest_mcp_server.engine.models import Budgets

EXECUTE_BUDGETS = Budgets(max_traceback_lines=30, max_output_bytes=512)
"""``execute_tests``' default budgets: a run's answer is read in full at once, so its
tracebacks and captured output are shorter than the engine's defaults (``Budgets()``)."""

FULL_STORY = Budgets(
    max_traceback_lines=400,
    max_line_chars=1000,
    max_message_chars=4000,
    max_output_bytes=32_768,
    max_frame_context_lines=1000,
)
"""``summarize_report``'s default budgets when ``node_ids`` is given: the full story of a
few tests (long tracebacks, messages and output, every frame whole: its ``def`` line,
docstring and source up to the ``>`` line), without re-running them."""
