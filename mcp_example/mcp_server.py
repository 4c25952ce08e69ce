"""The devall example MCP server: `rand_num`, plus one tool per kind of result devall shows.

    python mcp_example/mcp_server.py                                  # stdio (for mcp_local)
    python mcp_example/mcp_server.py --transport http --port 8001     # http://127.0.0.1:8001/mcp
    fastmcp run mcp_example/mcp_server.py --transport http --port 8001

It writes `MCP server ready` to stderr when it starts serving; workflows wait for that line with
`wait_for_log: "MCP server ready"`.
"""

from __future__ import annotations

import argparse
import base64
import math
import os
import random
import socket
import struct
import sys
import zlib

# No banner and no update check: the server's stderr is its log, and it may run offline.
os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")

import mcp_types
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError

READY_LINE = "MCP server ready"

mcp = FastMCP("devall example server")


@mcp.tool
def rand_num(a: int, b: int) -> int:
    """Return a random integer between a and b, both included."""
    if a > b:
        # ToolError: the message goes to the caller as the tool's error, without a traceback.
        raise ToolError(f"a must not be greater than b (got a={a}, b={b})")
    return random.randint(a, b)


def _png(width: int = 16, height: int = 16) -> bytes:
    """A small RGB PNG: a diagonal colour gradient."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        checksum = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", checksum)

    rows = b"".join(
        b"\x00" + b"".join(bytes((x * 16, y * 16, 255 - (x + y) * 8)) for x in range(width))
        for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"".join(
        [
            b"\x89PNG\r\n\x1a\n",
            chunk(b"IHDR", header),
            chunk(b"IDAT", zlib.compress(rows)),
            chunk(b"IEND", b""),
        ]
    )


def _wav(seconds: float = 0.25, rate: int = 8000, pitch: float = 440.0) -> bytes:
    """A short 16-bit mono sine tone as a WAV file."""
    count = int(seconds * rate)
    samples = b"".join(
        struct.pack("<h", int(12000 * math.sin(2 * math.pi * pitch * i / rate)))
        for i in range(count)
    )
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"data" + struct.pack("<I", len(samples)) + samples
    return b"RIFF" + struct.pack("<I", len(body)) + body


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@mcp.tool
def sample_image() -> mcp_types.ImageContent:
    """A 16x16 PNG gradient (an image result)."""
    return mcp_types.ImageContent(type="image", data=_b64(_png()), mime_type="image/png")


@mcp.tool
def sample_audio() -> mcp_types.AudioContent:
    """A quarter-second 440 Hz tone (an audio result)."""
    return mcp_types.AudioContent(type="audio", data=_b64(_wav()), mime_type="audio/wav")


@mcp.tool
def sample_resource() -> mcp_types.EmbeddedResource:
    """A short text document embedded in the result (an embedded resource)."""
    contents = mcp_types.TextResourceContents(
        uri="example://notes/readme.txt",
        mime_type="text/plain",
        text="devall example server\nThis text arrived as an embedded resource.\n",
    )
    return mcp_types.EmbeddedResource(type="resource", resource=contents)


@mcp.tool
def sample_link() -> mcp_types.ResourceLink:
    """A link to a resource the server does not inline (a resource link)."""
    return mcp_types.ResourceLink(
        type="resource_link",
        uri="https://modelcontextprotocol.io/specification",
        name="MCP specification",
        description="The Model Context Protocol specification",
        mime_type="text/html",
    )


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket; port 0 picks a free one."""
    # IPPROTO_TCP rather than 0: asyncio turns Nagle's algorithm off only for sockets that say
    # TCP, and without that every HTTP response waits ~40 ms for the client's delayed ACK.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


def main(argv: list[str] | None = None) -> None:
    """Serve over stdio (default) or streamable HTTP."""
    parser = argparse.ArgumentParser(description="devall example MCP server")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    args = parser.parse_args(argv)
    if args.transport == "stdio":
        print(READY_LINE, file=sys.stderr, flush=True)
        mcp.run(transport="stdio", show_banner=False)
        return
    # Bind before announcing readiness, so a client that waits for the line can connect at once.
    try:
        sock = listen(args.host, args.port)
    except OSError as exc:
        sys.exit(f"mcp_server: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
    port = sock.getsockname()[1]  # the real one when --port 0 asked for any free port
    print(f"{READY_LINE} on http://{args.host}:{port}/mcp", file=sys.stderr, flush=True)
    mcp.run(
        transport="http",
        host=args.host,
        port=port,
        sockets=[sock],
        show_banner=False,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
