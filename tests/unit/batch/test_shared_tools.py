"""The batch's server pool: one start per distinct config, shared by every task, closed once.

The servers are stand-ins of a tooling type registered by this module (a ToolSource that counts
its starts and calls); the real servers are shared end to end in tests/cli/test_batch_cli.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from devall_cli.batch.shared_tools import TASK_STORE, SharedSources
from devall_cli.config.model import ToolingConfig
from devall_cli.tools.attachments import AttachmentStore
from devall_cli.tools.base import RawTool, ServerInfo, ToolResult
from devall_cli.tools.kinds import registry as tooling_registry
from devall_cli.tools.plan import SourceContext, SourcePlan


@dataclass(frozen=True)
class StubConfig:
    name: str
    fail_starts: int = 0  # the first N starts fail
    start_delay: float = 0.05

    def identity(self) -> tuple[Any, ...]:
        return ("stub", self.name)

    def display_target(self) -> str:
        return f"stub {self.name}"


class StubSource:
    kind = "stub_server"
    starts: dict[str, int] = {}  # noqa: RUF012  # per config name, across instances
    closed: list[str] = []  # noqa: RUF012

    def __init__(self, source_id: str, config: StubConfig, ctx: SourceContext) -> None:
        self.id, self.config, self.ctx = source_id, config, ctx
        self.target = config.display_target()

    async def start(self) -> ServerInfo:
        count = StubSource.starts.get(self.config.name, 0) + 1
        StubSource.starts[self.config.name] = count
        await asyncio.sleep(self.config.start_delay)
        if count <= self.config.fail_starts:
            raise ConnectionError(f"start {count} of {self.config.name} failed")
        return ServerInfo(server_name=self.config.name)

    async def list_tools(self) -> list[RawTool]:
        return [RawTool("save")]

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], *, context: Any = None
    ) -> ToolResult:
        block = self.ctx.store.save(b"data", tool_name=name, kind="file", mime_type="text/plain")
        return ToolResult((block,))

    async def close(self) -> None:
        StubSource.closed.append(self.id)


@pytest.fixture(autouse=True)
def stub_type() -> Iterator[None]:
    StubSource.starts, StubSource.closed = {}, []
    tooling_registry.TOOLING_TYPES.register(
        tooling_registry.ToolingType(
            "stub_server",
            parse=lambda ck, raw, path: None,
            make_source=lambda source_id, config, ctx: StubSource(source_id, config, ctx),
        )
    )
    yield
    tooling_registry.TOOLING_TYPES.unregister("stub_server")


def plan(name: str, source_id: str = "stub", **settings: Any) -> SourcePlan:
    tooling = ToolingConfig("stub_server", StubConfig(name, **settings))
    return SourcePlan(source_id, "stub_server", tooling)


async def test_concurrent_tasks_wait_for_one_start_and_share_the_server(tmp_path: Path) -> None:
    pool = SharedSources(tmp_path)
    handles = [pool.make_source(plan("a"), SourceContext()) for _ in range(5)]
    handles.append(pool.make_source(plan("b", source_id="stub"), SourceContext()))
    infos = await asyncio.gather(*(h.start() for h in handles))
    assert [i.server_name for i in infos] == ["a"] * 5 + ["b"]
    assert StubSource.starts == {"a": 1, "b": 1}
    # Two configs that a task named alike get distinct batch-wide ids (their log files).
    assert sorted(pool.servers) == ["stub", "stub-2"]
    for handle in handles:
        await handle.close()  # a task's close leaves the shared server running
    assert StubSource.closed == []
    await pool.close()
    assert sorted(StubSource.closed) == ["stub", "stub-2"]


async def test_a_failed_start_fails_its_waiters_and_the_next_task_tries_again(
    tmp_path: Path,
) -> None:
    pool = SharedSources(tmp_path)
    first = [pool.make_source(plan("a", fail_starts=1), SourceContext()) for _ in range(3)]
    outcomes = await asyncio.gather(*(h.start() for h in first), return_exceptions=True)
    assert all(isinstance(o, ConnectionError) for o in outcomes)
    assert StubSource.starts == {"a": 1} and StubSource.closed == ["stub"]
    later = pool.make_source(plan("a", fail_starts=1), SourceContext())
    assert (await later.start()).server_name == "a"
    assert StubSource.starts == {"a": 2}
    await pool.close()


async def test_a_cancelled_task_does_not_cancel_the_start_others_wait_for(tmp_path: Path) -> None:
    pool = SharedSources(tmp_path)
    slow = plan("a", start_delay=0.2)
    quitter = asyncio.create_task(pool.make_source(slow, SourceContext()).start())
    stayer = asyncio.create_task(pool.make_source(slow, SourceContext()).start())
    await asyncio.sleep(0.05)
    quitter.cancel()
    assert (await stayer).server_name == "a"
    assert quitter.cancelled() and StubSource.starts == {"a": 1}
    await pool.close()


async def test_results_are_saved_in_the_calling_tasks_run_directory(tmp_path: Path) -> None:
    pool = SharedSources(tmp_path)

    async def task(name: str) -> str:
        TASK_STORE.set(AttachmentStore(tmp_path / name))
        handle = pool.make_source(plan("a"), SourceContext())
        await handle.start()
        result = await handle.call_tool("save", {})
        return str(getattr(result.blocks[0], "path", ""))

    paths = await asyncio.gather(*(asyncio.create_task(task(n)) for n in ("t1", "t2")))
    assert paths == ["attachments/save_file_1.txt"] * 2
    assert (tmp_path / "t1" / "attachments" / "save_file_1.txt").read_bytes() == b"data"
    assert (tmp_path / "t2" / "attachments" / "save_file_1.txt").read_bytes() == b"data"
    await pool.close()


async def test_tooling_without_a_server_stays_the_tasks_own(tmp_path: Path) -> None:
    pool = SharedSources(tmp_path)
    tooling_registry.TOOLING_TYPES.register(
        tooling_registry.ToolingType(
            "stub_server",
            parse=lambda ck, raw, path: None,
            make_source=lambda source_id, config, ctx: StubSource(source_id, config, ctx),
            is_server=False,
        )
    )
    own = pool.make_source(plan("a"), SourceContext(run_dir=tmp_path / "task"))
    assert isinstance(own, StubSource) and own.ctx.run_dir == tmp_path / "task"
