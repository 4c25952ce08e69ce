"""A local server's start-up time is its own whole start: from its spawn, beside other servers."""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from devall_cli.config.model import ToolingConfig
from devall_cli.tools import probe
from devall_cli.tools.head_start import new_local_process
from devall_cli.tools.kinds.mcp_local import McpLocalConfig
from devall_cli.tools.kinds.mcp_remote import McpRemoteConfig
from devall_cli.tools.plan import SourceContext, SourcePlan
from tests.helpers import direct_local_source
from tests.servers.serve import free_port

SERVERS = Path(__file__).resolve().parents[1] / "servers"
SLEEP = 0.6  # how long slow_start_server.py warms up


def slow_server() -> McpLocalConfig:
    return McpLocalConfig(
        command=sys.executable, args=(str(SERVERS / "slow_start_server.py"), str(SLEEP))
    )


async def test_connect_time_of_a_server_spawned_ahead_counts_from_its_spawn() -> None:
    # As a run does: spawned first, then devall imports its client while the server warms up,
    # and shakes hands once the server is ready. The time shown is the whole start-up.
    config = slow_server()
    process = new_local_process("slow", config, SourceContext())
    assert process is not None
    await process.spawn()
    source = direct_local_source(id="slow", config=config, process=process)
    try:
        await asyncio.sleep(SLEEP)  # devall busy elsewhere meanwhile
        info = await source.start()
    finally:
        await source.close()
    assert info.connect_ms >= SLEEP * 1000


async def test_a_remote_server_probed_beside_a_local_one_does_not_hold_up_its_handshake(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Building a remote source imports its client stack: a second of CPU or more. Built on the
    # event loop, it held up the local server's handshake, whose connect time then counted it.
    loop_ran = threading.Event()
    released: list[bool] = []
    build = probe.build_source

    def slow_build(plan: SourcePlan, ctx: SourceContext) -> Any:
        if plan.kind == "mcp_remote":  # only the loop can release it: on the loop, it waits 5 s
            released.append(loop_ran.wait(timeout=5))
        return build(plan, ctx)

    async def run_the_loop() -> None:
        await asyncio.sleep(0.05)
        loop_ran.set()

    monkeypatch.setattr(probe, "build_source", slow_build)
    url = f"http://127.0.0.1:{free_port()}/mcp"  # nothing listens: a quick `unreachable`
    remote = ToolingConfig(type="mcp_remote", config=McpRemoteConfig(server=url, timeout=1))
    local = ToolingConfig(
        type="mcp_local",
        config=McpLocalConfig(command=sys.executable, args=(str(SERVERS / "raw_server.py"),)),
    )
    targets = [
        SourcePlan("web", "mcp_remote", remote, ["a"]),
        SourcePlan("loc", "mcp_local", local, ["a"]),
    ]
    reports, _ = await asyncio.gather(probe.probe_servers(targets, timeout=20), run_the_loop())
    assert released == [True], "the remote source was built on the event loop"
    assert {r.id: r.status for r in reports} == {"web": "unreachable", "loc": "ok"}
