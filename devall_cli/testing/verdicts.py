"""How a case came out: its run's exit code against `expect_exit`, then every expectation.

The expectations are checked only when the run ended as the case expects (exit 0 unless it
says `expect_exit: N`): a run that stopped half way would fail most of them for one reason, and
the exit check already names it. A message names its expectation (`expect[2] tool rand_num:`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from devall_cli.errors import DevallError
from devall_cli.redaction import Redactor
from devall_cli.testing.evaluate import RunView, check
from devall_cli.testing.judge import ask_grader, grade_extra
from devall_cli.testing.model import CaseConfig, ExpectationResult, ExpectConfig, JudgeConfig


async def check_case(
    case: CaseConfig,
    view: RunView,
    error: DevallError | None,
    *,
    environ: Mapping[str, str],
    redactor: Redactor,
) -> list[ExpectationResult]:
    """The exit code first; the expectations when the run ended as the case expects."""
    if not exit_expected(case, error):
        return [exit_result(case, error)]
    found: list[ExpectationResult] = []
    if case.expect_exit is not None:
        found.append(exit_result(case, error))
    for expect in case.expectations:
        if expect.kind == "judge":
            found.append(await _judge(expect, case, view, environ, redactor))
            continue
        verdict = check(expect, view)
        found.append(
            ExpectationResult(
                expect.kind, expect.label, expect.spec, verdict.passed,
                _named(expect, verdict.message), verdict.actual, where=expect.where,
            )
        )  # fmt: skip
    return found


def exit_expected(case: CaseConfig, error: DevallError | None) -> bool:
    """Whether the run ended with the exit code the case expects."""
    code = int(error.exit_code) if error is not None else 0
    return code == (case.expect_exit or 0)


def exit_result(case: CaseConfig, error: DevallError | None) -> ExpectationResult:
    """How the run ended, against `expect_exit` (0 when the case does not say)."""
    expected = case.expect_exit or 0
    code = int(error.exit_code) if error is not None else 0
    spec = {"expect_exit": expected}

    def result(passed: bool, message: str = "", details: tuple[str, ...] = ()) -> ExpectationResult:
        return ExpectationResult(
            "exit", "exit code", spec, passed, message, code, details, where=case.where
        )

    if code == expected:
        return result(True)
    if error is None:
        return result(False, f"exit code: the run ended ok (exit 0), expected exit {expected}")
    details = (*error.details, *((f"hint: {error.hint}",) if error.hint else ()))
    return result(False, f"exit code: the run failed (exit {code}): {error.message}", details)


async def _judge(
    expect: ExpectConfig,
    case: CaseConfig,
    view: RunView,
    environ: Mapping[str, str],
    redactor: Redactor,
) -> ExpectationResult:
    config: JudgeConfig = expect.settings
    output, what = _graded(config, view)

    def verdict(
        passed: bool, message: str, actual: Any = None, extra: Mapping[str, Any] | None = None
    ) -> ExpectationResult:
        return ExpectationResult(
            "judge", expect.label, expect.spec, passed, _named(expect, message), actual,
            extra=extra or {}, where=expect.where,
        )  # fmt: skip

    if output is None:
        return verdict(False, f"nothing to grade: there is no {what}")
    grade = await ask_grader(config, case.task, output, environ=environ, redactor=redactor)
    extra = grade_extra(grade, config.model)
    if grade.score is None:
        return verdict(False, grade.problem, None, extra)
    if grade.score < config.threshold:
        message = f"the grader scored {what} {grade.score:g}, below the threshold"
        message += f" {config.threshold:g}" + (f": {grade.reasoning}" if grade.reasoning else "")
        return verdict(False, message, grade.score, extra)
    return verdict(True, "", grade.score, extra)


def _graded(config: JudgeConfig, view: RunView) -> tuple[str | None, str]:
    """The text the judge grades, and how messages name it."""
    result = view.result
    if config.node is None:
        return (result.output if result.status == "ok" else None), "the final answer"
    record = next((n for n in result.nodes if n.node_id == config.node), None)
    return (record.output if record is not None else None), f"the output of node {config.node}"


def _named(expect: ExpectConfig, message: str) -> str:
    """`expect[2] tool rand_num: <message>`; '' when it held."""
    return f"{expect.label}: {message}" if message else ""
