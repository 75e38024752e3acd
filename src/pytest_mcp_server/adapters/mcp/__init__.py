"""The MCP adapter: the low-level SDK server over stdio and Streamable HTTP (``server``),
its HTTP policy without the SDK (``http_policy``) and the tool catalogue (``catalogue``)."""
