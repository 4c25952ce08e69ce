"""One task of a batch: one run session in `runs/<task>/`, written exactly as `devall run` does.

The run directory holds events.jsonl, result.json and attachments/ of that task; its run id is
the directory's name. A task that runs again (resume) starts from an empty directory. Whatever
happens, the task ends with one TaskOutcome, handed to `report` (also when it is cancelled:
then `interrupted`, and the cancellation goes on).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
import stat
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devall_cli.batch.results import TaskOutcome
from devall_cli.batch.shared_tools import TASK_STORE, SharedSources
from devall_cli.batch.tasks import BatchTask
from devall_cli.batch.workflows import WorkflowSet
from devall_cli.cassette import Tape
from devall_cli.config.cost import CostTotals
from devall_cli.config.model import Workflow
from devall_cli.config.pricing import PriceEntry
from devall_cli.engine.budget import BudgetMeter
from devall_cli.engine.graph import DEFAULT_MAX_STEPS
from devall_cli.engine.runner import ProviderMaker, run_workflow
from devall_cli.engine.session import RunSession
from devall_cli.errors import BudgetError, ConfigError, DevallError, ExitCode, RunFailedError
from devall_cli.nodes.human_input import HUMAN_INPUT, Answers, ScriptedReplies
from devall_cli.tools.policy import Approver, ToolPolicy
from devall_cli.trace.recorder import RunResult

if TYPE_CHECKING:
    from devall_cli.trace.otel_export import Tracing

RUNS_DIR = "runs"
Report = Callable[[TaskOutcome], None]


@dataclass(frozen=True)
class TaskEnv:
    """What every task of a batch run by this process shares."""

    batch_dir: Path
    workflows: WorkflowSet
    pool: SharedSources
    max_steps: int = DEFAULT_MAX_STEPS
    interrupt_code: Callable[[], int] = lambda: int(ExitCode.INTERRUPTED)
    provider_factory: ProviderMaker | None = None
    environ: Mapping[str, str] | None = None
    answers: Answers | None = None  # replies of human nodes; each task uses them from the start
    record_dir: Path | None = None  # a cassette per task, `<dir>/<task>.jsonl` (--record DIR)
    policy: ToolPolicy | None = None  # the command line's layer of the tool policy
    # A new approver for each task (the answers file's tool_approvals, each task from its
    # first answer); None: calls the policy leaves to a person are refused.
    approver: Callable[[], Approver] | None = None
    price_file: tuple[PriceEntry, ...] = ()  # --pricing FILE, over each workflow's pricing:
    # The batch's budget, shared by every task this process runs (None: no budget).
    budget: BudgetMeter | None = None
    tracing: Tracing | None = None  # --otel: each task's run is one trace


def warm_up(workflow: Workflow) -> None:
    """Do once, before the batch's clock starts, what the first tasks would each wait for.

    That is importing the run machinery and, when an agent talks to a model over HTTP (every
    provider but `scripted`), the HTTP stack and its TLS context: ~0.1-0.7 s that N tasks
    started at once would otherwise all wait for, inside the batch's wall time.
    """
    from devall_cli.config.model import walk_nodes
    from devall_cli.tools import attachments, manager  # noqa: F401
    from devall_cli.trace import jsonl, result  # noqa: F401

    providers = {getattr(node.config, "provider", None) for _, node in walk_nodes(workflow.graph)}
    if providers - {None, "scripted"}:  # a node with a model behind HTTP
        from devall_cli.providers.http_client import shared_ssl_context

        shared_ssl_context()


def task_run_dir(batch_dir: Path, task: BatchTask) -> Path:
    """`<batch>/runs/<task>`."""
    return batch_dir / RUNS_DIR / task.dir_name


async def run_task(task: BatchTask, env: TaskEnv, report: Report) -> None:
    """Run `task`; `report` gets its outcome exactly once, whatever happens."""
    started = time.monotonic()
    relative = f"{RUNS_DIR}/{task.dir_name}"
    try:
        workflow = env.workflows.get(task.vars)
    except ConfigError as exc:
        report(_config_failure(task, exc, started))
        return
    session: RunSession | None = None
    try:
        session = _new_session(task, workflow, env)
        with session.held():
            outcome = await _run(task, session, env, started, relative)
    except asyncio.CancelledError:
        report(_ended(task, session, "interrupted", env.interrupt_code(), started, relative))
        raise
    except DevallError as exc:
        status = "budget" if isinstance(exc, BudgetError) else "failed"
        outcome = _ended(task, session, status, int(exc.exit_code), started, relative)
        outcome = _with_error(outcome, workflow.redactor.text(exc.message))
        outcome = dataclasses.replace(
            outcome,
            details=tuple(workflow.redactor.text(line) for line in exc.details),
            hint=workflow.redactor.text(exc.hint) if exc.hint else None,
        )
    except Exception as exc:  # a bug must cost one task, not the batch
        outcome = _ended(task, session, "failed", int(ExitCode.FAILED), started, relative)
        text = f"internal error: {type(exc).__name__}: {exc}"
        outcome = _with_error(outcome, workflow.redactor.text(text))
    report(outcome)


def _new_session(task: BatchTask, workflow: Workflow, env: TaskEnv) -> RunSession:
    run_dir = task_run_dir(env.batch_dir, task)
    clear_run_dir(run_dir)
    return RunSession(
        workflow,
        run_id=task.dir_name,
        run_dir=run_dir,
        on_sink_error=_ignore,
        price_file=env.price_file,
        budget=env.budget,
    )


async def _run(
    task: BatchTask, session: RunSession, env: TaskEnv, started: float, relative: str
) -> TaskOutcome:
    from devall_cli.tools.attachments import AttachmentStore
    from devall_cli.trace.jsonl import JsonlSink
    from devall_cli.trace.result import ResultSink

    redactor, run_dir = session.redactor, session.run_dir
    jsonl = JsonlSink(run_dir / "events.jsonl", redactor)
    node_ids = env.workflows.node_ids(session.workflow)
    results = ResultSink(
        run_dir / "result.json", redactor, node_ids=node_ids, recorder=session.recorder
    )
    session.subscribe(jsonl)
    session.subscribe(results)
    extras = {**(_extras(env) or {}), **traced(env.tracing, session)}
    token = TASK_STORE.set(AttachmentStore(run_dir))
    tape = _tape(task, session, env)
    cassette_failure: str | None = None
    try:
        await run_workflow(
            session,
            task=task.task,
            tool_manager_factory=env.pool.tool_manager_factory(
                env.policy, env.approver() if env.approver is not None else None
            ),
            provider_factory=env.provider_factory,
            environ=env.environ,
            interrupt_code=env.interrupt_code,
            max_steps=env.max_steps,
            extras=extras,
            tape=tape,
        )
    finally:
        TASK_STORE.reset(token)
        jsonl.close()
        if tape is not None:  # also for a failed task: its recording shows how it failed
            try:
                tape.close()
            except DevallError as exc:
                cassette_failure = exc.message
    failures = [f for f in (jsonl.failure, results.failure, cassette_failure) if f]
    if failures:
        raise RunFailedError(failures[0])
    return _ended(task, session, "ok", 0, started, relative)


def _tape(task: BatchTask, session: RunSession, env: TaskEnv) -> Tape | None:
    """The task's recording into `<record_dir>/<task>.jsonl`, when the batch records."""
    if env.record_dir is None:
        return None
    import os

    from devall_cli.workflow.placeholders_used import recording_of

    workflows = env.workflows
    return recording_of(
        env.record_dir / f"{task.dir_name}.jsonl",
        session.workflow,
        {**workflows.cli_vars, **task.vars},
        workflows.env_file,
        os.environ if env.environ is None else env.environ,
    )


