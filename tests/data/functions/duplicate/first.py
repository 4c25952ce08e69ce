"""Defines `same`, as does second.py."""


def same() -> str:
    """Answer from the first module."""
    return "first"
