"""What a thinking type is, how an agent's `thinking:` block is read, and the two stages.

A thinking type may think before the model answers (its result is added to the conversation)
and after (its result replaces the answer, or is appended to it). It asks the model through an
`invoke` callable the agent gives it, so its calls are traced and counted like every model turn.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from devall_cli.config.json_shapes import Schema, keys_object, no_shapes, typed_block
from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import Checker, KeySpec, check_keys, get_mapping, opt_str
from devall_cli.config.yaml_source import KeyPath
from devall_cli.kinds import Registry

PRE_GEN = "pre_gen_thinking"
GEN = "gen"
POST_GEN = "post_gen_thinking"
FINISHED = "finished"
STAGES = (PRE_GEN, GEN, POST_GEN, FINISHED)  # ChatDev's AgentExecFlowStage values

# One model call of a thinking stage: the messages in, the answer's text out.
Invoke = Callable[[list[Mapping[str, Any]]], Awaitable[str]]


@dataclass(frozen=True)
class ThinkingConfig:
    """An agent's `thinking:` block: a registered type and that type's settings."""

    type: str
    config: Any


@dataclass(frozen=True)
class ThinkingInput:
    """What a thinking stage sees of the node's visit."""

    invoke: Invoke
    input_text: str  # the node's inputs, one `=== INPUT FROM ... ===` section each
    role: str  # the agent's system prompt ("" without one)
    memory_text: str | None = None  # what the node's memories gave for this stage


class Thinker:
    """The runtime of one thinking type; subclasses enable and implement their stages.

    A stage returns (text, replace): with `replace` the text takes the place of the input (before)
    or of the answer (after); otherwise it is appended as `Thinking Result: ...` (ChatDev's rule).
    """

    before_enabled = False
    after_enabled = False
    concat = "{origin}\n\nThinking Result: {thinking}"

    async def _before(self, given: ThinkingInput) -> tuple[str, bool]:
        raise NotImplementedError

    async def _after(self, given: ThinkingInput, answer: str) -> tuple[str, bool]:
        raise NotImplementedError

    async def before(self, given: ThinkingInput) -> str:
        """The text the conversation gets before the model is asked."""
        thought, replace = await self._before(given)
        return thought if replace else self.concat.format(origin=given.input_text, thinking=thought)

    async def after(self, given: ThinkingInput, answer: str) -> str:
        """The node's output, from the model's answer."""
        thought, replace = await self._after(given, answer)
        return thought if replace else self.concat.format(origin=answer, thinking=thought)


@dataclass(frozen=True)
class ThinkingType:
    """One thinking type: its config keys, how it is read, and its runtime."""

    name: str
    summary: str
    keys: KeySpec
    parse: Callable[[Checker, dict[str, Any], KeyPath], Any]  # settings, or None after errors
    make: Callable[[Any], Thinker]
    shapes: Callable[[], dict[str, Schema]] = no_shapes  # `devall schema`: nested blocks


THINKING_TYPES: Registry[ThinkingType] = Registry(
    "thinking type", ("devall_cli.thinking.reflection",)
)
_THINKING_KEYS = KeySpec(known=frozenset({"type", "config"}))


def parse_thinking(ck: Checker, raw: Any, path: KeyPath) -> ThinkingConfig | None:
    """`thinking: {type, config}`; null (or absent) means no thinking stage."""
    if raw is None or raw is UNRESOLVED or raw is False or raw == {}:
        return None
    block = get_mapping(ck, raw, path, "thinking")
    if block is None:
        return None
    check_keys(ck, block, path, _THINKING_KEYS)
    name = opt_str(ck, block, "type", path, required=True)
    kind = THINKING_TYPES.get(name.strip()) if name is not None else None
    if name is not None and kind is None:
        ck.error((*path, "type"), THINKING_TYPES.unknown_message(name))
    here = (*path, "config")
    settings_raw = block.get("config")
    if settings_raw is None:  # ChatDev requires the block, even for a type with defaults
        ck.error(here, "thinking needs a config block (for reflection: reflection_prompt)")
        return None
    settings = get_mapping(ck, settings_raw, here, "config")
    if kind is None or settings is None:
        return None
    check_keys(ck, settings, here, kind.keys)
    parsed = kind.parse(ck, settings, here)
    return None if parsed is None else ThinkingConfig(kind.name, parsed)


def make_thinker(config: ThinkingConfig) -> Thinker:
    """The runtime of a parsed thinking block."""
    kind = THINKING_TYPES.get(config.type)
    if kind is None:  # the loader checked the type; a programming error otherwise
        raise KeyError(config.type)
    return kind.make(config.config)


def thinking_shape() -> Schema:
    """The schema of an agent's `thinking` block: `{type, config}` of a registered type."""
    return typed_block(
        THINKING_TYPES.all(),
        lambda kind: keys_object(kind.keys, strict=True, shapes=kind.shapes()),
        _THINKING_KEYS,
        strict=True,
    )
