"""A table of plain one-line cells drawn as Rich draws it, at a fraction of the cost per row.

Rich measures, wraps and pads every cell through several renderables, about a millisecond a row:
a server with thousands of tools took seconds to list. `PlainTable` asks Rich only for what does
not grow with the rows (the column widths, from a stand-in table whose last column measures as
all the real cells together, and the box) and lays out the rows itself, line by line, with
Rich's word wrapping. The text is the same as that of `rich.table.Table(box=SIMPLE_HEAD,
show_edge=False, pad_edge=False, padding=(0, 1))` inside `Padding(table, (0, 0, 0, indent))`,
every column of a fixed width but the last (`overflow="fold"`). A table it cannot draw exactly
(a character that is not one cell wide, a column too narrow for its title or for any text) is
left to Rich.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich import box
from rich.cells import get_character_cell_size
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

_WORD = re.compile(r"\s*\S+\s*")  # Rich's word: leading and trailing whitespace included


@dataclass(frozen=True)
class Column:
    """A column: its title, and its width (None for the last one, which takes what is left)."""

    title: str
    width: int | None
    min_width: int | None = None


def table_of(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], indent: int
) -> RenderableType:
    """The table, drawn by PlainTable when it can be drawn exactly, else by Rich."""
    if all(_single_cells(cell) for row in rows for cell in row):
        return PlainTable(columns, rows, indent)
    return Padding(rich_table(columns, rows), (0, 0, 0, indent), expand=False)


def rich_table(columns: Sequence[Column], rows: Iterable[Sequence[str]]) -> Table:
    """The same table as a Rich Table."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1))
    for column in columns:
        table.add_column(
            Text(column.title), width=column.width, min_width=column.min_width, overflow="fold"
        )
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    return table


class PlainTable:
    """The rows of `table_of`, laid out line by line (see the module docstring)."""

    def __init__(self, columns: Sequence[Column], rows: Sequence[Sequence[str]], indent: int):
        self.columns = list(columns)
        self.rows = rows
        self.indent = indent

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        stand_in = self._stand_in()
        # As Padding(expand=False) gives the table its width, and the table its columns.
        outer = Measurement.get(console, options, stand_in).maximum + self.indent
        width = min(outer, options.max_width) - self.indent
        extra = len(self.columns) - 1  # the dividers between the columns
        inner = options.update_width(width - extra)
        widths = stand_in._calculate_column_widths(console, inner)
        last = len(self.columns) - 1
        pads = [(0 if i == 0 else 1, 0 if i == last else 1) for i in range(len(self.columns))]
        content = [w - left - right for w, (left, right) in zip(widths, pads, strict=True)]
        titles = [column.title for column in self.columns]
        if min(content, default=0) < 1 or any(
            len(t) > c for t, c in zip(titles, content, strict=True)
        ):
            whole = rich_table(self.columns, self.rows)
            yield Padding(whole, (0, 0, 0, self.indent), expand=False)
            return
        drawn = box.SIMPLE_HEAD.substitute(options, safe=console.safe_box)
        yield from self._header(console, titles, content, pads, width, drawn.head_vertical)
        margin = " " * self.indent
        yield Segment(margin + drawn.get_row(widths, "head", edge=False).ljust(width)[:width])
        yield Segment.line()
        for number, row in enumerate(self.rows):
            divider = drawn.foot_vertical if number == len(self.rows) - 1 else drawn.mid_vertical
            for line in _row_lines(row, content, pads, divider):
                yield Segment(margin + line.ljust(width)[:width])
                yield Segment.line()

    def _header(
        self,
        console: Console,
        titles: list[str],
        content: list[int],
        pads: list[tuple[int, int]],
        width: int,
        divider: str,
    ) -> Iterable[Segment]:
        style = console.get_style("table.header")
        segments = [Segment(" " * self.indent)]
        room = width  # the line is cut at the table's width, as Rich cuts it
        for index, (title, size, (left, right)) in enumerate(
            zip(titles, content, pads, strict=True)
        ):
            if index:
                segments.append(Segment(divider[:room]))
                room -= len(segments[-1].text)
            cell = (" " * left + title.ljust(size) + " " * right)[:room]
            segments.append(Segment(cell, style))
            room -= len(cell)
        if room > 0:
            segments.append(Segment(" " * room))
        yield from (segment for segment in segments if segment.text)
        yield Segment.line()

    def _stand_in(self) -> Table:
        """A table of the same columns whose one row measures as all the rows together."""
        cells = [row[-1] for row in self.rows]
        longest_word = max((len(w) for cell in cells for w in cell.split()), default=0)
        longest_line = max((len(cell) for cell in cells), default=0)
        # Rich measures a cell by its longest word and its longest line; a cell of only
        # whitespace measures its length both ways.
        longest_word = max(
            [longest_word, *(len(cell) for cell in cells if cell and not cell.split())]
        )
        if longest_word:
            line = "x " * (longest_line // 2) + "x" * (longest_line % 2)
            sample = "x" * longest_word + "\n" + line
        else:
            sample = ""
        filler = [""] * (len(self.columns) - 1)
        return rich_table(self.columns, [[*filler, sample]] if self.rows else [])


def _row_lines(
    row: Sequence[str], content: list[int], pads: list[tuple[int, int]], divider: str
) -> list[str]:
    wrapped = [wrap(cell, size) for cell, size in zip(row, content, strict=True)]
    height = max(len(lines) for lines in wrapped)
    out = []
    for number in range(height):
        parts = []
        for lines, size, (left, right) in zip(wrapped, content, pads, strict=True):
            text = lines[number] if number < len(lines) else ""
            parts.append(" " * left + text[:size].ljust(size) + " " * right)
        out.append(divider.join(parts))
    return out


def wrap(text: str, width: int) -> list[str]:
    """`text` cut into lines as Rich wraps it with `overflow="fold"` (one-cell characters)."""
    if len(text) <= width:
        return [text]
    starts = [0]
    offset = 0
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group()
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:  # folded: cut into pieces of the width
            pieces = [word[i : i + width] for i in range(0, len(word), width)]
            for piece in pieces[:-1]:
                if start:
                    starts.append(start)
                start += len(piece)
            if start:
                starts.append(start)
            offset = len(pieces[-1])
        elif offset and start:
            starts.append(start)
            offset = len(word)
    ends = [*starts[1:], len(text)]
    return [text[a:b] for a, b in zip(starts, ends, strict=True)]


def _single_cells(text: str) -> bool:
    """Whether every character of `text` is one cell wide (so a length is a width)."""
    if text.isascii():
        return text.isprintable()
    return all(get_character_cell_size(char) == 1 for char in text)

