"""The `graph` block: nodes, start/end, edges with conditions, and the shape checks (SPEC.md §5)."""

from __future__ import annotations

from itertools import islice
from typing import Any

from devall_cli.config.dynamic import DynamicConfig, check_agreement, parse_dynamic
from devall_cli.config.model import (
    ALWAYS,
    ConditionConfig,
    EdgeConfig,
    FunctionCondition,
    GraphConfig,
    NodeConfig,
    ProcessorConfig,
)
from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import (
    Checker,
    KeySpec,
    check_keys,
    describe,
    get_mapping,
    opt_bool,
    opt_str,
)
from devall_cli.config.tool_warning import parse_tool_warning
from devall_cli.config.yaml_source import KeyPath, format_path
from devall_cli.edges import CONDITION_TYPES, PROCESSOR_TYPES
from devall_cli.kinds import Registry
from devall_cli.memory.base import MemoryRefConfig
from devall_cli.memory.config import check_memory_refs, declared_names, parse_memory_list
from devall_cli.nodes import NODE_TYPES
from devall_cli.text import suggest
from devall_cli.tools.policy_config import check_server_rules, parse_tool_policy
from devall_cli.workflow.node_entry import parse_node

GRAPH_KEYS = KeySpec(
    known=frozenset(
        {
            "id",
            "description",
            "start",
            "end",
            "nodes",
            "edges",
            "vars",
            "is_majority_voting",
            "memory",
            "tool_policy",
            "tool_warning",
        }
    ),
    ignored=frozenset(
        {"log_level", "organization", "initial_instruction", "team_mode", "triggers"}
    ),
    unsupported={"handoffs": "handing off to another workflow"},
)
EDGE_KEYS = KeySpec(
    known=frozenset(
        {
            "from",
            "to",
            "condition",
            "carry_data",
            "trigger",
            "keep_message",
            "clear_context",
            "clear_kept_context",
            "process",
            "dynamic",
        }
    ),
)
TYPED_KEYS = KeySpec(known=frozenset({"type", "config"}))
# Messages about generated graphs of thousands of nodes stay readable and fast to build.
_LISTED_IDS = 10  # node ids named after "which is not a node id"
_SHOWN_CYCLE = 12  # nodes of a cycle written out in full
_GUESSES = 100  # "did you mean" lookups per file: each compares the name with every node id


def parse_graph(
    ck: Checker, raw: Any, path: KeyPath = ("graph",), *, start_required: bool = True
) -> GraphConfig | None:
    """The whole graph; every problem is recorded, None when the graph is unusable.

    Without `start_required` (an inline subgraph), a missing `start` means every node that no
    edge leads to. Unknown keys are warnings here, errors inside nodes (`parse_node`).
    """
    if ck.graphs is None:
        ck.graphs = READER  # a subgraph node parses its child graph with this very parser
    with ck.strict_keys(False):
        return _parse_graph(ck, raw, path, start_required=start_required)


class _AssemblerGraphs:
    """The assembler's graph parser and subgraph-file loader, as `config.scope.GraphReader`."""

    def parse_graph(
        self, ck: Checker, raw: Any, path: KeyPath, *, start_required: bool
    ) -> GraphConfig | None:
        return parse_graph(ck, raw, path, start_required=start_required)

    def load_file(self, ck: Checker, name: str, path: KeyPath) -> tuple[GraphConfig, str] | None:
        from devall_cli.workflow.includes import load_subgraph_file

        return load_subgraph_file(ck, name, path)


READER = _AssemblerGraphs()


