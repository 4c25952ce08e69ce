"""`devall test`: test cases for workflows, run live or from cassettes, checked (docs/testing.md).

A test file (`*.test.yaml`) lists cases: a workflow, a task, and what the run must show (the
answer, the nodes visited, the tools called, the budget used, a model's grade). `run_tests` reads
the files, runs the cases N at a time and returns how every expectation came out.
"""

from devall_cli.testing.model import CaseResult, ExpectationResult, SuiteConfig, SuiteResult
from devall_cli.testing.parse import TEST_SUFFIX
from devall_cli.testing.runner import SuiteListener, SuiteRequest, run_tests

__all__ = [
    "TEST_SUFFIX",
    "CaseResult",
    "ExpectationResult",
    "SuiteConfig",
    "SuiteListener",
    "SuiteRequest",
    "SuiteResult",
    "run_tests",
]
