"""A small MCP server that asks its client things during calls: the example server of
../mcp_client_features.yaml.

    draft_title(topic)   asks the client's model for a title (sampling)
    confirm(action)      asks the operator to confirm, with defaults (elicitation)
    crunch(steps)        reports progress at each step and logs as it goes
    workspace()          lists the folders the client named as its roots

A tool asks the same way on either protocol era: on the 2026 protocol it returns the question
(`input_required`) and reads the answer when the client calls again; on older protocols it sends
the request on the session and waits for the answer.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")

import mcp_types  # noqa: E402
from fastmcp import Context, FastMCP  # noqa: E402

mcp = FastMCP("devall example: a server that asks")

CONFIRM_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "confirm": {"type": "boolean", "title": "Go ahead?", "default": True},
        "priority": {"type": "string", "enum": ["low", "normal", "high"], "default": "normal"},
    },
    "required": ["confirm"],
}


async def ask(ctx: Context, key: str, request: Any, legacy: Any) -> Any:
    """The client's answer to `request`: from the retried call (2026), or asked on the session."""
    if ctx._is_modern_protocol():
        answer = (ctx.input_responses or {}).get(key)
        if answer is None:
            raise _Ask(mcp_types.InputRequiredResult(input_requests={key: request}))
        return answer
    return await legacy()


class _Ask(Exception):
    def __init__(self, result: mcp_types.InputRequiredResult) -> None:
        self.result = result


@mcp.tool
async def draft_title(topic: str, ctx: Context) -> Any:
    """Ask the client's model for a short title about `topic`."""
    message = mcp_types.SamplingMessage(
        role="user", content=mcp_types.TextContent(type="text", text=f"A title about {topic}")
    )
    params = mcp_types.CreateMessageRequestParams(messages=[message], max_tokens=40)
    try:
        reply = await ask(
            ctx,
            "title",
            mcp_types.CreateMessageRequest(params=params),
            lambda: ctx.session.create_message(
                messages=[message], max_tokens=40, related_request_id=ctx.request_id
            ),
        )
    except _Ask as pending:
        return pending.result
    return f"Title: {getattr(reply.content, 'text', '')}"


@mcp.tool
async def confirm(action: str, ctx: Context) -> Any:
    """Ask the operator whether to go ahead with `action`."""
    message = f"May the server {action}?"
    params = mcp_types.ElicitRequestFormParams(message=message, requested_schema=CONFIRM_FORM)
    try:
        reply = await ask(
            ctx,
            "confirm",
            mcp_types.ElicitRequest(params=params),
            lambda: ctx.session.elicit_form(
                message=message, requested_schema=CONFIRM_FORM, related_request_id=ctx.request_id
            ),
        )
    except _Ask as pending:
        return pending.result
    if reply.action != "accept" or not (reply.content or {}).get("confirm"):
        return f"not confirmed ({reply.action})"
    return f"confirmed at {reply.content.get('priority', 'normal')} priority"


@mcp.tool
async def crunch(ctx: Context, steps: int = 4) -> str:
    """Work in `steps` steps, reporting progress and logging."""
    await ctx.info(f"crunching in {steps} steps")
    for step in range(1, steps + 1):
        await asyncio.sleep(0.05)
        await ctx.report_progress(step, steps, f"step {step} of {steps}")
    await ctx.warning("crunching done; the numbers are made up")
    return f"crunched {steps} steps"


@mcp.tool
async def workspace(ctx: Context) -> Any:
    """The folders the client gave as roots, one per line."""
    try:
        reply = await ask(ctx, "roots", mcp_types.ListRootsRequest(), ctx.session.list_roots)
    except _Ask as pending:
        return pending.result
    return "\n".join(f"{root.name}: {root.uri}" for root in reply.roots) or "(no roots)"


if __name__ == "__main__":
    print("example server ready", flush=True, file=__import__("sys").stderr)
    mcp.run(transport="stdio", show_banner=False)
