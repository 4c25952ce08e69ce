"""Read test files (`*.test.yaml`): YAML with positions, `${VAR}` resolved, every case checked.

A test file is untrusted input like a workflow: read with the same limits, and every problem is
a ConfigIssue with file, line, column and a path such as `cases[0].expect[2].tool.times`,
reported all at once. Each selected case's workflow is loaded here too (with the cassette's
recorded placeholders when the case replays), so a broken workflow stops the command before any
case runs. Placeholders resolve from `--var`, the environment and `.env` files (the test file's
folder, the current folder, `--env-file`); a case that is not selected is not resolved, so the
secrets only its judge needs may be missing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devall_cli import limits
from devall_cli.config.dotenv import load_dotenv_files
from devall_cli.config.model import Workflow, walk_nodes
from devall_cli.config.placeholders import PlaceholderResolver
from devall_cli.config.schema import (
    Checker,
    KeySpec,
    check_keys,
    describe,
    opt_int,
    opt_str,
    opt_str_map,
)
from devall_cli.config.yaml_source import KeyPath, parse_source
from devall_cli.errors import ConfigError, ConfigIssue, UsageError
from devall_cli.redaction import Redactor
from devall_cli.testing.model import CaseConfig, SuiteConfig
from devall_cli.testing.parse_expect import parse_expectations

TEST_SUFFIX = ".test.yaml"
SKIPPED = frozenset({"node_modules", "__pycache__"})  # folders never searched for test files
TOP_KEYS = KeySpec(known=frozenset({"cases", "workflow"}))
CASE_KEYS = KeySpec(
    known=frozenset(
        {"name", "workflow", "task", "task_file", "vars", "replay", "expect", "expect_exit"}
    )
)


@dataclass(frozen=True)
class LoadOptions:
    """What the command line adds to the test files."""

    cli_vars: Mapping[str, str] = field(default_factory=dict)
    env_file: Path | None = None
    environ: Mapping[str, str] | None = None  # None: the process environment
    select: Sequence[str] = ()  # case names (`--case`); empty: every case
    record: bool = False  # cassettes are written, not read


@dataclass
class _Load:
    """What reading every file collects."""

    options: LoadOptions
    environ: Mapping[str, str]
    cases: list[CaseConfig] = field(default_factory=list)
    issues: list[ConfigIssue] = field(default_factory=list)
    secrets: set[str] = field(default_factory=set)
    names: list[str] = field(default_factory=list)  # of every case, selected or not
    workflows: dict[Any, Workflow | None] = field(default_factory=dict)
    warnings: list[ConfigIssue] = field(default_factory=list)


def find_test_files(path: Path) -> list[Path]:
    """PATH itself, or every `*.test.yaml` below the folder PATH, folder by folder (hidden folders,
    `node_modules` and `__pycache__` are not searched)."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise UsageError(f"no such test file or folder: {path}")
    found: list[Path] = []
    for folder, folders, files in os.walk(path):
        folders[:] = sorted(f for f in folders if not f.startswith(".") and f not in SKIPPED)
        found += [Path(folder) / name for name in sorted(files) if name.endswith(TEST_SUFFIX)]
    if not found:
        raise UsageError(
            f"no test files (*{TEST_SUFFIX}) under {path}",
            hint="name a test file, or see docs/testing.md for the format",
        )
    return found


def load_suite(
    files: Sequence[Path], options: LoadOptions
) -> tuple[SuiteConfig, list[ConfigIssue]]:
    """The selected cases of `files` and the workflows' warnings; ConfigError with every issue."""
    state = _Load(options, os.environ if options.environ is None else options.environ)
    for path in files:
        _read_file(state, path)
    redactor = Redactor(state.secrets)
    if any(issue.severity == "error" for issue in state.issues):
        from devall_cli.workflow.loader import mask_issue

        issues = [mask_issue(issue, redactor) for issue in state.issues]
        raise ConfigError.from_issues(issues)
    unknown = [name for name in options.select if name not in state.names]
    if unknown:
        raise UsageError(
            f"no case named {', '.join(repr(n) for n in unknown)}",
            details=[f"cases: {', '.join(state.names)}"],
        )
    suite = SuiteConfig(tuple(state.cases), tuple(str(p) for p in files), redactor)
    return suite, list(dict.fromkeys(state.warnings))


