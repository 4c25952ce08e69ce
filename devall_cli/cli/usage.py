"""Usage errors as devall reports every error: `devall: error: <message>` plus a hint line, exit 2.

Click reports a bad command line itself, in a block of three lines (`Usage: ...`, `Try ...`,
`Error: ...`). `DevallGroup` is the top-level command group: it lets Click parse and run the
command without reporting anything, and reports what went wrong the way every other devall
error is reported. Shell completion requests are still answered before anything else.
"""

from __future__ import annotations

import errno
import importlib
import sys
import traceback
from collections.abc import Sequence
from typing import Any

import typer

from devall_cli.cli.help_format import HelpGroup
from devall_cli.errors import ExitCode

# The Click that Typer runs on: its own copy in recent Typer releases, the `click` package before.
_EXCEPTIONS = importlib.import_module(typer.BadParameter.__module__)
_CLICK = _EXCEPTIONS.__name__.rpartition(".")[0]
ClickException: type[Exception] = _EXCEPTIONS.ClickException
ClickUsageError: type[Exception] = _EXCEPTIONS.UsageError
NoSuchOption: type[Exception] = _EXCEPTIONS.NoSuchOption
# Click before 8.2 prints the help itself instead of raising this.
NoArgsIsHelpError: Any = getattr(_EXCEPTIONS, "NoArgsIsHelpError", ())
ClickAbort: type[BaseException] = typer.Abort


def current_context() -> Any:
    """The Click context of the command that is running, or None."""
    return importlib.import_module(f"{_CLICK}.globals").get_current_context(silent=True)


class DevallGroup(HelpGroup):
    """The `devall` group: Click's usage errors become one error line and a hint (exit 2).

    Its help page is laid out as every devall page (help_format.py).
    """

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the command line; usage errors are reported here, never by Click."""
        argv = list(sys.argv[1:] if args is None else args)
        try:
            result = super().main(
                args=argv,
                prog_name=prog_name,
                complete_var=complete_var,
                standalone_mode=False,
                windows_expand_args=windows_expand_args,
                **extra,
            )
        except NoArgsIsHelpError as exc:
            exc.show()  # `devall` alone: the help, as before
            return _leave(standalone_mode, ExitCode.USAGE)
        except ClickUsageError as exc:
            report_usage_error(exc, debug=_debug_asked(argv))
            return _leave(standalone_mode, ExitCode.USAGE)
        except ClickException as exc:
            message = exc.format_message()  # type: ignore[attr-defined]
            _print_error(message, debug=_debug_asked(argv))
            return _leave(standalone_mode, int(exc.exit_code))  # type: ignore[attr-defined]
        except ClickAbort:
            _print_error("interrupted", debug=False)
            return _leave(standalone_mode, ExitCode.INTERRUPTED)
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise
            # The reader of stdout went away (`devall ... | head`): nothing left to say.
            return _leave(standalone_mode, ExitCode.FAILED)
        code = result if isinstance(result, int) else ExitCode.OK
        return _leave(standalone_mode, code)


def _leave(standalone_mode: bool, code: int) -> int:
    if standalone_mode:
        sys.exit(int(code))
    return int(code)


def _debug_asked(argv: Sequence[str]) -> bool:
    """`--debug` given before the command (the global option may not have been parsed yet)."""
    from devall_cli.cli.common import STATE

    if STATE.debug:
        return True
    for arg in argv:
        if arg == "--debug":
            return True
        if not arg.startswith("-"):  # the command: options after it are its own
            return False
    return False


def usage_message(exc: Any) -> str:
    """Click's message worded as devall's: lower case, no full stop, `; did you mean ...?`."""
    if isinstance(exc, NoSuchOption):
        message = f"no such option: {exc.option_name}"  # type: ignore[attr-defined]
        possibilities = exc.possibilities  # type: ignore[attr-defined]
        if possibilities:
            message += f"; did you mean {' or '.join(sorted(possibilities)[:3])}?"
        return str(message)
    text = " ".join(str(exc.format_message()).split())
    text = text.replace(". Did you mean", "; did you mean")
    text = text[:1].lower() + text[1:]
    return text[:-1] if text.endswith(".") else text


def usage_hint(ctx: Any) -> str:
    """Where the right usage is shown: `try 'devall run --help'`."""
    path = ctx.command_path if ctx is not None else "devall"
    return f"try '{path} --help'"


def report_usage_error(exc: Any, *, debug: bool) -> None:
    """`devall: error: <message>` and `  hint: try 'devall <command> --help'` on stderr."""
    _print_error(usage_message(exc), debug=debug, hint=usage_hint(exc.ctx))


def _print_error(message: str, *, debug: bool, hint: str = "") -> None:
    from devall_cli.cli.common import print_line, stderr_console

    if debug:
        traceback.print_exc()
    console = stderr_console()
    print_line(console, f"devall: error: {message}")
    if hint:
        print_line(console, f"  hint: {hint}")
