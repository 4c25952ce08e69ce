"""Workflow files that include other workflow files (subgraph files), and what each file sees.

Every file is read in a `LoadScope`: which file it is, the chain of files that include it, how
deep it sits in subgraphs, and the `vars` it inherits. A subgraph file's relative path is looked
up beside the file that names it first, then beside the top-level workflow. The file may be a
whole workflow (`vars` and `graph`) or a bare graph; its `vars` are laid over the inherited ones.
A file that includes itself, directly or through other files, is a config error naming the chain.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from devall_cli import limits
from devall_cli.config.model import GraphConfig
from devall_cli.config.placeholders import UNRESOLVED, PlaceholderResolver
from devall_cli.config.schema import Checker, KeySpec, check_keys, describe
from devall_cli.config.scope import LoadBudget, LoadScope, within_limits
from devall_cli.config.yaml_source import KeyPath, SourceDocument, parse_source
from devall_cli.errors import ConfigError, ConfigIssue
from devall_cli.redaction import Redactor, masking

TOP_KEYS = KeySpec(known=frozenset({"version", "vars", "graph", "pricing"}))
WORKFLOW_SUFFIXES = (".yaml", ".yml", ".json")


def subgraph_candidates(name: str, scope: LoadScope) -> list[tuple[Path, str]]:
    """Where a subgraph file may be, in order: (path, path as shown)."""
    if os.path.isabs(name):
        return [(Path(name), name)]
    places = [
        (scope.file.parent / name, os.path.join(os.path.dirname(scope.display), name)),
        (scope.root_dir / name, os.path.join(scope.root_display, name)),
    ]
    result: list[tuple[Path, str]] = []
    for path, display in places:
        if all(path != seen for seen, _ in result):
            result.append((path, os.path.normpath(display)))
    return result


def _existing(candidates: list[tuple[Path, str]]) -> tuple[Path, str] | None:
    """The first candidate that is a regular file (pipes and devices are not read), resolved."""
    for path, display in candidates:
        try:
            if path.is_file():
                return path.resolve(), display
        except (OSError, ValueError, RuntimeError):  # a NUL byte, a too long name, a link loop
            continue
    return None


def load_subgraph_file(ck: Checker, name: str, path: KeyPath) -> tuple[GraphConfig, str] | None:
    """Find, read and check the subgraph file `name` named at `path`: (graph, file as shown).

    Every problem is recorded: in the including file (not found, a loop, a limit) or located in
    the subgraph file itself. None when the graph is unusable.
    """
    scope = ck.scope
    assert scope is not None, "the loader sets the scope"
    if not within_limits(ck, path, scope):
        return None
    candidates = subgraph_candidates(name, scope)
    found = _existing(candidates)
    if found is None:
        tried = ", ".join(display for _, display in candidates)
        ck.error(path, f"subgraph file '{name}' not found (tried: {tried})")
        return None
    file, display = found
    if file.suffix.lower() not in WORKFLOW_SUFFIXES:
        # Never read: a file that is not a workflow must not be quoted back line by line.
        ck.error(
            path,
            f"subgraph file '{display}' is not a workflow file: its name must end in "
            f"{', '.join(WORKFLOW_SUFFIXES)}",
        )
        return None
    if any(file == seen for seen, _ in scope.chain):
        start = next(i for i, (seen, _) in enumerate(scope.chain) if seen == file)
        loop = " → ".join([*(shown for _, shown in scope.chain[start:]), display])
        ck.error(path, f"subgraph files include each other in a loop: {loop}")
        return None
    doc = _document(ck, file, display, path)
    if doc is None or not _within_budget(ck, path, scope.budget, doc):
        return None
    child = ck.for_document(doc, scope.including(file, doc.file))
    graph = _read_subgraph_document(child)
    return (graph, doc.file) if graph is not None else None


def _document(ck: Checker, file: Path, display: str, path: KeyPath) -> SourceDocument | None:
    """The parsed file, read once per load (None if it cannot be); problems are recorded once.

    A file whose top level is not a workflow's (a mapping with `graph`, or a bare graph's
    `nodes`) is refused at the node that names it, without a line of it: whatever else it
    holds is not shown.
    """
    documents = ck.scope.budget.documents if ck.scope is not None else {}
    if file not in documents:
        try:
            doc: SourceDocument | None = parse_source(file, display)
        except ConfigError as exc:
            doc = None
            ck.issues.extend(exc.issues or [ConfigIssue(exc.message, file=display)])
        if doc is not None and not _looks_like_a_workflow(doc.data):
            ck.error(
                path,
                f"subgraph file '{display}' is not a workflow: its top level is not a "
                "mapping with a 'graph' key (or a graph's 'nodes')",
            )
            doc = None
        documents[file] = doc
    return documents[file]


def _looks_like_a_workflow(data: Any) -> bool:
    return isinstance(data, dict) and ("graph" in data or "nodes" in data)


def _within_budget(ck: Checker, path: KeyPath, budget: LoadBudget, doc: SourceDocument) -> bool:
    """Count one more inclusion of `doc`; past a limit, an error at the first node too many."""
    over_before = _over(budget)
    budget.inclusions += 1
    budget.values += len(doc.value_positions)
    reason = _over(budget)
    if reason is not None and over_before is None:
        ck.error(path, reason)
    return reason is None


def _over(budget: LoadBudget) -> str | None:
    if budget.inclusions > limits.SUBGRAPH_FILES:
        return (
            f"the workflow includes subgraph files more than {limits.SUBGRAPH_FILES} times "
            "(each inclusion counted)"
        )
    if budget.values > limits.SUBGRAPH_VALUES:
        return (
            f"the subgraph files of the workflow hold more than {limits.SUBGRAPH_VALUES} values "
            "(each inclusion counted)"
        )
    return None


def _read_subgraph_document(ck: Checker) -> GraphConfig | None:
    """A subgraph file: a whole workflow (`graph:` and `vars:`) or a bare graph."""
    from devall_cli.workflow.graph import parse_graph  # the graph parser reaches node types

    data: dict[str, Any] = ck.doc.data
    whole = "graph" in data
    if whole:
        check_keys(ck, data, (), TOP_KEYS)
        body = {key: value for key, value in data.items() if key != "vars"}
    else:  # the graph's keys at the top; `vars` and `version` may sit beside them
        body = {key: value for key, value in data.items() if key not in ("vars", "version")}
    _, resolved = resolve_document(ck, vars_block(ck, data), body)
    if whole:
        check_version(ck, resolved.get("version"))
        if resolved.get("pricing") is not None:
            ck.warning(
                ("pricing",),
                "pricing in a subgraph file is ignored: the prices of a run are those of "
                "the workflow file (and --pricing FILE)",
                at_key=True,
            )
    with masking(Redactor(ck.secrets)):
        if whole:
            return parse_graph(ck, resolved.get("graph"), ("graph",))
        return parse_graph(ck, resolved, ())


def resolve_document(
    ck: Checker, declared: Mapping[str, Any] | None, body: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the file's resolved `vars`, `body` resolved): `body` holds its other top-level keys.

    Problems are recorded in the file; secrets go to the checker; the scope's `vars` become the
    file's own laid over the inherited ones, for the subgraph files it includes.
    """
    scope = ck.scope
    assert scope is not None, "the loader sets the scope"
    resolver = PlaceholderResolver(
        vars_block=declared,
        cli_vars=scope.cli_vars,
        environ=scope.environ,
        dotenv=scope.dotenv,
        inherited=scope.vars,
        budget=scope.budget.expansion,
        deferred=_outside_tooling if scope.tools_only else None,
    )
    own = resolver.resolve_vars()
    resolved = {key: resolver.resolve_tree(value, (key,)) for key, value in body.items()}
    ck.secrets.update(resolver.secrets)
    for where, text, severity in resolver.issues:
        ck.issues.append(ck.doc.issue(where, text, severity=severity))
    seen = {**scope.vars, **{k: v for k, v in own.items() if v is not UNRESOLVED}}
    ck.scope = replace(scope, vars=seen)
    return own, resolved


def _outside_tooling(path: KeyPath) -> bool:
    """Whether a value lies outside every `tooling` block (a listing does not need it)."""
    return "tooling" not in path


def vars_block(ck: Checker, top: Mapping[str, Any]) -> dict[str, Any] | None:
    """The file's `vars` mapping (an error if it is something else)."""
    value = top.get("vars")
    if value is None or isinstance(value, dict):
        return value
    ck.error(("vars",), f"vars must be a mapping of names to values, got {describe(value)}")
    return None


def check_version(ck: Checker, value: Any) -> str | None:
    """`version` as text (a number is read as text; it is only informational)."""
    if value is None or value is UNRESOLVED:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        ck.error(("version",), f"version must be text, got {describe(value)}")
        return None
    return str(value)
