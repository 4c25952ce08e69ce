"""Fixtures shared by the integration tests."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from devall_cli.tools.kinds.mcp_local import McpLocalConfig
from devall_cli.tools.mcp_local import LocalSource
from tests.helpers import direct_local_source
from tests.servers.serve import pid_gone

RAW = Path(__file__).resolve().parents[1] / "servers" / "raw_server.py"
Factory = Callable[..., LocalSource]


@pytest.fixture(params=[LocalSource, direct_local_source], ids=["fastmcp", "direct"])
async def raw(request: pytest.FixtureRequest) -> AsyncIterator[Factory]:
    """Sources on the raw server with the given flags, under both clients; closed (and gone) at
    the end. Keyword arguments go to the source (an elicitor, say)."""
    kind: type[LocalSource] = request.param
    made: list[LocalSource] = []

    def make(*flags: str, **kwargs: Any) -> LocalSource:
        config = McpLocalConfig(
            command=sys.executable,
            args=(str(RAW), *flags),
            wait_for_log="raw server ready",
            startup_timeout=20,
            call_timeout=10,
        )
        source = kind(id="raw", config=config, **kwargs)
        made.append(source)
        return source

    yield make
    for source in made:
        pid = source.pid
        await source.close()
        assert pid is None or pid_gone(pid)
