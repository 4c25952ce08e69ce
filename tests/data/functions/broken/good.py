"""A module that imports fine next to one that does not."""


def fine() -> str:
    """Return a fixed word."""
    return "fine"
