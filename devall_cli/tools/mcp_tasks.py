"""MCP tasks: a `tools/call` the server runs in the background, waited for to its end.

A tool whose `execution.taskSupport` is `required` can only be called as a task; one whose
support is `optional` is called as a task whenever its server says it takes tasks (the source
decides, mcp_session.py). Both clients speak the same requests through a `TaskRpc` they provide
(the raw JSON-RPC request and its result), so a task reads the same whichever client ran it.

Two wire forms:
- 2025-11-25 (tasks in the core protocol; the server declares `tasks.requests.tools.call`): the
  call carries `task: {ttl}` and is answered `{task: {taskId, status, pollInterval, ...}}`;
  `tasks/result` blocks until the task ends and answers the tool's result; `tasks/get` answers
  the task's status; `tasks/cancel` ends it.
- 2026-07-28 (the `io.modelcontextprotocol/tasks` extension, declared by the server in its
  capabilities and by devall in the `_meta` client capabilities of each task request): the
  server decides and answers `{resultType: "task", taskId, status, pollIntervalMs, ...}` (or the
  result at once); `tasks/get` inlines the `result` (or the `error`) once the task has ended;
  `tasks/cancel` ends it. There is no `tasks/result`.

While a task runs, `tasks/get` is polled at the server's poll interval and each new status (with
its message) becomes a progress report of the call, so the trace shows it as `tool.progress`.
The call's timeout bounds the whole task (the source bounds the call); a call given up (the
timeout, Ctrl-C) sends `tasks/cancel` before it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any, Protocol

from devall_cli.tools.mcp_protocol import ProgressFn, RpcError

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
MODERN_VERSION = "2026-07-28"
TTL_MS = 30 * 60 * 1000  # how long the server keeps a task devall created (2025-11-25)
DEFAULT_POLL = 1.0  # seconds between two `tasks/get` when the server suggests nothing
POLL_BOUNDS = (0.05, 30.0)  # the server's suggestion, kept within these (seconds)
CANCEL_TIMEOUT = 2.0  # a `tasks/cancel` of a call given up is not waited for longer
TERMINAL = frozenset({"completed", "failed", "cancelled"})
INTERNAL_ERROR = -32603
TASK_CANCELLED = -32800  # as a cancelled request reads (the SDK's REQUEST_CANCELLED)


class TaskRpc(Protocol):
    """One raw JSON-RPC request of a session, its result as the server sent it."""

    async def __call__(
        self, method: str, params: dict[str, Any], progress: ProgressFn | None = None
    ) -> dict[str, Any]:
        """Send `method` with `params` (RpcError for the server's error answer)."""
        ...


def runs_as_task(task_support: str | None) -> bool:
    """Whether a call of a tool with this `execution.taskSupport` goes through `call_as_task`."""
    return task_support in ("optional", "required")


def offers_tasks(capabilities: Mapping[str, Any] | None) -> bool:
    """Whether a server's capabilities accept a `tools/call` run as a task (either wire form)."""
    if not isinstance(capabilities, Mapping):
        return False
    tasks = capabilities.get("tasks")
    requests = tasks.get("requests") if isinstance(tasks, Mapping) else None
    tools = requests.get("tools") if isinstance(requests, Mapping) else None
    if isinstance(tools, Mapping) and tools.get("call") is not None:
        return True
    extensions = capabilities.get("extensions")
    return isinstance(extensions, Mapping) and extensions.get(TASKS_EXTENSION) is not None


def declare_extension(meta: Mapping[str, Any]) -> dict[str, Any]:
    """A request's `_meta` whose client capabilities also declare the tasks extension
    (2026-07-28: a task request opts in by itself). The capabilities object may be the
    session's own: it is copied, never changed in place."""
    capabilities = dict(meta.get(CLIENT_CAPABILITIES_KEY) or {})
    extensions = dict(capabilities.get("extensions") or {})
    extensions[TASKS_EXTENSION] = {}
    capabilities["extensions"] = extensions
    return {**meta, CLIENT_CAPABILITIES_KEY: capabilities}


def call_params(name: str, arguments: dict[str, Any], *, modern: bool) -> dict[str, Any]:
    """The params of a `tools/call` meant to run as a task."""
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if not modern:  # 2026-07-28: the server decides, from the declared extension
        params["task"] = {"ttl": TTL_MS}
    return params


async def call_as_task(
    rpc: TaskRpc,
    name: str,
    arguments: dict[str, Any],
    progress: ProgressFn | None,
    *,
    modern: bool,
) -> dict[str, Any]:
    """`tools/call` as a task, waited for to its end: the tool's result, as the server sent it.

    A server that answers the call at once (it may) has its result returned as it is.
    """
    created = await rpc("tools/call", call_params(name, arguments, modern=modern), progress)
    task = created_task(created, modern=modern)
    if task is None:
        return created
    return await TaskWait(rpc, task, progress, modern=modern).result()


def created_task(result: Mapping[str, Any], *, modern: bool) -> dict[str, Any] | None:
    """The task a `tools/call` result created, or None for an ordinary result."""
    if modern:
        if result.get("resultType") != "task":
            return None
        task: Any = result
    else:
        task = result.get("task")
        if task is None or "content" in result:
            return None
    if not isinstance(task, Mapping) or not isinstance(task.get("taskId"), str):
        raise RpcError(INTERNAL_ERROR, "invalid task from the server: taskId: a string is required")
    return dict(task)


class TaskWait:
    """One task being waited for: status polled and reported, cancelled if given up."""

    def __init__(
        self, rpc: TaskRpc, task: dict[str, Any], progress: ProgressFn | None, *, modern: bool
    ) -> None:
        self._rpc = rpc
        self._task = task
        self._id: str = task["taskId"]
        self._progress = progress
        self._modern = modern
        self._shown: tuple[Any, Any] | None = None  # (status, message) last reported
        self._steps = 0

    async def result(self) -> dict[str, Any]:
        """The tool's result once the task ended (RpcError when it failed or was cancelled)."""
        try:
            if self._modern:
                return await self._polled()
            return await self._fetched()
        except asyncio.CancelledError:
            # Sent before anything else is awaited: a command that gave the call up may be
            # closing the session right after.
            await self._cancel()
            raise

    async def _polled(self) -> dict[str, Any]:
        """2026-07-28: `tasks/get` until the task ends; its result is inlined there."""
        while True:
            await self._report(self._task)
            status = self._task.get("status")
            if status in TERMINAL and ("result" in self._task or "error" in self._task):
                return self._ended(self._task)
            if status in TERMINAL:  # ended already when created: its outcome is on tasks/get
                return self._ended(await self._get())
            if status == "input_required":  # not answered yet (`tasks/update`): ended here
                await self._cancel()
                raise RpcError(
                    INTERNAL_ERROR, f"task {self._id} needs input, which devall cannot give it"
                )
            await asyncio.sleep(self._interval())
            self._task = await self._get()

    async def _fetched(self) -> dict[str, Any]:
        """2025-11-25: `tasks/result` (which blocks until the task ends), `tasks/get` meanwhile."""
        await self._report(self._task)
        fetch = asyncio.ensure_future(self._rpc("tasks/result", {"taskId": self._id}))
        try:
            while not fetch.done():
                await asyncio.wait({fetch}, timeout=self._interval())
                if fetch.done():
                    break
                with contextlib.suppress(RpcError):  # a server without tasks/get: wait on
                    self._task = await self._get()
                    await self._report(self._task)
            result: dict[str, Any] = fetch.result()
            if self._shown is None or self._shown[0] != "completed":  # a tool's error too
                await self._report({"status": "completed"})
            return result
        finally:
            if not fetch.done():  # not waited for: a cancel of the task must go first
                fetch.cancel()
                fetch.add_done_callback(_retrieved)

    async def _get(self) -> dict[str, Any]:
        answer = await self._rpc("tasks/get", {"taskId": self._id})
        return {**self._task, **answer}

    def _ended(self, task: Mapping[str, Any]) -> dict[str, Any]:
        """The result of a task that ended (2026-07-28), or its failure as RpcError."""
        status = task.get("status")
        result, error = task.get("result"), task.get("error")
        if status == "completed" and isinstance(result, Mapping):
            return dict(result)
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            code = error.get("code")
            raise RpcError(code if isinstance(code, int) else INTERNAL_ERROR, error["message"])
        if status == "cancelled":
            raise RpcError(TASK_CANCELLED, f"task {self._id} was cancelled by the server")
        why = task.get("statusMessage")
        raise RpcError(INTERNAL_ERROR, f"task {self._id} {status}" + (f": {why}" if why else ""))

    def _interval(self) -> float:
        key = "pollIntervalMs" if self._modern else "pollInterval"
        value = self._task.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return DEFAULT_POLL
        low, high = POLL_BOUNDS
        return min(max(value / 1000, low), high)

    async def _report(self, task: Mapping[str, Any]) -> None:
        """A progress report of the call for each new status (and status message)."""
        status, message = task.get("status"), task.get("statusMessage")
        if self._progress is None or (status, message) == self._shown:
            return
        self._shown = (status, message)
        self._steps += 1
        said = f"task {status}" + (f": {message}" if isinstance(message, str) and message else "")
        await self._progress(float(self._steps), None, said)

    async def _cancel(self) -> None:
        """Tell the server the task is no longer wanted, briefly; whatever it answers."""
        with contextlib.suppress(Exception, asyncio.CancelledError):
            async with asyncio.timeout(CANCEL_TIMEOUT):
                await self._rpc("tasks/cancel", {"taskId": self._id})


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Read the outcome of a request given up, so that asyncio does not report it."""
    if not future.cancelled():
        future.exception()
