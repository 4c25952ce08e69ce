"""Prices of models: the built-in table, the workflow's `pricing:` block and `--pricing FILE`.

A price is in USD per million tokens: `input`, `output` and, optionally, `cached_input` (the
prompt tokens the provider read from its cache; without it they cost `input`). A table maps
model names or glob patterns (`gpt-4o-20*`, fnmatch rules, case-sensitive) to prices. A lookup
asks the layers in turn - `--pricing FILE`, then the workflow's `pricing:`, then the built-in
table - and takes the first one that knows the model: its entry of that exact name, else its
longest matching pattern (the most specific one), else its first.

The built-in prices are approximate list prices (standard tier, prompts under 200k tokens, no
batch discount) as the providers published them on `PRICES_DATE`. A model none of the layers
knows has no price: its tokens are counted, its cost is unknown and shown as such.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import Checker, KeySpec, check_keys, get_mapping, opt_number
from devall_cli.config.yaml_source import KeyPath, key_text, parse_source
from devall_cli.errors import ConfigError, ConfigIssue

PRICES_DATE = "2026-03-21"  # when the built-in prices were gathered (approximate list prices)
BUILTIN_SOURCE = f"builtin {PRICES_DATE}"
WORKFLOW_SOURCE = "workflow"
FILE_SOURCE = "file"
PRICING_FILE_BYTES = 1024 * 1024
PER_TOKENS = 1_000_000  # prices are per million tokens
PRICE_KEYS = KeySpec(known=frozenset({"input", "output", "cached_input"}))


@dataclass(frozen=True)
class Price:
    """USD per million tokens of prompt, of answer, and of prompt read from the cache."""

    input: float
    output: float
    cached_input: float | None = None  # None: cached prompt tokens cost `input`


@dataclass(frozen=True)
class PriceEntry:
    """One row of a price table: a model name or glob, its price, and where it comes from."""

    pattern: str
    price: Price
    source: str  # builtin <date> | workflow | file

    @property
    def exact(self) -> bool:
        """Whether the pattern is a plain name (no `*`, `?` or `[`)."""
        return not any(char in self.pattern for char in "*?[")

    def matches(self, model: str) -> bool:
        """Whether this row prices `model`."""
        return model == self.pattern if self.exact else fnmatch.fnmatchcase(model, self.pattern)


# (name or pattern, input, cached input, output), USD per million tokens, on PRICES_DATE.
_OPENAI = (
    ("gpt-5", 1.25, 0.125, 10.0),
    ("gpt-5-mini", 0.25, 0.025, 2.0),
    ("gpt-5-nano", 0.05, 0.005, 0.40),
    ("gpt-4.1", 2.0, 0.50, 8.0),
    ("gpt-4.1-mini", 0.40, 0.10, 1.60),
    ("gpt-4.1-nano", 0.10, 0.025, 0.40),
    ("gpt-4o", 2.50, 1.25, 10.0),
    ("gpt-4o-mini", 0.15, 0.075, 0.60),
    ("o3", 2.0, 0.50, 8.0),
    ("o4-mini", 1.10, 0.275, 4.40),
)
_ANTHROPIC = (
    ("claude-opus-4-5*", 5.0, 0.50, 25.0),
    ("claude-opus-4-1*", 15.0, 1.50, 75.0),
    ("claude-opus-4-0", 15.0, 1.50, 75.0),
    ("claude-opus-4-20*", 15.0, 1.50, 75.0),
    ("claude-sonnet-4-5*", 3.0, 0.30, 15.0),
    ("claude-sonnet-4-0", 3.0, 0.30, 15.0),
    ("claude-sonnet-4-20*", 3.0, 0.30, 15.0),
    ("claude-haiku-4-5*", 1.0, 0.10, 5.0),
    ("claude-3-5-haiku*", 0.80, 0.08, 4.0),
)
_GEMINI = (
    ("gemini-2.5-pro", 1.25, 0.125, 10.0),
    ("gemini-2.5-flash", 0.30, 0.03, 2.50),
    ("gemini-2.5-flash-lite", 0.10, 0.01, 0.40),
    ("gemini-2.0-flash", 0.10, 0.025, 0.40),
)


def _builtin() -> tuple[PriceEntry, ...]:
    rows = [*_OPENAI, *_ANTHROPIC, *_GEMINI]
    # OpenAI's dated snapshots (`gpt-4o-2024-08-06`) cost what their alias costs.
    rows += [(f"{name}-20*", i, c, o) for name, i, c, o in _OPENAI]
    return tuple(
        PriceEntry(name, Price(input=i, output=o, cached_input=c), BUILTIN_SOURCE)
        for name, i, c, o in rows
    )


BUILTIN_PRICES = _builtin()


@dataclass(frozen=True)
class PriceTable:
    """The layers of prices a run uses, the strongest first."""

    layers: tuple[tuple[PriceEntry, ...], ...] = (BUILTIN_PRICES,)
    # Every model reply is priced: the table is scanned once per model name, not per reply.
    _found: dict[str, PriceEntry | None] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def lookup(self, model: str) -> PriceEntry | None:
        """The price of `model`, or None when no layer knows it."""
        if model not in self._found:
            self._found[model] = self._look_up(model)
        return self._found[model]

    def _look_up(self, model: str) -> PriceEntry | None:
        for layer in self.layers:
            found = best_match(layer, model)
            if found is not None:
                return found
        return None


def price_table(
    workflow: Sequence[PriceEntry] = (), file: Sequence[PriceEntry] = ()
) -> PriceTable:
    """`--pricing FILE` over the workflow's `pricing:` over the built-in prices."""
    return PriceTable((tuple(file), tuple(workflow), BUILTIN_PRICES))


