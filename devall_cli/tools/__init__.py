"""Tool sources (MCP remote, MCP local, Python functions), normalization and the ToolManager."""
