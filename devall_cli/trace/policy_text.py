"""Tool policy decisions and sandbox settings in words, as the trace and the report show them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from devall_cli.events import ToolsOversize

# The error class the tool layer gives the result of a call the policy refused (the same text
# as tools.policy.REFUSED_BY_POLICY: renderers sit below the tool layer and cannot import it).
REFUSED_BY_POLICY = "refused_by_policy"

# Who decided a call, after `approved` / `refused`.
BY_TEXT: Mapping[str, str] = {
    "policy": "by the policy",
    "terminal": "by the operator",
    "answers": "by the answers file",
    "no_terminal": "with nobody to ask",
    "remembered": "(remembered)",
}


def by_text(by: str) -> str:
    """`by the operator`, for a `tool.approval` event's `by`."""
    return BY_TEXT.get(by, f"by {by}" if by else "")


def approval_text(approved: bool, by: str, reason: str) -> str:
    """`approved by the operator: approve: ask (cli)`."""
    head = " ".join(p for p in ("approved" if approved else "refused", by_text(by)) if p)
    return f"{head}: {reason}" if reason else head


def _texts(value: Any) -> list[str]:
    if not isinstance(value, list | tuple):
        return []
    return [str(item) for item in value if isinstance(item, str | int | float)]


def sandbox_text(sandbox: Mapping[str, Any] | None) -> str:
    """`sandboxed: network off, writes /w`, `not sandboxed: REASON (sandbox: prefer)`, or ""."""
    if not isinstance(sandbox, Mapping) or not sandbox:
        return ""
    if sandbox.get("active") is False:
        reason = str(sandbox.get("reason") or "the sandbox cannot run here")
        mode = sandbox.get("mode")
        return f"not sandboxed: {reason}" + (f" (sandbox: {mode})" if mode else "")
    parts = ["network on" if sandbox.get("network") else "network off"]
    writable = _texts(sandbox.get("writable"))
    parts.append("writes " + ", ".join(writable) if writable else "writes nothing")
    readable = _texts(sandbox.get("readable"))
    if readable:
        parts.append("also reads " + ", ".join(readable))
    return "sandboxed: " + ", ".join(parts)


def sandbox_inactive(sandbox: Mapping[str, Any] | None) -> bool:
    """Whether a sandbox was asked for (`sandbox: prefer`) but could not be used."""
    return isinstance(sandbox, Mapping) and sandbox.get("active") is False


def denied_text(items: Iterable[Mapping[str, Any]]) -> str:
    """`write_file, delete (rule 'write_*', node); rm (rule 'destructiveHint', graph)`."""
    groups: dict[tuple[str, str], list[str]] = {}
    for item in items:
        key = (str(item.get("rule") or ""), str(item.get("layer") or ""))
        groups.setdefault(key, []).append(str(item.get("tool") or ""))
    parts = []
    for (rule, layer), tools in groups.items():
        why = ", ".join(p for p in (f"rule '{rule}'" if rule else "", layer) if p)
        parts.append(", ".join(tools) + (f" ({why})" if why else ""))
    return "; ".join(parts)


def denied_items(value: Any) -> list[dict[str, Any]]:
    """A `tool.denied` event's tools as plain records `{tool, server_id, rule, layer}`."""
    items: Sequence[Any] = value if isinstance(value, list | tuple) else ()
    return [
        {
            "tool": str(item.get("tool") or ""),
            "server_id": str(item.get("server_id") or ""),
            "rule": item.get("rule"),
            "layer": str(item.get("layer") or ""),
        }
        for item in items
        if isinstance(item, Mapping)
    ]


def oversize_text(event: ToolsOversize) -> str:
    """The console line of a `tools.oversize` event."""
    passed = []
    if event.tool_limit and event.tools > event.tool_limit:
        passed.append(f"{event.tool_limit} tools")
    if event.bytes_limit and event.schema_bytes > event.bytes_limit:
        passed.append(size_text(event.bytes_limit))
    return (
        f"! {event.node}: the model is sent {event.tools} tools "
        f"({size_text(event.schema_bytes)} of definitions), over graph.tool_warning "
        f"({' and '.join(passed)}); hint: {event.hint}"
    )


def size_text(size: int) -> str:
    """`900 bytes`, `256 KiB`, `1.4 MiB`."""
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.0f} KiB"
    return f"{size / (1024 * 1024):.1f} MiB"
