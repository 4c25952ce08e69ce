"""Prices and what calls cost: lookup (exact name, glob, layers), the arithmetic, the budget
meter, and each provider's usage read into one meaning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devall_cli.config.cost import CostTotals, TokenUse, call_cost, usd_text
from devall_cli.config.pricing import (
    BUILTIN_SOURCE,
    FILE_SOURCE,
    WORKFLOW_SOURCE,
    Price,
    PriceEntry,
    load_pricing_file,
    price_table,
)
from devall_cli.engine.budget import BudgetLimits, BudgetMeter
from devall_cli.errors import BudgetError, ConfigError
from devall_cli.providers.anthropic_messages import parse_answer as anthropic_answer
from devall_cli.providers.gemini_messages import parse_answer as gemini_answer
from devall_cli.providers.openai import parse_completion


def row(pattern: str, price: float, source: str = WORKFLOW_SOURCE) -> PriceEntry:
    return PriceEntry(pattern, Price(input=price, output=price), source)


def test_lookup_takes_the_strongest_layer_then_the_exact_name_then_the_longest_glob() -> None:
    workflow = [row("gpt-*", 1), row("gpt-4o-*", 2), row("gpt-4o-mini", 3), row("gpt-4o-m*", 4)]
    table = price_table(workflow, [row("o3", 9, FILE_SOURCE)])
    assert table.lookup("gpt-4o-mini").price.input == 3  # type: ignore[union-attr]
    assert table.lookup("gpt-4o-mini-2024").price.input == 4  # type: ignore[union-attr]
    assert table.lookup("gpt-5").price.input == 1  # type: ignore[union-attr]
    # The file's layer beats the workflow's and the built-in prices.
    assert table.lookup("o3") == row("o3", 9, FILE_SOURCE)
    # Models no layer above knows fall to the built-in table, dated snapshots included.
    builtin = price_table().lookup("gpt-4o-2024-08-06")
    assert builtin is not None and builtin.source == BUILTIN_SOURCE
    assert builtin.price == price_table().lookup("gpt-4o").price  # type: ignore[union-attr]
    assert price_table().lookup("gpt-4o-mini") != builtin
    assert price_table().lookup("my-local-llama") is None


def test_the_cost_of_a_call_and_of_a_sum_that_is_not_all_priced() -> None:
    use = TokenUse.of({"prompt_tokens": 1000, "completion_tokens": 200, "cached_tokens": 400})
    price = Price(input=2, output=8, cached_input=0.5)
    assert call_cost(use, price) == pytest.approx((600 * 2 + 400 * 0.5 + 200 * 8) / 1e6)
    assert call_cost(use, Price(input=2, output=8)) == pytest.approx((1000 * 2 + 200 * 8) / 1e6)
    priced = CostTotals.of_call("a", use, PriceEntry("a", price, WORKFLOW_SOURCE))
    both = priced + CostTotals.of_call("b", use, None)
    assert priced.cost_usd == 0.003 and priced.record()["price_source"] == "workflow"
    assert both.cost_usd is None and both.unpriced_models == ("b",)
    assert (both.input_tokens, both.output_tokens, both.calls) == (2000, 400, 2)
    assert CostTotals.from_record(priced.record()).cost_usd == 0.003
    assert [usd_text(x) for x in (0.0123, 0.0, 0.0000042, None)] == [
        "$0.0123",
        "$0.0000",
        "$0.0000042",
        "no price",
    ]


def test_the_meter_allows_exactly_n_calls_and_stops_on_cost_once_reached() -> None:
    calls = BudgetMeter(BudgetLimits(max_model_calls=2))
    calls.before_call("m", None)
    calls.before_call("m", None)
    with pytest.raises(BudgetError) as stopped:
        calls.before_call("m", None)
    assert stopped.value.record() == {"kind": "model_calls", "limit": 2, "spent": 2, "scope": "run"}
    entry = PriceEntry("m", Price(input=1_000_000, output=0), WORKFLOW_SOURCE)  # $1 a token
    cost = BudgetMeter(BudgetLimits(max_cost=2.5), scope="batch")
    for _ in range(3):  # $0, $1, $2 spent before each: under the limit, the call is made
        cost.before_call("m", entry)
        cost.after_call(TokenUse(input_tokens=1, total_tokens=1), entry)
    with pytest.raises(BudgetError, match=r"the batch's budget reached: --max-cost \$2.5000"):
        cost.before_call("m", entry)
    with pytest.raises(ConfigError, match="model 'free' has no price"):
        BudgetMeter(BudgetLimits(max_cost=1)).before_call("free", None)


def test_a_pricing_file_may_hold_the_table_or_a_pricing_key(tmp_path: Path) -> None:
    plain = tmp_path / "prices.json"
    plain.write_text('{"acme-*": {"input": 1, "output": 2, "cached_input": 0.1}}')
    keyed = tmp_path / "prices.yaml"
    keyed.write_text("pricing:\n  acme-*: {input: 1, output: 2, cached_input: 0.1}\n")
    expected = (PriceEntry("acme-*", Price(1, 2, 0.1), FILE_SOURCE),)
    assert load_pricing_file(plain) == load_pricing_file(keyed) == expected
    keyed.write_text("pricing:\n  acme-*: {input: -1, output: 2}\n")
    with pytest.raises(ConfigError) as bad:
        load_pricing_file(keyed)
    assert bad.value.issues[0].line == 2 and "at least 0" in bad.value.message


def test_each_provider_reports_cached_and_reasoning_tokens_inside_prompt_and_answer() -> None:
    url = "http://127.0.0.1:1/v1"
    body = {
        "choices": [{"message": {"role": "assistant", "content": "hi"}}],
        "usage": {
            "prompt_tokens": 100,
            "completion_tokens": 30,
            "total_tokens": 130,
            "prompt_tokens_details": {"cached_tokens": 60},
            "completion_tokens_details": {"reasoning_tokens": 20},
        },
    }
    openai = parse_completion(json.dumps(body).encode(), url)
    assert (openai.usage.cached_tokens, openai.usage.reasoning_tokens) == (60, 20)
    claude = anthropic_answer(
        {
            "content": [{"type": "text", "text": "hi"}],
            "usage": {
                "input_tokens": 10,
                "output_tokens": 5,
                "cache_read_input_tokens": 70,
                "cache_creation_input_tokens": 20,
            },
        },
        url,
        lambda: "call_1",
    )
    assert (claude.usage.prompt_tokens, claude.usage.cached_tokens) == (100, 70)
    gemini = gemini_answer(
        {
            "candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}],
            "usageMetadata": {
                "promptTokenCount": 100,
                "candidatesTokenCount": 10,
                "thoughtsTokenCount": 25,
                "cachedContentTokenCount": 40,
                "totalTokenCount": 135,
            },
        },
        url,
        lambda: "call_1",
    )
    usage = gemini.usage
    assert (usage.completion_tokens, usage.reasoning_tokens, usage.cached_tokens) == (35, 25, 40)


def test_docs_cost_md_shows_the_built_in_table_and_its_date() -> None:
    from devall_cli.config.pricing import BUILTIN_PRICES, PRICES_DATE
    from tests.conftest import REPO_ROOT

    page = (REPO_ROOT / "docs" / "cost.md").read_text(encoding="utf-8")
    assert f"**{PRICES_DATE}**" in page
    for entry in BUILTIN_PRICES:
        if entry.pattern.startswith(("gpt-", "o3-", "o4-")) and entry.pattern.endswith("-20*"):
            continue  # the dated snapshots of OpenAI's names, described in a sentence
        p = entry.price
        cells = f"| `{entry.pattern}` | {p.input:g} | {p.cached_input:g} | {p.output:g} |"
        assert cells in page, cells
