"""Defines `same`, as does first.py."""


def same() -> str:
    """Answer from the second module."""
    return "second"
