"""The `scripted` provider: replays the assistant turns written in the workflow (SPEC.md §3).

It drives the same model ⇄ tools loop as a real model, deterministically and without any I/O, so
workflows run offline and in CI. One instance serves one node run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from devall_cli.config.model import ScriptedTurn
from devall_cli.providers.base import AssistantMessage, ToolCall, content_text, dump_json
from devall_cli.tools.base import ToolSpec

# One pass over the text, so a substituted value that itself contains `{input}` stays as it is;
# any other brace is left untouched (str.format would choke on JSON in the content).
_PLACEHOLDER = re.compile(r"\{(input|tool_results|tool_result)\}")


class ScriptedProvider:
    """Answers with the next turn of the script; repeats the last text turn when it runs out."""

    def __init__(self, script: Sequence[ScriptedTurn]) -> None:
        self._script = tuple(script)
        self._next_turn = 0
        self._calls_made = 0
        self._fallback = next(
            (turn.content for turn in reversed(self._script) if turn.content is not None), ""
        )

    async def complete(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolSpec]
    ) -> AssistantMessage:
        """The next scripted turn, with placeholders filled from the conversation."""
        if self._next_turn >= len(self._script):
            return AssistantMessage(content=fill_placeholders(self._fallback, messages))
        turn = self._script[self._next_turn]
        self._next_turn += 1
        content = None if turn.content is None else fill_placeholders(turn.content, messages)
        calls = tuple(self._tool_call(call.name, call.arguments) for call in turn.tool_calls)
        if content is None and not calls:
            content = ""
        return AssistantMessage(content=content, tool_calls=calls)

    async def aclose(self) -> None:
        """Nothing to release."""

    def _tool_call(self, name: str, arguments: Mapping[str, Any]) -> ToolCall:
        self._calls_made += 1
        plain = _plain(arguments)
        return ToolCall(
            id=f"call_{self._calls_made}",
            name=name,
            arguments=plain,
            raw_arguments=dump_json(plain),
        )


def fill_placeholders(text: str, messages: Sequence[Mapping[str, Any]]) -> str:
    """Replace `{input}`, `{tool_result}` and `{tool_results}` from the conversation."""
    user = [content_text(m.get("content")) for m in messages if m.get("role") == "user"]
    results = [content_text(m.get("content")) for m in messages if m.get("role") == "tool"]
    values = {
        "input": "\n".join(user),
        "tool_result": results[-1] if results else "",
        "tool_results": "\n".join(results),
    }
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], text)


def _plain(value: Any) -> Any:
    """Plain dicts and lists from the read-only config structures."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
