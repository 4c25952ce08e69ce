"""The layout of every `--help` page: one style of usage line, commands in order, examples.

Typer's plain help writes a required argument as `{WORKFLOW}`, an optional one whose metavar is
already bracketed as `[[DIR]]`, and puts Python types beside names (`WORKFLOW <path>`,
`<list[Path]>`, `--format <mermaid|svg|dot>`); its command list keeps the order of registration
and cuts each line at the terminal's width with "...". The classes here render instead:

- arguments as UPPER words: `WORKFLOW`, `[DIR]` when optional, `WORKFLOW...` when repeated;
- an option without a metavar by its kind: `a|b|c` for choices, `PATH`, `N`, `NUMBER`, `TEXT`;
- the commands of a group sorted by name, each with its whole first sentence;
- an `Examples:` section last, from the table in help_examples.py (imported on --help only),
  each line as written; one wider than the page goes on after a shell continuation (` \\`).

app.py makes every command and group of the app use them (`use_help_layout`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from typer.core import TyperCommand, TyperGroup
from typer.models import DefaultPlaceholder

if TYPE_CHECKING:
    import typer

# Typer's type labels (`<path>`, `<int>`) and the word an option's value is shown as instead.
_WORDS = {"path": "PATH", "int": "N", "float": "NUMBER", "str": "TEXT", "bool": "BOOLEAN"}


class HelpCommand(TyperCommand):
    """A devall command: its `--help` in devall's layout."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        """`[OPTIONS] WORKFLOW [TOOL]`: arguments as UPPER words."""
        return usage_pieces(self, ctx)

    def format_options(self, ctx: Any, formatter: Any) -> None:
        """The Arguments and Options sections, names without Python types."""
        write_parameters(self, ctx, formatter)

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        """The epilog, if any, then the command's examples."""
        super().format_epilog(ctx, formatter)
        write_examples(ctx, formatter)


class HelpGroup(TyperGroup):
    """A group of devall commands: its `--help` in devall's layout, commands by name."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        """`[OPTIONS] COMMAND [ARGS]...`."""
        return [*usage_pieces(self, ctx), self.subcommand_metavar]

    def format_options(self, ctx: Any, formatter: Any) -> None:
        """The Options section, then the Commands section."""
        write_parameters(self, ctx, formatter)
        self.format_commands(ctx, formatter)

    def list_commands(self, ctx: Any) -> list[str]:
        """The names of the commands, sorted (help pages and shell completion)."""
        return sorted(self.commands)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """Each command with the whole first sentence of its help, wrapped, never cut."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, short_help(command)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        """The epilog, if any, then the group's examples."""
        super().format_epilog(ctx, formatter)
        write_examples(ctx, formatter)


def use_help_layout(app: typer.Typer) -> None:
    """Make every command and sub-group registered on `app` (and below) render as devall's."""
    for command in app.registered_commands:
        if command.cls in (None, TyperCommand):
            command.cls = HelpCommand
    for group in app.registered_groups:
        instance = group.typer_instance
        if instance is None:
            continue
        # The class given to add_typer() wins over the sub-app's own: set where neither is.
        if not _given(group.cls) and not _given(instance.info.cls):
            group.cls = HelpGroup
        use_help_layout(instance)


def _given(value: Any) -> bool:
    """Whether a Typer setting was given (Typer marks the ones left out as placeholders)."""
    return value is not None and not isinstance(value, DefaultPlaceholder)


def usage_pieces(command: Any, ctx: Any) -> list[str]:
    """The usage line after the command's name."""
    pieces = [command.options_metavar] if command.options_metavar else []
    for param in command.get_params(ctx):
        if param.param_type_name == "argument":
            pieces.append(argument_usage(param))
        else:
            pieces.extend(param.get_usage_pieces(ctx))
    return pieces


def argument_word(param: Any) -> str:
    """`WORKFLOW` for an argument, whatever brackets or dots its metavar was given."""
    word = str(param.metavar or param.name or "").upper()
    return word.removesuffix("...").removeprefix("[").removesuffix("]")


def argument_name(param: Any) -> str:
    """`WORKFLOW`, or `WORKFLOW...` when it takes several values."""
    return argument_word(param) + ("..." if param.nargs != 1 else "")


