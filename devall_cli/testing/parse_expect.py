"""The entries of a case's `expect` list: one kind each, its settings checked where written.

Every problem is recorded on the checker with its position (nothing raises), so one pass reports
every mistake of a test file. Node ids are checked against the case's workflow when it loaded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import (
    Checker,
    KeySpec,
    check_keys,
    check_regex,
    describe,
    get_mapping,
    opt_bool,
    opt_int,
    opt_number,
    opt_regex,
    opt_str,
    scalar_text,
)
from devall_cli.config.yaml_source import KeyPath, format_path
from devall_cli.testing.model import (
    BudgetConfig,
    EdgeConfig,
    ExpectConfig,
    JsonPathConfig,
    JsonStep,
    JudgeConfig,
    NodeConfig,
    TextConfig,
    ToolConfig,
)
from devall_cli.text import suggest

NodeIds = Sequence[str] | None  # the workflow's node paths (None: it did not load)
Parser = Callable[[Checker, Any, KeyPath, NodeIds], Any]

TEXT_KEYS = KeySpec(
    known=frozenset({"equals", "contains", "not_contains", "regex", "json_schema", "json_path"})
)
JSON_PATH_KEYS = KeySpec(known=frozenset({"path", "equals", "contains", "regex", "exists"}))
NODE_KEYS = KeySpec(known=frozenset({"id", "visited", "visits", "status", "output", "visit"}))
TOOL_KEYS = KeySpec(
    known=frozenset(
        {"name", "called", "args", "args_regex", "times", "min_times", "max_times", "node"}
    )
)
EDGE_KEYS = KeySpec(known=frozenset({"from", "to", "fired", "times"}))
BUDGET_KEYS = KeySpec(known=frozenset({"model_calls", "tool_calls", "tokens", "seconds", "cost"}))
JUDGE_KEYS = KeySpec(known=frozenset({"model", "rubric", "threshold", "node"}))
NODE_STATUSES = ("ok", "failed", "skipped", "pending")
# An agent's keys a grader has no use for: it answers one prompt, with no tools or memory.
AGENT_ONLY_KEYS = ("tooling", "thinking", "memories", "skills", "role", "input_mode")
DEFAULT_THRESHOLD = 0.7
_JSON_STEP = re.compile(r"\.([^.\[\]\s]+)|\[(\d+)\]|\[([\"'])(.*?)\3\]")


def parse_expectations(
    ck: Checker, value: Any, path: KeyPath, nodes: NodeIds
) -> tuple[ExpectConfig, ...]:
    """The `expect` list of a case (none when it is missing)."""
    if value is None or value is UNRESOLVED:
        return ()
    if not isinstance(value, list):
        ck.error(path, f"expect must be a list of expectations, got {describe(value)}")
        return ()
    found = [_expectation(ck, item, (*path, n), n, nodes) for n, item in enumerate(value)]
    return tuple(item for item in found if item is not None)


def _expectation(
    ck: Checker, entry: Any, path: KeyPath, index: int, nodes: NodeIds
) -> ExpectConfig | None:
    kinds = ", ".join(PARSERS)
    if not isinstance(entry, dict) or len(entry) != 1:
        shown = describe(entry) if not isinstance(entry, dict) else f"{len(entry)} keys"
        ck.error(path, f"each expectation is a mapping with one key ({kinds}), got {shown}")
        return None
    ((kind, settings),) = entry.items()
    parser = PARSERS.get(kind)
    if parser is None:
        hint = suggest(kind, list(PARSERS))
        also = f"; did you mean '{hint}'?" if hint else f" (one of {kinds})"
        ck.error((*path, kind), f"unknown expectation '{kind}'{also}", at_key=True)
        return None
    errors = ck.error_count
    parsed = parser(ck, settings, (*path, kind), nodes)
    if parsed is None or ck.error_count > errors:
        return None
    line, col = ck.doc.position(path)
    where = f"{ck.doc.file}:{line}:{col}" if line else ck.doc.file
    return ExpectConfig(kind, index, parsed, plain(entry), where)


# --- text ---------------------------------------------------------------------------------


def parse_text(ck: Checker, value: Any, path: KeyPath, nodes: NodeIds = None) -> TextConfig | None:
    """`{equals | contains | not_contains | regex | json_schema | json_path}`; all set must hold."""
    what = format_path(path[-1:]) or "output"
    mapping = get_mapping(ck, value, path, str(what))
    if mapping is None:
        return None
    check_keys(ck, mapping, path, TEXT_KEYS)
    if not any(key in mapping for key in TEXT_KEYS.known):
        ck.error(path, f"{what} needs one of {', '.join(sorted(TEXT_KEYS.known))}")
        return None
    return TextConfig(
        equals=_scalar(ck, mapping, "equals", path),
        contains=_texts(ck, mapping, "contains", path),
        not_contains=_texts(ck, mapping, "not_contains", path),
        regex=opt_regex(ck, mapping, "regex", path),
        json_schema=_schema(ck, mapping.get("json_schema"), (*path, "json_schema")),
        json_path=_json_path(ck, mapping.get("json_path"), (*path, "json_path")),
    )


def _scalar(ck: Checker, mapping: Mapping[str, Any], key: str, path: KeyPath) -> str | None:
    value = mapping.get(key)
    if value is None or value is UNRESOLVED:
        return None
    if isinstance(value, (dict, list)):
        ck.error((*path, key), f"{key} must be text, got {describe(value)}")
        return None
    return scalar_text(value)


def _texts(ck: Checker, mapping: Mapping[str, Any], key: str, path: KeyPath) -> tuple[str, ...]:
    value = mapping.get(key)
    if value is None or value is UNRESOLVED:
        return ()
    items = value if isinstance(value, list) else [value]
    found: list[str] = []
    for index, item in enumerate(items):
        here = (*path, key, index) if isinstance(value, list) else (*path, key)
        if isinstance(item, (dict, list)) or item is None:
            ck.error(here, f"{key} takes text or a list of texts, got {describe(item)}")
        elif item is not UNRESOLVED:
            found.append(scalar_text(item))
    return tuple(found)


def _schema(ck: Checker, value: Any, path: KeyPath) -> Mapping[str, Any] | None:
    if value is None or value is UNRESOLVED:
        return None
    if not isinstance(value, dict):
        ck.error(path, f"json_schema must be a JSON schema (a mapping), got {describe(value)}")
        return None
    from jsonschema import exceptions, validators  # only for files that use a schema

    schema = plain(value)
    try:
        validators.validator_for(schema).check_schema(schema)
    except exceptions.SchemaError as exc:
        where = "/".join(str(part) for part in exc.path)
        ck.error(path, f"json_schema is not a valid JSON schema: {exc.message}" + (
            f" (at {where})" if where else ""
        ))
        return None
    return schema  # type: ignore[no-any-return]


def _json_path(ck: Checker, value: Any, path: KeyPath) -> JsonPathConfig | None:
    mapping = get_mapping(ck, value, path, "json_path") if value is not None else None
    if mapping is None:
        return None
    check_keys(ck, mapping, path, JSON_PATH_KEYS)
    text = opt_str(ck, mapping, "path", path, required=True)
    steps = parse_json_path(text) if text is not None else None
    if text is not None and steps is None:
        ck.error(
            (*path, "path"),
            f"path {text!r} is not a JSON path like $.answer.items[0].name",
        )
    checks = [key for key in ("equals", "contains", "regex", "exists") if key in mapping]
    if not checks:
        ck.error(path, "json_path needs one of equals, contains, regex, exists beside path")
    if steps is None or not checks:
        return None
    return JsonPathConfig(
        path=text or "",
        steps=steps,
        equals=plain(mapping.get("equals")),
        has_equals="equals" in mapping,
        contains=_scalar(ck, mapping, "contains", path),
        regex=opt_regex(ck, mapping, "regex", path),
        exists=opt_bool(ck, mapping, "exists", path, True) if "exists" in mapping else None,
    )


def parse_json_path(text: str) -> tuple[JsonStep, ...] | None:
    """`$.a.b[0]`, `a.b[0]` or `$["a key"]` as steps; None when it is not one."""
    rest = text.strip()
    if rest.startswith("$"):
        rest = rest[1:]
    elif rest and not rest.startswith((".", "[")):
        rest = "." + rest
    steps: list[JsonStep] = []
    position = 0
    while position < len(rest):
        match = _JSON_STEP.match(rest, position)
        if match is None:
            return None
        key, number, _quote, quoted = match.groups()
        steps.append(int(number) if number is not None else key if key is not None else quoted)
        position = match.end()
    return tuple(steps)


# --- run shape ----------------------------------------------------------------------------


def parse_node(ck: Checker, value: Any, path: KeyPath, nodes: NodeIds) -> NodeConfig | None:
    """`node: {id, visited, visits, status, output, visit}`; with only `id`: it was visited."""
    mapping = get_mapping(ck, value, path, "node")
    if mapping is None:
        return None
    check_keys(ck, mapping, path, NODE_KEYS)
    node_id = _node_id(ck, mapping, "id", path, nodes, required=True)
    status = opt_str(ck, mapping, "status", path)
    if status is not None and status not in NODE_STATUSES:
        ck.error((*path, "status"), f"status must be one of {', '.join(NODE_STATUSES)}")
    output = parse_text(ck, mapping["output"], (*path, "output")) if "output" in mapping else None
    visited = opt_bool(ck, mapping, "visited", path, True) if "visited" in mapping else None
    if len(mapping) == 1:
        visited = True
    visits = _count(ck, mapping, "visits", path)
    if node_id is None:
        return None
    return NodeConfig(
        node_id, visited, visits, status, output, _count(ck, mapping, "visit", path, minimum=1)
    )


def parse_tool(ck: Checker, value: Any, path: KeyPath, nodes: NodeIds) -> ToolConfig | None:
    """`tool: {name, called, args, args_regex, times, min_times, max_times, node}`."""
    mapping = get_mapping(ck, value, path, "tool")
    if mapping is None:
        return None
    check_keys(ck, mapping, path, TOOL_KEYS)
    name = opt_str(ck, mapping, "name", path, required=True)
    called = opt_bool(ck, mapping, "called", path, True)
    args = mapping.get("args")
    if args is not None and not isinstance(args, dict):
        ck.error((*path, "args"), f"args must be a mapping of argument names, got {describe(args)}")
        args = None
    patterns = _patterns(ck, mapping.get("args_regex"), (*path, "args_regex"))
    counts = {key: _count(ck, mapping, key, path) for key in ("times", "min_times", "max_times")}
    if not called and any(counts[key] for key in counts):
        ck.error((*path, "called"), "called: false cannot go with times, min_times or max_times")
    node = _node_id(ck, mapping, "node", path, nodes)
    if name is None:
        return None
    return ToolConfig(
        name,
        called,
        plain(args) if args is not None else None,
        patterns,
        counts["times"],
        counts["min_times"],
        counts["max_times"],
        node,
    )


def _patterns(ck: Checker, value: Any, path: KeyPath) -> dict[str, str]:
    if value is None or value is UNRESOLVED:
        return {}
    if not isinstance(value, dict):
        ck.error(path, f"args_regex must map argument names to patterns, got {describe(value)}")
        return {}
    found: dict[str, str] = {}
    for name, pattern in value.items():
        if not isinstance(pattern, str):
            ck.error((*path, name), f"the pattern of {name} must be text, got {describe(pattern)}")
        elif check_regex(ck, pattern, (*path, name), f"the pattern of {name}"):
            found[str(name)] = str(pattern)
    return found


def parse_tool_order(
    ck: Checker, value: Any, path: KeyPath, nodes: NodeIds
) -> tuple[str, ...] | None:
    """`tool_order: [a, b]`: these tools were called in this order (others may come between)."""
    if not isinstance(value, list) or not value:
        ck.error(path, f"tool_order must be a list of tool names, got {describe(value)}")
        return None
    names: list[str] = []
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            message = f"every item of tool_order must be a tool name, got {describe(item)}"
            ck.error((*path, index), message)
        else:
            names.append(str(item))
    return tuple(names)


def parse_edge(ck: Checker, value: Any, path: KeyPath, nodes: NodeIds) -> EdgeConfig | None:
    """`edge: {from, to, fired, times}`."""
    mapping = get_mapping(ck, value, path, "edge")
    if mapping is None:
        return None
    check_keys(ck, mapping, path, EDGE_KEYS)
    source = _node_id(ck, mapping, "from", path, nodes, required=True)
    target = _node_id(ck, mapping, "to", path, nodes, required=True)
    fired = opt_bool(ck, mapping, "fired", path, True)
    times = _count(ck, mapping, "times", path)
    if not fired and times:
        ck.error((*path, "fired"), "fired: false cannot go with times")
    if source is None or target is None:
        return None
    return EdgeConfig(source, target, fired, times)


def parse_budget(ck: Checker, value: Any, path: KeyPath, nodes: NodeIds) -> BudgetConfig | None:
    """`budget: {model_calls, tool_calls, tokens, seconds, cost}`: the most the run may use."""
    mapping = get_mapping(ck, value, path, "budget")
    if mapping is None:
        return None
    check_keys(ck, mapping, path, BUDGET_KEYS)
    if not any(key in mapping for key in BUDGET_KEYS.known):
        ck.error(path, f"budget needs one of {', '.join(sorted(BUDGET_KEYS.known))}")
        return None
    seconds = opt_number(ck, mapping, "seconds", path, 0.0, positive=True)
    cost = opt_number(ck, mapping, "cost", path, 0.0, minimum=0)
    return BudgetConfig(
        model_calls=_count(ck, mapping, "model_calls", path),
        tool_calls=_count(ck, mapping, "tool_calls", path),
        tokens=_count(ck, mapping, "tokens", path),
        seconds=seconds if mapping.get("seconds") is not None else None,
        cost=cost if mapping.get("cost") is not None else None,
    )


def parse_judge(ck: Checker, value: Any, path: KeyPath, nodes: NodeIds) -> JudgeConfig | None:
    """`judge: {model, rubric, threshold, node}`; `model` is written as an agent's model is."""
    from devall_cli.nodes.agent import parse_agent

    mapping = get_mapping(ck, value, path, "judge")
    if mapping is None:
        return None
    check_keys(ck, mapping, path, JUDGE_KEYS)
    rubric = opt_str(ck, mapping, "rubric", path, required=True)
    threshold = opt_number(ck, mapping, "threshold", path, DEFAULT_THRESHOLD, minimum=0)
    if threshold > 1:
        ck.error((*path, "threshold"), f"threshold is a score from 0 to 1, got {threshold:g}")
    node = _node_id(ck, mapping, "node", path, nodes)
    here = (*path, "model")
    if "model" not in mapping:
        ck.error(here, "model is required: the grader (provider, name, base_url, api_key)")
        return None
    model = get_mapping(ck, mapping["model"], here, "model")
    if model is None:
        return None
    for key in AGENT_ONLY_KEYS:
        if key in model:
            message = f"a grader takes no '{key}' (it answers one prompt)"
            ck.error((*here, key), message, at_key=True)
    settings = parse_agent(ck, model, here)
    if settings is None or rubric is None:
        return None
    return JudgeConfig(settings, rubric, threshold, node)


