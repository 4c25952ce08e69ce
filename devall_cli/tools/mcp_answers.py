"""What devall's own client (mcp_direct.py) answers when a server asks it something.

`ping`, `roots/list` (refused, as by fastmcp's client, unless roots are configured),
`elicitation/create` and `sampling/createMessage` (only when sampling is allowed), answered
through the same `ServerRequests` as fastmcp's client; the SDK's types are imported only when a
server asks for sampling. Anything else is "method not found".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from devall_cli.tools.base import ElicitationAnswer
from devall_cli.tools.mcp_protocol import RpcError
from devall_cli.tools.mcp_requests import ServerRequests

INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602


async def answer_request(
    requests: ServerRequests, method: str, params: Mapping[str, Any]
) -> dict[str, Any]:
    """The result of a request the server made (RpcError: the error to answer with)."""
    if method == "ping":
        return {}
    if method == "roots/list":
        if not requests.offers_roots:  # refused as fastmcp's client refuses it
            raise RpcError(INVALID_REQUEST, "List roots not supported")
        return {"roots": requests.root_list()}
    if method == "elicitation/create":
        return await _elicit(requests, params)
    if method == "sampling/createMessage" and requests.settings.sampling == "allow":
        return await _sample(requests, params)
    raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")


async def _elicit(requests: ServerRequests, params: Mapping[str, Any]) -> dict[str, Any]:
    message = params.get("message")
    url = params.get("url")
    schema = params.get("requestedSchema")
    if not isinstance(message, str) or not (
        isinstance(url, str) or isinstance(schema, Mapping)
    ):
        raise RpcError(
            INVALID_PARAMS, "elicitation/create needs a message and a requestedSchema or url"
        )
    if isinstance(url, str):
        answer = await requests.answer_elicitation(message, url, {})
        return _elicit_result(answer, None)
    form_schema = dict(schema) if isinstance(schema, Mapping) else {}
    answer = await requests.answer_elicitation(message, None, form_schema)
    return _elicit_result(answer, form_schema)


async def _sample(requests: ServerRequests, params: Mapping[str, Any]) -> dict[str, Any]:
    import mcp_types  # only when a server asks: the sampling request is read as the SDK's
    from pydantic import ValidationError

    try:
        parsed = mcp_types.CreateMessageRequestParams.model_validate(dict(params))
    except ValidationError as exc:
        raise RpcError(
            INVALID_PARAMS, f"invalid sampling request: {exc.errors()[0]['msg']}"
        ) from exc
    result = await requests.sample(parsed.messages, parsed, None)
    if isinstance(result, mcp_types.ErrorData):
        raise RpcError(result.code, result.message)
    dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


def _elicit_result(answer: ElicitationAnswer, schema: dict[str, Any] | None) -> dict[str, Any]:
    """The `elicitation/create` result; accepted form content is checked against its schema."""
    result: dict[str, Any] = {"action": answer.action}
    if answer.content is not None:
        content = dict(answer.content)
        if answer.action == "accept" and schema:
            from jsonschema import validators

            validators.validator_for(schema)(schema).validate(content)
        result["content"] = content
    return result