def argument_usage(param: Any) -> str:
    """`WORKFLOW`, `[WORKFLOW]` when it may be left out, `WORKFLOW...` when repeated."""
    return argument_name(param) if param.required else f"[{argument_name(param)}]"


def option_metavar(param: Any, ctx: Any) -> str:
    """How an option's value is shown when the option names no metavar of its own."""
    describe = getattr(param, "display_type", None)  # Typer's `<path>`, `<a|b>`, `<int range>`
    label = str(describe(ctx)).removeprefix("<").removesuffix(">") if describe else ""
    if label.startswith("list[") and label.endswith("]"):
        label = label[len("list[") : -1]
    if "|" in label:
        return label  # the choices, as the options that name theirs show them
    return _WORDS.get(label.split(" ")[0], "") or str(param.name or "value").upper()


def write_parameters(command: Any, ctx: Any, formatter: Any) -> None:
    """The Arguments and the Options sections of a help page."""
    arguments: list[tuple[str, str]] = []
    options: list[tuple[str, str]] = []
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            continue
        names, text = record
        if param.param_type_name == "argument":
            arguments.append((argument_name(param), text))
            continue
        if param.metavar is None and not (getattr(param, "is_flag", False) or param.count):
            names = _with_metavar(names, param, ctx)
        options.append((names, text))
    for title, rows in (("Arguments", arguments), ("Options", options)):
        if rows:
            with formatter.section(title):
                formatter.write_dl(rows)


def _with_metavar(names: str, param: Any, ctx: Any) -> str:
    """`-f, --format mermaid|svg|dot` for Typer's `-f, --format <mermaid|svg|dot>`."""
    describe = getattr(param, "display_type_rich", None)
    typer_shown = str(describe(ctx)) if describe is not None else ""
    if not typer_shown or f" {typer_shown}" not in names:
        return names
    repeated = "..." if typer_shown.endswith("...") else ""
    return names.replace(f" {typer_shown}", f" {option_metavar(param, ctx)}{repeated}")


def short_help(command: Any) -> str:
    """The command's own short help, else the first sentence of its help, uncut."""
    return str(command.get_short_help_str(limit=10_000))


def command_key(ctx: Any) -> str:
    """The command's words after `devall`: `tools list`; "" for `devall` itself."""
    words = []
    while ctx is not None and ctx.parent is not None:
        words.append(str(ctx.info_name))
        ctx = ctx.parent
    return " ".join(reversed(words))


def write_examples(ctx: Any, formatter: Any) -> None:
    """The `Examples:` section: a command a line; one too wide goes on after a ` \\`."""
    from devall_cli.cli.help_examples import EXAMPLES

    lines = EXAMPLES.get(command_key(ctx), ())
    if not lines:
        return
    with formatter.section("Examples"):
        indent = formatter.current_indent
        for line in lines:
            for part in wrap_example(line, formatter.width - indent):
                formatter.write(f"{'':>{indent}}{part}\n")


def wrap_example(line: str, width: int) -> list[str]:
    """A command line too long for `width` as shell lines ending in ` \\`, words kept whole."""
    if len(line) <= width:
        return [line]
    lead = " " * (len(line) - len(line.lstrip(" ")))
    lines: list[str] = []
    current = ""
    for word in shell_words(line):
        if current and len(current) + 1 + len(word) + len(" \\") > width:
            lines.append(f"{current} \\")
            current = f"{lead}    {word}"
        else:
            current = f"{current} {word}" if current else f"{lead}{word}"
    return [*lines, current]


def shell_words(line: str) -> list[str]:
    """The words of a command line: a quoted text is one word, so is an option with its value."""
    words: list[str] = []
    current, quote = "", ""
    for char in line.strip(" "):
        if char == " " and not quote:
            if current:
                words.append(current)
            current = ""
            continue
        current += char
        if quote and char == quote:
            quote = ""
        elif not quote and char in "'\"":
            quote = char
    if current:
        words.append(current)
    glued: list[str] = []
    for word in words:
        last = glued[-1] if glued else ""
        if last.startswith("-") and " " not in last and not word.startswith("-"):
            glued[-1] = f"{last} {word}"  # `--args '{...}'` stays on one line
        else:
            glued.append(word)
    return glued
