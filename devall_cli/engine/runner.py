"""Run a workflow end to end: tools up, graph run, everything closed, `run.*` events emitted."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from devall_cli.cassette import Tape, use_tape
from devall_cli.config.model import Workflow
from devall_cli.config.pricing import PriceTable
from devall_cli.engine.budget import BudgetMeter, MeteredProvider
from devall_cli.engine.graph import (
    DEFAULT_MAX_STEPS,
    GraphOutcome,
    GraphRun,
    ProviderFactory,
    RunEnv,
)
from devall_cli.engine.graph_shape import shape_of
from devall_cli.engine.tool_events import BusToolEvents
from devall_cli.errors import BudgetError, DevallError, ExitCode
from devall_cli.events import EventBus, RunFinishedEvent, RunStartedEvent
from devall_cli.graphview.shape import to_dict
from devall_cli.memory.bank import MemoryContext
from devall_cli.messages import task_messages
from devall_cli.nodes.agent_settings import AgentConfig
from devall_cli.nodes.base import ToolDispatcher
from devall_cli.providers.base import Provider
from devall_cli.redaction import Redactor
from devall_cli.run_files import new_run_id
from devall_cli.tools.base import ToolEvents
from devall_cli.trace.recorder import RunResult

if TYPE_CHECKING:
    from devall_cli.engine.session import RunSession

__all__ = ["DEFAULT_MAX_STEPS", "RunResult", "ToolManagerLike", "new_run_id", "run_workflow"]


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
    workflow: Workflow,
    *,
    run_id: str,
    run_dir: Path | None,
    events: ToolEvents | None,
    tape: Tape | None = None,
) -> ToolManagerLike:
    """The real ToolManager (imported here: it brings the MCP client along)."""
    from devall_cli.tools.manager import ToolManager

    manager: ToolManagerLike = ToolManager(
        workflow, run_id=run_id, run_dir=run_dir, events=events, tape=tape
    )
    return manager


async def run_workflow(
    session: RunSession,
    *,
    task: str,
    tool_manager_factory: ToolManagerFactory = default_tool_manager,
    provider_factory: ProviderMaker | None = None,
    environ: Mapping[str, str] | None = None,
    interrupt_code: Callable[[], int] = lambda: ExitCode.INTERRUPTED,
    max_steps: int = DEFAULT_MAX_STEPS,
    extras: Mapping[str, Any] | None = None,
    tape: Tape | None = None,
) -> RunResult:
    """Run the session's workflow on `task`; the result on success, a DevallError on failure.

    `extras` is what the command hands to nodes (`NodeRun.extras`: the human reply source).
    `tape` records the run's exchanges with the world, or answers them from a cassette (the
    caller closes it: a recording is written then).

    `run.finished` is emitted in every case (also on failure and Ctrl-C), so sinks such as the
    result.json writer see failed runs too; the ToolManager and the providers are always closed.
    Cancellation is re-raised after `run.finished` with status `interrupted` and the exit code
    `interrupt_code()` gives (130 for Ctrl-C, 143 when the caller saw SIGTERM).
    """
    bus, run_id, workflow = session.bus, session.run_id, session.workflow
    started = time.monotonic()
    shape = to_dict(shape_of(workflow.graph, workflow.redactor.text))
    bus.emit(RunStartedEvent(run_id=run_id, workflow=workflow.name, task=task, graph=shape))
    make = _provider_maker(
        provider_factory, environ, workflow.redactor, session.pricing, session.budget
    )
    memory = MemoryContext(run_id, session.run_dir, environ, workflow.redactor, bus.emit)
    factory = tool_manager_factory
    if tape is not None:
        factory = functools.partial(tool_manager_factory, tape=tape)
    try:
        with use_tape(tape):
            outcome = await _run(session, task, factory, make, max_steps, extras, memory)
    except (asyncio.CancelledError, KeyboardInterrupt):
        _finish(bus, run_id, started, "interrupted", "interrupted", interrupt_code())
        raise
    except BudgetError as exc:
        _finish(bus, run_id, started, "budget", exc.message, exc.exit_code, exc, exc.record())
        raise
    except DevallError as exc:
        _finish(bus, run_id, started, "failed", exc.message, exc.exit_code, exc)
        raise
    except Exception as exc:
        _finish(bus, run_id, started, "failed", f"{type(exc).__name__}: {exc}")
        raise
    bus.emit(
        RunFinishedEvent(
            run_id=run_id, status="ok", output=outcome.output, duration_ms=_ms(started)
        )
    )
    return session.recorder.result()


async def _run(
    session: RunSession,
    task: str,
    tool_manager_factory: ToolManagerFactory,
    make_provider: ProviderFactory,
    max_steps: int,
    extras: Mapping[str, Any] | None,
    memory: MemoryContext,
) -> GraphOutcome:
    workflow = session.workflow
    events = BusToolEvents(session.bus, session.run_id)
    manager = tool_manager_factory(
        workflow, run_id=session.run_id, run_dir=session.run_dir, events=events
    )
    try:
        await manager.start()
        env = RunEnv(
            run_id=session.run_id,
            bus=session.bus,
            tools=manager,
            make_provider=make_provider,
            edge_env=edge_environment(workflow),
            run_dir=session.run_dir,
            workflow_dir=workflow.directory,
            max_steps=max_steps,
            extras=dict(extras or {}),
            memory=memory,
        )
        outcome = await GraphRun(workflow.graph, env).run(task_messages(task))
    except BaseException:
        # The error that stopped the run matters more than one raised while closing.
        with contextlib.suppress(Exception):
            await manager.close()
        raise
    await manager.close()
    return outcome


def edge_environment(workflow: Workflow) -> Any:
    """What edge conditions and processors may use: the workflow's edge functions."""
    from devall_cli.engine.edge_env import WorkflowEdgeEnv

    return WorkflowEdgeEnv(workflow)


def _provider_maker(
    factory: ProviderMaker | None,
    environ: Mapping[str, str] | None,
    redactor: Redactor,
    pricing: PriceTable,
    budget: BudgetMeter | None,
) -> ProviderFactory:
    if factory is None:
        from devall_cli.providers import make_provider

        factory = make_provider

    def make(config: AgentConfig, state: dict[str, Any] | None = None) -> Provider:
        provider = factory(config, environ=environ, redactor=redactor, state=state)
        if budget is None:
            return provider
        # Every call of the run (thinking and sampling too) is held against the budget.
        return MeteredProvider(provider, config.name, budget, pricing.lookup(config.name))

    return make


def _finish(
    bus: EventBus,
    run_id: str,
    started: float,
    status: str,
    error: str,
    code: int = ExitCode.FAILED,
    cause: DevallError | None = None,
    budget: Mapping[str, Any] | None = None,
) -> None:
    bus.emit(
        RunFinishedEvent(
            run_id=run_id,
            status=status,
            duration_ms=_ms(started),
            error=error,
            exit_code=int(code),
            details=tuple(cause.details) if cause is not None else (),
            hint=(cause.hint or None) if cause is not None else None,
            budget=budget,
        )
    )


def _ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 3)
