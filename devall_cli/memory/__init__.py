"""Agent memory: stores declared under `graph.memory`, attached to agents with `memories`."""

from devall_cli.config.model import MemoryStoreConfig
from devall_cli.memory.base import MEMORY_STORES, MemoryRefConfig, MemoryStoreType

__all__ = ["MEMORY_STORES", "MemoryRefConfig", "MemoryStoreConfig", "MemoryStoreType"]
