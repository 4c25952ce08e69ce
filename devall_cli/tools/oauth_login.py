"""`devall auth login` and `devall auth logout`: sign in to OAuth servers ahead of a run, or forget.

A login connects to the server the way a run would (the handshake meets the 401 and the OAuth
flow runs: browser, `none` or `fetch`), then keeps the tokens in the cache and disconnects.
A logout deletes cache files: those of a workflow's servers, of a URL, or all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from devall_cli.config.model import Workflow
from devall_cli.tools.base import AuthCallback
from devall_cli.tools.kinds.mcp_remote import McpRemoteConfig
from devall_cli.tools.kinds.oauth_settings import OAuthConfig
from devall_cli.tools.oauth_cache import TokenCache, cache_root
from devall_cli.tools.plan import plan_sources


@dataclass(frozen=True)
class AuthTarget:
    """One OAuth-protected server to sign in to: its source id and its config."""

    id: str
    config: McpRemoteConfig

    @property
    def auth(self) -> OAuthConfig:
        """The server's `auth:` settings."""
        assert self.config.auth is not None
        return self.config.auth


@dataclass(frozen=True)
class LoginResult:
    """What a login did (never a token)."""

    id: str
    server: str
    status: str  # authorized (a new authorization) | refreshed | cached (a token was at hand)
    scopes: str | None
    expires_at: float | None


def workflow_targets(workflow: Workflow, node: str | None = None) -> list[AuthTarget]:
    """The remote servers of a workflow (or of one node) that have `auth:`."""
    targets: list[AuthTarget] = []
    for plan in plan_sources(workflow).sources:
        config = plan.tooling.config
        if getattr(config, "auth", None) is None:  # only mcp_remote has `auth:`
            continue
        if node is None or any(path == node or path.endswith(f"/{node}") for path in plan.nodes):
            targets.append(AuthTarget(plan.id, cast(McpRemoteConfig, config)))
    return targets


def url_target(url: str, config: OAuthConfig, timeout: float = 30.0) -> AuthTarget:
    """A server given on the command line."""
    return AuthTarget("remote", McpRemoteConfig(server=url, timeout=timeout, auth=config))


async def login(
    target: AuthTarget, *, on_auth: AuthCallback, reveal: Callable[[str], None]
) -> LoginResult:
    """Connect once (which authorizes when needed), keep the tokens, disconnect."""
    from devall_cli.tools.mcp_remote import RemoteSource

    steps: list[str] = []

    def notice(source_id: str, note: object) -> None:
        steps.append(str(getattr(note, "step", "")))
        on_auth(source_id, note)  # type: ignore[arg-type]

    source = RemoteSource(id=target.id, config=target.config, on_auth=notice, reveal=reveal)
    try:
        await source.start()
        oauth = source.oauth()
        assert oauth is not None
        tokens = oauth.context.current_tokens
        expiry = oauth.context.token_expiry_time
    finally:
        await source.close()
    status = "authorized" if "authorized" in steps else "refreshed" if steps else "cached"
    return LoginResult(
        target.id,
        target.config.server,
        status,
        tokens.scope if tokens is not None else None,
        expiry,
    )


def logout(targets: list[AuthTarget]) -> list[str]:
    """Delete the cache files of these servers; the servers whose files were there."""
    from devall_cli.tools.oauth_client import cache_entry

    removed: list[str] = []
    for target in targets:
        if cache_entry(target.config.server, target.auth).remove():
            removed.append(target.config.server)
    return removed


def logout_url(url: str) -> list[str]:
    """Delete every cache file of a server URL (whatever its grant and client)."""
    cache = TokenCache(cache_root())
    paths = [login.path for login in cache.logins() if same_server(login.server, url)]
    cache.remove(paths)
    return [url] * len(paths)


def logout_all() -> list[Path]:
    """Delete every cache file; their paths."""
    cache = TokenCache(cache_root())
    paths = [login.path for login in cache.logins()]
    cache.remove(paths)
    return paths


def same_server(a: str, b: str) -> bool:
    """Whether two server URLs name the same endpoint (a trailing slash aside)."""
    return a.rstrip("/") == b.rstrip("/")
