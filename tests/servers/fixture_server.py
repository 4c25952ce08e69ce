"""Fixture MCP server for the tests: one tool per result kind, plus tools for timing and faults.

    python fixture_server.py                                     # stdio
    python fixture_server.py --transport http --port 0           # streamable HTTP on a free port
    python fixture_server.py --transport sse --port 8123         # legacy SSE transport

Over HTTP the server binds its socket first and then writes `fixture server ready on port N` to
stderr, so a test knows the port and that connections will be accepted.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import socket
import struct
import sys
import time
import zlib
from typing import Any

os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")

import mcp_types
from fastmcp import FastMCP
from fastmcp.server.dependencies import get_http_headers
from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult
from mcp import MCPError

# --- payloads (importable by tests to compare attachments byte for byte) -------------------


def png_bytes(width: int = 4, height: int = 3) -> bytes:
    """A small valid RGB PNG with a colour gradient."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    rows = b"".join(
        b"\x00" + b"".join(bytes((x * 60, y * 80, 200)) for x in range(width))
        for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def wav_bytes(samples: int = 800, rate: int = 8000) -> bytes:
    """A short valid 8-bit mono WAV (a square wave)."""
    data = bytes(200 if (i // 10) % 2 else 55 for i in range(samples))
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate, 1, 8)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


PDF_BYTES = (
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
    b"2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
)
TEXT_RESOURCE = "line one\nline two: fixture text resource\n"
STRUCTURED = {"answer": 42, "items": ["a", "b"], "nested": {"ok": True}}


def b64(data: bytes) -> str:
    """Base64 text of `data`."""
    return base64.b64encode(data).decode("ascii")


# --- the server ----------------------------------------------------------------------------


class HandshakeCounter(Middleware):
    """Counts protocol handshakes (initialize or server/discover) the server has answered.

    With `legacy_only` set the server refuses the modern `server/discover` probe, so clients
    fall back to `initialize` and hold a stateful session (with an id, over HTTP).
    """

    count = 0
    legacy_only = False

    async def on_initialize(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        HandshakeCounter.count += 1
        return await call_next(context)

    async def on_discover(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        if HandshakeCounter.legacy_only:
            raise MCPError(code=mcp_types.METHOD_NOT_FOUND, message="Method not found")
        HandshakeCounter.count += 1
        return await call_next(context)


mcp = FastMCP("devall fixture server")
mcp.add_middleware(HandshakeCounter())


@mcp.tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool
def image() -> mcp_types.ImageContent:
    """A small PNG image."""
    return mcp_types.ImageContent(type="image", data=b64(png_bytes()), mime_type="image/png")


@mcp.tool
def audio() -> mcp_types.AudioContent:
    """A short WAV sound."""
    return mcp_types.AudioContent(type="audio", data=b64(wav_bytes()), mime_type="audio/wav")


@mcp.tool
def text_resource() -> mcp_types.EmbeddedResource:
    """An embedded text resource."""
    contents = mcp_types.TextResourceContents(
        uri="file:///fixture/notes.txt", mime_type="text/plain", text=TEXT_RESOURCE
    )
    return mcp_types.EmbeddedResource(type="resource", resource=contents)


@mcp.tool
def blob_resource() -> mcp_types.EmbeddedResource:
    """An embedded binary resource (a PDF)."""
    contents = mcp_types.BlobResourceContents(
        uri="file:///fixture/report.pdf", mime_type="application/pdf", blob=b64(PDF_BYTES)
    )
    return mcp_types.EmbeddedResource(type="resource", resource=contents)


@mcp.tool
def resource_link() -> mcp_types.ResourceLink:
    """A link to a resource the server does not inline."""
    return mcp_types.ResourceLink(
        type="resource_link",
        uri="https://example.invalid/data.csv",
        name="data.csv",
        description="a linked data file",
        mime_type="text/csv",
    )


@mcp.tool
def structured() -> ToolResult:
    """Structured content with no content blocks."""
    return ToolResult(content=[], structured_content=STRUCTURED)


@mcp.tool
def fail(message: str) -> str:
    """Always fails with the given message."""
    raise ValueError(message)


@mcp.tool
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@mcp.tool
def flood(chars: int) -> str:
    """A text result of `chars` characters (`0123456789` repeated)."""
    return "0123456789" * (chars // 10)


@mcp.tool
async def stall(seconds: float) -> str:
    """Hold the whole server still (its event loop blocked) for `seconds`: a hung server."""
    time.sleep(seconds)  # blocking on purpose: no request is read or answered meanwhile
    return f"stalled {seconds}"


@mcp.tool
def counter() -> dict[str, Any]:
    """Handshakes seen so far and the x-test-token request header (over HTTP)."""
    headers = get_http_headers()
    return {"handshakes": HandshakeCounter.count, "token": headers.get("x-test-token")}


@mcp.tool
async def sleep_and_tag(seconds: float, tag: str) -> str:
    """Sleep, then return the tag (for concurrency tests)."""
    await asyncio.sleep(seconds)
    return tag


class Tracker:
    """How many `track` calls run at once in this process, and the most there ever were."""

    active = 0
    peak = 0


@mcp.tool
async def track(seconds: float, tag: str) -> str:
    """Sleep while counted as running; return `<tag> peak=<most concurrent calls so far>`."""
    Tracker.active += 1
    Tracker.peak = max(Tracker.peak, Tracker.active)
    try:
        await asyncio.sleep(seconds)
    finally:
        Tracker.active -= 1
    return f"{tag} peak={Tracker.peak}"


@mcp.tool
def peak(reset: bool = False) -> int:
    """The most `track` calls that ran at once so far; `reset` starts counting anew."""
    seen = Tracker.peak
    if reset:
        Tracker.peak = Tracker.active
    return seen


@mcp.tool
def env(name: str) -> str | None:
    """The value of an environment variable of the server process."""
    return os.environ.get(name)


@mcp.tool
def request_header(name: str) -> str | None:
    """The value of a header of the HTTP request that carried this call (credentials too)."""
    return get_http_headers(include_all=True).get(name.lower())


@mcp.tool(meta={"source": "other_source"})
def other_source_tool() -> str:
    """A tool whose _meta.source is not mcp_tools."""
    return "from other source"


# --- entry point ---------------------------------------------------------------------------


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket; port 0 picks a free one."""
    # IPPROTO_TCP, not 0: asyncio turns Nagle's algorithm off only for sockets that say TCP, and
    # without that every response (headers, then body) waits ~40 ms for a delayed ACK.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


def serve(server: Any, transport: str, host: str, port: int, name: str) -> None:
    """Run `server` on stdio, or on HTTP/SSE over a socket bound before `NAME ready on port N`
    is written to stderr (what the tests wait for)."""
    if transport == "stdio":
        print(f"{name} ready", file=sys.stderr, flush=True)
        server.run(transport="stdio", show_banner=False)
        return
    sock = bind_socket(host, port)
    print(f"{name} ready on port {sock.getsockname()[1]}", file=sys.stderr, flush=True)
    server.run(
        transport=transport,
        show_banner=False,
        host=host,
        port=sock.getsockname()[1],
        sockets=[sock],
        log_level="warning",
    )


def main(argv: list[str] | None = None) -> None:
    """Serve stdio, or HTTP/SSE on a socket bound before `ready` is announced."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", choices=["stdio", "http", "sse"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--legacy-only", action="store_true", help="refuse the modern protocol")
    args = parser.parse_args(argv)
    HandshakeCounter.legacy_only = args.legacy_only
    serve(mcp, args.transport, args.host, args.port, "fixture server")


if __name__ == "__main__":
    main()
