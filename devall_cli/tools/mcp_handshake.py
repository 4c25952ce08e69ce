"""How devall's own client (mcp_direct.py) opens a session: the protocol version it agrees on.

As fastmcp's `Client(mode="auto")` does (the MCP SDK's `negotiate_auto`): a `server/discover`
probe at the newest 2026-07-28-era version first, and the `initialize` handshake (2025-11-25 and
older) for every server that gives no positive evidence of speaking the newer era:

- any JSON-RPC error answering the probe (method not found, invalid request, an HTTP error
  status, which http_lines.py turns into one), no answer within `DISCOVER_TIMEOUT`, a result
  that is not the 2026-07-28 `DiscoverResult` (its `resultType`, `ttlMs` and `cacheScope`
  included, as fastmcp's client holds it), or one that names none of our 2026-era versions;
- -32022 (unsupported protocol version) naming a 2026-era version we speak: the probe is sent
  again at that version, once; naming only versions of neither era: the connection fails;
- the handshake itself answered with -32022 naming a 2026-era version (a server that settled
  on the newer era): one more probe at that version.

On a 2026-07-28 connection every request carries, in its `_meta`, the protocol version, the
client's capabilities and its identity (`stamp`), and the log level it wants (`debug`, as
fastmcp's client asks: devall filters by `log_level` itself); there is no initialized
notification, no `logging/setLevel` and no `ping` from the client. The handshake path is the
one older servers always saw: `initialize`, then `notifications/initialized`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from devall_cli import __version__
from devall_cli.tools.mcp_protocol import RpcError

# Protocol versions of the initialize handshake, newest first; the first is offered.
HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
# Protocol versions of the per-request `_meta` era (`server/discover`), newest first.
MODERN_VERSIONS = ("2026-07-28",)
UNSUPPORTED_PROTOCOL_VERSION = -32022
REQUEST_TIMEOUT = -32001
INTERNAL_ERROR = -32603
DISCOVER_TIMEOUT = 10.0  # seconds the probe may go unanswered, as the SDK waits
CLIENT_INFO = {"name": "devall", "version": __version__}
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
_CACHE_SCOPES = ("private", "public")
# The server capabilities the 2026-07-28 schema knows (each an object when given).
_CAPABILITIES = (
    "completions",
    "experimental",
    "extensions",
    "logging",
    "prompts",
    "resources",
    "tools",
)


class Speaker(Protocol):
    """What the opening needs of a session: requests and notifications."""

    async def rpc(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        progress: Any = None,
        meta: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Send a request and wait for its result (RpcError)."""
        ...

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification."""
        ...


@dataclass(frozen=True)
class Opened:
    """What a session agreed on with the server."""

    protocol_version: str
    server_name: str | None
    capabilities: Mapping[str, Any]
    # The `_meta` every request carries on a 2026-era connection (None: the handshake era).
    stamp: Mapping[str, Any] | None = field(default=None)


def client_capabilities(*, sampling: bool, roots: bool) -> dict[str, Any]:
    """What the client declares it can do (as fastmcp's client with devall's handlers)."""
    capabilities: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}}
    if roots:
        capabilities["roots"] = {"listChanged": True}
    if sampling:
        capabilities["sampling"] = {}
    return capabilities


def stamped(meta: Mapping[str, Any], stamp: Mapping[str, Any]) -> dict[str, Any]:
    """A request's `_meta` with the 2026-era fields; the log level only where none is given."""
    return {LOG_LEVEL_KEY: "debug", **meta, **stamp}


