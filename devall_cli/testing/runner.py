"""`devall test` as a use-case: read the test files, run every case N at a time, check each one.

Each case is one run session in `<out>/<case>/`, written exactly as `devall run` writes it
(events.jsonl, result.json, attachments/). A case runs live, replays its cassette (no network,
no server), or with `record` runs live and writes its cassette, only when the case passed. Live
cases of one command share their MCP servers as the tasks of a batch do (`batch.shared_tools`);
taped cases have their own (a recording keeps each server's handshake).

Expectations are checked on the session recorder's RunResult and the events an in-memory sink
kept; nothing is read back from the files. Every text a result holds is masked with the
workflow's secrets and those of the test file.

A budget (`--max-cost`, `--max-tokens`, `--max-model-calls`) is each case's own: every case
starts with a fresh one, so a case's outcome does not depend on which cases ran before it or
beside it. A case its budget stopped ends with exit 8 (it fails unless it expects that exit).
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from devall_cli.batch.shared_tools import TASK_STORE, SharedSources
from devall_cli.batch.task_run import clear_run_dir, traced, warm_up
from devall_cli.config.model import Workflow, walk_nodes
from devall_cli.config.pricing import PriceEntry
from devall_cli.engine.budget import BudgetLimits, BudgetMeter
from devall_cli.engine.graph import DEFAULT_MAX_STEPS
from devall_cli.engine.runner import run_workflow
from devall_cli.engine.session import RunSession
from devall_cli.errors import (
    ConfigIssue,
    DevallConnectionError,
    DevallError,
    ExitCode,
    RunFailedError,
)
from devall_cli.redaction import Redactor
from devall_cli.testing.cassettes import case_mode, finish_tape, open_tape, run_environ
from devall_cli.testing.evaluate import EventLog, RunView
from devall_cli.testing.model import (
    CaseConfig,
    CaseResult,
    ExpectationResult,
    SuiteConfig,
    SuiteResult,
)
from devall_cli.testing.parse import LoadOptions, find_test_files, load_suite
from devall_cli.testing.verdicts import check_case, exit_expected, exit_result

if TYPE_CHECKING:
    from devall_cli.cassette import Tape
    from devall_cli.tools.policy import ToolPolicy
    from devall_cli.trace.otel_export import Tracing


class SuiteListener(Protocol):
    """What the command is told while the cases run."""

    def loaded(self, suite: SuiteConfig, warnings: Sequence[ConfigIssue]) -> None:
        """The test files were read; the cases are about to run."""
        ...

    def case_finished(self, result: CaseResult) -> None:
        """One case ran and was checked."""
        ...


@dataclass(frozen=True)
class SuiteRequest:
    """What `devall test` was asked."""

    path: Path
    out_dir: Path
    concurrency: int = 4
    record: bool = False
    cases: Sequence[str] = ()
    cli_vars: Mapping[str, str] = field(default_factory=dict)
    env_file: Path | None = None
    max_steps: int = DEFAULT_MAX_STEPS
    environ: Mapping[str, str] | None = None  # None: the process environment
    interrupt_code: Callable[[], int] = lambda: int(ExitCode.INTERRUPTED)
    policy: ToolPolicy | None = None  # the command line's layer of the tool policy
    price_file: tuple[PriceEntry, ...] = ()  # --pricing FILE, over each workflow's pricing:
    budget: BudgetLimits | None = None  # each case's own budget (a fresh meter per case)
    tracing: Tracing | None = None  # --otel: each case's run is one trace


@dataclass
class _Env:
    request: SuiteRequest
    suite: SuiteConfig
    environ: Mapping[str, str]
    pool: SharedSources


async def run_tests(request: SuiteRequest, listener: SuiteListener | None = None) -> SuiteResult:
    """Read the test files, run the selected cases and check them (ConfigError: a bad file)."""
    environ = os.environ if request.environ is None else request.environ
    options = LoadOptions(
        cli_vars=request.cli_vars,
        env_file=request.env_file,
        environ=environ,
        select=request.cases,
        record=request.record,
    )
    suite, warnings = load_suite(find_test_files(request.path), options)
    if listener is not None:
        listener.loaded(suite, warnings)
    for workflow in {id(c.loaded): c.loaded for c in suite.cases if c.loaded}.values():
        warm_up(workflow)
    env = _Env(request, suite, environ, SharedSources(request.out_dir))
    gate = asyncio.Semaphore(max(1, request.concurrency))
    names = case_dir_names(suite.cases)

    async def one(case: CaseConfig, dir_name: str) -> CaseResult:
        async with gate:
            result = await run_case(case, dir_name, env)
        if listener is not None:
            listener.case_finished(result)
        return result

    try:
        pairs = zip(suite.cases, names, strict=True)
        results = await asyncio.gather(*(one(case, name) for case, name in pairs))
    finally:
        await env.pool.close()
    return SuiteResult(tuple(results), request.out_dir, suite.files)


def case_dir_names(cases: Sequence[CaseConfig]) -> list[str]:
    """A folder name per case, from its name, unique within the run (`servers/` holds the logs
    of the servers the live cases share)."""
    taken: set[str] = {"servers"}
    names = []
    for case in cases:
        base = re.sub(r"[^A-Za-z0-9_.-]+", "-", case.name).strip("-.")[:60] or "case"
        name, n = base, 2
        while name in taken:
            name, n = f"{base}-{n}", n + 1
        taken.add(name)
        names.append(name)
    return names


async def run_case(case: CaseConfig, dir_name: str, env: _Env) -> CaseResult:
    """Run one case and check it; a failure of the run is a failure of the case."""
    assert case.loaded is not None, "load_suite loads every selected case's workflow"
    started = time.monotonic()
    redactor = case.loaded.redactor.with_secrets(env.suite.redactor.secrets)
    # The run's own records mask the test file's secrets too (a task may quote one).
    workflow = replace(case.loaded, redactor=redactor)
    mode = case_mode(case, env.request.record)
    run_dir = env.request.out_dir / dir_name
    outcome = _Outcome(CaseResult(case.name, case.file, False, 0.0, str(run_dir), 0, mode))
    tape: Tape | None = None
    try:
        tape = open_tape(
            case,
            mode,
            cli_vars=env.request.cli_vars,
            env_file=env.request.env_file,
            environ=env.environ,
        )
        environ = run_environ(case, mode, env.environ)
        view, error = await _run(workflow, case.task, dir_name, run_dir, tape, environ, env)
        outcome.results = await check_case(case, view, error, environ=environ, redactor=redactor)
        outcome.ended(error, connection=not exit_expected(case, error))
    except DevallError as exc:  # the tape could not be opened, the directory not used
        outcome.results = [exit_result(case, exc)]
        outcome.ended(exc)
    except Exception as exc:  # a bug must cost one case, not the suite
        failure = RunFailedError(f"internal error: {type(exc).__name__}: {exc}")
        failure.exit_code = ExitCode.INTERNAL
        outcome.results = [exit_result(case, failure)]
        outcome.ended(failure)
    passed = all(r.passed for r in outcome.results)
    note = finish_tape(tape, mode, passed, case.replay_display)
    cassette = case.replay_display if tape is not None else None
    return _masked(outcome.result(passed, started, cassette, note), redactor)


@dataclass
class _Outcome:
    base: CaseResult
    results: list[ExpectationResult] = field(default_factory=list)
    exit_code: int = 0
    error: str | None = None
    connection: bool = False

    def ended(self, error: DevallError | None, *, connection: bool = True) -> None:
        """The run's exit code and error; `connection`: whether a connection error counts."""
        self.exit_code = int(error.exit_code) if error is not None else 0
        self.error = error.message if error is not None else None
        self.connection = connection and isinstance(error, DevallConnectionError)

    def result(
        self, passed: bool, started: float, cassette: str | None, note: str
    ) -> CaseResult:
        return replace(
            self.base,
            passed=passed,
            duration_ms=round((time.monotonic() - started) * 1000, 3),
            exit_code=self.exit_code,
            expectations=tuple(self.results),
            error=self.error,
            connection_failure=self.connection and not passed,
            cassette=cassette,
            note=note,
        )


