"""The options about money that run, batch and test share: `--pricing FILE` and the budgets
`--max-cost USD`, `--max-tokens N`, `--max-model-calls N` (docs/cost.md)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from devall_cli.errors import UsageError

if TYPE_CHECKING:
    from devall_cli.config.pricing import PriceEntry
    from devall_cli.engine.budget import BudgetLimits, BudgetMeter
    from devall_cli.errors import BudgetError

PricingOption = Annotated[
    Path | None,
    typer.Option(
        "--pricing",
        metavar="FILE",
        help="Prices of models, over the workflow's pricing: and the built-in ones (YAML or "
        "JSON: {MODEL_OR_GLOB: {input, output, cached_input}}, USD per million tokens).",
    ),
]
MaxCostOption = Annotated[
    float | None,
    typer.Option(
        "--max-cost",
        metavar="USD",
        min=0,
        help="Stop before the next model call once the calls cost USD (exit 8); every model "
        "called needs a price.",
    ),
]
MaxTokensOption = Annotated[
    int | None,
    typer.Option(
        "--max-tokens",
        metavar="N",
        min=0,
        help="Stop before the next model call once the calls used N tokens (exit 8).",
    ),
]
MaxModelCallsOption = Annotated[
    int | None,
    typer.Option(
        "--max-model-calls",
        metavar="N",
        min=0,
        help="Make at most N model calls: the next one stops the run (exit 8).",
    ),
]


def budget_limits(
    max_cost: float | None, max_tokens: int | None, max_model_calls: int | None
) -> BudgetLimits | None:
    """The budget the options give; None when they give none."""
    from devall_cli.engine.budget import BudgetLimits

    if max_cost is not None and not math.isfinite(max_cost):
        raise UsageError(f"--max-cost must be a number of USD, got {max_cost}")
    limits = BudgetLimits(max_cost, max_tokens, max_model_calls)
    return limits if limits.any else None


def budget_meter(limits: BudgetLimits | None, scope: str = "run") -> BudgetMeter | None:
    """A fresh meter for `limits` (None: no budget)."""
    from devall_cli.engine.budget import BudgetMeter

    return BudgetMeter(limits, scope) if limits is not None else None


def read_pricing(path: Path | None) -> tuple[PriceEntry, ...]:
    """The rows of `--pricing FILE` (none without it); ConfigError, located, when it is bad."""
    if path is None:
        return ()
    from devall_cli.config.pricing import load_pricing_file

    return load_pricing_file(path)


def cost_session(
    pricing: Path | None,
    max_cost: float | None,
    max_tokens: int | None,
    max_model_calls: int | None,
) -> dict[str, Any]:
    """What a run session of `devall run` takes from these options (`price_file`, `budget`)."""
    limits = budget_limits(max_cost, max_tokens, max_model_calls)
    return {"price_file": read_pricing(pricing), "budget": budget_meter(limits)}


def cost_line(cost: Any) -> str:
    """`cost $0.0123 (prices: workflow)` of a summary's `cost` object; `cost: no price`."""
    from devall_cli.config.cost import CostTotals, usd_text

    totals = CostTotals.from_record(cost)
    if not totals.priced:
        return "cost: no price (a model without a price was called; see docs/cost.md)"
    source = f" (prices: {', '.join(totals.sources)})" if totals.sources else ""
    return f"cost {usd_text(totals.cost_usd)}{source}"


def batch_budget_error(summary: dict[str, Any], batch_dir: Path) -> BudgetError | None:
    """The error a batch its budget stopped ends with (exit 8); None when it did not."""
    from devall_cli.config.cost import budget_text
    from devall_cli.errors import BudgetError as Stop

    budget = summary.get("budget")
    if summary.get("status") != "budget" or not isinstance(budget, dict):
        return None
    counts = summary["counts"]
    left = counts["not_run"] + counts["budget"]
    said = budget_text(budget["kind"], budget["limit"], budget["spent"])
    return Stop(
        f"the batch's budget reached: {said}; {left} of {counts['total']} tasks did not "
        "finish (the same command again runs them, with a fresh budget); "
        f"see {batch_dir / 'results.jsonl'}",
        kind=budget["kind"],
        limit=budget["limit"],
        spent=budget["spent"],
        scope="batch",
    )