def _parse_graph(
    ck: Checker, raw: Any, path: KeyPath, *, start_required: bool
) -> GraphConfig | None:
    if raw is None:
        ck.error(path, "graph is required: a mapping with start, nodes and edges")
        return None
    graph = get_mapping(ck, raw, path, "graph")
    if graph is None:
        return None
    errors_before = ck.error_count
    check_keys(ck, graph, path, GRAPH_KEYS)
    if graph.get("vars") not in (None, {}, UNRESOLVED):  # `vars: {}` is accepted, as ChatDev does
        ck.error((*path, "vars"), "vars belong at the top level of the file, not inside graph")
    graph_id = opt_str(ck, graph, "id", path)
    description = opt_str(ck, graph, "description", path)
    voting = opt_bool(ck, graph, "is_majority_voting", path, False)
    memory = parse_memory_list(ck, graph.get("memory"), (*path, "memory"))
    tool_policy = parse_tool_policy(ck, graph.get("tool_policy"), (*path, "tool_policy"))
    tool_warning = parse_tool_warning(ck, graph.get("tool_warning"), (*path, "tool_warning"))
    nodes, ids, parsed = _nodes(ck, graph, path)
    check_memory_refs(ck, _memory_refs(parsed), declared_names(graph.get("memory")))
    start = _node_list(ck, graph, "start", path, ids, required=start_required)
    end = _node_list(ck, graph, "end", path, ids, required=False)
    edges, ends = ([], []) if voting else _edges(ck, graph, path, ids)
    check_agreement(ck, edges)
    if not start and graph.get("start") in (None, []) and not start_required:
        start = _entry_nodes(ck, graph, path, ids, edges)
    _check_cycle_starts(ck, ids, ends, start, path)
    # Advice on how a graph ends holds only for a graph without errors (a broken edge makes sinks).
    if ck.advice and not voting and nodes is not None and ck.error_count == errors_before:
        _check_ending(ck, ids, ends, end, path)
        _check_cycle_exits(ck, nodes, edges, ends, path)
    if nodes is None:
        return None
    parsed_graph = GraphConfig(
        nodes=nodes,
        start=start,
        end=end,
        edges=_last_per_pair(edges),
        id=graph_id,
        description=description,
        is_majority_voting=voting,
        path=format_path(path),
        memory=memory,
        tool_policy=tool_policy,
        tool_warning=tool_warning,
    )
    if ck.error_count == errors_before:  # server ids are only sure for a graph without errors
        check_server_rules(ck, parsed_graph)
    return parsed_graph


def _memory_refs(nodes: list[NodeConfig]) -> list[MemoryRefConfig]:
    """The memory references of the nodes of one graph (their subgraphs have their own)."""
    refs: list[MemoryRefConfig] = []
    for node in nodes:
        kind = NODE_TYPES.get(node.type)
        if kind is not None:
            refs.extend(kind.memory_refs(node.config))
    return refs


def _last_per_pair(edges: list[tuple[EdgeConfig, KeyPath]]) -> tuple[EdgeConfig, ...]:
    """One edge per (from, to): a later edge for the same pair replaces the earlier one, in the
    earlier one's place (ChatDev's rule; the duplicate is reported as a warning)."""
    kept: dict[tuple[str, str], EdgeConfig] = {}
    for edge, _ in edges:
        kept[(edge.source, edge.target)] = edge
    return tuple(kept.values())


def _nodes(
    ck: Checker, graph: dict[str, Any], path: KeyPath
) -> tuple[tuple[NodeConfig, ...] | None, dict[str, int], list[NodeConfig]]:
    """Parsed nodes (None if any has an error), every declared node id (also of nodes that
    have other errors), and the nodes that parsed.

    The ids map to their node's index: an ordered set that answers `in` at once.
    """
    raw = graph.get("nodes")
    here = (*path, "nodes")
    if raw is UNRESOLVED:
        return None, {}, []
    if raw is None or raw == []:
        ck.error(here, "nodes is required: the graph needs at least one node")
        return None, {}, []
    if not isinstance(raw, list):
        ck.error(here, f"nodes must be a list of nodes, got {describe(raw)}")
        return None, {}, []
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
    valid = [node for node in parsed if node is not None]
    if len(valid) < len(parsed):
        return None, first_seen, valid
    return tuple(valid), first_seen, valid


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


def _entry_nodes(
    ck: Checker,
    graph: dict[str, Any],
    path: KeyPath,
    ids: dict[str, int],
    edges: list[tuple[EdgeConfig, KeyPath]],
) -> tuple[str, ...]:
    """The nodes no edge leads to, in declaration order: the start of a graph without one."""
    if not ids or graph.get("edges") is UNRESOLVED:
        return ()
    targets = {edge.target for edge, _ in edges}
    entries = tuple(node for node in ids if node not in targets)
    if not entries:  # edges that failed to parse could only have added entries
        ck.error(
            (*path, "start"),
            "start is required here: every node of this graph has an incoming edge, so none "
            "can be taken as the start",
        )
    return entries


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
) -> tuple[list[tuple[EdgeConfig, KeyPath]], list[tuple[str, str]]]:
    """The parsed edges, and the ends of every edge between known nodes, also of edges with
    other errors (the shape checks see the graph as written, so one pass finds every issue)."""
    raw = graph.get("edges")
    here = (*path, "edges")
    if raw is None or raw is UNRESOLVED:
        return [], []
    if not isinstance(raw, list):
        ck.error(here, f"edges must be a list of edges, got {describe(raw)}")
        return [], []
    edges: list[tuple[EdgeConfig, KeyPath]] = []
    ends: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for index, item in enumerate(raw):
        edge = parse_edge(ck, item, (*here, index), ids)
        if edge is None:
            ends.extend(_ends(item, ids))
            continue
        ends.append((edge.source, edge.target))
        if (edge.source, edge.target) in seen:
            ck.warning(
                (*here, index),
                f"duplicate edge {edge.source} → {edge.target}: it replaces the earlier one",
            )
        seen.add((edge.source, edge.target))
        edges.append((edge, (*here, index)))
    return edges, ends


