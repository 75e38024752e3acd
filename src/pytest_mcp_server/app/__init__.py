"""The tools' workflows: one per tool (``execute_tests``, ``discover_tests``,
``summarize_report``), speaking validated parameter models and result models; no MCP."""
