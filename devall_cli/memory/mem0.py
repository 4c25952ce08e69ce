"""`type: mem0`: ChatDev's hosted Mem0 store. devall runs local stores only; this descriptor is
registered so that a workflow using it gets a config error naming the store."""

from __future__ import annotations

from typing import Any

from devall_cli.config.schema import Checker, KeySpec
from devall_cli.config.yaml_source import KeyPath
from devall_cli.errors import ConfigError
from devall_cli.memory.base import MEMORY_STORES, MemoryStore, MemoryStoreType, StoreContext

NOT_SUPPORTED = (
    "memory store type 'mem0' (the hosted Mem0 service) is not supported by devall; "
    "use simple, file or blackboard"
)


def parse_mem0(ck: Checker, config: dict[str, Any], path: KeyPath) -> Any:
    """Always an error: the store runs on Mem0's servers."""
    ck.error((*path[:-1], "type"), NOT_SUPPORTED)
    return None


def _build(settings: Any, context: StoreContext) -> MemoryStore:
    raise ConfigError(NOT_SUPPORTED)


MEM0 = MEMORY_STORES.register(
    MemoryStoreType(
        "mem0",
        "the hosted Mem0 service (not supported)",
        KeySpec(
            known=frozenset(),
            ignored=frozenset({"api_key", "org_id", "project_id", "user_id", "agent_id"}),
        ),
        parse_mem0,
        _build,
    )
)
