"""`function` processors: a Python function of `functions/edge_processor/` rewrites the payload.

The function is called as ChatDev calls it, `f(text, state)`: the payload's text and the run's
state (one dict per run, shared by every processor function). It returns the new text, or a
mapping with `content` (the new text), `metadata` (merged into the message's metadata) and
`drop` (true: deliver nothing), or None to drop the payload; anything else becomes its text. A
dropped payload does not trigger the target. ChatDev passes the payload through unchanged when
the function is missing or raises; devall reports a missing function when the file is loaded,
and a raising one fails the run naming the edge and the function.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from devall_cli.config.function_dirs import PROCESSORS
from devall_cli.config.schema import Checker, KeySpec, check_keys, opt_str
from devall_cli.config.yaml_source import KeyPath
from devall_cli.edges.base import PROCESSOR_TYPES, EdgeEnv, Processor, ProcessorType
from devall_cli.edges.user_functions import attribute, find_edge_function
from devall_cli.messages import Message

KEYS = KeySpec(known=frozenset({"name"}))


@dataclass(frozen=True)
class FunctionProcessor:
    """`process: {type: function, config: {name}}`."""

    name: str
    file: str  # the module defining it (absolute), found when the file was loaded


def parse_function_processor(
    ck: Checker, config: dict[str, Any], path: KeyPath
) -> FunctionProcessor | None:
    """`name`: a function of `functions/edge_processor/` that takes (text, state)."""
    check_keys(ck, config, path, KEYS)
    name = opt_str(ck, config, "name", path, required=True)
    if name is None:
        return None
    file = find_edge_function(
        ck,
        PROCESSORS,
        name.strip(),
        (*path, "name"),
        what="edge processor",
        arguments=("the message text", "the run's state"),
    )
    return None if file is None else FunctionProcessor(name.strip(), file)


def build_function_processor(settings: FunctionProcessor, env: EdgeEnv) -> Processor:
    """The processor: calls the function and turns what it returns into the payload."""
    function = env.function(attribute(settings.name), settings.file)
    state = env.state()

    def process(message: Message) -> Message | None:
        return apply_result(message, function(message.text, state))

    return process


def apply_result(message: Message, result: Any) -> Message | None:
    """The payload after a processor function returned `result` (None: dropped)."""
    if result is None:
        return None
    if isinstance(result, Message):
        return result
    if isinstance(result, str):
        return message.but(text=result)
    if isinstance(result, Mapping):
        if result.get("drop"):
            return None
        changed = message
        if "content" in result:
            content = result["content"]
            text = content if isinstance(content, str) else "" if content is None else str(content)
            changed = changed.but(text=text)
        metadata = result.get("metadata")
        if isinstance(metadata, Mapping) and metadata:
            changed = changed.but(meta={**message.meta, **metadata})
        return changed
    return message.but(text=str(result))


FUNCTION = PROCESSOR_TYPES.register(
    ProcessorType(
        "function",
        "calls a Python function of functions/edge_processor/ on the payload",
        KEYS,
        parse_function_processor,
        build_function_processor,
        lambda settings: f"function({settings.name})",
    )
)
