"""The console trace of what MCP servers ask and report during calls: progress (a live bar on
a terminal, else a line at most every 2 s per call), elicitation, sampling and roots."""

from __future__ import annotations

import json
import time
from typing import Any

from rich.console import RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from devall_cli.events import (
    ElicitationAnsweredEvent,
    ElicitationRequestedEvent,
    SamplingAnsweredEvent,
    SamplingRequestedEvent,
    ServerRootsEvent,
    ToolProgressEvent,
)
from devall_cli.trace.status import Progress, WaitState

PROGRESS_EVERY = 2.0  # seconds between two progress lines of one call without a live display
BAR_WIDTH = 24


def progress_text(progress: float, total: float | None) -> str:
    """`3/5 (60%)`, or `3` without a total."""
    done = f"{progress:g}"
    if not total:
        return done
    return f"{done}/{total:g} ({min(progress / total, 1.0):.0%})"


def _call_of(node_id: str, tool: str) -> str:
    return f" (node {node_id}, tool {tool})" if node_id else ""


class McpRequestsTrace:
    """Renderers mixed into the ConsoleSink (which provides the helpers declared here)."""

    waits: WaitState
    _progress_shown: dict[str, float]
    _live: Live | None

    @property
    def verbose(self) -> bool:
        """Whether texts are shown in full."""
        raise NotImplementedError

    def _t(self, text: str, style: str = "", *, body: bool = False) -> Text:
        raise NotImplementedError

    def _print(self, text: str, style: str = "", *, body: bool = False) -> None:
        raise NotImplementedError

    def _body(self, text: str) -> str:
        raise NotImplementedError

    # --- progress ----------------------------------------------------------------------------

    def _on_tool_progress(self, event: ToolProgressEvent) -> None:
        if self._live is not None:
            return  # the live display draws a bar
        now = time.monotonic()
        last = self._progress_shown.get(event.call_id)
        if last is not None and now - last < PROGRESS_EVERY:
            return
        self._progress_shown[event.call_id] = now
        where = " · ".join(p for p in (event.node_id, event.tool or event.server_id) if p)
        message = f" · {event.message}" if event.message else ""
        shown = progress_text(event.progress, event.total)
        self._print(f"  progress · {where} · {shown}{message}", "dim")

    def _progress_bars(self) -> list[RenderableType]:
        """One row per running call that reported progress: label, bar, numbers, message."""
        rows = self.waits.progress()
        if not rows:
            return []
        grid = Table.grid(padding=(0, 1))
        for _ in range(4):
            grid.add_column()
        for row in rows:
            grid.add_row(*self._bar_row(row))
        return [grid]

    def _bar_row(self, row: Progress) -> tuple[RenderableType, ...]:
        total = row.total if row.total else None
        bar = ProgressBar(total=total, completed=row.progress, width=BAR_WIDTH)
        return (
            self._t(f"  {row.label}", "dim"),
            bar,
            Text(progress_text(row.progress, row.total), style="dim"),
            self._t(row.message or "", "dim"),
        )

    # --- elicitation -------------------------------------------------------------------------

    def _on_elicitation_requested(self, event: ElicitationRequestedEvent) -> None:
        call = _call_of(event.node_id, event.tool)
        self._print(f"? server {event.server_id} asks the operator{call}", "yellow")
        self._print(self._body(event.message), body=True)
        if event.url:
            self._print(f"  url: {event.url}", "yellow")
        if event.policy != "prompt":
            self._print(f"  answered by the config (elicitation: {event.policy})", "dim")

    def _on_elicitation_answered(self, event: ElicitationAnsweredEvent) -> None:
        how = {"terminal": "typed", "config": "by the config", "none": "no terminal to ask"}
        self._print(
            f"  elicitation · {event.server_id} · {event.action} ({how.get(event.channel, '')})",
            "yellow",
        )
        if event.content is not None and (event.channel != "terminal" or self.verbose):
            self._print(self._body(_json(event.content)), body=True)

    # --- sampling ------------------------------------------------------------------------------

    def _on_sampling_requested(self, event: SamplingRequestedEvent) -> None:
        who = f"node {event.node_id}'s model" if event.node_id else "a model"
        count = len(event.messages)
        self._print(
            f"⇄ sampling · server {event.server_id} asks {who} · "
            f"{count} message{'' if count == 1 else 's'} · at most {event.max_tokens} tokens",
            "magenta",
        )
        if self.verbose:
            for message in event.messages:
                self._print(f"  {message.get('role')}: {_text(message)}", "dim", body=True)

    def _on_sampling_answered(self, event: SamplingAnsweredEvent) -> None:
        if event.status != "ok":
            self._print(f"  sampling · {event.server_id} · failed: {event.error}", "red")
            return
        model = f" · {event.model}" if event.model else ""
        self._print(f"  sampling · {event.server_id} · answered{model}", "magenta")
        if event.text:
            self._print(self._body(event.text), body=True)

    # --- roots ---------------------------------------------------------------------------------

    def _on_server_roots(self, event: ServerRootsEvent) -> None:
        if self.verbose:
            what = "were told the roots changed" if event.reason == "changed" else "listed roots"
            roots = ", ".join(event.roots) or "none"
            self._print(f"  {event.server_id} {what}: {roots}", "dim")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _text(message: Any) -> str:
    content = message.get("content") if hasattr(message, "get") else None
    if isinstance(content, str):
        return content
    return _json(content)
