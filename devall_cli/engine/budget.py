"""Budgets: `--max-cost USD`, `--max-tokens N`, `--max-model-calls N`, held before each model call.

A `BudgetMeter` counts what the runs sharing it spent (one run's, or every task of a batch) and
is asked before every model call, by the provider wrapper the runner puts around each provider:

- model calls are known before a call: the call that would be number N+1 is not made, so a
  budget of N allows exactly N calls (a turn's retries are one call);
- tokens and cost are known only after a call: a call is not made once the spent amount has
  reached the limit, so the last call made may take the total past it (by at most what the
  calls running at that moment spend).

A stop raises BudgetError (exit 8) before the call is sent. `--max-cost` needs a price for every
model called: a call of a model without one is refused (ConfigError, exit 3) before it is sent,
since its cost could not be counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from devall_cli.config.cost import TokenUse, budget_text, call_cost
from devall_cli.config.pricing import PriceEntry
from devall_cli.errors import BudgetError, ConfigError
from devall_cli.providers.base import AssistantMessage, Provider
from devall_cli.tools.base import ToolSpec

COST, TOKENS, MODEL_CALLS = "cost", "tokens", "model_calls"


@dataclass(frozen=True)
class BudgetLimits:
    """The most a run (or a batch) may spend; None: no limit of that kind."""

    max_cost: float | None = None  # USD
    max_tokens: int | None = None  # total tokens (prompt and answer) of the model calls
    max_model_calls: int | None = None

    @property
    def any(self) -> bool:
        """Whether any limit is set."""
        return any(v is not None for v in (self.max_cost, self.max_tokens, self.max_model_calls))


class BudgetMeter:
    """What the runs sharing this meter spent, held against their limits."""

    def __init__(self, limits: BudgetLimits, scope: str = "run") -> None:
        self.limits = limits
        self.scope = scope  # run | batch: whose budget it is, as messages say
        self.calls = 0  # model calls started
        self.tokens = 0
        self.cost_usd = 0.0

    def reached(self) -> BudgetError | None:
        """The error of the first limit reached so far; None while every one has room left."""
        limits = self.limits
        if limits.max_model_calls is not None and self.calls >= limits.max_model_calls:
            return self._stop(MODEL_CALLS, limits.max_model_calls, self.calls)
        if limits.max_tokens is not None and self.tokens >= limits.max_tokens:
            return self._stop(TOKENS, limits.max_tokens, self.tokens)
        if limits.max_cost is not None and self.cost_usd >= limits.max_cost:
            return self._stop(COST, limits.max_cost, round(self.cost_usd, 10))
        return None

    def before_call(self, model: str, price: PriceEntry | None) -> None:
        """Count a call about to be made, or raise: BudgetError, or ConfigError (no price)."""
        stop = self.reached()
        if stop is not None:
            raise stop
        if self.limits.max_cost is not None and price is None:
            raise ConfigError(
                f"--max-cost cannot be kept: model '{model}' has no price, so what it costs "
                "cannot be counted",
                details=[
                    f"give '{model}' a price in the workflow's pricing: block or with "
                    "--pricing FILE (docs/cost.md)"
                ],
            )
        self.calls += 1

    def after_call(self, use: TokenUse, price: PriceEntry | None) -> None:
        """Add what a call used."""
        self.tokens += use.total_tokens
        if price is not None:
            self.cost_usd += call_cost(use, price.price)

    def _stop(self, kind: str, limit: float, spent: float) -> BudgetError:
        whose = "the batch's budget" if self.scope == "batch" else "budget"
        said = budget_text(kind, limit, spent)
        message = f"{whose} reached: {said}; stopped before the next model call"
        return BudgetError(message, kind=kind, limit=limit, spent=spent, scope=self.scope)


class MeteredProvider:
    """A provider whose calls are held against a budget meter."""

    def __init__(
        self, inner: Provider, model: str, meter: BudgetMeter, price: PriceEntry | None
    ) -> None:
        self.inner = inner
        self.model = model
        self.meter = meter
        self.price = price

    async def complete(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolSpec]
    ) -> AssistantMessage:
        """The inner provider's turn, if the budget leaves room for it."""
        self.meter.before_call(self.model, self.price)
        reply = await self.inner.complete(messages, tools)
        self.meter.after_call(TokenUse.of(asdict(reply.usage)), self.price)
        return reply

    async def aclose(self) -> None:
        """Close the inner provider."""
        await self.inner.aclose()
