"""`loop_timer`: holds a loop's way out shut until a time limit has passed, then opens it.

The clock starts at the node's first visit. Standard mode: before `max_duration` (in
`duration_unit`) has passed, a visit emits nothing; once it has, a visit emits `message`
(default `Time limit reached (<max_duration> <unit>)`), and with `reset_on_emit` (default) the
clock starts again from that moment. `passthrough: true` turns the node into a gate that forwards
its inputs unchanged until the limit, emits `message` once at the limit (instead of the inputs),
and forwards everything after that.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from devall_cli.config.schema import Checker, KeySpec, check_keys, opt_number, opt_str
from devall_cli.config.yaml_source import KeyPath
from devall_cli.messages import ASSISTANT, Message
from devall_cli.nodes.base import NODE_TYPES, NodeRun, NodeType
from devall_cli.nodes.loop_counter import flag, release_text

KEYS = KeySpec(
    known=frozenset({"max_duration", "duration_unit", "reset_on_emit", "message", "passthrough"})
)
UNIT_SECONDS = {"seconds": 1.0, "minutes": 60.0, "hours": 3600.0}
DEFAULT_MAX_DURATION = 60.0

# Monotonic: a clock change while a loop runs neither ends it early nor keeps it going.
clock: Callable[[], float] = time.monotonic


@dataclass(frozen=True)
class LoopTimerConfig:
    """`config` of a loop_timer node."""

    max_duration: float = DEFAULT_MAX_DURATION
    duration_unit: str = "seconds"
    reset_on_emit: bool = True
    message: str | None = None  # None: `Time limit reached (<max_duration> <unit>)`
    passthrough: bool = False

    @property
    def limit_seconds(self) -> float:
        """`max_duration` in seconds."""
        return self.max_duration * UNIT_SECONDS[self.duration_unit]


def parse_loop_timer(ck: Checker, config: dict[str, Any], path: KeyPath) -> LoopTimerConfig | None:
    """`max_duration` (> 0, default 60), `duration_unit`, `reset_on_emit`, `message`,
    `passthrough`."""
    check_keys(ck, config, path, KEYS)
    errors = ck.error_count
    duration = opt_number(ck, config, "max_duration", path, DEFAULT_MAX_DURATION, positive=True)
    unit = opt_str(ck, config, "duration_unit", path) or "seconds"
    if unit not in UNIT_SECONDS:
        ck.error(
            (*path, "duration_unit"),
            f"duration_unit must be one of: {', '.join(UNIT_SECONDS)}; got {unit!r}",
        )
    reset = flag(ck, config, "reset_on_emit", path, True)
    passthrough = flag(ck, config, "passthrough", path, False)
    message = release_text(ck, config, path)
    if ck.error_count > errors:
        return None
    return LoopTimerConfig(duration, unit, reset, message, passthrough)


async def run_loop_timer(run: NodeRun) -> list[Message]:
    """Nothing (or the inputs, in passthrough mode) before the limit; the message at it."""
    config: LoopTimerConfig = run.node.config
    now = clock()
    started = float(run.state.setdefault("started", now))
    emitted = bool(run.state.get("emitted", False))
    elapsed = now - started
    if elapsed < config.limit_seconds:
        return list(run.inputs) if config.passthrough else []
    if config.passthrough and emitted:
        return list(run.inputs)  # the gate stays open once it has opened
    if config.reset_on_emit:
        run.state["started"] = now
    run.state["emitted"] = True
    return [_release(config, elapsed)]


def _release(config: LoopTimerConfig, elapsed: float) -> Message:
    # The default text is ChatDev's, number format included (`20.0 seconds`): conditions match it.
    text = config.message or f"Time limit reached ({config.max_duration} {config.duration_unit})"
    details = {
        "elapsed_time": elapsed,
        "max_duration": config.max_duration,
        "duration_unit": config.duration_unit,
        "reset_on_emit": config.reset_on_emit,
        "passthrough": config.passthrough,
    }
    return Message(role=ASSISTANT, text=text, meta={"loop_timer": details})


def _details(settings: LoopTimerConfig) -> dict[str, Any]:
    return {
        "max_duration": settings.max_duration,
        "duration_unit": settings.duration_unit,
        "passthrough": settings.passthrough,
    }


LOOP_TIMER = NODE_TYPES.register(
    NodeType(
        "loop_timer",
        "emits nothing until a time limit has passed, then a release message",
        KEYS,
        parse_loop_timer,
        run_loop_timer,
        details=_details,
        label=lambda settings: f"max {settings.max_duration} {settings.duration_unit}".strip(),
        may_hold_output=True,
    )
)
