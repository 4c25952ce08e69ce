"""`literal`: emits its fixed text whenever it runs; its inputs are ignored."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import Checker, KeySpec, check_keys, describe, opt_str, scalar_text
from devall_cli.config.yaml_source import KeyPath
from devall_cli.messages import Message
from devall_cli.nodes.base import NODE_TYPES, NodeRun, NodeType


@dataclass(frozen=True)
class LiteralConfig:
    """`config` of a literal node."""

    content: str
    role: str = "user"


KEYS = KeySpec(known=frozenset({"content", "role"}))


def parse_literal(ck: Checker, config: dict[str, Any], path: KeyPath) -> LiteralConfig | None:
    """`content` (required text) and `role` (user or assistant)."""
    check_keys(ck, config, path, KEYS)
    content = config.get("content")
    role = opt_str(ck, config, "role", path) or "user"
    if role not in ("user", "assistant"):
        ck.error((*path, "role"), f"role must be 'user' or 'assistant', got {describe(role)}")
    if content is UNRESOLVED:
        return None
    if content is None:
        ck.error((*path, "content"), "content is required")
        return None
    if isinstance(content, (list, dict)):
        ck.error((*path, "content"), f"content must be text, got {describe(content)}")
        return None
    return LiteralConfig(content=scalar_text(content), role=role)


async def run_literal(run: NodeRun) -> list[Message]:
    """The text, with its own role kept along the edges (ChatDev's preserve_role)."""
    config: LiteralConfig = run.node.config
    return [Message(role=config.role, text=config.content, preserve_role=True)]


LITERAL = NODE_TYPES.register(
    NodeType("literal", "emits fixed text", KEYS, parse_literal, run_literal)
)
