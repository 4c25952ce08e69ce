"""The headers that mirror a request's body (2026-07-28): the standard ones, the arguments a tool
designates with `x-mcp-header` (encoded, base64 when unsafe, nulls left out), the tools left out
for invalid definitions; and the rounds of a multi-round-trip request (mcp_input_required.py)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from devall_cli.tools.mcp_headers import (
    RequestHeaders,
    collect_excluded,
    exclude_invalid,
    header_problem,
)
from devall_cli.tools.mcp_input_required import complete_input, with_input, with_result_type
from devall_cli.tools.mcp_protocol import RpcError


def wrapped(text: str) -> str:
    return f"=?base64?{base64.b64encode(text.encode()).decode()}?="


def tool(name: str, **properties: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object", "properties": properties}}


def test_a_call_carries_its_method_name_and_designated_arguments() -> None:
    book = RequestHeaders()
    book.learn({"tools": [tool(
        "t",
        region={"type": "string", "x-mcp-header": "Region"},
        n={"type": "integer", "x-mcp-header": "N"},
        on={"type": "boolean", "x-mcp-header": "On"},
        note={"type": "string", "x-mcp-header": "Note"},
        gone={"type": "boolean", "x-mcp-header": "Gone"},
        query={"type": "string"},
        deep={"type": "object", "properties": {"id": {"type": "string", "x-mcp-header": "Id"}}},
    )]})  # fmt: skip
    arguments = {
        "region": "us west 1", "n": 42, "on": False, "note": " padded", "gone": None,
        "query": "SELECT 1", "deep": {"id": "Hello, 世界"},
    }  # fmt: skip
    message = {"method": "tools/call", "params": {"name": "t", "arguments": arguments}}
    assert book.of(message) == {
        "Mcp-Method": "tools/call",
        "Mcp-Name": "t",
        "Mcp-Param-Region": "us west 1",  # inner spaces are plain
        "Mcp-Param-N": "42",
        "Mcp-Param-On": "false",
        "Mcp-Param-Note": wrapped(" padded"),  # edge whitespace, non-ASCII: base64
        "Mcp-Param-Id": wrapped("Hello, 世界"),
    }  # no header for the null, nor for the argument without x-mcp-header
    read = {"method": "resources/read", "params": {"uri": "file:///a%20b\n"}}
    assert book.of(read) == {"Mcp-Method": "resources/read", "Mcp-Name": wrapped("file:///a%20b\n")}
    assert book.of({"method": "notifications/initialized"}) == {
        "Mcp-Method": "notifications/initialized"
    }
    assert book.of({"id": 1, "result": {}}) == {}  # an answer of ours mirrors nothing


@pytest.mark.parametrize(
    ("prop", "why"),
    [
        ({"type": "string", "x-mcp-header": ""}, "is not an RFC 9110 token"),
        ({"type": "string", "x-mcp-header": "My Region"}, "RFC 9110"),
        ({"type": "string", "x-mcp-header": "Région"}, "RFC 9110"),
        ({"type": "number", "x-mcp-header": "Score"}, "'number'"),
        ({"type": "object", "x-mcp-header": "Data"}, "'object'"),
        ({"type": ["string", "null"], "x-mcp-header": "Maybe"}, "the type keyword is list"),
    ],
)
def test_an_invalid_definition_is_named(prop: dict[str, Any], why: str) -> None:
    problem = header_problem({"type": "object", "properties": {"p": prop}})
    assert problem is not None and why in problem and "'p'" in problem


def test_only_invalid_tools_are_left_out_and_reported() -> None:
    twice = tool(
        "twice",
        a={"type": "string", "x-mcp-header": "MyField"},
        b={"type": "string", "x-mcp-header": "myfield"},
    )
    inner = tool("x", a={"type": "string", "x-mcp-header": "A"})["inputSchema"]
    nested = {"name": "nested", "inputSchema": {"anyOf": [inner]}}  # not through properties
    valid = tool("valid", region={"type": "string", "x-mcp-header": "Region"})
    with collect_excluded() as excluded:
        kept = exclude_invalid([valid, twice, nested, tool("plain")])
    assert [t["name"] for t in kept] == ["valid", "plain"]
    assert [name for name, _ in excluded] == ["twice", "nested"]
    assert "'MyField' on property 'a' duplicates property 'b'" in excluded[0][1]
    book = RequestHeaders()
    book.learn({"tools": [twice]})  # an invalid tool mirrors no argument
    call = {"method": "tools/call", "params": {"name": "twice", "arguments": {"a": "x"}}}
    assert set(book.of(call)) == {"Mcp-Method", "Mcp-Name"}


def test_a_result_without_result_type_is_complete() -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 3, "result": {"content": []}}).encode()
    assert json.loads(with_result_type(body))["result"]["resultType"] == "complete"
    event = b"data: " + body + b"\n"
    assert json.loads(with_result_type(event)[6:])["result"]["resultType"] == "complete"
    for kept in (
        b'{"jsonrpc": "2.0", "id": 3, "result": {"resultType": "input_required"}}',
        b'{"jsonrpc": "2.0", "id": 4, "method": "x", "params": {"result": {}}}',
        b"event: message\n",
    ):
        assert with_result_type(kept) == kept


async def test_input_rounds_echo_the_state_and_are_bounded() -> None:
    sent: list[tuple[Any, Any]] = []
    asked = {"resultType": "input_required", "inputRequests": {"k": {"method": "roots/list"}}}

    async def answer(method: str, params: Any) -> dict[str, Any]:
        return {"roots": [], "asked": method}

    async def retry(responses: Any, state: Any) -> dict[str, Any]:
        sent.append((responses, state))
        if len(sent) == 1:  # the state alone: asked again after a short wait, without answers
            return {"resultType": "input_required", "requestState": "s2"}
        return {"content": []} if len(sent) == 2 else asked

    first = {**asked, "requestState": "s1"}
    done = await complete_input(first, answer=answer, retry=retry)
    assert done == {"content": []}
    assert sent == [({"k": {"roots": [], "asked": "roots/list"}}, "s1"), (None, "s2")]
    assert with_input({"name": "t"}, None, None) == {"name": "t"}  # no state: none sent
    sent.clear()
    with pytest.raises(RpcError, match="after 3 rounds"):
        await complete_input(asked, answer=answer, retry=lambda *_: _asked(asked), max_rounds=3)


async def _asked(result: dict[str, Any]) -> dict[str, Any]:
    return result
