"""`devall run`: run a workflow, trace it on stderr, print the final answer on stdout."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from devall_cli.cli.app import app
from devall_cli.cli.common import (
    EnvFileOption,
    JsonOption,
    SignalState,
    VarOption,
    WorkflowArg,
    error_boundary,
    load,
    print_line,
    run_async,
    stderr_console,
    write_json_text,
    write_product,
)
from devall_cli.errors import RunFailedError, UsageError
from devall_cli.text import clean_text


def read_task(task: str | None, task_file: str | None) -> str:
    """The task text from --task, --task-file PATH, or --task-file - (stdin)."""
    if task is not None and task_file is not None:
        raise UsageError("give --task or --task-file, not both")
    if task_file == "-":
        # Bytes, decoded here as a file is: the stream's own decoding would raise mid-read.
        return _decode_task(sys.stdin.buffer.read(), "the task from standard input")
    if task_file is not None:
        try:
            raw = Path(task_file).read_bytes()
        except OSError as exc:
            raise UsageError(f"cannot read --task-file {task_file}: {exc}") from None
        return _decode_task(raw, f"--task-file {task_file}")
    # argv holds bytes that are not UTF-8 as lone surrogates (surrogateescape).
    return clean_text(task or "")


def _decode_task(raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = f"byte 0x{raw[exc.start]:02x} at byte offset {exc.start}"
        raise UsageError(f"cannot read {what}: it is not valid UTF-8 ({where})") from None


@app.command("run")
@error_boundary
def run_command(
    workflow: WorkflowArg,
    task: Annotated[
        str | None,
        typer.Option("--task", metavar="TEXT", help="The task given to the start nodes."),
    ] = None,
    task_file: Annotated[
        str | None,
        typer.Option(
            "--task-file", metavar="PATH|-", help="Read the task from a file, - for stdin."
        ),
    ] = None,
    var: VarOption = None,
    env_file: EnvFileOption = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", metavar="DIR", help="Run directory (default: logs/<run-id>)."),
    ] = None,
    json_output: JsonOption = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Show only the final answer.")
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Show full tool results and server logs.")
    ] = False,
) -> None:
    """Run WORKFLOW: start its MCP servers, run the graph, print the final answer on stdout.

    The trace goes to stderr; events.jsonl, result.json, attachments/ and servers/*.log are
    written to the run directory. --json prints result.json on stdout instead of the answer.
    """
    from devall_cli.engine.events import EventBus
    from devall_cli.engine.runner import new_run_id, run_workflow
    from devall_cli.trace.console import ConsoleSink
    from devall_cli.trace.jsonl import JsonlSink
    from devall_cli.trace.result import ResultSink

    if quiet and verbose:
        raise UsageError("give --quiet or --verbose, not both")
    task_text = read_task(task, task_file)
    loaded = load(workflow, var, env_file)
    run_id = new_run_id(loaded)
    run_dir = out if out is not None else Path("logs") / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    redactor = loaded.redactor
    bus = EventBus(on_sink_error=lambda sink, exc: _warn_sink(sink, exc, redactor.text))
    signals = SignalState()
    console = ConsoleSink(
        stderr_console(), redactor, "quiet" if quiet else "verbose" if verbose else "normal"
    )
    jsonl = JsonlSink(run_dir / "events.jsonl", redactor)
    result_path = run_dir / "result.json"
    for sink in (
        console,
        jsonl,
        ResultSink(result_path, redactor, node_ids=[n.id for n in loaded.graph.nodes]),
    ):
        bus.subscribe(sink)
    try:
        result = run_async(
            run_workflow(
                loaded,
                task=task_text,
                run_id=run_id,
                run_dir=run_dir,
                bus=bus,
                interrupt_code=signals.exit_code,
            ),
            signals,
        )
    finally:
        console.close()
        jsonl.close()
        if json_output and result_path.exists():
            write_json_text(result_path.read_text(encoding="utf-8"))
    if not json_output:
        output = redactor.text(result.output)
        write_product(output + ("" if output.endswith("\n") else "\n"))
    lost = [e for e in bus.sink_errors if e.startswith(("ResultSink", "JsonlSink"))]
    if lost:
        raise RunFailedError(redactor.text(f"the run's records are incomplete: {lost[0]}"))


def _warn_sink(sink: object, exc: BaseException, mask: Callable[[str], str]) -> None:
    """A sink failed (once): say so, but let the run go on."""
    name = type(sink).__name__
    print_line(stderr_console(), f"devall: warning: {mask(f'{name} failed: {exc}')}")
