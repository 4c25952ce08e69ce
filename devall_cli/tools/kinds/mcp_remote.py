"""`type: mcp_remote`: an MCP server reached over HTTP(S) (SPEC.md §4)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from devall_cli.config.model import EMPTY, frozen_mapping
from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import (
    Checker,
    KeySpec,
    check_keys,
    describe,
    is_http_url,
    opt_number,
    opt_str,
    opt_str_map,
)
from devall_cli.config.yaml_source import KeyPath
from devall_cli.tools.kinds.client_settings import (
    CLIENT_KEYS,
    DEFAULT_CLIENT,
    McpClientConfig,
    client_shapes,
    parse_client_config,
    tool_sources_of,
)
from devall_cli.tools.kinds.oauth_settings import OAuthConfig, auth_shape, parse_auth
from devall_cli.tools.kinds.registry import TOOLING_TYPES, ToolingType, opt_cache_ttl
from devall_cli.tools.start_hints import remote_start_hint

if TYPE_CHECKING:
    from devall_cli.tools.base import ToolSource
    from devall_cli.tools.plan import SourceContext


@dataclass(frozen=True)
class McpRemoteConfig:
    """`tooling[].config` of `type: mcp_remote`."""

    server: str
    headers: Mapping[str, str] = EMPTY
    timeout: float = 10.0
    cache_ttl: float | None = None  # None: the server's cache hint, else 0
    tool_sources: tuple[str, ...] = ("mcp_tools",)
    auth: OAuthConfig | None = None  # OAuth 2.1 (oauth_settings); None: no authorization
    client: McpClientConfig = DEFAULT_CLIENT  # elicitation, sampling, roots, log_level

    def identity(self) -> tuple[Any, ...]:
        """Entries with the same identity share one client session per run."""
        auth = self.auth.identity() if self.auth is not None else None
        headers = tuple(sorted(self.headers.items()))
        return ("mcp_remote", self.server, headers, self.timeout, auth, self.client)

    def display_target(self) -> str:
        """The URL, as shown in tables and traces."""
        return self.server


_REMOTE_KEYS = KeySpec(
    known=frozenset({"server", "headers", "timeout", "cache_ttl", "tool_sources", "auth"})
    | CLIENT_KEYS
)


def parse_mcp_remote(ck: Checker, config: dict[str, Any], path: KeyPath) -> McpRemoteConfig | None:
    """`type: mcp_remote`: an MCP server reached over HTTP(S)."""
    check_keys(ck, config, path, _REMOTE_KEYS)
    server = opt_str(ck, config, "server", path, required=True)
    if server is not None and not is_http_url(server):
        ck.error(
            (*path, "server"),
            f"server must be an http:// or https:// URL, got {describe(server)}",
        )
        server = None
    headers = opt_str_map(ck, config, "headers", path, secret_names=True)
    timeout = opt_number(ck, config, "timeout", path, 10.0, positive=True)
    cache_ttl = opt_cache_ttl(ck, config, path)
    sources = tool_sources_of(ck, config, path)
    auth = _auth(ck, config, headers, path)
    client = parse_client_config(ck, config, path)
    if server is None or auth is _BAD_AUTH:
        return None
    ck.secret_url(server)
    return McpRemoteConfig(
        server=server.strip(),
        headers=frozen_mapping(headers),
        timeout=timeout,
        cache_ttl=cache_ttl,
        tool_sources=sources,
        auth=auth if isinstance(auth, OAuthConfig) else None,
        client=client,
    )


_BAD_AUTH = object()


def _auth(
    ck: Checker, config: dict[str, Any], headers: dict[str, str], path: KeyPath
) -> OAuthConfig | object | None:
    """The `auth:` mapping: None when absent, `_BAD_AUTH` after reporting its problems."""
    raw = config.get("auth")
    if raw is None or raw is UNRESOLVED:
        return None
    here = (*path, "auth")
    auth = parse_auth(ck, raw, here)
    if auth is None:
        return _BAD_AUTH
    if any(name.lower() == "authorization" for name in headers):
        ck.warning(here, "headers.Authorization is replaced by the OAuth access token", at_key=True)
    return auth


def make_remote_source(source_id: str, settings: McpRemoteConfig, ctx: SourceContext) -> ToolSource:
    """A session with a remote server (spoken to by the light client where it is enough)."""
    from devall_cli.tools.head_start import uses_direct_client
    from devall_cli.tools.mcp_remote import RemoteSource

    return RemoteSource(
        id=source_id,
        config=settings,
        store=ctx.store,
        on_log=ctx.on_log,
        on_auth=ctx.on_auth,
        reveal=ctx.reveal,
        interactive=ctx.interactive,
        events=ctx.events,
        elicitor=ctx.elicitor,
        client="direct" if uses_direct_client(ctx) else "fastmcp",
    )


def remote_name(settings: McpRemoteConfig) -> str:
    """`host:port` of the URL, as written in it."""
    parts = urlsplit(settings.server)
    host = parts.hostname or "remote"
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{host}:{port}" if port else host


TOOLING_TYPES.register(
    ToolingType(
        "mcp_remote",
        parse_mcp_remote,
        "an MCP server reached over HTTP(S)",
        keys=_REMOTE_KEYS,
        make_source=make_remote_source,
        base_name=remote_name,
        cache_ttl=lambda settings: settings.cache_ttl,
        roots=lambda settings: settings.client.roots,
        start_hint=remote_start_hint,
        shapes=lambda: {**client_shapes(), "auth": auth_shape()},
    )
)
