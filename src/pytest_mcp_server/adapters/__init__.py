"""Adapters: the edges of the server. ``mcp/`` is the only code that knows the MCP SDK
(transports, the tool catalogue, the shaping of answers into structured content);
``text`` and ``answer`` write what an agent or a terminal reads. Imports go downwards
only: adapters -> app -> run -> domain -> engine (``tests/server/test_layers.py``)."""
