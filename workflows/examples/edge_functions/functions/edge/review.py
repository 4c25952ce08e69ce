"""Edge conditions for the review examples: each takes the message text and answers yes or no."""

from __future__ import annotations

import re

_SCORE = re.compile(r"score\s*:\s*(\d+)\s*/\s*10", re.IGNORECASE)


def _score(text: str) -> int | None:
    match = _SCORE.search(text)
    return int(match.group(1)) if match else None


def is_approved(text: str) -> bool:
    """True when the review gives a score of 7/10 or more."""
    score = _score(text)
    return score is not None and score >= 7


def needs_work(text: str) -> bool:
    """True when the review gives a score below 7/10, or none at all."""
    return not is_approved(text)
