"""`devall resources watch`: subscribe to resources and print each update until told to stop."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from devall_cli.cli.common import (
    EnvFileOption,
    VarOption,
    error_boundary,
    print_line,
    stderr_console,
    write_product,
)
from devall_cli.cli.resources_cmd import on_servers, print_blocks, resources_app
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
from devall_cli.errors import ExitCode, InterruptedRunError, UsageError

if TYPE_CHECKING:
    from devall_cli.tools.mcp_watch import Update


@resources_app.command("watch")
@error_boundary
def watch_command(
    workflow: OptionalWorkflowArg = None,
    uris: Annotated[
        list[str] | None,
        typer.Argument(metavar="URI...", help="The URIs of the resources to watch."),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            min=0.1,
            metavar="SECONDS",
            help="Stop after this many seconds (default: at Ctrl-C).",
        ),
    ] = None,
    read: Annotated[
        bool, typer.Option("--read", help="Read each resource again when it changes, and print it.")
    ] = False,
    node: ServerNodeOption = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print one JSON line per update.")
    ] = False,
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
    """Watch resources (subscriptions/listen or resources/subscribe) and print each update.

    Stops at --timeout or Ctrl-C (exit 0). A server that does not declare resource
    subscriptions is an error (exit 1). With --read each update is followed by the resource's
    new contents, as `resources read` prints them.
    """
    from devall_cli.tools.mcp_watch import watch_resources

    target = target_of(locals())
    watched = list(uris or [])
    if target.given and workflow is not None:  # with an ad-hoc target it is the first URI
        watched.insert(0, workflow)
        workflow = None
    if not watched:
        raise UsageError("missing argument URI")
    loaded = target_workflow(workflow, target, var, env_file)
    printer = _Printer(loaded.redactor, json_output)
    console = stderr_console()

    async def work(servers: list[Any], store: Any) -> None:
        printer.run_dir = store.run_dir if store is not None else None
        await watch_resources(
            servers,
            watched,
            printer.update,
            seconds=timeout,
            read=read,
            store=store,
            on_note=lambda line: print_line(console, f"devall: note: {line}"),
        )

    try:
        on_servers(
            loaded,
            node,
            work,
            scope=target_scope(target, loaded),
            run_id_prefix="resources-watch" if read else None,
        )
    except InterruptedRunError as exc:
        if exc.exit_code != ExitCode.INTERRUPTED:  # SIGTERM stays 143; Ctrl-C is how one stops
            raise


class _Printer:
    """Each update as it comes: `TIME URI` (and the contents), or one JSON line."""

    def __init__(self, redactor: Any, json_output: bool) -> None:
        self.redactor = redactor
        self.json_output = json_output
        self.run_dir: Any = None

    def update(self, update: Update) -> None:
        import json

        from devall_cli.tools.normalize import blocks_to_json

        stamp = update.time.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        blocks = blocks_to_json(update.contents.blocks) if update.contents is not None else None
        if self.json_output:
            line: dict[str, Any] = {"time": stamp, "server": update.server, "uri": update.uri}
            if blocks is not None:
                line["contents"] = blocks
            text = json.dumps(self.redactor.value(line), ensure_ascii=False)
            write_product(text + "\n")
            return
        write_product(f"{stamp} {self.redactor.text(update.uri)}\n")
        if blocks is not None:
            print_blocks(blocks, self.run_dir, self.redactor, [""] * len(blocks))
