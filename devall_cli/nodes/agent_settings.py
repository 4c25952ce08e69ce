"""The agent node's settings (`config` of `type: agent`)."""

from __future__ import annotations

from dataclasses import dataclass

from devall_cli.config.model import ToolingConfig
from devall_cli.memory.base import MemoryRefConfig
from devall_cli.providers.base import ModelSettings
from devall_cli.skills.config import SkillsConfig
from devall_cli.thinking.base import ThinkingConfig
from devall_cli.tools.policy import NO_POLICY, ToolPolicy


@dataclass(frozen=True)
class AgentConfig(ModelSettings):
    """`config` of an agent node: the model settings, plus what the node does with the model."""

    role: str | None = None
    tooling: tuple[ToolingConfig, ...] = ()
    input_mode: str = "messages"  # messages | prompt
    tool_loop_limit: int = 50
    max_result_chars: int = 100_000
    thinking: ThinkingConfig | None = None  # a thinking stage (reflection, ...)
    memories: tuple[MemoryRefConfig, ...] = ()  # the graph's memory stores it reads and writes
    skills: SkillsConfig | None = None  # None: skills are off
    tool_policy: ToolPolicy = NO_POLICY  # which tools the model is offered, which calls ask

    def tooling_entries(self) -> tuple[ToolingConfig, ...]:
        """The entries the agent's tools come from (config.model.HoldsTooling)."""
        return self.tooling
