"""The report's timeline: one row per node (and one for servers starting), bars in time.

A row's first lane holds its visits; model turns, tool calls, human replies and scripts go in
the lanes below, a new lane only where two overlap (parallel tool calls). Rows of nodes that ran
at the same time overlap in time, so concurrent work shows side by side.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from devall_cli.report.model import NodeView, RunLog, Step
from devall_cli.report.policy import refused

MIN_SPAN = 0.001  # seconds: a run that took no time still gets an axis


@dataclass(frozen=True)
class Bar:
    """One bar: its place (0-100 % of the run), its lane, what it is and its tooltip."""

    left: float
    width: float
    lane: int
    kind: str  # visit-<status>, model, tool, tool-error, tool-refused, human, code, memory, ...
    tip: str


@dataclass
class Row:
    """One row: a node (linked to its section) or the servers."""

    label: str
    anchor: str = ""
    bars: list[Bar] = field(default_factory=list)
    lanes: int = 1


@dataclass(frozen=True)
class Timeline:
    """Rows, the run's length and the axis ticks (`(percent, label)`)."""

    rows: list[Row]
    seconds: float
    ticks: list[tuple[float, str]]


def seconds_text(seconds: float) -> str:
    """`12 ms`, `1.5 s`, `2 min 5 s`."""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.3g} s" if seconds < 10 else f"{seconds:.0f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"


def node_span(log: RunLog) -> tuple[float, float] | None:
    """When the first node visit started and the last one ended (None: no node ran)."""
    visits = [visit for node in log.nodes for visit in node.visits]
    if not visits:
        return None
    first = min(visit.started for visit in visits)
    last = max(visit.ended if visit.ended is not None else visit.started for visit in visits)
    return first, last


def build_timeline(log: RunLog, span: tuple[float, float] | None = None) -> Timeline:
    """The timeline of the whole run, or of `span` alone (without the servers' row)."""
    since, until = span if span is not None else (None, None)
    start = since or log.start_ts or (node_span(log) or (0.0, 0.0))[0]
    seconds = max((until or log.end_ts) - start, MIN_SPAN)
    scale = _Scale(start, seconds)
    rows: list[Row] = []
    if log.servers and since is None:
        row = Row("servers")
        for server in log.servers:
            end = server.ready if server.ready is not None else log.end_ts
            took = seconds_text(end - server.started)
            tip = f"{server.server_id} ({server.source}): {server.status}, {took}"
            row.bars.append(scale.bar(server.started, end, 0, f"server-{server.status}", tip))
        _pack(row, [(bar, 0) for bar in row.bars])
        rows.append(row)
    ran = [node for node in log.nodes if node.visits]
    ran.sort(key=lambda node: min(v.started for v in node.visits))
    rows.extend(_node_row(node, scale, log.status) for node in ran)
    return Timeline(rows, seconds, _ticks(seconds))


class _Scale:
    def __init__(self, start: float, seconds: float) -> None:
        self.start, self.seconds = start, seconds

    def bar(self, begin: float, end: float | None, lane: int, kind: str, tip: str) -> Bar:
        begin = max(begin, self.start)
        end = max(end if end is not None else begin, begin)
        left = min((begin - self.start) / self.seconds * 100, 100.0)
        width = min((end - begin) / self.seconds * 100, 100.0 - left)
        return Bar(round(left, 3), round(width, 3), lane, kind, tip)


def _node_row(node: NodeView, scale: _Scale, run_status: str) -> Row:
    row = Row(node.path, node.anchor)
    placed: list[tuple[Bar, int]] = []
    for visit in node.visits:
        status = visit.status
        if status == "running":
            status = "interrupted" if run_status == "interrupted" else "running"
        end = visit.ended if visit.ended is not None else visit.started
        tip = f"{node.path} visit {visit.visit}: {status}, {seconds_text(end - visit.started)}"
        placed.append((scale.bar(visit.started, end, 0, f"visit-{status}", tip), 0))
        for step in visit.steps:
            placed.append((scale.bar(step.started, step.end, 1, _kind(step), _tip(step)), 1))
    _pack(row, placed)
    return row


def _pack(row: Row, placed: list[tuple[Bar, int]]) -> None:
    """Give steps the first lane (from 1) where they overlap nothing; visits keep lane 0."""
    ends: list[float] = []  # per lane from 1: where its last bar ends
    bars: list[Bar] = []
    for bar, lane in sorted(placed, key=lambda item: (item[1], item[0].left)):
        if lane == 0:
            bars.append(bar)
            continue
        for index, end in enumerate(ends):
            if bar.left >= end - 1e-9:
                ends[index] = bar.left + bar.width
                lane = index + 1
                break
        else:
            ends.append(bar.left + bar.width)
            lane = len(ends)
        bars.append(Bar(bar.left, bar.width, lane, bar.kind, bar.tip))
    row.bars = bars
    row.lanes = 1 + len(ends)


def _kind(step: Step) -> str:
    if step.call is not None and step.call.finished and refused(step.call):
        return "tool-refused"
    if step.call is not None and step.call.is_error:
        return "tool-error"
    if step.kind == "code" and step.data.get("end_status") not in (None, "ok"):
        return "code-failed"
    return step.kind


def _tip(step: Step) -> str:
    took = seconds_text(step.end - step.started) if step.end is not None else "unfinished"
    if step.turn is not None:
        turn = step.turn
        stage = "" if turn.stage == "gen" else f" ({turn.stage})"
        tokens = turn.usage.get("total_tokens")
        extra = f", {tokens} tokens" if isinstance(tokens, int) and tokens else ""
        return f"model round {turn.round}{stage}: {took}{extra}"
    if step.call is not None:
        error = " (error)" if step.call.is_error else ""
        if step.call.finished and refused(step.call):
            error = " (refused by the tool policy)"
        return f"tool {step.call.tool}{error}: {took}"
    if step.kind == "human":
        return f"waiting for a human reply: {took}"
    if step.kind == "code":
        status = step.data.get("end_status", "running")
        return f"script {step.data.get('script', '')}: {status}, {took}"
    return f"memory {step.data.get('kind', '')}: {took}"


_STEPS = (
    0.001,
    0.002,
    0.005,
    0.01,
    0.02,
    0.05,
    0.1,
    0.2,
    0.5,
    1,
    2,
    5,
    10,
    15,
    30,
    60,
    120,
    300,
    600,
    900,
    1800,
    3600,
    7200,
)


def _ticks(seconds: float) -> list[tuple[float, str]]:
    """Round marks along the axis, at most about seven."""
    step = next((s for s in _STEPS if seconds / s <= 7), _STEPS[-1] * (seconds // 25200 + 1))
    ticks = []
    mark = 0.0
    while mark <= seconds + 1e-9:
        ticks.append((round(mark / seconds * 100, 3), seconds_text(mark) if mark else "0"))
        mark += step
    return ticks
