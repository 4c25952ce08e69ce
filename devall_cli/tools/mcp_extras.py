"""Resources and prompts of a workflow's MCP servers (`devall resources ...`, `devall prompts ...`).

The servers are the MCP sources of the selected nodes, each started once; every request goes
through the source's session (`McpSessionSource.request`). Listings follow `nextCursor` to the
end; a server that does not offer resources or prompts lists none (and is named in `missing`).
Contents are normalized like tool results: text as text, binary contents saved as attachments.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp import MCPError

from devall_cli import limits
from devall_cli.config.model import Workflow
from devall_cli.errors import DevallError, ExitCode, UsageError
from devall_cli.tools.base import Block
from devall_cli.tools.catalog import tool_nodes
from devall_cli.tools.normalize import cap_blocks, normalize_result
from devall_cli.tools.plan import (
    SourceContext,
    SourcePlan,
    build_source,
    plan_sources,
    tooling_type,
)

Listing = Literal["resources", "templates", "prompts"]
METHOD_NOT_FOUND = -32601
MAX_PAGES = 100  # a server whose cursor never ends stops here


class RequestRefusedError(DevallError):
    """A server answered a resources or prompts request with an error."""

    exit_code = ExitCode.FAILED


@dataclass
class Server:
    """One started MCP server of the selection."""

    plan: SourcePlan
    source: Any  # an McpSessionSource


@dataclass
class Listed:
    """Rows of a listing (MCP's own fields plus `server`), and the servers that offer none."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Contents:
    """What `resources read` or `prompts get` returns: where from, and the normalized blocks."""

    server: str
    blocks: tuple[Block, ...]
    roles: tuple[str, ...] = ()  # prompts: the role of each block's message
    description: str | None = None


@contextlib.asynccontextmanager
async def open_servers(
    workflow: Workflow, node: str | None, ctx: SourceContext
) -> AsyncIterator[list[Server]]:
    """Start the MCP servers of the selected nodes concurrently; close them on the way out."""
    nodes = set(tool_nodes(workflow, node))
    plans = [
        p
        for p in plan_sources(workflow).sources
        if tooling_type(p.tooling).is_server and set(p.nodes) & nodes
    ]
    if not plans:
        raise UsageError("no MCP server in the selection (function tooling has none)")
    servers = [Server(plan, build_source(plan, ctx)) for plan in plans]
    try:
        await asyncio.gather(*(s.source.start() for s in servers))
        yield servers
    finally:
        await asyncio.gather(*(_close(s.source) for s in servers))


async def _close(source: Any) -> None:
    with contextlib.suppress(Exception):
        await source.close()


async def list_items(servers: list[Server], what: Listing) -> Listed:
    """Every resource, template or prompt of every server, in server order."""
    pages = await asyncio.gather(*(_list_one(s, what) for s in servers))
    listed = Listed()
    for server, rows in zip(servers, pages, strict=True):
        if rows is None:
            listed.missing.append(server.plan.id)
        else:
            listed.rows += [{"server": server.plan.id, **row} for row in rows]
    return listed


async def _list_one(server: Server, what: Listing) -> list[dict[str, Any]] | None:
    field_name = {"resources": "resources", "templates": "resourceTemplates", "prompts": "prompts"}
    rows: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        try:
            page = await server.source.request(_lister(what, cursor))
        except MCPError as exc:
            if exc.code == METHOD_NOT_FOUND:
                return None
            raise refused(server, f"{_method(what)} failed", exc) from exc
        data = page.model_dump(mode="json", by_alias=True, exclude_none=True)
        rows += list(data.get(field_name[what], []))
        cursor = data.get("nextCursor")
        if not cursor:
            break
    return rows


def _lister(what: Listing, cursor: str | None) -> Callable[[Any], Awaitable[Any]]:
    def call(client: Any) -> Awaitable[Any]:
        if what == "resources":
            return client.list_resources_mcp(cursor=cursor)  # type: ignore[no-any-return]
        if what == "templates":
            return client.list_resource_templates_mcp(cursor=cursor)  # type: ignore[no-any-return]
        return client.list_prompts_mcp(cursor=cursor)  # type: ignore[no-any-return]

    return call


def _method(what: Listing) -> str:
    return {"resources": "resources/list", "templates": "resources/templates/list"}.get(
        what, "prompts/list"
    )


def refused(server: Server, what: str, exc: MCPError) -> RequestRefusedError:
    return RequestRefusedError(
        f"MCP server '{server.plan.id}' ({server.plan.target}): {what}: {exc.message}"
    )


async def read_resource(servers: list[Server], uri: str, store: Any) -> Contents:
    """Read `uri` on the one server that lists it (or the only server, or the first that can)."""
    candidates = servers
    if len(servers) > 1:
        listed = await list_items(servers, "resources")
        owners = {row["server"] for row in listed.rows if row.get("uri") == uri}
        if len(owners) > 1:
            raise UsageError(
                f"resource '{uri}' is on several servers ({', '.join(sorted(owners))}); "
                "choose one with --node"
            )
        candidates = [s for s in servers if s.plan.id in owners] or servers
    first: RequestRefusedError | None = None
    for server in candidates:
        try:
            result = await server.source.request(lambda client: client.read_resource_mcp(uri))
        except MCPError as exc:
            first = first or refused(server, f"cannot read '{uri}'", exc)
            continue
        content = [{"type": "resource", "resource": item} for item in result.contents]
        blocks = normalize_result(
            {"content": content}, tool_name="resource", store=store, source="mcp_resource"
        )
        return Contents(server.plan.id, cap_blocks(blocks, limits.TOOL_RESULT_CHARS))
    assert first is not None
    raise first


async def find_prompt(servers: list[Server], name: str) -> tuple[Server, dict[str, Any]]:
    """The server that lists prompt `name`, and the prompt as listed."""
    listed = await list_items(servers, "prompts")
    owners = [(s, r) for s in servers for r in listed.rows
              if r["server"] == s.plan.id and r["name"] == name]
    if not owners:
        known = ", ".join(sorted({str(r["name"]) for r in listed.rows})) or "none"
        raise UsageError(f"no prompt '{name}' (prompts: {known})")
    if len(owners) > 1:
        names = ", ".join(s.plan.id for s, _ in owners)
        raise UsageError(f"prompt '{name}' is on several servers ({names}); choose one with --node")
    return owners[0]


def argument_names(prompt: Mapping[str, Any], required: bool = False) -> list[str]:
    """The names of a listed prompt's arguments (only the required ones, if asked)."""
    return [
        str(a.get("name")) for a in prompt.get("arguments") or []
        if not required or a.get("required")
    ]


async def get_prompt(
    servers: list[Server], name: str, arguments: Mapping[str, Any], store: Any
) -> Contents:
    """The messages of prompt `name`, from the server that lists it."""
    from devall_cli.tools.mcp_complete import hint, suggest

    server, prompt = await find_prompt(servers, name)
    # Prompt arguments are text in MCP: other JSON values are sent as their JSON text.
    texts = {k: v if isinstance(v, str) else json.dumps(v) for k, v in arguments.items()}
    missing = [a for a in argument_names(prompt, required=True) if a not in texts]
    if missing:
        values = await suggest(server, "prompt", name, missing[0], "", texts)
        raise UsageError(
            f"prompt '{name}' needs argument '{missing[0]}': give --arg {missing[0]}=VALUE"
            + hint(values)
        )
    try:
        result = await server.source.request(lambda client: client.get_prompt_mcp(name, texts))
    except MCPError as exc:
        raise refused(server, f"prompt '{name}'", exc) from exc
    blocks: list[Block] = []
    roles: list[str] = []
    for message in result.messages:
        content = {"content": [message.content]}
        for block in normalize_result(content, tool_name=name, store=store, source="mcp_prompt"):
            blocks.append(block)
            roles.append(str(message.role))
    return Contents(server.plan.id, tuple(blocks), tuple(roles), result.description)
