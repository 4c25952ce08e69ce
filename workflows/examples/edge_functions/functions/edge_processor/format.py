"""Edge processors for the examples: each takes (text, state) and returns the new payload."""

from __future__ import annotations

from typing import Any


def to_checklist(text: str, state: dict[str, Any]) -> str | None:
    """Turn every non-empty line into a checklist item; an empty payload is dropped."""
    items = [line.strip(" -*\t") for line in text.splitlines() if line.strip(" -*\t")]
    if not items:
        return None
    state["checklists"] = state.get("checklists", 0) + 1
    heading = f"Checklist #{state['checklists']} ({len(items)} items)"
    return "\n".join([heading, *(f"- [ ] {item}" for item in items)])


def only_questions(text: str, state: dict[str, Any]) -> dict[str, Any]:
    """Keep the lines that ask something; drop the payload when there is none."""
    questions = [line.strip() for line in text.splitlines() if line.strip().endswith("?")]
    if not questions:
        return {"drop": True}
    return {"content": "\n".join(questions), "metadata": {"questions": len(questions)}}