def _read_file(state: _Load, path: Path) -> None:
    display = str(path)
    try:
        doc = parse_source(path, display, what="test file")
    except ConfigError as exc:
        state.issues += exc.issues or [ConfigIssue(exc.message, file=display)]
        return
    if not isinstance(doc.data, dict):
        message = "the top level must be a mapping with a 'cases' list"
        if doc.data is None:
            message = "the test file is empty"
        state.issues.append(doc.issue((), message))
        return
    ck = Checker(doc, workflow_dir=path.resolve().parent, environ=state.environ)
    dotenv = load_dotenv_files(path.resolve().parent, Path.cwd(), state.options.env_file)
    resolver = PlaceholderResolver(
        cli_vars=state.options.cli_vars, environ=state.environ, dotenv=dotenv.values
    )
    with ck.strict_keys():
        check_keys(ck, doc.data, (), TOP_KEYS)
        default = resolver.resolve_tree(doc.data.get("workflow"), ("workflow",))
        for index, raw in enumerate(_case_list(ck, doc.data.get("cases"))):
            _read_case(state, ck, resolver, raw, index, default)
    ck.secrets.update(resolver.secrets)
    for where, text, severity in resolver.issues:
        ck.issues.append(doc.issue(where, text, severity=severity))
    # In reading order: placeholder problems are found before the keys around them are checked.
    state.issues += [*dotenv.issues, *sorted(ck.issues, key=lambda i: (i.line, i.col))]
    state.secrets |= ck.secrets


def _case_list(ck: Checker, value: Any) -> list[Any]:
    if value is None:
        ck.error(("cases",), "cases is required: a list of test cases")
        return []
    if not isinstance(value, list) or not value:
        ck.error(("cases",), f"cases must be a list of test cases, got {describe(value)}")
        return []
    return value


def _read_case(
    state: _Load, ck: Checker, resolver: PlaceholderResolver, raw: Any, index: int, default: Any
) -> None:
    path: KeyPath = ("cases", index)
    if not isinstance(raw, dict):
        ck.error(path, f"each case must be a mapping, got {describe(raw)}")
        return
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        ck.error((*path, "name"), "name is required: the case's name, as reports show it")
        return
    if name in state.names:
        ck.error((*path, "name"), f"another case is named {name!r} already")
        return
    state.names.append(name)
    if state.options.select and name not in state.options.select:
        return
    data = resolver.resolve_tree(raw, path)
    check_keys(ck, data, path, CASE_KEYS)
    case = _case(state, ck, data, path, name, default)
    if case is not None:
        state.cases.append(case)


def _case(
    state: _Load, ck: Checker, data: dict[str, Any], path: KeyPath, name: str, default: Any
) -> CaseConfig | None:
    errors = ck.error_count
    workflow_text = opt_str(ck, data, "workflow", path) or (
        default if isinstance(default, str) and default.strip() else None
    )
    if workflow_text is None:
        message = "workflow is required: the workflow file, relative to this test file"
        ck.error((*path, "workflow"), message)
    workflow_path = _file(ck, workflow_text, (*path, "workflow"), "workflow file")
    task = _task(ck, data, path)
    case_vars = opt_str_map(ck, data, "vars", path, secret_names=True)
    replay_text = opt_str(ck, data, "replay", path)
    replay = ck.file_dir / replay_text if replay_text else None
    expect_exit = None
    if data.get("expect_exit") is not None:
        expect_exit = opt_int(ck, data, "expect_exit", path, 0, minimum=0)
    loaded = None
    if workflow_path is not None and ck.error_count == errors:
        loaded = _workflow(state, ck, workflow_path, case_vars, replay, (*path, "replay"))
    nodes = [p for p, _ in walk_nodes(loaded.graph)] if loaded is not None else None
    expectations = parse_expectations(ck, data.get("expect"), (*path, "expect"), nodes)
    if ck.error_count > errors or workflow_path is None or loaded is None:
        return None
    line, _ = ck.doc.position(path)
    folder = os.path.dirname(ck.doc.file)
    return CaseConfig(
        name=name,
        file=ck.doc.file,
        line=line,
        workflow=workflow_path,
        workflow_display=os.path.join(folder, str(workflow_text)),
        task=task,
        vars=case_vars,
        replay=replay,
        replay_display=os.path.join(folder, replay_text) if replay_text else "",
        expect_exit=expect_exit,
        expectations=expectations,
        loaded=loaded,
    )


