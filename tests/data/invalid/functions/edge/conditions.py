"""Edge conditions for the broken workflows of the corpus."""


def approved(text: str) -> bool:
    """Met when the critic approves."""
    return "APPROVED" in text


def needs_revision(text: str, strict: bool) -> bool:
    """Takes two arguments: an edge condition is called with one."""
    return strict or "REVISE" in text
