"""A function module named like ChatDev's `utils` package (ChatDev has one such, too)."""


def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()
