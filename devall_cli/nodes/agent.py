"""`agent`: an LLM with tools. Its config names a provider (a registered descriptor), a model,
a system prompt (`role`), tooling entries, request params; the node runs the model ⇄ tools loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from devall_cli.config.model import RESERVED_PARAMS, AgentConfig, ToolingConfig, frozen_mapping
from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import (
    Checker,
    KeySpec,
    check_keys,
    describe,
    get_mapping,
    is_http_url,
    opt_int,
    opt_number,
    opt_str,
)
from devall_cli.config.tooling_registry import parse_tooling
from devall_cli.config.yaml_source import KeyPath
from devall_cli.engine.events import (
    AttachmentSavedEvent,
    ModelReplyEvent,
    ModelRequestEvent,
    ToolCallEvent,
    ToolErrorEvent,
    ToolResultEvent,
)
from devall_cli.errors import DevallError, RunFailedError
from devall_cli.messages import ASSISTANT, SYSTEM, USER, Message, input_sections
from devall_cli.nodes.base import NODE_TYPES, NodeRun, NodeType
from devall_cli.providers.base import AssistantMessage, Provider, ToolCall
from devall_cli.providers.media import store_media
from devall_cli.providers.registry import PROVIDERS, ProviderType
from devall_cli.tools.attachments import AttachmentStore
from devall_cli.tools.base import AttachmentBlock, TextBlock, ToolResult, ToolSpec
from devall_cli.tools.normalize import blocks_to_json, render_for_model

COMMON_KEYS = frozenset(
    {"provider", "name", "base_url", "api_key", "role", "tooling", "params", "input_mode"}
)
INPUT_MODES = ("messages", "prompt")
_RETRY_NOTE = "'retry' has no effect in devall (ignored); set params.retries instead"


def _keys(provider: ProviderType | None) -> KeySpec:
    """The agent keys: the common ones and those the chosen provider reads."""
    own = provider.keys if provider is not None else frozenset()
    others = frozenset(k for p in PROVIDERS.all().values() if p is not provider for k in p.keys)
    return KeySpec(
        known=COMMON_KEYS | own,
        ignored=others,  # another provider's key (a leftover `script`) is reported below
        noted={"retry": _RETRY_NOTE},
        unsupported={
            "memories": "agent memory",
            "memory": "agent memory",
            "thinking": "the thinking stage",
            "skills": "agent skills",
        },
    )


def parse_agent(ck: Checker, config: dict[str, Any], path: KeyPath) -> AgentConfig | None:
    """An LLM agent: provider, model, prompt, tooling, request params."""
    provider = _provider(ck, config, path)
    check_keys(ck, config, path, _keys(provider))
    _other_providers_keys(ck, config, path, provider)
    required = provider is None or provider.name_required
    name = opt_str(ck, config, "name", path, required=required)
    base_url = _base_url(ck, config, path)
    ck.secret_url(base_url)
    api_key = opt_str(ck, config, "api_key", path)
    ck.secret(api_key)
    role = opt_str(ck, config, "role", path)
    input_mode = _input_mode(ck, config, path)
    tooling = parse_tooling(ck, config.get("tooling"), (*path, "tooling"))
    params, reserved = _params(ck, config, path)
    own = provider.parse(ck, config, path) if provider is not None else None
    if provider is None or (name is None and provider.name_required):
        return None
    return AgentConfig(
        provider=provider.name,
        name=name or provider.name,
        base_url=base_url,
        api_key=api_key,
        role=role,
        tooling=tooling,
        params=frozen_mapping(params),
        provider_config=own,
        input_mode=input_mode,
        **reserved,
    )


def _provider(ck: Checker, config: dict[str, Any], path: KeyPath) -> ProviderType | None:
    name = opt_str(ck, config, "provider", path, required=True)
    if name is None:
        return None
    provider = PROVIDERS.get(name.strip().lower())
    if provider is None:
        ck.error((*path, "provider"), PROVIDERS.unknown_message(name))
    return provider


def _other_providers_keys(
    ck: Checker, config: dict[str, Any], path: KeyPath, provider: ProviderType | None
) -> None:
    if provider is None:
        return
    for other in PROVIDERS.all().values():
        for key in sorted(other.keys - provider.keys):
            if config.get(key) is not None and other is not provider:
                ck.warning(
                    (*path, key),
                    f"{key} is only used by 'provider: {other.name}' (ignored)",
                    at_key=True,
                )


def _input_mode(ck: Checker, config: dict[str, Any], path: KeyPath) -> str:
    mode = opt_str(ck, config, "input_mode", path)
    if mode is None or not mode.strip():
        return "messages"
    mode = mode.strip().lower()
    if mode not in INPUT_MODES:
        ck.error((*path, "input_mode"), f"input_mode must be 'messages' or 'prompt', got {mode!r}")
        return "messages"
    return mode


def _base_url(ck: Checker, config: dict[str, Any], path: KeyPath) -> str | None:
    base_url = opt_str(ck, config, "base_url", path)
    if base_url is None or not base_url.strip():
        return None
    if not is_http_url(base_url):
        ck.error(
            (*path, "base_url"),
            f"base_url must be an http:// or https:// URL, got {describe(base_url)}",
        )
        return None
    return base_url.strip().rstrip("/")


def _params(
    ck: Checker, config: dict[str, Any], path: KeyPath
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Request-body params, and the reserved keys that configure devall instead."""
    raw = config.get("params")
    if raw is None or raw is UNRESOLVED:
        return {}, {}
    here = (*path, "params")
    params = get_mapping(ck, raw, here, "params")
    if params is None:
        return {}, {}
    reserved: dict[str, Any] = {
        "tool_loop_limit": opt_int(ck, params, "tool_loop_limit", here, 50, minimum=1),
        "timeout": opt_number(ck, params, "timeout", here, 300.0, positive=True),
        "retries": opt_int(ck, params, "retries", here, 5, minimum=0),
        "max_result_chars": opt_int(ck, params, "max_result_chars", here, 100_000, minimum=1),
    }
    body = {key: value for key, value in params.items() if key not in RESERVED_PARAMS}
    return body, reserved


