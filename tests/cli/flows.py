"""Builders for the loop and message-handling CLI tests: workflows as data, run records read back.

A workflow is built as a dict (nodes, edges), written as JSON (which is YAML) and run through
`devall` via Typer's CliRunner; the run directory's events.jsonl and result.json are read back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers import events as events
from tests.helpers import invoke as invoke  # re-exported
from tests.servers.fake_llm import FakeLLM

LLM_KEY = "sk-loops-test-2f9c41"


def llm_agent(node_id: str, llm: FakeLLM, **extra: Any) -> dict[str, Any]:
    """An agent on the fake LLM (no retries; node keys such as context_window go in `extra`)."""
    node_keys = {k: extra.pop(k) for k in ("context_window",) if k in extra}
    config = {
        "provider": "openai",
        "name": f"model-{node_id}",
        "base_url": llm.base_url,
        "api_key": LLM_KEY,
        "params": {"retries": 0},
        **extra,
    }
    return {"id": node_id, "type": "agent", "config": config, **node_keys}


def scripted(node_id: str, *turns: str, **node_keys: Any) -> dict[str, Any]:
    """A scripted agent answering `turns` in order (the last one repeated)."""
    config = {"provider": "scripted", "script": list(turns)}
    return {"id": node_id, "type": "agent", "config": config, **node_keys}


def node(node_id: str, kind: str, **config: Any) -> dict[str, Any]:
    """Any other node type with its config."""
    return {"id": node_id, "type": kind, "config": config}


def edge(source: str, target: str, **keys: Any) -> dict[str, Any]:
    """An edge; `any`/`none` give a keyword condition."""
    words = {k: keys.pop(k) for k in ("any", "none") if k in keys}
    result: dict[str, Any] = {"from": source, "to": target, **keys}
    if words:
        result["condition"] = {"type": "keyword", "config": words}
    return result


def write_flow(
    folder: Path,
    nodes: list[dict[str, Any]],
    edges: list[dict[str, Any]],
    *,
    start: list[str],
    end: list[str] | None = None,
    **graph: Any,
) -> Path:
    """The workflow file `flow.yaml` in `folder`."""
    document: dict[str, Any] = {
        "graph": {"id": "flow", "start": start, "nodes": nodes, "edges": edges, **graph}
    }
    if end:
        document["graph"]["end"] = end
    path = folder / "flow.yaml"
    path.write_text(json.dumps(document, indent=1))
    return path


def result(run_dir: Path) -> dict[str, Any]:
    """The run's result.json."""
    document: dict[str, Any] = json.loads((run_dir / "result.json").read_text())
    return document


def visits(run_dir: Path, node_id: str) -> list[list[str]]:
    """The outputs of each visit of a node, from result.json."""
    record = next(n for n in result(run_dir)["nodes"] if n["id"] == node_id)
    return [v["outputs"] for v in record["visits"]]


def sent_messages(llm: FakeLLM, model: str) -> list[list[tuple[str, str]]]:
    """(role, content) of the messages of each request the fake LLM got for `model`."""
    return [
        [(m["role"], m["content"]) for m in request.body["messages"]]
        for request in llm.requests
        if request.body["model"] == model
    ]
