"""Resources and prompts fixture MCP server: text and binary resources, a template, prompts.

    python resources_server.py                            # stdio
    python resources_server.py --transport http --port 0  # streamable HTTP on a free port

Over HTTP the server binds its socket first and then writes `resources server ready on port N`
to stderr. With `--marker TEXT` (default: $RES_MARKER) every text it serves ends with TEXT; with
`--no-resources` it lists its resource template but no resources.

It completes (`completion/complete`) the `tone` of prompt `greet` and the `name` of template
`memo://notes/{name}`, and `memo://counter` (`count N`) can be subscribed to: over
`subscriptions/listen` (2026-07-28) or `resources/subscribe` (older protocols). While a
subscription is open the counter goes up at once and then every TICK seconds, each step
announced to the subscribers. Also:

    --record PATH   appends one line per subscription event it sees: `subscribe URI`,
                    `unsubscribe URI`, `listen URI...`, `listen ended`
    --plain         declares neither completions nor resource subscriptions
    --legacy        refuses `server/discover`: clients fall back to `initialize`
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
from typing import Any, ClassVar

os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")

import mcp_types
from fastmcp import FastMCP
from fastmcp.prompts import Message
from fastmcp.server.middleware import Middleware, MiddlewareContext
from mcp import MCPError
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated

try:  # run as a script (a server process) or imported by the tests
    from fixture_server import serve
except ImportError:  # pragma: no cover - imported as tests.servers.resources_server
    from tests.servers.fixture_server import serve

# The 8-byte PNG signature plus a few bytes: enough to be saved as an image/png attachment.
LOGO = b"\x89PNG\r\n\x1a\n" + bytes(range(24))
NOTES = "first note\nsecond note\n"
MARKER = {"text": ""}
COUNTER = "memo://counter"
TICK = 0.2  # seconds between counter steps while a subscription is open
TONES = ("warm", "wry", "cold", "formal")
NOTE_NAMES = ("a", "alpha", "beta")


class Watchers:
    """The open subscriptions: legacy sessions that subscribed, listen streams, the ticker."""

    count = 0
    record: str | None = None
    bus = InMemorySubscriptionBus()
    # id(session) -> the session and the URIs it subscribed to
    sessions: ClassVar[dict[int, tuple[Any, set[str]]]] = {}
    streams = 0
    ticker: asyncio.Task[None] | None = None

    @classmethod
    def note(cls, line: str) -> None:
        """One line in the --record file, written at once (the server may be killed next)."""
        if cls.record:
            with open(cls.record, "a", encoding="utf-8") as out:
                out.write(line + "\n")

    @classmethod
    async def bump(cls) -> int:
        """Count one up and announce it on both protocols (the SDK's bus for listen streams)."""
        cls.count += 1
        await cls.bus.publish(ResourceUpdated(uri=COUNTER))
        for session, uris in list(cls.sessions.values()):
            if COUNTER not in uris:
                continue
            try:
                await session.send_resource_updated(COUNTER)
            except Exception:  # a session that went away stays subscribed no longer
                cls.sessions.pop(id(session), None)
        return cls.count

    @classmethod
    def start_ticking(cls) -> None:
        if cls.ticker is None or cls.ticker.done():
            cls.ticker = asyncio.get_running_loop().create_task(cls._tick())

    @classmethod
    async def _tick(cls) -> None:
        while cls.sessions or cls.streams:
            await cls.bump()
            await asyncio.sleep(TICK)


class LegacyOnly(Middleware):
    """With --legacy: refuse the 2026-07-28 probe, so clients use the initialize handshake."""

    async def on_discover(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        raise MCPError(code=mcp_types.METHOD_NOT_FOUND, message="Method not found")


mcp = FastMCP("resources-fixture")


@mcp.tool
def ping() -> str:
    """Answer pong."""
    return "pong" + MARKER["text"]


@mcp.resource("memo://notes", name="notes", mime_type="text/plain", description="Two notes")
def notes() -> str:
    """The notes as text."""
    return NOTES + MARKER["text"]


@mcp.resource("memo://logo.png", name="logo", mime_type="image/png", description="A tiny logo")
def logo() -> bytes:
    """The logo as bytes (sent base64-encoded)."""
    return LOGO


@mcp.resource("memo://notes/{name}", name="note", mime_type="text/plain")
def note(name: str) -> str:
    """One note by name."""
    return f"note {name}{MARKER['text']}"


@mcp.resource(COUNTER, name="counter", mime_type="text/plain", description="A counter")
def counter() -> str:
    """The counter as text."""
    return f"count {Watchers.count}{MARKER['text']}"


@mcp.prompt
def greet(name: str, tone: str = "warm") -> str:
    """Ask for a greeting."""
    return f"Greet {name} in a {tone} tone.{MARKER['text']}"


@mcp.prompt
def show_logo() -> list[Message]:
    """A prompt with a text message and an image."""
    image = mcp_types.ImageContent(
        type="image", data=base64.b64encode(LOGO).decode(), mimeType="image/png"
    )
    return [Message("Describe this logo."), Message(image, role="user")]


def complete(ref: Any, argument: Any, context: Any) -> list[str] | None:
    """Tones of `greet`, note names of `memo://notes/{name}`."""
    if isinstance(ref, mcp_types.PromptReference) and (ref.name, argument.name) == (
        "greet",
        "tone",
    ):
        return [tone for tone in TONES if tone.startswith(argument.value)]
    if isinstance(ref, mcp_types.ResourceTemplateReference) and argument.name == "name":
        return [name for name in NOTE_NAMES if name.startswith(argument.value)]
    return None


async def on_subscribe(ctx: Any, params: mcp_types.SubscribeRequestParams) -> Any:
    """`resources/subscribe`: this session hears of every change from now on."""
    Watchers.note(f"subscribe {params.uri}")
    Watchers.sessions.setdefault(id(ctx.session), (ctx.session, set()))[1].add(params.uri)
    Watchers.start_ticking()
    return mcp_types.EmptyResult()


async def on_unsubscribe(ctx: Any, params: mcp_types.UnsubscribeRequestParams) -> Any:
    """`resources/unsubscribe`."""
    Watchers.note(f"unsubscribe {params.uri}")
    _, uris = Watchers.sessions.get(id(ctx.session), (None, set()))
    uris.discard(params.uri)
    if not uris:
        Watchers.sessions.pop(id(ctx.session), None)
    return mcp_types.EmptyResult()


LISTEN = ListenHandler(Watchers.bus)


async def on_listen(ctx: Any, params: mcp_types.SubscriptionsListenRequestParams) -> Any:
    """`subscriptions/listen`: the SDK's handler, with the stream counted and recorded."""
    uris = params.notifications.resource_subscriptions or []
    Watchers.note(" ".join(["listen", *uris]))
    Watchers.streams += 1
    Watchers.start_ticking()
    try:
        return await LISTEN(ctx, params)
    finally:
        Watchers.streams -= 1
        Watchers.note("listen ended")


def offer_extras(legacy: bool) -> None:
    """Completions and subscriptions (the SDK declares a capability once its handler is in)."""
    mcp.add_completion_handler(complete)
    low = mcp._mcp_server
    low.add_request_handler("resources/subscribe", mcp_types.SubscribeRequestParams, on_subscribe)
    low.add_request_handler(
        "resources/unsubscribe", mcp_types.UnsubscribeRequestParams, on_unsubscribe
    )
    if not legacy:
        low.add_request_handler(
            "subscriptions/listen", mcp_types.SubscriptionsListenRequestParams, on_listen
        )


def main(argv: list[str] | None = None) -> None:
    """Serve stdio, or HTTP on a socket bound before `ready` is announced."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", choices=["stdio", "http", "sse"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--marker", default=os.environ.get("RES_MARKER", ""))
    parser.add_argument("--no-resources", action="store_true")
    parser.add_argument("--record", default=None)
    parser.add_argument("--plain", action="store_true")
    parser.add_argument("--legacy", action="store_true")
    args = parser.parse_args(argv)
    MARKER["text"] = args.marker
    Watchers.record = args.record
    if not args.plain:
        offer_extras(args.legacy)
    if args.legacy:
        mcp.add_middleware(LegacyOnly())
    if args.no_resources:
        mcp.disable(components={"resource"})
    serve(mcp, args.transport, args.host, args.port, "resources server")


if __name__ == "__main__":
    main()
