"""`devall probe`: are all declared MCP servers reachable and healthy? (a CI gate)"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer

from devall_cli.cli.app import app
from devall_cli.cli.common import (
    STATE,
    EnvFileOption,
    JsonOption,
    VarOption,
    error_boundary,
    load,
    print_json,
    print_line,
    run_async,
    shown,
    stdout_console,
)
from devall_cli.errors import ExitCode, UsageError
from devall_cli.redaction import Redactor, flag_secrets, is_secret_name, url_credentials
from devall_cli.text import visible


@app.command("probe")
@error_boundary
def probe_command(
    workflow: Annotated[
        Path | None, typer.Argument(metavar="[WORKFLOW]", help="Workflow whose servers to probe.")
    ] = None,
    url: Annotated[
        str | None,
        typer.Option("--url", metavar="URL", help="Probe one remote server at this URL instead."),
    ] = None,
    header: Annotated[
        list[str] | None,
        typer.Option("--header", metavar="'Name: value'", help="HTTP header for --url."),
    ] = None,
    command: Annotated[
        str | None,
        typer.Option("--command", metavar="'CMD ARG...'", help="Probe one local stdio server."),
    ] = None,
    wait_for_log: Annotated[
        str | None,
        typer.Option("--wait-for-log", metavar="REGEX", help="Readiness log line for --command."),
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
) -> None:
    """Start or connect every distinct MCP server once, concurrently, and list its tools.

    Exit 0 only if every server is ok; 1 if any is unhealthy.
    """
    from devall_cli.tools import probe

    given = [x for x in (workflow, url, command) if x is not None]
    if len(given) != 1:
        raise UsageError("give exactly one of WORKFLOW, --url or --command")
    if workflow is not None:
        loaded = load(workflow, var, env_file, tools_only=True)
        targets = probe.workflow_targets(loaded)
        redactor = loaded.redactor
    else:
        headers = _parse_headers(header or [])
        redactor = adhoc_redactor(headers, url, command)
        STATE.mask = redactor.text
        if url is not None:
            targets = [probe.adhoc_url_target(url, headers, timeout)]
        else:
            assert command is not None
            targets = [probe.adhoc_command_target(command, wait_for_log, timeout)]
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


def adhoc_redactor(headers: dict[str, str], url: str | None, command: str | None) -> Redactor:
    """The secrets of an ad-hoc probe, by the same rule as a workflow's."""
    import contextlib
    import shlex

    secrets = [value for name, value in headers.items() if is_secret_name(name)]
    if url is not None:
        secrets += url_credentials(url)
    if command is not None:
        # An unbalanced quote is reported when the command is parsed to be run.
        with contextlib.suppress(ValueError):
            secrets += flag_secrets(shlex.split(command))
    return Redactor(secrets)


def _parse_headers(values: list[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for value in values:
        name, sep, rest = value.partition(":")
        if not sep or not name.strip():
            raise typer.BadParameter(
                f"expected 'Name: value', got {value!r}", param_hint="--header"
            )
        headers[name.strip()] = rest.strip()
    return headers


def _row(report: Any) -> dict[str, Any]:
    row = asdict(report)
    row["nodes"] = list(row["nodes"])
    row["log_tail"] = list(row["log_tail"])
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
        if not r["ok"]:
            print_line(console, f"{r['id']}: {r['status']}: {r['error']}")
            for line in r["log_tail"][-5:]:
                print_line(console, f"  | {line}")


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.0f} ms"


def _write_junit(path: Path, rows: list[dict[str, Any]]) -> None:
    from xml.etree import ElementTree

    failures = sum(1 for r in rows if not r["ok"])
    suite = ElementTree.Element(
        "testsuite", name="devall probe", tests=str(len(rows)), failures=str(failures)
    )
    for r in rows:
        seconds = ((r["connect_ms"] or 0) + (r["list_ms"] or 0)) / 1000
        case = ElementTree.SubElement(
            suite,
            "testcase",
            classname=_xml(f"probe.{r['kind']}"),
            name=_xml(r["id"]),
            time=f"{seconds:.3f}",
        )
        if not r["ok"]:
            failure = ElementTree.SubElement(
                case, "failure", type=_xml(r["status"]), message=_xml(r["error"] or "")
            )
            failure.text = _xml("\n".join([r["target"], *r["log_tail"]]))
        else:
            out = ElementTree.SubElement(case, "system-out")
            out.text = _xml(
                f"{r['target']}: {r['tools']} tools, protocol {r['protocol_version']}"
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    ElementTree.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def _xml(text: str) -> str:
    """Text XML 1.0 can hold: the characters it forbids (most controls) shown escaped."""
    return visible(text, multiline=True)
