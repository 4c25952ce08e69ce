"""Helpers for the loop gate tests: load one gate node from YAML, run its visits directly."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from devall_cli.config.model import NodeConfig
from devall_cli.errors import ConfigIssue
from devall_cli.messages import USER, Message
from devall_cli.nodes import NODE_TYPES, NodeRun
from devall_cli.workflow.loader import validate_workflow

FLOW = """\
graph:
  start: gate
  nodes:
    - id: gate
      type: {kind}
      config:
{config}
"""


def load_gate(folder: Path, kind: str, config: str) -> tuple[NodeConfig | None, list[ConfigIssue]]:
    """The gate node parsed from `config` (YAML lines), and every issue reported."""
    body = textwrap.indent(textwrap.dedent(config).strip() or "{}", " " * 8)
    path = folder / "flow.yaml"
    path.write_text(FLOW.format(kind=kind, config=body))
    workflow, issues = validate_workflow(path, environ={})
    node = workflow.graph.node("gate") if workflow is not None else None
    return node, list(issues)


def errors(issues: list[ConfigIssue]) -> list[tuple[str, str]]:
    """(path, message) of every error."""
    return [(i.path, i.message) for i in issues if i.severity == "error"]


class Visits:
    """Runs the visits of one node as the engine does: one state kept across visits."""

    def __init__(self, node: NodeConfig) -> None:
        self.node = node
        self.state: dict[str, Any] = {}
        self.count = 0

    async def visit(self, *texts: str) -> list[Message]:
        """One visit with these inputs (user messages); the node's outputs."""
        self.count += 1
        run = NodeRun(
            node=self.node,
            inputs=[Message(role=USER, text=t, source="writer") for t in texts],
            visit=self.count,
            path=self.node.id,
            run_id="r1",
            emit=lambda event: None,
            tools=None,  # type: ignore[arg-type]
            make_provider=lambda *a: None,  # type: ignore[arg-type,return-value]
            state=self.state,
        )
        kind = NODE_TYPES.get(self.node.type)
        assert kind is not None
        return await kind.run(run)
