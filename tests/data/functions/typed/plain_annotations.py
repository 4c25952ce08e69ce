"""Annotations evaluated when the module runs (no `from __future__ import annotations`).

`expected_schemas.json` holds the schemas derived from the imported signatures.
"""

import enum
import typing
from typing import Annotated, List, Literal, Optional  # noqa: UP035


class Shade(enum.Enum):
    """Values of several JSON types: the enum has no single type."""

    DARK = 1
    LIGHT = 2.5
    NONE = None


class Perm(enum.Flag):
    """Single bits only."""

    R = 4
    W = 2
    RW = 6


def strings(
    a: "int",
    b: "Optional[str]" = None,  # noqa: UP045
    c: "list[Shade]" = (),
    d: Optional["int"] = None,
) -> None:
    """Doc  with   spaces
      and an indented second line.

    Second paragraph."""


def enums(a: Shade, b: Perm = Perm.W, c: Optional[Shade] = Shade.DARK) -> None:  # noqa: UP045
    """Enums with defaults."""


def misc(
    a: typing.Union[int, str, None] = 5,  # noqa: UP007
    b: Annotated[int, "x"] = 3,
    *,
    c: Literal["a", "b"],
    d: List[Annotated[str, "it"]],  # noqa: UP006
) -> None:
    """Keyword-only parameters."""


lambda_tool = lambda x, y=2: x  # noqa: E731
alias_tool = enums
