"""What devall's spans say, by the GenAI and MCP semantic conventions (otel.py makes the spans).

`node_infos` reads the workflow once for what its events do not carry: each node's type and, for
an agent, its provider and model. The rest turns event fields into attributes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from devall_cli.config.model import Workflow, walk_nodes
from devall_cli.events import ModelReplyEvent
from devall_cli.node_paths import declared_path

# devall's provider names -> `gen_ai.provider.name` where the conventions name it otherwise.
PROVIDER_NAMES = {"gemini": "gcp.gemini"}
Attributes = dict[str, Any]


@dataclass(frozen=True)
class NodeInfo:
    """What the trace says about a declared node: its type and, for an agent, its model."""

    type: str
    provider: str | None = None
    model: str | None = None


def node_infos(workflow: Workflow) -> dict[str, NodeInfo]:
    """Every node of the workflow and its subgraphs, by path."""
    found: dict[str, NodeInfo] = {}
    for path, node in walk_nodes(workflow.graph):
        provider = getattr(node.config, "provider", None)  # an agent's settings name one
        model = getattr(node.config, "name", None) if isinstance(provider, str) else None
        found[path] = NodeInfo(
            node.type,
            provider if isinstance(provider, str) else None,
            model if isinstance(model, str) else None,
        )
    return found



def enclosing(path: str) -> str | None:
    """The path of what a node runs inside: `writer#2` -> `writer`, `team/critic` -> `team`."""
    head, sep, last = path.rpartition("/")
    node = declared_path(last, ())
    if node != last:
        return f"{head}{sep}{node}"
    return head or None


def provider_name(name: str) -> str | None:
    return PROVIDER_NAMES.get(name, name) or None


def mcp_attributes(source: str, target: str, method: str | None = "tools/call") -> Attributes:
    """`mcp.method.name`, `network.transport` and, for a remote server, `server.address`."""
    attributes: Attributes = {"mcp.method.name": method}
    if source != "mcp_remote":
        attributes["network.transport"] = "pipe"  # stdio, as the MCP conventions name it
        return attributes
    attributes["network.transport"] = "tcp"
    try:
        parts = urlsplit(target)
        attributes["server.address"] = parts.hostname
        attributes["server.port"] = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:  # not a URL after all: nothing more to say
        pass
    return attributes


def output_messages(event: ModelReplyEvent, reason: str) -> list[dict[str, Any]]:
    """The reply as `gen_ai.output.messages` (the GenAI conventions' message parts)."""
    parts: list[dict[str, Any]] = []
    if event.content:
        parts.append({"type": "text", "content": event.content})
    for call in event.tool_calls:
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": call.get("name"),
                "arguments": call.get("arguments"),
            }
        )
    return [{"role": "assistant", "parts": parts, "finish_reason": reason}]


def error_text(blocks: Sequence[Mapping[str, Any]], error_class: str | None) -> str:
    """The status message of a failed tool call: its error text."""
    texts = [str(b.get("text")) for b in blocks if isinstance(b.get("text"), str)]
    return " ".join(texts) or error_class or "error"
