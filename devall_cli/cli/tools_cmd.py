"""`devall tools list` and `devall tools call`."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from devall_cli.cli.app import app
from devall_cli.cli.auth_cmd import print_auth_notice, print_server_warning
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
    write_json_text,
    write_product,
)
from devall_cli.cli.completion import complete_node, complete_tool
from devall_cli.cli.policy_options import (
    AllowToolOption,
    ApproveOption,
    DenyToolOption,
    SandboxOption,
    apply_sandbox,
    cli_policy,
)
from devall_cli.cli.targets import (
    CommandOption,
    CwdOption,
    EnvOption,
    HeaderOption,
    McpConfigOption,
    OptionalWorkflowArg,
    ServerOption,
    StartupTimeoutOption,
    UrlOption,
    WaitForLogOption,
    split_positionals,
    target_of,
    target_scope,
    target_workflow,
)
from devall_cli.errors import ExitCode, UsageError
from devall_cli.text import clean_value, visible

tools_app = typer.Typer(
    help="Inspect and call the tools a workflow's nodes will see.", no_args_is_help=True
)
app.add_typer(tools_app, name="tools")

NodeOption = Annotated[
    str | None,
    typer.Option(
        "--node", metavar="ID", help="Only this node's tools.", autocompletion=complete_node
    ),
]


@tools_app.command("list")
@error_boundary
def list_command(
    workflow: OptionalWorkflowArg = None,
    node: NodeOption = None,
    schema: Annotated[
        bool, typer.Option("--schema", help="Show each tool's input schema.")
    ] = False,
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
    allow_tool: AllowToolOption = None,
    deny_tool: DenyToolOption = None,
    approve: ApproveOption = None,
    sandbox: SandboxOption = None,
) -> None:
    """List each tool (final name after prefixes and filters) with its nodes and server.

    Starts the workflow's MCP servers (local ones as subprocesses) to ask them for their tools.
    Under a tool policy, a policy column says what happens to each tool's calls (allow, ask,
    refuse), and denied tools are listed too, marked deny: models are not offered them.
    """
    from devall_cli.cli.listing_json import masked_json
    from devall_cli.cli.tool_table import policy_of_rows, tools_table
    from devall_cli.tools.catalog import list_workflow_tools
    from devall_cli.tools.manager import ToolManager

    policy = cli_policy(allow_tool, deny_tool, approve)
    apply_sandbox(sandbox)
    target = target_of(locals())
    loaded = target_workflow(workflow, target, var, env_file)
    scope = target_scope(target, loaded)
    redactor = loaded.redactor

    async def go() -> list[Any]:
        # Listing reads function modules from their source: no user code runs.
        async with ToolManager(
            loaded,
            import_functions=False,
            on_auth=print_auth_notice,
            on_warning=print_server_warning,
            stop_at_once=True,
            direct_client=True,
            policy=policy,
            list_denied=True,
        ) as manager:
            rows = await list_workflow_tools(manager, node, scope)
            verdicts.update(policy_of_rows(manager, rows))
            return rows

    verdicts: dict[tuple[str, str], Any] = {}
    rows = run_async(go())
    if json_output:
        # Masked and written in one pass: a server may list thousands of tools.
        document = masked_json(
            [
                {
                    "name": r.name,
                    "original_name": r.original_name,
                    "nodes": list(r.nodes),
                    "source": r.source,
                    "server": r.server,
                    "description": r.description,
                    "input_schema": dict(r.input_schema),
                    "title": r.title,
                    "annotations": dict(r.annotations) if r.annotations else None,
                    "output_schema": dict(r.output_schema) if r.output_schema else None,
                    "roots": list(r.roots),
                    "_meta": dict(r.meta) if r.meta is not None else None,
                    "execution": dict(r.execution) if r.execution is not None else None,
                    "icons": [dict(icon) for icon in r.icons] if r.icons else None,
                    **verdict_fields(r, verdicts),
                }
                for r in rows
            ],
            redactor,
        )
        write_json_text(document + "\n")
        return
    out = stdout_console()
    if rows:
        out.print(tools_table(rows, redactor, verdicts))
    if schema:
        for r in rows:
            out.print()
            out.print(shown(f"{r.name}:"))
            from rich.text import Text  # here: `devall --help` does not import Rich

            # ensure_ascii: every control character comes out as a JSON escape.
            out.print(Text(json.dumps(redactor.value(dict(r.input_schema)), indent=2)))
    if not rows:
        print_line(stderr_console(), "devall: no tools found")


@tools_app.command("call")
@error_boundary
def call_command(
    workflow: OptionalWorkflowArg = None,
    tool: Annotated[
        str | None,
        typer.Argument(
            metavar="TOOL", help="Final tool name (with prefix).", autocompletion=complete_tool
        ),
    ] = None,
    args: Annotated[
        str, typer.Option("--args", metavar="JSON", help="Arguments as a JSON object.")
    ] = "{}",
    node: NodeOption = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", metavar="DIR", help="Run directory (default: logs/<run-id>)."),
    ] = None,
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
    allow_tool: AllowToolOption = None,
    deny_tool: DenyToolOption = None,
    approve: ApproveOption = None,
    sandbox: SandboxOption = None,
) -> None:
    """Call one tool as a node would, and print its normalized result.

    events.jsonl, result.json and attachments/ are written to the run directory, as by `run`.
    Exit 1 if the tool returned an error result, 4/5 for connection or protocol failures.
    A tool the tool policy denies is refused (exit 1); one it would ask about or refuse is
    called: asking for the call is the approval. A tool that runs as an MCP task
    (execution.taskSupport) is waited for to its end, its status in events.jsonl.
    """
    from devall_cli.cli.records import print_run_files, run_records
    from devall_cli.engine.session import RunSession
    from devall_cli.run_files import new_run_id
    from devall_cli.tool_run import run_tool_call
    from devall_cli.tools.arguments import InvalidArgumentsResult
    from devall_cli.tools.catalog import default_run_dir, tool_nodes
    from devall_cli.tools.policy import REFUSED_BY_POLICY

    arguments = _parse_args(args)
    policy = cli_policy(allow_tool, deny_tool, approve)
    apply_sandbox(sandbox)
    target = target_of(locals())
    workflow, tool = split_positionals(workflow, tool, target, "TOOL")
    loaded = target_workflow(workflow, target, var, env_file)
    scope = target_scope(target, loaded)
    tool_nodes(loaded, node, scope)  # an unknown --node: before any server or file
    run_id = new_run_id("tools-call")
    run_dir = out if out is not None else default_run_dir(run_id)
    session = RunSession(loaded, run_id=run_id, run_dir=run_dir)
    elicitor = terminal_elicitor(loaded.redactor)
    with _removed_after_usage_error(run_dir), session.held(), run_records(session) as records:
        try:
            outcome = run_async(
                run_tool_call(
                    session,
                    tool,
                    arguments,
                    node,
                    elicitor=elicitor,
                    on_auth=print_auth_notice,
                    scope=scope,
                    policy=policy,
                )
            )
        except UsageError:
            raise  # no call was made: nothing to keep
        except BaseException:
            print_run_files(run_dir)  # the records of the failure are there too
            raise
    _report(tool, outcome, run_dir, loaded.redactor, json_output)
    print_run_files(run_dir)
    records.raise_failures()
    result = outcome.result
    if isinstance(result, InvalidArgumentsResult) and not json_output:
        _report_refused(tool, result.problems, outcome.spec.input_schema, loaded.redactor)
    elif result.error_class == REFUSED_BY_POLICY and not json_output:
        print_line(stderr_console(), f"devall: error: tool '{tool}' was refused by the tool policy")
        print_line(stderr_console(), f"  hint: allow it with --allow-tool {tool}")
    elif result.is_error and not json_output:
        print_line(stderr_console(), f"devall: error: tool '{tool}' returned an error")
    if result.is_error:
        raise typer.Exit(int(ExitCode.FAILED))


def verdict_fields(row: Any, verdicts: Mapping[tuple[str, str], Any]) -> dict[str, Any]:
    """`"policy": {"decision", "layer", "rule"}` of a listed tool, for --json; and
    `"policy_by_node"` when the verdicts of its nodes differ."""
    found = {node: verdicts[(node, row.name)] for node in row.nodes if (node, row.name) in verdicts}
    fields = [{"decision": v.decision, "layer": v.layer, "rule": v.rule} for v in found.values()]
    if not fields:
        return {"policy": {"decision": "allow", "layer": "default", "rule": None}}
    extra: dict[str, Any] = {"policy": fields[0]}
    if fields.count(fields[0]) != len(fields):  # the nodes' verdicts differ
        extra["policy_by_node"] = dict(zip(found, fields, strict=True))
    return extra


def _report(tool: str, outcome: Any, run_dir: Path, redactor: Any, json_output: bool) -> None:
    """The product: the result's blocks, or its JSON document."""
    from devall_cli.tools.arguments import InvalidArgumentsResult
    from devall_cli.tools.normalize import blocks_to_json

    result = outcome.result
    # Attachment paths as the caller can open them: from the current directory.
    blocks = [_from_cwd(block, run_dir) for block in blocks_to_json(result.blocks)]
    if json_output:
        print_json(
            redactor.value(
                {
                    "tool": tool,
                    "ok": not result.is_error,
                    "is_error": result.is_error,
                    "blocks": blocks,
                    "duration_ms": round(outcome.duration_ms, 1),
                    **({"meta": dict(result.meta)} if result.meta else {}),
                }
            )
        )
    elif not isinstance(result, InvalidArgumentsResult):  # its problems are told as errors
        _print_blocks(blocks, redactor, to_stderr=result.is_error)


