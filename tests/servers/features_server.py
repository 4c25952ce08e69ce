"""Fixture MCP server for what a server may ask of its client: sampling, elicitation, roots,
progress and log messages, plus a result that uses every field a result may carry.

    python features_server.py [--legacy-only]                         # stdio
    python features_server.py --transport http --port 0 [--legacy-only]

On the 2026 protocol (the default for a FastMCP client) the tools ask through the result of the
call itself (`input_required`); with `--legacy-only` the server refuses that protocol, so clients
use the initialize handshake and the tools ask with requests on the session. (Over stdio a
FastMCP server keeps the era of the first message it reads, so there the refusal is a relay in
front of the real server that answers `server/discover` itself.) Over HTTP the server writes
`features server ready on port N` to stderr once its socket listens.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import threading
from typing import IO, Any

os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")
METHOD_NOT_FOUND = -32601


def relay_refusing_discover() -> None:
    """Serve stdio through a child server that only ever sees the initialize handshake."""
    child = subprocess.Popen(
        [sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert child.stdin is not None and child.stdout is not None
    out = sys.stdout.buffer
    lock = threading.Lock()

    def write(stream: IO[bytes], line: bytes) -> None:
        with lock:
            stream.write(line)
            stream.flush()

    def from_child() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            write(out, line)

    threading.Thread(target=from_child, daemon=True).start()
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if isinstance(message, dict) and message.get("method") == "server/discover":
            error = {"code": METHOD_NOT_FOUND, "message": "Method not found"}
            reply = {"jsonrpc": "2.0", "id": message.get("id"), "error": error}
            write(out, (json.dumps(reply) + "\n").encode())
            continue
        write(child.stdin, line)
    child.stdin.close()
    child.wait()


if __name__ == "__main__" and "--legacy-only" in sys.argv and "http" not in sys.argv:
    # Before the imports below: the relay itself needs none of them (a faster start).
    relay_refusing_discover()
    sys.exit(0)


import mcp_types  # noqa: E402
from fastmcp import Context, FastMCP  # noqa: E402
from fastmcp.server.middleware import Middleware, MiddlewareContext  # noqa: E402
from fastmcp.tools.base import ToolResult  # noqa: E402
from mcp import MCPError  # noqa: E402

try:  # run as a script (a server process) or imported by the tests (for the payloads)
    from fixture_server import b64, png_bytes, serve
except ImportError:  # pragma: no cover - imported as tests.servers.features_server
    from tests.servers.fixture_server import b64, png_bytes, serve

# The form `ask` sends: every kind of field, most with a default; `name` is required.
FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "description": "Who you are"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
        "subscribe": {"type": "boolean", "default": True},
        "color": {"type": "string", "enum": ["red", "green", "blue"], "default": "green"},
        "size": {
            "type": "string",
            "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}],
            "default": "s",
        },
    },
    "required": ["name"],
}
# The same form where every field has a default (what `accept_defaults` can accept).
DEFAULTS_FORM: dict[str, Any] = {
    **FORM,
    "properties": {**FORM["properties"], "name": {"type": "string", "default": "Ada"}},
}
RICH_STRUCTURED = {"temperature": 21.5, "city": "Oslo"}


class Refuse2026(Middleware):
    """With --legacy-only, the modern probe is refused: clients use `initialize`."""

    legacy_only = False
    roots_changed = 0

    async def on_discover(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        if Refuse2026.legacy_only:
            raise MCPError(code=mcp_types.METHOD_NOT_FOUND, message="Method not found")
        return await call_next(context)

    async def on_notification(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        if context.method == "notifications/roots/list_changed":
            Refuse2026.roots_changed += 1
        return await call_next(context)


mcp = FastMCP("devall features server")
mcp.add_middleware(Refuse2026())


def _modern(ctx: Context) -> bool:
    return ctx._is_modern_protocol()


def _answer(ctx: Context, key: str) -> Any:
    responses = ctx.input_responses or {}
    return responses.get(key)


@mcp.tool
async def sample(prompt: str, ctx: Context, max_tokens: int = 100) -> Any:
    """Ask the client's model; answer with what it said."""
    params = mcp_types.CreateMessageRequestParams(
        messages=[
            mcp_types.SamplingMessage(
                role="user", content=mcp_types.TextContent(type="text", text=prompt)
            )
        ],
        system_prompt="You answer for the features server.",
        max_tokens=max_tokens,
        temperature=0.25,
    )
    if _modern(ctx):
        reply = _answer(ctx, "sample")
        if reply is None:
            request = mcp_types.CreateMessageRequest(params=params)
            return mcp_types.InputRequiredResult(input_requests={"sample": request})
    else:
        reply = await ctx.session.create_message(
            messages=params.messages,
            max_tokens=max_tokens,
            system_prompt=params.system_prompt,
            temperature=params.temperature,
            related_request_id=ctx.request_id,
        )
    text = getattr(reply.content, "text", "")
    return f"sampled ({reply.model}): {text}"


