"""`agent`: an LLM with tools. A visit runs the model ⇄ tools loop, with the thinking stage
(`agent_thinking.py`) and the memories (`agent_memory.py`) around it; the descriptor and the
config it runs with are `agent_config.py`'s (parsing a workflow never imports this module).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from devall_cli.cassette import exchange_scope
from devall_cli.errors import RunFailedError
from devall_cli.events import AttachmentSavedEvent, ModelReplyEvent, ModelRequestEvent
from devall_cli.messages import ASSISTANT, SYSTEM, USER, Message, input_sections
from devall_cli.nodes.agent_calls import run_calls
from devall_cli.nodes.agent_config import parse_agent as parse_agent  # re-exported
from devall_cli.nodes.agent_memory import AgentMemory
from devall_cli.nodes.agent_sampling import NodeSampler
from devall_cli.nodes.agent_settings import AgentConfig
from devall_cli.nodes.agent_thinking import AgentThinking
from devall_cli.nodes.base import NodeRun
from devall_cli.nodes.surface_size import check_surface
from devall_cli.providers.base import AssistantMessage, Provider
from devall_cli.providers.media import store_media
from devall_cli.skills.tools import SkillTools
from devall_cli.thinking.base import GEN
from devall_cli.tools.attachments import AttachmentStore
from devall_cli.tools.base import Sampler, ToolSpec
from devall_cli.tools.normalize import render_for_model


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
        # The ToolManager's; a dispatcher without MCP servers serves no skill.
        sources_of = getattr(run.tools, "server_sources", None)
        if config.skills.servers and sources_of is not None:
            await skills.add_served(sources_of(run.path))
        specs = [*specs, *skills.specs()]
    check_surface(run, specs)  # a warning before the visit's first request, if it is too big
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
