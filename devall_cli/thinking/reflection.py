"""`thinking: {type: reflection}`: after answering, the model reflects on the exchange, and the
reflection is the node's output (ChatDev's self-reflection).

The reflection request is one user message: `Here is a conversation between two roles:`, the
node's memories for this stage (if any), `SYSTEM: <role>`, `USER: <inputs>`, `ASSISTANT:
<answer>`, then the reflection prompt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from devall_cli.config.schema import Checker, KeySpec, opt_str
from devall_cli.config.yaml_source import KeyPath
from devall_cli.messages import USER
from devall_cli.thinking.base import THINKING_TYPES, Thinker, ThinkingInput, ThinkingType

_BASE_PROMPT = "Here is a conversation between two roles: {conversations} {reflection_prompt}"


@dataclass(frozen=True)
class ReflectionConfig:
    """`thinking.config` of the reflection type."""

    reflection_prompt: str


class Reflection(Thinker):
    """Reflects after the answer; the reflection replaces it."""

    after_enabled = True

    def __init__(self, config: ReflectionConfig) -> None:
        self.prompt = config.reflection_prompt

    async def _after(self, given: ThinkingInput, answer: str) -> tuple[str, bool]:
        parts = [f"SYSTEM: {given.role}", f"USER: {given.input_text}", f"ASSISTANT: {answer}"]
        if given.memory_text:
            parts.insert(0, given.memory_text)
        prompt = _BASE_PROMPT.format(
            conversations="\n\n".join(parts), reflection_prompt=self.prompt
        )
        return await given.invoke([{"role": USER, "content": prompt}]), True


def parse_reflection(ck: Checker, config: dict[str, Any], path: KeyPath) -> Any:
    """`reflection_prompt`: required text."""
    prompt = opt_str(ck, config, "reflection_prompt", path, required=True)
    return None if prompt is None else ReflectionConfig(prompt)


def _make(settings: Any) -> Thinker:
    return Reflection(settings)


REFLECTION = THINKING_TYPES.register(
    ThinkingType(
        "reflection",
        "the model reflects on its answer; the reflection is the node's output",
        KeySpec(known=frozenset({"reflection_prompt"})),
        parse_reflection,
        _make,
    )
)
