"""FunctionSource: Python functions from the functions directory as a tool source.

The tools and their schemas are read from the modules' source; the modules are imported when
the source starts for a run (or, for a source that only lists, at its first call). Arguments
are checked against the schema before a function is called.

Every call, of a plain or an `async def` function, runs in its own daemon thread (an async
function on an event loop of that thread), bounded by the tooling entry's `timeout`: a function
that blocks cannot stall devall's own loop, so timeouts and signals still work. A function that
overruns is abandoned (Python cannot kill a thread), but the run goes on, and a daemon thread
cannot keep the process alive at exit. Whatever the function raises, SystemExit and
KeyboardInterrupt included, comes back as an error result.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import importlib
import inspect
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from devall_cli.config.function_loading import chatdev_root
from devall_cli.config.function_signature import CONTEXT_PARAM
from devall_cli.config.functions import (
    FunctionInfo,
    FunctionResolutionError,
    enum_type,
    is_optional,
    load_function,
    read_type_hints,
    resolve_function_tools,
)
from devall_cli.config.model import EMPTY
from devall_cli.errors import ConfigError
from devall_cli.run_files import CODE_WORKSPACE
from devall_cli.tools.arguments import ArgumentChecker, invalid_arguments
from devall_cli.tools.attachments import AttachmentStore
from devall_cli.tools.base import (
    CallContext,
    RawTool,
    ServerInfo,
    SourceKind,
    TextBlock,
    ToolResult,
)
from devall_cli.tools.kinds.function import FunctionToolingConfig
from devall_cli.tools.normalize import normalize_value

T = TypeVar("T")


class FunctionContext(dict[str, Any]):
    """What a function with a `_context` parameter receives: a dict, as in ChatDev.

    devall's keys, also readable as attributes: `run_id`, `node_id`, `workflow_dir`,
    `attachment_store`, `tool_name`. ChatDev's, which its own function modules read with
    `.get()`: `graph_directory` (the run directory), `python_workspace_root` (the run's
    `code_workspace`, shared with python nodes), `attachment_store` (ChatDev's own store class
    for a module of a ChatDev checkout) and `vars` (empty: placeholders are resolved already).
    """

    @property
    def run_id(self) -> str:
        return str(self.get("run_id") or "")

    @property
    def node_id(self) -> str:
        return str(self.get("node_id") or "")

    @property
    def workflow_dir(self) -> Path | None:
        value = self.get("workflow_dir")
        return Path(value) if value else None

    @property
    def attachment_store(self) -> Any:
        return self.get("attachment_store")

    @property
    def tool_name(self) -> str:
        return str(self.get("tool_name") or "")


@dataclass(frozen=True)
class _Callable:
    """A loaded function and what calling it needs."""

    info: FunctionInfo
    func: Callable[..., Any]
    signature: inspect.Signature
    checker: ArgumentChecker
    fill_none: tuple[str, ...]  # Optional parameters without a default: None when omitted
    enums: Mapping[str, Any] = field(default_factory=dict)  # parameter → Enum class

    @classmethod
    def load(cls, info: FunctionInfo) -> _Callable:
        """Import the function's module and prepare the call (runs in a worker thread)."""
        func = load_function(info)
        hints = read_type_hints(func)
        try:
            signature = inspect.signature(func)
        except (TypeError, ValueError) as exc:
            raise FunctionResolutionError(f"{info.file}: '{info.name}': {exc}") from None
        fill_none, enums = [], {}
        for param in signature.parameters.values():
            hint = hints.get(param.name)
            if param.default is param.empty and hint is not None and is_optional(hint):
                fill_none.append(param.name)
            if hint is not None and (enum_cls := enum_type(hint)) is not None:
                enums[param.name] = enum_cls
        open_ended = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
        checker = ArgumentChecker(
            info.input_schema, open_ended=open_ended, nullable=info.nullable
        )
        return cls(info, func, signature, checker, tuple(fill_none), enums)


