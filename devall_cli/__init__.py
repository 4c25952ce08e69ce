"""devall: run ChatDev 2.0 ("DevAll") workflows whose agents use MCP tools, from a terminal."""

__version__ = "0.1.0"
