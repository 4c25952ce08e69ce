"""result.json: the machine-readable outcome of a run, redacted, written atomically."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from devall_cli.events import Event, RunFinishedEvent
from devall_cli.json_indent import indented_json
from devall_cli.node_paths import declared_path
from devall_cli.redaction import Redactor
from devall_cli.run_files import write_failure
from devall_cli.run_values import ValueStore
from devall_cli.text import clean_text
from devall_cli.trace.jsonl import unmasked_json
from devall_cli.trace.policy_record import PolicyRecord
from devall_cli.trace.recorder import (
    AttachmentRecord,
    NodeRecord,
    RunRecorder,
    RunResult,
    TokenCounts,
    ToolStats,
)


def _tokens(tokens: TokenCounts) -> dict[str, int]:
    return {"prompt": tokens.prompt, "completion": tokens.completion, "total": tokens.total}


def _node(node: NodeRecord) -> dict[str, Any]:
    return {
        "id": node.node_id,
        "status": node.status,
        "output": node.output,
        "error": node.error,
        "duration_ms": node.duration_ms,
        "model_calls": node.model_calls,
        "tool_calls": node.tool_calls,
        "tokens": _tokens(node.tokens),
        "cost": node.cost.record(),
        "visits": [
            {
                "visit": v.visit,
                "status": v.status,
                "outputs": list(v.outputs),
                "error": v.error,
                "duration_ms": v.duration_ms,
            }
            for v in node.visits
        ],
    }


def _tool(stats: ToolStats) -> dict[str, Any]:
    return {
        "tool": stats.tool,
        "original_name": stats.original_name,
        "source": stats.source,
        "server": stats.server,
        "calls": stats.calls,
        "errors": stats.errors,
        "total_ms": stats.total_ms,
    }


def _attachment(record: AttachmentRecord) -> dict[str, Any]:
    return {
        "path": record.path,
        "mime_type": record.mime_type,
        "size": record.size,
        "sha256": record.sha256,
        "tool": record.tool,
        "node": record.node_id,
    }


def _cost(result: RunResult) -> dict[str, Any]:
    """The run's tokens and cost, with those of each model and the models without a price."""
    total = result.cost
    models = {name: {"calls": totals.calls, **totals.record()} for name, totals in result.models}
    return {**total.record(), "unpriced_models": list(total.unpriced_models), "models": models}


def _policy(record: PolicyRecord) -> dict[str, Any]:
    return {
        "denied": {node: [dict(item) for item in items] for node, items in record.denied.items()},
        "approvals": [dict(item) for item in record.approvals],
        "refused_calls": record.refused_calls,
    }


DETAIL_LINES, DETAIL_CHARS = 20, 500  # how much of an error's details result.json keeps


def error_details(lines: Sequence[str]) -> list[str]:
    """The last lines of an error's details (the cause is at the end of a server's log), each
    cut to a readable length."""
    return [
        line if len(line) <= DETAIL_CHARS else line[: DETAIL_CHARS - 1] + "…"
        for line in lines[-DETAIL_LINES:]
    ]


def _iso(ts: float) -> str | None:
    if not ts:
        return None
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="milliseconds")


def ordered_nodes(result: RunResult, node_ids: Sequence[str] = ()) -> list[NodeRecord]:
    """The node records in `node_ids` order (nodes never reached as `not_run`), each followed by
    the units a dynamic edge ran it as (`node#2`), then the rest."""
    by_id = {node.node_id: node for node in result.nodes}
    known = set(node_ids)
    units: dict[str, list[NodeRecord]] = {}
    for node_id in list(by_id):
        declared = declared_path(node_id, known)
        if declared != node_id and declared in known:
            units.setdefault(declared, []).append(by_id.pop(node_id))
    ordered: list[NodeRecord] = []
    for node_id in node_ids:
        ordered.append(by_id.pop(node_id, NodeRecord(node_id, status="not_run")))
        ordered.extend(units.get(node_id, ()))
    return ordered + list(by_id.values())


