"""`devall batch`: run a workflow over every task of a file, N at a time, resumable."""

from __future__ import annotations

import functools
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from devall_cli.cli.app import app
from devall_cli.cli.common import (
    STATE,
    EnvFileOption,
    JsonOption,
    SignalState,
    VarOption,
    WorkflowArg,
    color_disabled,
    error_boundary,
    parse_vars,
    print_json,
    print_line,
    run_async,
    stderr_console,
    write_product,
)
from devall_cli.cli.cost_options import (
    MaxCostOption,
    MaxModelCallsOption,
    MaxTokensOption,
    PricingOption,
    batch_budget_error,
    budget_limits,
    budget_meter,
    cost_line,
    read_pricing,
)
from devall_cli.cli.otel_options import OtelContentOption, OtelOption, tracing_for
from devall_cli.cli.policy_options import (
    AllowToolOption,
    ApproveOption,
    DenyToolOption,
    SandboxOption,
    answers_approver,
    apply_sandbox,
    cli_policy,
)
from devall_cli.errors import RunFailedError, UsageError

if TYPE_CHECKING:
    from devall_cli.batch.executor import ExecutorOptions
    from devall_cli.batch.tasks import BatchTask
    from devall_cli.batch.workflows import WorkflowSet
    from devall_cli.config.model import Workflow
    from devall_cli.config.pricing import PriceEntry
    from devall_cli.engine.budget import BudgetLimits
    from devall_cli.nodes.human_input import Answers
    from devall_cli.tools.policy import ToolPolicy
    from devall_cli.trace.otel_export import Tracing


@app.command("batch")
@error_boundary
def batch_command(
    workflow: WorkflowArg,
    tasks: Annotated[
        str,
        typer.Argument(
            metavar="TASKS", help="Tasks: JSONL, CSV with a header, or text; - for stdin."
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option("--out", metavar="DIR", help="Batch directory (default: logs/batch-<id>)."),
    ] = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", min=1, metavar="N", help="Tasks at once.")
    ] = 4,
    executor: Annotated[
        str,
        typer.Option(
            "--executor",
            metavar="local|ray",
            help="Where the tasks run: this process, or Ray workers (the ray extra).",
        ),
    ] = "local",
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address",
            metavar="ADDR",
            help="Join the Ray cluster at ADDR, HOST:PORT of its head (default: start one"
            " on 127.0.0.1, stopped at the end).",
        ),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume/--no-resume",
            help="Skip the tasks already ok in DIR/results.jsonl (default), or run all again.",
        ),
    ] = True,
    max_failures: Annotated[
        int | None,
        typer.Option(
            "--max-failures", min=1, metavar="N", help="Start no more tasks after N failed."
        ),
    ] = None,
    var: VarOption = None,
    env_file: EnvFileOption = None,
    task_format: Annotated[
        str | None,
        typer.Option(
            "--format",
            metavar="jsonl|csv|text",
            help="The format of TASKS (default: from its name, else JSONL or text).",
        ),
    ] = None,
    max_steps: Annotated[
        int,
        typer.Option("--max-steps", min=1, metavar="N", help="Most node visits in one task."),
    ] = 1000,
    answers: Annotated[
        Path | None,
        typer.Option(
            "--answers",
            metavar="FILE",
            exists=True,
            dir_okay=False,
            help="Replies for human nodes, the same for every task (as for devall run).",
        ),
    ] = None,
    json_output: JsonOption = False,
    record: Annotated[
        Path | None,
        typer.Option(
            "--record",
            metavar="DIR",
            help="Record each task's exchanges into DIR/<task-id>.jsonl, a cassette that "
            "`devall run --replay` replays (local executor).",
        ),
    ] = None,
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
    """Run WORKFLOW once per task in TASKS, N tasks at a time.

    Each task's run directory is DIR/runs/<task-id>/, exactly as `devall run` writes it;
    DIR/results.jsonl gets one line per finished task, DIR/summary.json the totals. Running
    the same command with the same --out again skips the tasks already ok. Progress goes to
    stderr; the summary to stdout (--json: summary.json's content). Exit 0 when every task is
    ok, 1 when any failed or did not run, 8 when the batch's budget (the sum over its tasks)
    stopped it, 130/143 on Ctrl-C/SIGTERM. Tool calls the tool
    policy leaves to a person take their answers from --answers, else are refused.
    """
    from devall_cli.batch.executor import ExecutorOptions, check_executor
    from devall_cli.batch.tasks import FORMATS, read_tasks
    from devall_cli.batch.workflows import WorkflowSet
    from devall_cli.run_files import new_run_id

    if record is not None:
        _check_record_dir(record, executor)
    if (otel or otel_content) and executor != "local":
        raise UsageError("--otel works with the local executor only (--executor local)")
    policy = cli_policy(allow_tool, deny_tool, approve)
    apply_sandbox(sandbox)
    options = ExecutorOptions(concurrency=concurrency, ray_address=ray_address)
    check_executor(executor, options)
    limits = budget_limits(max_cost, max_tokens, max_model_calls)
    if executor != "local" and (limits is not None or pricing is not None):
        raise UsageError("--pricing and the budget options work with --executor local only")
    if task_format is not None and task_format not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, got {task_format!r}")
    cli_vars = parse_vars(var)
    task_list = read_tasks(tasks, task_format)
    first = _load_first(workflow, cli_vars, env_file, task_list[0])
    replies = _human_replies(answers, first)
    workflows = WorkflowSet(workflow, cli_vars=cli_vars, env_file=env_file)
    workflows.add(task_list[0].vars, first)
    batch_dir = out if out is not None else Path("logs") / f"batch-{new_run_id(first)}"
    setup = _Setup(
        tasks=task_list,
        workflows=workflows,
        batch_dir=batch_dir,
        executor=executor,
        options=options,
        resume=resume,
        max_failures=max_failures,
        max_steps=max_steps,
        answers=replies,
        record_dir=record,
        policy=policy,
        price_file=read_pricing(pricing),
        budget=limits,
        about={
            "workflow": str(workflow),
            "tasks_file": tasks,
            "out": str(batch_dir),
            "executor": executor,
            "concurrency": concurrency,
            "max_failures": max_failures,
            "resume": resume,
        },
    )
    # Ray's tasks run in other processes: an OTEL_ variable does not trace them.
    traces = tracing_for(otel, otel_content) if executor == "local" else nullcontext(None)
    with traces as tracing:
        summary = _run_batch(setup, json_output, tracing)
    _raise_for(summary, batch_dir)


