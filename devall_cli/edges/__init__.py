"""Edge conditions and payload processors (registered descriptors, see `base.py`)."""

from devall_cli.edges.base import (
    CONDITION_TYPES,
    PROCESSOR_TYPES,
    ConditionType,
    EdgeEnv,
    ProcessorType,
)

__all__ = ["CONDITION_TYPES", "PROCESSOR_TYPES", "ConditionType", "EdgeEnv", "ProcessorType"]