async def _run(
    workflow: Workflow,
    task: str,
    dir_name: str,
    run_dir: Path,
    tape: Tape | None,
    environ: Mapping[str, str],
    env: _Env,
) -> tuple[RunView, DevallError | None]:
    """Run the workflow in a session of its own; the view of the run and its error, if any."""
    from devall_cli.tools.attachments import AttachmentStore
    from devall_cli.trace.jsonl import JsonlSink
    from devall_cli.trace.result import ResultSink

    clear_run_dir(run_dir)
    request = env.request
    session = RunSession(
        workflow,
        run_id=dir_name,
        run_dir=run_dir,
        on_sink_error=_ignore,
        price_file=request.price_file,
        budget=BudgetMeter(request.budget) if request.budget is not None else None,
    )
    log = EventLog()
    session.subscribe(log)
    jsonl = JsonlSink(run_dir / "events.jsonl", session.redactor)
    node_ids = [path for path, _ in walk_nodes(workflow.graph)]
    results = ResultSink(
        run_dir / "result.json", session.redactor, node_ids=node_ids, recorder=session.recorder
    )
    session.subscribe(jsonl)
    session.subscribe(results)
    extra: dict[str, Any] = {"extras": traced(request.tracing, session)}
    if tape is None:  # live: on the command's shared servers
        extra["tool_manager_factory"] = env.pool.tool_manager_factory(env.request.policy)
    elif env.request.policy is not None:
        extra["tool_manager_factory"] = _with_policy(env.request.policy)
    token = TASK_STORE.set(AttachmentStore(run_dir))
    error: DevallError | None = None
    try:
        with session.held():
            await run_workflow(
                session,
                task=task,
                environ=environ,
                interrupt_code=env.request.interrupt_code,
                max_steps=env.request.max_steps,
                tape=tape,
                **extra,
            )
    except DevallError as exc:
        error = exc
    finally:
        TASK_STORE.reset(token)
        jsonl.close()
    failure = jsonl.failure or results.failure
    if error is None and failure:
        error = RunFailedError(failure)
    return RunView(session.recorder.result(), tuple(log.events)), error


def _with_policy(policy: ToolPolicy) -> Callable[..., Any]:
    """The engine's ToolManager, with the command line's tool policy."""

    def make(workflow: Workflow, **kwargs: Any) -> Any:
        from devall_cli.tools.manager import ToolManager

        return ToolManager(workflow, policy=policy, **kwargs)

    return make


def _masked(result: CaseResult, redactor: Redactor) -> CaseResult:
    expectations = tuple(
        replace(
            e,
            spec=redactor.value(e.spec),
            message=redactor.text(e.message),
            actual=redactor.value(e.actual),
            details=tuple(redactor.text(line) for line in e.details),
            extra=redactor.value(dict(e.extra)),
        )
        for e in result.expectations
    )
    return replace(
        result,
        expectations=expectations,
        error=redactor.text(result.error) if result.error else None,
        note=redactor.text(result.note),
    )


def _ignore(sink: object, exc: BaseException) -> None:
    """A sink that fails says so in its `failure`, which fails the case at its end."""