def _ends(item: Any, ids: dict[str, int]) -> list[tuple[str, str]]:
    """`(from, to)` of an edge that did not parse, when both name known nodes."""
    if not isinstance(item, dict):
        return []
    source, target = item.get("from"), item.get("to")
    if isinstance(source, str) and isinstance(target, str) and source in ids and target in ids:
        return [(source, target)]
    return []


def parse_edge(ck: Checker, raw: Any, path: KeyPath, ids: dict[str, int]) -> EdgeConfig | None:
    """One edge: `from`, `to`, `condition`, `process`, `dynamic`, and its delivery flags."""
    edge = get_mapping(ck, raw, path, "an edge")
    if edge is None:
        return None
    check_keys(ck, edge, path, EDGE_KEYS)
    source = opt_str(ck, edge, "from", path, required=True)
    target = opt_str(ck, edge, "to", path, required=True)
    if source is not None and not _known_node(ck, source, (*path, "from"), ids, "from"):
        source = None
    if target is not None and not _known_node(ck, target, (*path, "to"), ids, "to"):
        target = None
    condition = parse_condition(ck, edge.get("condition"), (*path, "condition"))
    process = parse_process(ck, edge.get("process"), (*path, "process"))
    flags = {
        key: opt_bool(ck, edge, key, path, default)
        for key, default in (
            ("carry_data", True),
            ("trigger", True),
            ("keep_message", False),
            ("clear_context", False),
            ("clear_kept_context", False),
        )
    }
    dynamic = parse_dynamic(ck, edge.get("dynamic"), (*path, "dynamic"))
    if isinstance(dynamic, DynamicConfig) and not flags["carry_data"]:
        ck.warning(
            (*path, "dynamic"),
            "a dynamic edge with carry_data: false delivers nothing to split",
            at_key=True,
        )
    if source is None or target is None or condition is None or process is False:
        return None
    if dynamic is False:
        return None
    return EdgeConfig(
        source=source,
        target=target,
        condition=condition,
        process=process if isinstance(process, ProcessorConfig) else None,
        dynamic=dynamic if isinstance(dynamic, DynamicConfig) else None,
        path=format_path(path),
        **flags,
    )


def parse_condition(ck: Checker, raw: Any, path: KeyPath) -> ConditionConfig | None:
    """`true`/`false`, a function name, or `{type: <condition type>, config: {...}}`."""
    if raw is None or raw is True:
        return ALWAYS
    if raw is UNRESOLVED:
        return None
    if raw is False:
        return ConditionConfig("function", FunctionCondition("false"))
    if isinstance(raw, str):  # ChatDev: a name is a function condition ("true" included)
        from devall_cli.edges.function_condition import condition_from_text

        if not raw.strip():
            ck.error(path, "condition must not be empty: write true, or a function name")
            return None
        return condition_from_text(ck, raw, path)
    return _typed(ck, raw, path)


def _typed(ck: Checker, raw: Any, path: KeyPath) -> ConditionConfig | None:
    found = _typed_kind(ck, raw, path, CONDITION_TYPES, "condition")
    return None if found is None else ConditionConfig(*found)


def parse_process(ck: Checker, raw: Any, path: KeyPath) -> ProcessorConfig | bool | None:
    """`process: {type: <processor type>, config: {...}}`; None when absent, False when bad."""
    if raw is None:
        return None
    found = _typed_kind(ck, raw, path, PROCESSOR_TYPES, "process")
    return False if found is None else ProcessorConfig(*found)


