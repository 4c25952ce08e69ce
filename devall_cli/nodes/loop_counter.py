"""`loop_counter`: holds a loop's way out shut until the node has run N times, then opens it.

Every visit counts one. Before the count reaches `max_iterations` the node emits nothing, so none
of its edges fire; at the limit it emits `message` (default `Loop limit reached (N)`), which
usually triggers a node outside the loop and so ends it. With `reset_on_emit` (default) the count
starts again from 0 after that; without it, every later visit emits too. The count lives in the
node's run state: it survives the visits of one run and starts at 0 in the next.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from devall_cli.config.placeholders import UNRESOLVED, TextValue
from devall_cli.config.schema import (
    Checker,
    KeySpec,
    as_bool,
    check_keys,
    describe,
    opt_str,
)
from devall_cli.config.yaml_source import KeyPath
from devall_cli.messages import ASSISTANT, Message
from devall_cli.nodes.base import NODE_TYPES, NodeRun, NodeType

KEYS = KeySpec(known=frozenset({"max_iterations", "reset_on_emit", "message"}))
DEFAULT_MAX_ITERATIONS = 10


@dataclass(frozen=True)
class LoopCounterConfig:
    """`config` of a loop_counter node."""

    max_iterations: int = DEFAULT_MAX_ITERATIONS
    reset_on_emit: bool = True
    message: str | None = None  # None: `Loop limit reached (N)`


def flag(ck: Checker, config: dict[str, Any], key: str, path: KeyPath, default: bool) -> bool:
    """A boolean switch; a key written with no value (null) is off, as ChatDev reads it."""
    if key not in config:
        return default
    value = config[key]
    if value is UNRESOLVED:
        return default
    if value is None:
        return False
    parsed = as_bool(value)
    if parsed is None:
        ck.error((*path, key), f"{key} must be true or false, got {describe(value)}")
        return default
    return parsed


def release_text(ck: Checker, config: dict[str, Any], path: KeyPath) -> str | None:
    """`message`: the text emitted at the limit; empty or null means the default text."""
    text = opt_str(ck, config, "message", path)
    return text if text else None


def _whole_number(ck: Checker, config: dict[str, Any], key: str, path: KeyPath) -> int | None:
    value = config.get(key)
    if value is None or value is UNRESOLVED:
        return DEFAULT_MAX_ITERATIONS
    number: int | None = None
    if isinstance(value, bool):
        pass  # ChatDev would count `true` as 1; a boolean is not a count
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float):
        number = int(value) if value.is_integer() else None
    elif isinstance(value, TextValue) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        number = int(value)  # from a placeholder
    if number is None:
        ck.error((*path, key), f"{key} must be a whole number, got {describe(value)}")
    return number


def parse_loop_counter(
    ck: Checker, config: dict[str, Any], path: KeyPath
) -> LoopCounterConfig | None:
    """`max_iterations` (whole number >= 1, default 10), `reset_on_emit` (true), `message`."""
    check_keys(ck, config, path, KEYS)
    limit = _whole_number(ck, config, "max_iterations", path)
    if limit is not None and limit < 1:
        ck.error((*path, "max_iterations"), f"max_iterations must be at least 1, got {limit}")
        limit = None
    reset = flag(ck, config, "reset_on_emit", path, True)
    message = release_text(ck, config, path)
    if limit is None:
        return None
    return LoopCounterConfig(max_iterations=limit, reset_on_emit=reset, message=message)


async def run_loop_counter(run: NodeRun) -> list[Message]:
    """Count this visit; nothing below the limit, the release message at it."""
    config: LoopCounterConfig = run.node.config
    count = int(run.state.get("count", 0)) + 1
    run.state["count"] = count
    if count < config.max_iterations:
        return []
    if config.reset_on_emit:
        run.state["count"] = 0
    text = config.message or f"Loop limit reached ({config.max_iterations})"
    details = {"count": count, "max": config.max_iterations, "reset_on_emit": config.reset_on_emit}
    return [Message(role=ASSISTANT, text=text, meta={"loop_counter": details})]


def _details(settings: LoopCounterConfig) -> dict[str, Any]:
    return {"max_iterations": settings.max_iterations, "reset_on_emit": settings.reset_on_emit}


LOOP_COUNTER = NODE_TYPES.register(
    NodeType(
        "loop_counter",
        "emits nothing until its Nth visit, then a release message",
        KEYS,
        parse_loop_counter,
        run_loop_counter,
        details=_details,
        label=lambda settings: f"max {settings.max_iterations}",
        may_hold_output=True,
    )
)