async def open_session(
    session: Speaker, capabilities: Mapping[str, Any], *, probe_timeout: float
) -> Opened:
    """Probe `server/discover`, else shake hands (RpcError when neither is agreed)."""
    version = MODERN_VERSIONS[0]
    for attempt in range(2):
        try:
            result = await _discover(session, version, capabilities, probe_timeout)
        except RpcError as exc:
            if exc.code == UNSUPPORTED_PROTOCOL_VERSION:
                supported = _supported(exc.data)
                mutual = [v for v in MODERN_VERSIONS if v in (supported or ())]
                if mutual and attempt == 0:
                    version = mutual[0]
                    continue
                if supported is not None and not set(supported) & set(HANDSHAKE_VERSIONS):
                    raise  # it speaks only versions we do not: no handshake will do
            try:
                return await _initialize(session, capabilities)
            except RpcError as refused:
                mutual = [v for v in MODERN_VERSIONS if v in (_supported(refused.data) or ())]
                if refused.code != UNSUPPORTED_PROTOCOL_VERSION or attempt != 0 or not mutual:
                    raise
                version = mutual[0]  # it settled on the newer era after all: probe again
                continue
        versions = result.get("supportedVersions") if _is_discovered(result) else None
        mutual = [v for v in MODERN_VERSIONS if v in (versions or ())]
        if not mutual:  # not the newer era's answer, or only older versions named in it
            return await _initialize(session, capabilities)
        return _adopt(result, mutual[0], capabilities)
    raise AssertionError("unreachable")  # each round returns, raises or probes once more


async def _discover(
    session: Speaker, version: str, capabilities: Mapping[str, Any], probe_timeout: float
) -> dict[str, Any]:
    """One `server/discover` at `version` (an unanswered probe is a timeout error)."""
    meta = {
        PROTOCOL_VERSION_KEY: version,
        CLIENT_INFO_KEY: CLIENT_INFO,
        CLIENT_CAPABILITIES_KEY: dict(capabilities),
    }
    try:
        async with asyncio.timeout(min(probe_timeout, DISCOVER_TIMEOUT)):
            return await session.rpc("server/discover", None, meta=meta)
    except TimeoutError as exc:  # the probe's own bound; the source's is a cancellation here
        raise RpcError(REQUEST_TIMEOUT, "no answer to server/discover") from exc


async def _initialize(session: Speaker, capabilities: Mapping[str, Any]) -> Opened:
    """The `initialize` handshake, offering the newest version it reaches."""
    result = await session.rpc(
        "initialize",
        {
            "protocolVersion": HANDSHAKE_VERSIONS[0],
            "capabilities": dict(capabilities),
            "clientInfo": CLIENT_INFO,
        },
    )
    version = result.get("protocolVersion")
    if version not in HANDSHAKE_VERSIONS:
        raise RpcError(INTERNAL_ERROR, f"unsupported protocol version {version!r}")
    server = result.get("serverInfo")
    await session.notify("notifications/initialized")
    return Opened(version, _name(server), _object(result.get("capabilities")))


def _adopt(result: Mapping[str, Any], version: str, capabilities: Mapping[str, Any]) -> Opened:
    """The 2026-era session a discover result opens; its server names itself in `_meta`."""
    meta = result.get("_meta")
    server = meta.get(SERVER_INFO_KEY) if isinstance(meta, Mapping) else None
    stamp = {
        PROTOCOL_VERSION_KEY: version,
        CLIENT_INFO_KEY: CLIENT_INFO,
        CLIENT_CAPABILITIES_KEY: dict(capabilities),
    }
    return Opened(version, _name(server), _object(result.get("capabilities")), stamp)


def _is_discovered(result: dict[str, Any]) -> bool:
    """Whether `result` is a 2026-07-28 `DiscoverResult`, as fastmcp's client checks it."""
    ttl = result.get("ttlMs")
    if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl < 0:
        result["ttlMs"] = ttl = 0  # a negative hint is floored, as the SDK floors it
    versions = result.get("supportedVersions")
    capabilities = result.get("capabilities")
    return (
        isinstance(versions, list)
        and all(isinstance(v, str) for v in versions)
        and isinstance(capabilities, Mapping)
        and all(isinstance(capabilities.get(key), Mapping | None) for key in _CAPABILITIES)
        and isinstance(result.get("resultType"), str)
        and isinstance(ttl, int)
        and not isinstance(ttl, bool)
        and result.get("cacheScope") in _CACHE_SCOPES
        and isinstance(result.get("instructions"), str | None)
    )


def _supported(data: Any) -> list[str] | None:
    """The versions a -32022 error names (None unless its data is as the schema says)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("requested"), str):
        return None
    supported = data.get("supported")
    if isinstance(supported, list) and all(isinstance(v, str) for v in supported):
        return supported
    return None


def _name(server: Any) -> str | None:
    name = server.get("name") if isinstance(server, Mapping) else None
    return name if isinstance(name, str) else None


def _object(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
