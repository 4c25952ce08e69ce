"""`--arg NAME=VALUE` and `--complete NAME[=PREFIX]` of `prompts get` and `resources read`.

`--arg` gives a prompt argument or a resource template variable; `--complete` prints what the
server suggests for one (`completion/complete`) instead of getting or reading anything. The
shell completes both from the server's suggestions (cli/completion.py).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from devall_cli.cli.common import print_json, write_product
from devall_cli.cli.completion import complete_argument

PromptArgOption = Annotated[
    list[str] | None,
    typer.Option(
        "--arg",
        metavar="NAME=VALUE",
        help="A prompt argument (repeatable; over --args).",
        autocompletion=complete_argument,
    ),
]
TemplateArgOption = Annotated[
    list[str] | None,
    typer.Option(
        "--arg",
        metavar="NAME=VALUE",
        help="A variable of a resource template URI (repeatable).",
        autocompletion=complete_argument,
    ),
]
CompleteOption = Annotated[
    str | None,
    typer.Option(
        "--complete",
        metavar="NAME[=PREFIX]",
        help="Print the server's suggestions for this argument (completion/complete).",
        autocompletion=complete_argument,
    ),
]


def parse_pairs(values: list[str] | None) -> dict[str, str]:
    """`--arg NAME=VALUE` options as a mapping (the last of a name wins)."""
    pairs: dict[str, str] = {}
    for value in values or []:
        name, sep, rest = value.partition("=")
        if not sep or not name.strip():
            raise typer.BadParameter(f"expected NAME=VALUE, got {value!r}", param_hint="--arg")
        pairs[name.strip()] = rest
    return pairs


def parse_wanted(value: str) -> tuple[str, str]:
    """`--complete NAME[=PREFIX]` as (name, prefix)."""
    name, _, prefix = value.partition("=")
    if not name.strip():
        raise typer.BadParameter(
            f"expected NAME or NAME=PREFIX, got {value!r}", param_hint="--complete"
        )
    return name.strip(), prefix


def print_completion(
    completion: Any, ref: dict[str, str], wanted: tuple[str, str], json_output: bool, redactor: Any
) -> None:
    """The suggestions, one a line; `--json`: one document with the server's paging hints."""
    argument, prefix = wanted
    if json_output:
        document: dict[str, Any] = {
            "server": completion.server,
            **ref,
            "argument": argument,
            "prefix": prefix,
            "values": list(completion.values),
            "hasMore": completion.has_more,
        }
        if completion.total is not None:
            document["total"] = completion.total
        print_json(redactor.value(document))
        return
    write_product("".join(redactor.text(value) + "\n" for value in completion.values))
