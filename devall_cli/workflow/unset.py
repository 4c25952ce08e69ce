"""Placeholders that are not set, and the stand-ins a workflow is loaded with instead.

`devall graph` and `devall validate --allow-unset` check a file whose `${API_KEY}` or
`${BASE_URL}` only the run will have: when the only errors of a load are unset placeholders,
the file is loaded again with a stand-in for each (`${NAME}` itself, or an `.invalid` URL for a
URL-like name, so that URL checks pass) and everything else is checked as usual.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from devall_cli.errors import ConfigIssue

if TYPE_CHECKING:
    from devall_cli.config.model import Workflow

# A stand-in may let an included file load that names placeholders of its own: a few rounds.
_ROUNDS = 5

_UNSET = re.compile(r"unresolved placeholder \$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_URL_NAME = re.compile(r"URL|URI|ENDPOINT|HOST", re.IGNORECASE)


def unset_name(issue: ConfigIssue) -> str | None:
    """The NAME of an `unresolved placeholder ${NAME}` error, else None."""
    found = _UNSET.search(issue.message) if issue.severity == "error" else None
    return found.group(1) if found else None


def unset_names(issues: Iterable[ConfigIssue]) -> list[str]:
    """The names of the unset placeholders among `issues`, sorted, once each."""
    return sorted({name for issue in issues if (name := unset_name(issue)) is not None})


def only_unset(issues: Iterable[ConfigIssue]) -> bool:
    """Whether every error among `issues` is an unset placeholder (and there is one)."""
    errors = [issue for issue in issues if issue.severity == "error"]
    return bool(errors) and all(unset_name(issue) is not None for issue in errors)


def stand_in(name: str) -> str:
    """The value an unset placeholder is loaded with: an `.invalid` URL, or `${NAME}`."""
    return "http://unset.invalid/" if _URL_NAME.search(name) else f"${{{name}}}"


def with_stand_ins(environ: Mapping[str, str], names: Iterable[str]) -> dict[str, str]:
    """`environ` plus a stand-in for each of `names`."""
    return {**environ, **{name: stand_in(name) for name in names}}


def validate_allowing_unset(
    path: str | Path,
    *,
    cli_vars: Mapping[str, str] | None = None,
    env_file: str | Path | None = None,
) -> tuple[Workflow | None, list[ConfigIssue]]:
    """`validate_workflow` where an unset placeholder is a warning and gets a stand-in.

    Each use of an unset placeholder becomes one warning (where it is used); the file is then
    checked again with the stand-ins, and that check's issues follow the warnings.
    """
    from devall_cli.workflow.loader import validate_workflow

    def check(environ: Mapping[str, str]) -> tuple[Workflow | None, list[ConfigIssue]]:
        return validate_workflow(
            path, cli_vars=cli_vars, env_file=env_file, environ=environ, advice=True
        )

    loaded, issues = check(os.environ)
    names: set[str] = set()
    warnings: list[ConfigIssue] = []
    for _ in range(_ROUNDS):
        found = [issue for issue in issues if unset_name(issue) not in {None, *names}]
        if loaded is not None or not found:
            break
        warnings.extend(_as_warning(issue) for issue in found)
        names.update(unset_names(found))
        loaded, issues = check(with_stand_ins(os.environ, names))
    return loaded, [*warnings, *issues]


def _as_warning(issue: ConfigIssue) -> ConfigIssue:
    """`${NAME} is not set`, one line where the placeholder is used."""
    message = f"${{{unset_name(issue)}}} is not set; checked with a stand-in value"
    return replace(issue, message=message, severity="warning", source_line="")
