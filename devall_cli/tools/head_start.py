"""Local servers spawned before the MCP client stack is imported, so that the two overlap.

Importing the client stack (fastmcp, mcp, their pydantic models) costs about a second of CPU,
and a Python MCP server spends about as long importing its own before it can answer. Spawned
first, the server starts on one core while devall imports on another. `HeadStart` spawns the
`mcp_local` servers of a list of plans with the light `StdioProcess` (no fastmcp, mcp or httpx
here) and hands each process to the `LocalSource` built for the same plan afterwards; the source
then waits for readiness and speaks MCP on it as if it had spawned it itself.

A server that cannot be spawned ahead is left to its source, which spawns it (and reports any
failure) the usual way. Processes never handed over are torn down by `close()`.

Commands that speak to local servers with devall's own client (mcp_direct.py: `tools list`,
`tools call`, `probe`, `run`) import no client stack at all. They may even find their servers
spawned before the CLI was loaded (cli/early.py): `keep_for_later` holds those, and
`HeadStart.spawn` adopts the one of a source whose config is the same, handing it the log file
and trace of the command (the lines written before are held until then).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import re
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Literal

from devall_cli.errors import DevallError
from devall_cli.procs.sandbox import effective_sandbox
from devall_cli.tools.base import LogCallback
from devall_cli.tools.kinds.mcp_local import McpLocalConfig, readable_dir
from devall_cli.tools.plan import SourceContext, SourcePlan, tooling_type
from devall_cli.tools.stdio_process import StdioProcess

# The modules whose import brings fastmcp's client stack along (fastmcp, mcp, mcp_types, httpx2),
# which a LocalSource imports when it shakes hands (mcp_local.py itself imports none of it).
CLIENT_MODULES = ("devall_cli.tools.stdio_transport", "devall_cli.tools.mcp_fastmcp")
# What the direct client (mcp_direct.py) needs for calls, beyond listing.
DIRECT_CALL_MODULES = ("devall_cli.tools.mcp_direct", "jsonschema")
# `DEVALL_MCP_CLIENT=fastmcp`: list and call with fastmcp's client too (see mcp_direct.py).
CLIENT_ENV = "DEVALL_MCP_CLIENT"


def start_import(module: str) -> threading.Thread:
    """Import `module` in a daemon thread, without waiting for it (a failure is left for the
    importer in the main thread to meet and report)."""

    def work() -> None:
        with contextlib.suppress(BaseException):
            importlib.import_module(module)

    thread = threading.Thread(target=work, name="devall-warm-import", daemon=True)
    thread.start()
    return thread


async def import_in_thread(*modules: str) -> None:
    """Import `modules` in a daemon thread: meanwhile the event loop reads the servers' logs and
    handles SIGTERM, and devall can exit without waiting for the import to end.

    A failed import is left for the importer in the main thread to meet and report.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def settle() -> None:
        if not done.done():
            done.set_result(None)

    def work() -> None:
        try:
            for module in modules:
                with contextlib.suppress(BaseException):  # the main thread's import reports it
                    importlib.import_module(module)
        finally:
            loop.call_soon_threadsafe(settle)

    threading.Thread(target=work, name="devall-client-import", daemon=True).start()
    await done


def uses_direct_client(ctx: SourceContext, *, local: bool = False) -> bool:
    """Whether servers get devall's own light MCP client (mcp_direct.py): local ones, and
    remote ones over streamable HTTP without `auth:` (mcp_remote.py decides those); with
    `direct_client="local"` (run), local ones only."""
    if os.environ.get(CLIENT_ENV, "").strip().lower() == "fastmcp":
        return False
    return ctx.direct_client is True or (local and ctx.direct_client == "local")


def local_client(ctx: SourceContext) -> Literal["fastmcp", "direct", "auto"]:
    """The client of a local server: fastmcp's, the light one, or (run) the light one unless
    the server refuses its handshake (it speaks only a protocol the light one does not)."""
    if not uses_direct_client(ctx, local=True):
        return "fastmcp"
    return "auto" if ctx.direct_client == "local" else "direct"


def local_log_path(source_id: str, run_dir: Path | None) -> Path | None:
    """Where a local server's log goes: `<run dir>/servers/<id>.log`, or nowhere."""
    return run_dir / "servers" / f"{source_id}.log" if run_dir else None


def local_process(
    source_id: str,
    config: McpLocalConfig,
    *,
    pattern: re.Pattern[str] | None,
    log_path: Path | None,
    on_log: LogCallback | None,
    redact: Callable[[str], str] | None,
    append_log: bool = False,
    workflow_dir: str | None = None,
) -> StdioProcess:
    """The (not yet spawned) process of a local server, as its source runs it (confined as its
    `sandbox:`, else the CLI default, says)."""
    return StdioProcess(
        id=source_id,
        command=config.command,
        args=config.args,
        cwd=config.cwd,
        env=config.env,
        inherit_env=config.inherit_env,
        wait_for_log=pattern,
        log_path=log_path,
        append_log=append_log,
        on_log=on_log,
        redact=redact,
        sandbox=effective_sandbox(config.sandbox),
        workflow_dir=workflow_dir,
    )


