"""The HTTP headers of the 2026-07-28 streamable HTTP transport that mirror a request's body.

Standard headers, on every POST that carries a request or a notification: `Mcp-Method` (the
JSON-RPC method) and, for the methods that name what they act on, `Mcp-Name` (`tools/call` and
`prompts/get`: `params.name`; `resources/read`: `params.uri`; `tasks/get`, `tasks/update`,
`tasks/cancel`: `params.taskId`). Custom headers: a tool's input schema may designate an
argument with `x-mcp-header: Token`, and each `tools/call` of it then carries
`Mcp-Param-Token` with the argument's value (booleans as `true`/`false`, numbers as written; a
null or absent argument sends no header). A value that would not survive as a header (outside
printable ASCII, leading or trailing whitespace, or looking like the wrapper itself) goes as
`=?base64?<UTF-8 in base64>?=`, for `Mcp-Name` too.

A tool whose `x-mcp-header` definitions are invalid (empty, not an RFC 9110 token, on a
property that is not a string, integer or boolean, used twice ignoring case, or placed anywhere
but on a property reached from the root through `properties` alone) is left out of a 2026-07-28
listing, as the specification requires and as the MCP SDK does; the other tools stay. Both of
devall's clients report each one left out to `collect_excluded` (the source warns once a tool).
"""

from __future__ import annotations

import base64
import contextlib
import logging
import re
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any

METHOD_HEADER = "Mcp-Method"
NAME_HEADER = "Mcp-Name"
PARAM_PREFIX = "Mcp-Param-"
HEADER_KEY = "x-mcp-header"
# The methods whose `Mcp-Name` header mirrors a parameter, and that parameter.
NAMED_BY = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
HEADER_TYPES = frozenset({"string", "integer", "boolean"})
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 section 5.6.2
_PLAIN = re.compile(r"[\x20-\x7e]*")
_WRAPPED = re.compile(r"=\?base64\?.*\?=")
# Keywords whose values are schemas (one, a list, a mapping of them). Only `properties` keeps
# a position "reached through properties"; `$ref` is not followed, values are not schemas.
_ONE = frozenset(
    {"items", "contains", "unevaluatedItems", "additionalProperties", "propertyNames"}
    | {"unevaluatedProperties", "not", "if", "then", "else", "contentSchema"}
)
_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_MAP = frozenset({"patternProperties", "dependentSchemas", "$defs", "definitions"})

_CHAIN = "a pure `properties` chain"
_PERMITTED = f"{HEADER_KEY} is only permitted on integer/string/boolean properties"

HeaderMap = dict[tuple[str, ...], str]  # argument path -> header token
Excluded = tuple[str, str]  # (tool name, why)


def encode_value(value: str) -> str:
    """`value` as a header value: as is when it survives as one, else wrapped in base64."""
    if _PLAIN.fullmatch(value) and value == value.strip() and not _WRAPPED.fullmatch(value):
        return value
    return f"=?base64?{base64.b64encode(value.encode('utf-8')).decode('ascii')}?="


def standard_headers(message: Mapping[str, Any]) -> dict[str, str]:
    """`Mcp-Method` and `Mcp-Name` of one outgoing message (none for an answer)."""
    method = message.get("method")
    if not isinstance(method, str):
        return {}
    headers = {METHOD_HEADER: method}
    params = message.get("params")
    named = params.get(NAMED_BY.get(method, "")) if isinstance(params, Mapping) else None
    if isinstance(named, str):
        headers[NAME_HEADER] = encode_value(named)
    return headers


def header_problem(schema: Any) -> str | None:
    """What is wrong with the `x-mcp-header` definitions of an input schema (None: nothing),
    worded as the MCP SDK words it, so that both clients warn alike."""
    seen: dict[str, str] = {}
    for path, position in _positions(schema):
        if HEADER_KEY not in position:
            continue
        if not path:
            return f"{HEADER_KEY} found at a schema position not reachable via {_CHAIN}"
        where = ".".join(path)
        token = position[HEADER_KEY]
        if not isinstance(token, str):
            return f"property {where!r}: {HEADER_KEY} must be a string, not {type(token).__name__}"
        if not _TOKEN.fullmatch(token):
            return f"property {where!r}: {HEADER_KEY} {token!r} is not an RFC 9110 token"
        kind = position.get("type")
        if not isinstance(kind, str) or kind not in HEADER_TYPES:
            got = f"got {kind!r}" if isinstance(kind, str) else (
                f"the type keyword is {type(kind).__name__}, not a string"
            )
            return f"property {where!r}: {_PERMITTED} ({got})"
        other = seen.setdefault(token.lower(), where)
        if other != where:
            return f"{HEADER_KEY} {token!r} on property {where!r} duplicates property {other!r}"
    return None


def header_map(schema: Any) -> HeaderMap:
    """The arguments a valid input schema designates, by path, with their header tokens."""
    return {
        path: position[HEADER_KEY]
        for path, position in _positions(schema)
        if path and isinstance(position.get(HEADER_KEY), str)
    }


