"""The warning when a node visit would send its model too big a tool surface.

Every model request carries the definitions of all the tools the node is offered; a server of
thousands of tools makes each request megabytes long, slow and costly, and most models choose
worse among that many. Before a visit's first request, `check_surface` compares the node's tools
with the graph's `tool_warning` limits (config/tool_warning.py) and emits one `tools.oversize`
event when either is passed, with a hint on how to narrow what the node sees.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from devall_cli.config.tool_warning import DEFAULT_WARNING, ToolWarningConfig
from devall_cli.events import ToolsOversize
from devall_cli.nodes.base import NodeRun
from devall_cli.tools.base import ToolSpec


def check_surface(run: NodeRun, specs: Sequence[ToolSpec]) -> None:
    """Emit `tools.oversize` when `specs` pass the limits of the run's graph."""
    event = oversize(run.path, specs, limits_of(run.tools))
    if event is not None:
        run.emit(ToolsOversize(run_id=run.run_id, **event))


def limits_of(tools: Any) -> ToolWarningConfig:
    """The `tool_warning` of the workflow the node's tools come from (the top-level graph's)."""
    # The tool manager knows its workflow; a stand-in tool layer (a test's) leaves the defaults.
    workflow = getattr(tools, "workflow", None)
    found = getattr(getattr(workflow, "graph", None), "tool_warning", None)
    return found if isinstance(found, ToolWarningConfig) else DEFAULT_WARNING


def oversize(
    node: str, specs: Sequence[ToolSpec], limits: ToolWarningConfig
) -> dict[str, Any] | None:
    """The fields of the warning about `specs`, or None within the limits."""
    if not limits.tools and not limits.schema_bytes:
        return None
    size = schema_bytes(specs) if specs else 0
    over_tools = bool(limits.tools) and len(specs) > limits.tools
    over_bytes = bool(limits.schema_bytes) and size > limits.schema_bytes
    if not over_tools and not over_bytes:
        return None
    return {
        "node": node,
        "tools": len(specs),
        "schema_bytes": size,
        "tool_limit": limits.tools,
        "bytes_limit": limits.schema_bytes,
        "hint": narrowing_hint(specs),
    }


def schema_bytes(specs: Sequence[ToolSpec]) -> int:
    """The size in UTF-8 of the tools' definitions as a request carries them (compact JSON of
    name, description and input schema)."""
    definitions = [
        {"name": s.name, "description": s.description, "parameters": s.input_schema}
        for s in specs
    ]
    text = json.dumps(definitions, ensure_ascii=False, separators=(",", ":"), default=str)
    return len(text.encode("utf-8", "surrogatepass"))


def narrowing_hint(specs: Sequence[ToolSpec]) -> str:
    """How to send fewer tools, naming the server most of them come from."""
    source, count = Counter(spec.source_id for spec in specs).most_common(1)[0]
    return (
        f"{count} of them come from '{source}'; narrow what the node sees with that tooling "
        "entry's `tool_sources` or `prefix` and a `tool_policy` allow/deny rule "
        "(docs/policy.md)"
    )
