"""Shell completion of the names commands take: workflow files, node ids and tool names.

Typer calls these while the shell asks for completions (`devall --install-completion` sets
that up). They never fail: a workflow that does not load, or servers that do not start,
just offer nothing. Tool names need the workflow's servers, as `devall tools list` does.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
from pathlib import Path
from typing import Any

WORKFLOW_SUFFIXES = (".yaml", ".yml")
TOOL_LISTING_SECONDS = 15.0  # most time a completion waits for the servers to list their tools


def complete_workflow(incomplete: str) -> list[str]:
    """YAML files and folders that start with what was typed."""
    folder, _, start = incomplete.rpartition(os.sep)
    base = Path(folder + os.sep) if folder else Path(".")
    try:
        entries = sorted(base.iterdir())
    except OSError:
        return []
    found = []
    for entry in entries:
        if not entry.name.startswith(start) or (entry.name.startswith(".") and not start):
            continue
        shown = f"{folder}{os.sep}{entry.name}" if folder else entry.name
        if entry.is_dir():
            found.append(shown + os.sep)
        elif entry.suffix in WORKFLOW_SUFFIXES:
            found.append(shown)
    return found


def complete_node(ctx: Any, incomplete: str) -> list[str]:
    """The node ids (subgraph nodes as `outer/inner`) of the workflow given before."""
    loaded = _load(ctx)
    if loaded is None:
        return []
    from devall_cli.config.model import walk_nodes

    return [path for path, _ in walk_nodes(loaded.graph) if path.startswith(incomplete)]


def complete_tool(ctx: Any, incomplete: str) -> list[str]:
    """The final tool names the workflow's nodes are offered (its servers are started)."""
    loaded = _load(ctx)
    if loaded is None:
        return []
    import asyncio

    from devall_cli.tools.catalog import list_workflow_tools
    from devall_cli.tools.manager import ToolManager

    async def names() -> list[str]:
        async with ToolManager(loaded, import_functions=False) as manager:
            rows = await list_workflow_tools(manager, ctx.params.get("node"))
            return [row.name for row in rows]

    import logging  # here: every command imports this module, only completion needs logging

    logging.getLogger("asyncio").setLevel(logging.CRITICAL)  # nothing on the shell's screen
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            found = asyncio.run(asyncio.wait_for(names(), TOOL_LISTING_SECONDS))
    except Exception:
        return []
    finally:
        from devall_cli.procs.process_groups import kill_all_children

        kill_all_children()
    return sorted(name for name in set(found) if name.startswith(incomplete))


def _load(ctx: Any) -> Any:
    """The workflow named on the command line so far, or None (quietly)."""
    workflow = ctx.params.get("workflow") or _workflow_in_command_line()
    if workflow is None:
        return None
    from devall_cli.cli.common import parse_vars
    from devall_cli.workflow.loader import load_workflow

    try:
        with contextlib.redirect_stderr(io.StringIO()):
            cli_vars = parse_vars(ctx.params.get("var"))
            return load_workflow(workflow, cli_vars=cli_vars, env_file=ctx.params.get("env_file"))
    except Exception:
        return None


def _workflow_in_command_line() -> str | None:
    """The first YAML file of the words being completed.

    Click drops every parsed value when the line ends in an option still waiting for its
    value (`--node <TAB>`), so the words the shell sent are read again here.
    """
    words = os.environ.get("_TYPER_COMPLETE_ARGS") or os.environ.get("COMP_WORDS") or ""
    try:
        split = shlex.split(words)
    except ValueError:
        split = words.split()
    for word in split:
        if word.endswith(WORKFLOW_SUFFIXES) and Path(word).is_file():
            return word
    return None
