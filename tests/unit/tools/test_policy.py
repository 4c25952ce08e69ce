"""The tool policy: rules, layering of verdicts, and the gate that refuses or asks about calls."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from devall_cli.config.model import GraphConfig, NodeConfig
from devall_cli.tools.base import TextBlock, ToolSpec
from devall_cli.tools.policy import (
    ApprovalAnswer,
    ApprovalRequest,
    Approver,
    RuleError,
    ToolPolicy,
    decide,
    parse_rule,
)
from devall_cli.tools.policy_gate import PolicyGate, node_layers
from devall_cli.workflow.loader import validate_workflow

READ_ONLY = {"readOnlyHint": True}


def policy(allow: tuple[str, ...] = (), deny: tuple[str, ...] = (), approve: Any = None) -> Any:
    return ToolPolicy(
        tuple(parse_rule(r) for r in allow), tuple(parse_rule(r) for r in deny), approve
    )


def test_rules_match_names_servers_and_hints_with_the_specs_defaults() -> None:
    assert parse_rule("write_*").matches("write_file", "fs", None)
    assert parse_rule("server:f?").matches("anything", "fs", None)
    assert not parse_rule("server:f?").matches("anything", "docs", None)
    # A tool that says nothing may be destructive; a read-only one destroys nothing.
    assert parse_rule("destructiveHint").matches("t", "s", None)
    assert not parse_rule("destructiveHint").matches("t", "s", READ_ONLY)
    assert parse_rule("readOnlyHint=false").matches("t", "s", {"destructiveHint": False})
    with pytest.raises(RuleError, match="unclosed"):
        parse_rule("[abc")
    with pytest.raises(RuleError, match="did you mean 'destructiveHint'"):
        parse_rule("destructivehint")


def test_the_most_specific_layer_with_a_matching_rule_decides() -> None:
    graph = policy(deny=("write_*",), approve="never")
    node = policy(allow=("readOnlyHint",), deny=("read_secret",))
    cli = policy(allow=("write_file",))
    layers: Any = [("cli", cli), ("node", node), ("graph", graph)]
    assert decide("write_file", "fs", None, layers).decision == "allow"  # --allow-tool wins
    assert decide("write_dir", "fs", None, layers).layer == "graph"
    # Within a layer a deny beats an allow.
    verdict = decide("read_secret", "fs", READ_ONLY, layers)
    assert (verdict.decision, verdict.layer, verdict.rule) == ("deny", "node", "read_secret")
    # No rule matches: the first approve mode, most specific first.
    assert decide("other", "fs", None, layers).reason() == "approve: never (graph)"
    ask: Any = [("cli", policy(approve="ask")), *layers]
    assert decide("other", "fs", None, ask).decision == "ask"
    assert decide("other", "fs", None, []).decision == "allow"  # ChatDev's behaviour


def test_a_subgraph_node_obeys_its_own_graph_before_the_top_graph() -> None:
    inner_graph = GraphConfig(
        nodes=(NodeConfig("worker", "agent", _Settings(policy())),),
        start=("worker",),
        tool_policy=policy(allow=("fetch",)),
    )
    outer = GraphConfig(
        nodes=(NodeConfig("team", "subgraph", _Holder(inner_graph)),),
        start=("team",),
        tool_policy=policy(deny=("fetch",), approve="never"),
    )
    layers = node_layers(outer, policy(approve="ask"))
    assert [name for name, _ in layers["team/worker"]] == ["cli", "graph", "graph"]
    assert decide("fetch", "web", None, layers["team/worker"]).decision == "allow"
    assert decide("fetch", "web", None, layers["team"]).decision == "deny"


class _Settings:
    def __init__(self, tool_policy: ToolPolicy) -> None:
        self.tool_policy = tool_policy


class _Holder:
    def __init__(self, graph: GraphConfig) -> None:
        self.graph = graph

    def child_graphs(self) -> tuple[GraphConfig, ...]:
        return (self.graph,)


class _Events:
    def __init__(self) -> None:
        self.seen: list[tuple[Any, ...]] = []

    def tool_denied(self, node_id: str, items: Any) -> None:
        self.seen.append(("denied", node_id, [item["tool"] for item in items]))

    def tool_approval(self, *args: Any) -> None:
        self.seen.append(("approval", *args))


class _Always(Approver):
    def __init__(self) -> None:
        self.asked: list[ApprovalRequest] = []

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.asked.append(request)
        return ApprovalAnswer(True, "terminal", remember=True)


def spec(name: str, annotations: Any = None) -> ToolSpec:
    return ToolSpec(name, name, "", {}, "mcp_local", "srv --token=s3cret", "fs", None, annotations)


def graph_of(tool_policy: ToolPolicy) -> GraphConfig:
    node = NodeConfig("a", "agent", _Settings(ToolPolicy()))
    return GraphConfig(nodes=(node,), start=("a",), tool_policy=tool_policy)


def text(result: Any) -> str:
    assert result.is_error and result.error_class == "refused_by_policy"
    return "".join(block.text for block in result.blocks if isinstance(block, TextBlock))


def test_the_gate_hides_denied_tools_and_refuses_or_asks_about_calls() -> None:
    events = _Events()
    gate = PolicyGate(
        graph_of(policy(allow=("readOnlyHint",), deny=("rm",), approve="ask")),
        events=events,  # type: ignore[arg-type]
        mask=lambda value: {"path": "***"} if isinstance(value, dict) else "masked",
    )
    tools = [spec("read", READ_ONLY), spec("rm"), spec("write")]
    assert [s.name for s in gate.judge("a", "a", tools)] == ["read", "write"]
    gate.judge("a", "a", tools)  # listed again: told once
    assert events.seen == [("denied", "a", ["rm"])]

    async def calls() -> list[Any]:
        return [
            await gate.admit("a", "a", tools[0], {}, "c1"),
            await gate.admit("a", "a", tools[1], {}, "c2"),
            await gate.admit("a", "a", tools[2], {"path": "/x"}, "c3"),
        ]

    allowed, denied, asked = asyncio.run(calls())
    assert allowed is None
    assert text(denied) == (
        "refused by policy: denied by rule 'rm' (graph); allow it with --allow-tool rm"
    )
    assert text(asked) == (
        "refused by policy: approve: ask (graph), and no terminal to ask and no answer in "
        "--answers; allow it with --allow-tool write or an answer in --answers"
    )
    reason = "approve: ask (graph), and no terminal to ask and no answer in --answers"
    assert events.seen[-1] == ("approval", "a", "c3", "write", "fs", False, "no_terminal", reason)


def test_an_always_answer_is_remembered_for_the_node_and_the_person_sees_masked_values() -> None:
    approver = _Always()
    events = _Events()
    gate = PolicyGate(
        graph_of(policy(approve="ask")),
        approver=approver,
        events=events,  # type: ignore[arg-type]
        mask=lambda value: {"path": "***"} if isinstance(value, dict) else "srv --token=***",
    )
    write = spec("write")
    gate.judge("a#1", "a", [write])

    async def twice() -> list[Any]:
        return [await gate.admit(f"a#{n}", "a", write, {"path": "/x"}, f"c{n}") for n in (1, 2)]

    assert asyncio.run(twice()) == [None, None]
    (request,) = approver.asked
    assert request.arguments == {"path": "***"} and request.server == "srv --token=***"
    assert [event[6] for event in events.seen] == ["terminal", "remembered"]


def test_an_always_given_while_other_calls_wait_decides_them_without_a_question() -> None:
    class _Slow(_Always):
        async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
            await asyncio.sleep(0.05)  # the person takes a moment; the other calls wait
            return await super().approve(request)

    approver, events = _Slow(), _Events()
    gate = PolicyGate(graph_of(policy(approve="ask")), approver=approver, events=events)  # type: ignore[arg-type]
    write = spec("write")
    gate.judge("a", "a", [write])

    async def together() -> list[Any]:
        calls = (gate.admit("a", "a", write, {}, f"c{n}") for n in range(3))
        return list(await asyncio.gather(*calls))

    assert asyncio.run(together()) == [None, None, None]
    assert len(approver.asked) == 1
    assert [event[6] for event in events.seen] == ["terminal", "remembered", "remembered"]


def test_the_caller_of_tools_call_approves_but_a_denied_tool_stays_refused() -> None:
    gate = PolicyGate(graph_of(policy(deny=("rm",), approve="never")), caller_approves=True)
    tools = [spec("rm"), spec("write")]
    gate.judge("a", "a", tools)

    async def both() -> list[Any]:
        return [await gate.admit("a", "a", t, {}, "c") for t in tools]

    denied, called = asyncio.run(both())
    assert text(denied).startswith("refused by policy: denied by rule 'rm'")
    assert called is None


def test_the_workflow_block_is_parsed_and_every_problem_located(tmp_path: Path) -> None:
    flow = tmp_path / "flow.yaml"
    flow.write_text(
        """\
