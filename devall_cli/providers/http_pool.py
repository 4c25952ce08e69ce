"""Model endpoints' httpx clients, reused from one run to the next on the same event loop.

A batch runs hundreds of tasks on one loop, each with its own providers. A new client per task
costs its construction (environment and proxy lookups, a transport, a pool) and a new TCP (and
TLS) connection per task: milliseconds of CPU each. One client shared by all would not do
either: httpcore scans every connection of a pool on each request, which grows with the
concurrency. So a client is lent to one endpoint at a time and given back when it is done
with it, its connections kept alive for the next borrower. A loop's idle clients close when the
last one is given back, unless the loop's pool is held (`held_pool()`, for a whole batch).
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # httpx is imported by the first client: holding a pool costs nothing
    import httpx

MAX_IDLE = 1024  # idle clients a held pool keeps (beyond that, a client given back closes)


@dataclass
class _Pool:
    idle: list[httpx.AsyncClient] = field(default_factory=list)
    lent: int = 0  # clients an endpoint holds
    holds: int = 0  # `held_pool()` blocks around the loop's runs


_POOLS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Pool] = (
    weakref.WeakKeyDictionary()
)


def _pool() -> _Pool:
    loop = asyncio.get_running_loop()
    pool = _POOLS.get(loop)
    if pool is None:
        pool = _POOLS[loop] = _Pool()
    return pool


def borrow(timeout: httpx.Timeout) -> httpx.AsyncClient:
    """A client for one endpoint alone until it is given back (`give_back`)."""
    pool = _pool()
    pool.lent += 1
    while pool.idle:
        client = pool.idle.pop()
        if not client.is_closed:
            return client
    import httpx

    from devall_cli.providers.http_client import shared_ssl_context

    # Requests pass their own timeout; this one only applies to what passes none.
    return httpx.AsyncClient(timeout=timeout, verify=shared_ssl_context())


async def give_back(client: httpx.AsyncClient) -> None:
    """The endpoint is done with `client`: kept for the next one while the pool is in use."""
    pool = _POOLS.get(asyncio.get_running_loop())
    if pool is None:
        await client.aclose()
        return
    pool.lent = max(0, pool.lent - 1)
    if client.is_closed or len(pool.idle) >= MAX_IDLE:
        await client.aclose()
    else:
        pool.idle.append(client)
    await _close_idle(pool)


@contextlib.asynccontextmanager
async def held_pool() -> AsyncIterator[None]:
    """Keep the loop's idle clients open for the block (a batch: from one task to the next)."""
    pool = _pool()
    pool.holds += 1
    try:
        yield
    finally:
        pool.holds -= 1
        await _close_idle(pool)


async def _close_idle(pool: _Pool) -> None:
    """Once no endpoint holds a client and no block holds the pool, close the idle ones."""
    if pool.lent or pool.holds:
        return
    idle, pool.idle = pool.idle, []
    for client in idle:
        await client.aclose()
