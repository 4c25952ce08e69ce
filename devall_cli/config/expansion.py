"""How much a workflow grows when its placeholders are resolved, counted before anything is copied.

A whole-value placeholder (`args: ${LIST}`) shares the value it refers to, so `vars` entries that
refer to each other ten at a time stand for billions of values or characters while taking a few
bytes of memory — until a later step walks or prints them. The resolver charges every
substitution to an `ExpansionBudget` and refuses the file once the expanded total passes a limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_EXPANDED_VALUES = 100_000  # as many values as a YAML document may hold
MAX_EXPANDED_CHARS = 10_000_000  # characters of text produced or shared by placeholders
MAX_EXPANDED_DEPTH = 100  # nesting of a value built from placeholders, as for YAML collections


@dataclass(frozen=True)
class Extent:
    """The size of a value as if every shared part were copied out."""

    depth: int = 0  # collections inside collections (0 for a scalar)
    values: int = 1
    chars: int = 0


@dataclass
class ExpansionBudget:
    """Charges each placeholder substitution; says when the total goes beyond a limit."""

    values: int = 0
    chars: int = 0
    # id(collection) → (the collection, its extent); holding the object keeps its id unique
    _extents: dict[int, tuple[Any, Extent]] = field(default_factory=dict)

    def charge_text(self, length: int) -> str | None:
        """Charge text of `length` characters; the reason to refuse, or None."""
        self.chars += length
        return self._over()

    def charge_value(self, value: Any, depth: int) -> str | None:
        """Charge a value placed at nesting `depth`; the reason to refuse, or None."""
        extent = self.extent(value)
        if depth + extent.depth > MAX_EXPANDED_DEPTH:
            return f"placeholders nest values more than {MAX_EXPANDED_DEPTH} levels deep"
        self.values += extent.values
        self.chars += extent.chars
        return self._over()

    def extent(self, value: Any) -> Extent:
        """The extent of a resolved value (no recursion: values may be deep and shared)."""
        if not isinstance(value, (dict, list)):
            return _scalar_extent(value)
        pending: list[tuple[Any, bool]] = [(value, False)]
        while pending:
            item, children_done = pending.pop()
            if id(item) in self._extents:
                continue
            children = list(item.values()) if isinstance(item, dict) else item
            if not children_done:
                pending.append((item, True))
                pending.extend((c, False) for c in children if isinstance(c, (dict, list)))
                continue
            parts = [self._known(child) for child in children]
            self._extents[id(item)] = (
                item,
                Extent(
                    depth=1 + max((p.depth for p in parts), default=0),
                    values=1 + sum(p.values for p in parts),
                    chars=sum(p.chars for p in parts),
                ),
            )
        return self._extents[id(value)][1]

    def _known(self, value: Any) -> Extent:
        if isinstance(value, (dict, list)):
            return self._extents[id(value)][1]
        return _scalar_extent(value)

    def _over(self) -> str | None:
        if self.values > MAX_EXPANDED_VALUES:
            return f"placeholders expand the workflow beyond {MAX_EXPANDED_VALUES} values"
        if self.chars > MAX_EXPANDED_CHARS:
            return f"placeholders expand the workflow beyond {MAX_EXPANDED_CHARS} characters"
        return None


def _scalar_extent(value: Any) -> Extent:
    return Extent(chars=len(value) if isinstance(value, str) else 0)
