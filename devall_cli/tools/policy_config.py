"""The `tool_policy` block of a workflow (graph-wide, or an agent node's): parsed and checked.

    tool_policy:
      allow: [readOnlyHint, "server:docs", {tool: "read_*", server: fs}]
      deny: [destructiveHint]
      approve: ask            # never | ask | always

A rule is the text form `tools.policy.parse_rule` reads, or a mapping whose keys must all match:
`tool` (a glob on the final name), `server` (a glob on the server id) and annotation hints
(`readOnlyHint: false`). Every problem is a located error; a rule that can match nothing the
workflow declares (a server glob no server id matches, a tool glob none of a node's function
tools matches) is a located warning.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from devall_cli.config.json_shapes import Schema, array_of, keys_object
from devall_cli.config.model import GraphConfig, ToolingConfig, Workflow
from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import Checker, KeySpec, as_bool, check_keys, describe, get_mapping
from devall_cli.config.yaml_source import KeyPath, format_path
from devall_cli.text import suggest
from devall_cli.tools.plan import plan_sources
from devall_cli.tools.policy import (
    APPROVE_MODES,
    HINT_DEFAULTS,
    NO_POLICY,
    ApproveMode,
    RuleError,
    ToolPolicy,
    ToolRule,
    check_glob,
    parse_rule,
)

POLICY_KEY = "tool_policy"
POLICY_KEYS = KeySpec(known=frozenset({"allow", "deny", "approve"}))
RULE_KEYS = KeySpec(known=frozenset({"tool", "server", *HINT_DEFAULTS}))
_RULE_FORMS = "a tool name glob, server:GLOB, an annotation hint such as readOnlyHint"


def parse_tool_policy(ck: Checker, raw: Any, path: KeyPath) -> ToolPolicy:
    """The block at `path` (`graph.tool_policy`); NO_POLICY when absent or unusable."""
    if raw is None or raw is UNRESOLVED:
        return NO_POLICY
    block = get_mapping(ck, raw, path, POLICY_KEY)
    if block is None:
        return NO_POLICY
    with ck.strict_keys(True):  # a misspelt key would silently drop a rule: an error
        check_keys(ck, block, path, POLICY_KEYS)
    return ToolPolicy(
        allow=_rules(ck, block.get("allow"), (*path, "allow")),
        deny=_rules(ck, block.get("deny"), (*path, "deny")),
        approve=_approve(ck, block.get("approve"), (*path, "approve")),
    )


def _rules(ck: Checker, raw: Any, path: KeyPath) -> tuple[ToolRule, ...]:
    if raw is None or raw is UNRESOLVED:
        return ()
    if not isinstance(raw, list):
        ck.error(path, f"{path[-1]} must be a list of rules ({_RULE_FORMS}), got {describe(raw)}")
        return ()
    rules: list[ToolRule] = []
    for index, item in enumerate(raw):
        rule = _rule(ck, item, (*path, index))
        if rule is not None:
            rules.append(rule)
    return tuple(rules)


def _rule(ck: Checker, item: Any, here: KeyPath) -> ToolRule | None:
    if item is UNRESOLVED:
        return None
    if isinstance(item, str):
        try:
            rule = parse_rule(str(item), format_path(here))
        except RuleError as exc:
            ck.error(here, str(exc))
            return None
        return ToolRule(rule.text, rule.tool, rule.server, rule.hints, rule.where, at=here)
    if not isinstance(item, dict):
        ck.error(here, f"a rule is {_RULE_FORMS}, or a mapping of them; got {describe(item)}")
        return None
    return _mapping_rule(ck, item, here)


def _mapping_rule(ck: Checker, item: dict[str, Any], here: KeyPath) -> ToolRule | None:
    """`{tool: GLOB, server: GLOB, <hint>: true|false}`: every key given must match."""
    with ck.strict_keys(True):
        check_keys(ck, item, here, RULE_KEYS)
    globs: dict[str, str] = {}
    hints: dict[str, bool] = {}
    ok = all(key in RULE_KEYS.known for key in item)  # check_keys told about the others
    for key, value in item.items():
        if value is UNRESOLVED or key not in RULE_KEYS.known:
            continue
        if key in ("tool", "server"):
            ok = _glob(ck, key, value, (*here, key), globs) and ok
            continue
        flag = as_bool(value)
        if flag is None:
            ck.error((*here, key), f"{key} must be true or false, got {describe(value)}")
            ok = False
            continue
        hints[key] = flag
    if not ok:
        return None
    if not globs and not hints:
        ck.error(here, "a rule needs at least one of tool, server or an annotation hint")
        return None
    parts = [f"{key}: {value}" for key, value in globs.items()]
    parts += [f"{key}: {'true' if flag else 'false'}" for key, flag in hints.items()]
    return ToolRule(
        "{" + ", ".join(parts) + "}",
        tool=globs.get("tool"),
        server=globs.get("server"),
        hints=hints,
        where=format_path(here),
        at=here,
    )


def _glob(ck: Checker, key: str, value: Any, here: KeyPath, into: dict[str, str]) -> bool:
    if not isinstance(value, str):
        ck.error(here, f"{key} must be a glob (text), got {describe(value)}")
        return False
    try:
        check_glob(str(value).strip())
    except RuleError as exc:
        ck.error(here, str(exc))
        return False
    into[key] = str(value).strip()
    return True


def _approve(ck: Checker, raw: Any, path: KeyPath) -> ApproveMode | None:
    if raw is None or raw is UNRESOLVED:
        return None
    word = raw.strip().lower() if isinstance(raw, str) else None
    if word in APPROVE_MODES:
        mode: ApproveMode = word  # type: ignore[assignment]
        return mode
    message = f"approve must be one of {', '.join(APPROVE_MODES)}, got {describe(raw)}"
    guess = suggest(word, list(APPROVE_MODES)) if word else None
    ck.error(path, f"{message}; did you mean '{guess}'?" if guess else message)
    return None


def policy_shape() -> Schema:
    """The schema of a `tool_policy` block (`devall schema`)."""
    rule_object = keys_object(RULE_KEYS, strict=True)
    rule: Schema = {"anyOf": [{"type": "string"}, rule_object]}
    shapes = {
        "allow": array_of(rule),
        "deny": array_of(rule),
        "approve": {"enum": [*APPROVE_MODES, None]},
    }
    return keys_object(POLICY_KEYS, strict=True, shapes=shapes)


# --- rules that match nothing the workflow declares -------------------------------------------


def check_tool_rules(
    ck: Checker, policy: ToolPolicy, tooling: Sequence[ToolingConfig], where: str
) -> None:
    """Warn about a node's tool globs that none of its tools matches, when every tool of the
    node is known without starting a server (function tools only)."""
    if not tooling or not policy.allow + policy.deny:
        return
    known = {format_path(path): names for path, names in ck.static_tool_names.items()}
    if any(entry.path not in known for entry in tooling):  # a server's tools: known at run time
        return
    names = [entry.final_name(name) for entry in tooling for name in known[entry.path]]
    for rule in (*policy.allow, *policy.deny):
        if rule.tool is None or not rule.at or _any_match(rule.tool, names):
            continue
        message = f"the rule '{rule.text}' matches none of {where}'s tools ({', '.join(names)})"
        guess = suggest(rule.tool, names)
        ck.warning(rule.at, f"{message}; did you mean '{guess}'?" if guess else message)


def check_server_rules(ck: Checker, graph: GraphConfig) -> None:
    """Warn about `server:` globs of the graph's policy and its nodes' that match no server id
    (of the graph's servers, for the graph; of the node's, for a node)."""
    plan = plan_sources(Workflow(graph=graph, path=Path(graph.path)))
    every = [source.id for source in plan.sources]
    _warn_servers(ck, policy_of(graph), every, "the graph")
    for node in graph.nodes:
        policy = policy_of(node.config)
        ids = [source.id for source in plan.sources if node.id in source.nodes]
        _warn_servers(ck, policy, ids, f"node '{node.id}'")


def _warn_servers(ck: Checker, policy: ToolPolicy, ids: list[str], owner: str) -> None:
    for rule in (*policy.allow, *policy.deny):
        if rule.server is None or not rule.at or _any_match(rule.server, ids):
            continue
        servers = f"its servers: {', '.join(ids)}" if ids else "it has no servers"
        message = f"the rule '{rule.text}' matches no server of {owner} ({servers})"
        guess = suggest(rule.server, ids)
        ck.warning(rule.at, f"{message}; did you mean '{guess}'?" if guess else message)


def _any_match(glob: str, names: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, glob) for name in names)


def policy_of(holder: Any) -> ToolPolicy:
    """The `tool_policy` of a graph or of a node's settings (NO_POLICY when it has none)."""
    policy = getattr(holder, POLICY_KEY, None)
    return policy if isinstance(policy, ToolPolicy) else NO_POLICY