def _count(
    ck: Checker, mapping: Mapping[str, Any], key: str, path: KeyPath, minimum: int = 0
) -> int | None:
    if mapping.get(key) is None:
        return None
    return opt_int(ck, mapping, key, path, minimum, minimum=minimum)


def _node_id(
    ck: Checker,
    mapping: Mapping[str, Any],
    key: str,
    path: KeyPath,
    nodes: NodeIds,
    *,
    required: bool = False,
) -> str | None:
    """A node path of the case's workflow (`outer/inner` inside subgraphs)."""
    node_id = opt_str(ck, mapping, key, path, required=required)
    if node_id is None or nodes is None or node_id in nodes:
        return node_id
    hint = suggest(node_id, list(nodes))
    also = f"; did you mean '{hint}'?" if hint else f" (its nodes: {', '.join(nodes)})"
    ck.error((*path, key), f"the workflow has no node '{node_id}'{also}")
    return None


def plain(value: Any) -> Any:
    """Plain JSON data: text from placeholders as `str`, mappings and lists copied."""
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, str):
        return str(value)
    return None if value is UNRESOLVED else value


PARSERS: dict[str, Parser] = {
    "output": parse_text,
    "node": parse_node,
    "tool": parse_tool,
    "tool_order": parse_tool_order,
    "edge": parse_edge,
    "budget": parse_budget,
    "judge": parse_judge,
    "error": parse_text,
}
