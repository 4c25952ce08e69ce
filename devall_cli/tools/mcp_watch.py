"""Resource subscriptions (`devall resources watch`): each update of the watched URIs, as it comes.

A server must declare `resources.subscribe`. At 2026-07-28 one `subscriptions/listen` stream
per server carries the updates (the SDK's `listen`); older protocols subscribe each URI with
`resources/subscribe`, hear `notifications/resources/updated`, and `resources/unsubscribe`
at the end, however the watch ends (its time is up, Ctrl-C, an error).
"""

from __future__ import annotations

import asyncio
import contextlib
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mcp import MCPError

from devall_cli.errors import ServerDiedError, UsageError
from devall_cli.tools.mcp_complete import capabilities, client_of
from devall_cli.tools.mcp_extras import (
    Contents,
    RequestRefusedError,
    Server,
    list_items,
    read_resource,
    refused,
)

UNSUBSCRIBE_SECONDS = 2.0  # at the end, the most an unsubscribe may take


@dataclass(frozen=True)
class Update:
    """One `notifications/resources/updated`: when, from which server, which URI (and what now)."""

    time: datetime
    server: str
    uri: str
    contents: Contents | None = None


OnUpdate = Callable[[Update], None]
Emit = Callable[[str], Awaitable[None]]
OnNote = Callable[[str], None]


async def watch_resources(
    servers: list[Server],
    uris: list[str],
    on_update: OnUpdate,
    *,
    seconds: float | None = None,
    read: bool = False,
    store: Any = None,
    on_note: OnNote = lambda line: None,
) -> None:
    """Report each update of `uris` until `seconds` pass (None: until cancelled) or every
    server ends its subscription."""
    by_server = await _owners(servers, uris)
    for server, _ in by_server:
        await _check_subscribe(server)

    async def one(server: Server, watched: list[str]) -> None:
        async def emit(uri: str) -> None:
            heard = datetime.now(UTC)
            contents = await read_resource([server], uri, store) if read else None
            on_update(Update(heard, server.plan.id, uri, contents))

        await _watch_one(server, watched, emit)
        on_note(f"server '{server.plan.id}' ended the subscription")

    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            try:
                async with asyncio.TaskGroup() as group:
                    for server, watched in by_server:
                        group.create_task(one(server, watched))
            except ExceptionGroup as failed:  # the first server's failure, as it was raised
                raise failed.exceptions[0] from None


async def _owners(servers: list[Server], uris: list[str]) -> list[tuple[Server, list[str]]]:
    """Which server each URI is watched on: the only one, else the one that lists it."""
    if len(servers) == 1:
        return [(servers[0], list(dict.fromkeys(uris)))]
    listed = await list_items(servers, "resources")
    by_id: dict[str, list[str]] = {}
    for uri in dict.fromkeys(uris):
        owners = sorted({row["server"] for row in listed.rows if row.get("uri") == uri})
        if len(owners) != 1:
            which = f"several servers ({', '.join(owners)})" if owners else "no server"
            raise UsageError(f"resource '{uri}' is listed by {which}; choose one with --node")
        by_id.setdefault(owners[0], []).append(uri)
    return [(s, by_id[s.plan.id]) for s in servers if s.plan.id in by_id]


async def _check_subscribe(server: Server) -> None:
    caps = await capabilities(server)
    resources = caps.resources if caps is not None else None
    if resources is None or not resources.subscribe:
        raise RequestRefusedError(
            f"MCP server '{server.plan.id}' ({server.plan.target}) does not offer resource "
            "subscriptions (its `resources` capability has no `subscribe`)"
        )


async def _watch_one(server: Server, uris: list[str], emit: Emit) -> None:
    """Until the server ends it (or the caller cancels): the modern stream, or the older way."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    client = await client_of(server)
    if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
        await _listen(server, client, uris, emit)
    else:
        await _subscribe(server, uris, emit)


async def _listen(server: Server, client: Any, uris: list[str], emit: Emit) -> None:
    """One `subscriptions/listen` stream for the URIs; leaving the block ends it."""
    from mcp.client.subscriptions import ResourceUpdated, SubscriptionLost, listen

    try:
        async with listen(client.session, resource_subscriptions=uris) as stream:
            honored = set(stream.honored.resource_subscriptions or ())
            refused_uris = [uri for uri in uris if uri not in honored]
            if refused_uris:
                raise RequestRefusedError(
                    f"MCP server '{server.plan.id}' ({server.plan.target}) will not report "
                    f"updates of {', '.join(refused_uris)}"
                )
            async for event in stream:
                if isinstance(event, ResourceUpdated):
                    await emit(event.uri)
    except MCPError as exc:
        raise refused(server, "subscriptions/listen", exc) from exc
    except SubscriptionLost as exc:
        raise ServerDiedError(
            f"MCP server '{server.plan.id}' ({server.plan.target}): the subscription was lost"
        ) from exc


async def _subscribe(server: Server, uris: list[str], emit: Emit) -> None:
    """`resources/subscribe` each URI, report the updates, `resources/unsubscribe` at the end."""
    queue: asyncio.Queue[str] = asyncio.Queue()
    requests = server.source.requests
    requests.on_resource_updated = queue.put_nowait
    subscribed: list[str] = []
    try:
        for uri in uris:
            await _send(server, "subscribe", uri)
            subscribed.append(uri)
        while True:
            await emit(await queue.get())
    finally:
        requests.on_resource_updated = None
        for uri in subscribed:  # also when cancelled: the server should stop sending
            with contextlib.suppress(Exception):
                async with asyncio.timeout(UNSUBSCRIBE_SECONDS):
                    await _send(server, "unsubscribe", uri)


async def _send(server: Server, what: str, uri: str) -> None:
    async def request(client: Any) -> Any:
        with warnings.catch_warnings():  # the SDK warns that 2026-07-28 dropped the method
            warnings.simplefilter("ignore")
            return await getattr(client.session, f"{what}_resource")(uri)

    try:
        await server.source.request(request)
    except MCPError as exc:
        raise refused(server, f"resources/{what} '{uri}'", exc) from exc