@dataclass(frozen=True)
class _Setup:
    """Everything the batch needs, checked."""

    tasks: list[BatchTask]
    workflows: WorkflowSet
    batch_dir: Path
    executor: str
    options: ExecutorOptions
    resume: bool
    max_failures: int | None
    max_steps: int
    answers: Answers | None
    record_dir: Path | None
    policy: ToolPolicy | None
    price_file: tuple[PriceEntry, ...]
    budget: BudgetLimits | None
    about: dict[str, Any]


def _check_record_dir(record: Path, executor: str) -> None:
    """--record DIR: the local executor, and a folder (made when missing)."""
    if executor != "local":
        raise UsageError("--record works with the local executor only (--executor local)")
    try:
        record.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot record into {record}: {exc.strerror or exc}") from None


def _human_replies(answers: Path | None, workflow: Workflow) -> Answers | None:
    """The answers file, checked; without one, a workflow with human nodes is refused."""
    from devall_cli.cli.run_cmd import load_replies
    from devall_cli.config.model import walk_nodes
    from devall_cli.nodes.base import asks_operator

    if answers is not None:
        return load_replies(answers, workflow)
    human = [path for path, node in walk_nodes(workflow.graph) if asks_operator(node)]
    if human:
        names = ", ".join(f"'{name}'" for name in human)
        raise UsageError(
            f"nobody can answer the human node(s) {names} in a batch; "
            "give their replies with --answers FILE"
        )
    return None


def _load_first(
    path: Path, cli_vars: dict[str, str], env_file: Path | None, task: BatchTask
) -> Workflow:
    """The workflow with the first task's vars: a broken file stops the batch before it runs."""
    from devall_cli.workflow.loader import load_workflow

    loaded = load_workflow(path, cli_vars={**cli_vars, **task.vars}, env_file=env_file)
    STATE.mask = loaded.redactor.text
    console = stderr_console()
    for issue in loaded.warnings:
        print_line(console, f"devall: warning: {issue.headline()}")
    return loaded


