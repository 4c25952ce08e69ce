"""`devall resources list|templates|read`: the resources of a workflow's MCP servers, or ad hoc."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from devall_cli.cli.app import app
from devall_cli.cli.common import (
    EnvFileOption,
    JsonOption,
    VarOption,
    error_boundary,
    folders_to_make,
    print_json,
    print_line,
    remove_run_dir,
    run_async,
    shown,
    stderr_console,
    stdout_console,
    write_product,
)
from devall_cli.cli.completion_args import (
    CompleteOption,
    TemplateArgOption,
    parse_pairs,
    parse_wanted,
    print_completion,
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
    target_words,
    target_workflow,
)

if TYPE_CHECKING:
    from devall_cli.tools.mcp_extras import Listing

T = TypeVar("T")

resources_app = typer.Typer(
    help="List and read the resources of a workflow's MCP servers (or of one ad-hoc server).",
    no_args_is_help=True,
)
app.add_typer(resources_app, name="resources")

def on_servers(
    loaded: Any,
    node: str | None,
    work: Callable[[list[Any], Any], Awaitable[T]],
    *,
    scope: Any,
    run_id_prefix: str | None = None,
) -> tuple[T, Path | None]:
    """Start the selected servers, run `work(servers, store)`, close them; (result, run dir).

    `scope` words the error of an unknown `--node` (a node of the workflow, or a server).
    """
    from devall_cli.tools.catalog import tool_nodes
    from devall_cli.tools.mcp_extras import open_servers
    from devall_cli.tools.plan import SourceContext

    tool_nodes(loaded, node, scope)  # before any server starts
    store: Any = None
    run_dir: Path | None = None
    run_id = ""
    if run_id_prefix is not None:
        from devall_cli.run_files import new_run_id
        from devall_cli.tools.attachments import AttachmentStore
        from devall_cli.tools.catalog import default_run_dir

        run_id = new_run_id(run_id_prefix)
        run_dir = default_run_dir(run_id)
        store = AttachmentStore(run_dir)
    ctx = SourceContext(
        run_id=run_id,
        run_dir=run_dir,
        workflow_dir=loaded.directory,
        store=store,
        redact=loaded.redactor.text,
    )

    async def go() -> T:
        async with open_servers(loaded, node, ctx) as servers:
            return await work(servers, store)

    made = folders_to_make(run_dir) if run_dir is not None else []
    try:
        return run_async(go()), run_dir
    finally:
        # The run directory holds what was saved; with nothing saved it is not left behind.
        if run_dir is not None and not (run_dir / "attachments").exists():
            remove_run_dir(run_dir, made)


def print_listing(
    listed: Any,
    empty: list[str],
    columns: list[tuple[str, str]],
    json_output: bool,
    redactor: Any,
    what: str,
    elsewhere: Callable[[str], str] = lambda server: "",
) -> None:
    """A listing as a table (columns: (header, key)) or as JSON, and a note for each server
    with nothing to list (`empty`) instead of an empty table; `elsewhere(server)` adds what else
    it has."""
    from rich.table import Table

    if json_output:
        print_json(redactor.value(listed.rows))
    elif listed.rows:
        table = Table(*(header for header, _ in columns))
        for row in listed.rows:
            cells = [_cell(row.get(key), redactor) for _, key in columns]
            table.add_row(*(shown(cell) for cell in cells))
        stdout_console().print(table)
    console = stderr_console()
    for server in listed.missing:
        print_line(console, f"devall: note: server '{server}' does not offer {what}")
    for server in empty:
        print_line(console, f"devall: note: server '{server}' lists no {what}{elsewhere(server)}")


def _cell(value: Any, redactor: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):  # prompt arguments
        return ", ".join(
            f"{a.get('name', '')}{'*' if a.get('required') else ''}" for a in value
        )
    text = redactor.text(str(value)).strip().splitlines()
    return text[0] if text else ""


def print_blocks(
    blocks: list[dict[str, Any]], run_dir: Path | None, redactor: Any, labels: list[str]
) -> None:
    """The product: text as it is, attachments as saved paths, data as JSON (label: prefix)."""
    import json

    lines: list[str] = []
    for block, label in zip(blocks, labels, strict=True):
        prefix = f"{label}: " if label else ""
        if block["type"] == "text":
            lines.append(prefix + redactor.text(block["text"]))
        elif block["type"] == "attachment":
            path = (run_dir or Path()) / block["path"]
            lines.append(
                f"{prefix}[{block['kind']} saved: {path} ({block['mime_type']}, "
                f"{block['size']} bytes)]"
            )
        else:
            lines.append(prefix + json.dumps(redactor.value(block["data"]), ensure_ascii=False))
    # A text that ends its last line keeps it so: `resources read` copies a file exactly.
    write_product("".join(line if line.endswith("\n") else line + "\n" for line in lines))


@resources_app.command("list")
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
    """List the resources each server offers (resources/list)."""
    _listing(locals(), "resources")


@resources_app.command("templates")
@error_boundary
def templates_command(
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
    """List the resource templates each server offers (resources/templates/list)."""
    _listing(locals(), "templates")


def _listing(options: dict[str, Any], what: Listing) -> None:
    target = target_of(options)
    loaded = target_workflow(options["workflow"], target, options["var"], options["env_file"])
    other: Listing = "templates" if what == "resources" else "resources"

    async def work(servers: list[Any], store: Any) -> Any:
        return await _list_with_counts(servers, what, other)

    (listed, empty, counts), _ = on_servers(
        loaded, options["node"], work, scope=target_scope(target, loaded)
    )
    if what == "resources":
        columns = [("server", "server"), ("uri", "uri"), ("name", "name")]
    else:
        columns = [("server", "server"), ("uri template", "uriTemplate"), ("name", "name")]
    columns += [("mime type", "mimeType"), ("description", "description")]
    words = loaded.redactor.text(target_words(options["workflow"], target, options["node"]))
    other_label = _LABELS[other]

    def elsewhere(server: str) -> str:
        count = counts.get(server, 0)
        if not count:
            return ""
        return f" ({other_label}: {count}; see: devall resources {other} {words})"

    json_output = options["json_output"]
    print_listing(listed, empty, columns, json_output, loaded.redactor, _LABELS[what], elsewhere)


_LABELS = {"resources": "resources", "templates": "resource templates"}


def empty_servers(servers: list[Any], listed: Any) -> list[str]:
    """The ids of the servers that offer the kind listed but list none of it."""
    listing = {row["server"] for row in listed.rows}
    return [
        s.plan.id for s in servers if s.plan.id not in listing and s.plan.id not in listed.missing
    ]


async def _list_with_counts(
    servers: list[Any], what: Listing, other: Listing
) -> tuple[Any, list[str], dict[str, int]]:
    """The listing, the servers that list nothing, and how many of `other` each of them has."""
    from devall_cli.errors import DevallError
    from devall_cli.tools.mcp_extras import list_items

    listed = await list_items(servers, what)
    empty = empty_servers(servers, listed)
    if not empty:
        return listed, empty, {}
    try:
        others = await list_items([s for s in servers if s.plan.id in empty], other)
    except DevallError:  # only a hint: a server refusing it costs the hint, not the listing
        return listed, empty, {}
    counts: dict[str, int] = {}
    for row in others.rows:
        counts[row["server"]] = counts.get(row["server"], 0) + 1
    return listed, empty, counts


@resources_app.command("read")
@error_boundary
def read_command(
    workflow: OptionalWorkflowArg = None,
    uri: Annotated[str | None, typer.Argument(metavar="URI", help="The resource's URI.")] = None,
    arg: TemplateArgOption = None,
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
    """Read one resource (resources/read): text is printed, binary contents are saved.

    Binary contents are saved under logs/<run-id>/attachments/. Exit 1 if the server refused.
    A resource template URI (memo://notes/{name}) is read with its variables given by --arg;
    --complete prints the server's suggestions for one (completions capability).
    """
    from devall_cli.tools.mcp_complete import complete_template_variable, fill_template
    from devall_cli.tools.mcp_extras import read_resource
    from devall_cli.tools.normalize import blocks_to_json

    values = parse_pairs(arg)
    wanted = parse_wanted(complete) if complete is not None else None
    target = target_of(locals())
    workflow, given_uri = split_positionals(workflow, uri, target, "URI")
    loaded = target_workflow(workflow, target, var, env_file)
    scope = target_scope(target, loaded)
    if wanted is not None:
        context = {k: v for k, v in values.items() if k != wanted[0]}

        async def suggest(servers: list[Any], store: Any) -> Any:
            return await complete_template_variable(servers, given_uri, *wanted, context)

        found, _ = on_servers(loaded, node, suggest, scope=scope)
        print_completion(found, {"uriTemplate": given_uri}, wanted, json_output, loaded.redactor)
        return

    async def work(servers: list[Any], store: Any) -> Any:
        filled = await fill_template(servers, given_uri, values)
        return filled, await read_resource(servers, filled, store)

    (uri, contents), run_dir = on_servers(
        loaded, node, work, scope=scope, run_id_prefix="resources-read"
    )
    blocks = blocks_to_json(contents.blocks)
    if json_output:
        document = {"uri": uri, "server": contents.server, "contents": blocks}
        if run_dir is not None and any(b["type"] == "attachment" for b in blocks):
            document["run_dir"] = str(run_dir)
        print_json(loaded.redactor.value(document))
        return
    print_blocks(blocks, run_dir, loaded.redactor, [""] * len(blocks))
