"""The report page: a RunLog rendered through the Jinja2 template into one HTML file.

The page loads nothing: its style and script are inline, attachments are data URIs (or links
relative to the report, opened only when clicked), and a Content-Security-Policy forbids any
other request. Text from the run is escaped, control characters shown as `\\x1b`.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from devall_cli import __version__
from devall_cli.graphview.layout import layout
from devall_cli.graphview.shape import walk
from devall_cli.graphview.svg import NodeState, RunMarks, render_svg
from devall_cli.report.attachments import Attachments
from devall_cli.report.cost import CostView, read_cost
from devall_cli.report.model import NodeView, RunLog
from devall_cli.report.timeline import Timeline, build_timeline, node_span, seconds_text
from devall_cli.text import clean_text, visible
from devall_cli.trace.policy_text import sandbox_text

TEXT_LIMIT = 20_000  # characters of one text shown; the rest stays in events.jsonl
OPEN_NODES = 8  # a run of at most this many nodes shows them all opened
ZOOM_BELOW = 0.7  # a second timeline of the nodes alone when they took less of the run
_FINAL = frozenset({"ok", "failed", "skipped", "not_run", "pending"})


def render_report(log: RunLog, report_path: Path) -> str:
    """The HTML text of the report of `log`, to be written at `report_path`."""
    from devall_cli.graphview import collector_paused

    with collector_paused():  # a run of thousands of nodes: see collector_paused
        return _render_report(log, report_path)


def _render_report(log: RunLog, report_path: Path) -> str:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("devall_cli.report", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        dur=_duration,
        clip=_clip,
        pretty=_pretty,
        size=_size,
        shown=_shown,
        at=_at(log),
        sandbox=lambda value: sandbox_text(value if isinstance(value, dict) else None),
    )
    attachments = Attachments(log.run_dir, report_path.parent)
    for block in _attachment_blocks(log):
        attachments.view(block)
    script = _asset("report.js")
    cost = read_cost(log)
    page = env.get_template("report.html.j2").render(
        run=log,
        status=_run_status(log),
        facts=_facts(log, cost),
        cost=cost,
        node_costs={row.name: row.cost for row in cost.nodes},
        graph_svg=_graph_svg(log),
        timeline=build_timeline(log),
        zoomed=_zoomed(log),
        open_all=len(log.nodes) <= OPEN_NODES,
        nodes=log.nodes,
        node_status=lambda node: node_status(node, log.status),
        failed=[n for n in log.nodes if node_status(n, log.status) == "failed"],
        stopped=[n for n in log.nodes if node_status(n, log.status) in ("interrupted", "running")],
        attachment=attachments.view,
        attachments=attachments,
        css=_asset("report.css"),
        script=script,
        script_hash="sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode(),
        version=__version__,
        generated=datetime.now(tz=UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )
    return clean_text(page)


def _asset(name: str) -> str:
    return resources.files("devall_cli.report").joinpath("templates", name).read_text("utf-8")


def node_status(node: NodeView, run_status: str) -> str:
    """A node's status as shown: one still running when the run ended was interrupted."""
    if node.status in _FINAL:
        return "not_run" if node.status == "pending" else node.status
    return "interrupted" if run_status in ("interrupted", "budget") else "running"


def _run_status(log: RunLog) -> str:
    return log.status if log.status in ("ok", "failed", "interrupted", "budget") else "running"


def _facts(log: RunLog, cost: CostView) -> list[tuple[str, str]]:
    totals = log.result.get("totals") if isinstance(log.result.get("totals"), dict) else {}
    assert isinstance(totals, dict)
    tokens = totals.get("tokens")
    facts = [("run", log.run_id)]
    if log.started_at:
        facts.append(("started", log.started_at.replace("T", " ")))
    if log.duration_ms is not None:
        facts.append(("duration", _duration(log.duration_ms)))
    if log.exit_code is not None:
        facts.append(("exit code", str(log.exit_code)))
    model_calls = totals.get("model_calls", sum(n.model_calls for n in log.nodes))
    facts.append(("model calls", str(model_calls)))
    calls = str(totals.get("tool_calls", sum(n.tool_calls for n in log.nodes)))
    failed = totals.get("tool_errors")
    if isinstance(failed, int) and not isinstance(failed, bool) and failed > 0:
        calls += f" ({failed} failed)"
    facts.append(("tool calls", calls))
    if isinstance(tokens, dict):
        facts.append(("tokens", f"{tokens.get('total', 0):,}"))
    if cost.total is not None and not cost.empty:
        facts.append(("cost", cost.total.cost))
    return facts


def _zoomed(log: RunLog) -> tuple[Timeline, str] | None:
    """The timeline of the nodes alone, when they took a small part of the run (servers
    starting and stopping took the rest)."""
    span = node_span(log)
    total = log.end_ts - log.start_ts
    if span is None or not log.start_ts or total <= 0:
        return None
    if span[1] - span[0] > ZOOM_BELOW * total:
        return None
    note = f"the nodes ran for {seconds_text(span[1] - span[0])} of {seconds_text(total)}"
    return build_timeline(log, span), note


def _graph_svg(log: RunLog) -> str:
    """The graph drawn with the run's outcome, or "" when the events hold no graph."""
    if log.shape is None:
        return ""
    states: dict[str, NodeState] = {}
    # Looked up once per node: a run of thousands of nodes must not scan them all for each.
    by_path: dict[str, NodeView] = {}
    units_of: dict[str, list[NodeView]] = {}
    for node in log.nodes:
        by_path.setdefault(node.path, node)
        if node.declared != node.path:
            units_of.setdefault(node.declared, []).append(node)
    for path, _ in walk(log.shape):
        own = by_path.get(path)
        units = units_of.get(path, [])
        shown = [node_status(n, log.status) for n in ([own] if own else []) + units]
        status = next(
            (s for s in ("failed", "interrupted", "running", "ok", "skipped") if s in shown),
            "not_run",
        )
        visits = len([v for v in own.visits if v.visit]) if own else 0
        anchor = own.anchor if own else (units[0].anchor if units else "")
        states[path] = NodeState(status, visits=visits, units=len(units), anchor=anchor)
    return render_svg(layout(log.shape), marks=RunMarks(states, log.fired), prefix="rg")


def _attachment_blocks(log: RunLog) -> Iterator[dict[str, Any]]:
    """Every attachment, in the order the run made them; then those only result.json lists."""
    for node in sorted(log.nodes, key=lambda n: min((v.started for v in n.visits), default=0)):
        for visit in node.visits:
            for step in visit.steps:
                if step.call is not None:
                    yield from (b for b in step.call.blocks if b.get("type") == "attachment")
    for record in log.result.get("attachments") or ():
        if isinstance(record, dict):
            yield record


# --- filters ---------------------------------------------------------------------------------


def _duration(ms: Any) -> str:
    return seconds_text(float(ms) / 1000) if isinstance(ms, int | float) else ""


def _clip(value: Any, limit: int = TEXT_LIMIT) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= limit:
        return text
    rest = len(text) - limit
    return f"{text[:limit]}\n… ({rest:,} more characters: the whole text is in the run directory)"


def _pretty(value: Any) -> str:
    return _clip(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def _size(size: Any) -> str:
    if not isinstance(size, int):
        return "size unknown"
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


def _shown(text: Any) -> str:
    return visible(text if isinstance(text, str) else str(text), multiline=True)


def _at(log: RunLog) -> Any:
    def at(ts: float | None) -> str:
        return f"+{seconds_text(max(ts - log.start_ts, 0.0))}" if ts and log.start_ts else ""

    return at
