"""The placeholders a workflow takes from outside its file, as a recording keeps them.

A cassette's header keeps, for every `${NAME}` the workflow file names and finds outside the file
(`--var`, the environment, a `.env` file), its value, or None for a secret-looking name. A
replay without those variables set resolves them from the cassette, so that it needs neither the
environment of the recording nor any API key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from devall_cli import limits
from devall_cli.cassette import Tape, open_recording
from devall_cli.config.dotenv import load_dotenv_files
from devall_cli.config.model import Workflow
from devall_cli.redaction import is_secret_name

_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)")


def outside_values(
    workflow: Path,
    cli_vars: Mapping[str, str] | None,
    env_file: Path | None,
    environ: Mapping[str, str],
) -> dict[str, str | None]:
    """{name: value, or None for a secret} of the placeholders found outside the file."""
    try:
        with open(workflow, "rb") as handle:
            text = handle.read(limits.WORKFLOW_FILE_BYTES).decode("utf-8", "replace")
    except OSError:
        return {}
    dotenv = load_dotenv_files(workflow.parent, Path.cwd(), env_file).values
    cli = dict(cli_vars or {})
    found: dict[str, str | None] = {}
    for name in sorted(set(_REF.findall(text))):
        for source in (cli, environ, dotenv):
            if name in source:
                found[name] = None if is_secret_name(name) else str(source[name])
                break
    return found


def recording_of(
    cassette: Path,
    workflow: Workflow,
    cli_vars: Mapping[str, str] | None,
    env_file: Path | None,
    environ: Mapping[str, str],
) -> Tape:
    """A tape recording a run of the loaded `workflow` into `cassette`, its header keeping the
    placeholders the workflow took from outside its file."""
    values = outside_values(workflow.path, cli_vars, env_file, environ)
    return open_recording(cassette, workflow.redactor, workflow=workflow.name, placeholders=values)
