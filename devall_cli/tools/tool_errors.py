"""Error results of MCP tool calls, shared by both of devall's MCP clients.

Light on purpose (no SDK import): mcp_errors.py words every client's call failures with these,
and the direct client (mcp_direct.py) its invalid results, so a tool fails the same way whichever
client called it.
"""

from __future__ import annotations

import re

from devall_cli.tools.base import TextBlock, ToolResult

_UNKNOWN_TOOL = re.compile(r"unknown tool|tool\b.*\bnot found|no such tool", re.IGNORECASE)
# What marks a failure as the result's fault (the SDK's wording for output-schema violations).
BAD_RESULT_MESSAGES = (
    "invalid structured content",
    "did not return structured content",
    "invalid schema for tool",
)


def tool_error_class(text: str) -> str:
    """`unknown_tool` when an error text says the tool does not exist, else `tool_error`."""
    return "unknown_tool" if _UNKNOWN_TOOL.search(text) else "tool_error"


def error_result(text: str, *, tool_name: str, error_class: str) -> ToolResult:
    """An error ToolResult with one text block."""
    block = TextBlock(text=text, tool_name=tool_name, source="mcp_tool")
    return ToolResult(blocks=(block,), is_error=True, error_class=error_class)


def failed_call(tool_name: str, message: str, *, invalid_marker: str) -> ToolResult:
    """The result of a call the server answered with a JSON-RPC error."""
    text = f"tool '{tool_name}' failed: {message}"
    error_class = "invalid_result" if message.startswith(invalid_marker) else tool_error_class(text)
    return error_result(text, tool_name=tool_name, error_class=error_class)


def timed_out_call(tool_name: str, timeout: float | None) -> ToolResult:
    """The result of a call the server did not answer in time."""
    limit = f" after {timeout:g}s" if timeout is not None else ""
    return error_result(
        f"tool '{tool_name}' timed out{limit}", tool_name=tool_name, error_class="timeout"
    )


def invalid_result(tool_name: str, problem: str) -> ToolResult:
    """The result of a call whose answer is not a valid tool result."""
    text = f"tool '{tool_name}' returned an invalid result: {problem}"
    return error_result(text, tool_name=tool_name, error_class="invalid_result")
