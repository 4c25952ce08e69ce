"""The tool policy of one run, applied: which tools each node is offered, whether a call runs.

Each node's layers are, most specific first: the command line's policy, the node's own
`tool_policy`, then the `tool_policy` of the graph holding the node and of every graph around
that one, innermost first (a node of a subgraph obeys its subgraph's policy before the top
graph's). A refused call becomes an error result the model reads (tool failures are data), and
every decision on a call the policy does not allow outright is reported as `tool.approval`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from devall_cli.config.model import GraphConfig, node_graphs
from devall_cli.tools.base import TextBlock, ToolEvents, ToolResult, ToolSpec
from devall_cli.tools.policy import (
    REFUSED_BY_POLICY,
    ApprovalAnswer,
    ApprovalRequest,
    Approver,
    Layer,
    ToolPolicy,
    Verdict,
    decide,
)
from devall_cli.tools.policy_config import policy_of

Layers = tuple[tuple[Layer, ToolPolicy], ...]
REFUSED_PREFIX = "refused by policy:"


def node_layers(graph: GraphConfig, cli: ToolPolicy | None = None) -> dict[str, Layers]:
    """The policy layers of every node of `graph` (subgraphs included), by node path."""
    found: dict[str, Layers] = {}
    first: Layers = (("cli", cli),) if cli is not None and not cli.empty else ()

    def walk(current: GraphConfig, prefix: str, outer: Layers) -> None:
        own = policy_of(current)
        around = (("graph", own), *outer) if not own.empty else outer
        for node in current.nodes:
            path = prefix + node.id
            mine = policy_of(node.config)
            found[path] = (*first, *((("node", mine),) if not mine.empty else ()), *around)
            for child in node_graphs(node):
                walk(child, f"{path}/", around)

    walk(graph, "", ())
    return found


def graph_layers(graph: GraphConfig, cli: ToolPolicy | None = None) -> Layers:
    """The command line's and the top graph's layers (what holds for every node)."""
    layers: list[tuple[Layer, ToolPolicy]] = []
    if cli is not None and not cli.empty:
        layers.append(("cli", cli))
    if not policy_of(graph).empty:
        layers.append(("graph", policy_of(graph)))
    return tuple(layers)


def verdict_of(spec: ToolSpec, layers: Layers) -> Verdict:
    """The verdict on one offered tool."""
    return decide(spec.name, spec.source_id, spec.annotations, layers)


def denied_item(spec: ToolSpec, verdict: Verdict) -> dict[str, Any]:
    """One item of a `tool.denied` event."""
    return {
        "tool": spec.name,
        "original_name": spec.original_name,
        "server_id": spec.source_id,
        "rule": verdict.rule,
        "layer": verdict.layer,
    }


class PolicyGate:
    """Decides, for a ToolManager, what each node's model is offered and which calls run."""

    def __init__(
        self,
        graph: GraphConfig,
        *,
        cli: ToolPolicy | None = None,
        approver: Approver | None = None,
        events: ToolEvents | None = None,
        mask: Callable[[Any], Any] = lambda value: value,
        caller_approves: bool = False,
    ) -> None:
        self._layers = node_layers(graph, cli)
        self._approver = approver or Approver()
        self._events = events
        self._mask = mask  # the run's redactor: arguments and targets a person is shown
        # `tools call`: whoever typed the command approves the call (ask and refuse run).
        self._caller_approves = caller_approves
        self._verdicts: dict[str, dict[str, Verdict]] = {}  # node path -> final name -> verdict
        self._always: set[tuple[str, str]] = set()  # (node path, tool) approved "always"
        self._asking = asyncio.Lock()  # the approver is asked about one call at a time
        self._told: set[str] = set()  # node paths whose tool.denied was emitted

    def layers(self, node_path: str) -> Layers:
        """The layers a node's tools are judged by."""
        return self._layers.get(node_path, ())

    def judge(self, node_id: str, node_path: str, specs: Sequence[ToolSpec]) -> list[ToolSpec]:
        """The verdict on each of `specs` (kept for calls); the tools not denied, in order.

        The first time a node loses tools, `tool.denied` names them.
        """
        layers = self.layers(node_path)
        verdicts = {spec.name: verdict_of(spec, layers) for spec in specs}
        self._verdicts[node_path] = verdicts
        denied = [spec for spec in specs if not verdicts[spec.name].offered]
        if denied and node_path not in self._told and self._events is not None:
            self._told.add(node_path)
            items = [denied_item(spec, verdicts[spec.name]) for spec in denied]
            self._events.tool_denied(node_id, items)
        return [spec for spec in specs if verdicts[spec.name].offered]

    def verdict(self, node_path: str, name: str) -> Verdict | None:
        """The verdict on a tool of a node, once its tools were judged."""
        return self._verdicts.get(node_path, {}).get(name)

    def offered(self, node_path: str, name: str) -> bool:
        """Whether the node's model is offered the tool (True before its tools were judged)."""
        verdict = self.verdict(node_path, name)
        return verdict is None or verdict.offered

    async def admit(
        self,
        node_id: str,
        node_path: str,
        spec: ToolSpec,
        arguments: Mapping[str, Any],
        call_id: str,
    ) -> ToolResult | None:
        """None when the call may run; else the refused result to hand to the model."""
        verdict = self.verdict(node_path, spec.name) or verdict_of(spec, self.layers(node_path))
        if verdict.decision == "allow":
            return None
        report = _Report(self._events, node_id, call_id, spec)
        if verdict.decision == "deny":  # not offered, and called all the same
            report.tell(False, "policy", verdict.reason())
            return refused_result(spec.name, verdict.reason(), how_to_allow(spec.name, verdict))
        if self._caller_approves:
            report.tell(True, "policy", f"{verdict.reason()}; the caller of the command approves")
            return None
        if verdict.decision == "refuse":
            report.tell(False, "policy", verdict.reason())
            return refused_result(spec.name, verdict.reason(), how_to_allow(spec.name, verdict))
        # One question at a time: an "always" also decides the calls of that tool waiting behind.
        async with self._asking:
            if (node_path, spec.name) in self._always:
                report.tell(True, "remembered", f"{verdict.reason()}; answered always earlier")
                return None
            request = self._request(node_id, call_id, spec, arguments, verdict)
            answer = await self._approver.approve(request)
            return self._answered(report, node_path, spec, verdict, answer)

    def _answered(
        self,
        report: _Report,
        node_path: str,
        spec: ToolSpec,
        verdict: Verdict,
        answer: ApprovalAnswer,
    ) -> ToolResult | None:
        why = verdict.reason() + (f", and {answer.note}" if answer.note else "")
        report.tell(answer.approved, answer.by, why)
        if answer.approved:
            if answer.remember:
                self._always.add((node_path, spec.name))
            return None
        if answer.by in ("terminal", "answers"):  # a person (or their file) said no
            return refused_result(spec.name, why, "")
        hint = f"{how_to_allow(spec.name, verdict)} or an answer in --answers"
        return refused_result(spec.name, why, hint)

    def _request(
        self,
        node_id: str,
        call_id: str,
        spec: ToolSpec,
        arguments: Mapping[str, Any],
        verdict: Verdict,
    ) -> ApprovalRequest:
        return ApprovalRequest(
            node_id=node_id,
            call_id=call_id,
            tool=spec.name,
            original_name=spec.original_name,
            server_id=spec.source_id,
            server=str(self._mask(spec.server)),
            arguments=self._mask(dict(arguments)),
            verdict=verdict,
        )


class _Report:
    """`tool.approval` for one call."""

    def __init__(
        self, events: ToolEvents | None, node_id: str, call_id: str, spec: ToolSpec
    ) -> None:
        self._events = events
        self._fields = (node_id, call_id, spec.name, spec.source_id)

    def tell(self, approved: bool, by: str, reason: str) -> None:
        if self._events is not None:
            node_id, call_id, tool, server_id = self._fields
            self._events.tool_approval(node_id, call_id, tool, server_id, approved, by, reason)


def how_to_allow(tool: str, verdict: Verdict) -> str:
    """`allow it with --allow-tool NAME` (or without the --deny-tool that denies it)."""
    if verdict.decision == "deny" and verdict.layer == "cli":
        return f"drop --deny-tool {verdict.rule} to allow it"
    return f"allow it with --allow-tool {tool}"


def refused_result(tool: str, why: str, hint: str) -> ToolResult:
    """The error result of a refused call: `refused by policy: WHY; HINT`."""
    text = f"{REFUSED_PREFIX} {why}" + (f"; {hint}" if hint else "")
    return ToolResult((TextBlock(text, tool_name=tool, source="devall"),), True, REFUSED_BY_POLICY)
