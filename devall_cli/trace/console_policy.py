"""The console trace of the tool policy (tools hidden from a node, calls approved or refused) and
of sandboxes (how a local server or a python node's script runs confined)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from devall_cli.events import ToolApprovalEvent, ToolsDeniedEvent, ToolsOversize
from devall_cli.trace.policy_text import (
    approval_text,
    denied_text,
    oversize_text,
    sandbox_inactive,
    sandbox_text,
)


class PolicyTrace:
    """Renderers mixed into the ConsoleSink (which provides `_print`)."""

    def _print(self, text: str, style: str = "", *, body: bool = False) -> None:
        raise NotImplementedError

    def _on_tool_denied(self, event: ToolsDeniedEvent) -> None:
        if not event.tools:
            return
        count = len(event.tools)
        what = "tool" if count == 1 else "tools"
        self._print(
            f"· {event.node_id}: {count} {what} hidden by the tool policy: "
            f"{denied_text(event.tools)}",
            "dim",
        )

    def _on_tools_oversize(self, event: ToolsOversize) -> None:
        self._print(oversize_text(event), "yellow")

    def _on_tool_approval(self, event: ToolApprovalEvent) -> None:
        mark, style = ("✓", "green") if event.approved else ("✗", "yellow")
        server = f" (server {event.server_id})" if event.server_id else ""
        what = approval_text(event.approved, event.by, event.reason)
        self._print(f"{mark} tool {event.tool}{server} · {event.node_id} · {what}", style)

    def _sandbox_note(self, who: str, sandbox: Mapping[str, Any] | None) -> None:
        """A sandbox asked for (`prefer`) that could not be used: said on a line of its own."""
        if sandbox_inactive(sandbox):
            self._print(f"! {who} runs without its sandbox: {sandbox_text(sandbox)}", "yellow")


def sandbox_suffix(sandbox: Mapping[str, Any] | None) -> str:
    """` · sandboxed: network off, writes /w` for a line that names a server or script."""
    text = sandbox_text(sandbox)
    return f" · {text}" if text and not sandbox_inactive(sandbox) else ""
