"""What the tool policy did in a run, as the run's summary keeps it (result.json's `policy`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from devall_cli.events import ToolApprovalEvent, ToolResultEvent, ToolsDeniedEvent, ToolsOversize
from devall_cli.trace.policy_text import REFUSED_BY_POLICY, denied_items


@dataclass(frozen=True)
class PolicyRecord:
    """What the tool policy did in a run: tools kept from nodes, decisions on calls."""

    denied: Mapping[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)  # by node
    approvals: tuple[dict[str, Any], ...] = ()  # {node, call_id, tool, server_id, approved, ...}
    refused_calls: int = 0  # calls whose result says they were refused by the policy

    @property
    def empty(self) -> bool:
        """Whether the policy did nothing a record would show."""
        return not self.denied and not self.approvals and not self.refused_calls


class PolicyRecording:
    """The RunRecorder's handlers of the policy events (mixed in; `_start_policy` first)."""

    def _start_policy(self) -> None:
        self._denied: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
        self._approvals: list[dict[str, Any]] = []
        self._refused = 0
        self._warnings: list[dict[str, Any]] = []  # result.json's `warnings`

    def _policy_record(self) -> PolicyRecord:
        denied = {node: tuple(items.values()) for node, items in self._denied.items()}
        return PolicyRecord(denied, tuple(self._approvals), self._refused)

    def _warnings_record(self) -> tuple[dict[str, Any], ...]:
        return tuple(self._warnings)

    def _on_tools_oversize(self, event: ToolsOversize) -> None:
        self._warnings.append(
            {
                "kind": "tools_oversize",
                "node": event.node,
                "tools": event.tools,
                "schema_bytes": event.schema_bytes,
                "tool_limit": event.tool_limit,
                "bytes_limit": event.bytes_limit,
                "hint": event.hint,
            }
        )

    def _count_refused(self, event: ToolResultEvent) -> None:
        self._refused += int(event.error_class == REFUSED_BY_POLICY)

    def _on_tool_denied(self, event: ToolsDeniedEvent) -> None:
        # Once per node, but a node in a loop may say it again: each tool is kept once.
        items = self._denied.setdefault(event.node_id, {})
        for item in denied_items(event.tools):
            items.setdefault((item["tool"], item["server_id"]), item)

    def _on_tool_approval(self, event: ToolApprovalEvent) -> None:
        self._approvals.append(
            {
                "node": event.node_id,
                "call_id": event.call_id,
                "tool": event.tool,
                "server_id": event.server_id,
                "approved": event.approved,
                "by": event.by,
                "reason": event.reason,
            }
        )
