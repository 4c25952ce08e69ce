"""`devall probe`: are all declared MCP servers reachable and healthy? (a CI gate)"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
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
    run_async,
    shown,
    stdout_console,
)
from devall_cli.cli.completion import complete_workflow
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
    """Start or connect every distinct MCP server once, concurrently, and list its tools.

    Exit 0 only if every server is ok; 1 if any is unhealthy.
    """
    from devall_cli.tools import probe

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
    targets = probe.workflow_targets(loaded)
    redactor = loaded.redactor
    reports = run_async(probe.probe_servers(targets, timeout=timeout))
    rows = [redactor.value(_row(r)) for r in reports]
    ok = all(r.ok for r in reports)
    if junit is not None:
        _write_junit(junit, rows)
    if json_output:
        print_json({"ok": ok, "servers": rows})
    else:
        _print_table(rows)
    if not ok:
        raise typer.Exit(int(ExitCode.FAILED))


def _row(report: Any) -> dict[str, Any]:
    row = asdict(report)
    row["nodes"] = list(row["nodes"])
    row["log_tail"] = list(row["log_tail"])
    row["roots"] = list(row["roots"])
    return row


def _print_table(rows: list[dict[str, Any]]) -> None:
    from rich.table import Table  # imported when used: every command's start-up pays for it

    table = Table(
        "server", "kind", "target", "status", "protocol", "name", "tools", "connect", "list"
    )
    for r in rows:
        cells = (
            r["id"],
            r["kind"],
            r["target"],
            "ok" if r["ok"] else f"FAIL {r['status']}",
            r["protocol_version"] or "",
            r["server_name"] or "",
            str(r["tools"]),
            _ms(r["connect_ms"]),
            _ms(r["list_ms"]),
        )
        table.add_row(*(shown(cell) for cell in cells))
    console = stdout_console()
    console.print(table)
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


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.0f} ms"


def _write_junit(path: Path, rows: list[dict[str, Any]]) -> None:
    from devall_cli.cli.junit import JUnitCase, JUnitFailure, write_junit

    cases = []
    for r in rows:
        failures = []
        if not r["ok"]:
            text = "\n".join([r["target"], *r["log_tail"]])
            failures.append(JUnitFailure(r["status"], r["error"] or "", text))
        cases.append(
            JUnitCase(
                name=r["id"],
                classname=f"probe.{r['kind']}",
                seconds=((r["connect_ms"] or 0) + (r["list_ms"] or 0)) / 1000,
                failures=failures,
                output=f"{r['target']}: {r['tools']} tools, protocol {r['protocol_version']}",
            )
        )
    write_junit(path, "devall probe", cases)
