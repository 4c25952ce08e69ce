"""Node paths: how the trace, the logs, result.json and the tool layer name a node at run time.

A node of the workflow's graph is named by its id, a node of a subgraph by `outer/inner`. A unit
of a node that a dynamic edge runs once per part of its input adds the unit's label to the node's
path: `node#2` is unit 2 of a map, `node#1-3` group 3 of layer 1 of a tree. A unit runs with
everything its node declares (tools included), so the tool layer looks its node up by
`declared_path`.
"""

from __future__ import annotations

import re
from collections.abc import Container

UNIT_MARK = "#"
_UNIT_LABEL = re.compile(r"#\d+(?:-\d+)?$")


def unit_path(path: str, label: str) -> str:
    """The path of one unit of the node at `path`: `node#2`."""
    return f"{path}{UNIT_MARK}{label}"


def declared_path(path: str, known: Container[str]) -> str:
    """The path of the declared node that a run-time path stands for.

    A path in `known` is itself (a node id may hold a `#`); otherwise every unit label is taken
    off: `writer#2` → `writer`, `team#3/critic` → `team/critic`.
    """
    if path in known:
        return path
    return "/".join(_UNIT_LABEL.sub("", part) for part in path.split("/"))
