"""The tool policy's part of a report: tools kept from nodes, decisions on calls, refusals.

Read from `tool.denied` and `tool.approval` events (each decision is attached to its call, which
it may precede or follow), and from result.json's `policy` when the events are missing.
"""

from __future__ import annotations

from typing import Any

from devall_cli.report.model import RunLog, ToolCall
from devall_cli.trace.policy_text import (
    REFUSED_BY_POLICY,
    approval_text,
    by_text,
    denied_items,
)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def approval_record(event: dict[str, Any]) -> dict[str, Any]:
    """A `tool.approval` event (or result.json entry) as the report's record of it."""
    approved = event.get("approved") is True
    by, reason = _str(event.get("by")), _str(event.get("reason"))
    return {
        "node": _str(event.get("node_id", event.get("node"))),
        "call_id": _str(event.get("call_id")),
        "tool": _str(event.get("tool")),
        "server_id": _str(event.get("server_id")),
        "approved": approved,
        "by": by,
        "reason": reason,
        "text": approval_text(approved, by, reason),
        "by_text": by_text(by),
    }


class PolicyFold:
    """Handlers of the policy events, mixed into the report reader's fold."""

    log: RunLog
    calls: dict[tuple[str, str], ToolCall]
    _pending: dict[tuple[str, str], dict[str, Any]]  # decisions whose call came later

    def _tool_denied(self, event: dict[str, Any], ts: float) -> None:
        node = _str(event.get("node_id"))
        items = self.log.policy.denied.setdefault(node, [])
        known = {(item["tool"], item["server_id"]) for item in items}
        for item in denied_items(event.get("tools")):
            if (item["tool"], item["server_id"]) not in known:
                items.append(item)
                known.add((item["tool"], item["server_id"]))

    def _tool_approval(self, event: dict[str, Any], ts: float) -> None:
        record = approval_record(event)
        self.log.policy.approvals.append(record)
        key = (record["node"], record["call_id"])
        call = self.calls.get(key)
        if call is not None:
            call.approval = record
        elif record["call_id"]:
            self._pending[key] = record

    def _approval_of(self, path: str, call_id: str) -> dict[str, Any] | None:
        """The decision already read for a call that starts now."""
        return self._pending.pop((path, call_id), None)


def refused(call: ToolCall) -> bool:
    """Whether the policy refused the call (its result says so, or its decision did)."""
    if call.error_class == REFUSED_BY_POLICY:
        return True
    return call.approval is not None and call.approval.get("approved") is False


def finish_policy(log: RunLog) -> None:
    """Count the refused calls; without policy events, take result.json's `policy`."""
    policy = log.policy
    recorded = log.result.get("policy")
    if policy.empty and isinstance(recorded, dict):
        denied = recorded.get("denied")
        if isinstance(denied, dict):
            policy.denied = {str(node): denied_items(items) for node, items in denied.items()}
        approvals = recorded.get("approvals")
        if isinstance(approvals, list):
            policy.approvals = [approval_record(a) for a in approvals if isinstance(a, dict)]
    calls = [
        step.call
        for node in log.nodes
        for visit in node.visits
        for step in visit.steps
        if step.call is not None
    ]
    policy.refused_calls = sum(1 for call in calls if call.finished and refused(call))
    count = recorded.get("refused_calls") if isinstance(recorded, dict) else None
    if not calls and isinstance(count, int) and not isinstance(count, bool):
        policy.refused_calls = count
