"""The cost part of a report: tokens and cost per node, per model and in total, and the budget
that stopped the run. Read from result.json's `cost` objects (the events hold no prices); a run
without result.json shows its tokens only."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from devall_cli.config.cost import CostTotals, budget_text, usd_text
from devall_cli.report.model import RunLog
from devall_cli.text import finite_number


@dataclass(frozen=True)
class CostRow:
    """One line of the cost tables: a node, a model, or the total."""

    name: str
    calls: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    reasoning_tokens: int
    cost: str  # `$0.0123`, or `no price`
    source: str = ""


@dataclass
class CostView:
    """What the report's cost section shows."""

    total: CostRow | None = None
    nodes: list[CostRow] = field(default_factory=list)
    models: list[CostRow] = field(default_factory=list)
    budget: str = ""  # the budget that stopped the run, in words (none: "")
    builtin: bool = False  # a built-in (approximate) price was used

    @property
    def empty(self) -> bool:
        """Whether no model was called (nothing to show)."""
        return self.total is None or self.total.calls == 0


def _row(name: str, calls: int, record: Any) -> CostRow:
    totals = CostTotals.from_record(record)
    return CostRow(
        name=name,
        calls=calls,
        input_tokens=totals.input_tokens,
        output_tokens=totals.output_tokens,
        cached_tokens=totals.cached_tokens,
        reasoning_tokens=totals.reasoning_tokens,
        cost=usd_text(totals.cost_usd),
        source=", ".join(totals.sources),
    )


def _calls(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _budget(record: Any) -> str:
    if not isinstance(record, dict):
        return ""
    limit = finite_number(record.get("limit"))
    spent = finite_number(record.get("spent"))
    if limit is None or spent is None:
        return ""
    text = budget_text(str(record.get("kind")), limit, spent)
    return text + (" (the batch's budget)" if record.get("scope") == "batch" else "")


def read_cost(log: RunLog) -> CostView:
    """The cost view of a run, from its result.json (an empty view without one)."""
    view = CostView()
    result = log.result
    view.budget = _budget(result.get("budget"))
    recorded = result.get("cost")
    if not isinstance(recorded, dict):
        return view
    calls = {node.path: node.model_calls for node in log.nodes}
    for record in result.get("nodes") or ():
        if isinstance(record, dict) and isinstance(record.get("id"), str):
            count = calls.get(record["id"], _calls(record.get("model_calls")))
            if count:
                view.nodes.append(_row(record["id"], count, record.get("cost")))
    models = recorded.get("models")
    for name, record in (models.items() if isinstance(models, dict) else ()):
        if isinstance(record, dict):
            view.models.append(_row(str(name), _calls(record.get("calls")), record))
    view.total = _row("total", sum(row.calls for row in view.models), recorded)
    view.builtin = any(row.source.startswith("builtin") for row in view.models)
    return view

