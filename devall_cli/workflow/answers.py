"""The answers file of `devall run --answers FILE`: the replies human nodes get, in order.

YAML or JSON: `{<node id or path>: [reply for visit 1, reply for visit 2, ...], "*": [...]}`.
Read before anything starts, with the limits and checks of a workflow file; every problem is
reported at once, located (exit 3): a key that names no human node of the workflow, a reply
that is not text, a list that is not a list.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from devall_cli import limits
from devall_cli.config.schema import describe, scalar_text
from devall_cli.config.yaml_source import SourceDocument, key_text, parse_source
from devall_cli.errors import ConfigError, ConfigIssue
from devall_cli.nodes.human_input import ANY_NODE, Answers
from devall_cli.redaction import Redactor
from devall_cli.text import clean_text, suggest
from devall_cli.workflow.loader import mask_issue

WHAT = "answers file"


def load_answers(path: Path, human_nodes: Iterable[str], redactor: Redactor) -> Answers:
    """The replies of `path`; `human_nodes` are the ids and paths the keys may name.

    Raises ConfigError with every issue, the workflow's secrets masked in what it quotes.
    """
    try:
        return _load(Path(path), str(path), human_nodes)
    except ConfigError as exc:
        issues = [mask_issue(issue, redactor) for issue in exc.issues]
        raise ConfigError.from_issues(issues) from None


def _load(path: Path, display: str, human_nodes: Iterable[str]) -> Answers:
    doc = parse_source(path, display, what=WHAT, max_bytes=limits.ANSWERS_FILE_BYTES)
    if doc.data is None:
        raise ConfigError.from_issues([ConfigIssue("the answers file is empty", file=display)])
    if not isinstance(doc.data, dict):
        message = (
            "the answers file must be a mapping of node ids to lists of replies, "
            f"got {describe(doc.data)}"
        )
        raise ConfigError.from_issues([doc.issue((), message)])
    known = sorted(set(human_nodes))
    issues: list[ConfigIssue] = []
    replies: dict[str, tuple[str, ...]] = {}
    for key, value in doc.data.items():
        name = key_text(key)
        if name != ANY_NODE and name not in known:
            issues.append(doc.issue((name,), _unknown(name, known), at_key=True))
            continue
        replies[name] = _replies(doc, name, value, issues)
    if issues:
        raise ConfigError.from_issues(issues)
    return Answers(file=display, replies=replies)


def _unknown(name: str, known: list[str]) -> str:
    if not known:
        return f"'{name}' is not a human node: the workflow has none (only '*' is accepted)"
    message = f"'{name}' is not a human node of the workflow (human nodes: {', '.join(known)})"
    guess = suggest(name, known)
    return f"{message}; did you mean '{guess}'?" if guess else message


def _replies(
    doc: SourceDocument, name: str, value: Any, issues: list[ConfigIssue]
) -> tuple[str, ...]:
    """A list of scalars as texts (null is an empty reply); a lone text is a list of one."""
    if isinstance(value, str):
        return (clean_text(value),)
    if not isinstance(value, list):
        message = f"the replies for '{name}' must be a list of texts, got {describe(value)}"
        issues.append(doc.issue((name,), message))
        return ()
    texts: list[str] = []
    for index, item in enumerate(value):
        if isinstance(item, list | dict):
            message = f"each reply must be text, got {describe(item)}"
            issues.append(doc.issue((name, index), message))
        else:
            texts.append(clean_text(scalar_text(item)))
    return tuple(texts)