def best_match(entries: Sequence[PriceEntry], model: str) -> PriceEntry | None:
    """The exact row for `model`, else the longest matching pattern (the first of equals)."""
    matching = [entry for entry in entries if entry.matches(model)]
    exact = [entry for entry in matching if entry.exact]
    if exact:
        return exact[0]
    return max(matching, key=lambda entry: len(entry.pattern), default=None)


# --- reading a table -------------------------------------------------------------------------


def parse_pricing(
    ck: Checker, raw: Any, path: KeyPath, source: str = WORKFLOW_SOURCE
) -> tuple[PriceEntry, ...]:
    """`{MODEL_OR_GLOB: {input, output, cached_input}}`, USD per million tokens."""
    if raw is None or raw is UNRESOLVED:
        return ()
    table = get_mapping(ck, raw, path, "pricing")
    if table is None:
        return ()
    entries = [_entry(ck, key, value, path, source) for key, value in table.items()]
    return tuple(entry for entry in entries if entry is not None)


def _entry(ck: Checker, key: Any, value: Any, path: KeyPath, source: str) -> PriceEntry | None:
    name = key_text(key).strip()
    here = (*path, key_text(key))
    if not name:
        ck.error(here, "a model name or pattern must not be empty", at_key=True)
        return None
    if value is None or value is UNRESOLVED:  # null: as if the row were absent
        return None
    mapping = get_mapping(ck, value, here, f"the price of '{name}'")
    if mapping is None:
        return None
    with ck.strict_keys():  # a misspelt key must not leave a price out unnoticed
        check_keys(ck, mapping, here, PRICE_KEYS)
    missing = [key for key in ("input", "output") if mapping.get(key) is None]
    if missing:
        ck.error(
            here,
            f"the price of '{name}' needs {' and '.join(missing)} "
            "(USD per million tokens): a price left out would be a made-up number",
        )
        return None
    errors = ck.error_count
    price = Price(
        input=opt_number(ck, mapping, "input", here, 0.0, minimum=0),
        output=opt_number(ck, mapping, "output", here, 0.0, minimum=0),
        cached_input=(
            opt_number(ck, mapping, "cached_input", here, 0.0, minimum=0)
            if mapping.get("cached_input") is not None
            else None
        ),
    )
    return PriceEntry(name, price, source) if ck.error_count == errors else None


def load_pricing_file(path: Path) -> tuple[PriceEntry, ...]:
    """The table of `--pricing FILE` (YAML or JSON, the shape of `pricing:`, or a file whose
    one top-level key is `pricing`); ConfigError with every located issue (exit 3)."""
    display = str(path)
    doc = parse_source(Path(path), display, what="pricing file", max_bytes=PRICING_FILE_BYTES)
    if doc.data is None:
        raise ConfigError.from_issues([ConfigIssue("the pricing file is empty", file=display)])
    ck = Checker(doc, workflow_dir=Path(path).parent)
    data: Any = doc.data
    where: KeyPath = ()
    if isinstance(data, dict) and [key_text(key) for key in data] == ["pricing"]:
        data, where = data["pricing"], ("pricing",)
    entries = parse_pricing(ck, data, where, FILE_SOURCE)
    if ck.error_count:
        raise ConfigError.from_issues(ck.issues)
    return entries