class _Failure:
    """An exception raised in a worker thread, carried back as a value."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def _run_in_thread(fn: Callable[[], T], name: str) -> asyncio.Future[T | _Failure]:
    """Run `fn` in a daemon thread; the future is resolved on the calling loop."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T | _Failure] = loop.create_future()
    ctx = contextvars.copy_context()

    def resolve(outcome: T | _Failure) -> None:
        if not future.done():  # cancelled when the call timed out
            future.set_result(outcome)

    def work() -> None:
        outcome: T | _Failure
        try:
            outcome = ctx.run(fn)
        except BaseException as exc:  # SystemExit from user code must not end the run
            outcome = _Failure(exc)
        with contextlib.suppress(RuntimeError):  # the loop is already closed
            loop.call_soon_threadsafe(resolve, outcome)

    threading.Thread(target=work, name=f"devall-function-{name}", daemon=True).start()
    return future


def _call(func: Callable[..., Any], args: list[Any], kwargs: Mapping[str, Any]) -> Any:
    """Call `func`; an awaitable it returns is run to its end on an event loop of this thread."""
    value = func(*args, **kwargs)
    if inspect.isawaitable(value):
        value = asyncio.run(_awaited(value))
    return value


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class FunctionSource:
    """Tools backed by the Python functions of a functions directory."""

    kind: SourceKind = "function"

    def __init__(
        self,
        *,
        id: str,
        config: FunctionToolingConfig,
        store: AttachmentStore | None,
        context: Mapping[str, Any] | None = None,
        import_modules: bool = True,
    ) -> None:
        self.id = id
        self.config = config
        self.target = config.functions_dir
        self.store = store
        # Read at call time, so a caller may keep it up to date (e.g. the current node).
        self.context = context if context is not None else EMPTY
        # False for a source that only lists its tools: then no user code runs until a call.
        self._import_modules = import_modules
        self._infos: dict[str, FunctionInfo] | None = None
        self._callables: dict[str, _Callable] = {}
        self._start_lock = asyncio.Lock()
        self._chatdev_attachments: Any = None  # ChatDev's store, made at the first call needing it

    async def start(self) -> ServerInfo:
        """Read the referenced functions from source and import their modules (for a run).

        A bad reference, or a module that fails to import, is a ConfigError.
        """
        started = time.perf_counter()
        async with self._start_lock:
            if self._infos is None:
                infos = await self._in_thread(self._resolve, "resolve")
                self._infos = {info.name: info for info in infos}
            if self._import_modules:
                await self._import(list(self._infos.values()))
        return ServerInfo(
            server_name="functions", connect_ms=(time.perf_counter() - started) * 1000
        )

    def _resolve(self) -> list[FunctionInfo]:
        return resolve_function_tools(self.config.folder, self.config.tools)

    async def _import(self, infos: list[FunctionInfo]) -> None:
        missing = [info for info in infos if info.name not in self._callables]
        if missing:
            loaded = await self._in_thread(lambda: [_Callable.load(i) for i in missing], "import")
            self._callables.update((c.info.name, c) for c in loaded)

    async def _in_thread(self, work: Callable[[], T], what: str) -> T:
        """Run resolving or importing in a worker thread: module code may block or never end."""
        outcome = await _run_in_thread(work, f"{self.id}-{what}")
        if isinstance(outcome, _Failure):
            if isinstance(outcome.exc, FunctionResolutionError):
                raise ConfigError(outcome.exc.message) from None
            raise outcome.exc
        return outcome

    async def _resolved(self) -> dict[str, FunctionInfo]:
        if self._infos is None:
            await self.start()
        assert self._infos is not None
        return self._infos

    async def list_tools(self) -> list[RawTool]:
        """One tool per resolved function, in declaration order (nothing is imported)."""
        return [
            RawTool(
                name=info.name,
                description=info.description,
                input_schema=info.input_schema,
                meta={"module": info.module, "file": info.file},
            )
            for info in (await self._resolved()).values()
        ]

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], *, context: CallContext | None = None
    ) -> ToolResult:
        """Check the arguments, then call the function in a worker thread (`context` unused).

        Every failure of the call comes back as an error result: `invalid_arguments` (the
        function was not called), `timeout`, or `tool_error` with what it raised.
        """
        started = time.perf_counter()
        info = (await self._resolved()).get(name)
        if info is None:
            return self._error(name, f"unknown tool '{name}'", "unknown_tool", started)
        await self._import([info])
        target = self._callables[name]
        prepared = self._prepare(target, arguments)
        if isinstance(prepared, list):
            took = _elapsed_ms(started)
            return invalid_arguments(name, prepared, source="function", duration_ms=took)
        args, kwargs = prepared
        timeout = self.config.timeout if self.config.timeout > 0 else None
        try:
            outcome = await asyncio.wait_for(self._invoke(target, args, kwargs), timeout)
        except TimeoutError:
            message = f"tool '{name}' timed out after {self.config.timeout:g}s"
            return self._error(name, message, "timeout", started)
        if isinstance(outcome, _Failure):
            return self._error(name, _describe(outcome.exc), "tool_error", started)
        return ToolResult(blocks=outcome, duration_ms=_elapsed_ms(started))

    def _prepare(
        self, target: _Callable, arguments: Mapping[str, Any]
    ) -> tuple[list[Any], dict[str, Any]] | list[str]:
        """The call's positional and keyword arguments, or what is wrong with them."""
        arguments = {k: v for k, v in arguments.items() if k != CONTEXT_PARAM}
        problems = target.checker.problems(arguments)
        if problems:
            return problems
        try:
            return self._arguments(target, arguments)
        except (TypeError, ValueError) as exc:
            return [str(exc)]

    def _arguments(
        self, target: _Callable, arguments: Mapping[str, Any]
    ) -> tuple[list[Any], dict[str, Any]]:
        """Positional and keyword arguments; raises TypeError/ValueError when they do not fit."""
        kwargs = dict(arguments)
        for param in target.fill_none:
            kwargs.setdefault(param, None)
        for param, enum_cls in target.enums.items():
            if kwargs.get(param) is not None and not isinstance(kwargs[param], enum_cls):
                kwargs[param] = enum_cls(kwargs[param])
        if target.info.accepts_context:
            kwargs[CONTEXT_PARAM] = self._context_for(target.info)
        args: list[Any] = []
        for parameter in target.signature.parameters.values():
            # Positional-only parameters are named in the schema but cannot be passed by name.
            if parameter.kind is not parameter.POSITIONAL_ONLY or parameter.name not in kwargs:
                break
            args.append(kwargs.pop(parameter.name))
        target.signature.bind(*args, **kwargs)
        return args, kwargs

    def _context_for(self, info: FunctionInfo) -> FunctionContext:
        workflow_dir = self.context.get("workflow_dir")
        run_dir = self.context.get("run_dir")
        context = FunctionContext(
            run_id=str(self.context.get("run_id") or ""),
            node_id=str(self.context.get("node_id") or ""),
            workflow_dir=Path(workflow_dir) if workflow_dir else None,
            attachment_store=self.store,
            tool_name=info.name,
            vars={},
        )
        if run_dir:
            workspace = Path(run_dir).resolve() / CODE_WORKSPACE
            context["graph_directory"] = Path(run_dir).resolve()
            context["python_workspace_root"] = workspace
            store = self._chatdev_store(info, workspace)
            if store is not None:
                context["attachment_store"] = store
        return context

    def _chatdev_store(self, info: FunctionInfo, workspace: Path) -> Any:
        """ChatDev's own AttachmentStore (`<workspace>/attachments`, as ChatDev keeps it) for a
        function of a ChatDev checkout, whose file tools accept no other; else None."""
        if chatdev_root(Path(info.file)) is None:
            return None
        if self._chatdev_attachments is None:
            try:
                attachments = importlib.import_module("utils.attachments")  # the checkout's
                self._chatdev_attachments = attachments.AttachmentStore(workspace / "attachments")
            except Exception:  # not ChatDev's after all: the function gets devall's store
                self._chatdev_attachments = False
        return self._chatdev_attachments or None

    async def _invoke(
        self, target: _Callable, args: list[Any], kwargs: dict[str, Any]
    ) -> Any:
        """The normalized blocks of one call, or a `_Failure`; sync and async functions alike."""
        name = target.info.name

        def call() -> Any:
            value = _call(target.func, args, kwargs)
            return normalize_value(value, tool_name=name, store=self.store)

        return await _run_in_thread(call, name)

    def _error(self, name: str, message: str, error_class: str, started: float) -> ToolResult:
        block = TextBlock(text=message, tool_name=name, source="function")
        return ToolResult(
            blocks=(block,),
            is_error=True,
            error_class=error_class,
            duration_ms=_elapsed_ms(started),
        )

    async def close(self) -> None:
        """Nothing to release: abandoned calls run in daemon threads."""
        self._infos = None
        self._callables = {}


def _elapsed_ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
