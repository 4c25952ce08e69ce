"""The `graph` block: nodes, start/end, edges with conditions, and the shape checks (SPEC.md §5)."""

from __future__ import annotations

import re
from itertools import islice
from typing import Any

from devall_cli.config.model import EdgeConfig, GraphConfig, KeywordCondition, NodeConfig
from devall_cli.config.nodes import parse_node
from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import (
    Checker,
    KeySpec,
    as_bool,
    check_keys,
    check_regex,
    describe,
    get_mapping,
    opt_bool,
    opt_str,
    opt_str_list,
    suggest,
)
from devall_cli.config.yaml_source import KeyPath, format_path

_GRAPH_KEYS = KeySpec(
    known=frozenset({"id", "description", "start", "end", "nodes", "edges", "vars"}),
    ignored=frozenset(
        {"log_level", "organization", "initial_instruction", "team_mode", "triggers"}
    ),
    unsupported={
        "memory": "graph memory",
        "is_majority_voting": "majority voting",
        "handoffs": "handing off to another workflow",
    },
)
_EDGE_KEYS = KeySpec(
    known=frozenset({"from", "to", "condition", "carry_data", "trigger"}),
    ignored=frozenset({"keep_message", "clear_context", "clear_kept_context"}),
    unsupported={
        "dynamic": "dynamic edges (map/tree fan-out)",
        "process": "edge payload processors",
    },
)
_CONDITION_KEYS = KeySpec(known=frozenset({"type", "config"}))
_KEYWORD_KEYS = KeySpec(known=frozenset({"any", "none", "regex", "case_sensitive"}))
# Messages about generated graphs of thousands of nodes stay readable and fast to build.
_LISTED_IDS = 10  # node ids named after "which is not a node id"
_SHOWN_CYCLE = 12  # nodes of a cycle written out in full
_GUESSES = 100  # "did you mean" lookups per file: each compares the name with every node id


def parse_graph(ck: Checker, raw: Any, path: KeyPath = ("graph",)) -> GraphConfig | None:
    """The whole graph; every problem is recorded, None when the graph is unusable."""
    if raw is None:
        ck.error(path, "graph is required: a mapping with start, nodes and edges")
        return None
    graph = get_mapping(ck, raw, path, "graph")
    if graph is None:
        return None
    check_keys(ck, graph, path, _GRAPH_KEYS)
    if "vars" in graph:
        ck.error((*path, "vars"), "vars belong at the top level of the file, not inside graph")
    graph_id = opt_str(ck, graph, "id", path)
    description = opt_str(ck, graph, "description", path)
    nodes, ids = _nodes(ck, graph, path)
    start = _node_list(ck, graph, "start", path, ids, required=True)
    end = _node_list(ck, graph, "end", path, ids, required=False)
    edges = _edges(ck, graph, path, ids)
    _check_cycles(ck, ids, edges)
    if nodes is None:
        return None
    return GraphConfig(
        nodes=nodes,
        start=start,
        end=end,
        edges=tuple(edge for edge, _ in edges),
        id=graph_id,
        description=description,
    )


def _nodes(
    ck: Checker, graph: dict[str, Any], path: KeyPath
) -> tuple[tuple[NodeConfig, ...] | None, dict[str, int]]:
    """Parsed nodes, and every declared node id (also of nodes that have other errors).

    The ids map to their node's index: an ordered set that answers `in` at once.
    """
    raw = graph.get("nodes")
    here = (*path, "nodes")
    if raw is UNRESOLVED:
        return None, {}
    if raw is None or raw == []:
        ck.error(here, "nodes is required: the graph needs at least one node")
        return None, {}
    if not isinstance(raw, list):
        ck.error(here, f"nodes must be a list of nodes, got {describe(raw)}")
        return None, {}
    first_seen: dict[str, int] = {}
    for index, item in enumerate(raw):
        node_id = item.get("id") if isinstance(item, dict) else None
        if isinstance(node_id, str) and node_id.strip():
            if node_id in first_seen:
                ck.error(
                    (*here, index, "id"),
                    f"duplicate node id '{node_id}' (first used by "
                    f"{format_path((*here, first_seen[node_id]))})",
                )
            else:
                first_seen[node_id] = index
    parsed = [parse_node(ck, item, (*here, index)) for index, item in enumerate(raw)]
    if any(node is None for node in parsed):
        return None, first_seen
    return tuple(node for node in parsed if node is not None), first_seen


