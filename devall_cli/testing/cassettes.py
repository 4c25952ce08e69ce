"""A case's cassette: opened for replay or for recording, and what became of it at the end.

A replay loads the workflow and runs it with the placeholders the recording kept laid under the
environment, so it needs neither the recording's variables nor an API key. A recording is
written only when its case passed: a run that broke its expectations is not worth keeping.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from devall_cli.errors import DevallError
from devall_cli.testing.model import CaseConfig

if TYPE_CHECKING:
    from devall_cli.cassette import Tape

LIVE, REPLAY, RECORD = "live", "replay", "record"


def case_mode(case: CaseConfig, record: bool) -> str:
    """`live` (no cassette), `replay`, or `record` (with --record)."""
    if case.replay is None:
        return LIVE
    return RECORD if record else REPLAY


def open_tape(
    case: CaseConfig,
    mode: str,
    *,
    cli_vars: Mapping[str, str],
    env_file: Path | None,
    environ: Mapping[str, str],
) -> Tape | None:
    """The case's tape (None when it runs live); ConfigError when a cassette is unusable."""
    from devall_cli.cassette import open_replay

    assert case.loaded is not None
    if case.replay is None or mode == LIVE:
        return None
    if mode == REPLAY:
        tape = open_replay(case.replay, case.loaded.redactor)
        tape.hint = (
            "if the change is intended, record the cassette again: "
            f"devall test {shlex.quote(case.file)} --case {shlex.quote(case.name)} --record"
        )
        return tape
    from devall_cli.workflow.placeholders_used import recording_of

    return recording_of(case.replay, case.loaded, {**cli_vars, **case.vars}, env_file, environ)


def run_environ(case: CaseConfig, mode: str, environ: Mapping[str, str]) -> Mapping[str, str]:
    """What the run sees as its environment: a replay's recorded placeholders under the real."""
    if mode != REPLAY or case.replay is None:
        return environ
    from devall_cli.cassette import replay_environ

    return replay_environ(case.replay, environ)


def finish_tape(tape: Tape | None, mode: str, passed: bool, shown: str) -> str:
    """Write the recording of a case that passed; a note on what became of the cassette."""
    if tape is None:
        return ""
    if mode == RECORD:
        if not passed:
            return f"cassette not written (the case failed): {shown}"
        try:
            tape.close()
        except DevallError as exc:
            return f"cassette not written: {exc.message}"
        return f"cassette written: {shown}"
    unused = tape.unused()
    if unused:
        return f"{len(unused)} recorded exchange(s) were never asked for (the run did less)"
    return ""
