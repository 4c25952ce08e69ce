"""`devall run`: run a workflow, trace it on stderr, print the final answer on stdout."""

from __future__ import annotations

import functools
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO

import typer

from devall_cli import limits
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
from devall_cli.cli.cost_options import (
    MaxCostOption,
    MaxModelCallsOption,
    MaxTokensOption,
    PricingOption,
    cost_session,
)
from devall_cli.cli.lock_cmd import LockedOption, LockOption, check_run_lock
from devall_cli.cli.otel_options import OtelContentOption, OtelOption, tracing_for
from devall_cli.cli.policy_options import (
    AllowToolOption,
    ApproveOption,
    DenyToolOption,
    SandboxOption,
    apply_sandbox,
    cli_policy,
    policy_manager,
)
from devall_cli.errors import UsageError
from devall_cli.text import clean_text

if TYPE_CHECKING:
    from devall_cli.cassette import Tape
    from devall_cli.cli.human_prompt import TerminalPrompt
    from devall_cli.config.model import Workflow
    from devall_cli.engine.session import RunSession
    from devall_cli.nodes.human_input import Answers, HumanInput
    from devall_cli.tools.policy import ToolPolicy
    from devall_cli.trace.console import ConsoleSink, Verbosity
    from devall_cli.trace.otel_export import Tracing


def read_task(task: str | None, task_file: str | None) -> str:
    """The task text from --task, --task-file PATH, or --task-file - (stdin)."""
    if task is not None and task_file is not None:
        raise UsageError("give --task or --task-file, not both")
    if task_file is None:
        # argv holds bytes that are not UTF-8 as lone surrogates (surrogateescape).
        return clean_text(task or "")
    try:
        if task_file == "-":
            raw = _read_capped(sys.stdin.buffer, task_file)
            what = "the task from standard input"
        else:
            with open(task_file, "rb") as handle:
                raw = _read_capped(handle, task_file)
            what = f"--task-file {task_file}"
    except OSError as exc:
        raise UsageError(f"cannot read --task-file {task_file}: {exc}") from None
    return _decode_task(raw, what)


def _decode_task(raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = f"byte 0x{raw[exc.start]:02x} at byte offset {exc.start}"
        raise UsageError(f"cannot read {what}: it is not valid UTF-8 ({where})") from None


def _read_capped(handle: BinaryIO, name: str) -> bytes:
    """At most `limits.TASK_BYTES`; a regular file is refused from its size before reading."""
    limit = limits.TASK_BYTES
    size = _regular_file_size(handle)
    if size is not None and size > limit:
        raise _task_too_large(name, f"{size} bytes")
    # Pipes and devices (`/dev/zero`) tell no size: one byte past the limit says it is over.
    raw = handle.read(limit + 1)
    if len(raw) > limit:
        raise _task_too_large(name, f"more than {limit} bytes")
    return raw


def _regular_file_size(handle: BinaryIO) -> int | None:
    """The size of the regular file behind `handle`; None for a pipe, a device or a stand-in."""
    try:
        info = os.fstat(handle.fileno())
    except (OSError, ValueError):  # a stream without a descriptor (stdin under a test runner)
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def _task_too_large(name: str, size: str) -> UsageError:
    limit = limits.TASK_BYTES
    return UsageError(
        f"--task-file {name} is too large: {size}; "
        f"a task may hold at most {limit // limits.MB} MB ({limit} bytes)"
    )


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
    max_steps: Annotated[
        int,
        typer.Option(
            "--max-steps",
            min=1,
            metavar="N",
            help="Most node visits in one run; a loop that never exits ends there (exit 1).",
        ),
    ] = 1000,
    answers: Annotated[
        Path | None,
        typer.Option(
            "--answers",
            metavar="FILE",
            exists=True,
            dir_okay=False,
            help="Replies for human nodes (YAML or JSON: {node: [reply, ...], '*': [...]}).",
        ),
    ] = None,
    report: Annotated[
        bool,
        typer.Option(
            "--report", help="Write RUN_DIR/report.html at the end (see devall report)."
        ),
    ] = False,
    record: Annotated[
        Path | None,
        typer.Option(
            "--record",
            metavar="CASSETTE",
            help="Record every model, MCP and human exchange of the run into this JSONL file "
            "(secrets masked; see docs/cassettes.md).",
        ),
    ] = None,
    replay: Annotated[
        Path | None,
        typer.Option(
            "--replay",
            metavar="CASSETTE",
            help="Answer the run's requests from a recorded cassette: no network, no server, "
            "no API key. A request the recording does not hold stops the run (exit 6).",
        ),
    ] = None,
    replay_only: Annotated[
        str | None,
        typer.Option(
            "--replay-only",
            metavar="model|tools",
            help="With --replay: replay only the model (real servers) or only the tools "
            "(real model).",
        ),
    ] = None,
    locked: LockedOption = False,
    lock: LockOption = None,
    allow_tool: AllowToolOption = None,
    deny_tool: DenyToolOption = None,
    approve: ApproveOption = None,
    sandbox: SandboxOption = None,
    pricing: PricingOption = None,
    max_cost: MaxCostOption = None,
    max_tokens: MaxTokensOption = None,
    max_model_calls: MaxModelCallsOption = None,
    otel: OtelOption = False,
    otel_content: OtelContentOption = False,
) -> None:
    """Run WORKFLOW: start its MCP servers, run the graph, print the final answer on stdout.

    The trace goes to stderr; events.jsonl, result.json, attachments/ and servers/*.log are
    written to the run directory. --json prints result.json on stdout instead of the answer.
    Human nodes ask on the terminal, or take their replies from --answers FILE; so do the
    tool calls the tool policy leaves to a person (docs/policy.md).
    """
    from devall_cli.engine.session import RunSession
    from devall_cli.run_files import new_run_id

    if quiet and verbose:
        raise UsageError("give --quiet or --verbose, not both")
    policy = cli_policy(allow_tool, deny_tool, approve)
    apply_sandbox(sandbox)
    task_text = read_task(task, task_file)
    if task is None and task_file is None:
        print_line(
            stderr_console(),
            "devall: warning: no task given: the start nodes get an empty task "
            "(give --task TEXT or --task-file PATH)",
        )
    check_tape_options(record, replay, replay_only)
    loaded = load(workflow, var, env_file, environ=replay_environ(replay))
    tape = open_tape(loaded, workflow, var, env_file, record, replay, replay_only)
    if tape is not None and replay is not None:
        tape.hint = rerecord_hint(workflow, task_text, task_file, replay)
    replies = load_replies(answers, loaded) if answers is not None else None
    if locked or lock is not None:  # breaking drift: nothing is run (exit 7)
        check_run_lock(loaded, workflow, lock)
    run_id = new_run_id(loaded)
    run_dir = out if out is not None else Path("logs") / run_id
    mode: Verbosity = "quiet" if quiet else "verbose" if verbose else "normal"
    session = RunSession(
        loaded,
        run_id=run_id,
        run_dir=run_dir,
        on_sink_error=lambda sink, exc: _warn_sink(sink, exc, loaded.redactor.text),
        **cost_session(pricing, max_cost, max_tokens, max_model_calls),
    )
    # One run at a time per directory: a second one would interleave its lines with ours.
    with tracing_for(otel, otel_content) as tracing, session.held():
        _run_in(
            session,
            task_text,
            mode=mode,
            json_output=json_output,
            max_steps=max_steps,
            replies=replies,
            report=report,
            tape=tape,
            policy=policy,
            tracing=tracing,
        )


