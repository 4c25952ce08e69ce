"""Resources and prompts fixture MCP server: text and binary resources, a template, prompts.

    python resources_server.py                            # stdio
    python resources_server.py --transport http --port 0  # streamable HTTP on a free port

Over HTTP the server binds its socket first and then writes `resources server ready on port N`
to stderr. With `--marker TEXT` (default: $RES_MARKER) every text it serves ends with TEXT; with
`--no-resources` it lists its resource template but no resources.
"""

from __future__ import annotations

import argparse
import base64
import os

os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")

import mcp_types
from fastmcp import FastMCP
from fastmcp.prompts import Message

try:  # run as a script (a server process) or imported by the tests
    from fixture_server import serve
except ImportError:  # pragma: no cover - imported as tests.servers.resources_server
    from tests.servers.fixture_server import serve

# The 8-byte PNG signature plus a few bytes: enough to be saved as an image/png attachment.
LOGO = b"\x89PNG\r\n\x1a\n" + bytes(range(24))
NOTES = "first note\nsecond note\n"
MARKER = {"text": ""}

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


def main(argv: list[str] | None = None) -> None:
    """Serve stdio, or HTTP on a socket bound before `ready` is announced."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", choices=["stdio", "http", "sse"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--marker", default=os.environ.get("RES_MARKER", ""))
    parser.add_argument("--no-resources", action="store_true")
    args = parser.parse_args(argv)
    MARKER["text"] = args.marker
    if args.no_resources:
        mcp.disable(components={"resource"})
    serve(mcp, args.transport, args.host, args.port, "resources server")


if __name__ == "__main__":
    main()
