"""The cost ledger of a run, as its summary keeps it: each model call's tokens, priced by the
run's price table, summed per node (by the recorder), per model (here) and for the run."""

from __future__ import annotations

from devall_cli.config.cost import CostTotals, TokenUse
from devall_cli.config.pricing import PriceTable
from devall_cli.events import ModelReplyEvent

UNKNOWN_MODEL = "(unknown)"  # a reply whose event names no model (an older events.jsonl)


class CostRecording:
    """The RunRecorder's ledger (mixed in; `_start_cost` first)."""

    def _start_cost(self, pricing: PriceTable | None) -> None:
        self.pricing = pricing if pricing is not None else PriceTable()
        self._models: dict[str, CostTotals] = {}

    def _priced_call(self, event: ModelReplyEvent) -> CostTotals:
        """The call of one reply, priced; counted for its model."""
        model = event.model or UNKNOWN_MODEL
        entry = self.pricing.lookup(event.model) if event.model else None
        call = CostTotals.of_call(model, TokenUse.of(event.usage), entry)
        self._models[model] = self._models.get(model, CostTotals()) + call
        return call

    def _cost_models(self) -> tuple[tuple[str, CostTotals], ...]:
        return tuple(self._models.items())
