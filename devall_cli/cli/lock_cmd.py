"""`devall tools lock` and `devall tools diff`: the lockfile of a workflow's tool surface.

Also what `probe --locked` and `run --locked` share with them: the lockfile options, where the
lockfile is by default, and the drift as text.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from devall_cli.cli.common import (
    EnvFileOption,
    JsonOption,
    VarOption,
    error_boundary,
    print_json,
    print_line,
    run_async,
    stderr_console,
    write_product,
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
    target_of,
    target_words,
    target_workflow,
)
from devall_cli.cli.tools_cmd import tools_app
from devall_cli.errors import DriftError

if TYPE_CHECKING:
    from devall_cli.tools.lock_diff import Change, Drift, ServerDrift

LOCK_NAME = "devall.lock"  # tools/lockfile.py LOCK_NAME (not imported: --help stays light)

LockOption = Annotated[
    Path | None,
    typer.Option(
        "--lock",
        metavar="FILE",
        help=f"The lockfile (default: {LOCK_NAME} beside the workflow).",
    ),
]
LockedOption = Annotated[
    bool,
    typer.Option(
        "--locked",
        help=f"Check the servers' tools against the lockfile ({LOCK_NAME}, or --lock FILE): "
        "breaking drift exits 7.",
    ),
]
StrictOption = Annotated[
    bool,
    typer.Option("--strict", help="Any drift fails (exit 7), compatible drift too."),
]


def default_lock(workflow: str | Path | None, target: Any) -> Path:
    """`devall.lock` beside the workflow (or the mcpServers file), else in this folder."""
    if workflow is not None:
        return Path(workflow).parent / LOCK_NAME
    if target.mcp_config is not None:
        return Path(target.mcp_config).parent / LOCK_NAME
    return Path(LOCK_NAME)


def lock_hint(workflow: str | Path | None, target: Any, lock: Path | None) -> str:
    """The command that writes (or accepts a change into) the lockfile."""
    command = f"devall tools lock {target_words(str(workflow) if workflow else None, target)}"
    return command + (f" -o {lock}" if lock is not None else "")


@tools_app.command("lock")
@error_boundary
def lock_command(
    workflow: OptionalWorkflowArg = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help=f"Write the lockfile here (default: {LOCK_NAME} beside the workflow; - for "
            "stdout).",
        ),
    ] = None,
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
    """Write the lockfile of every MCP server's tools, resources and prompts, to commit.

    Starts each server once and records what it lists (original tool names, schemas,
    annotations; descriptions as their first line and sha256). The file has no time stamp:
    locking an unchanged surface writes the same bytes. See docs/lockfile.md.
    """
    from devall_cli.tools import lockfile

    target = target_of(locals())
    loaded = target_workflow(workflow, target, var, env_file)
    path = output if output is not None else default_lock(workflow, target)
    servers = run_async(lockfile.live_servers(loaded))
    text = lockfile.lock_text({"version": lockfile.LOCK_VERSION, "servers": servers})
    if str(path) == "-":
        write_product(text)
        return
    written = lockfile.write_lock(path, text)
    tools = sum(len(entry.get("tools") or {}) for entry in servers.values())
    counts = f"{_count(len(servers), 'server')}, {_count(tools, 'tool')}"
    print_line(stderr_console(), f"{'wrote' if written else 'unchanged:'} {path} ({counts})")


@tools_app.command("diff")
@error_boundary
def diff_command(
    workflow: OptionalWorkflowArg = None,
    lock: LockOption = None,
    strict: StrictOption = False,
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
    """Compare the servers' live tools with the lockfile; breaking changes are marked.

    Exit 0 with no drift or compatible drift only, 7 with breaking drift (any drift with
    --strict), 3 when the lockfile is missing or malformed, 4 when a server cannot be reached.
    """
    from devall_cli.tools import lockfile
    from devall_cli.tools.lock_diff import compare_surfaces

    target = target_of(locals())
    loaded = target_workflow(workflow, target, var, env_file)
    path = lock if lock is not None else default_lock(workflow, target)
    hint = lock_hint(workflow, target, lock)
    locked = lockfile.read_lock(path, make_hint=hint)  # before any server starts
    drift = compare_surfaces(str(path), locked, run_async(lockfile.live_servers(loaded)))
    if json_output:
        print_json(drift.to_json(strict))
    else:
        write_product("".join(line + "\n" for line in drift_lines(drift)))
    if drift.fails(strict):
        raise drift_error(drift, hint)


def check_run_lock(loaded: Any, workflow: Path, lock: Path | None) -> None:
    """`run --locked`: refuse to run on breaking drift (the diff on stderr, exit 7); a warning
    line for compatible drift."""
    from devall_cli.tools import lockfile
    from devall_cli.tools.lock_diff import compare_surfaces

    path = lock if lock is not None else default_lock(workflow, None)
    hint = lock_hint(workflow, _NO_TARGET, lock)
    locked = lockfile.read_lock(path, make_hint=hint)
    drift = compare_surfaces(str(path), locked, run_async(lockfile.live_servers(loaded)))
    console = stderr_console()
    if drift.fails():
        for line in drift_lines(drift, changed_only=True):
            print_line(console, line)
        error = drift_error(drift, hint)
        error.message += ": the run was not started"
        raise error
    if drift.compatible:
        print_line(
            console,
            f"devall: warning: the tools drifted from {path} "
            f"({_count(drift.compatible, 'compatible change')}; "
            f"'devall tools diff {workflow}' shows them)",
        )


class _NoTarget:
    """The ad-hoc target of `run`: none."""

    url = command = mcp_config = None


_NO_TARGET = _NoTarget()


def drift_error(drift: Drift, hint: str) -> DriftError:
    """The error (exit 7) of a drift that fails the check."""
    if drift.breaking:
        what = _count(drift.breaking, "breaking change")
    else:
        what = f"{_count(drift.compatible, 'compatible change')} (--strict)"
    return DriftError(
        f"the tools drifted from {drift.lock}: {what}",
        hint=f"if the change is intended, accept it: {hint}",
    )


def drift_lines(drift: Drift, *, changed_only: bool = False) -> list[str]:
    """The drift as text: per server its changes (`+` added, `-` removed, `~` changed, with the
    path of each schema change and `[breaking]`), then a summary line."""
    lines: list[str] = []
    for server in drift.servers:
        if changed_only and not server.changes:
            continue
        counts = counts_text(server.breaking, server.compatible)
        lines.append(f"server {server.id}: {server.status}" + (f" ({counts})" if counts else ""))
        lines += [f"  {change_line(change)}" for change in server.changes]
    lines.append(summary_line(drift))
    return lines


def summary_line(drift: Drift) -> str:
    """`no drift from devall.lock`, or the counts of the changes."""
    if not (drift.breaking or drift.compatible):
        return f"no drift from {drift.lock}"
    parts = [f"{drift.breaking} breaking", f"{drift.compatible} compatible"]
    return f"drift from {drift.lock}: {', '.join(parts)}"


def counts_text(breaking: int, compatible: int) -> str:
    """`2 breaking, 1 compatible` (only the counts that are not 0)."""
    parts = [(breaking, "breaking"), (compatible, "compatible")]
    return ", ".join(f"{n} {word}" for n, word in parts if n)


def drift_junit(server: ServerDrift, lock: str, strict: bool) -> list[Any]:
    """The JUnit failure of a server whose drift fails the check (none when it does not)."""
    from devall_cli.cli.junit import JUnitFailure

    failing = server.breaking or (strict and server.compatible)
    if not failing:
        return []
    counts = counts_text(server.breaking, server.compatible)
    text = "\n".join(change_line(change) for change in server.changes)
    return [JUnitFailure("drift", f"the tools drifted from {lock}: {counts}", text)]


def change_line(change: Change) -> str:
    """`~ tool: input_schema.required: new required property 'q'  [breaking]`."""
    kind = change.kind
    sign = "+" if kind.endswith("_added") else "-" if kind.endswith("_removed") else "~"
    # The other messages name what changed themselves (`readOnlyHint true -> unset`).
    path = change.path if kind.startswith(_PATHS_SHOWN) else ""
    subject = ": ".join(part for part in (change.tool, path) if part)
    text = f"{sign} {subject}: {change.message}" if subject else f"{sign} {change.message}"
    return text + ("  [breaking]" if change.breaking else "")


_PATHS_SHOWN = ("input_schema", "output_schema", "resource", "prompt")


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
