"""`agent`: an LLM with tools. Its config names a provider (a registered descriptor), a model,
a system prompt (`role`), tooling entries, request params, and optionally a thinking stage, the
graph's memories it uses and its skills; the node runs the model ⇄ tools loop, with the thinking
stage (`agent_thinking.py`) and the memories (`agent_memory.py`) around it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from devall_cli.cassette import exchange_scope
from devall_cli.config.json_shapes import Schema, array_of, ref
from devall_cli.config.model import frozen_mapping
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
from devall_cli.config.yaml_source import KeyPath
from devall_cli.errors import RunFailedError
from devall_cli.events import AttachmentSavedEvent, ModelReplyEvent, ModelRequestEvent
from devall_cli.memory.base import MemoryRefConfig
from devall_cli.memory.config import memory_refs_shape, parse_memory_refs
from devall_cli.messages import ASSISTANT, SYSTEM, USER, Message, input_sections
from devall_cli.nodes.agent_calls import run_calls
from devall_cli.nodes.agent_memory import AgentMemory
from devall_cli.nodes.agent_sampling import NodeSampler
from devall_cli.nodes.agent_settings import AgentConfig
from devall_cli.nodes.agent_thinking import AgentThinking
from devall_cli.nodes.base import NODE_TYPES, NodeRun, NodeType
from devall_cli.providers.base import RESERVED_PARAMS, AssistantMessage, Provider
from devall_cli.providers.media import store_media
from devall_cli.providers.registry import PROVIDERS, ProviderType
from devall_cli.skills.config import parse_skills, skills_shape
from devall_cli.skills.tools import SkillTools
from devall_cli.thinking.base import GEN, parse_thinking, thinking_shape
from devall_cli.tools.attachments import AttachmentStore
from devall_cli.tools.base import Sampler, ToolSpec
from devall_cli.tools.kinds.registry import parse_tooling
from devall_cli.tools.normalize import render_for_model
from devall_cli.tools.policy_config import check_tool_rules, parse_tool_policy, policy_shape

COMMON_KEYS = frozenset(
    {
        "provider",
        "name",
        "base_url",
        "api_key",
        "role",
        "tooling",
        "params",
        "input_mode",
        "thinking",
        "memories",
        "skills",
        "tool_policy",
    }
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
        unsupported={"memory": "an agent-level memory block (ChatDev's old form)"},
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
    thinking = parse_thinking(ck, config.get("thinking"), (*path, "thinking"))
    memories = parse_memory_refs(ck, config.get("memories"), (*path, "memories"))
    skills = parse_skills(ck, config.get("skills"), (*path, "skills"))
    tool_policy = parse_tool_policy(ck, config.get("tool_policy"), (*path, "tool_policy"))
    check_tool_rules(ck, tool_policy, tooling, "the node")
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
        thinking=thinking,
        memories=memories,
        skills=skills,
        tool_policy=tool_policy,
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


def _details(settings: AgentConfig) -> dict[str, Any]:
    details: dict[str, Any] = {"provider": settings.provider, "model": settings.name}
    if settings.thinking is not None:
        details["thinking"] = settings.thinking.type
    if settings.memories:
        details["memories"] = [ref.name for ref in settings.memories]
    if settings.skills is not None:
        details["skills"] = list(settings.skills.allow) or ["*"]
    return details


def _memory_refs(settings: AgentConfig) -> tuple[MemoryRefConfig, ...]:
    return settings.memories


# --- running -----------------------------------------------------------------------------


def conversation(
    config: AgentConfig, inputs: Sequence[Message], *, skills: str | None = None
) -> list[dict[str, Any]]:
    """The messages sent to the model: the system prompt, then the node's queued inputs.

    The system prompt is `role`, followed by what the agent's skills add. `messages` mode sends
    each input with its own role; `prompt` mode sends one user message with a
    `=== INPUT FROM <source> (<role>) ===` section per input. No input at all is one empty user
    message (ChatDev's behaviour).
    """
    messages: list[dict[str, Any]] = []
    system = "\n\n".join(part for part in (config.role, skills) if part)
    if system:
        messages.append({"role": SYSTEM, "content": system})
    if config.input_mode == "prompt":
        messages.append({"role": USER, "content": input_sections(inputs)})
    elif inputs:
        messages.extend({"role": m.role, "content": m.text} for m in inputs)
    else:
        messages.append({"role": USER, "content": ""})
    return messages


async def run_agent(run: NodeRun) -> list[Message]:
    """Thinking, memories, then the model ⇄ tools loop; the output is the model's final text
    (or what the thinking stage made of it)."""
    config: AgentConfig = run.node.config
    specs = await run.tools.specs_for(run.path)
    skills = None
    if config.skills is not None:
        skills = SkillTools(config.skills, specs, run.workflow_dir)
        specs = [*specs, *skills.specs()]
    messages = conversation(config, run.inputs, skills=skills.prompt() if skills else None)
    memory = AgentMemory.of(config, run)
    thinking = AgentThinking.of(config, run, memory)
    provider = run.make_provider(config, run.state)

    async def ask(stage: str, request: list[Mapping[str, Any]]) -> str:
        # A thinking stage's call: traced with its stage, offering no tools.
        reply = await _ask_model(run.path, 1, request, [], provider, run, stage=stage)
        return reply.content or ""

    async def ask_with(
        other: Provider, stage: str, request: Sequence[Mapping[str, Any]]
    ) -> AssistantMessage:
        # A server's sampling request: traced like a thinking stage's call, on its own provider.
        # It comes in on the server's session, outside this visit: a tape files it under it.
        with exchange_scope(run.path, run.visit):
            return await _ask_model(run.path, 1, request, [], other, run, stage=stage)

    sampler = NodeSampler(config, lambda cfg: run.make_provider(cfg, run.state), ask_with)

    try:
        if thinking is not None:
            await thinking.before(messages, ask)
        if memory is not None:
            await memory.insert(messages, GEN, config.input_mode)
        text = await _loop(run.path, config, messages, specs, provider, run, skills, sampler)
        if thinking is not None:
            text = await thinking.after(text, ask)
        if memory is not None:
            await memory.write(text)
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
    skills: SkillTools | None = None,
    sampler: Sampler | None = None,
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
        results = await run_calls(node_id, reply.tool_calls, by_name, run, skills, sampler)
        for call, result in zip(reply.tool_calls, results, strict=True):
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call.id,
                    "content": render_for_model(result.blocks, max_chars=config.max_result_chars),
                }
            )
        if skills is not None:
            # After all the turn's tool results: the API wants them right after the call.
            messages.extend(skills.take_followups())


async def _ask_model(
    node_id: str,
    round_no: int,
    messages: Sequence[Mapping[str, Any]],
    specs: list[ToolSpec],
    provider: Provider,
    run: NodeRun,
    *,
    stage: str = GEN,
) -> AssistantMessage:
    run.emit(
        ModelRequestEvent(
            run_id=run.run_id,
            node_id=node_id,
            round=round_no,
            messages=len(messages),
            tools=[spec.name for spec in specs],
            stage=stage,
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
            stage=stage,
            model=run.node.config.name,
        )
    )
    return reply


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


def _ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 3)


def _shapes() -> dict[str, Schema]:
    """The nested blocks of an agent's config, with those of every provider's own keys."""
    shapes: dict[str, Schema] = {
        "provider": {"enum": [*PROVIDERS.names(), None]},
        "input_mode": {"enum": list(INPUT_MODES)},
        "tooling": array_of(ref("tooling_entry")),
        "params": {"type": "object"},
        "thinking": thinking_shape(),
        "memories": memory_refs_shape(),
        "skills": skills_shape(),
        "tool_policy": policy_shape(),
    }
    for provider in PROVIDERS.all().values():
        shapes.update(provider.shapes())
    return shapes


AGENT = NODE_TYPES.register(
    NodeType(
        "agent",
        "an LLM that may call tools",
        _keys(None),  # every key an agent accepts, whichever its provider
        parse_agent,
        run_agent,
        details=_details,
        memory_refs=_memory_refs,
        shapes=_shapes,
        label=lambda settings: settings.name,
        note=lambda settings: f"{settings.provider}: {settings.name}",
    )
)
