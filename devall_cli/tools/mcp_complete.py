"""`completion/complete`: the values a server suggests for a prompt argument or a template variable.

Only servers that declare the `completions` capability are asked. `complete` says so when a
server cannot (an error); `suggest` is for hints and shell completion: it never fails, a server
that cannot or will not answer suggests nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mcp import MCPError

from devall_cli.errors import DevallError, UsageError
from devall_cli.tools.mcp_extras import RequestRefusedError, Server, refused

RefKind = Literal["prompt", "template"]


@dataclass(frozen=True)
class Completion:
    """The server's suggestions for one argument, as `completion/complete` answered."""

    server: str
    values: tuple[str, ...]
    total: int | None = None
    has_more: bool = False


async def client_of(server: Server) -> Any:
    """The server's fastmcp Client, for requests that outlive one request's timeout (a watch)."""

    async def give(client: Any) -> Any:
        return client

    return await server.source.request(give)


async def capabilities(server: Server) -> Any:
    """The server's declared capabilities (`ServerCapabilities`), or None."""
    return (await client_of(server)).server_capabilities


async def offers_completions(server: Server) -> bool:
    """Whether the server declares the `completions` capability."""
    caps = await capabilities(server)
    return caps is not None and caps.completions is not None


async def complete(
    server: Server,
    kind: RefKind,
    ref: str,
    argument: str,
    prefix: str,
    context: Mapping[str, str] | None = None,
) -> Completion:
    """The server's suggestions for `argument` of prompt (or template) `ref`, starting `prefix`."""
    if not await offers_completions(server):
        raise RequestRefusedError(
            f"MCP server '{server.plan.id}' ({server.plan.target}) does not offer completions "
            "(it declares no `completions` capability)"
        )
    import mcp_types

    reference: Any = (
        mcp_types.PromptReference(type="ref/prompt", name=ref)
        if kind == "prompt"
        else mcp_types.ResourceTemplateReference(type="ref/resource", uri=ref)
    )
    given = dict(context or {})

    async def ask(client: Any) -> Any:
        return await client.complete_mcp(
            reference, {"name": argument, "value": prefix}, context_arguments=given or None
        )

    try:
        result = await server.source.request(ask)
    except MCPError as exc:
        raise refused(server, f"completion of '{argument}' of '{ref}'", exc) from exc
    found = result.completion
    values = tuple(str(value) for value in found.values)
    return Completion(server.plan.id, values, found.total, bool(found.has_more))


async def suggest(
    server: Server,
    kind: RefKind,
    ref: str,
    argument: str,
    prefix: str = "",
    context: Mapping[str, str] | None = None,
) -> tuple[str, ...]:
    """`complete`, quietly: nothing when the server cannot or will not suggest."""
    with contextlib.suppress(DevallError, MCPError):
        return (await complete(server, kind, ref, argument, prefix, context)).values
    return ()


def template_variables(uri: str) -> list[str] | None:
    """The variable names of `uri` if it is an RFC 6570 URI template, else None."""
    from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate

    if not UriTemplate.is_template(uri):
        return None
    try:
        return UriTemplate.parse(uri).variable_names
    except InvalidUriTemplate:
        return None


def expand_template(uri: str, values: Mapping[str, str]) -> str:
    """`uri` with its variables filled in (RFC 6570 expansion: values are percent-encoded)."""
    from mcp.shared.uri_template import UriTemplate

    return UriTemplate.parse(uri).expand(dict(values))


def hint(values: tuple[str, ...], most: int = 10) -> str:
    """` (the server suggests: a, b, ...)` for an error message, or nothing."""
    if not values:
        return ""
    shown = ", ".join(values[:most]) + (", ..." if len(values) > most else "")
    return f" (the server suggests: {shown})"


async def complete_prompt_argument(
    servers: list[Server], prompt: str, argument: str, prefix: str, context: Mapping[str, str]
) -> Completion:
    """The suggestions for `argument` of prompt `prompt` (which a server of `servers` lists)."""
    from devall_cli.tools.mcp_extras import argument_names, find_prompt

    server, row = await find_prompt(servers, prompt)
    names = argument_names(row)
    if argument not in names:
        known = ", ".join(names) or "none"
        raise UsageError(f"prompt '{prompt}' has no argument '{argument}' (arguments: {known})")
    return await complete(server, "prompt", prompt, argument, prefix, context)


async def complete_template_variable(
    servers: list[Server], uri: str, variable: str, prefix: str, context: Mapping[str, str]
) -> Completion:
    """The suggestions for `variable` of resource template `uri`."""
    names = template_variables(uri)
    if names is None:
        raise UsageError(f"--complete needs a resource template URI ('{uri}' has no {{variable}})")
    if variable not in names:
        raise UsageError(f"'{uri}' has no variable '{variable}' (variables: {', '.join(names)})")
    server = await template_server(servers, uri)
    return await complete(server, "template", uri, variable, prefix, context)


async def template_server(servers: list[Server], uri: str) -> Server:
    """The server that lists resource template `uri` (or the only server there is)."""
    from devall_cli.tools.mcp_extras import list_items

    if len(servers) == 1:
        return servers[0]
    listed = await list_items(servers, "templates")
    owners = sorted({row["server"] for row in listed.rows if row.get("uriTemplate") == uri})
    if len(owners) != 1:
        which = f"several servers ({', '.join(owners)})" if owners else "no server"
        raise UsageError(f"resource template '{uri}' is on {which}; choose one with --node")
    return next(s for s in servers if s.plan.id == owners[0])


async def fill_template(servers: list[Server], uri: str, values: Mapping[str, str]) -> str:
    """`uri` as it is read: a resource template gets its variables from `values` (`--arg`)."""
    names = template_variables(uri)
    if names is None:
        if values:
            raise UsageError(f"--arg fills in a resource template; '{uri}' has no {{variable}}")
        return uri
    unknown = [name for name in values if name not in names]
    if unknown:
        raise UsageError(f"'{uri}' has no variable '{unknown[0]}' (variables: {', '.join(names)})")
    missing = [name for name in names if name not in values]
    if missing:
        found: tuple[str, ...] = ()
        with contextlib.suppress(DevallError):
            server = await template_server(servers, uri)
            found = await suggest(server, "template", uri, missing[0], "", values)
        raise UsageError(
            f"'{uri}' is a resource template: give --arg {missing[0]}=VALUE" + hint(found)
        )
    return expand_template(uri, values)
