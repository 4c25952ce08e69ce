"""The table of `devall tools list`: the tools grouped by server, each server named once.

Each server gets a heading line (its id, source kind, URL or command line in full, and the nodes
and roots that all its tools share), then a table of its tools: name, parameters (`*` marks the
required ones) and description, wrapped to the terminal. A `node(s)` column appears only for a
server whose tools go to different nodes, a `policy` column only under a tool policy (what
happens to the tool's calls: allow, ask, refuse, or deny: not offered to models).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group, RenderableType

from devall_cli.cli.common import shown
from devall_cli.cli.plain_table import Column, table_of
from devall_cli.text import visible
from devall_cli.tools.catalog import ListedTool
from devall_cli.tools.policy import Verdict

DESCRIPTION_CHARS = 160  # of a description's first paragraph; `--json` has all of it
TOOL_WIDTH = 30  # at most, for the tool column; longer names fold
PARAMETERS_WIDTH = 24
INDENT = 2


Verdicts = Mapping[tuple[str, str], Verdict]  # (node, final name) -> verdict


def policy_of_rows(manager: Any, rows: Sequence[ListedTool]) -> dict[tuple[str, str], Verdict]:
    """The tool policy's verdict on each listed tool in each of its nodes."""
    found: dict[tuple[str, str], Verdict] = {}
    for row in rows:
        for node in row.nodes:
            verdict = manager.verdict(node, row.name)
            if verdict is not None:
                found[(node, row.name)] = verdict
    return found


def tools_table(
    rows: Sequence[ListedTool], redactor: Any, verdicts: Verdicts | None = None
) -> RenderableType:
    """Every server's heading and table of tools, in the order the tools were listed."""
    groups: dict[tuple[str, str], list[ListedTool]] = {}
    for row in rows:
        groups.setdefault((row.server_id, row.server), []).append(row)
    verdicts = verdicts or {}
    if all(verdict.layer == "default" for verdict in verdicts.values()):
        verdicts = {}  # no policy: no column
    return Group(*(_server_block(tools, redactor, verdicts) for tools in groups.values()))


def decision_text(tool: ListedTool, verdicts: Verdicts) -> str:
    """`deny (write_*)`, `allow (readOnlyHint)`, `ask`; per node when the nodes differ."""
    texts = {
        node: _decision(verdicts[(node, tool.name)])
        for node in tool.nodes
        if (node, tool.name) in verdicts
    }
    if len(set(texts.values())) <= 1:
        return next(iter(texts.values()), "allow")
    return ", ".join(f"{node}: {text}" for node, text in texts.items())


def _decision(verdict: Verdict) -> str:
    return f"{verdict.decision} ({verdict.rule})" if verdict.rule else verdict.decision


def parameters(schema: Any) -> str:
    """`a*, b, c*`: parameter names, `*` marking the required ones."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    required = schema.get("required") if isinstance(schema, Mapping) else None
    needed = set(required) if isinstance(required, list) else set()
    if not isinstance(props, Mapping):
        return ""
    return ", ".join(f"{name}{'*' if name in needed else ''}" for name in props)


def summary(description: str, redactor: Any) -> str:
    """The description's first paragraph on one line, masked, then cut to DESCRIPTION_CHARS."""
    # Masked whole, then cut: a cut secret would leak its start.
    text = redactor.text(description or "").strip()
    paragraph = " ".join(text.split("\n\n", 1)[0].split())
    if len(paragraph) <= DESCRIPTION_CHARS:
        return paragraph
    cut = paragraph[: DESCRIPTION_CHARS - 1].rsplit(" ", 1)[0]
    return cut + "…"


def _server_block(tools: list[ListedTool], redactor: Any, verdicts: Verdicts) -> RenderableType:
    first = tools[0]
    node_sets = {tool.nodes for tool in tools}
    shared_nodes = node_sets.pop() if len(node_sets) == 1 else None
    heading = [first.server_id, first.source, redactor.text(first.server)]
    if shared_nodes is not None:
        word = "node" if len(shared_nodes) == 1 else "nodes"
        heading.append(f"{word}: {', '.join(shared_nodes)}")
    if first.roots:
        heading.append(f"roots: {redactor.text(', '.join(first.roots))}")
    cells = [
        [
            tool.name,
            *([] if shared_nodes is not None else [", ".join(tool.nodes)]),
            *([decision_text(tool, verdicts)] if verdicts else []),
            redactor.text(parameters(tool.input_schema)),
            summary(tool.description, redactor),
        ]
        for tool in tools
    ]
    header = [
        "tool",
        *([] if shared_nodes is not None else ["node(s)"]),
        *(["policy"] if verdicts else []),
        "parameters",
    ]
    columns = _columns([*header, "description"], cells)
    rows = [[visible(cell) for cell in row] for row in cells]
    return Group(shown(" · ".join(heading)), table_of(columns, rows, INDENT))


def _columns(header: list[str], cells: list[list[str]]) -> list[Column]:
    """Every column but the last as narrow as its cells allow; the last takes what is left."""
    limits = [TOOL_WIDTH, *([TOOL_WIDTH] * (len(header) - 3)), PARAMETERS_WIDTH]
    columns = []
    for index, title in enumerate(header[:-1]):
        longest = max([len(title), *(len(row[index]) for row in cells)])
        columns.append(Column(title, min(longest, limits[index])))
    return [*columns, Column(header[-1], None, min_width=20)]
