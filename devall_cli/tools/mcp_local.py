"""`mcp_local`: an MCP server devall spawns and speaks to over stdio, kept alive for the run.

Starting = spawn, readiness (`wait_for_log`) and the MCP handshake, all within `startup_timeout`.
Requests share one session, at most `max_concurrency` at a time, each bounded by `call_timeout`.
When the server dies during a call, that call returns an error result (`server_exited`) and the
next request starts the server again, at most `max_restarts` times per run; after that the run
fails with ServerDiedError. A source may be given its first process already spawned (see
head_start.py): it then waits for readiness and shakes hands on that one.

The session on the process is fastmcp's Client (`client="fastmcp"`, for `batch`) or devall's
own small client (`client="direct"`, mcp_direct.py: the commands that list or call once and
exit, which it starts without importing fastmcp; `client="auto"` for `run`, which hands a server
that refuses its handshake to fastmcp's client). Both are `McpSession`s (mcp_protocol.py);
everything else here is the same for both.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from devall_cli.errors import ConfigError, DevallError, ServerDiedError, ServerStartError
from devall_cli.tools.attachments import AttachmentStore
from devall_cli.tools.base import (
    CallContext,
    Elicitor,
    LogCallback,
    RawTool,
    TextBlock,
    ToolEvents,
    ToolResult,
)
from devall_cli.tools.head_start import local_process
from devall_cli.tools.kinds.mcp_local import McpLocalConfig
from devall_cli.tools.mcp_session import McpSessionSource
from devall_cli.tools.stdio_process import EXIT_DRAIN, StdioProcess

if TYPE_CHECKING:
    from devall_cli.tools.mcp_protocol import McpSession
    from devall_cli.tools.stdio_transport import SupervisedStdioTransport

# "auto" (run): the light client, unless it agrees on no protocol with the server (which both
# clients negotiate alike): fastmcp's client then speaks to that process from there on.
ClientKind = Literal["fastmcp", "direct", "auto"]
RestartCallback = Callable[[str, int], None]  # (source_id, restart number starting at 1)

# The client's own init_timeout fires first; this grace only catches a connect that hangs
# elsewhere, so that the whole start stays within startup_timeout plus a blink.
HANDSHAKE_GRACE = 0.25
MIN_HANDSHAKE_TIME = 0.05
EXIT_WAIT = EXIT_DRAIN + 0.5  # how long a lost session may wait for the exit status
TAIL_IN_RESULT = 5


class LocalSource(McpSessionSource):
    """A local MCP server process (stdio) with one long-lived session and bounded restarts."""

    kind = "mcp_local"

    def __init__(
        self,
        *,
        id: str,
        config: McpLocalConfig,
        store: AttachmentStore | None = None,
        on_log: LogCallback | None = None,
        log_path: Path | None = None,
        on_restart: RestartCallback | None = None,
        redact: Callable[[str], str] | None = None,
        events: ToolEvents | None = None,
        elicitor: Elicitor | None = None,
        process: StdioProcess | None = None,
        stop_at_once: bool = False,
        client: ClientKind = "fastmcp",
        workflow_dir: str | None = None,
    ) -> None:
        super().__init__(
            id=id,
            target=config.display_target(),
            request_timeout=config.call_timeout,
            init_timeout=config.startup_timeout,
            store=store,
            on_log=on_log,
            max_concurrency=config.max_concurrency,
            client_config=config.client,
            events=events,
            elicitor=elicitor,
        )
        self.config = config
        self.log_path = log_path
        self.on_restart = on_restart
        self.redact = redact  # masks secrets in log lines before they are kept or written
        try:
            self._pattern = re.compile(config.wait_for_log) if config.wait_for_log else None
        except re.error as exc:
            raise ConfigError(
                f"server '{id}': wait_for_log is not a valid regular expression: {exc}"
            ) from exc
        self.restarts = 0
        self._process: StdioProcess | None = None
        self._spawned: StdioProcess | None = process  # spawned ahead: the first start adopts it
        # Only listed (tools list, probe): nothing to finish, so no grace on stdin at close.
        self.stop_at_once = stop_at_once
        self._was_ready = False  # a process reached a session: the next spawn is a restart
        self.client: ClientKind = client
        self.workflow_dir = workflow_dir  # a sandboxed server sees it (read-only)
        # The direct client checks results against the output schemas of the last listing.
        self._output_schemas: dict[str, Mapping[str, Any] | None] = {}

    # --- state -------------------------------------------------------------------------------

    @property
    def process(self) -> StdioProcess | None:
        """The current (or last) server process."""
        return self._process

    @property
    def pid(self) -> int | None:
        """The pid of the current server process."""
        return self._process.pid if self._process else None

    @property
    def log_tail(self) -> list[str]:
        """The last log lines of the current (or last) server process."""
        return self._process.log_tail if self._process else list(self._recent_log)

    def make_transport(self) -> SupervisedStdioTransport:
        """A transport on the current process (which outlives the session)."""
        from devall_cli.tools.stdio_transport import SupervisedStdioTransport

        assert self._process is not None, "make_transport() before the process was spawned"
        return SupervisedStdioTransport(self._process)

    # --- requests ----------------------------------------------------------------------------

    async def list_tools(self) -> list[RawTool]:
        """The server's tools; a server that died since the last request is started again."""
        await self._restart_if_gone()
        return await super().list_tools()

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        *,
        timeout: float | None = None,
        context: CallContext | None = None,
    ) -> ToolResult:
        """Call a tool; a server dying during the call gives a `server_exited` error result."""
        await self._restart_if_gone()
        before = self._process
        started = time.perf_counter()
        try:
            return await super().call_tool(name, arguments, timeout=timeout, context=context)
        except ServerDiedError:
            # The process the call went to: the one from before, unless the call started anew.
            candidates = (before, self._process)
            process = next((p for p in candidates if p is not None and _is_gone(p)), None)
            if process is None or self._closed or not await self._gone(process):
                raise
        duration_ms = (time.perf_counter() - started) * 1000
        return _exited_result(self.id, name, process, duration_ms)

    async def close(self) -> None:
        """End the session and tear down the process group; idempotent."""
        try:
            await super().close()
        finally:
            spawned, self._spawned = self._spawned, None
            if spawned is not None:  # never started: nobody adopted it
                await spawned.close(graceful=False)
            if self._process is not None:
                await self._process.close(graceful=not self.stop_at_once)

    # --- starting and restarting ---------------------------------------------------------------

    async def _restart_if_gone(self) -> None:
        """Start the server again when the process behind the session has died."""
        process = self._process
        if process is None or self._closed or not _is_gone(process):
            return
        async with self._lock:
            if self._process is process:  # not restarted by a concurrent request meanwhile
                await self._reconnect()  # `_open_session` spawns anew and counts the restart

    async def _open_session(self) -> None:
        """Spawn, wait for readiness and handshake, all within `startup_timeout`."""
        if self._closed:
            raise ServerDiedError(f"server '{self.id}' is already closed")
        note = await self._retire_previous_process()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.startup_timeout
        began = time.monotonic()
        process, self._spawned = self._spawned or self._new_process(), None
        self._process = process
        if note:
            self._log(note)  # into the new process's log, ahead of its first lines
        try:
            if process.pid is None:
                await process.spawn()
            await process.wait_ready(
                max(deadline - loop.time(), 0.0), startup_timeout=self.config.startup_timeout
            )
            await self._handshake(process, deadline)
        except BaseException:
            await process.close(graceful=False)  # it failed to start: no need to wait politely
            raise
        assert self._info is not None
        # The whole start: from the spawn (made ahead, maybe before the command was loaded)
        # to the end of the handshake, not the handshake alone.
        spawned_at = process.spawned_at if process.spawned_at is not None else began
        connect_ms = round((time.monotonic() - spawned_at) * 1000, 1)
        self._info = dataclasses.replace(
            self._info, connect_ms=connect_ms, sandbox=process.sandbox_description
        )
        self._was_ready = True

    async def _retire_previous_process(self) -> str | None:
        """Close the previous process; count a restart if it had been serving (note returned)."""
        previous = self._process
        if previous is None:
            return None
        await previous.close()
        if not self._was_ready:
            return None  # the previous start failed: this is a new start, not a restart
        if self.restarts >= self.config.max_restarts:
            raise ServerDiedError(
                f"server '{self.id}' exited with {previous.exit_status_text()} and was restarted "
                f"{self.restarts} time(s) already (max_restarts: {self.config.max_restarts})",
                details=[f"  | {line}" for line in previous.log_tail[-10:]],
            )
        self.restarts += 1
        self._was_ready = False
        if self.on_restart is not None:
            self.on_restart(self.id, self.restarts)
        return (
            f"[devall] server '{self.id}' exited with {previous.exit_status_text()}; "
            f"restarting it ({self.restarts}/{self.config.max_restarts})"
        )

    async def _handshake(self, process: StdioProcess, deadline: float) -> None:
        """The MCP handshake in the time left before `deadline`, with local failure classes."""
        loop = asyncio.get_running_loop()
        self.init_timeout = max(deadline - loop.time(), MIN_HANDSHAKE_TIME)
        try:
            async with asyncio.timeout_at(deadline + HANDSHAKE_GRACE):
                await super()._open_session()
        except (DevallError, TimeoutError) as exc:
            if await self._gone(process) and process.returncode is not None:
                raise process.exited_error("during the MCP handshake") from exc
            if isinstance(exc, TimeoutError) or getattr(exc, "status", "") == "handshake_timeout":
                raise ServerStartError(
                    f"server '{self.id}' did not complete the MCP handshake within "
                    f"{self.config.startup_timeout:g} s",
                    status="handshake_timeout",
                    server_id=self.id,
                    log_tail=process.log_tail,
                ) from exc
            raise

    async def _new_session(self) -> McpSession:
        """A session on the current process: the direct client's, or fastmcp's on its stdio."""
        if self.client == "fastmcp":
            return await super()._new_session()
        from devall_cli.tools.mcp_direct import open_direct
        from devall_cli.tools.mcp_protocol import RpcError

        assert self._process is not None, "_new_session() before the process was spawned"
        try:
            async with asyncio.timeout(self.init_timeout):  # fastmcp's Client bounds its own
                return await open_direct(
                    self._process,
                    self.requests,
                    server=self.server,
                    note=self._log,
                    output_schemas=self._output_schemas,
                    probe_timeout=self.init_timeout / 2,  # the handshake gets the rest
                )
        except RpcError as exc:  # it agreed on no protocol version with the direct client
            if self.client != "auto":
                raise
            self.client = "fastmcp"
            self._log(
                f"[devall] the server refused the initialize handshake: {exc.message}; "
                "speaking to it with fastmcp's client"
            )
        return await super()._new_session()

    def _new_process(self) -> StdioProcess:
        return local_process(
            self.id,
            self.config,
            pattern=self._pattern,
            log_path=self.log_path,
            on_log=self.on_log,
            redact=self.redact,
            append_log=self._process is not None,  # a restart continues the server's log
            workflow_dir=self.workflow_dir,
        )

    async def _gone(self, process: StdioProcess) -> bool:
        """Whether `process` is gone, waiting a moment for its exit status to arrive."""
        if not _is_gone(process):
            return False
        # A process that closed stdout but lingers counts as gone all the same.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.exited.wait(), EXIT_WAIT)
        return True

    def _log(self, line: str, *, notify: bool = True) -> None:
        # Notes and server notifications join the process log (tail, log file, on_log).
        if self._process is not None:
            self._process.log_line(line, match=False, notify=notify)
        else:
            super()._log(line, notify=notify)


def _is_gone(process: StdioProcess) -> bool:
    return process.returncode is not None or process.stdout_closed


def _exited_result(
    source_id: str, tool_name: str, process: StdioProcess, duration_ms: float
) -> ToolResult:
    """The error result of a call during which the server died."""
    tail = " | ".join(process.log_tail[-TAIL_IN_RESULT:]) or "(none)"
    if process.returncode is None:
        what = f"server '{source_id}' closed its output"
    else:
        what = f"server '{source_id}' exited with {process.exit_status_text()}"
    text = f"{what} during the call; last log lines: {tail}"
    block = TextBlock(text=text, tool_name=tool_name, source="mcp_tool")
    return ToolResult(
        blocks=(block,), is_error=True, error_class="server_exited", duration_ms=duration_ms
    )