def _typed_kind(
    ck: Checker, raw: Any, path: KeyPath, registry: Registry[Any], what: str
) -> tuple[str, Any] | None:
    """`{type: <a kind of registry>, config: {...}}`: the kind's name and parsed settings."""
    block = get_mapping(ck, raw, path, what)
    if block is None:
        return None
    check_keys(ck, block, path, TYPED_KEYS)
    name = opt_str(ck, block, "type", path, required=True)
    if name is None:
        return None
    kind = registry.get(name)
    if kind is None:
        ck.error((*path, "type"), registry.unknown_message(name))
        return None
    config = get_mapping(ck, block.get("config") or {}, (*path, "config"), "config")
    if config is None:
        return None
    settings = kind.parse(ck, config, (*path, "config"))
    return None if settings is None else (kind.name, settings)


# --- shape ---------------------------------------------------------------------------------


def _check_cycle_starts(
    ck: Checker,
    ids: dict[str, int],
    ends: list[tuple[str, str]],
    start: tuple[str, ...],
    path: KeyPath,
) -> None:
    """A cycle may hold at most one start node (ChatDev: its entry when nothing enters it)."""
    successors: dict[str, list[str]] = {node_id: [] for node_id in ids}
    for source, target in ends:
        successors.setdefault(source, []).append(target)
    from devall_cli.engine.topology import strongly_connected

    for cycle in strongly_connected(list(successors), successors):
        starts = [node for node in start if node in cycle]
        if len(starts) > 1:
            ck.error(
                (*path, "start"),
                f"start names {', '.join(starts)}, which are in one cycle "
                f"({_shown(cycle)}); a cycle can have only one start node",
            )


CHATDEV_NO_END = "graph lacks a unique natural end; specify 'end' explicitly"


def _check_ending(
    ck: Checker,
    ids: dict[str, int],
    ends: list[tuple[str, str]],
    end: tuple[str, ...],
    path: KeyPath,
) -> None:
    """Without `end`, ChatDev wants exactly one node without outgoing edges (its answer)."""
    if end or not ids:
        return
    senders = {source for source, _ in ends}
    sinks = [node for node in ids if node not in senders]
    if len(sinks) > 1:
        ck.warning(
            path,
            f"{len(sinks)} nodes have no outgoing edge ({_shown(sinks)}) and the graph names no "
            f"end: devall answers with the first of them that produced output, in node order "
            f"({sinks[0]} when it did), while ChatDev refuses the file (\"{CHATDEV_NO_END}\"); "
            "name the answering node in `end`",
        )
    elif not sinks:
        ck.warning(
            path,
            "every node has an outgoing edge and the graph names no end: the run answers "
            f"nothing, and ChatDev refuses the file (\"{CHATDEV_NO_END}\"); name the answering "
            "node in `end`",
        )


def _check_cycle_exits(
    ck: Checker,
    nodes: tuple[NodeConfig, ...],
    edges: list[tuple[EdgeConfig, KeyPath]],
    ends: list[tuple[str, str]],
    path: KeyPath,
) -> None:
    """A cycle no edge leaves, whose edges always fire and that no gate holds back, ends only
    at the iteration limit: valid, as in ChatDev, but hardly what the author meant."""
    from devall_cli.engine.cycles import ITERATION_LIMIT
    from devall_cli.engine.topology import strongly_connected
    from devall_cli.nodes.base import may_hold_output

    by_id = {node.id: node for node in nodes}
    successors: dict[str, list[str]] = {node.id: [] for node in nodes}
    for source, target in ends:
        successors.setdefault(source, []).append(target)
    for cycle in strongly_connected(list(successors), successors):
        members = set(cycle)
        if len(cycle) == 1 and cycle[0] not in successors[cycle[0]]:
            continue  # a node on its own, not a loop
        leaves = any(source in members and target not in members for source, target in ends)
        inner = [edge for edge, _ in edges if edge.source in members and edge.target in members]
        held = any(not edge.condition.always or not edge.trigger for edge in inner)
        gated = any(may_hold_output(by_id[node]) for node in cycle if node in by_id)
        if not (leaves or held or gated):
            ck.warning(
                path,
                f"the cycle {_shown(cycle)} has no way out: no edge leaves it, every edge in it "
                "always fires and no loop_counter or loop_timer holds it back, so it ends only "
                f"after {ITERATION_LIMIT} iterations (or at --max-steps)",
            )


def _shown(nodes: list[str]) -> str:
    if len(nodes) > _SHOWN_CYCLE:
        return f"{', '.join(nodes[:_SHOWN_CYCLE])}, ... ({len(nodes)} nodes)"
    return ", ".join(nodes)
