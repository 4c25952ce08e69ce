"""The `scripted` provider: replays the assistant turns written in the workflow (SPEC.md §3).

It drives the same model ⇄ tools loop as a real model, deterministically and without any I/O, so
workflows run offline and in CI. One instance serves one node run. A turn may say what it
"used" (`usage: {input_tokens, output_tokens, cached_tokens, reasoning_tokens}`): those counts
are reported as a real endpoint's would be, priced and held against a run's budget
(docs/cost.md); without it a turn reports no tokens.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from devall_cli.config.json_shapes import Schema, array_of, keys_object
from devall_cli.config.model import EMPTY, frozen_mapping
from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import (
    Checker,
    KeySpec,
    check_keys,
    describe,
    get_mapping,
    opt_int,
    opt_str,
)
from devall_cli.config.yaml_source import KeyPath
from devall_cli.providers.base import (
    AssistantMessage,
    ModelSettings,
    ToolCall,
    Usage,
    content_text,
    dump_json,
)
from devall_cli.providers.registry import PROVIDERS, ProviderType
from devall_cli.tools.base import ToolSpec


@dataclass(frozen=True)
class ScriptedToolCall:
    """A tool call in a scripted turn."""

    name: str
    arguments: Mapping[str, Any] = EMPTY


@dataclass(frozen=True)
class ScriptedTurn:
    """One assistant turn of the `scripted` provider."""

    content: str | None = None
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)  # what the turn says it used (none by default)


# One pass over the text, so a substituted value that itself contains `{input}` stays as it is;
# any other brace is left untouched (str.format would choke on JSON in the content).
_PLACEHOLDER = re.compile(r"\{(input|tool_results|tool_result)\}")


class ScriptedProvider:
    """Answers with the next turn of the script; repeats the last text turn when it runs out."""

    def __init__(
        self, script: Sequence[ScriptedTurn], cursor: dict[str, int] | None = None
    ) -> None:
        self._script = tuple(script)
        # The cursor outlives one visit of the node: a node in a loop goes on with the script.
        self._cursor = cursor if cursor is not None else {}
        self._cursor.setdefault("turn", 0)
        self._cursor.setdefault("calls", 0)
        self._fallback = next(
            (turn for turn in reversed(self._script) if turn.content is not None),
            ScriptedTurn(content=""),
        )

    async def complete(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolSpec]
    ) -> AssistantMessage:
        """The next scripted turn, with placeholders filled from the conversation."""
        if self._cursor["turn"] >= len(self._script):
            text = fill_placeholders(self._fallback.content or "", messages)
            return AssistantMessage(content=text, usage=self._fallback.usage)
        turn = self._script[self._cursor["turn"]]
        self._cursor["turn"] += 1
        content = None if turn.content is None else fill_placeholders(turn.content, messages)
        calls = tuple(
            self._tool_call(call.name, call.arguments, messages) for call in turn.tool_calls
        )
        if content is None and not calls:
            content = ""
        return AssistantMessage(content=content, tool_calls=calls, usage=turn.usage)

    async def aclose(self) -> None:
        """Nothing to release."""

    def _tool_call(
        self, name: str, arguments: Mapping[str, Any], messages: Sequence[Mapping[str, Any]]
    ) -> ToolCall:
        self._cursor["calls"] += 1
        # Placeholders in argument texts are filled as in content (`{"text": "{input}"}`).
        plain = _filled(_plain(arguments), messages)
        return ToolCall(
            id=f"call_{self._cursor['calls']}",
            name=name,
            arguments=plain,
            raw_arguments=dump_json(plain),
        )


def fill_placeholders(text: str, messages: Sequence[Mapping[str, Any]]) -> str:
    """Replace `{input}`, `{tool_result}` and `{tool_results}` from the conversation."""
    if "{" not in text:  # most texts: no need to read the conversation (it grows every turn)
        return text
    values: dict[str, str] = {}

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            values[name] = _placeholder_value(name, messages)
        return values[name]

    return _PLACEHOLDER.sub(value, text)


def _placeholder_value(name: str, messages: Sequence[Mapping[str, Any]]) -> str:
    """The text a placeholder stands for in the conversation so far."""
    if name == "tool_result":
        last = next((m for m in reversed(messages) if m.get("role") == "tool"), None)
        return content_text(last.get("content")) if last is not None else ""
    role = "user" if name == "input" else "tool"
    return "\n".join(content_text(m.get("content")) for m in messages if m.get("role") == role)


def _filled(value: Any, messages: Sequence[Mapping[str, Any]]) -> Any:
    """Every text inside `value` with its placeholders filled; other values as they are."""
    if isinstance(value, str):
        return fill_placeholders(value, messages)
    if isinstance(value, dict):
        return {key: _filled(item, messages) for key, item in value.items()}
    if isinstance(value, list):
        return [_filled(item, messages) for item in value]
    return value


def _plain(value: Any) -> Any:
    """Plain dicts and lists from the read-only config structures."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


# --- the descriptor: `script` is read here -------------------------------------------------

_TURN_KEYS = KeySpec(known=frozenset({"content", "tool_calls", "usage"}))
_CALL_KEYS = KeySpec(known=frozenset({"name", "arguments"}))
_USAGE_KEYS = KeySpec(
    known=frozenset({"input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens"})
)


