"""`passthrough`: forwards its latest input (or all of them) unchanged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from devall_cli.config.schema import Checker, KeySpec, check_keys, opt_bool
from devall_cli.config.yaml_source import KeyPath
from devall_cli.messages import USER, Message
from devall_cli.nodes.base import NODE_TYPES, NodeRun, NodeType


@dataclass(frozen=True)
class PassthroughConfig:
    """`config` of a passthrough node."""

    only_last_message: bool = True


KEYS = KeySpec(known=frozenset({"only_last_message"}))


def parse_passthrough(ck: Checker, config: dict[str, Any], path: KeyPath) -> PassthroughConfig:
    """`only_last_message` (default true)."""
    check_keys(ck, config, path, KEYS)
    return PassthroughConfig(
        only_last_message=opt_bool(ck, config, "only_last_message", path, True)
    )


async def run_passthrough(run: NodeRun) -> list[Message]:
    """The last input, or every input as its own output message; one empty message if none."""
    config: PassthroughConfig = run.node.config
    if not run.inputs:
        return [Message(role=USER, text="")]
    if config.only_last_message:
        return [run.inputs[-1]]
    return list(run.inputs)


PASSTHROUGH = NODE_TYPES.register(
    NodeType(
        "passthrough",
        "forwards its inputs",
        KEYS,
        parse_passthrough,
        run_passthrough,
        config_required=False,
    )
)