def _node_list(
    ck: Checker,
    graph: dict[str, Any],
    key: str,
    path: KeyPath,
    ids: dict[str, int],
    *,
    required: bool,
) -> tuple[str, ...]:
    """`start` / `end`: one node id or a list of them, each naming a node."""
    raw = graph.get(key)
    here = (*path, key)
    if raw is UNRESOLVED:
        return ()
    if raw is None or raw == []:
        if required:
            ck.error(
                here, f"{key} is required: the id of the node (or list of ids) that gets the task"
            )
        return ()
    if isinstance(raw, str):
        return (raw,) if _known_node(ck, raw, here, ids, key) else ()
    if not isinstance(raw, list):
        ck.error(here, f"{key} must be a node id or a list of node ids, got {describe(raw)}")
        return ()
    result: dict[str, None] = {}  # ordered, without repeats
    for index, name in enumerate(raw):
        if name is UNRESOLVED:
            continue
        if not isinstance(name, str):
            ck.error((*here, index), f"every item of {key} must be a node id, got {describe(name)}")
        elif _known_node(ck, name, (*here, index), ids, key):
            result[name] = None
    return tuple(result)


def _known_node(ck: Checker, name: str, path: KeyPath, ids: dict[str, int], what: str) -> bool:
    if not ids or name in ids:
        return True  # without any valid node the missing nodes were reported already
    listed = ", ".join(islice(ids, _LISTED_IDS))
    if len(ids) > _LISTED_IDS:
        listed += f", ... ({len(ids)} in all)"
    message = f"{what} names '{name}', which is not a node id (nodes: {listed})"
    guess = suggest(name, list(ids)) if ck.tally("node id guesses") <= _GUESSES else None
    ck.error(path, f"{message}; did you mean '{guess}'?" if guess else message)
    return False


# --- edges ---------------------------------------------------------------------------------


def _edges(
    ck: Checker, graph: dict[str, Any], path: KeyPath, ids: dict[str, int]
) -> list[tuple[EdgeConfig, KeyPath]]:
    raw = graph.get("edges")
    here = (*path, "edges")
    if raw is None or raw is UNRESOLVED:
        return []
    if not isinstance(raw, list):
        ck.error(here, f"edges must be a list of edges, got {describe(raw)}")
        return []
    edges: list[tuple[EdgeConfig, KeyPath]] = []
    seen: set[tuple[str, str]] = set()
    for index, item in enumerate(raw):
        edge = parse_edge(ck, item, (*here, index), ids)
        if edge is None:
            continue
        if (edge.source, edge.target) in seen:
            ck.warning((*here, index), f"duplicate edge {edge.source} → {edge.target}")
        seen.add((edge.source, edge.target))
        edges.append((edge, (*here, index)))
    return edges


def parse_edge(ck: Checker, raw: Any, path: KeyPath, ids: dict[str, int]) -> EdgeConfig | None:
    """One edge: `from`, `to`, `condition`, `carry_data`, `trigger`."""
    edge = get_mapping(ck, raw, path, "an edge")
    if edge is None:
        return None
    check_keys(ck, edge, path, _EDGE_KEYS)
    source = opt_str(ck, edge, "from", path, required=True)
    target = opt_str(ck, edge, "to", path, required=True)
    if source is not None and not _known_node(ck, source, (*path, "from"), ids, "from"):
        source = None
    if target is not None and not _known_node(ck, target, (*path, "to"), ids, "to"):
        target = None
    condition = parse_condition(ck, edge.get("condition"), (*path, "condition"))
    carry_data = opt_bool(ck, edge, "carry_data", path, True)
    trigger = opt_bool(ck, edge, "trigger", path, True)
    if source is None or target is None or condition is None:
        return None
    return EdgeConfig(
        source=source,
        target=target,
        condition=condition,
        carry_data=carry_data,
        trigger=trigger,
        path=format_path(path),
    )


