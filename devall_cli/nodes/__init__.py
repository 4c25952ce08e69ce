"""Node types, one module each; `NODE_TYPES` is their registry (see `base.py`)."""

from devall_cli.nodes.base import NODE_TYPES, NodeRun, NodeType

__all__ = ["NODE_TYPES", "NodeRun", "NodeType"]