def _tooling(settings: AgentConfig) -> tuple[ToolingConfig, ...]:
    return settings.tooling


def _details(settings: AgentConfig) -> dict[str, Any]:
    return {"provider": settings.provider, "model": settings.name}


# --- running -----------------------------------------------------------------------------


def conversation(config: AgentConfig, inputs: Sequence[Message]) -> list[dict[str, Any]]:
    """The messages sent to the model: the system prompt, then the node's queued inputs.

    `messages` mode sends each input with its own role; `prompt` mode sends one user message
    with a `=== INPUT FROM <source> (<role>) ===` section per input. No input at all is one
    empty user message (ChatDev's behaviour).
    """
    messages: list[dict[str, Any]] = []
    if config.role:
        messages.append({"role": SYSTEM, "content": config.role})
    if config.input_mode == "prompt":
        messages.append({"role": USER, "content": input_sections(inputs)})
    elif inputs:
        messages.extend({"role": m.role, "content": m.text} for m in inputs)
    else:
        messages.append({"role": USER, "content": ""})
    return messages


async def run_agent(run: NodeRun) -> list[Message]:
    """The model ⇄ tools loop; the output is the model's final text."""
    config: AgentConfig = run.node.config
    messages = conversation(config, run.inputs)
    specs = await run.tools.specs_for(run.path)
    provider = run.make_provider(config, run.state)
    try:
        text = await _loop(run.path, config, messages, specs, provider, run)
    finally:
        # Closing must not hide the error that ended the loop, nor be skipped on cancellation.
        with contextlib.suppress(Exception):
            await provider.aclose()
    return [Message(role=ASSISTANT, text=text)]


async def _loop(
    node_id: str,
    config: AgentConfig,
    messages: list[dict[str, Any]],
    specs: list[ToolSpec],
    provider: Provider,
    run: NodeRun,
) -> str:
    by_name = {spec.name: spec for spec in specs}
    round_no = 0
    while True:
        round_no += 1
        reply = await _ask_model(node_id, round_no, messages, specs, provider, run)
        messages.append(reply.to_message())
        if not reply.tool_calls:
            return reply.content or ""
        if round_no > config.tool_loop_limit:
            raise RunFailedError(
                f"node '{node_id}': the model still asked for tools after "
                f"tool_loop_limit={config.tool_loop_limit} rounds of tool calls",
                details=["raise params.tool_loop_limit if the task needs more rounds"],
            )
        results = await _run_calls(node_id, reply.tool_calls, by_name, run)
        for call, result in zip(reply.tool_calls, results, strict=True):
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call.id,
                    "content": render_for_model(result.blocks, max_chars=config.max_result_chars),
                }
            )


async def _ask_model(
    node_id: str,
    round_no: int,
    messages: Sequence[Mapping[str, Any]],
    specs: list[ToolSpec],
    provider: Provider,
    run: NodeRun,
) -> AssistantMessage:
    run.emit(
        ModelRequestEvent(
            run_id=run.run_id,
            node_id=node_id,
            round=round_no,
            messages=len(messages),
            tools=[spec.name for spec in specs],
        )
    )
    started = time.monotonic()
    reply = await provider.complete(list(messages), specs)
    if reply.media:
        reply = _save_media(node_id, run.node.config, reply, run)
    run.emit(
        ModelReplyEvent(
            run_id=run.run_id,
            node_id=node_id,
            round=round_no,
            content=reply.content,
            tool_calls=[
                {"id": c.id, "name": c.name, "arguments": dict(c.arguments)}
                for c in reply.tool_calls
            ],
            usage=asdict(reply.usage),
            duration_ms=_ms(started),
        )
    )
    return reply


