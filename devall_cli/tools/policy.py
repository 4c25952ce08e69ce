"""The tool policy: which tools a node's model is offered, and which calls need approval.

A policy has `allow` and `deny` rules and an `approve` mode. Policies come in layers, most
specific first: the command line (`--allow-tool`, `--deny-tool`, `--approve`), the agent node's
`tool_policy`, the graph's `tool_policy`. The first layer with a rule that matches a tool decides
(within a layer a deny beats an allow): a denied tool is not offered; an allowed tool runs. A tool
no rule matches is governed by the first `approve` mode set, most specific first (default
`always`, which keeps ChatDev's behaviour: everything runs, nobody is asked).

A rule matches on the final tool name (a glob), the server id (`server:GLOB`) or a tool
annotation hint (`destructiveHint`, `readOnlyHint=false`). Hints absent from a tool take the MCP
specification's defaults: readOnlyHint false, destructiveHint true, idempotentHint false,
openWorldHint true (a tool that says nothing may be destructive). A read-only tool changes
nothing: for it destructiveHint is false and idempotentHint true, whatever it says.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from devall_cli.text import suggest

Decision = Literal["allow", "deny", "ask", "refuse"]
ApproveMode = Literal["never", "ask", "always"]
APPROVE_MODES: tuple[str, ...] = ("never", "ask", "always")
Layer = Literal["cli", "node", "graph", "default"]

# The MCP annotation hints and their values when a tool does not set them (the spec's defaults).
HINT_DEFAULTS: Mapping[str, bool] = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": True,
}


@dataclass(frozen=True)
class ToolRule:
    """One allow or deny rule; every field set must match (a rule sets at least one).

    `text` is the rule as written (`write_*`, `server:fs`, `destructiveHint`), shown in traces,
    tables and refusals. `where` is its location (`graph.tool_policy.deny[0]`, `--deny-tool`).
    """

    text: str
    tool: str | None = None  # a glob on the final tool name
    server: str | None = None  # a glob on the server (source) id
    hints: Mapping[str, bool] = field(default_factory=dict)  # annotation hint -> value
    where: str = ""
    # Where a workflow file declares it, as a key path (for located warnings); () elsewhere.
    at: tuple[str | int, ...] = field(default=(), compare=False, repr=False)

    def matches(self, tool: str, server_id: str, annotations: Mapping[str, Any] | None) -> bool:
        """Whether this rule matches the tool `tool` of the server `server_id`."""
        if self.tool is not None and not fnmatch.fnmatchcase(tool, self.tool):
            return False
        if self.server is not None and not fnmatch.fnmatchcase(server_id, self.server):
            return False
        return all(hint_value(annotations, name) is want for name, want in self.hints.items())


@dataclass(frozen=True)
class ToolPolicy:
    """One layer: its rules and its approval mode (None: the next layer's, or `always`)."""

    allow: tuple[ToolRule, ...] = ()
    deny: tuple[ToolRule, ...] = ()
    approve: ApproveMode | None = None

    @property
    def empty(self) -> bool:
        """Whether the layer says nothing at all."""
        return not self.allow and not self.deny and self.approve is None


NO_POLICY = ToolPolicy()


@dataclass(frozen=True)
class Verdict:
    """What the policy decides for one tool, and why."""

    decision: Decision  # allow: runs; deny: not offered; ask: a person decides; refuse: refused
    layer: Layer  # which layer decided (default: none said anything)
    rule: str | None = None  # the matching rule's text (None: decided by an approve mode)

    @property
    def offered(self) -> bool:
        """Whether the model is offered the tool at all."""
        return self.decision != "deny"

    def reason(self) -> str:
        """Why, in words: `denied by rule 'write_*' (node)`, `approve: never (cli)`."""
        where = "" if self.layer == "default" else f" ({self.layer})"
        if self.rule is not None:
            verb = "denied" if self.decision == "deny" else "allowed"
            return f"{verb} by rule '{self.rule}'{where}"
        mode = {"allow": "always", "ask": "ask", "refuse": "never"}.get(self.decision, "always")
        return f"approve: {mode}{where}"


ALLOWED_BY_DEFAULT = Verdict("allow", "default")


# Hints the MCP specification gives a meaning only when readOnlyHint is false: a read-only tool
# changes nothing, so it destroys nothing and is idempotent, whatever it says.
_READ_ONLY_VALUES: Mapping[str, bool] = {"destructiveHint": False, "idempotentHint": True}


def hint_value(annotations: Mapping[str, Any] | None, name: str) -> bool:
    """The tool's value of annotation hint `name`, or the spec's default when unset.

    For a read-only tool, destructiveHint is false and idempotentHint true.
    """
    given = annotations or {}
    if name in _READ_ONLY_VALUES and given.get("readOnlyHint") is True:
        return _READ_ONLY_VALUES[name]
    value = given.get(name)
    return value if isinstance(value, bool) else HINT_DEFAULTS.get(name, False)


def decide(
    tool: str,
    server_id: str,
    annotations: Mapping[str, Any] | None,
    layers: Sequence[tuple[Layer, ToolPolicy]],
) -> Verdict:
    """The verdict for one tool under `layers` (most specific first)."""
    for layer, policy in layers:
        for rule in policy.deny:
            if rule.matches(tool, server_id, annotations):
                return Verdict("deny", layer, rule.text)
        for rule in policy.allow:
            if rule.matches(tool, server_id, annotations):
                return Verdict("allow", layer, rule.text)
    for layer, policy in layers:
        if policy.approve is not None:
            decision: Decision = {"always": "allow", "ask": "ask", "never": "refuse"}[
                policy.approve
            ]  # type: ignore[assignment]
            return Verdict(decision, layer)
    return ALLOWED_BY_DEFAULT


_HINT_RULE = re.compile(r"^(?P<name>[A-Za-z]+Hint)(?:=(?P<value>true|false))?$")


class RuleError(ValueError):
    """A rule that cannot be read (the message says why and how to write it)."""


def parse_rule(text: str, where: str = "") -> ToolRule:
    """A rule from its text form: `GLOB`, `tool:GLOB`, `server:GLOB`, `HINT` or `HINT=false`.

    Raises RuleError for an empty rule, an unknown hint or a glob with an unclosed `[`.
    """
    text = text.strip()
    if not text:
        raise RuleError("a tool rule is empty")
    hint = _HINT_RULE.match(text)
    if hint is not None:
        name = hint.group("name")
        if name not in HINT_DEFAULTS:
            raise RuleError(_unknown_hint(name))
        return ToolRule(text, hints={name: hint.group("value") != "false"}, where=where)
    if text.split("=", 1)[0].lower() in _HINTS_LOWER:  # `destructivehint`: a hint, misspelt
        raise RuleError(_unknown_hint(text.split("=", 1)[0]))
    kind, sep, glob = text.partition(":")
    if sep and kind in ("tool", "server"):
        check_glob(glob)
        if kind == "server":
            return ToolRule(text, server=glob, where=where)
        return ToolRule(text, tool=glob, where=where)
    check_glob(text)
    return ToolRule(text, tool=text, where=where)


_HINTS_LOWER = {name.lower() for name in HINT_DEFAULTS}


def _unknown_hint(name: str) -> str:
    message = f"unknown annotation hint '{name}' (known: {', '.join(HINT_DEFAULTS)})"
    guess = suggest(name, list(HINT_DEFAULTS))
    return f"{message}; did you mean '{guess}'?" if guess else message


def check_glob(glob: str) -> None:
    """Raise RuleError for an empty glob or one with an unclosed `[` set."""
    if not glob:
        raise RuleError("a tool rule's glob is empty")
    depth = 0
    for char in glob:
        if char == "[":
            depth = 1
        elif char == "]":
            depth = 0
    if depth:
        raise RuleError(f"the glob '{glob}' has an unclosed '['")


# --- approval: who decides a call whose verdict is `ask` --------------------------------------

ApprovedBy = Literal["terminal", "answers", "no_terminal", "remembered"]


@dataclass(frozen=True)
class ApprovalRequest:
    """A call the policy leaves to a person (verdict `ask`); arguments are already masked."""

    node_id: str
    call_id: str
    tool: str  # the final name the node offered
    original_name: str
    server_id: str
    server: str  # the display target (URL or command line), secrets masked
    arguments: Mapping[str, Any]
    verdict: Verdict


@dataclass(frozen=True)
class ApprovalAnswer:
    """A person's (or the answers file's) decision on one call."""

    approved: bool
    by: ApprovedBy
    remember: bool = False  # "always": approve this tool of this node for the rest of the run
    note: str = ""  # why, when nobody could be asked ("no terminal and no answer in --answers")


class Approver:
    """Decides calls whose verdict is `ask`. The base class asks nobody: every call is refused."""

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        """The decision on `request` (never raises for a missing person: refuses instead)."""
        return ApprovalAnswer(
            False, "no_terminal", note="no terminal to ask and no answer in --answers"
        )


REFUSED_BY_POLICY = "refused_by_policy"  # the error class of a refused call's result
