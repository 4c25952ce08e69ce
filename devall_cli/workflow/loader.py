"""Load a workflow file: YAML with positions → `${VAR}` resolution → typed, validated Workflow.

Every problem is collected (never just the first) as a ConfigIssue with file, line, column and
a path such as `graph.nodes[1].config.tooling[0].config.timeout`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from devall_cli.config.dotenv import load_dotenv_files
from devall_cli.config.model import Workflow, frozen_mapping
from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.pricing import parse_pricing
from devall_cli.config.schema import Checker, check_keys
from devall_cli.config.scope import LoadScope
from devall_cli.config.yaml_source import SourceDocument, cut_line, load_source
from devall_cli.errors import ConfigError, ConfigIssue
from devall_cli.providers.registry import environment_secrets
from devall_cli.redaction import MASK, Redactor, masking
from devall_cli.workflow.graph import parse_graph
from devall_cli.workflow.includes import TOP_KEYS, check_version, resolve_document, vars_block


def load_workflow(
    path: str | Path,
    *,
    cli_vars: Mapping[str, str] | None = None,
    env_file: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    tools_only: bool = False,
) -> Workflow:
    """The validated workflow; raises ConfigError carrying every issue when it has errors.

    `tools_only`: placeholders outside `tooling` blocks (model settings) may stay unresolved;
    such a workflow serves listings and probes, never a run.
    """
    workflow, issues = validate_workflow(
        path, cli_vars=cli_vars, env_file=env_file, environ=environ, tools_only=tools_only
    )
    if workflow is None:
        raise ConfigError.from_issues(issues)
    return workflow


def validate_workflow(
    path: str | Path,
    *,
    cli_vars: Mapping[str, str] | None = None,
    env_file: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    tools_only: bool = False,
    advice: bool = False,
) -> tuple[Workflow | None, list[ConfigIssue]]:
    """(workflow or None, every issue: errors and warnings); never raises ConfigError.

    `advice`: also warn about how a valid graph ends and about loops that cannot stop (what
    `devall validate` reports; other commands load the file without it).
    """
    display = str(path)
    try:
        doc = load_source(Path(path), display)
    except ConfigError as exc:
        # No secret is known before the file parses; credentials in URLs are masked all the same.
        issues = exc.issues or [ConfigIssue(exc.message, file=display)]
        return None, [mask_issue(issue, Redactor()) for issue in issues]
    return _build(
        doc,
        Path(path).resolve(),
        cli_vars=dict(cli_vars or {}),
        env_file=Path(env_file) if env_file is not None else None,
        environ=os.environ if environ is None else environ,
        tools_only=tools_only,
        advice=advice,
    )


def _build(
    doc: SourceDocument,
    file_path: Path,
    *,
    cli_vars: dict[str, str],
    env_file: Path | None,
    environ: Mapping[str, str],
    tools_only: bool = False,
    advice: bool = False,
) -> tuple[Workflow | None, list[ConfigIssue]]:
    top: dict[str, Any] = doc.data
    ck = Checker(doc, workflow_dir=file_path.parent, environ=environ)
    ck.advice = advice
    dotenv = load_dotenv_files(file_path.parent, Path.cwd(), env_file)
    ck.scope = LoadScope.top(
        file_path,
        doc.file,
        cli_vars=cli_vars,
        environ=environ,
        dotenv=dotenv.values,
        tools_only=tools_only,
    )
    check_keys(ck, top, (), TOP_KEYS)
    body = {key: value for key, value in top.items() if key != "vars"}
    resolved_vars, resolved = resolve_document(ck, vars_block(ck, top), body)
    version = check_version(ck, resolved.get("version"))
    pricing = parse_pricing(ck, resolved.get("pricing"), ("pricing",))
    with masking(Redactor(ck.secrets)):  # values quoted in messages are masked, then cut
        graph = parse_graph(ck, resolved.get("graph"))
    # The agents' default keys come from the environment: masked even though no file names them.
    redactor = Redactor([*ck.secrets, *environment_secrets(environ)])
    issues = [
        mask_issue(issue, redactor) for issue in _ordered(doc, [*dotenv.issues, *ck.issues])
    ]
    if graph is None or any(issue.severity == "error" for issue in issues):
        return None, issues
    plain_vars = {k: _plain(v) for k, v in resolved_vars.items() if v is not UNRESOLVED}
    workflow = Workflow(
        graph=graph,
        path=file_path,
        version=version,
        vars=frozen_mapping(plain_vars),
        pricing=pricing,
        redactor=redactor,
        warnings=tuple(issues),
    )
    return workflow, issues


def _ordered(doc: SourceDocument, issues: Iterable[ConfigIssue]) -> list[ConfigIssue]:
    """Issues of other files (.env, subgraph files) first, each file's in reading order.

    A subgraph file included twice reports its problems once.
    """
    unique = list(dict.fromkeys(issues))
    first: dict[str, int] = {}
    for index, issue in enumerate(unique):
        first.setdefault(issue.file, index)
    return sorted(unique, key=lambda i: (i.file == doc.file, first[i.file], i.line, i.col))


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return str(value) if isinstance(value, str) else value


def mask_issue(issue: ConfigIssue, redactor: Redactor) -> ConfigIssue:
    """The issue with secrets masked in its message and source line (the caret column follows).

    The source line is cut to its shown length only after masking: a cut secret would leak its
    first characters.
    """
    line, col = issue.source_line, issue.col
    for start, end in reversed(redactor.spans(line)):
        if col and end < col:
            col -= end - start - len(MASK)
        elif col and start < col:
            col = start + 1  # the caret pointed inside the secret: point at the mask
        line = line[:start] + MASK + line[end:]
    message = redactor.text(issue.message)
    return replace(issue, message=message, source_line=cut_line(line, col), col=col)