class HeadStart:
    """Local server processes spawned ahead of their sources, by source id."""

    def __init__(self) -> None:
        self._processes: dict[str, StdioProcess] = {}
        self._spawned_at: dict[str, float] = {}

    async def spawn(
        self,
        plans: Iterable[SourcePlan],
        ctx: SourceContext,
        *,
        import_client: bool = True,
        hold_log: bool = False,
    ) -> list[str]:
        """Spawn the local servers of `plans` not spawned yet; the ids of those now running.

        A server spawned before the command (`keep_for_later`) with the same config is adopted:
        its log goes to the log file and the trace of `ctx` from then on, the lines it wrote
        before first. With `import_client`, the modules that will speak to them are imported
        meanwhile; with `hold_log` (spawned before the command), log lines are held for it.
        """
        plans = list(plans)
        spawned: list[str] = []
        for plan in plans:
            make = tooling_type(plan.tooling).early_process
            if make is None or plan.id in self._processes:
                continue
            kept = _KEPT.pop(plan.id, None)
            if kept is not None and _adoptable(kept, plan.tooling.config):
                self._processes[plan.id], self._spawned_at[plan.id] = kept[1], kept[2]
                kept[1].hand_over(log_path=local_log_path(plan.id, ctx.run_dir), on_log=ctx.on_log)
                spawned.append(plan.id)
                continue
            if kept is not None:  # spawned for another config: not this source's
                _KEPT[plan.id] = kept
            process: StdioProcess | None = make(plan.id, plan.tooling.config, ctx)
            if process is None:
                continue
            if hold_log:
                process.hold_log()
            try:
                await process.spawn()
            except DevallError:
                await process.close()
                continue  # the source spawns it again and reports the failure as usual
            self._processes[plan.id] = process
            self._spawned_at[plan.id] = process.spawned_at or time.monotonic()
            spawned.append(plan.id)
        if not spawned or not import_client:
            return spawned
        if _speaks_fastmcp(plans, ctx):
            await import_in_thread(*CLIENT_MODULES)
        elif not ctx.stop_at_once:
            # Tools will be called: the direct client checks results against output schemas.
            # Imported meanwhile, on the core the server leaves free, not after the answer.
            for module in DIRECT_CALL_MODULES:
                start_import(module)
        return spawned

    def take(self, source_id: str) -> StdioProcess | None:
        """The process spawned for `source_id`, handed over once (None if there is none)."""
        return self._processes.pop(source_id, None)

    def spawned_at(self, source_id: str) -> float | None:
        """When (time.monotonic) the process of `source_id` was spawned, if it was."""
        return self._spawned_at.get(source_id)

    async def close(self) -> None:
        """Tear down every process not handed over; idempotent."""
        processes, self._processes = list(self._processes.values()), {}
        await asyncio.gather(*(process.close(graceful=False) for process in processes))


def _speaks_fastmcp(plans: Iterable[SourcePlan], ctx: SourceContext) -> bool:
    """Whether an MCP server of `plans` gets fastmcp's client (function tools get none)."""
    return any(
        not uses_direct_client(ctx, local=plan.kind == "mcp_local")
        for plan in plans
        if plan.kind != "function"
    )


# Processes spawned before the command that will use them was parsed (cli/early.py), by source
# id: (config, process, when). A HeadStart adopts the one of its source if the config is equal.
_KEPT: dict[str, tuple[object, StdioProcess, float]] = {}


def _adoptable(kept: tuple[object, StdioProcess, float], config: object) -> bool:
    """Whether a process spawned ahead runs `config` now: same settings, same confinement (the
    CLI default may have changed since)."""
    own = getattr(config, "sandbox", None)
    return kept[0] == config and kept[1].sandbox == effective_sandbox(own)


def keep_for_later(source_id: str, config: object, process: StdioProcess, at: float) -> None:
    """Hold a process spawned ahead of its command for the command's HeadStart to adopt."""
    _KEPT[source_id] = (config, process, at)


async def close_kept() -> None:
    """Tear down the processes kept for a command that did not adopt them; idempotent."""
    processes = [process for _, process, _ in _KEPT.values()]
    _KEPT.clear()
    await asyncio.gather(*(process.close(graceful=False) for process in processes))


def new_local_process(
    source_id: str, config: McpLocalConfig, ctx: SourceContext
) -> StdioProcess | None:
    """The process for a local plan, or None when its source must report a config error."""
    try:
        pattern = re.compile(config.wait_for_log) if config.wait_for_log else None
    except re.error:
        return None  # LocalSource raises the located ConfigError
    return local_process(
        source_id,
        config,
        pattern=pattern,
        log_path=local_log_path(source_id, ctx.run_dir),
        on_log=ctx.on_log,
        redact=ctx.redact,
        workflow_dir=readable_dir(config, ctx),
    )
