"""Multi-round-trip requests of the 2026-07-28 protocol: results of type `input_required`.

A server may answer a request (`tools/call`, `prompts/get`, `resources/read`) with
`{"resultType": "input_required", "inputRequests": {key: {method, params}}, "requestState": s}`
instead of its result. The client fulfils each input request (an elicitation, a sampling
request, `roots/list`: the same answerers as the requests a server sends on an older session),
then sends the request again with a new JSON-RPC id, `inputResponses` (the answers by key) and
the `requestState` echoed unchanged (left out when the server gave none), until the result is
complete. A result without `resultType` is complete. The state of one request is never given to
another, so requests running side by side keep their own. The rounds are bounded (`MAX_ROUNDS`,
as the MCP SDK bounds them); a server that only hands back its state is asked again after a
short wait that grows up to a quarter of a second.

devall's own client (mcp_direct.py) drives this with `complete_input`; fastmcp's client drives it
in the MCP SDK, whose 2026-07-28 result types require `resultType`: mcp_remote.py reads the
server's answers through `with_result_type` so that a result without one is complete there too.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from devall_cli.tools.mcp_protocol import RpcError

INPUT_REQUIRED = "input_required"
MAX_ROUNDS = 10
FIRST_WAIT = 0.05  # seconds before asking again a server that sent its state alone
LONGEST_WAIT = 0.25
_INTERNAL_ERROR = -32603
_INVALID_PARAMS = -32602

# (method, params) of one input request -> its result (RpcError: refused)
AnswerFn = Callable[[str, Mapping[str, Any]], Awaitable[dict[str, Any]]]
# (inputResponses or None, requestState or None) -> the server's next result
RetryFn = Callable[[dict[str, Any] | None, str | None], Awaitable[dict[str, Any]]]


def needs_input(result: Mapping[str, Any]) -> bool:
    """Whether a result asks for input before it is complete."""
    return result.get("resultType") == INPUT_REQUIRED


def with_input(
    params: Mapping[str, Any], responses: Mapping[str, Any] | None, state: str | None
) -> dict[str, Any]:
    """The params of a request sent again: its own, the input responses and the state."""
    again = dict(params)
    if responses is not None:
        again["inputResponses"] = dict(responses)
    if state is not None:
        again["requestState"] = state
    return again


async def complete_input(
    first: Mapping[str, Any], *, answer: AnswerFn, retry: RetryFn, max_rounds: int = MAX_ROUNDS
) -> dict[str, Any]:
    """The complete result of a request whose first result was `first`.

    RpcError when an input request is refused or the server still asks after `max_rounds`.
    """
    current = dict(first)
    wait = FIRST_WAIT
    for _ in range(max_rounds):
        if not needs_input(current):
            return current
        requests = current.get("inputRequests")
        responses: dict[str, Any] | None = None
        if isinstance(requests, Mapping) and requests:
            responses = await _answer_all(requests, answer)
            wait = FIRST_WAIT
        else:
            await asyncio.sleep(wait)
            wait = min(wait * 2, LONGEST_WAIT)
        state = current.get("requestState")
        current = await retry(responses, state if isinstance(state, str) else None)
    if not needs_input(current):
        return current
    raise RpcError(_INTERNAL_ERROR, f"the server still asked for input after {max_rounds} rounds")


async def _answer_all(requests: Mapping[str, Any], answer: AnswerFn) -> dict[str, Any]:
    """The answers to every input request, asked side by side (the first refusal ends all)."""
    keys = list(requests)
    asks = [asyncio.ensure_future(_answer_one(requests[key], answer)) for key in keys]
    try:
        results = await asyncio.gather(*asks)
    except BaseException:
        for ask in asks:
            ask.cancel()
        await asyncio.gather(*asks, return_exceptions=True)
        raise
    return dict(zip(keys, results, strict=True))


async def _answer_one(request: Any, answer: AnswerFn) -> dict[str, Any]:
    method = request.get("method") if isinstance(request, Mapping) else None
    if not isinstance(method, str):
        raise RpcError(_INVALID_PARAMS, "an input request needs a method")
    params = request.get("params")
    return await answer(method, params if isinstance(params, Mapping) else {})


def with_result_type(line: bytes) -> bytes:
    """One line of a server's answer (a JSON body or an event's `data:`), a result without
    `resultType` given `"complete"` (every other line as it was)."""
    if b'"result"' not in line or b'"resultType"' in line:  # most lines: no parsing
        return line
    stripped = line.rstrip(b"\r\n")
    ending = line[len(stripped) :]
    prefix = next((p for p in (b"data: ", b"data:") if stripped.startswith(p)), b"")
    try:
        message = json.loads(stripped[len(prefix) :])
    except (ValueError, RecursionError):
        return line
    if not isinstance(message, dict) or "method" in message:
        return line
    result = message.get("result")
    if not isinstance(result, dict) or "resultType" in result:
        return line
    message["result"] = {**result, "resultType": "complete"}
    return prefix + json.dumps(message, ensure_ascii=False).encode("utf-8") + ending
