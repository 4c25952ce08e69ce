"""An agent node's model answers the sampling requests of the MCP servers it calls.

A server's `sampling/createMessage` during one of the node's tool calls goes to the node's own
provider (the `scripted` one too: its script goes on), with the request's `maxTokens` (capped
by the server's `sampling_max_tokens`), temperature and stop sequences in place of the node's
params, and no tools. The call is traced as a model turn of stage `sampling`, so its tokens
count in the node's totals.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from devall_cli.config.model import frozen_mapping
from devall_cli.nodes.agent_settings import AgentConfig
from devall_cli.providers.base import AssistantMessage, Provider
from devall_cli.tools.base import SamplingReply, SamplingRequest

SAMPLING = "sampling"  # the stage of the model turns that answer a server
# The params the request sets for the model in place of the node's own.
_TOKEN_KEYS = ("max_tokens", "max_completion_tokens", "max_output_tokens")

AskModel = Callable[[Provider, str, Sequence[Mapping[str, Any]]], Awaitable[AssistantMessage]]
MakeProvider = Callable[[AgentConfig], Provider]


class NodeSampler:
    """Answers sampling requests with a fresh provider made from the node's config."""

    def __init__(self, config: AgentConfig, make_provider: MakeProvider, ask: AskModel) -> None:
        self._config = config
        self._make_provider = make_provider
        self._ask = ask  # traces the turn (model.request / model.reply) and returns the reply

    async def sample(self, request: SamplingRequest) -> SamplingReply:
        """The node's model's reply to the request."""
        config = sampling_config(self._config, request)
        provider = self._make_provider(config)
        messages: list[Mapping[str, Any]] = []
        if request.system_prompt:
            messages.append({"role": "system", "content": request.system_prompt})
        messages.extend(request.messages)
        try:
            reply = await self._ask(provider, SAMPLING, messages)
        finally:
            with contextlib.suppress(Exception):
                await provider.aclose()
        return SamplingReply(text=reply.content or "", model=config.name, stop_reason="endTurn")


def sampling_config(config: AgentConfig, request: SamplingRequest) -> AgentConfig:
    """The node's config with the request's token limit, temperature and stop sequences."""
    params = dict(config.params)
    key = next((k for k in _TOKEN_KEYS if k in params), "max_tokens")
    params[key] = request.max_tokens
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.stop_sequences:
        params["stop"] = list(request.stop_sequences)
    return dataclasses.replace(config, params=frozen_mapping(params))
