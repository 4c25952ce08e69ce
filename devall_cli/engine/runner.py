"""Run a workflow end to end: tools up, graph run, everything closed, `run.*` events emitted."""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Protocol

from devall_cli.config.model import AgentConfig, NodeConfig, Workflow
from devall_cli.engine.events import EventBus, RunFinishedEvent, RunStartedEvent
from devall_cli.engine.graph import GraphOutcome, run_graph
from devall_cli.engine.nodes import NodeContext, ToolDispatcher, run_node
from devall_cli.engine.recorder import RunRecorder, RunResult
from devall_cli.errors import DevallError, ExitCode, RunFailedError
from devall_cli.providers.base import Provider
from devall_cli.redaction import Redactor

__all__ = ["RunResult", "ToolManagerLike", "new_run_id", "run_workflow"]


class ToolManagerLike(ToolDispatcher, Protocol):
    """The ToolManager as the runner uses it: start, dispatch, close."""

    async def start(self) -> None:
        """Start every server the workflow needs (fail fast)."""
        ...

    async def close(self) -> None:
        """Stop every server (idempotent)."""
        ...


ToolManagerFactory = Callable[..., ToolManagerLike]
ProviderMaker = Callable[..., Provider]


def default_tool_manager(
    workflow: Workflow, *, run_id: str, run_dir: Path | None, bus: EventBus | None
) -> ToolManagerLike:
    """The real ToolManager (imported here: it brings the MCP client along)."""
    from devall_cli.tools.manager import ToolManager

    manager: ToolManagerLike = ToolManager(workflow, run_id=run_id, run_dir=run_dir, bus=bus)
    return manager


def new_run_id(workflow: Workflow | str, *, now: datetime | None = None) -> str:
    """`<graph-id or name>-YYYYmmdd-HHMMSS-<4 hex>`, safe as a directory name."""
    label = workflow if isinstance(workflow, str) else workflow.name
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-.") or "run"
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    return f"{name}-{stamp}-{secrets.token_hex(2)}"


async def run_workflow(
    workflow: Workflow,
    *,
    task: str,
    run_id: str,
    run_dir: Path,
    bus: EventBus,
    tool_manager_factory: ToolManagerFactory = default_tool_manager,
    provider_factory: ProviderMaker | None = None,
    environ: Mapping[str, str] | None = None,
    interrupt_code: Callable[[], int] = lambda: ExitCode.INTERRUPTED,
) -> RunResult:
    """Run the workflow on `task`; the result on success, a DevallError on failure.

    `run.finished` is emitted in every case (also on failure and Ctrl-C), so sinks such as the
    result.json writer see failed runs too; the ToolManager and the providers are always closed.
    Cancellation is re-raised after `run.finished` with status `interrupted` and the exit code
    `interrupt_code()` gives (130 for Ctrl-C, 143 when the caller saw SIGTERM).
    """
    recorder = RunRecorder()
    bus.subscribe(recorder)
    try:
        started = time.monotonic()
        bus.emit(RunStartedEvent(run_id=run_id, workflow=workflow.name, task=task))
        make = _provider_maker(provider_factory, environ, workflow.redactor)
        try:
            outcome = await _run(workflow, task, run_id, run_dir, bus, tool_manager_factory, make)
        except (asyncio.CancelledError, KeyboardInterrupt):
            code = interrupt_code()
            _finish(bus, run_id, started, "interrupted", "interrupted", code)
            raise
        except DevallError as exc:
            _finish(bus, run_id, started, "failed", exc.message, exc.exit_code)
            raise
        except Exception as exc:
            _finish(bus, run_id, started, "failed", f"{type(exc).__name__}: {exc}")
            raise
        bus.emit(
            RunFinishedEvent(
                run_id=run_id, status="ok", output=outcome.output, duration_ms=_ms(started)
            )
        )
        return recorder.result()
    finally:
        bus.unsubscribe(recorder)


async def _run(
    workflow: Workflow,
    task: str,
    run_id: str,
    run_dir: Path,
    bus: EventBus,
    tool_manager_factory: ToolManagerFactory,
    make_provider: Callable[[AgentConfig], Provider],
) -> GraphOutcome:
    manager = tool_manager_factory(workflow, run_id=run_id, run_dir=run_dir, bus=bus)
    try:
        await manager.start()
        ctx = NodeContext(run_id=run_id, bus=bus, tools=manager, make_provider=make_provider)

        async def execute(node: NodeConfig, inputs: list[str]) -> str:
            try:
                return await run_node(node, inputs, ctx)
            except DevallError:
                raise  # infrastructure errors keep their class and exit code
            except Exception as exc:
                raise RunFailedError(
                    f"node '{node.id}' failed: {type(exc).__name__}: {exc}"
                ) from exc

        outcome = await run_graph(
            workflow.graph, task=task, execute=execute, bus=bus, run_id=run_id
        )
    except BaseException:
        # The error that stopped the run matters more than one raised while closing.
        with contextlib.suppress(Exception):
            await manager.close()
        raise
    await manager.close()
    return outcome


def _provider_maker(
    factory: ProviderMaker | None, environ: Mapping[str, str] | None, redactor: Redactor
) -> Callable[[AgentConfig], Provider]:
    if factory is None:
        from devall_cli.providers import make_provider

        factory = make_provider

    def make(config: AgentConfig) -> Provider:
        return factory(config, environ=environ, redactor=redactor)

    return make


def _finish(
    bus: EventBus,
    run_id: str,
    started: float,
    status: str,
    error: str,
    code: int = ExitCode.FAILED,
) -> None:
    bus.emit(
        RunFinishedEvent(
            run_id=run_id,
            status=status,
            duration_ms=_ms(started),
            error=error,
            exit_code=int(code),
        )
    )


def _ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 3)
