"""What a test file says (`*Config`) and what running it found (`*Result`): frozen data only.

A test file holds cases; a case names a workflow, a task and the expectations its run must meet.
Each expectation is one kind (`output`, `node`, `tool`, `tool_order`, `edge`, `budget`, `judge`,
`error`) with that kind's settings; `evaluate.py` checks them against the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devall_cli.config.model import EMPTY, Workflow
from devall_cli.providers.base import ModelSettings
from devall_cli.redaction import Redactor

JsonStep = str | int


@dataclass(frozen=True)
class JsonPathConfig:
    """`json_path: {path, equals | contains | regex | exists}`: one value inside JSON output."""

    path: str  # as written: `$.fortune.number`, `items[0].name`
    steps: tuple[JsonStep, ...]
    equals: Any = None
    has_equals: bool = False  # `equals: null` asks for null, which `equals=None` cannot say
    contains: str | None = None
    regex: str | None = None
    exists: bool | None = None


@dataclass(frozen=True)
class TextConfig:
    """How a text must look; every key that is set must hold."""

    equals: str | None = None
    contains: tuple[str, ...] = ()
    not_contains: tuple[str, ...] = ()
    regex: str | None = None
    json_schema: Mapping[str, Any] | None = None
    json_path: JsonPathConfig | None = None


@dataclass(frozen=True)
class NodeConfig:
    """`node: {id, visited, visits, status, output, visit}`."""

    id: str
    visited: bool | None = None
    visits: int | None = None
    status: str | None = None
    output: TextConfig | None = None
    visit: int | None = None  # check this visit's output (default: the node's last output)


@dataclass(frozen=True)
class ToolConfig:
    """`tool: {name, called, args, args_regex, times, min_times, max_times, node}`."""

    name: str
    called: bool = True
    args: Mapping[str, Any] | None = None  # a subset of the call's arguments
    args_regex: Mapping[str, str] = EMPTY  # argument name -> pattern its value must match
    times: int | None = None
    min_times: int | None = None
    max_times: int | None = None
    node: str | None = None  # only calls made by this node


@dataclass(frozen=True)
class EdgeConfig:
    """`edge: {from, to, fired, times}`."""

    source: str
    target: str
    fired: bool = True
    times: int | None = None


@dataclass(frozen=True)
class BudgetConfig:
    """`budget: {model_calls, tool_calls, tokens, seconds, cost}`: most the run may use."""

    model_calls: int | None = None
    tool_calls: int | None = None
    tokens: int | None = None
    seconds: float | None = None
    cost: float | None = None  # USD; fails when a model called has no price (docs/cost.md)


@dataclass(frozen=True)
class JudgeConfig:
    """`judge: {model, rubric, threshold, node}`: a model grades the output against a rubric."""

    model: ModelSettings  # parsed as an agent's model settings are
    rubric: str
    threshold: float = 0.7
    node: str | None = None  # grade this node's output instead of the final answer


@dataclass(frozen=True)
class ExpectConfig:
    """One entry of a case's `expect` list."""

    kind: str  # output | node | tool | tool_order | edge | budget | judge | error
    index: int
    settings: Any  # the kind's config (TextConfig, NodeConfig, ..., tuple of tool names)
    spec: Any  # the entry as written (placeholders resolved), for reports
    where: str = ""  # file:line of the entry

    @property
    def label(self) -> str:
        """`expect[2] tool rand_num`: how messages name this expectation."""
        settings = self.settings
        subject = ""
        if isinstance(settings, NodeConfig):
            subject = f" {settings.id}"
        elif isinstance(settings, ToolConfig):
            subject = f" {settings.name}"
        elif isinstance(settings, EdgeConfig):
            subject = f" {settings.source} -> {settings.target}"
        return f"expect[{self.index}] {self.kind}{subject}"


@dataclass(frozen=True)
class CaseConfig:
    """One test case: which workflow, which task, and what its run must show."""

    name: str
    file: str  # the test file as the user named it
    line: int
    workflow: Path  # absolute
    workflow_display: str
    task: str = ""
    vars: Mapping[str, str] = EMPTY
    replay: Path | None = None  # the cassette (absolute); None: the case runs live
    replay_display: str = ""
    expect_exit: int | None = None
    expectations: tuple[ExpectConfig, ...] = ()
    loaded: Workflow | None = field(default=None, compare=False)  # the workflow, loaded for it

    @property
    def where(self) -> str:
        """`file:line` of the case."""
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True)
class SuiteConfig:
    """The selected cases of every test file, and the secrets the files' placeholders hold."""

    cases: tuple[CaseConfig, ...]
    files: tuple[str, ...]
    redactor: Redactor = field(default_factory=Redactor)


@dataclass(frozen=True)
class ExpectationResult:
    """How one expectation (or the run's exit code, kind `exit`) came out."""

    kind: str
    label: str
    spec: Any
    passed: bool
    message: str = ""
    actual: Any = None
    details: tuple[str, ...] = ()
    extra: Mapping[str, Any] = EMPTY  # kind-specific findings: a judge's score and reasoning
    where: str = ""  # file:line:col of the expectation in its test file


@dataclass(frozen=True)
class CaseResult:
    """One case, run and checked."""

    name: str
    file: str
    passed: bool
    duration_ms: float
    run_dir: str
    exit_code: int
    mode: str  # live | replay | record
    expectations: tuple[ExpectationResult, ...] = ()
    error: str | None = None
    connection_failure: bool = False  # the run could not reach a server or the model
    cassette: str | None = None  # the cassette written (record) or read (replay)
    note: str = ""  # e.g. why a recording was not written

    @property
    def first_failure(self) -> ExpectationResult | None:
        """The first expectation that did not hold."""
        return next((e for e in self.expectations if not e.passed), None)


@dataclass(frozen=True)
class SuiteResult:
    """Every case of a `devall test` run."""

    cases: tuple[CaseResult, ...]
    out_dir: Path
    files: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """Whether every case passed."""
        return all(case.passed for case in self.cases)
