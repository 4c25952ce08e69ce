"""`devall test [PATH]`: run the test cases of *.test.yaml files and check what each run did."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from devall_cli.cli.app import app
from devall_cli.cli.common import (
    STATE,
    EnvFileOption,
    JsonOption,
    SignalState,
    error_boundary,
    parse_vars,
    print_json,
    print_line,
    run_async,
    shown,
    stderr_console,
)
from devall_cli.cli.cost_options import (
    MaxCostOption,
    MaxModelCallsOption,
    MaxTokensOption,
    PricingOption,
    budget_limits,
    read_pricing,
)
from devall_cli.cli.otel_options import OtelContentOption, OtelOption, tracing_for
from devall_cli.cli.policy_options import (
    AllowToolOption,
    ApproveOption,
    DenyToolOption,
    SandboxOption,
    apply_sandbox,
    cli_policy,
)

if TYPE_CHECKING:
    from rich.console import Console

    from devall_cli.errors import ConfigIssue
    from devall_cli.testing import CaseResult, SuiteConfig, SuiteResult


@app.command("test")
@error_boundary
def test_command(
    path: Annotated[
        Path,
        typer.Argument(
            metavar="[PATH]",
            help="A test file, or a folder: every *.test.yaml below it.",
        ),
    ] = Path("."),
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            metavar="DIR",
            help="Where each case's run directory goes (default: logs/test-<date>-<time>-<4 hex>).",
        ),
    ] = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", min=1, metavar="N", help="Cases at once.")
    ] = 4,
    case: Annotated[
        list[str] | None,
        typer.Option("--case", metavar="NAME", help="Run only this case (repeatable)."),
    ] = None,
    record: Annotated[
        bool,
        typer.Option(
            "--record",
            help="Run the cases that name a cassette (replay:) live and record it again; "
            "a cassette is written only when its case passes.",
        ),
    ] = False,
    junit: Annotated[
        Path | None,
        typer.Option(
            "--junit",
            metavar="PATH",
            help="Write a JUnit XML report: one testcase per case, one failure per failed "
            "expectation.",
        ),
    ] = None,
    json_output: JsonOption = False,
    var: Annotated[
        list[str] | None,
        typer.Option(
            "--var",
            metavar="NAME=VALUE",
            help="Set a ${NAME} placeholder of the test files and the workflows; a case's "
            "`vars` override it.",
        ),
    ] = None,
    env_file: EnvFileOption = None,
    max_steps: Annotated[
        int,
        typer.Option("--max-steps", min=1, metavar="N", help="Most node visits in one case's run."),
    ] = 1000,
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
    """Run the test cases in PATH and check each run's answer, nodes, tools, budget and grade.

    A case names a workflow, a task, optional vars and a cassette to replay (no network, no
    API key); its expectations are checked on what the run did. Each case's run directory is
    DIR/<case>/, as `devall run` writes it. The table goes to stderr; --json prints one JSON
    document on stdout. Exit 0 when every case passed, 1 when any failed, 3 for a bad test file
    or workflow, 4 when every failure was a server or model that could not be reached, 8 when
    every failed case was stopped by its budget (--max-cost and the like are each case's own).
    Tool calls the tool policy leaves to a person are refused. See docs/testing.md.
    """
    from devall_cli.run_files import new_run_id
    from devall_cli.testing import TEST_SUFFIX, SuiteRequest, run_tests
    from devall_cli.testing.document import suite_document, suite_exit_code

    policy = cli_policy(allow_tool, deny_tool, approve)
    apply_sandbox(sandbox)
    signals = SignalState()
    request = SuiteRequest(
        path=path,
        out_dir=out if out is not None else Path("logs") / new_run_id("test"),
        concurrency=concurrency,
        record=record,
        cases=tuple(case or ()),
        cli_vars=parse_vars(var),
        env_file=env_file,
        max_steps=max_steps,
        interrupt_code=signals.exit_code,
        policy=policy,
        price_file=read_pricing(pricing),
        budget=budget_limits(max_cost, max_tokens, max_model_calls),
    )
    console = stderr_console()
    with tracing_for(otel, otel_content) as tracing:
        request = replace(request, tracing=tracing)
        result = run_async(run_tests(request, _Progress(console)), signals)
    if junit is not None:
        _write_junit(junit, result, TEST_SUFFIX)
    _print_table(console, result)
    if json_output:
        print_json(suite_document(result))
    code = suite_exit_code(result)
    if code:
        raise typer.Exit(code)


class _Progress:
    """One line on stderr per finished case, and the warnings of the workflows."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def loaded(self, suite: SuiteConfig, warnings: Sequence[ConfigIssue]) -> None:
        STATE.mask = suite.redactor.text
        for issue in warnings:
            print_line(self.console, f"devall: warning: {issue.headline()}")
        print_line(self.console, f"running {_cases(len(suite.cases))}")

    def case_finished(self, result: CaseResult) -> None:
        word = "PASS" if result.passed else "FAIL"
        print_line(self.console, f"{word} {result.name} ({_seconds(result.duration_ms)})")


def _print_table(console: Console, result: SuiteResult) -> None:
    from rich.table import Table  # imported when used: every command's start-up pays for it

    table = Table("case", "result", "duration", "first failed expectation")
    for case in result.cases:
        failure = case.first_failure
        table.add_row(
            shown(case.name),
            shown("pass" if case.passed else "FAIL"),
            shown(_seconds(case.duration_ms)),
            shown(failure.message.splitlines()[0] if failure is not None else ""),
        )
    console.print(table)
    for case in result.cases:
        for expectation in case.expectations:
            if not expectation.passed:
                print_line(console, f"{case.name}: {expectation.message}")
                for line in expectation.details:
                    print_line(console, f"  {line}")
        if case.note:
            print_line(console, f"{case.name}: {case.note}")
    passed = sum(1 for case in result.cases if case.passed)
    failed = len(result.cases) - passed
    print_line(console, f"{_cases(len(result.cases))}: {passed} passed, {failed} failed")
    print_line(console, f"run files: {result.out_dir}/")


def _write_junit(path: Path, result: SuiteResult, suffix: str) -> None:
    from devall_cli.cli.junit import JUnitCase, JUnitFailure, write_junit

    cases = [
        JUnitCase(
            name=case.name,
            classname=f"devall.test.{Path(case.file).name.removesuffix(suffix)}",
            seconds=case.duration_ms / 1000,
            failures=[
                JUnitFailure(e.kind, e.message, "\n".join([e.message, e.where, *e.details]))
                for e in case.expectations
                if not e.passed
            ],
            output=f"run files: {case.run_dir}",
        )
        for case in result.cases
    ]
    write_junit(path, "devall test", cases)


def _cases(count: int) -> str:
    return f"{count} case" + ("" if count == 1 else "s")


def _seconds(ms: float) -> str:
    return f"{ms / 1000:.2f} s"
