"""Tooling kinds: the registry of tooling types (`tooling[].type`), the built-in types
(mcp_remote, mcp_local, function) and the mcp_config type that reads mcpServers files, with
their settings and the MCP client and OAuth settings they share.
"""
