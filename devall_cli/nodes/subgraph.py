"""`subgraph`: runs another graph, written inline or kept in a workflow file, as one node.

`config: {type: config, config: <graph>}` holds the graph inline; `config: {type: file, config:
{path: FILE}}` names a workflow file (see `workflow/includes.py` for where it is looked up and how
its `vars` combine with the including file's). The child graph is built and checked when the
workflow loads, so `devall validate` reports its problems in the child file, and its tooling is
planned with the parent's: one set of servers and one redactor for the whole run.

Each visit runs a fresh copy of the child graph on the node's inputs (its task); the node's
output is every output of the child's final node, or one empty assistant message.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from devall_cli.config.json_shapes import Schema, keys_object, ref
from devall_cli.config.model import GraphConfig
from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import (
    Checker,
    KeySpec,
    check_keys,
    describe,
    get_mapping,
    opt_str,
)
from devall_cli.config.scope import GraphReader, LoadScope, within_limits
from devall_cli.config.yaml_source import KeyPath
from devall_cli.errors import RunFailedError
from devall_cli.messages import ASSISTANT, USER, Message
from devall_cli.nodes.base import NODE_TYPES, NodeRun, NodeType

KEYS = KeySpec(known=frozenset({"type", "config"}), ignored=frozenset({"vars"}))
_FILE_KEYS = KeySpec(known=frozenset({"path"}))
SOURCES = ("file", "config")
_WANTED = {
    "file": "{path: FILE} naming the subgraph's workflow file",
    "config": "the subgraph's graph (nodes, edges, start)",
    None: "{path: FILE} for type file, or the graph (nodes, edges, start) for type config",
}
TASK_SOURCE = "SUBGRAPH"  # the source of the empty task a visit without inputs gets


@dataclass(frozen=True)
class SubgraphConfig:
    """`config` of a subgraph node: where the graph came from, and the graph itself."""

    source: str  # file | config
    graph: GraphConfig
    file: str | None = None  # the subgraph file as messages show it (type file)

    def child_graphs(self) -> tuple[GraphConfig, ...]:
        """The graph the node runs (config.model.HoldsGraphs)."""
        return (self.graph,)


def parse_subgraph(ck: Checker, config: dict[str, Any], path: KeyPath) -> SubgraphConfig | None:
    """`type` (file or config) and `config` (`{path}`, or the graph); builds the child graph."""
    check_keys(ck, config, path, KEYS)
    if config.get("vars") not in (None, {}, UNRESOLVED):
        ck.error(
            (*path, "vars"),
            "vars belong at the top level of a workflow file, not in a subgraph node",
            at_key=True,
        )
    source = opt_str(ck, config, "type", path, required=True)
    if source is not None and source not in SOURCES:
        ck.error(
            (*path, "type"),
            "subgraph type must be 'file' (a workflow file) or 'config' (a graph written "
            f"inline), got {describe(source)}",
        )
        source = None
    here = (*path, "config")
    raw = config.get("config")
    if raw is None:
        ck.error(
            here,
            f"config is required: {_WANTED.get(source, _WANTED[None])}",
            at_key="config" in config,
        )
        return None
    body = get_mapping(ck, raw, here, "config")
    if body is None or source is None:
        return None
    if source == "config":
        graph = _inline(ck, body, here)
        return SubgraphConfig("config", graph) if graph is not None else None
    return _file(ck, body, here)


def _scope(ck: Checker) -> LoadScope:
    """The scope the loader set; a graph checked on its own is read as if from its folder."""
    if ck.scope is None:
        ck.scope = LoadScope.top(
            Path(ck.doc.file).resolve(),
            ck.doc.file,
            cli_vars={},
            environ=ck.environ,
            dotenv={},
        )
    return ck.scope


def _graphs(ck: Checker) -> GraphReader:
    """The graph parser the assembler handed over (it parses every graph a node sits in)."""
    if ck.graphs is None:  # a node entry parsed outside any graph; a programming error
        raise RuntimeError("a subgraph node is parsed by the workflow assembler's graph parser")
    return ck.graphs


def _inline(ck: Checker, body: dict[str, Any], path: KeyPath) -> GraphConfig | None:
    """An inline graph: the keys of a workflow's `graph`; without `start`, its entry nodes."""
    scope = _scope(ck)
    if not within_limits(ck, path, scope):
        return None
    ck.scope = scope.nested()
    try:
        return _graphs(ck).parse_graph(ck, body, path, start_required=False)
    finally:
        ck.scope = scope


def _file(ck: Checker, body: dict[str, Any], path: KeyPath) -> SubgraphConfig | None:
    """`{path: FILE}`: the graph of another workflow file."""
    check_keys(ck, body, path, _FILE_KEYS)
    name = opt_str(ck, body, "path", path, required=True)
    if name is None:
        return None
    _scope(ck)
    loaded = _graphs(ck).load_file(ck, name.strip(), (*path, "path"))
    if loaded is None:
        return None
    graph, shown = loaded
    return SubgraphConfig("file", graph, shown)


async def run_subgraph(run: NodeRun) -> list[Message]:
    """Run a fresh copy of the child graph on the inputs; all outputs of its final node."""
    config: SubgraphConfig = run.node.config
    if run.run_subgraph is None:  # every graph run provides it; a programming error otherwise
        raise RunFailedError(f"node '{run.path}': subgraphs cannot run here")
    task = list(run.inputs) or [Message(role=USER, text="", source=TASK_SOURCE)]
    messages = await run.run_subgraph(config.graph, task, run.node.id)
    if not messages:
        return [Message(role=ASSISTANT, text="", source=run.node.id)]
    return [m if m.source else m.but(source=run.node.id) for m in messages]


def _details(config: SubgraphConfig) -> dict[str, Any]:
    if config.file is not None:
        return {"subgraph": "file", "file": config.file}
    return {"subgraph": "config"}


def _shapes() -> dict[str, Schema]:
    """`type` (file or config) and `config`: `{path}` for a file, else the graph itself."""
    return {
        "type": {"enum": list(SOURCES)},
        "config": {
            "if": {"required": ["path"]},
            "then": keys_object(_FILE_KEYS, strict=True),
            "else": ref("graph"),  # type: config, the subgraph's own graph
        },
    }


SUBGRAPH = NODE_TYPES.register(
    NodeType(
        "subgraph",
        "runs another graph (inline or from a file)",
        KEYS,
        parse_subgraph,
        run_subgraph,
        details=_details,
        shapes=_shapes,
        label=lambda config: f"file {PurePath(config.file).name}" if config.file else "inline",
        note=lambda config: f"file: {config.file}" if config.file else "inline",
    )
)
