"""Builders for the `devall batch` tests: workflows as JSON (which is YAML), task files, records."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.servers.fake_llm import FakeLLM
from tests.servers.serve import SERVERS_DIR

LLM_KEY = "sk-batch-test-7d1e2c"


def write_workflow(
    folder: Path, node_config: dict[str, Any], variables: dict[str, str] | None = None
) -> Path:
    """`flow.yaml`: one agent node `a` with `node_config`, and top-level `vars`."""
    document: dict[str, Any] = {
        "graph": {
            "id": "flow",
            "start": ["a"],
            "nodes": [{"id": "a", "type": "agent", "config": node_config}],
        }
    }
    if variables:
        document["vars"] = variables
    path = folder / "flow.yaml"
    path.write_text(json.dumps(document, indent=1))
    return path


def scripted_workflow(
    folder: Path,
    *turns: Any,
    tooling: list[dict[str, Any]] | None = None,
    variables: dict[str, str] | None = None,
) -> Path:
    """A scripted agent answering `turns` in order, with `tooling`."""
    config: dict[str, Any] = {"provider": "scripted", "script": list(turns)}
    if tooling is not None:
        config["tooling"] = tooling
    return write_workflow(folder, config, variables)


def llm_workflow(folder: Path, llm: FakeLLM) -> Path:
    """An agent on the fake LLM, without retries."""
    config = {
        "provider": "openai",
        "name": "model-a",
        "base_url": llm.base_url,
        "api_key": LLM_KEY,
        "params": {"retries": 0},
    }
    return write_workflow(folder, config)


def fixture_tooling(**settings: Any) -> dict[str, Any]:
    """An `mcp_local` entry running the fixture tools with the tests' Python.

    The stdlib raw server's fixture tools (track, counter, env, image, ...): the batch tests are
    about how servers are shared and supervised, and it starts at a fraction of FastMCP's cost.
    """
    config = {
        "command": sys.executable,
        "args": [str(SERVERS_DIR / "raw_server.py"), "--fixture"],
        "wait_for_log": "raw server ready",
        "startup_timeout": 30,
        **settings,
    }
    return {"type": "mcp_local", "config": config}


def jsonl_tasks(folder: Path, *records: dict[str, Any], name: str = "tasks.jsonl") -> Path:
    """A JSONL TASKS file."""
    path = folder / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def results(batch_dir: Path) -> list[dict[str, Any]]:
    """The lines of results.jsonl, each parsed (a line that is not JSON fails the test)."""
    text = (batch_dir / "results.jsonl").read_text()
    assert text == "" or text.endswith("\n"), "results.jsonl ends inside a line"
    return [json.loads(line) for line in text.splitlines()]


def summary(batch_dir: Path) -> dict[str, Any]:
    """summary.json."""
    document: dict[str, Any] = json.loads((batch_dir / "summary.json").read_text())
    return document


def run_events(run_dir: Path) -> list[dict[str, Any]]:
    """A task's events.jsonl."""
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
