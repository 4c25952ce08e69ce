"""Load a two-node workflow around one edge and build that edge's condition or processor."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from devall_cli.config.model import EdgeConfig, Workflow
from devall_cli.edges import CONDITION_TYPES, PROCESSOR_TYPES
from devall_cli.engine.edge_env import WorkflowEdgeEnv
from devall_cli.errors import ConfigIssue
from devall_cli.messages import USER, Message
from devall_cli.workflow.loader import validate_workflow


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def edge_flow(folder: Path, **edge: Any) -> Path:
    """`a → b` with the given edge keys (JSON is YAML)."""
    document = {
        "graph": {
            "start": ["a"],
            "nodes": [{"id": "a", "type": "passthrough"}, {"id": "b", "type": "passthrough"}],
            "edges": [{"from": "a", "to": "b", **edge}],
        }
    }
    return write(folder / "flow.yaml", json.dumps(document, indent=1))


def load_edge(
    folder: Path, environ: Mapping[str, str] | None = None, **edge: Any
) -> tuple[Workflow, EdgeConfig]:
    workflow, issues = validate_workflow(edge_flow(folder, **edge), environ=environ or {})
    assert workflow is not None, [issue.headline() for issue in issues]
    return workflow, workflow.graph.edges[0]


def edge_errors(
    folder: Path, environ: Mapping[str, str] | None = None, **edge: Any
) -> list[ConfigIssue]:
    workflow, issues = validate_workflow(edge_flow(folder, **edge), environ=environ or {})
    assert workflow is None
    return [issue for issue in issues if issue.severity == "error"]


def processor(folder: Path, **config: Any) -> Callable[[str], Message | None]:
    """The built processor of `process: {type, config}`, applied to user text."""
    process = config.pop("process")
    workflow, edge = load_edge(folder, process=process, **config)
    assert edge.process is not None
    kind = PROCESSOR_TYPES.get(edge.process.type)
    assert kind is not None
    built = kind.build(edge.process.config, WorkflowEdgeEnv(workflow))
    return lambda text: built(Message(role=USER, text=text, meta={"m": 1}))


def condition(folder: Path, value: Any, **settings: Any) -> Callable[[str], bool]:
    """The built condition of `condition: value`."""
    workflow, edge = load_edge(folder, condition=value, **settings)
    kind = CONDITION_TYPES.get(edge.condition.type)
    assert kind is not None
    return kind.build(edge.condition.config, WorkflowEdgeEnv(workflow))
