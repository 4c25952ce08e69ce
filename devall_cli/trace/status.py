"""What a run is waiting for right now, for the console's live status line."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from devall_cli.events import (
    CodeFinishedEvent,
    CodeStartedEvent,
    Event,
    ModelReplyEvent,
    ModelRequestEvent,
    NodeFinishedEvent,
    RunStartedEvent,
    ServerExitedEvent,
    ServerReadyEvent,
    ServerStartingEvent,
    ToolCallEvent,
    ToolProgressEvent,
    ToolResultEvent,
)


@dataclass(frozen=True)
class _Wait:
    label: str
    since: float


@dataclass(frozen=True)
class Progress:
    """The latest progress a running call reported."""

    label: str  # `node · tool`
    progress: float
    total: float | None = None
    message: str | None = None


class WaitState:
    """Tracks servers starting, nodes waiting on the model, and tool calls in flight.

    Events arrive on the event loop while a live display reads the state from its refresh
    thread, hence the lock.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._servers: dict[str, float] = {}
        self._waits: dict[tuple[str, str], _Wait] = {}
        self._progress: dict[str, Progress] = {}  # by call id

    def update(self, event: Event) -> None:
        """Take one event into account."""
        now = time.monotonic()
        with self._lock:
            if isinstance(event, RunStartedEvent):
                self._started = now
            elif isinstance(event, ServerStartingEvent):
                self._servers[event.server_id] = now
            elif isinstance(event, ServerReadyEvent | ServerExitedEvent):
                self._servers.pop(event.server_id, None)
            elif isinstance(event, ModelRequestEvent):
                step = f"round {event.round}" if event.stage == "gen" else event.stage
                label = f"{event.node_id} waiting on the model ({step})"
                self._waits[("model", event.node_id)] = _Wait(label, now)
            elif isinstance(event, ModelReplyEvent):
                self._waits.pop(("model", event.node_id), None)
            elif isinstance(event, ToolCallEvent):
                label = f"{event.node_id} waiting on tool {event.tool}"
                self._waits[("tool", event.call_id)] = _Wait(label, now)
            elif isinstance(event, ToolProgressEvent):
                label = " · ".join(p for p in (event.node_id, event.tool) if p)
                progress = Progress(label, event.progress, event.total, event.message)
                self._progress[event.call_id] = progress
            elif isinstance(event, ToolResultEvent):
                self._waits.pop(("tool", event.call_id), None)
                self._progress.pop(event.call_id, None)
            elif isinstance(event, CodeStartedEvent):
                label = f"{event.node_id} running {event.script}"
                self._waits[("code", event.node_id)] = _Wait(label, now)
            elif isinstance(event, CodeFinishedEvent):
                self._waits.pop(("code", event.node_id), None)
            elif isinstance(event, NodeFinishedEvent):
                self._forget_node(event.node_id)

    def _forget_node(self, node_id: str) -> None:
        for key, wait in list(self._waits.items()):
            own = key in (("model", node_id), ("code", node_id))
            if own or wait.label.startswith(f"{node_id} waiting on tool "):
                del self._waits[key]
                self._progress.pop(key[1], None)

    def progress(self) -> list[Progress]:
        """The latest progress of each running call that reported some."""
        with self._lock:
            return list(self._progress.values())

    def describe(self) -> str:
        """One line: what is pending and for how long, then the run's elapsed time."""
        now = time.monotonic()
        with self._lock:
            parts: list[str] = []
            if self._servers:
                since = min(self._servers.values())
                names = ", ".join(self._servers)
                parts.append(f"starting servers: {names} ({_seconds(now - since)})")
            parts.extend(f"{w.label} ({_seconds(now - w.since)})" for w in self._waits.values())
            elapsed = _seconds(now - self._started)
        if not parts:
            return f"running… {elapsed}"
        return " · ".join(parts) + f" · {elapsed} elapsed"


def _seconds(value: float) -> str:
    return f"{value:.1f}s"
