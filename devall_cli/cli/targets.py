"""The target of the inspection commands: a workflow, or servers named on the command line.

`tools list|call`, `resources ...`, `prompts ...` and `probe` take a WORKFLOW or one of
`--url`, `--command`, `--mcp-config`; the options are defined here once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from devall_cli.cli.common import STATE, load, parse_vars
from devall_cli.cli.completion import complete_node, complete_workflow
from devall_cli.errors import UsageError

PANEL = "Ad-hoc server (instead of WORKFLOW)"

# `--node` of the commands that act on the servers of a workflow's nodes (auth, resources, prompts).
ServerNodeOption = Annotated[
    str | None,
    typer.Option(
        "--node", metavar="ID", help="Only this node's servers.", autocompletion=complete_node
    ),
]

UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url", metavar="URL", help="A remote server at this URL.", rich_help_panel=PANEL
    ),
]
HeaderOption = Annotated[
    list[str] | None,
    typer.Option(
        "--header", metavar="'Name: value'", help="HTTP header for --url.", rich_help_panel=PANEL
    ),
]
CommandOption = Annotated[
    str | None,
    typer.Option(
        "--command",
        metavar="'CMD ARG...'",
        help="A local stdio server started with this command line.",
        rich_help_panel=PANEL,
    ),
]
EnvOption = Annotated[
    list[str] | None,
    typer.Option(
        "--env", metavar="NAME=VALUE", help="Environment for --command.", rich_help_panel=PANEL
    ),
]
CwdOption = Annotated[
    str | None,
    typer.Option(
        "--cwd", metavar="DIR", help="Working folder for --command.", rich_help_panel=PANEL
    ),
]
WaitForLogOption = Annotated[
    str | None,
    typer.Option(
        "--wait-for-log",
        metavar="REGEX",
        help="Readiness log line for --command.",
        rich_help_panel=PANEL,
    ),
]
StartupTimeoutOption = Annotated[
    float | None,
    typer.Option(
        "--startup-timeout",
        min=0.1,
        metavar="SECONDS",
        help="Startup bound for --command (default 10; 60 for npx, uvx and other fetchers).",
        rich_help_panel=PANEL,
    ),
]
McpConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--mcp-config",
        metavar="FILE",
        help="The servers of an mcpServers file (Claude Desktop, Cursor, VS Code, Windsurf).",
        rich_help_panel=PANEL,
    ),
]
ServerOption = Annotated[
    list[str] | None,
    typer.Option(
        "--server",
        metavar="NAME",
        help="Only this server of --mcp-config (repeatable).",
        rich_help_panel=PANEL,
    ),
]


def adhoc_target(
    *,
    url: str | None = None,
    header: list[str] | None = None,
    command: str | None = None,
    env: list[str] | None = None,
    cwd: str | None = None,
    wait_for_log: str | None = None,
    startup_timeout: float | None = None,
    mcp_config: Path | None = None,
    server: list[str] | None = None,
    timeout: float | None = None,
) -> Any:
    """The ad-hoc options as an AdhocTarget; options of another kind of target are refused."""
    from devall_cli.workflow.adhoc import AdhocTarget

    _only_with(url, "--url", header=header)
    _only_with(command, "--command", env=env, cwd=cwd, wait_for_log=wait_for_log)
    _only_with(command, "--command", startup_timeout=startup_timeout)
    _only_with(mcp_config, "--mcp-config", server=server)
    return AdhocTarget(
        url=url,
        headers=parse_headers(header or []),
        command=command,
        env=_pairs(env or [], "--env"),
        cwd=cwd,
        wait_for_log=wait_for_log,
        startup_timeout=startup_timeout,
        timeout=timeout,
        mcp_config=mcp_config,
        servers=tuple(server or ()),
    )


def _only_with(anchor: object, option: str, **given: object) -> None:
    for name, value in given.items():
        if value and anchor is None:
            flag = "--" + name.replace("_", "-")
            raise UsageError(f"{flag} goes with {option}")


def target_workflow(
    workflow: str | Path | None, target: Any, var: list[str] | None, env_file: Path | None
) -> Any:
    """The loaded workflow (tools only: no model settings needed), or the ad-hoc one."""
    given = [x for x in (workflow, target.url, target.command, target.mcp_config) if x is not None]
    if len(given) != 1:
        raise UsageError("give exactly one of WORKFLOW, --url, --command or --mcp-config")
    if workflow is not None:
        return load(Path(workflow), var, env_file, tools_only=True)
    from devall_cli.workflow.adhoc import adhoc_workflow

    values = parse_vars(var)
    environ = dict(os.environ)
    if target.mcp_config is not None:
        from devall_cli.config.dotenv import load_dotenv_files

        dotenv = load_dotenv_files(target.mcp_config.resolve().parent, Path.cwd(), env_file)
        environ = {**dotenv.values, **environ}
    loaded = adhoc_workflow(target, environ=environ, values=values)
    STATE.mask = loaded.redactor.text
    return loaded


def target_scope(target: Any, loaded: Any) -> Any:
    """How messages name the target's tools: in the workflow, or on the servers given ad hoc."""
    from devall_cli.tools.catalog import WORKFLOW_SCOPE, ToolScope

    if not target.given:
        return WORKFLOW_SCOPE
    servers = [node.id for node in loaded.graph.nodes]
    if target.mcp_config is not None:
        option, place = "--mcp-config", f"in {target.mcp_config}"
    else:
        option, place = ("--url" if target.url is not None else "--command"), "on the command line"
    return ToolScope(
        tools_place=f"on server '{servers[0]}'" if len(servers) == 1 else f"on the servers {place}",
        nodes_place=place,
        node_word="server",
        list_hint=f"'devall tools list' with the same {option} shows every tool",
    )


