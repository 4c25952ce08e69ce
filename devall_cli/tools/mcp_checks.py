"""The checks devall's own client (mcp_direct.py) makes of what a server sends, as the SDK
makes them: JSON-RPC responses, content blocks, structured content against an output schema;
and how it reads the ids in them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

_SHOWN_CHARS = 300


def response_problem(obj: Mapping[str, Any]) -> str | None:
    """What makes `obj` no valid JSON-RPC response (None when it is one)."""
    if obj.get("jsonrpc") != "2.0":
        return "jsonrpc: '2.0' is required"
    request_id = obj.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return "id: a number or string is required"
    if ("result" in obj) == ("error" in obj):
        return "exactly one of result and error is required"
    if "result" in obj:
        return None if isinstance(obj["result"], Mapping) else "result: an object is required"
    error = obj["error"]
    if not isinstance(error, Mapping):
        return "error: an object is required"
    code = error.get("code")
    if isinstance(code, bool) or not isinstance(code, int):
        return "error.code: an integer is required"
    if not isinstance(error.get("message"), str):
        return "error.message: a string is required"
    return None


def schema_problem(
    name: str, schema: Mapping[str, Any] | None, result: Mapping[str, Any]
) -> str | None:
    """What is wrong with the structured content of a result, by the tool's output schema."""
    if schema is None:
        return None
    if "structuredContent" not in result:
        return f"Tool {name} has an output schema but did not return structured content"
    from jsonschema import exceptions, validators  # only for tools that declare a schema

    try:
        validator = validators.validator_for(schema)(schema)
        error = exceptions.best_match(validator.iter_errors(result["structuredContent"]))
    except Exception as exc:  # a broken schema, a `$ref` that does not resolve
        return f"Invalid schema for tool {name}: {str(exc).splitlines()[0]}"
    if error is None:
        return None
    return f"Invalid structured content returned by tool {name}: {error.message}"


# The content blocks of a tool result and the string fields each must have, as the SDK checks.
_BLOCK_FIELDS = {
    "text": ("text",),
    "image": ("data", "mimeType"),
    "audio": ("data", "mimeType"),
    "resource_link": ("uri", "name"),
    "resource": (),
}


def block_problem(item: Any) -> str | None:
    """What makes `item` no content block the MCP schema knows (None when it is one)."""
    if not isinstance(item, Mapping):
        return "an object is required"
    kind = item.get("type")
    if kind not in _BLOCK_FIELDS:
        return f"unknown content type {kind!r}"
    missing = [key for key in _BLOCK_FIELDS[kind] if not isinstance(item.get(key), str)]
    if missing:
        return f"{kind} content needs {', '.join(missing)} (a string)"
    if kind == "resource":
        resource = item.get("resource")
        if not isinstance(resource, Mapping) or not isinstance(resource.get("uri"), str):
            return "resource content needs a resource with a uri"
        if not isinstance(resource.get("text"), str) and not isinstance(resource.get("blob"), str):
            return "resource content needs a text or a blob"
    return None


def our_id(value: Any) -> int | None:
    """A request id or progress token as devall sent it (an int), also when the server echoes
    it as a string ("1" for 1), as the SDK accepts; None when it cannot be one of ours."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return None


def id_key(value: Any) -> str:
    """A key for an id of the server's own requests: a number and its string form are one."""
    return json.dumps(value) if not isinstance(value, int | str) else str(value)


def shown(obj: Mapping[str, Any]) -> str:
    """A message as a log line shows it: its JSON, cut after `_SHOWN_CHARS` characters."""
    text = json.dumps(obj, ensure_ascii=False)
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."