def check_tape_options(record: Path | None, replay: Path | None, only: str | None) -> None:
    """--record and --replay exclude each other; --replay-only needs --replay."""
    from devall_cli.cassette import ONLY_CHOICES

    if record is not None and replay is not None:
        raise UsageError("give --record or --replay, not both")
    if only is not None and replay is None:
        raise UsageError("--replay-only needs --replay CASSETTE")
    if only is not None and only not in ONLY_CHOICES:
        raise UsageError(f"--replay-only takes {' or '.join(ONLY_CHOICES)}, not '{only}'")


def replay_environ(replay: Path | None) -> dict[str, str] | None:
    """For a replay: the environment with the placeholders the recording took from outside."""
    if replay is None:
        return None
    from devall_cli.cassette import replay_environ as recorded_under

    return recorded_under(replay, os.environ)


def open_tape(
    loaded: Workflow,
    workflow: Path,
    var: list[str] | None,
    env_file: Path | None,
    record: Path | None,
    replay: Path | None,
    only: str | None,
) -> Tape | None:
    """The run's tape: recording into `record`, replaying `replay`, or None."""
    from devall_cli.cassette import open_replay

    if replay is not None:
        return open_replay(replay, loaded.redactor, only=only)
    if record is None:
        return None
    from devall_cli.cli.common import parse_vars
    from devall_cli.workflow.placeholders_used import recording_of

    return recording_of(record, loaded, parse_vars(var), env_file, os.environ)


def rerecord_hint(workflow: Path, task: str, task_file: str | None, cassette: Path) -> str:
    """How to record the cassette again, as a command to copy (the task quoted when short)."""
    import shlex

    if task_file is not None:
        given = f"--task-file {shlex.quote(task_file)}"
    elif len(task) <= 200 and "\n" not in task:
        given = f"--task {shlex.quote(task)}"
    else:
        given = "--task ... (the same task)"
    where = shlex.quote(str(workflow))
    command = f"devall run {where} {given} --record {shlex.quote(str(cassette))}"
    return f"if the change is intended, record the cassette again: {command}"


def warn_unused(tape: Tape) -> None:
    """After a replay that ended well: warn about recorded exchanges it never asked for."""
    unused = tape.unused()
    if unused:
        print_line(
            stderr_console(),
            f"devall: warning: replay: {len(unused)} recorded exchange(s) of {tape.path} "
            "were never asked for (the run did less than the recording)",
        )