def parse_script(ck: Checker, config: dict[str, Any], path: KeyPath) -> tuple[ScriptedTurn, ...]:
    """The agent's `script`: a non-empty list of turns, each with content and/or tool calls."""
    raw = config.get("script")
    here = (*path, "script")
    if raw is UNRESOLVED:
        return ()
    if raw is None or raw == []:
        ck.error(
            here,
            "provider 'scripted' needs a non-empty script: a list of turns, each with "
            "'content' and/or 'tool_calls'",
        )
        return ()
    if not isinstance(raw, list):
        ck.error(here, f"script must be a list of turns, got {describe(raw)}")
        return ()
    turns = [_turn(ck, item, (*here, index)) for index, item in enumerate(raw)]
    return tuple(turn for turn in turns if turn is not None)


def _turn(ck: Checker, raw: Any, path: KeyPath) -> ScriptedTurn | None:
    if isinstance(raw, str):
        return ScriptedTurn(content=str(raw))  # a bare string is a content-only turn
    turn = get_mapping(ck, raw, path, "a script turn")
    if turn is None:
        return None
    check_keys(ck, turn, path, _TURN_KEYS)
    if turn.get("content") is None and not turn.get("tool_calls"):
        ck.error(path, "a script turn needs 'content' or 'tool_calls'")
        return None
    content = opt_str(ck, turn, "content", path)
    calls = _tool_calls(ck, turn.get("tool_calls"), (*path, "tool_calls"))
    usage = _usage(ck, turn.get("usage"), (*path, "usage"))
    return ScriptedTurn(content=content, tool_calls=calls, usage=usage)


def _usage(ck: Checker, raw: Any, path: KeyPath) -> Usage:
    """`usage: {input_tokens, output_tokens, cached_tokens, reasoning_tokens}`: counts >= 0;
    cached tokens are part of the input, reasoning tokens part of the output."""
    if raw is None or raw is UNRESOLVED:
        return Usage()
    usage = get_mapping(ck, raw, path, "usage")
    if usage is None:
        return Usage()
    with ck.strict_keys():
        check_keys(ck, usage, path, _USAGE_KEYS)
    counts = {key: opt_int(ck, usage, key, path, 0, minimum=0) for key in sorted(_USAGE_KEYS.known)}
    prompt, answer = counts["input_tokens"], counts["output_tokens"]
    if counts["cached_tokens"] > prompt:
        ck.error((*path, "cached_tokens"), "cached_tokens are part of input_tokens: at most it")
    if counts["reasoning_tokens"] > answer:
        ck.error(
            (*path, "reasoning_tokens"), "reasoning_tokens are part of output_tokens: at most it"
        )
    return Usage(
        prompt,
        answer,
        prompt + answer,
        cached_tokens=counts["cached_tokens"],
        reasoning_tokens=counts["reasoning_tokens"],
    )


def _tool_calls(ck: Checker, raw: Any, path: KeyPath) -> tuple[ScriptedToolCall, ...]:
    if raw is None or raw is UNRESOLVED:
        return ()
    if not isinstance(raw, list):
        ck.error(path, f"tool_calls must be a list of {{name, arguments}}, got {describe(raw)}")
        return ()
    calls: list[ScriptedToolCall] = []
    for index, item in enumerate(raw):
        here = (*path, index)
        call = get_mapping(ck, item, here, "a tool call")
        if call is None:
            continue
        check_keys(ck, call, here, _CALL_KEYS)
        name = opt_str(ck, call, "name", here, required=True)
        raw_arguments = call.get("arguments")
        arguments: dict[str, Any] | None = None
        if raw_arguments is not None:
            arguments = get_mapping(ck, raw_arguments, (*here, "arguments"), "arguments")
        if name is not None:
            calls.append(ScriptedToolCall(name=name, arguments=frozen_mapping(arguments or {})))
    return tuple(calls)


def make_scripted(config: ModelSettings, **options: Any) -> ScriptedProvider:
    """A provider replaying the agent's script from where the node's last visit left it."""
    state: dict[str, Any] | None = options.get("state")
    cursor = state.setdefault("script", {}) if state is not None else None
    return ScriptedProvider(config.provider_config or (), cursor)


def _shapes() -> dict[str, Schema]:
    """`script`: a list of turns, each a text or `{content, tool_calls}`."""
    call = keys_object(_CALL_KEYS, strict=True)
    counts = {key: {"type": "integer", "minimum": 0} for key in sorted(_USAGE_KEYS.known)}
    usage = keys_object(_USAGE_KEYS, strict=True, shapes=counts)
    shapes = {"tool_calls": array_of(call), "usage": usage}
    turn = keys_object(_TURN_KEYS, strict=True, shapes=shapes)
    text_turn: Schema = {"type": "string"}  # a turn that only answers
    return {"script": array_of({"anyOf": [text_turn, turn]})}


SCRIPTED = PROVIDERS.register(
    ProviderType(
        "scripted",
        "replays the turns written in `script` (offline, deterministic)",
        make=make_scripted,
        keys=frozenset({"script"}),
        parse=parse_script,
        name_required=False,
        shapes=_shapes,
    )
)
