"""Edge processors for the broken workflows of the corpus."""

from typing import Any


def polish_text(data: str, _context: dict[str, Any]) -> str:
    """The payload without surrounding blank space."""
    return data.strip()