def target_words(workflow: str | None, target: Any, node: str | None = None) -> str:
    """The target as it is written on a command line: `wf.yaml`, `--url URL`, ... (quoted)."""
    import shlex

    if target.url is not None:
        words = ["--url", target.url]
    elif target.command is not None:
        words = ["--command", target.command]
    elif target.mcp_config is not None:
        words = ["--mcp-config", str(target.mcp_config)]
    else:
        words = [str(workflow)]
    words += ["--node", node] if node is not None else []
    return shlex.join(words)


def split_positionals(
    workflow: str | None, name: str | None, target: Any, what: str
) -> tuple[str | None, str]:
    """`[WORKFLOW] NAME`: with an ad-hoc target the one positional argument is the NAME."""
    if target.given and name is None and workflow is not None:
        return None, workflow
    if name is None:
        raise UsageError(f"missing argument {what}")
    return workflow, name


def parse_headers(values: list[str]) -> dict[str, str]:
    """`--header 'Name: value'` flags as a mapping."""
    headers: dict[str, str] = {}
    for value in values:
        name, sep, rest = value.partition(":")
        if not sep or not name.strip():
            raise typer.BadParameter(
                f"expected 'Name: value', got {value!r}", param_hint="--header"
            )
        headers[name.strip()] = rest.strip()
    return headers


def _pairs(values: list[str], option: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values:
        name, sep, rest = value.partition("=")
        if not sep or not name.strip():
            raise typer.BadParameter(f"expected NAME=VALUE, got {value!r}", param_hint=option)
        pairs[name.strip()] = rest
    return pairs


# Text, not a Path: with an ad-hoc target it is the tool name or URI (`memo://x` stays whole).
OptionalWorkflowArg = Annotated[
    str | None,
    typer.Argument(
        metavar="WORKFLOW",
        help="Path to the workflow YAML file (or an ad-hoc server option).",
        autocompletion=complete_workflow,
    ),
]


_ADHOC_KEYS = (
    "url",
    "header",
    "command",
    "env",
    "cwd",
    "wait_for_log",
    "startup_timeout",
    "mcp_config",
    "server",
)


def target_of(options: dict[str, Any]) -> Any:
    """The ad-hoc target of a command's options (its locals: every ad-hoc option is there)."""
    return adhoc_target(**{key: options[key] for key in _ADHOC_KEYS})