graph:
  id: p
  start: [a]
  tool_policy:
    allow: [readOnlyHint, {tool: "read_*", server: fs}]
    deny: [destructivehint, {tol: x}, "[ab"]
    approve: nevr
  nodes:
    - id: a
      type: agent
      config: {provider: scripted, script: [hi], tool_policy: {allow: write_*}}
"""
    )
    workflow, issues = validate_workflow(flow)
    assert workflow is None
    found = {(issue.path, issue.line): issue.message for issue in issues}
    assert "did you mean 'destructiveHint'" in found[("graph.tool_policy.deny[0]", 6)]
    assert "unknown key 'tol'" in found[("graph.tool_policy.deny[1].tol", 6)]
    assert "unclosed '['" in found[("graph.tool_policy.deny[2]", 6)]
    assert "did you mean 'never'" in found[("graph.tool_policy.approve", 7)]
    assert "must be a list of rules" in found[("graph.nodes[0].config.tool_policy.allow", 11)]

    fixed = flow.read_text().replace('destructivehint, {tol: x}, "[ab"', "rm")
    flow.write_text(fixed.replace("nevr", "never").replace("allow: write_*", "allow: [write_*]"))
    workflow, issues = validate_workflow(flow)
    assert workflow is not None
    (warning,) = issues  # the graph declares no server: the server glob can match nothing
    assert warning.severity == "warning" and "matches no server of the graph" in warning.message
    graph_policy = workflow.graph.tool_policy
    assert [r.text for r in graph_policy.allow] == ["readOnlyHint", "{tool: read_*, server: fs}"]
    assert graph_policy.approve == "never"
    assert [r.text for r in workflow.graph.nodes[0].config.tool_policy.allow] == ["write_*"]
