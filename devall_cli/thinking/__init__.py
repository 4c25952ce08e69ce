"""The thinking stage of agents (`thinking:`): registered types such as `reflection`."""

from devall_cli.thinking.base import THINKING_TYPES, Thinker, ThinkingConfig, ThinkingType

__all__ = ["THINKING_TYPES", "Thinker", "ThinkingConfig", "ThinkingType"]