def build_result(
    result: RunResult, redactor: Redactor, *, node_ids: Sequence[str] = ()
) -> dict[str, Any]:
    """The result.json document of a run (redacted)."""
    document: dict[str, Any] = {
        "run_id": result.run_id,
        "workflow": result.workflow,
        "status": result.status,
        "exit_code": result.exit_code,
        "error": result.error,
        "details": error_details(result.details),
        "hint": result.hint,
        "task": result.task,
        "output": result.output,
        "started_at": _iso(result.started_at),
        "duration_ms": result.duration_ms,
        "nodes": [_node(node) for node in ordered_nodes(result, node_ids)],
        "tools": [_tool(t) for t in result.tools],
        "attachments": [_attachment(a) for a in result.attachments],
        "servers": [asdict(server) for server in result.servers],
        "notes": list(result.notes),
        "human_replies": list(result.human_replies),
        "code_runs": list(result.code_runs),
        "memory": [asdict(record) for record in result.memory],
        "totals": {
            "model_calls": result.model_calls,
            "tool_calls": result.tool_calls,
            "tool_errors": result.tool_errors,
            "tokens": _tokens(result.tokens),
        },
        "cost": _cost(result),
    }
    if result.budget is not None:  # the run stopped at its budget
        document["budget"] = dict(result.budget)
    if not result.policy.empty:  # only when the policy hid a tool or decided a call
        document["policy"] = _policy(result.policy)
    if result.warnings:  # a node sent its model more tools than graph.tool_warning allows
        document["warnings"] = [dict(warning) for warning in result.warnings]
    if unmasked_json(redactor, document) is not None:
        return document  # nothing to mask: the copy masking makes would be the same document
    redacted: dict[str, Any] = redactor.value(document)
    return redacted


def json_text(document: Any) -> str:
    """The text of result.json (and of `run --json`) for a document.

    Exactly `json.dumps(document, indent=2, ensure_ascii=False, default=str)`, made without
    json's pure-Python indenting encoder (json_indent.py; once per task of a batch).
    """
    # clean_text: a lone surrogate that slipped past the boundaries must not lose the file.
    return clean_text(indented_json(document)) + "\n"


def write_json_atomic(path: Path, document: Any) -> None:
    """Write JSON to a temporary file beside `path` (mode 0600), then rename it into place."""
    prefix = f".{path.name}."
    try:  # the folder is mostly there: no mkdir first
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=path.parent)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json_text(document))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_result(
    path: Path, result: RunResult, redactor: Redactor, *, node_ids: Sequence[str] = ()
) -> dict[str, Any]:
    """Write result.json atomically; returns the (redacted) document written."""
    document = build_result(result, redactor, node_ids=node_ids)
    write_json_atomic(path, ValueStore(path.parent).stored(document))
    return document


class ResultSink:
    """An event sink that writes result.json when the run finishes (ok, failed or interrupted).

    `document` holds what was (or should have been) written; `failure` says why the file
    could not be written, if it could not.
    """

    def __init__(
        self,
        path: Path,
        redactor: Redactor,
        *,
        node_ids: Sequence[str] = (),
        recorder: RunRecorder | None = None,
    ) -> None:
        self.path = Path(path)
        self.redactor = redactor
        self.node_ids = tuple(node_ids)
        # A run session's recorder is shared (and fed by the session); otherwise keep our own.
        self._own = recorder is None
        self.recorder = recorder if recorder is not None else RunRecorder()
        self.document: dict[str, Any] | None = None  # whole: large texts in it, not references
        self.failure: str | None = None
        self.values = ValueStore(self.path.parent)

    def __call__(self, event: Event) -> None:
        """Record the event; on `run.finished` write the file."""
        if self._own:
            self.recorder(event)
        if isinstance(event, RunFinishedEvent):
            try:
                result = self.recorder.result()
                self.document = build_result(result, self.redactor, node_ids=self.node_ids)
                # The file refers to the texts the run stored once (run_values), the first
                # record that held each one wrote it.
                write_json_atomic(self.path, self.values.stored(self.document))
            except Exception as exc:
                self.failure = write_failure(self.path, exc)
                raise
