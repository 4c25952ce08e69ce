"""Dynamic edges (map and tree fan-out): not supported yet; the loader refuses `dynamic`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from devall_cli.errors import RunFailedError
from devall_cli.messages import Message

if TYPE_CHECKING:
    from devall_cli.engine.graph import Link, NodeState
    from devall_cli.nodes.base import NodeRun


async def run_dynamic(node: NodeState, run: NodeRun, links: list[Link]) -> list[Message]:
    """Run `node` once per part of its dynamic inputs."""
    raise RunFailedError(f"node '{node.path}': dynamic edges are not supported yet")