def _run_batch(
    setup: _Setup, json_output: bool, tracing: Tracing | None = None
) -> dict[str, Any]:
    """Hold the batch directory, run, and print the summary (also after an interruption)."""
    from devall_cli.batch.executor import make_executor
    from devall_cli.batch.progress import BatchProgress
    from devall_cli.batch.runner import BatchRun, open_results, plan_resume
    from devall_cli.batch.shared_tools import SharedSources
    from devall_cli.batch.task_run import TaskEnv, warm_up
    from devall_cli.run_files import locked_run_dir

    signals = SignalState()
    console = stderr_console()
    with locked_run_dir(setup.batch_dir, "batch"):
        previous, log = open_results(setup.batch_dir, setup.resume)
        if previous.bad_lines:
            lines = ", ".join(str(n) for n in previous.bad_lines[:10])
            print_line(console, f"devall: warning: results.jsonl: lines not read: {lines}")
        plan = plan_resume(setup.tasks, previous.outcomes, setup.resume)
        meter = budget_meter(setup.budget, "batch")  # one budget for the whole batch
        env = TaskEnv(
            batch_dir=setup.batch_dir,
            workflows=setup.workflows,
            pool=SharedSources(setup.batch_dir),
            max_steps=setup.max_steps,
            interrupt_code=signals.exit_code,
            answers=setup.answers,
            record_dir=setup.record_dir,
            policy=setup.policy,
            approver=functools.partial(answers_approver, setup.answers),
            price_file=setup.price_file,
            budget=meter,
            tracing=tracing,
        )
        executor = make_executor(setup.executor, env, setup.options)
        progress = BatchProgress(console, live=console.is_terminal and not color_disabled())
        run = BatchRun(
            setup.tasks,
            plan,
            log,
            previous=previous.outcomes,
            about=setup.about,
            listener=progress,
            max_failures=setup.max_failures,
            budget=meter,
        )
        warm_up(setup.workflows.get(setup.tasks[0].vars))
        try:
            run_async(run.run(executor, signals.exit_code), signals)
        finally:
            progress.close()
            if run.summary is not None:
                _print_summary(run.summary, json_output)
        for failure in (run.write_failure, run.summary_failure):
            if failure:
                raise RunFailedError(failure)
    assert run.summary is not None
    return run.summary


def _print_summary(summary: dict[str, Any], json_output: bool) -> None:
    if json_output:
        print_json(summary)
        return
    counts, tokens = summary["counts"], summary["tokens"]
    lines = [
        f"{counts['total']} tasks: {counts['ok']} ok, {counts['failed']} failed, "
        f"{counts['interrupted']} interrupted, "
        + (f"{counts['budget']} stopped by the budget, " if counts.get("budget") else "")
        + f"{counts['not_run']} not run "
        f"({counts['ran']} run now, {counts['skipped']} skipped as already ok)",
        f"wall time {summary['wall_ms'] / 1000:.1f} s, {summary['throughput_per_s']:.2f} tasks/s; "
        f"tokens {tokens['total']} (prompt {tokens['prompt']}, "
        f"completion {tokens['completion']})",
        cost_line(summary.get("cost")),
    ]
    if summary["slowest"]:
        slowest = ", ".join(
            f"{item['id']} {item['duration_ms'] / 1000:.2f} s" for item in summary["slowest"]
        )
        lines.append(f"slowest: {slowest}")
    lines.append(f"results: {Path(summary['out']) / 'results.jsonl'}")
    write_product("\n".join(lines) + "\n")


def _raise_for(summary: dict[str, Any], batch_dir: Path) -> None:
    """Exit 1 when a task failed or did not run."""
    if summary["exit_code"] == 0:
        return
    stopped = batch_budget_error(summary, batch_dir)
    if stopped is not None:
        raise stopped
    counts = summary["counts"]
    parts = [f"{counts['failed']} of {counts['total']} tasks failed"]
    if counts["not_run"] or counts["interrupted"]:
        parts.append(f"{counts['not_run'] + counts['interrupted']} did not finish")
    if summary["stopped_early"]:
        parts.append(f"stopped after {summary['max_failures']} failures (--max-failures)")
    raise RunFailedError("; ".join(parts) + f"; see {batch_dir / 'results.jsonl'}", details=[])
