"""`tools list` output of large surfaces: the plain table draws what Rich draws, and the JSON
writer writes what json.dumps writes after masking."""

from __future__ import annotations

import io
import json
import re

import pytest
from rich.console import Console
from rich.padding import Padding

from devall_cli.cli.listing_json import masked_json
from devall_cli.cli.plain_table import Column, PlainTable, rich_table, table_of
from devall_cli.redaction import Redactor

ANSI = re.compile(r"\x1b\[[0-9;]*m")
WORDS = ["a", "find", "the_notes", "x" * 45, "tab\u00a0le", "…", "k=v", "mid-word,"]
# Cells of every shape the wrapping meets: empty, blank, short, long words, runs of spaces.
ROWS = [
    [
        f"tool_{i}" + "_long" * (i % 4),
        ", ".join(WORDS[: i % 5]),
        (" " * (i % 3)).join(WORDS[i % len(WORDS) :] * (i % 6)) + " " * (i % 2),
    ]
    for i in range(24)
]
COLUMNS = [Column("tool", 22), Column("parameters", 24), Column("description", None, 20)]


def render(renderable: object, width: int, color: bool) -> str:
    out = io.StringIO()
    console = Console(
        file=out, width=width, force_terminal=color, color_system="truecolor" if color else None
    )
    console.print(renderable, soft_wrap=True)
    return out.getvalue()


@pytest.mark.parametrize("width", [12, 40, 64, 80, 120, 160, 300])
def test_the_plain_table_draws_the_rich_table_at_every_width(width: int) -> None:
    for color in (False, True):
        rich = render(Padding(rich_table(COLUMNS, ROWS), (0, 0, 0, 2), expand=False), width, color)
        plain = render(PlainTable(COLUMNS, ROWS, 2), width, color)
        if color:  # the same text and header style; escapes may be split differently
            assert "\x1b[1m" in plain
            rich, plain = ANSI.sub("", rich), ANSI.sub("", plain)
        assert plain == rich


def test_cells_of_wide_characters_are_left_to_rich() -> None:
    assert isinstance(table_of(COLUMNS, ROWS, 2), PlainTable)
    wide = [["名前", "", "説明"]]
    assert not isinstance(table_of(COLUMNS, wide, 2), PlainTable)


def test_masked_json_writes_what_json_dumps_writes_after_masking() -> None:
    document = [
        {"name": "t", "nested": {"empty": {}, "list": [], "deep": [[1, 2.5], {"k": None}]}},
        {"url": "https://user:hunter22@host/x?token=abc1234&x=1", "s": "uses sekrit-value-1"},
        {"flags": [True, False], "big": 10**30, "nan": float("nan"), "inf": float("-inf")},
        {"text": 'é\u2028"\\\x7f', 1: "int key", None: "null key"},
        ("a", "tuple"),
    ]
    for redactor in (Redactor([]), Redactor(["sekrit-value-1"])):
        expected = json.dumps(redactor.value(document), indent=2, ensure_ascii=False, default=str)
        assert masked_json(document, redactor) == expected
    assert "hunter22" not in masked_json(document, Redactor([]))