def param_headers(designated: HeaderMap, arguments: Mapping[str, Any]) -> dict[str, str]:
    """The `Mcp-Param-*` headers of a call with `arguments` (null or absent: no header)."""
    headers: dict[str, str] = {}
    for path, token in designated.items():
        value: Any = arguments
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if isinstance(value, bool):
            headers[PARAM_PREFIX + token] = "true" if value else "false"
        elif isinstance(value, str | int | float):
            with contextlib.suppress(ValueError):  # an integer too long to write: no header
                headers[PARAM_PREFIX + token] = encode_value(str(value))
    return headers


def _positions(schema: Any) -> Iterator[tuple[tuple[str, ...] | None, Mapping[str, Any]]]:
    """Every schema position with its `properties` path from the root (None once off it), in
    the order the MCP SDK visits them (so that a repeated header is named as it names it)."""
    stack: list[tuple[tuple[str, ...] | None, Any]] = [((), schema)]
    while stack:  # a stack, not recursion: a schema may be nested deep
        path, node = stack.pop()
        if not isinstance(node, Mapping):
            continue
        yield path, node
        inner: list[tuple[tuple[str, ...] | None, Any]] = []
        for key, value in node.items():
            if key == "properties" and isinstance(value, Mapping):
                for name, sub in value.items():
                    inner.append((None if path is None else (*path, name), sub))
            elif key in _ONE:
                inner.append((None, value))
            elif key in _LIST and isinstance(value, list):
                inner += [(None, sub) for sub in value]
            elif key in _MAP and isinstance(value, Mapping):
                inner += [(None, sub) for sub in value.values()]
        stack += inner


class RequestHeaders:
    """The headers mirrored into each POST of one HTTP session (http_lines.py).

    Learns the designated arguments of each tool from the `tools/list` answers the session
    carries; a tool whose definitions are invalid gets no custom headers.
    """

    def __init__(self) -> None:
        self._designated: dict[str, HeaderMap] = {}

    def learn(self, listing: Mapping[str, Any]) -> None:
        """Take in one page of a `tools/list` result."""
        tools = listing.get("tools")
        for tool in tools if isinstance(tools, list) else ():
            name = tool.get("name") if isinstance(tool, Mapping) else None
            if not isinstance(name, str):
                continue
            schema = tool.get("inputSchema")
            designated = header_map(schema) if header_problem(schema) is None else {}
            if designated:
                self._designated[name] = designated
            else:
                self._designated.pop(name, None)

    def of(self, message: Mapping[str, Any]) -> dict[str, str]:
        """The headers to send with one outgoing message."""
        headers = standard_headers(message)
        params = message.get("params")
        if message.get("method") == "tools/call" and isinstance(params, Mapping):
            designated = self._designated.get(str(params.get("name")))
            arguments = params.get("arguments")
            if designated and isinstance(arguments, Mapping):
                headers.update(param_headers(designated, arguments))
        return headers


# --- tools left out of a listing, and the warning about each --------------------------------

_EXCLUDED: ContextVar[list[Excluded] | None] = ContextVar("devall_mcp_excluded", default=None)
# The MCP SDK's client leaves such tools out itself and says so only in its log (logger
# "client", this message): the record is turned into a report of the same kind.
_SDK_LOGGER = "client"
_SDK_MESSAGE = "dropping tool %r: invalid x-mcp-header (%s)"


@contextlib.contextmanager
def collect_excluded() -> Iterator[list[Excluded]]:
    """The tools left out of the listings made in the block, with why."""
    excluded: list[Excluded] = []
    token = _EXCLUDED.set(excluded)
    try:
        yield excluded
    finally:
        _EXCLUDED.reset(token)


def exclude_invalid(tools: list[Any]) -> list[Any]:
    """The tools of a 2026-07-28 listing whose header definitions are valid (the others are
    reported to `collect_excluded`). Each tool is a mapping as listed."""
    kept: list[Any] = []
    for tool in tools:
        problem = header_problem(tool.get("inputSchema")) if isinstance(tool, Mapping) else None
        if problem is None:
            kept.append(tool)
        else:
            _report(str(tool.get("name")), problem)
    return kept


def excluded_warning(tool: str, why: str) -> str:
    """The warning about a tool left out of a listing."""
    return f"tool '{tool}' is not offered: its {HEADER_KEY} definition is invalid ({why})"


def _report(tool: str, why: str) -> None:
    excluded = _EXCLUDED.get()
    if excluded is not None:
        excluded.append((tool, why))


class _SdkExclusions(logging.Handler):
    """Turns the SDK client's log record of a tool it left out into a report."""

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg == _SDK_MESSAGE and isinstance(record.args, tuple) and len(record.args) == 2:
            _report(str(record.args[0]), str(record.args[1]))


def hear_sdk_exclusions() -> None:
    """Listen to the SDK client's log for the tools it leaves out (once per process)."""
    logger = logging.getLogger(_SDK_LOGGER)
    if not any(isinstance(handler, _SdkExclusions) for handler in logger.handlers):
        logger.addHandler(_SdkExclusions(logging.WARNING))
