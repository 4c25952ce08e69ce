"""Read a run directory's events.jsonl and result.json back into a RunLog.

Only those two files are read (they are written redacted); a line that is not a JSON object is
skipped and counted, a missing result.json is made up for from the events. Model turns, tool
calls, human replies, scripts and memory events are put into the visit of their node that was
open when they happened.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from devall_cli.errors import UsageError
from devall_cli.graphview.shape import from_dict, walk
from devall_cli.node_paths import declared_path
from devall_cli.report.icons import shown_icon
from devall_cli.report.model import (
    ModelTurn,
    NodeView,
    RunLog,
    ServerSpan,
    Step,
    ToolCall,
    Visit,
)
from devall_cli.report.policy import PolicyFold, finish_policy
from devall_cli.run_values import resolve_line

EVENTS, RESULT = "events.jsonl", "result.json"


CANCELLED = "cancelled"  # the error of a node visit that a Ctrl-C or SIGTERM cancelled


def read_run(run_dir: Path) -> RunLog:
    """The RunLog of `run_dir`; UsageError when it holds neither events.jsonl nor result.json."""
    events_path, result_path = run_dir / EVENTS, run_dir / RESULT
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir} is not a directory (give the run directory of a devall run)")
    if not events_path.is_file() and not result_path.is_file():
        raise UsageError(
            f"{run_dir} holds no {EVENTS} or {RESULT}: it is not the run directory of a devall run"
        )
    log = RunLog(run_dir=run_dir)
    log.result = _read_result(result_path, log)
    fold = _Fold(log)
    for event in _read_events(events_path, log):
        fold.take(event)
    fold.finish()
    _apply_result(log)
    finish_policy(log)
    _order_nodes(log)
    _interrupted_not_failed(log)
    return log


def _read_result(path: Path, log: RunLog) -> dict[str, Any]:
    if not path.is_file():
        log.problems.append(f"{RESULT} is missing: the run was killed, or is still running")
        return {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
        # Large texts are stored once, in values/; the document refers to them (run_values).
        document = resolve_line(text, json.loads(text), path.parent)
    except (OSError, ValueError, RecursionError) as exc:
        log.problems.append(f"{RESULT} could not be read: {exc}")
        return {}
    if not isinstance(document, dict):
        log.problems.append(f"{RESULT} does not hold a JSON object")
        return {}
    return document


def _read_events(path: Path, log: RunLog) -> list[dict[str, Any]]:
    if not path.is_file():
        log.problems.append(f"{EVENTS} is missing: the report shows only what {RESULT} holds")
        return []
    events: list[dict[str, Any]] = []
    bad = 0
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                event = resolve_line(line, json.loads(line), path.parent)
            except (ValueError, RecursionError):
                bad += 1
                continue
            if isinstance(event, dict) and isinstance(event.get("kind"), str):
                events.append(event)
            else:
                bad += 1
    if bad:
        log.problems.append(f"{bad} line{'s' * (bad != 1)} of {EVENTS} could not be read")
    return events


def _num(value: Any, default: float = 0.0) -> float:
    return (
        float(value) if isinstance(value, int | float) and not isinstance(value, bool) else default
    )


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _texts(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


class _Fold(PolicyFold):
    """Folds the events, in order, into the log's nodes, visits, servers, notes and policy."""

    def __init__(self, log: RunLog) -> None:
        self.log = log
        self.nodes: dict[str, NodeView] = {}
        self.open: dict[str, Visit] = {}  # node path -> its visit now running
        self.turns: dict[tuple[str, str, int], ModelTurn] = {}
        self.calls: dict[tuple[str, str], ToolCall] = {}
        self.waits: dict[tuple[str, str, int], Step] = {}  # human and code steps by visit
        self.servers: dict[str, ServerSpan] = {}
        self._pending: dict[tuple[str, str], dict[str, Any]] = {}
        self.last_ts = 0.0

    def take(self, event: dict[str, Any]) -> None:
        """One event."""
        ts = _num(event.get("ts"))
        self.last_ts = max(self.last_ts, ts)
        kind = event["kind"]
        handler = getattr(self, "_" + kind.replace(".", "_"), None)
        if handler is not None:
            handler(event, ts)

    def finish(self) -> None:
        """What never ended ends with the run (or the last event)."""
        end = self.log.end_ts or self.last_ts
        self.log.end_ts = end
        for visit in self.open.values():
            visit.ended = end
        for turn in self.turns.values():
            turn.ended = end
        for call in self.calls.values():
            call.ended = end
        for step in self.waits.values():
            step.ended = end
        self.log.nodes = list(self.nodes.values())
        self.log.servers = list(self.servers.values())

    # --- run and servers ---------------------------------------------------------------------

    def _run_started(self, event: dict[str, Any], ts: float) -> None:
        log = self.log
        log.run_id = _str(event.get("run_id"))
        log.workflow = _str(event.get("workflow"))
        log.task = _str(event.get("task"))
        log.start_ts = ts
        log.status = "running"
        log.shape = from_dict(event.get("graph"))
        if log.shape is not None:
            for path, node in walk(log.shape):
                self._node(path).type = node.type

    def _run_finished(self, event: dict[str, Any], ts: float) -> None:
        log = self.log
        log.status = _str(event.get("status")) or "unknown"
        log.output = _str(event.get("output"))
        log.error = event.get("error") if isinstance(event.get("error"), str) else None
        log.details = _texts(event.get("details"))
        log.hint = _str(event.get("hint")) or None
        log.exit_code = int(_num(event.get("exit_code")))
        log.duration_ms = _num(event.get("duration_ms"))
        log.end_ts = ts

    def _server_starting(self, event: dict[str, Any], ts: float) -> None:
        server_id = _str(event.get("server_id"))
        self.servers[server_id] = ServerSpan(
            server_id, _str(event.get("source")), _str(event.get("target")), ts
        )

    def _server_ready(self, event: dict[str, Any], ts: float) -> None:
        span = self.servers.get(_str(event.get("server_id")))
        if span is not None:
            span.ready, span.status = ts, "ready"
            sandbox = event.get("sandbox")
            span.sandbox = sandbox if isinstance(sandbox, dict) else None

    def _server_exited(self, event: dict[str, Any], ts: float) -> None:
        span = self.servers.get(_str(event.get("server_id")))
        if span is not None and span.ready is None:
            span.ready, span.status = ts, _str(event.get("status")) or "exited"

    def _graph_note(self, event: dict[str, Any], ts: float) -> None:
        self.log.notes.append(
            {"ts": ts, "graph": _str(event.get("graph")), "message": _str(event.get("message"))}
        )

    def _edge(self, event: dict[str, Any], ts: float) -> None:
        if event.get("delivered") or event.get("triggered"):
            known = set(self.nodes)
            source, target = _str(event.get("source")), _str(event.get("target"))
            self.log.fired.add((declared_path(source, known), declared_path(target, known)))

    # --- nodes -------------------------------------------------------------------------------

    def _node(self, path: str) -> NodeView:
        node = self.nodes.get(path)
        if node is None:
            declared = declared_path(path, self.nodes)
            node = NodeView(path, declared)
            if declared in self.nodes:
                node.type = self.nodes[declared].type
            self.nodes[path] = node
        return node

    def _visit(self, path: str, ts: float, number: int | None = None) -> Visit:
        """The visit an event of node `path` belongs to (made up if the events had none)."""
        node = self._node(path)
        if number is not None:
            for visit in reversed(node.visits):
                if visit.visit == number:
                    return visit
        running = self.open.get(path)
        if running is not None:
            return running
        if node.visits:
            return node.visits[-1]
        visit = Visit(path, 0, ts, ts, status="ok")  # work outside any visit (`tools call`)
        node.visits.append(visit)
        return visit

    def _node_started(self, event: dict[str, Any], ts: float) -> None:
        path = _str(event.get("node_id"))
        visit = Visit(
            path, int(_num(event.get("visit"), 1)), ts, inputs=_texts(event.get("inputs"))
        )
        self._node(path).visits.append(visit)
        self.open[path] = visit

    def _node_finished(self, event: dict[str, Any], ts: float) -> None:
        path = _str(event.get("node_id"))
        status = _str(event.get("status"))
        node = self._node(path)
        if status == "skipped":
            node.status = "skipped"
            return
        visit = self.open.pop(path, None) or self._visit(path, ts, int(_num(event.get("visit"), 1)))
        visit.ended, visit.status = ts, status or "ok"
        visit.outputs = _texts(event.get("outputs"))
        visit.error = event.get("error") if isinstance(event.get("error"), str) else None
        visit.duration_ms = _num(event.get("duration_ms"))

    def _model_request(self, event: dict[str, Any], ts: float) -> None:
        path = _str(event.get("node_id"))
        turn = ModelTurn(
            int(_num(event.get("round"), 1)),
            _str(event.get("stage")) or "gen",
            ts,
            messages=int(_num(event.get("messages"))),
            tools=_texts(event.get("tools")),
        )
        self.turns[(path, turn.stage, turn.round)] = turn
        self._visit(path, ts).steps.append(Step("model", ts, turn=turn))

    def _model_reply(self, event: dict[str, Any], ts: float) -> None:
        path = _str(event.get("node_id"))
        key = (path, _str(event.get("stage")) or "gen", int(_num(event.get("round"), 1)))
        turn = self.turns.pop(key, None)
        if turn is None:
            turn = ModelTurn(key[2], key[1], ts - _num(event.get("duration_ms")) / 1000)
            self._visit(path, ts).steps.append(Step("model", turn.started, turn=turn))
        turn.ended, turn.replied = ts, True
        content = event.get("content")
        turn.content = content if isinstance(content, str) else None
        calls = event.get("tool_calls")
        turn.tool_calls = (
            [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
        )
        usage = event.get("usage")
        turn.usage = usage if isinstance(usage, dict) else {}

    def _tool_call(self, event: dict[str, Any], ts: float) -> None:
        path = _str(event.get("node_id"))
        call = ToolCall(
            _str(event.get("call_id")),
            _str(event.get("tool")),
            ts,
            original_name=_str(event.get("original_name")),
            source=_str(event.get("source")),
            server=_str(event.get("server")),
            arguments=event.get("arguments"),
            approval=self._approval_of(path, _str(event.get("call_id"))),
            icon=shown_icon(event.get("icons")),
        )
        self.calls[(path, call.call_id)] = call
        self._visit(path, ts).steps.append(Step("tool", ts, call=call))

    def _tool_result(self, event: dict[str, Any], ts: float) -> None:
        path = _str(event.get("node_id"))
        call = self.calls.pop((path, _str(event.get("call_id"))), None)
        if call is None:
            call = ToolCall(
                _str(event.get("call_id")),
                _str(event.get("tool")),
                ts - _num(event.get("duration_ms")) / 1000,
                source=_str(event.get("source")),
                server=_str(event.get("server")),
            )
            self._visit(path, ts).steps.append(Step("tool", call.started, call=call))
        call.ended, call.finished = ts, True
        blocks = event.get("blocks")
        call.blocks = [b for b in blocks if isinstance(b, dict)] if isinstance(blocks, list) else []
        call.is_error = bool(event.get("is_error")) or event["kind"] == "tool.error"
        error_class = event.get("error_class")
        call.error_class = error_class if isinstance(error_class, str) else None

    _tool_error = _tool_result

    def _waiting(self, kind: str, event: dict[str, Any], ts: float) -> None:
        path, number = _str(event.get("node_id")), int(_num(event.get("visit"), 1))
        step = Step(kind, ts, data=dict(event))
        self.waits[(kind, path, number)] = step
        self._visit(path, ts, number).steps.append(step)

    def _answered(self, kind: str, event: dict[str, Any], ts: float) -> None:
        path, number = _str(event.get("node_id")), int(_num(event.get("visit"), 1))
        step = self.waits.pop((kind, path, number), None)
        if step is None:
            step = Step(kind, ts - _num(event.get("duration_ms")) / 1000)
            self._visit(path, ts, number).steps.append(step)
        step.ended = ts
        step.data.update({f"end_{key}": value for key, value in event.items()})

    def _human_asked(self, event: dict[str, Any], ts: float) -> None:
        self._waiting("human", event, ts)

    def _human_replied(self, event: dict[str, Any], ts: float) -> None:
        self._answered("human", event, ts)

    def _code_started(self, event: dict[str, Any], ts: float) -> None:
        self._waiting("code", event, ts)

    def _code_finished(self, event: dict[str, Any], ts: float) -> None:
        self._answered("code", event, ts)

    def _memory(self, event: dict[str, Any], ts: float) -> None:
        path = _str(event.get("node_id"))
        if path:
            started = ts - _num(event.get("duration_ms")) / 1000
            self._visit(path, ts).steps.append(Step("memory", started, ts, data=dict(event)))

    _memory_retrieve = _memory
    _memory_write = _memory


def _apply_result(log: RunLog) -> None:
    """Fill in from result.json what the events did not say (or said before it was final)."""
    result = log.result
    if not result:
        return
    log.run_id = log.run_id or _str(result.get("run_id"))
    log.workflow = log.workflow or _str(result.get("workflow"))
    log.task = log.task or _str(result.get("task"))
    log.status = _str(result.get("status")) or log.status
    log.output = _str(result.get("output")) or log.output
    log.error = result.get("error") if isinstance(result.get("error"), str) else log.error
    if isinstance(result.get("details"), list):
        log.details = _texts(result["details"])
    log.hint = _str(result.get("hint")) or log.hint
    if isinstance(result.get("exit_code"), int):
        log.exit_code = result["exit_code"]
    log.started_at = _str(result.get("started_at")) or None
    if isinstance(result.get("duration_ms"), int | float):
        log.duration_ms = float(result["duration_ms"])
    known = {node.path: node for node in log.nodes}
    for record in result.get("nodes") or ():
        if not isinstance(record, dict) or not isinstance(record.get("id"), str):
            continue
        node = known.get(record["id"])
        if node is None:
            node = NodeView(record["id"], declared_path(record["id"], known))
            known[node.path] = node
            log.nodes.append(node)
        node.status = _str(record.get("status")) or node.status
        node.model_calls = int(_num(record.get("model_calls")))
        node.tool_calls = int(_num(record.get("tool_calls")))
        tokens = record.get("tokens")
        node.tokens = int(_num(tokens.get("total"))) if isinstance(tokens, dict) else 0
        node.duration_ms = _num(record.get("duration_ms"))
        node.error = record.get("error") if isinstance(record.get("error"), str) else None


def _order_nodes(log: RunLog) -> None:
    """result.json's order (the graph's, units after their node); else the graph's, then the
    rest as they appeared. Statuses without result.json come from the visits."""
    order = [n.get("id") for n in log.result.get("nodes") or () if isinstance(n, dict)]
    if not order and log.shape is not None:
        order = [path for path, _ in walk(log.shape)]
    rank = {path: i for i, path in enumerate(order)}
    declared = {node.path: rank.get(node.declared, len(rank)) for node in log.nodes}
    log.nodes.sort(key=lambda node: rank.get(node.path, declared[node.path] + 0.5))
    for index, node in enumerate(log.nodes):
        node.anchor = f"node-{index + 1}"
        if log.result or node.status == "skipped":
            continue
        if node.visits:
            node.status = node.visits[-1].status
            failed = [v for v in node.visits if v.status == "failed"]
            node.error = failed[-1].error if failed else None
            node.duration_ms = sum(v.duration_ms or 0.0 for v in node.visits)


def _interrupted_not_failed(log: RunLog) -> None:
    """In an interrupted run, a visit the interruption cancelled was interrupted, not failed."""
    if log.status != "interrupted":
        return
    for node in log.nodes:
        for visit in node.visits:
            if visit.status == "failed" and visit.error == CANCELLED:
                visit.status, visit.error = "interrupted", None
        if node.status == "failed" and node.error == CANCELLED:
            node.status, node.error = "interrupted", None