# --- tool calls ------------------------------------------------------------------------------


async def _run_calls(
    node_id: str, calls: Sequence[ToolCall], by_name: Mapping[str, ToolSpec], run: NodeRun
) -> list[ToolResult]:
    """Execute the calls of one turn concurrently; results in the order of the calls."""
    if len(calls) == 1:  # the common case: no task to spawn, no other call to stop on failure
        return [await _run_call(node_id, calls[0], by_name, run)]
    tasks = [asyncio.create_task(_run_call(node_id, call, by_name, run)) for call in calls]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        # An infrastructure failure (or cancellation) stops the other calls of the turn.
        pending = [task for task in tasks if not task.done()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
    for task in tasks:  # the first failure in call order, if any
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    return [task.result() for task in tasks]


@dataclass(frozen=True)
class _CallTrace:
    """The fields every event of one tool call carries."""

    run_id: str
    node_id: str
    call_id: str
    tool: str
    original_name: str
    source: str
    server: str

    @classmethod
    def of(cls, node_id: str, call: ToolCall, spec: ToolSpec | None, run_id: str) -> _CallTrace:
        if spec is None:  # a name the model made up; the ToolManager answers with an error
            return cls(run_id, node_id, call.id, call.name, call.name, "", "")
        return cls(
            run_id, node_id, call.id, call.name, spec.original_name, spec.source, spec.server
        )

    def call_event(self, arguments: Mapping[str, Any]) -> ToolCallEvent:
        return ToolCallEvent(**self._fields(), arguments=dict(arguments))

    def result_event(
        self, result: ToolResult, duration_ms: float, *, infra: bool = False
    ) -> ToolResultEvent:
        kind = ToolErrorEvent if infra else ToolResultEvent
        return kind(
            **self._fields(),
            blocks=blocks_to_json(result.blocks),
            is_error=result.is_error,
            error_class=result.error_class,
            duration_ms=duration_ms,
        )

    def _fields(self) -> dict[str, Any]:
        # Not dataclasses.asdict: it deep-copies every value, twice per tool call.
        return dict(vars(self))


async def _run_call(
    node_id: str, call: ToolCall, by_name: Mapping[str, ToolSpec], run: NodeRun
) -> ToolResult:
    trace = _CallTrace.of(node_id, call, by_name.get(call.name), run.run_id)
    run.emit(trace.call_event(call.arguments))
    started = time.monotonic()
    if call.error is not None:
        # Bad JSON from the model is a tool error the model can correct, not a failure.
        result = _error_result(call.name, call.error, "invalid_arguments")
    else:
        try:
            result = await run.tools.call(node_id, call.name, call.arguments)
        except DevallError as exc:
            error_class = str(getattr(exc, "status", "") or type(exc).__name__)
            failed = _error_result(call.name, exc.message, error_class)
            run.emit(trace.result_event(failed, _ms(started), infra=True))
            raise
    run.emit(trace.result_event(result, result.duration_ms or _ms(started)))
    for block in result.blocks:
        if isinstance(block, AttachmentBlock):
            run.emit(
                AttachmentSavedEvent(
                    run_id=run.run_id,
                    node_id=node_id,
                    tool=call.name,
                    path=block.path,
                    mime_type=block.mime_type,
                    size=block.size,
                    sha256=block.sha256,
                )
            )
    return result


def _save_media(
    node_id: str, config: AgentConfig, reply: AssistantMessage, run: NodeRun
) -> AssistantMessage:
    """Images the model answered with: saved as attachments and named in the reply's text."""
    store = AttachmentStore(run.run_dir) if run.run_dir is not None else None
    reply, saved = store_media(reply, store, config.provider)
    for block in saved:
        run.emit(
            AttachmentSavedEvent(
                run_id=run.run_id,
                node_id=node_id,
                tool=config.provider,
                path=block.path,
                mime_type=block.mime_type,
                size=block.size,
                sha256=block.sha256,
            )
        )
    return reply


def _error_result(tool: str, message: str, error_class: str) -> ToolResult:
    text = message if message.startswith("Error") else f"Error: {message}"
    return ToolResult(
        blocks=(TextBlock(text=text, tool_name=tool, source="devall"),),
        is_error=True,
        error_class=error_class,
    )


def _ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 3)


AGENT = NODE_TYPES.register(
    NodeType(
        "agent",
        "an LLM that may call tools",
        KeySpec(known=COMMON_KEYS),
        parse_agent,
        run_agent,
        tooling=_tooling,
        details=_details,
    )
)