def parse_condition(ck: Checker, raw: Any, path: KeyPath) -> bool | KeywordCondition | None:
    """`true`/`false`, or `{type: keyword, config: {any, none, regex, case_sensitive}}`."""
    if raw is None:
        return True
    if raw is UNRESOLVED:
        return None
    if isinstance(raw, (bool, str)):
        value = as_bool(raw)
        if value is None:
            ck.error(
                path,
                f"condition must be true, false or {{type: keyword, config: ...}}, "
                f"got {describe(raw)} (function conditions are not supported yet)",
            )
        return value
    condition = get_mapping(ck, raw, path, "condition")
    if condition is None:
        return None
    check_keys(ck, condition, path, _CONDITION_KEYS)
    kind = opt_str(ck, condition, "type", path, required=True)
    if kind is None:
        return None
    if kind != "keyword":
        ck.error(
            (*path, "type"), f"condition type '{kind}' is not supported yet (supported: keyword)"
        )
        return None
    config = get_mapping(ck, condition.get("config") or {}, (*path, "config"), "config")
    return _keyword(ck, config, (*path, "config")) if config is not None else None


def _keyword(ck: Checker, config: dict[str, Any], path: KeyPath) -> KeywordCondition | None:
    check_keys(ck, config, path, _KEYWORD_KEYS)
    errors = ck.error_count
    words = {key: _words(ck, config, key, path) for key in ("any", "none", "regex")}
    case_sensitive = opt_bool(ck, config, "case_sensitive", path, True)
    flags = 0 if case_sensitive else re.IGNORECASE
    raw_regex = config.get("regex")
    for index, pattern in enumerate(words["regex"]):
        where = (*path, "regex", index) if isinstance(raw_regex, list) else (*path, "regex")
        check_regex(ck, pattern, where, "regex", flags)
    if ck.error_count > errors:
        return None
    return KeywordCondition(
        any=words["any"], none=words["none"], regex=words["regex"], case_sensitive=case_sensitive
    )


def _words(ck: Checker, config: dict[str, Any], key: str, path: KeyPath) -> tuple[str, ...]:
    value = config.get(key)
    if isinstance(value, str):
        return (value,)
    return opt_str_list(ck, config, key, path)


# --- shape ---------------------------------------------------------------------------------


def _check_cycles(
    ck: Checker, ids: dict[str, int], edges: list[tuple[EdgeConfig, KeyPath]]
) -> None:
    """Report each cycle once, at the edge that closes it."""
    successors: dict[str, list[str]] = {node_id: [] for node_id in ids}
    edge_paths: dict[tuple[str, str], KeyPath] = {}
    for edge, path in edges:
        successors.setdefault(edge.source, []).append(edge.target)
        edge_paths.setdefault((edge.source, edge.target), path)
    for cycle in find_cycles(list(successors), successors):
        closing = edge_paths.get((cycle[-2], cycle[-1]), ("graph", "edges"))
        if len(cycle) > _SHOWN_CYCLE:
            shown = [*cycle[: _SHOWN_CYCLE // 2], "...", *cycle[-_SHOWN_CYCLE // 2 :]]
            text = f"{' → '.join(shown)} ({len(cycle) - 1} nodes)"
        else:
            text = " → ".join(cycle)
        ck.error(closing, f"cycles are not supported yet: {text}")


def find_cycles(order: list[str], successors: dict[str, list[str]]) -> list[list[str]]:
    """Cycles found by a depth-first search in declaration order, none sharing a node."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = finished
    cycles: list[list[str]] = []
    in_cycle: set[str] = set()
    for root in order:
        if root in state:
            continue
        state[root] = 1
        trail = [root]
        stack = [iter(successors.get(root, []))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[trail.pop()] = 2
                stack.pop()
                continue
            if nxt not in state:
                state[nxt] = 1
                trail.append(nxt)
                stack.append(iter(successors.get(nxt, [])))
            elif state[nxt] == 1:
                cycle = [*trail[trail.index(nxt) :], nxt]
                if not in_cycle.intersection(cycle):
                    cycles.append(cycle)
                    in_cycle.update(cycle)
    return cycles
