"""`devall auth login`, `devall auth logout` and `devall auth list`: the OAuth token cache."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from devall_cli.cli.app import app
from devall_cli.cli.common import (
    STATE,
    EnvFileOption,
    JsonOption,
    VarOption,
    error_boundary,
    load,
    print_json,
    print_line,
    run_async,
    shown,
    stderr_console,
    stdout_console,
)
from devall_cli.cli.targets import ServerNodeOption
from devall_cli.errors import UsageError

if TYPE_CHECKING:
    from devall_cli.tools.base import AuthNotice
    from devall_cli.tools.oauth_login import AuthTarget

auth_app = typer.Typer(
    help="Sign in to OAuth-protected MCP servers ahead of a run, and manage cached tokens.",
    no_args_is_help=True,
)
app.add_typer(auth_app, name="auth")

OptionalWorkflowArg = Annotated[
    Path | None,
    typer.Argument(metavar="[WORKFLOW]", help="Sign in to this workflow's OAuth servers."),
]
UrlOption = Annotated[
    str | None, typer.Option("--url", metavar="URL", help="A remote MCP server instead.")
]
def print_auth_notice(source_id: str, notice: AuthNotice) -> None:
    """An OAuth step on stderr: the URL to open is always shown (the command waits for it)."""
    console = stderr_console()
    mask = STATE.mask or (lambda text: text)
    if notice.step == "authorize":
        print_line(console, f"→ server {source_id}: {mask(notice.message)}:")
        if notice.url:
            print_line(console, f"  {notice.url}")
    else:
        print_line(console, f"· server {source_id}: {mask(notice.message)}")


def print_server_warning(source_id: str, text: str) -> None:
    """A server's warning on stderr, for a command that keeps no trace (tools list)."""
    mask = STATE.mask or (lambda text: text)
    print_line(stderr_console(), f"devall: warning: server '{source_id}': {mask(text)}")


def _one_target_kind(workflow: Path | None, url: str | None) -> None:
    if (workflow is None) == (url is None):
        raise UsageError("give a WORKFLOW or --url URL (one of them)")


@auth_app.command("login")
@error_boundary
def login_command(
    workflow: OptionalWorkflowArg = None,
    url: UrlOption = None,
    node: ServerNodeOption = None,
    scope: Annotated[
        list[str] | None,
        typer.Option("--scope", metavar="SCOPE", help="With --url: a scope to ask for."),
    ] = None,
    client_id: Annotated[
        str | None,
        typer.Option("--client-id", metavar="ID", help="With --url: a pre-registered client."),
    ] = None,
    client_metadata_url: Annotated[
        str | None,
        typer.Option("--client-metadata-url", metavar="URL", help="With --url: a CIMD URL."),
    ] = None,
    json_output: JsonOption = False,
    var: VarOption = None,
    env_file: EnvFileOption = None,
) -> None:
    """Authorize devall with each OAuth server (browser sign-in), keeping the tokens for runs.

    Servers whose cached token is still good (or can be refreshed) need no sign-in.
    DEVALL_OAUTH_BROWSER=none only prints the URL; =fetch visits it without a browser.
    """
    from devall_cli.tools import oauth_login

    _one_target_kind(workflow, url)
    reveal: Any = lambda secret: None  # noqa: E731
    if workflow is not None:
        loaded = load(workflow, var, env_file)
        reveal = loaded.redactor.add
        targets = oauth_login.workflow_targets(loaded, node)
        if not targets:
            raise UsageError(f"{workflow}: no mcp_remote server with auth: to sign in to")
    else:
        assert url is not None
        targets = [oauth_login.url_target(url, _adhoc_auth(scope, client_id, client_metadata_url))]

    async def go() -> list[Any]:
        return [
            await oauth_login.login(target, on_auth=print_auth_notice, reveal=reveal)
            for target in targets
        ]

    results = run_async(go())
    if json_output:
        print_json([_login_row(result) for result in results])
        return
    for result in results:
        scopes = f" (scopes: {result.scopes})" if result.scopes else ""
        said = {"cached": "already authorized (cached token)"}.get(result.status, result.status)
        print_line(stdout_console(), f"✓ {result.id} {result.server}: {said}{scopes}")


def _adhoc_auth(scope: list[str] | None, client_id: str | None, metadata_url: str | None) -> Any:
    from devall_cli.tools.kinds.oauth_settings import OAuthConfig

    if metadata_url is not None and not metadata_url.startswith("https://"):
        raise UsageError("--client-metadata-url must be an https:// URL")
    scopes = tuple(item for value in scope or [] for item in value.split())
    return OAuthConfig(client_id=client_id, client_metadata_url=metadata_url, scopes=scopes)


def _login_row(result: Any) -> dict[str, Any]:
    return {
        "server_id": result.id,
        "server": result.server,
        "status": result.status,
        "scopes": result.scopes,
        "expires_at": result.expires_at,
    }


@auth_app.command("logout")
@error_boundary
def logout_command(
    workflow: OptionalWorkflowArg = None,
    url: UrlOption = None,
    node: ServerNodeOption = None,
    all_servers: Annotated[
        bool, typer.Option("--all", help="Forget every cached token of every server.")
    ] = False,
    var: VarOption = None,
    env_file: EnvFileOption = None,
) -> None:
    """Delete the cached tokens (and registrations) of a workflow's servers, a URL, or all."""
    from devall_cli.tools import oauth_login

    if all_servers:
        if workflow is not None or url is not None:
            raise UsageError("--all takes no WORKFLOW nor --url")
        removed = len(oauth_login.logout_all())
    else:
        _one_target_kind(workflow, url)
        if workflow is not None:
            targets: list[AuthTarget] = oauth_login.workflow_targets(
                load(workflow, var, env_file), node
            )
            removed = len(oauth_login.logout(targets))
        else:
            assert url is not None
            removed = len(oauth_login.logout_url(url))
    noun = "login" if removed == 1 else "logins"
    print_line(stderr_console(), f"devall: removed {removed} cached {noun}")


@auth_app.command("list")
@error_boundary
def list_command(json_output: JsonOption = False) -> None:
    """The cached logins: server, grant, client, scopes, expiry (never a token)."""
    from devall_cli.tools.oauth_cache import TokenCache, cache_root

    logins = TokenCache(cache_root()).logins()
    rows: list[dict[str, Any]] = [
        {
            "server": login.server,
            "grant": login.grant,
            "client_id": login.client_id,
            "scopes": login.scopes,
            "expires_at": login.expires_at,
            "refreshable": login.refreshable,
            "dpop": login.dpop,
        }
        for login in logins
    ]
    if json_output:
        print_json(rows)
        return
    if not rows:
        print_line(stderr_console(), f"devall: no cached logins in {cache_root()}")
        return
    from rich.table import Table

    table = Table("server", "grant", "client", "scopes", "expires", "refresh", "DPoP")
    for row in rows:
        table.add_row(
            shown(row["server"]),
            shown(row["grant"]),
            shown(str(row["client_id"] or "")),
            shown(str(row["scopes"] or "")),
            shown(_expiry(row["expires_at"])),
            "yes" if row["refreshable"] else "no",
            "yes" if row["dpop"] else "no",
        )
    stdout_console().print(table)


def _expiry(when: float | None) -> str:
    if when is None:
        return "-"
    left = when - time.time()
    if left <= 0:
        return "expired"
    return f"in {int(left // 60)} min" if left >= 60 else f"in {int(left)} s"
