"""What model calls cost: tokens of one call, priced by a price table row, and their sums.

A call's prompt tokens include its cached ones (every provider's usage is read that way, see
docs/cost.md); its answer tokens include its reasoning ones. The cost of a call is

    (prompt - cached) * input + cached * cached_input + answer * output   (per million tokens)

A sum of calls knows its cost only when every call in it had a price: otherwise its cost is
None ("no price"), never the part that was priced passed off as the whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from devall_cli.config.pricing import PER_TOKENS, Price, PriceEntry
from devall_cli.text import finite_number

USD_DIGITS = 10  # the cost is kept to 1e-10 USD: sums of many tiny calls stay exact enough
# The kinds of budget, by the option that sets each.
BUDGET_OPTIONS = {
    "cost": "--max-cost",
    "tokens": "--max-tokens",
    "model_calls": "--max-model-calls",
}


@dataclass(frozen=True)
class TokenUse:
    """The tokens of one model call, as its provider reported them."""

    input_tokens: int = 0  # the whole prompt, cached tokens included
    output_tokens: int = 0  # the whole answer, reasoning tokens included
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    total_tokens: int = 0

    @classmethod
    def of(cls, usage: Mapping[str, Any]) -> TokenUse:
        """From a `model.reply` event's usage (`prompt_tokens`, `completion_tokens`, ...)."""
        prompt, completion = _count(usage, "prompt_tokens"), _count(usage, "completion_tokens")
        return cls(
            input_tokens=prompt,
            output_tokens=completion,
            cached_tokens=min(_count(usage, "cached_tokens"), prompt),
            reasoning_tokens=_count(usage, "reasoning_tokens"),
            total_tokens=_count(usage, "total_tokens") or prompt + completion,
        )


def _count(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def call_cost(use: TokenUse, price: Price) -> float:
    """USD of one call at `price`."""
    cached = min(use.cached_tokens, use.input_tokens)
    cached_rate = price.input if price.cached_input is None else price.cached_input
    fresh = use.input_tokens - cached
    usd = fresh * price.input + cached * cached_rate + use.output_tokens * price.output
    return usd / PER_TOKENS


@dataclass(frozen=True)
class CostTotals:
    """Tokens and cost of some model calls (a node's, a model's, a run's, a batch's)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    total_tokens: int = 0
    priced_usd: float = 0.0  # of the calls that had a price
    unpriced_calls: int = 0
    sources: tuple[str, ...] = ()  # where the prices came from, each once
    unpriced_models: tuple[str, ...] = ()

    @classmethod
    def of_call(cls, model: str, use: TokenUse, entry: PriceEntry | None) -> CostTotals:
        """One call of `model`, priced by `entry` (None: the model has no price)."""
        return cls(
            calls=1,
            input_tokens=use.input_tokens,
            output_tokens=use.output_tokens,
            cached_tokens=use.cached_tokens,
            reasoning_tokens=use.reasoning_tokens,
            total_tokens=use.total_tokens,
            priced_usd=call_cost(use, entry.price) if entry is not None else 0.0,
            unpriced_calls=0 if entry is not None else 1,
            sources=(entry.source,) if entry is not None else (),
            unpriced_models=() if entry is not None else (model,),
        )

    def __add__(self, other: CostTotals) -> CostTotals:
        return CostTotals(
            calls=self.calls + other.calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            priced_usd=self.priced_usd + other.priced_usd,
            unpriced_calls=self.unpriced_calls + other.unpriced_calls,
            sources=_union(self.sources, other.sources),
            unpriced_models=_union(self.unpriced_models, other.unpriced_models),
        )

    @property
    def priced(self) -> bool:
        """Whether every call had a price (no call at all: nothing to price, cost 0)."""
        return self.unpriced_calls == 0

    @property
    def cost_usd(self) -> float | None:
        """The cost in USD, or None when a call had no price."""
        return round(self.priced_usd, USD_DIGITS) if self.priced else None

    def record(self) -> dict[str, Any]:
        """The `cost` object of result.json, results.jsonl and summary.json."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "cost_usd": self.cost_usd,
            "priced": self.priced,
            "price_source": ", ".join(self.sources) or None,
        }

    @classmethod
    def from_record(cls, record: Any) -> CostTotals:
        """A `cost` object read back (results.jsonl of an earlier batch); a line without one
        (an older devall's) has an unknown cost."""
        if not isinstance(record, Mapping):
            return cls(unpriced_calls=1)
        cost = finite_number(record.get("cost_usd"))
        source = record.get("price_source")
        return cls(
            input_tokens=_count(record, "input_tokens"),
            output_tokens=_count(record, "output_tokens"),
            cached_tokens=_count(record, "cached_tokens"),
            reasoning_tokens=_count(record, "reasoning_tokens"),
            priced_usd=cost if cost is not None else 0.0,
            unpriced_calls=0 if cost is not None else 1,
            sources=tuple(s.strip() for s in source.split(",")) if isinstance(source, str) else (),
        )


def _union(first: tuple[str, ...], second: tuple[str, ...]) -> tuple[str, ...]:
    return first + tuple(item for item in second if item not in first)


def usd_text(cost: float | None) -> str:
    """`$0.0123`; a cost below a hundredth of a cent keeps its first digits; None: `no price`."""
    if cost is None:
        return "no price"
    if cost == 0 or cost >= 0.0001:
        return f"${cost:.4f}"
    return f"${cost:.8f}".rstrip("0")


def budget_text(kind: str, limit: float, spent: float) -> str:
    """`--max-cost $0.0500: $0.0612 spent`, `--max-model-calls 5: 5 model calls made`, ..."""
    option = BUDGET_OPTIONS.get(kind, kind)
    if kind == "cost":
        return f"{option} {usd_text(limit)}: {usd_text(spent)} spent"
    if kind == "tokens":
        return f"{option} {limit:g}: {spent:g} tokens spent"
    return f"{option} {limit:g}: {spent:g} model calls made"
