"""What the console trace shows of a run's cost: the summary table's cost column, a line per
model under it, and the last line of a run its budget stopped."""

from __future__ import annotations

from rich.text import Text

from devall_cli.config.cost import CostTotals, usd_text
from devall_cli.trace.recorder import RunResult


def cost_cell(totals: CostTotals) -> Text:
    """`$0.0123`, `no price` (a call of a model without a price), or nothing (no model call)."""
    if not totals.calls:
        return Text("")
    if not totals.priced:
        return Text("no price", style="dim")
    return Text(usd_text(totals.cost_usd))


def model_lines(result: RunResult) -> list[str]:
    """One line per model that reported tokens or has a price: its calls, tokens and cost."""
    lines = []
    for model, totals in result.models:
        if not totals.total_tokens and not totals.priced:
            continue  # a scripted turn without `usage` and without a price: nothing to say
        tokens = f"{totals.input_tokens:,} in / {totals.output_tokens:,} out tokens"
        parts = [
            f"{totals.cached_tokens:,} cached" if totals.cached_tokens else "",
            f"{totals.reasoning_tokens:,} reasoning" if totals.reasoning_tokens else "",
        ]
        extra = ", ".join(part for part in parts if part)
        if extra:
            tokens += f" ({extra})"
        source = f" ({', '.join(totals.sources)})" if totals.sources else ""
        calls = f"{totals.calls} call" + ("" if totals.calls == 1 else "s")
        lines.append(f"model {model}: {calls}, {tokens}, {usd_text(totals.cost_usd)}{source}")
    return lines


def budget_line(took: str, exit_code: int, error: str | None) -> str:
    """The run's last line when its budget stopped it."""
    return f"■ run stopped at its budget after {took} (exit {exit_code}): {error}"
