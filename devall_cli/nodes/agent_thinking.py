"""An agent visit's thinking stages: before the model is asked, and after it answered.

A stage asks the model through `ask` (a traced model call labelled with the stage, offering no
tools), and sees what the node's memories give for that stage.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from devall_cli.messages import USER, input_sections
from devall_cli.nodes.agent_memory import AgentMemory
from devall_cli.nodes.agent_settings import AgentConfig
from devall_cli.nodes.base import NodeRun
from devall_cli.thinking.base import POST_GEN, PRE_GEN, Thinker, ThinkingInput, make_thinker

# One model call of a stage: (stage, messages) -> the answer's text.
Ask = Callable[[str, list[Mapping[str, Any]]], Awaitable[str]]


class AgentThinking:
    """The thinking stage of one agent visit."""

    def __init__(
        self, thinker: Thinker, config: AgentConfig, run: NodeRun, memory: AgentMemory | None
    ) -> None:
        self.thinker = thinker
        self.role = config.role or ""
        self.input_mode = config.input_mode
        self.input_text = input_sections(run.inputs)
        self.memory = memory

    @classmethod
    def of(
        cls, config: AgentConfig, run: NodeRun, memory: AgentMemory | None
    ) -> AgentThinking | None:
        """The visit's thinking stage; None when the agent has none."""
        if config.thinking is None:
            return None
        return cls(make_thinker(config.thinking), config, run, memory)

    async def _input(self, stage: str, ask: Ask) -> ThinkingInput:
        memory_text = await self.memory.retrieve(stage) if self.memory is not None else None

        async def invoke(messages: list[Mapping[str, Any]]) -> str:
            return await ask(stage, messages)

        return ThinkingInput(invoke, self.input_text, self.role, memory_text)

    async def before(self, messages: list[dict[str, Any]], ask: Ask) -> None:
        """Think before the model answers; the thought joins the conversation."""
        if not self.thinker.before_enabled:
            return
        thought = await self.thinker.before(await self._input(PRE_GEN, ask))
        if self.input_mode == "prompt":
            messages[-1] = {**messages[-1], "content": thought}
        else:
            messages.append({"role": USER, "content": thought})

    async def after(self, answer: str, ask: Ask) -> str:
        """Think about the answer; the node's output."""
        if not self.thinker.after_enabled:
            return answer
        return await self.thinker.after(await self._input(POST_GEN, ask), answer)
