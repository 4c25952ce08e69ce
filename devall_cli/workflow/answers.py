"""The answers file of `devall run --answers FILE`: the replies human nodes get, in order, and
the decisions on tool calls that the tool policy leaves to a person.

YAML or JSON: `{<node id or path>: [reply for visit 1, reply for visit 2, ...], "*": [...],
"tool_approvals": {<tool glob or server:GLOB>: yes | no | always | [yes, no, ...]}}`.
Read before anything starts, with the limits and checks of a workflow file; every problem is
reported at once, located (exit 3): a key that names no human node of the workflow, a reply
that is not text, a list that is not a list, an approval that is not yes, no or always.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from devall_cli import limits
from devall_cli.config.schema import describe, scalar_text
from devall_cli.config.yaml_source import SourceDocument, key_text, parse_source
from devall_cli.errors import ConfigError, ConfigIssue
from devall_cli.nodes.human_input import ANY_NODE, APPROVAL_WORDS, Answers, ToolApproval
from devall_cli.redaction import Redactor
from devall_cli.text import clean_text, suggest
from devall_cli.tools.policy import RuleError, parse_rule
from devall_cli.workflow.loader import mask_issue

WHAT = "answers file"
APPROVALS = "tool_approvals"  # the key of the decisions on tool calls


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
    approvals: tuple[ToolApproval, ...] = ()
    for key, value in doc.data.items():
        name = key_text(key)
        # A mapping is never a node's replies: a human node named `tool_approvals` keeps its list.
        if name == APPROVALS and (isinstance(value, dict) or name not in known):
            approvals = _approvals(doc, value, issues)
            continue
        if name != ANY_NODE and name not in known:
            issues.append(doc.issue((name,), _unknown(name, known), at_key=True))
            continue
        replies[name] = _replies(doc, name, value, issues)
    if issues:
        raise ConfigError.from_issues(issues)
    return Answers(file=display, replies=replies, approvals=approvals)


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


def _approvals(
    doc: SourceDocument, value: Any, issues: list[ConfigIssue]
) -> tuple[ToolApproval, ...]:
    """`tool_approvals`: tool globs (or `server:GLOB`) to yes, no, always or a list of them."""
    if not isinstance(value, dict):
        message = (
            f"{APPROVALS} must be a mapping of tool names (globs, or server:GLOB) to yes, no "
            f"or always, got {describe(value)}"
        )
        issues.append(doc.issue((APPROVALS,), message))
        return ()
    entries: list[ToolApproval] = []
    for raw_key, answers in value.items():
        key = key_text(raw_key)
        path: tuple[str | int, ...] = (APPROVALS, key)
        problem = _bad_key(key)
        if problem:
            issues.append(doc.issue(path, problem, at_key=True))
            continue
        words = _words(doc, path, answers, issues)
        if words is not None:
            line = doc.position(path, at_key=True)[0]
            where = f"{doc.file}:{line}" if line else doc.file
            entries.append(ToolApproval(key, words, not isinstance(answers, list), where))
    return tuple(entries)


def _bad_key(key: str) -> str:
    """Why a `tool_approvals` key cannot be used ("" when it can)."""
    try:
        rule = parse_rule(key)
    except RuleError as exc:
        return f"{exc} (a key of {APPROVALS} is a tool glob or server:GLOB)"
    if rule.hints:
        return (
            f"'{key}' is an annotation hint: a key of {APPROVALS} names tools (a glob on the "
            "tool name, or server:GLOB)"
        )
    return ""


def _words(
    doc: SourceDocument, path: tuple[str | int, ...], value: Any, issues: list[ConfigIssue]
) -> tuple[str, ...] | None:
    """yes / no / always (booleans count as yes / no), alone or in a list; None if any is bad."""
    items = value if isinstance(value, list) else [value]
    words: list[str] = []
    for index, item in enumerate(items):
        word = _word(item)
        if word is None:
            where = (*path, index) if isinstance(value, list) else path
            message = f"an approval must be yes, no or always, got {describe(item)}"
            issues.append(doc.issue(where, message))
        else:
            words.append(word)
    return tuple(words) if len(words) == len(items) else None


def _word(item: Any) -> str | None:
    if isinstance(item, bool):
        return "yes" if item else "no"
    if isinstance(item, str) and item.strip().lower() in APPROVAL_WORDS:
        return item.strip().lower()
    return None
