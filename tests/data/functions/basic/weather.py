"""Typed functions used to check the schemas derived from signatures."""

from __future__ import annotations

import enum
from os.path import join  # noqa: F401 - an imported function: not a tool of this module
from typing import Annotated, Any, Literal, Optional

from _helpers import shout  # a helper module beside this one (skipped as a tool source)


class Unit(enum.Enum):
    """Temperature units."""

    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Station:
    """A type the schema builder does not know."""


def get_weather(
    city: Annotated[str, "City name, e.g. Paris"],
    days: int = 1,
    unit: Unit = Unit.CELSIUS,
    detail: Literal["short", "long"] = "short",
    hours: list[int] | None = None,
) -> str:
    """Get the weather forecast for a city.

    This second paragraph is not part of the description.
    """
    return f"{city}: sunny for {days} day(s) in {unit.value} ({detail}, hours={hours})"


def typed_everything(
    text: str,
    count: int,
    ratio: float,
    flag: bool,
    tags: list[str],
    weights: dict[str, float],
    anything: Any,
    station: Station,
    maybe: Optional[int],  # noqa: UP045 - the old spelling must keep working
    maybe_new: int | None,
    labelled: Annotated[Optional[str], "An optional label"],  # noqa: UP045
    pair: tuple[int, ...] = (1, 2),
    mode: Literal[1, 2, 3] = 2,
    options: dict[str, Any] | None = None,
    untyped=None,
) -> dict[str, Any]:
    """Echo the arguments back as a mapping."""
    return {
        "text": text,
        "count": count,
        "ratio": ratio,
        "flag": flag,
        "tags": tags,
        "maybe": maybe,
        "maybe_new": maybe_new,
        "labelled": labelled,
    }


def loud(word: str) -> str:
    """Say a word loudly (uses the helper module beside this file)."""
    return shout(word)


def convert(temperature: float, unit: Unit) -> str:
    """Convert a temperature given in Celsius."""
    value = temperature if unit is Unit.CELSIUS else temperature * 9 / 5 + 32
    return f"{value:g} {unit.name}"


def _private_helper() -> None:
    """Not a tool: its name starts with an underscore."""

