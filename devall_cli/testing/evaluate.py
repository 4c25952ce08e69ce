"""Check a case's expectations against its run: the recorder's RunResult and the events it saw.

One function per expectation kind; each answers with a Verdict whose `actual` is what the run
did (the answer, the node's visits, the tool's calls, the budget used). The judge is graded
elsewhere (`judge.py`): it asks a model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from devall_cli.config.cost import usd_text
from devall_cli.events import EdgeEvent, Event, ToolCallEvent
from devall_cli.testing.checks import (
    Verdict,
    args_match,
    args_match_patterns,
    check_text,
    shown_text,
)
from devall_cli.testing.model import (
    BudgetConfig,
    EdgeConfig,
    ExpectConfig,
    NodeConfig,
    TextConfig,
    ToolConfig,
)
from devall_cli.trace.recorder import RunResult


class EventLog:
    """An event sink keeping the events expectations look at (tool calls, edges)."""

    KINDS = frozenset({"tool.call", "edge"})

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        """Keep `event` if an expectation may ask about it."""
        if event.kind in self.KINDS:
            self.events.append(event)


@dataclass(frozen=True)
class RunView:
    """What a finished run shows the expectations."""

    result: RunResult
    events: Sequence[Event] = field(default_factory=tuple)

    @property
    def tool_calls(self) -> list[ToolCallEvent]:
        """Every tool call, in the order they were made."""
        return [e for e in self.events if isinstance(e, ToolCallEvent)]

    @property
    def edges(self) -> list[EdgeEvent]:
        """Every time an edge looked at a message."""
        return [e for e in self.events if isinstance(e, EdgeEvent)]


def check(expect: ExpectConfig, run: RunView) -> Verdict:
    """The verdict on one expectation (not a judge)."""
    return CHECKS[expect.kind](expect.settings, run)


def check_output(config: TextConfig, run: RunView) -> Verdict:
    """The final answer."""
    output = run.result.output if run.result.status == "ok" else None
    return check_text(config, output, "the final answer")


def check_error(config: TextConfig, run: RunView) -> Verdict:
    """The run's error (with `expect_exit`: a run expected to fail, failing for this reason)."""
    return check_text(config, run.result.error, "the run's error")


def check_node(config: NodeConfig, run: RunView) -> Verdict:
    """A node's visits, status and output."""
    record = next((n for n in run.result.nodes if n.node_id == config.id), None)
    visits = record.visits if record is not None else ()
    output = record.output if record is not None else None
    if config.visit is not None:
        chosen = next((v for v in visits if v.visit == config.visit), None)
        output = chosen.outputs[-1] if chosen is not None and chosen.outputs else None
    status = record.status if record is not None else "pending"
    actual = {"visits": len(visits), "status": status, "output": _shown(output)}
    name = f"node {config.id}"
    if config.visited is True and not visits:
        return Verdict(False, f"{name} was not visited", actual)
    if config.visited is False and visits:
        return Verdict(False, f"{name} was visited {_times(len(visits))}, expected never", actual)
    if config.visits is not None and len(visits) != config.visits:
        message = f"{name} was visited {_times(len(visits))}, expected {_times(config.visits)}"
        return Verdict(False, message, actual)
    if config.status is not None and status != config.status:
        return Verdict(False, f"{name} ended {status}, expected {config.status}", actual)
    if config.output is not None:
        which = f"the output of {name}" + (f" (visit {config.visit})" if config.visit else "")
        verdict = check_text(config.output, output, which)
        if not verdict.passed:
            return Verdict(False, verdict.message, actual)
    return Verdict(True, "", actual)


def check_tool(config: ToolConfig, run: RunView) -> Verdict:
    """How many calls of a tool (with matching arguments, by a node) the run made."""
    calls = [
        call
        for call in run.tool_calls
        if config.name in (call.tool, call.original_name)
        and (config.node is None or call.node_id == config.node)
    ]
    matching = [call for call in calls if _arguments_match(config, call)]
    actual = [{"node": c.node_id, "arguments": _plain(c.arguments)} for c in calls]
    count = len(matching)
    name = f"tool {config.name}" + (f" (by node {config.node})" if config.node else "")
    which = _which(config)
    if not config.called:
        if count:
            message = f"{name} was called {_times(count)}{which}, expected never"
            return Verdict(False, message, actual)
        return Verdict(True, "", actual)
    expected = _expected_count(config, count)
    if expected is not None:
        seen = _calls_seen(calls) if which else ""
        message = f"{name} was called {_times(count)}{which}, expected {expected}{seen}"
        return Verdict(False, message, actual)
    return Verdict(True, "", actual)