def load_replies(path: Path, workflow: Workflow) -> Answers:
    """The answers file, checked against the workflow's human nodes (ConfigError, exit 3)."""
    from devall_cli.config.model import walk_nodes
    from devall_cli.nodes.base import asks_operator
    from devall_cli.workflow.answers import load_answers

    names: set[str] = set()
    for node_path, node in walk_nodes(workflow.graph):
        if asks_operator(node):
            names.update((node_path, node.id))
    return load_answers(path, names, workflow.redactor)


def human_input_for(answers: Answers | None, console: ConsoleSink) -> HumanInput | None:
    """--answers, else the terminal when stdin and stderr are one, else None (asking fails)."""
    from devall_cli.nodes.human_input import ScriptedReplies

    if answers is not None:
        return ScriptedReplies(answers)
    return terminal_prompt(console)


def terminal_prompt(console: ConsoleSink) -> TerminalPrompt | None:
    """The terminal, when stdin and stderr are one (else None)."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None
    from devall_cli.cli.human_prompt import TerminalPrompt

    return TerminalPrompt(
        console.console, console.redactor, fd=sys.stdin.fileno(), pause=console.paused
    )


def node_extras(
    answers: Answers | None, console: ConsoleSink, terminal: TerminalPrompt | None = None
) -> dict[str, Any]:
    """What nodes get from the command: the human reply source and, on a terminal, the form
    for servers' elicitation requests (sharing the terminal's reader and its lock)."""
    from devall_cli.nodes.agent_calls import ELICITOR
    from devall_cli.nodes.human_input import HUMAN_INPUT

    extras: dict[str, Any] = {}
    terminal = terminal or terminal_prompt(console)
    human = human_input_for(answers, console) if answers is not None else terminal
    if human is not None:
        extras[HUMAN_INPUT] = human
    if terminal is not None:
        from devall_cli.cli.elicit_form import TerminalForm

        extras[ELICITOR] = TerminalForm(terminal)
    return extras


def _run_in(
    session: RunSession,
    task: str,
    *,
    mode: Verbosity,
    json_output: bool,
    max_steps: int,
    replies: Answers | None = None,
    report: bool = False,
    tape: Tape | None = None,
    policy: ToolPolicy | None = None,
    tracing: Tracing | None = None,
) -> None:
    """Run with the trace on stderr and the records in `run_dir`; print the answer on stdout.

    The answer is printed even when a record could not be written (a full disk); that is
    reported after it, naming the file, and fails the command.
    """
    from devall_cli.batch.task_run import traced
    from devall_cli.cli.approval_prompt import approver_for
    from devall_cli.cli.records import RunRecords, print_run_files
    from devall_cli.config.model import walk_nodes
    from devall_cli.engine.runner import run_workflow
    from devall_cli.trace.console import ConsoleSink
    from devall_cli.trace.result import json_text

    redactor = session.redactor
    signals = SignalState()
    console = ConsoleSink(stderr_console(), redactor, mode, recorder=session.recorder)
    session.subscribe(console)
    node_ids = [path for path, _ in walk_nodes(session.workflow.graph)]
    records = RunRecords(session, node_ids)
    # One terminal reader for human nodes, servers' forms and tool approvals: one question at
    # a time.
    terminal = terminal_prompt(console)
    extras = {**node_extras(replies, console, terminal), **traced(tracing, session)}
    make_manager = policy_manager(policy, approver_for(replies, console, terminal=terminal))
    # Local servers get devall's light MCP client: the run starts without fastmcp's stack.
    tools = functools.partial(make_manager, direct_client="local")
    report_failure: str | None = None
    try:
        result = run_async(
            run_workflow(
                session,
                task=task,
                tool_manager_factory=tools,
                interrupt_code=signals.exit_code,
                max_steps=max_steps,
                extras=extras,
                tape=tape,
            ),
            signals,
        )
    finally:
        console.close()
        records.close()
        if tape is not None and tape.records():
            tape.close()
            if mode != "quiet":
                print_line(stderr_console(), f"cassette: {redactor.text(str(tape.path))}")
        if json_output and records.document is not None:
            write_json_text(json_text(records.document))
        if report:  # also for a failed or interrupted run: that is when it helps most
            report_failure = _write_report(session.run_dir)
        if mode != "quiet":
            print_run_files(session.run_dir)
    if tape is not None and not tape.records():
        warn_unused(tape)
    if not json_output:
        output = redactor.text(result.output)
        write_product(output + ("" if output.endswith("\n") else "\n"))
    records.raise_failures(report_failure)


def _write_report(run_dir: Path) -> str | None:
    """Write the run's report and print `report: PATH` on stderr; the failure, if it failed."""
    from devall_cli.errors import DevallError
    from devall_cli.report import write_report

    try:
        path = write_report(run_dir)
    except DevallError as exc:
        print_line(stderr_console(), f"devall: warning: no report: {exc.message}")
        return exc.message
    print_line(stderr_console(), f"report: {path}")
    return None


def _warn_sink(sink: object, exc: BaseException, mask: Callable[[str], str]) -> None:
    """A sink failed (once): say so, but let the run go on."""
    # A file sink says which file it could not write; any other sink is named by its class.
    text = getattr(sink, "failure", None) or f"{type(sink).__name__} failed: {exc}"
    print_line(stderr_console(), f"devall: warning: {mask(text)}")