@mcp.tool
async def ask(ctx: Context, with_defaults: bool = False) -> Any:
    """Ask the user to fill in a form; answer with the action and the content as JSON."""
    schema = DEFAULTS_FORM if with_defaults else FORM
    message = "Tell the features server about yourself"
    if _modern(ctx):
        reply = _answer(ctx, "form")
        if reply is None:
            params = mcp_types.ElicitRequestFormParams(message=message, requested_schema=schema)
            request = mcp_types.ElicitRequest(params=params)
            return mcp_types.InputRequiredResult(input_requests={"form": request})
    else:
        reply = await ctx.session.elicit_form(
            message=message, requested_schema=schema, related_request_id=ctx.request_id
        )
    return json.dumps({"action": reply.action, "content": reply.content}, sort_keys=True)


@mcp.tool
async def roots(ctx: Context) -> Any:
    """The roots the client gives, as `name=uri` lines; `(no roots offered)` from a client that
    declares no roots capability."""
    wanted = mcp_types.ClientCapabilities(roots=mcp_types.RootsCapability())
    if not ctx.session.check_client_capability(wanted):
        return "(no roots offered)"
    if _modern(ctx):
        reply = _answer(ctx, "roots")
        if reply is None:
            request = mcp_types.ListRootsRequest()
            return mcp_types.InputRequiredResult(input_requests={"roots": request})
    else:
        reply = await ctx.session.list_roots()
    return "\n".join(f"{root.name}={root.uri}" for root in reply.roots) or "(no roots)"


@mcp.tool
def roots_changed() -> int:
    """How many roots/list_changed notifications the server received."""
    return Refuse2026.roots_changed


@mcp.tool
async def work(ctx: Context, steps: int = 3, delay: float = 0.05) -> str:
    """Report progress at each step, then answer."""
    for step in range(1, steps + 1):
        await asyncio.sleep(delay)
        await ctx.report_progress(step, steps, f"step {step}")
    return f"worked {steps} steps"


@mcp.tool
async def chatter(ctx: Context) -> str:
    """Send one log message at each of four levels."""
    await ctx.debug("debug note")
    await ctx.info("info note")
    await ctx.warning("warning note")
    await ctx.error("error note")
    return "logged"


@mcp.tool
def rich_result() -> ToolResult:
    """A result with annotated and tagged content, a resource link, structured content and meta."""
    annotations = mcp_types.Annotations(audience=["user"], priority=0.7)
    content: list[Any] = [
        mcp_types.TextContent(
            type="text", text="see attached", annotations=annotations, _meta={"part": 1}
        ),
        mcp_types.ImageContent(
            type="image", data=b64(png_bytes()), mime_type="image/png", annotations=annotations
        ),
        mcp_types.ResourceLink(
            type="resource_link",
            uri="file:///data/report.csv",
            name="report.csv",
            title="The report",
            description="a linked report",
            mime_type="text/csv",
            size=2048,
            _meta={"rows": 12},
        ),
        mcp_types.EmbeddedResource(
            type="resource",
            resource=mcp_types.TextResourceContents(
                uri="file:///data/notes.txt", mime_type="text/plain", text="notes", _meta={"v": 2}
            ),
            annotations=mcp_types.Annotations(priority=0.1),
        ),
    ]
    return ToolResult(
        content=content, structured_content=RICH_STRUCTURED, meta={"trace_id": "t-42"}
    )


@mcp.tool(
    annotations=mcp_types.ToolAnnotations(readOnlyHint=True, title="Annotated tool"),
    output_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}},
)
def described() -> dict[str, bool]:
    """A tool with a title, annotations and an output schema."""
    return {"ok": True}


def main(argv: list[str] | None = None) -> None:
    """Serve stdio, or HTTP on a socket bound before `ready` is announced."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--legacy-only", action="store_true", help="refuse the 2026 protocol")
    args = parser.parse_args(argv)
    Refuse2026.legacy_only = args.legacy_only
    if args.transport == "stdio":
        if args.legacy_only:
            relay_refusing_discover()  # reached when main() is called with --legacy-only
            return
        print("features server ready", file=sys.stderr, flush=True)
        mcp.run(transport="stdio", show_banner=False)
        return
    serve(mcp, "http", args.host, args.port, "features server")


if __name__ == "__main__":
    main()
