"""`devall probe`: are all declared MCP servers reachable and healthy? (a CI gate)"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from devall_cli.cli.app import app
from devall_cli.cli.common import (
    EnvFileOption,
    JsonOption,
    VarOption,
    error_boundary,
    print_json,
    print_line,
    run_async,
    shown,
    stdout_console,
)
from devall_cli.cli.completion import complete_workflow
from devall_cli.cli.lock_cmd import (
    LockedOption,
    LockOption,
    StrictOption,
    change_line,
    counts_text,
    default_lock,
    drift_junit,
    lock_hint,
    summary_line,
)
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
    ServerOption,
    StartupTimeoutOption,
    UrlOption,
    WaitForLogOption,
    adhoc_target,
    target_workflow,
)
from devall_cli.errors import ExitCode

if TYPE_CHECKING:
    from devall_cli.tools.lock_diff import Drift

# The failure class of a tool name two servers offer one node (what `run` refuses, exit 3).
CONFLICT = "duplicate_tool_name"


@app.command("probe")
@error_boundary
def probe_command(
    workflow: Annotated[
        Path | None,
        typer.Argument(
            metavar="[WORKFLOW]",
            help="Workflow whose servers to probe.",
            autocompletion=complete_workflow,
        ),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout", min=0.1, metavar="SECONDS", help="Bound on the whole probe, in seconds."
        ),
    ] = 30.0,
    junit: Annotated[
        Path | None, typer.Option("--junit", metavar="PATH", help="Write a JUnit XML report.")
    ] = None,
    locked: LockedOption = False,
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
    allow_tool: AllowToolOption = None,
    deny_tool: DenyToolOption = None,
    approve: ApproveOption = None,
    sandbox: SandboxOption = None,
) -> None:
    """Start or connect every distinct MCP server once, concurrently, and list its tools.

    Exit 0 only if every server is ok; 1 if any is unhealthy. Under a tool policy (the
    workflow's graph-wide one and the --allow-tool, --deny-tool and --approve options) a
    policy column counts the tools it denies, asks about or refuses; a sandbox column says
    whether a local server runs sandboxed.

    With --locked (or --lock FILE) each server's tools are compared with the lockfile too:
    a drift column, the changes below the table, exit 7 on breaking drift (docs/lockfile.md).
    """
    from devall_cli.tools import probe

    policy = cli_policy(allow_tool, deny_tool, approve)
    apply_sandbox(sandbox)

    target = adhoc_target(
        url=url,
        header=header,
        command=command,
        env=env,
        cwd=cwd,
        wait_for_log=wait_for_log,
        # an ad-hoc server has the whole probe to start or answer
        startup_timeout=startup_timeout if startup_timeout is not None or not command else timeout,
        mcp_config=mcp_config,
        server=server,
        timeout=timeout if url is not None else None,
    )
    loaded = target_workflow(workflow, target, var, env_file)
    redactor = loaded.redactor
    locked_servers = _locked(workflow, target, lock) if locked or lock is not None else None
    outcome = run_async(
        probe.probe_workflow(
            loaded, timeout=timeout, policy=policy, surfaces=locked_servers is not None
        )
    )
    rows = [redactor.value(_row(r)) for r in outcome.servers]
    conflicts = [redactor.value(_row(c)) for c in outcome.conflicts]
    drift = None
    if locked_servers is not None:
        drift = probe_drift(lock or default_lock(workflow, target), locked_servers, outcome, rows)
    drifted = drift is not None and drift.fails(strict)
    if junit is not None:
        _write_junit(junit, rows, conflicts, drift, strict)
    if json_output:
        document = {"ok": outcome.ok and not drifted, "servers": rows, "conflicts": conflicts}
        print_json(document if drift is None else {**document, "drift": drift.to_json(strict)})
    else:
        _print_table(rows, conflicts, drift)
    if not outcome.ok:
        raise typer.Exit(int(ExitCode.FAILED))
    if drifted:
        raise typer.Exit(int(ExitCode.DRIFT))


def _locked(workflow: Path | None, target: Any, lock: Path | None) -> dict[str, Any]:
    """The lockfile's servers, read before any server starts (exit 3 when it is not one)."""
    from devall_cli.tools.lockfile import read_lock

    path = lock if lock is not None else default_lock(workflow, target)
    return read_lock(path, make_hint=lock_hint(workflow, target, lock))


def probe_drift(
    lock: Path, locked: dict[str, Any], outcome: Any, rows: list[dict[str, Any]]
) -> Drift:
    """The drift of the servers that answered (the others are `not_checked`); each row gets its
    server's `drift` (status, counts, changes)."""
    from devall_cli.tools.lock_diff import compare_surfaces

    skipped = [r["id"] for r in rows if r["id"] not in outcome.surfaces]
    drift = compare_surfaces(str(lock), locked, outcome.surfaces, skipped)
    by_id = {server.id: server.to_json() for server in drift.servers}
    for row in rows:
        found = dict(by_id[row["id"]])
        found.pop("id")
        row["drift"] = found
    return drift


def _row(report: Any) -> dict[str, Any]:
    """A report as JSON: its tuples as lists."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(report).items()}


def _print_table(
    rows: list[dict[str, Any]], conflicts: list[dict[str, Any]], drift: Drift | None = None
) -> None:
    from rich.table import Table  # imported when used: every command's start-up pays for it

    columns = ["server", "kind", "target", "status", "protocol", "name", "tools"]
    with_policy = any(_policy(r) for r in rows)
    with_sandbox = any(r["sandbox"] is not None for r in rows)
    columns += [*(["policy"] if with_policy else []), *(["sandbox"] if with_sandbox else [])]
    columns += ["drift"] if drift is not None else []
    table = Table(*columns, "connect", "list")
    for r in rows:
        extra = [*([_policy(r)] if with_policy else []), *([_sandbox(r)] if with_sandbox else [])]
        extra += [_drift(r)] if drift is not None else []
        cells = (
            r["id"],
            r["kind"],
            r["target"],
            "ok" if r["ok"] else f"FAIL {r['status']}",
            _protocol(r),
            r["server_name"] or "",
            f"{r['tools']} ({r['task_only']} task-only)" if r["task_only"] else str(r["tools"]),
            *extra,
            _ms(r["connect_ms"]),
            _ms(r["list_ms"]),
        )
        table.add_row(*(shown(cell) for cell in cells))
    console = stdout_console()
    console.print(table)
    for r in rows:
        if r["task_only"]:
            print_line(console, f"{r['id']}: {_tools(r)}")
    for r in rows:
        if r["roots"]:  # only roots the user configured: none by default
            print_line(console, f"roots offered to {r['id']}: {', '.join(r['roots'])}")
    for r in rows:
        if not r["ok"]:
            print_line(console, f"{r['id']}: {r['status']}: {r['error']}")
            for line in r["log_tail"][-5:]:
                print_line(console, f"  | {line}")
            if r.get("hint"):
                print_line(console, f"  hint: {r['hint']}")
    for c in conflicts:
        print_line(console, f"node {c['node']}: {CONFLICT}: {c['error']}")
    for server in drift.servers if drift is not None else ():
        if server.changes:
            counts = counts_text(server.breaking, server.compatible)
            print_line(console, f"{server.id}: drift: {server.status} ({counts})")
            for change in server.changes:
                print_line(console, f"  {change_line(change)}")
    if drift is not None:
        print_line(console, summary_line(drift))


def _drift(row: dict[str, Any]) -> str:
    """`none`, `2 breaking, 1 compatible`, `not checked`, or `added` (not in the lockfile)."""
    drift = row["drift"]
    if drift["status"] == "not_checked":
        return "not checked"
    if drift["status"] == "added":
        return "added"
    return counts_text(drift["breaking"], drift["compatible"]) or "none"


def _policy(row: dict[str, Any]) -> str:
    """`2 deny, 1 ask`: the tools the policy does not simply allow ("" when it allows all)."""
    counts = row.get("policy") or {}
    return ", ".join(f"{counts[k]} {k}" for k in ("deny", "ask", "refuse") if counts.get(k))


def _sandbox(row: dict[str, Any]) -> str:
    """`sandboxed`, `unsandboxed (prefer: REASON)`, or "" for a server with no sandbox."""
    sandbox = row.get("sandbox")
    if not isinstance(sandbox, dict):
        return ""
    if sandbox.get("active"):
        return "sandboxed"
    reason = sandbox.get("reason") or "the sandbox cannot run here"
    return f"unsandboxed ({sandbox.get('mode') or 'prefer'}: {reason})"


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.0f} ms"


def _protocol(row: dict[str, Any]) -> str:
    """`2025-11-25 (light client)`: the version the client that spoke to the server agreed."""
    version = row["protocol_version"] or ""
    return f"{version} ({row['client']} client)" if version and row["client"] else version


def _tools(row: dict[str, Any]) -> str:
    """`16 tools (1 task-only, called as an MCP task)`."""
    extra = f" ({row['task_only']} task-only, called as an MCP task)" if row["task_only"] else ""
    return f"{row['tools']} tools{extra}"


def _write_junit(
    path: Path,
    rows: list[dict[str, Any]],
    conflicts: list[dict[str, Any]],
    drift: Drift | None = None,
    strict: bool = False,
) -> None:
    from devall_cli.cli.junit import JUnitCase, JUnitFailure, write_junit

    cases = []
    drifts = {server.id: server for server in drift.servers} if drift is not None else {}
    for r in rows:
        failures = []
        if not r["ok"]:
            text = "\n".join([r["target"], *r["log_tail"]])
            failures.append(JUnitFailure(r["status"], r["error"] or "", text))
        if r["id"] in drifts and drift is not None:
            failures += drift_junit(drifts.pop(r["id"]), drift.lock, strict)
        cases.append(
            JUnitCase(
                name=r["id"],
                classname=f"probe.{r['kind']}",
                seconds=((r["connect_ms"] or 0) + (r["list_ms"] or 0)) / 1000,
                failures=failures,
                output=f"{r['target']}: {_tools(r)}, protocol {_protocol(r) or None}"
                + "".join(f", {text}" for text in (_policy(r), _sandbox(r)) if text)
                + (f", drift: {_drift(r)}" if "drift" in r else ""),
            )
        )
    for server in drifts.values():  # in the lockfile, no longer in the workflow
        failures = drift_junit(server, drift.lock if drift else "", strict)
        case = JUnitCase(name=server.id, classname="probe.lock", seconds=0, failures=failures)
        cases.append(case)
    for c in conflicts:
        failure = JUnitFailure(CONFLICT, c["error"], ", ".join(c["servers"]))
        cases.append(
            JUnitCase(
                name=f"node {c['node']}", classname="probe.tools", seconds=0, failures=[failure]
            )
        )
    write_junit(path, "devall probe", cases)
