"""The warning when a node sends its model more tools than the graph's `tool_warning` allows,
against a real local server listing the tools of a file (raw_server.py --tools-file)."""

from __future__ import annotations

import json
from pathlib import Path

from devall_cli.config.tool_warning import ToolWarningConfig
from devall_cli.nodes.surface_size import oversize, schema_bytes
from devall_cli.tools.base import ToolSpec
from tests.cli.mcp_targets import raw_tools_workflow
from tests.helpers import cli, events

SCHEMA = {"type": "object", "properties": {"query": {"type": "string"}}}
TOOLS = [{"name": f"find_{i}", "description": "Find.", "inputSchema": SCHEMA} for i in range(4)]


def setup(tmp_path: Path, limits: str) -> Path:
    """wf.yaml: node `a` sees the 4 tools of one local server, under `tool_warning: limits`."""
    return raw_tools_workflow(tmp_path, TOOLS, f"tool_warning: {limits}")


def test_a_node_over_the_tool_limit_is_warned_about_in_the_trace_and_result(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    done = cli("run", str(setup(tmp_path, "{tools: 3}")), "--out", str(run_dir))
    assert done.returncode == 0, done.stderr
    (line,) = [line for line in done.stderr.splitlines() if "tool_warning" in line]
    assert line.startswith("! a: the model is sent 4 tools (")
    assert "over graph.tool_warning (3 tools); hint: 4 of them come from 'notes'" in line
    assert "`tool_sources`" in line and "`tool_policy`" in line
    (event,) = events(run_dir, "tools.oversize")
    size = event["schema_bytes"]
    assert size > 0
    expected = {"node": "a", "tools": 4, "schema_bytes": size, "tool_limit": 3}
    assert {key: event[key] for key in expected} == expected
    assert event["bytes_limit"] == 256 * 1024
    first_request = events(run_dir).index(events(run_dir, "model.request")[0])
    assert events(run_dir).index(event) < first_request
    result = json.loads((run_dir / "result.json").read_text())
    fields = {k: v for k, v in event.items() if k not in ("kind", "ts", "run_id")}
    assert result["warnings"] == [{"kind": "tools_oversize", **fields}]


def test_a_node_within_the_limits_is_not_warned_about(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    done = cli("run", str(setup(tmp_path, "{tools: 4}")), "--out", str(run_dir))
    assert done.returncode == 0, done.stderr
    assert "tool_warning" not in done.stderr
    assert events(run_dir, "tools.oversize") == []
    assert "warnings" not in json.loads((run_dir / "result.json").read_text())


def test_the_schema_bytes_limit_and_zero_turning_a_check_off() -> None:
    specs = [
        ToolSpec(f"t{i}", f"t{i}", "Find.", SCHEMA, "mcp_local", "server", "s") for i in range(3)
    ]
    size = schema_bytes(specs)
    sent = [{"name": s.name, "description": "Find.", "parameters": SCHEMA} for s in specs]
    assert size == len(json.dumps(sent, separators=(",", ":")))
    assert oversize("a", specs, ToolWarningConfig(tools=0, schema_bytes=size)) is None
    found = oversize("a", specs, ToolWarningConfig(tools=0, schema_bytes=size - 1))
    assert found is not None
    assert (found["tools"], found["schema_bytes"], found["tool_limit"]) == (3, size, 0)
    assert oversize("a", specs, ToolWarningConfig(tools=0, schema_bytes=0)) is None
    assert oversize("a", specs, ToolWarningConfig(tools=2, schema_bytes=0)) is not None
