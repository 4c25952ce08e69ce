"""The workflow as a picture: its shape, a layered layout, and SVG, Mermaid and DOT renderings."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from devall_cli.graphview.shape import GraphShape

FORMATS = ("mermaid", "svg", "dot")


def render(shape: GraphShape, fmt: str) -> str:
    """A graph's shape as `mermaid`, `svg` (a standalone file) or `dot` text."""
    if fmt == "svg":
        from devall_cli.graphview.layout import layout
        from devall_cli.graphview.svg import render_svg

        return '<?xml version="1.0" encoding="UTF-8"?>\n' + render_svg(layout(shape)) + "\n"
    if fmt == "dot":
        from devall_cli.graphview.dot import render_dot

        return render_dot(shape)
    from devall_cli.graphview.mermaid import render_mermaid

    return render_mermaid(shape)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a big graph is read and drawn.

    Thousands of nodes make hundreds of thousands of objects that live to the end; each
    collection rescans them all (about 15% of the time of drawing 2,000 nodes), and they hold
    no cycles worth freeing before the command ends.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
