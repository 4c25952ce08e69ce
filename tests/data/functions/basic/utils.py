"""Small functions used through `utils:All`."""

import time


def zeta(value: int) -> int:
    """Return the value unchanged."""
    return value


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def multiply(a: int, b: int = 2) -> int:
    """Multiply two integers."""
    return a * b


sleep = time.sleep  # a function object from another module: not a tool