def _arguments_match(config: ToolConfig, call: ToolCallEvent) -> bool:
    if config.args is not None and not args_match(config.args, call.arguments):
        return False
    return args_match_patterns(config.args_regex, call.arguments)


def _which(config: ToolConfig) -> str:
    parts = []
    if config.args is not None:
        parts.append(f"arguments {json.dumps(config.args, ensure_ascii=False, sort_keys=True)}")
    if config.args_regex:
        patterns = json.dumps(dict(config.args_regex), ensure_ascii=False)
        parts.append(f"arguments matching {patterns}")
    return f" with {' and '.join(parts)}" if parts else ""


def _expected_count(config: ToolConfig, count: int) -> str | None:
    """What the count should have been, or None when it is right."""
    if config.times is not None and count != config.times:
        return _times(config.times)
    if config.min_times is not None and count < config.min_times:
        return f"at least {_times(config.min_times)}"
    if config.max_times is not None and count > config.max_times:
        return f"at most {_times(config.max_times)}"
    if config.times is None and config.min_times is None and count == 0:
        return "at least once"
    return None


def _calls_seen(calls: Sequence[ToolCallEvent]) -> str:
    if not calls:
        return ""
    shown = "; ".join(json.dumps(_plain(c.arguments), ensure_ascii=False) for c in calls[:3])
    more = f"; and {len(calls) - 3} more" if len(calls) > 3 else ""
    return f" (its calls: {shown}{more})"


def check_tool_order(names: tuple[str, ...], run: RunView) -> Verdict:
    """The tools were called in this order; other calls may come between."""
    called = [call.tool for call in run.tool_calls]
    originals = [call.original_name or call.tool for call in run.tool_calls]
    position = 0
    for name in names:
        while position < len(called) and name not in (called[position], originals[position]):
            position += 1
        if position == len(called):
            order = ", ".join(called) or "none"
            message = f"the tools were not called in the order {', '.join(names)} (calls: {order})"
            return Verdict(False, message, called)
        position += 1
    return Verdict(True, "", called)


def check_edge(config: EdgeConfig, run: RunView) -> Verdict:
    """How often an edge fired: its condition held and it passed a message on."""
    looked = [e for e in run.edges if e.source == config.source and e.target == config.target]
    fired = sum(1 for e in looked if e.met and (e.delivered or e.triggered))
    actual = {"fired": fired, "looked": len(looked)}
    name = f"edge {config.source} -> {config.target}"
    if not config.fired:
        if fired:
            return Verdict(False, f"{name} fired {_times(fired)}, expected never", actual)
        return Verdict(True, "", actual)
    if config.times is not None and fired != config.times:
        message = f"{name} fired {_times(fired)}, expected {_times(config.times)}"
        return Verdict(False, message, actual)
    if config.times is None and not fired:
        why = "it never looked at a message" if not looked else "its condition never held"
        return Verdict(False, f"{name} never fired ({why})", actual)
    return Verdict(True, "", actual)


def check_budget(config: BudgetConfig, run: RunView) -> Verdict:
    """The run used no more than each limit; `cost` needs a price for every model called."""
    result = run.result
    used: dict[str, Any] = {
        "model_calls": result.model_calls,
        "tool_calls": result.tool_calls,
        "tokens": result.tokens.total,
        "seconds": round(result.duration_ms / 1000, 3),
    }
    limits = {
        "model_calls": config.model_calls,
        "tool_calls": config.tool_calls,
        "tokens": config.tokens,
        "seconds": config.seconds,
    }
    over = [
        f"{key} {used[key]:g} > {limit:g}"
        for key, limit in limits.items()
        if limit is not None and used[key] > limit
    ]
    if config.cost is not None:
        cost = result.cost
        used["cost"] = cost.cost_usd
        if cost.cost_usd is None:
            models = ", ".join(cost.unpriced_models)
            over.append(f"cost: no price for {models} (give one in pricing:, docs/cost.md)")
        elif cost.cost_usd > config.cost:
            over.append(f"cost {usd_text(cost.cost_usd)} > {usd_text(config.cost)}")
    if over:
        return Verdict(False, "over budget: " + "; ".join(over), used)
    return Verdict(True, "", used)


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def _shown(text: str | None) -> str | None:
    return shown_text(text) if text is not None else None


def _plain(value: Any) -> Any:
    """Tool arguments as plain JSON data (read-only mappings as dicts)."""
    return json.loads(json.dumps(value, default=_json_default))


def _json_default(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) else str(value)


CHECKS: dict[str, Callable[[Any, RunView], Verdict]] = {
    "output": check_output,
    "error": check_error,
    "node": check_node,
    "tool": check_tool,
    "tool_order": check_tool_order,
    "edge": check_edge,
    "budget": check_budget,
}
