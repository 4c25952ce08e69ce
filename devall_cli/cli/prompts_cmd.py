"""`devall prompts list|get`: the prompts of a workflow's MCP servers, or of an ad-hoc server."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from devall_cli.cli.app import app
from devall_cli.cli.common import EnvFileOption, JsonOption, VarOption, error_boundary, print_json
from devall_cli.cli.completion import complete_prompt
from devall_cli.cli.completion_args import (
    CompleteOption,
    PromptArgOption,
    parse_pairs,
    parse_wanted,
    print_completion,
)
from devall_cli.cli.resources_cmd import (
    empty_servers,
    on_servers,
    print_blocks,
    print_listing,
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
    split_positionals,
    target_of,
    target_scope,
    target_workflow,
)

prompts_app = typer.Typer(
    help="List and get the prompts of a workflow's MCP servers (or of one ad-hoc server).",
    no_args_is_help=True,
)
app.add_typer(prompts_app, name="prompts")


@prompts_app.command("list")
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
    """List the prompts each server offers (prompts/list), with their arguments (`*` required)."""
    from devall_cli.tools.mcp_extras import list_items

    target = target_of(locals())
    loaded = target_workflow(workflow, target, var, env_file)

    async def work(servers: list[Any], store: Any) -> Any:
        listed = await list_items(servers, "prompts")
        return listed, empty_servers(servers, listed)

    (listed, empty), _ = on_servers(loaded, node, work, scope=target_scope(target, loaded))
    columns = [
        ("server", "server"),
        ("prompt", "name"),
        ("arguments", "arguments"),
        ("description", "description"),
    ]
    print_listing(listed, empty, columns, json_output, loaded.redactor, "prompts")


@prompts_app.command("get")
@error_boundary
def get_command(
    workflow: OptionalWorkflowArg = None,
    name: Annotated[
        str | None,
        typer.Argument(metavar="NAME", help="The prompt's name.", autocompletion=complete_prompt),
    ] = None,
    args: Annotated[
        str, typer.Option("--args", metavar="JSON", help="Arguments as a JSON object.")
    ] = "{}",
    arg: PromptArgOption = None,
    complete: CompleteOption = None,
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
    """Get one prompt (prompts/get) and print its messages, each line led by its role.

    Images and other binary contents are saved under logs/<run-id>/attachments/. A required
    argument left out is an error that shows the server's suggestions for it; --complete
    prints them only (servers with the completions capability).
    """
    from devall_cli.cli.tools_cmd import parse_arguments
    from devall_cli.tools.mcp_extras import get_prompt
    from devall_cli.tools.normalize import blocks_to_json

    arguments = {**parse_arguments(args), **parse_pairs(arg)}
    wanted = parse_wanted(complete) if complete is not None else None
    target = target_of(locals())
    workflow, name = split_positionals(workflow, name, target, "NAME")
    loaded = target_workflow(workflow, target, var, env_file)
    if wanted is not None:
        _print_suggestions(loaded, node, target, name, wanted, arguments, json_output)
        return

    async def work(servers: list[Any], store: Any) -> Any:
        return await get_prompt(servers, name, arguments, store)

    scope = target_scope(target, loaded)
    contents, run_dir = on_servers(loaded, node, work, scope=scope, run_id_prefix="prompts-get")
    blocks = blocks_to_json(contents.blocks)
    if json_output:
        messages = [
            {"role": role, "content": block}
            for role, block in zip(contents.roles, blocks, strict=True)
        ]
        document: dict[str, Any] = {
            "prompt": name,
            "server": contents.server,
            "description": contents.description,
            "messages": messages,
        }
        if run_dir is not None and any(b["type"] == "attachment" for b in blocks):
            document["run_dir"] = str(run_dir)
        print_json(loaded.redactor.value(document))
        return
    print_blocks(blocks, run_dir, loaded.redactor, list(contents.roles))


def _print_suggestions(
    loaded: Any,
    node: str | None,
    target: Any,
    name: str,
    wanted: tuple[str, str],
    arguments: dict[str, Any],
    json_output: bool,
) -> None:
    """`--complete`: what the server suggests for one argument of the prompt."""
    import json

    from devall_cli.tools.mcp_complete import complete_prompt_argument

    context = {k: v if isinstance(v, str) else json.dumps(v) for k, v in arguments.items()}
    context.pop(wanted[0], None)

    async def work(servers: list[Any], store: Any) -> Any:
        return await complete_prompt_argument(servers, name, *wanted, context)

    found, _ = on_servers(loaded, node, work, scope=target_scope(target, loaded))
    print_completion(found, {"prompt": name}, wanted, json_output, loaded.redactor)
