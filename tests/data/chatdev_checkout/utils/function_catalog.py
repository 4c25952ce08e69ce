"""ParamMeta, as ChatDev's utils/function_catalog.py defines it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ParamMeta:
    description: str | None = None
    enum: Sequence[Any] | None = None
