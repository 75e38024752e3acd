"""The domain: tool parameters and results as plain models, validation of an agent's
input, pytest's expression grammar, tool failures, flaky-test history, coverage answers
and the server's configuration. No processes, no MCP; imports only the engine's models."""