def _report_refused(
    tool: str, problems: Sequence[str], schema: Mapping[str, Any], redactor: Any
) -> None:
    """One error line per problem of the arguments, and the tool's parameters as the hint."""
    from devall_cli.tools.arguments import describe_parameters

    console = stderr_console()
    for problem in problems:
        print_line(console, f"devall: error: {redactor.text(problem)}")
    parameters = redactor.text(describe_parameters(schema))
    hint = f"'{tool}' was not called; its parameters (* = required): {parameters}"
    print_line(console, f"  hint: {hint}")


@contextlib.contextmanager
def _removed_after_usage_error(run_dir: Path) -> Iterator[None]:
    """Remove the run directory (and the folders made for it) when the command ends in a usage
    error: no tool was called, so its records hold nothing to keep."""
    made = folders_to_make(run_dir)
    try:
        yield
    except UsageError:
        remove_run_dir(run_dir, made)
        raise


def _from_cwd(block: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    if block.get("type") == "attachment" and block.get("path"):
        return {**block, "path": str(run_dir / block["path"])}
    return block


def terminal_elicitor(redactor: Any) -> Any:
    """The operator's form for a server's elicitation requests, when stdin and stderr are a
    terminal (else None: the `elicitation` policy, or declining, answers)."""
    import sys

    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None
    from devall_cli.cli.elicit_form import TerminalForm
    from devall_cli.cli.human_prompt import TerminalPrompt

    console = stderr_console()
    return TerminalForm(TerminalPrompt(console, redactor, fd=sys.stdin.fileno()))


def _parse_args(text: str) -> dict[str, Any]:
    return parse_arguments(text)


def parse_arguments(text: str) -> dict[str, Any]:
    """`--args JSON`: a JSON object, or a usage error."""
    from devall_cli import json_limits

    try:
        value = json_limits.loads(text)
    except json_limits.JsonLimitError as exc:
        raise typer.BadParameter(f"the JSON {exc}", param_hint="--args") from None
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"not valid JSON: {exc}", param_hint="--args") from None
    if not isinstance(value, dict):
        raise typer.BadParameter("must be a JSON object", param_hint="--args")
    cleaned: dict[str, Any] = clean_value(value)  # "\ud800" escapes and argv's surrogates
    return cleaned


def _print_blocks(blocks: list[dict[str, Any]], redactor: Any, to_stderr: bool) -> None:
    """The product: text blocks as they are (tabs kept), attachments as paths, resource links,
    and structured data as JSON unless the text already says it."""
    from devall_cli.block_text import render_link, repeats_text

    texts = [block["text"] for block in blocks if block["type"] == "text"]
    lines: list[str] = []
    for block in blocks:
        if block["type"] == "text":
            lines.append(redactor.text(block["text"]))
        elif block["type"] == "attachment":
            lines.append(
                f"[{block['kind']} saved: {block['path']} "
                f"({block['mime_type']}, {block['size']} bytes)]"
            )
        elif block["type"] == "resource_link":
            link = (block.get("name"), block.get("mime_type"), block.get("description"))
            lines.append(redactor.text(render_link(block["uri"], *link)))
        elif not repeats_text(block["data"], texts):
            lines.append(json.dumps(redactor.value(block["data"]), ensure_ascii=False))
    text = "".join(line + "\n" for line in lines)
    if to_stderr:  # an error result is a diagnostic: escaped like every other one
        from rich.text import Text

        stderr_console().print(Text(visible(text.rstrip("\n"), multiline=True)))
    else:
        write_product(text)
