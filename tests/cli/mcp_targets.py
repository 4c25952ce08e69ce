"""Helpers of the ad-hoc target, mcpServers file, resources and prompts tests."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.servers.serve import SERVERS_DIR

RESOURCES_SERVER = SERVERS_DIR / "resources_server.py"
RAW_SERVER = SERVERS_DIR / "raw_server.py"
# The repository root: the server scripts import nothing from it, but the tests run there.
ROOT = SERVERS_DIR.parent.parent


def local_command(script: Path = RESOURCES_SERVER, *extra: str) -> str:
    """A `--command` value starting a stdio server script with this Python."""
    return " ".join([sys.executable, str(script), *extra])


def write_json(path: Path, data: Any) -> Path:
    """Write `data` as indented JSON and return the path."""
    path.write_text(json.dumps(data, indent=2))
    return path


def raw_tools_workflow(tmp_path: Path, tools: list[dict[str, Any]], graph_lines: str = "") -> Path:
    """wf.yaml: scripted agent `a` sees the `tools` of one raw_server (prefix `notes`).

    `graph_lines` are more keys of the graph, as YAML at the graph's indentation.
    """
    (tmp_path / "tools.json").write_text(json.dumps(tools))
    extra = "".join(f"      {line}\n" for line in textwrap.dedent(graph_lines).splitlines())
    text = f"""
    graph:
{extra}      start: [a]
      nodes:
        - id: a
          type: agent
          config:
            provider: scripted
            script: [{{content: done}}]
            tooling:
              - type: mcp_local
                prefix: notes
                config:
                  command: "{sys.executable}"
                  args: ["{RAW_SERVER}", --tools-file, "{tmp_path / "tools.json"}"]
                  wait_for_log: raw server ready
    """
    workflow = tmp_path / "wf.yaml"
    workflow.write_text(textwrap.dedent(text))
    return workflow
