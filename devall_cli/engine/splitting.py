"""Cutting the payload of dynamic edges into units, as ChatDev's splitters do.

Each unit is one message: a whole message (`message`), one regex match or capture group
(`regex`), or one item of a JSON array (`json_path`). A unit keeps its message's role, source
and markers; only the text changes.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from devall_cli import json_limits
from devall_cli.config.dynamic import JsonPathSplit, RegexSplit, SplitConfig
from devall_cli.messages import Message

# A reply that is one fenced block (```json ... ```), as models like to write JSON.
_FENCED = re.compile(r"\A\s*```[\w+-]*[ \t]*\n(.*?)\n?```\s*\Z", re.DOTALL)


def split_messages(split: SplitConfig, messages: Sequence[Message]) -> list[Message]:
    """The units of `messages`; when nothing comes out, every message is one unit (ChatDev)."""
    cut = _SPLITTERS[split.type]
    units = [unit for message in messages for unit in cut(split.config, message)]
    return units or list(messages)


def _by_message(settings: Any, message: Message) -> list[Message]:
    return [message]


def _by_regex(settings: RegexSplit, message: Message) -> list[Message]:
    """Every match (or its group) is a unit; without a match, the message or an empty unit."""
    matches = list(_compiled(settings.pattern, settings.flags()).finditer(message.text))
    if not matches:
        return [message] if settings.on_no_match == "pass" else [message.but(text="")]
    group = 0 if settings.group is None else settings.group
    return [message.but(text=match.group(group) or "") for match in matches]


@functools.lru_cache(maxsize=64)
def _compiled(pattern: str, flags: int) -> re.Pattern[str]:
    return re.compile(pattern, flags)


def _by_json_path(settings: JsonPathSplit, message: Message) -> list[Message]:
    """Every item of the array at the path is a unit; text that is not JSON is one unit."""
    data = _json(message.text)
    if data is _NOT_JSON:
        return [message]
    return [message.but(text=_item_text(item)) for item in follow(data, settings.steps)]


_NOT_JSON = object()


def _json(text: str) -> Any:
    for candidate in (text, *(m.group(1) for m in [_FENCED.match(text)] if m)):
        try:
            return json_limits.loads(candidate)
        except ValueError:  # not JSON, or JSON past devall's limits
            continue
    return _NOT_JSON


def follow(data: Any, steps: Sequence[str]) -> list[Any]:
    """The items at the end of `steps` (ChatDev's rules): a list gives its items, anything else
    itself; a step that leads nowhere gives nothing."""
    current = data
    for step in steps:
        if isinstance(current, dict):
            current = current.get(step)
        elif isinstance(current, list) and step.isdigit():
            index = int(step)
            current = current[index] if index < len(current) else None
        else:
            return []
        if current is None:
            return []
    return list(current) if isinstance(current, list) else [current]


def _item_text(item: Any) -> str:
    """Text as it is; anything else as JSON (`true`, `null`, `{"a": 1}`)."""
    if isinstance(item, str):
        return item
    return json.dumps(item, ensure_ascii=False)


_SPLITTERS: dict[str, Callable[[Any, Message], list[Message]]] = {
    "message": _by_message,
    "regex": _by_regex,
    "json_path": _by_json_path,
}