def traced(tracing: Tracing | None, session: RunSession) -> dict[str, Any]:
    """With tracing on, the run's span sink on `session`; the extras that give each tool call
    the trace context of its span (nodes.agent_calls.REQUEST_META)."""
    if tracing is None:
        return {}
    from devall_cli.nodes.agent_calls import REQUEST_META

    sink = tracing.sink(session.workflow, session.redactor)
    session.subscribe(sink)
    return {REQUEST_META: sink.request_meta}


def _extras(env: TaskEnv) -> dict[str, Any] | None:
    """Human nodes read the answers file (each task from its first reply), else fail at once."""
    return {HUMAN_INPUT: ScriptedReplies(env.answers)} if env.answers is not None else None


def _ended(
    task: BatchTask,
    session: RunSession | None,
    status: str,
    exit_code: int,
    started: float,
    relative: str,
) -> TaskOutcome:
    """The outcome from what the session's recorder saw (nothing when it never started)."""
    result: RunResult | None = session.recorder.result() if session is not None else None
    mask = session.redactor.text if session is not None else str
    output = mask(result.output) if result is not None else ""
    error = mask(result.error) if result is not None and result.error else None
    tokens = result.tokens if result is not None else None
    return TaskOutcome(
        id=task.id,
        status=status,
        output=output,
        error=error,
        duration_ms=round((time.monotonic() - started) * 1000, 3),
        tokens=_tokens(tokens),
        run_dir=relative if session is not None else "",
        exit_code=exit_code,
        cost=result.cost if result is not None else CostTotals(),
    )


def _with_error(outcome: TaskOutcome, message: str) -> TaskOutcome:
    return outcome if outcome.error else dataclasses.replace(outcome, error=message)


def _config_failure(task: BatchTask, exc: ConfigError, started: float) -> TaskOutcome:
    """The task's `vars` give a workflow that does not load: the task fails, the batch goes on."""
    first = exc.issues[0].headline() if exc.issues else exc.message
    more = len([i for i in exc.issues if i.severity == "error"]) - 1
    message = first + (f" (and {more} more problems)" if more > 0 else "")
    return TaskOutcome(
        id=task.id,
        status="failed",
        error=f"the workflow does not load with this task's vars: {message}",
        duration_ms=round((time.monotonic() - started) * 1000, 3),
        exit_code=int(exc.exit_code),
    )


def _tokens(tokens: Any) -> dict[str, int]:
    if tokens is None:
        return {"prompt": 0, "completion": 0, "total": 0}
    return {"prompt": tokens.prompt, "completion": tokens.completion, "total": tokens.total}


def clear_run_dir(run_dir: Path) -> None:
    """An earlier attempt's directory goes: the task's (or case's) records start afresh."""
    try:
        mode = os.lstat(run_dir).st_mode  # one call: in a fresh batch there is nothing to clear
        if stat.S_ISLNK(mode):
            run_dir.unlink()
        elif stat.S_ISDIR(mode):
            shutil.rmtree(run_dir)
    except FileNotFoundError:
        return
    except OSError as exc:
        reason = exc.strerror or str(exc)
        message = f"cannot clear the earlier run directory {run_dir}: {reason}"
        raise RunFailedError(message) from None


def _ignore(sink: object, exc: BaseException) -> None:
    """A sink that fails says so in its `failure`, which fails the task at its end."""
