"""Shell completion of the names commands take: workflow files, node ids, tool and prompt names,
and the values of prompt arguments and resource template variables.

Typer calls these while the shell asks for completions (`devall --install-completion` sets
that up). They never fail: a workflow that does not load, or servers that do not start,
just offer nothing. Tool names need the workflow's servers, as `devall tools list` does;
argument values are the suggestions of the server (`completion/complete`), asked for a few
seconds at most.
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
SUGGESTION_SECONDS = 10.0  # most time a completion waits for a server (its start included)


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


def complete_prompt(ctx: Any, incomplete: str) -> list[str]:
    """The names of the prompts of the target given before (`prompts get`)."""
    from devall_cli.tools.mcp_extras import list_items

    async def names(servers: list[Any], ref: str | None) -> list[str]:
        listed = await list_items(servers, "prompts")
        return [str(row["name"]) for row in listed.rows]

    found = _ask_servers(ctx, incomplete, names)
    return sorted(name for name in set(found) if name.startswith(incomplete))


def complete_argument(ctx: Any, incomplete: str) -> list[str]:
    """`NAME=` for each argument of the prompt (or variable of the template URI) given
    before, then `NAME=VALUE` for each value the server suggests for what was typed."""
    name, sep, prefix = incomplete.partition("=")
    is_prompt = ctx.command.name == "get"  # `prompts get`; else `resources read`

    async def offered(servers: list[Any], ref: str | None, context: dict[str, str]) -> list[str]:
        from devall_cli.tools import mcp_complete as mc
        from devall_cli.tools.mcp_extras import argument_names, find_prompt

        if ref is None:
            return []
        if is_prompt:
            server, prompt = await find_prompt(servers, ref)
            names, kind = argument_names(prompt), "prompt"
        else:
            names, kind = mc.template_variables(ref) or [], "template"
            server = await mc.template_server(servers, ref) if sep else servers[0]
        if not sep:
            return [f"{n}=" for n in names if n.startswith(name)]
        others = {k: v for k, v in context.items() if k != name}
        values = await mc.suggest(server, kind, ref, name, prefix, others)  # type: ignore[arg-type]
        return [f"{name}={value}" for value in values]

    return _ask_servers(ctx, incomplete, offered, with_context=True)


def _ask_servers(ctx: Any, incomplete: str, ask: Any, *, with_context: bool = False) -> list[str]:
    """`await ask(servers, ref[, --arg values])` on the servers of the target on the command
    line, within SUGGESTION_SECONDS; nothing on any failure. `ref` is the positional after
    the target (a prompt name, a URI)."""
    import asyncio
    import logging

    from devall_cli.cli import targets

    logging.getLogger("asyncio").setLevel(logging.CRITICAL)  # nothing on the shell's screen
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            params, positionals = _command_line(ctx, incomplete)
            target = targets.target_of({key: params.get(key) for key in targets._ADHOC_KEYS})
            if not target.given:
                positionals = positionals[1:]  # the first is the workflow
            workflow = None if target.given else params.get("workflow")
            loaded = targets.target_workflow(
                workflow, target, params.get("var"), params.get("env_file")
            )
            ref = positionals[0] if positionals else None
            extra = [_pairs(params.get("arg"))] if with_context else []
            found = asyncio.run(asyncio.wait_for(
                _on_servers(loaded, params.get("node"), ask, ref, *extra), SUGGESTION_SECONDS
            ))
            return list(found)
    except Exception:  # the shell shows nothing rather than an error
        return []
    finally:
        from devall_cli.procs.process_groups import kill_all_children

        kill_all_children()


async def _on_servers(loaded: Any, node: str | None, ask: Any, *args: Any) -> Any:
    from devall_cli.tools.mcp_extras import open_servers
    from devall_cli.tools.plan import SourceContext

    context = SourceContext(workflow_dir=loaded.directory, redact=loaded.redactor.text)
    async with open_servers(loaded, node, context) as servers:
        return await ask(servers, *args)


def _command_line(ctx: Any, incomplete: str) -> tuple[dict[str, Any], list[str]]:
    """The options and positional words of the line being completed, read from the shell's
    words (Click keeps no positional value when the line ends in an option's value)."""
    words = _shell_words()
    if words and words[-1] == incomplete:
        words = words[:-1]
    for name in ctx.command_path.split()[1:]:  # past `devall prompts get`
        words = words[words.index(name) + 1 :] if name in words else words
    options: dict[str, Any] = {}
    for param in ctx.command.params:  # Typer's own Click: told apart by name, not by class
        if param.param_type_name == "option":
            options.update({opt: param for opt in param.opts})
    params: dict[str, Any] = {}
    positionals: list[str] = []
    rest = iter(words)
    for word in rest:
        flag, eq, value = word.partition("=")
        option = options.get(flag) if word.startswith("-") else None
        if option is None:
            if not word.startswith("-"):
                positionals.append(word)
            continue
        if option.is_flag:
            params[str(option.name)] = True
            continue
        given = value if eq else next(rest, "")
        if option.multiple:
            params.setdefault(str(option.name), []).append(given)
        else:
            params[str(option.name)] = given
    if positionals and not any(params.get(k) for k in ("url", "command", "mcp_config")):
        params["workflow"] = positionals[0]
    return params, positionals


def _shell_words() -> list[str]:
    words = os.environ.get("_TYPER_COMPLETE_ARGS") or os.environ.get("COMP_WORDS") or ""
    try:
        return shlex.split(words)
    except ValueError:
        return words.split()


def _pairs(values: list[str] | None) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values or []:
        key, _, text = value.partition("=")
        pairs[key] = text
    return pairs


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
