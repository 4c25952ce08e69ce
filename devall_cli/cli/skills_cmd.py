"""`devall skills list|read`: the skills MCP servers serve (the skills extension), verified."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from devall_cli.cli.app import app
from devall_cli.cli.common import (
    EnvFileOption,
    JsonOption,
    VarOption,
    error_boundary,
    print_json,
    print_line,
    shown,
    stderr_console,
    stdout_console,
    write_product,
)
from devall_cli.cli.targets import (
    CommandOption,
    CwdOption,
    EnvOption,
    HeaderOption,
    McpConfigOption,
    OptionalWorkflowArg,
    ServerNodeOption,
    ServerOption,
    StartupTimeoutOption,
    UrlOption,
    WaitForLogOption,
    target_of,
    target_scope,
    target_workflow,
)
from devall_cli.errors import UsageError

skills_app = typer.Typer(
    help="List and read the skills a workflow's MCP servers serve (or one ad-hoc server's).",
    no_args_is_help=True,
)
app.add_typer(skills_app, name="skills")


@skills_app.command("list")
@error_boundary
def list_command(
    workflow: OptionalWorkflowArg = None,
    node: ServerNodeOption = None,
    json_output: JsonOption = False,
    var: VarOption = None,
    env_file: EnvFileOption = None,
    url: UrlOption = None,
    header: HeaderOption = None,
    command: CommandOption = None,
    env: EnvOption = None,
    cwd: CwdOption = None,
    wait_for_log: WaitForLogOption = None,
    startup_timeout: StartupTimeoutOption = None,
    mcp_config: McpConfigOption = None,
    server: ServerOption = None,
) -> None:
    """List the skills each server serves (skills/list): no skill file is read."""
    from rich.table import Table

    from devall_cli.cli.resources_cmd import on_servers

    target = target_of(locals())
    loaded = target_workflow(workflow, target, var, env_file)
    (listed, missing), _ = on_servers(loaded, node, _list_all, scope=target_scope(target, loaded))
    rows = [_row(skill) for skill in listed]
    if json_output:
        print_json(loaded.redactor.value(rows))
    elif rows:
        table = Table("name", "description", "server", "files")
        for row in rows:
            files = "dynamic" if row["files"] is None else str(len(row["files"]))
            first = (row["description"].strip().splitlines() or [""])[0]
            table.add_row(shown(row["name"]), shown(first), shown(row["server"]), files)
        stdout_console().print(table)
    console = stderr_console()
    for server_id in missing:
        print_line(console, f"devall: note: server '{server_id}' does not offer skills")


@skills_app.command("read")
@error_boundary
def read_command(
    workflow: OptionalWorkflowArg = None,
    name: Annotated[str | None, typer.Argument(metavar="NAME", help="The skill's name.")] = None,
    file: Annotated[
        str | None,
        typer.Argument(metavar="FILE", help="A file of the skill (default SKILL.md)."),
    ] = None,
    node: ServerNodeOption = None,
    var: VarOption = None,
    env_file: EnvFileOption = None,
    url: UrlOption = None,
    header: HeaderOption = None,
    command: CommandOption = None,
    env: EnvOption = None,
    cwd: CwdOption = None,
    wait_for_log: WaitForLogOption = None,
    startup_timeout: StartupTimeoutOption = None,
    mcp_config: McpConfigOption = None,
    server: ServerOption = None,
) -> None:
    """Print a skill's SKILL.md (or FILE), read and verified against the listing.

    The file's size, its SHA-256 digest and (for SKILL.md) its front matter must match what
    skills/list said; a file that does not is refused (exit 1) and nothing of it is printed.
    """
    from devall_cli.cli.resources_cmd import on_servers

    target = target_of(locals())
    if target.given:  # with an ad-hoc target the positionals are NAME [FILE]
        workflow, name, file = None, workflow, name
    if name is None:
        raise UsageError("missing argument NAME")
    loaded = target_workflow(workflow, target, var, env_file)
    wanted, path = name, file or "SKILL.md"

    async def work(servers: list[Any], store: Any) -> str:
        from devall_cli.tools.mcp_skills import read_skill_file

        server_of, skill = await _find(servers, wanted)
        return await read_skill_file(server_of.source, skill, path)

    text, _ = on_servers(loaded, node, work, scope=target_scope(target, loaded))
    write_product(text if text.endswith("\n") else text + "\n")


async def _list_all(servers: list[Any], store: Any) -> tuple[list[Any], list[str]]:
    """Every served skill in server order, and the servers that do not offer the extension."""
    import asyncio

    from devall_cli.tools.mcp_skills import list_skills

    pages = await asyncio.gather(*(list_skills(s.source, s.plan.id) for s in servers))
    listed: list[Any] = []
    missing: list[str] = []
    for server, skills in zip(servers, pages, strict=True):
        if skills is None:
            missing.append(server.plan.id)
        else:
            listed += skills
    return listed, missing


async def _find(servers: list[Any], name: str) -> tuple[Any, Any]:
    listed, _ = await _list_all(servers, None)
    found = [skill for skill in listed if skill.name == name]
    if not found:
        names = ", ".join(sorted({skill.name for skill in listed})) or "none"
        raise UsageError(f"no skill '{name}' (skills: {names})")
    if len(found) > 1:
        where = ", ".join(skill.server for skill in found)
        raise UsageError(f"skill '{name}' is on several servers ({where}); choose one with --node")
    server = next(s for s in servers if s.plan.id == found[0].server)
    return server, found[0]


def _row(skill: Any) -> dict[str, Any]:
    files = None
    if skill.files is not None:
        files = [
            {"path": f.path, "uri": f.uri, "size": f.size, "digest": f.digest} for f in skill.files
        ]
    return {
        "server": skill.server,
        "name": skill.name,
        "description": skill.description,
        "uri": skill.uri,
        "files": files,
        "frontmatter": dict(skill.frontmatter),
    }
