"""Every annotation form the schema builder knows, read with `from __future__ import annotations`.

`expected_schemas.json` holds the schemas these functions had when they were derived from the
imported signatures; reading the source must give the same ones.
"""

from __future__ import annotations

import enum
import typing
import typing as t
from collections.abc import Mapping, Sequence
from enum import Enum, Flag, IntEnum
from typing import (  # noqa: UP035 - the old spellings must keep working
    Annotated,
    Any,
    Dict,
    FrozenSet,
    List,
    Literal,
    Optional,
    Set,
    Tuple,
    Union,
)

DEFAULT_DAYS = 3
LABEL = "A label"
Vector = list[float]
MaybeInt = Optional[int]  # noqa: UP045


class Color(Enum):
    """Colours; CRIMSON is an alias of RED, not a member of its own."""

    RED = "red"
    GREEN = "green"
    CRIMSON = "red"


class Level(IntEnum):
    """Levels."""

    LOW = 1
    HIGH = 2


class Mixed(str, enum.Enum):  # noqa: UP042 - the mix-in spelling must keep working
    """A str mix-in."""

    A = "a"
    B = "b"


class Perm(Flag):
    """Iterating a Flag gives its single bits only."""

    R = 4
    W = 2
    X = 1
    RW = 6


class Station:
    """A class the schema cannot describe."""


def basic(
    a: str, b: int, c: float, d: bool, e: list, f: dict, g: tuple, h: set, i: frozenset, j: None
) -> None:
    """Builtin types."""


def generic(
    a: list[str],
    b: List[int],  # noqa: UP006
    c: Dict[str, int],  # noqa: UP006
    d: Tuple[int, ...],  # noqa: UP006
    e: Tuple[int, str],  # noqa: UP006
    f: Set[str],  # noqa: UP006
    g: FrozenSet[int],  # noqa: UP006
    h: Sequence[str],
    i: Mapping[str, Any],
    j: t.Sequence[int],
    k: typing.Mapping[str, float],
) -> None:
    """Generic containers."""


def bare(
    a: List,  # noqa: UP006
    b: Dict,  # noqa: UP006
    c: Set,  # noqa: UP006
    d: Tuple,  # noqa: UP006
    e: t.Sequence,
    f: typing.Mapping,
) -> None:
    """Generic containers without arguments."""


def unions(
    a: Union[int, str],  # noqa: UP007
    b: Optional[int],  # noqa: UP045
    c: int | None,
    d: str | None,
    e: t.Optional[int],  # noqa: UP045
    f: Union[int, str, None],  # noqa: UP007
    g: Optional[Optional[int]],  # noqa: UP045
    h: Union[int, int],  # noqa: UP007
) -> None:
    """Unions and optionals in every spelling."""


def literals(
    a: Literal["x", "y"],
    b: Literal[1, 2, 2],
    c: Literal[True, 1],
    d: Optional[Literal["p"]],  # noqa: UP045
    e: Literal[-1, 0],
    f: Literal["a", "b"],
) -> None:
    """Literal values."""


def enums(
    a: Color,
    b: Level,
    c: Mixed,
    d: Optional[Color] = None,  # noqa: UP045
    e: Color = Color.GREEN,
    f: Perm = Perm.R,
) -> None:
    """Enum classes of the module."""


def annotated(
    a: Annotated[str, "desc a"],
    b: Annotated[Optional[int], "desc b"],  # noqa: UP045
    c: Optional[Annotated[int, "desc c"]],  # noqa: UP045
    d: Annotated[Annotated[int, "in"], "out"],
    e: Annotated[list[Annotated[str, "item"]], "list"],
    f: Annotated[int, LABEL],
    g: Annotated[int, 5, "after"],
) -> None:
    """Descriptions."""


def defaults(
    a: int = 1,
    b: float = -2.5,
    c: str = "x",
    d: list[int] = [1, 2],  # noqa: B006
    e: tuple = (1, 2),
    f: dict = {"k": [1]},  # noqa: B006
    g=None,
    h: int = DEFAULT_DAYS,
    i: bytes = b"x",
    j: set = {3},  # noqa: B006
    k: Optional[int] = 3,  # noqa: UP045
) -> None:
    """Defaults copied when JSON can hold them."""


def aliases(a: Vector, b: MaybeInt, c: Station, d: Any, e: object) -> None:
    """Aliases of the module, and types that accept anything."""


def kinds(a: int, /, b: str, *args: int, c: float, d: bool = True, **kw: str) -> None:
    """Positional-only, keyword-only; *args and **kwargs are not parameters of the schema."""


def nested(
    a: dict[str, list[int]],
    b: list[dict[str, Optional[int]]],  # noqa: UP045
    c: Optional[dict[str, Color]],  # noqa: UP045
) -> None:
    """Containers of containers."""
