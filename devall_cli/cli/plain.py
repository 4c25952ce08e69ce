"""`devall validate` and `devall --version` without Typer: the plain path of the entry point.

Typer, Rich and Typer's parsing of the command line (a pydantic validator per option) cost more
than checking a workflow does. The plain forms of these two commands are read here and run
directly, with the same output, streams and exit codes as through Typer:
`devall [--debug] [--no-color] --version` and
`devall [--no-color] validate WORKFLOW... [--var NAME=VALUE]... [--env-file PATH]
[--allow-unset] [--json]`. Anything else (`--help`, `--debug validate`, whose stacks show the
path through Typer, an option this module does not know, a malformed `--var`, a value that looks
like an option, shell completion) and any error raised before the first line is printed are left
to Typer, which reports them as always.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from devall_cli.errors import DevallError

GLOBAL_FLAGS = frozenset({"--debug", "--no-color"})
VALUED = frozenset({"--var", "--env-file"})
FLAGS = frozenset({"--json", "--allow-unset"})


@dataclass
class ValidateLine:
    """A plain `validate` command line."""

    workflows: list[Path]
    vars: dict[str, str] = field(default_factory=dict)
    env_file: Path | None = None
    allow_unset: bool = False
    json_output: bool = False


def run_plain(argv: Sequence[str]) -> int | None:
    """Run a plain `--version` or `validate`; its exit code, or None: Typer takes the command."""
    if _completing():
        return None
    args = list(argv)
    if "--version" in args and all(arg in GLOBAL_FLAGS or arg == "--version" for arg in args):
        from devall_cli import __version__

        return _guarded(lambda: _write(sys.stdout, f"devall {__version__}\n"))
    while args and args[0] in GLOBAL_FLAGS:
        if args.pop(0) == "--debug":
            return None  # its tracebacks show the stack through Typer: Typer runs it
    if not args or args[0] != "validate":
        return None
    line = read_validate(args[1:])
    return None if line is None else validate(line)


def _completing() -> bool:
    """Shell completion asks through `_<PROG>_COMPLETE`: Typer answers it."""
    return any(name.startswith("_") and name.endswith("_COMPLETE") for name in os.environ)


def read_validate(args: Sequence[str]) -> ValidateLine | None:
    """The options of a plain `validate`, or None when Typer should read them."""
    line = ValidateLine(workflows=[])
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if not arg.startswith("-"):
            line.workflows.append(Path(arg))
            continue
        name, sep, value = arg.partition("=")
        if name in FLAGS and not sep:
            line.json_output |= name == "--json"
            line.allow_unset |= name == "--allow-unset"
            continue
        if name not in VALUED:
            return None  # `-`, `--`, `-h`, `--help`, another option: Typer reads it
        if not sep:
            if index >= len(args):
                return None
            value, index = args[index], index + 1
        if not value or value.startswith("-") or not _take(line, name, value):
            return None
    if not line.workflows:
        return None
    return line


def _take(line: ValidateLine, name: str, value: str) -> bool:
    if name == "--env-file":
        line.env_file = Path(value)
        return True
    key, sep, text = value.partition("=")
    if not sep or not key.strip():
        return False  # Typer reports the malformed --var
    line.vars[key.strip()] = text
    return True


def validate(line: ValidateLine) -> int | None:
    """Check and print as `devall validate` does; None when Typer should report an error."""
    from devall_cli.cli.validate_core import check_files, render_summary, results_document
    from devall_cli.errors import ConfigError, ExitCode, InterruptedRunError

    try:
        results = check_files(line.workflows, line.vars, line.env_file, line.allow_unset)
    except KeyboardInterrupt:
        _write_error(InterruptedRunError())
        return int(ExitCode.INTERRUPTED)
    except Exception:
        return None  # nothing printed yet: Typer runs the command and reports the error

    def report() -> None:
        if line.json_output:
            from devall_cli.cli.plain_output import print_json

            print_json(results_document(results))
            return
        for path, loaded, issues in results:
            if issues:
                _write_error(ConfigError("workflow issues", issues=issues))
            if loaded is not None:
                _write(sys.stdout, render_summary(loaded, str(path)) + "\n")

    code = _guarded(report)
    if code == 0 and any(loaded is None for _, loaded, _ in results):
        return int(ExitCode.CONFIG)
    return code


def _write_error(error: DevallError) -> None:
    from devall_cli.cli.plain_output import error_output
    from devall_cli.text import visible

    for raw, text in error_output(error, debug=False, mask=None):
        _write(sys.stderr, text if raw else visible(text) + "\n")


def _write(stream: TextIO, text: str) -> None:
    stream.write(text)
    stream.flush()


def _guarded(body: Callable[[], None]) -> int:
    """Run the printing; a closed pipe ends the command with exit 1, as through Typer."""
    try:
        body()
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        # Nothing more can be written: later flushes (at exit) must not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    return 0
