"""What a `devall test` run reports: its JSON document (`--json`) and its exit code."""

from __future__ import annotations

from typing import Any

from devall_cli.errors import ExitCode
from devall_cli.testing.model import CaseResult, ExpectationResult, SuiteResult


def suite_exit_code(result: SuiteResult) -> int:
    """0 when every case passed; 4 when every failed case failed to reach a server or the model
    (the environment, not the workflow); 8 when every failed case was stopped by its budget;
    1 otherwise."""
    failed = [case for case in result.cases if not case.passed]
    if not failed:
        return int(ExitCode.OK)
    if all(case.connection_failure for case in failed):
        return int(ExitCode.CONNECTION)
    if all(case.exit_code == ExitCode.BUDGET for case in failed):
        return int(ExitCode.BUDGET)
    return int(ExitCode.FAILED)


def suite_document(result: SuiteResult) -> dict[str, Any]:
    """`{"ok", "exit_code", "counts", "out", "files", "cases": [...]}`."""
    passed = sum(1 for case in result.cases if case.passed)
    return {
        "ok": result.passed,
        "exit_code": suite_exit_code(result),
        "counts": {
            "cases": len(result.cases),
            "passed": passed,
            "failed": len(result.cases) - passed,
        },
        "out": str(result.out_dir),
        "files": list(result.files),
        "cases": [case_document(case) for case in result.cases],
    }


def case_document(case: CaseResult) -> dict[str, Any]:
    """One case: its outcome, where its run's files are, and every expectation's."""
    failure = case.first_failure
    return {
        "name": case.name,
        "file": case.file,
        "status": "passed" if case.passed else "failed",
        "duration_ms": case.duration_ms,
        "run_dir": case.run_dir,
        "mode": case.mode,
        "exit_code": case.exit_code,
        "error": case.error,
        "cassette": case.cassette,
        "note": case.note or None,
        "failed": failure.label if failure is not None else None,
        "expectations": [expectation_document(e) for e in case.expectations],
    }


def expectation_document(result: ExpectationResult) -> dict[str, Any]:
    """`{"kind", "label", "spec", "passed", "message", "actual", ...}` (a judge adds its score,
    reasoning and grader; a failed run its error's detail lines)."""
    document: dict[str, Any] = {
        "kind": result.kind,
        "label": result.label,
        "where": result.where or None,
        "spec": result.spec,
        "passed": result.passed,
        "message": result.message or None,
        "actual": result.actual,
    }
    if result.details:
        document["details"] = list(result.details)
    document.update(result.extra)
    return document
