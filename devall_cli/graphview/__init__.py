"""The workflow as a picture: its shape, a layered layout, and SVG, Mermaid and DOT renderings."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from devall_cli.config.model import Workflow

FORMATS = ("mermaid", "svg", "dot")


def render(workflow: Workflow, fmt: str) -> str:
    """The workflow's graph as `mermaid`, `svg` (a standalone file) or `dot` text."""
    from devall_cli.graphview.shape import shape_of

    shape = shape_of(workflow.graph, workflow.redactor.text)
    if fmt == "svg":
        from devall_cli.graphview.layout import layout
        from devall_cli.graphview.svg import render_svg

        return '<?xml version="1.0" encoding="UTF-8"?>\n' + render_svg(layout(shape)) + "\n"
    if fmt == "dot":
        from devall_cli.graphview.dot import render_dot

        return render_dot(shape)
    from devall_cli.graphview.mermaid import render_mermaid

    return render_mermaid(shape)