def _file(ck: Checker, text: str | None, path: KeyPath, what: str) -> Path | None:
    """A file named relative to the test file; an error when it is not there."""
    if text is None:
        return None
    found = (ck.file_dir / text).resolve()
    if not found.is_file():
        ck.error(path, f"no such {what}: {text} (relative to {ck.doc.file})")
        return None
    return found


def _task(ck: Checker, data: dict[str, Any], path: KeyPath) -> str:
    task = opt_str(ck, data, "task", path)
    task_file = opt_str(ck, data, "task_file", path)
    if task is not None and task_file is not None:
        ck.error((*path, "task_file"), "give task or task_file, not both", at_key=True)
        return ""
    if task_file is None:
        return str(task or "")
    found = _file(ck, task_file, (*path, "task_file"), "task file")
    if found is None:
        return ""
    try:
        raw = found.read_bytes()
    except OSError as exc:
        ck.error((*path, "task_file"), f"cannot read {task_file}: {exc.strerror or exc}")
        return ""
    if len(raw) > limits.TASK_BYTES:
        ck.error((*path, "task_file"), f"{task_file} is larger than {limits.TASK_BYTES} bytes")
        return ""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        ck.error((*path, "task_file"), f"{task_file} is not UTF-8 (byte offset {exc.start})")
        return ""


def _workflow(
    state: _Load,
    ck: Checker,
    workflow: Path,
    case_vars: Mapping[str, str],
    replay: Path | None,
    replay_path: KeyPath,
) -> Workflow | None:
    """The case's workflow, loaded once per file, vars and cassette; its issues kept."""
    from devall_cli.workflow.loader import load_workflow

    environ: Mapping[str, str] | None = state.environ
    if replay is not None and not state.options.record:
        environ = _replay_environ(ck, replay, replay_path, state.environ)
        if environ is None:
            return None
    merged = {**state.options.cli_vars, **case_vars}
    key = (workflow, tuple(sorted(merged.items())), replay if not state.options.record else None)
    if key not in state.workflows:
        try:
            loaded = load_workflow(
                workflow, cli_vars=merged, env_file=state.options.env_file, environ=environ
            )
        except ConfigError as exc:
            state.issues += exc.issues or [ConfigIssue(exc.message, file=str(workflow))]
            loaded = None
        state.workflows[key] = loaded
        if loaded is not None:
            state.warnings += list(loaded.warnings)
            state.secrets.update(loaded.redactor.secrets)
    return state.workflows[key]


def _replay_environ(
    ck: Checker, cassette: Path, path: KeyPath, environ: Mapping[str, str]
) -> Mapping[str, str] | None:
    """The environment a replayed workflow loads with: the recorded placeholders under it."""
    from devall_cli.cassette import replay_environ

    if not cassette.is_file():
        ck.error(path, f"no such cassette: {cassette.name}; record it with devall test --record")
        return None
    try:
        return replay_environ(cassette, environ)
    except ConfigError as exc:
        ck.error(path, f"the cassette cannot be replayed: {exc.message}")
        return None

