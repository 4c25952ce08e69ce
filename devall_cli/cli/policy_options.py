"""The safety options every command that reaches tools shares: --allow-tool, --deny-tool and
--approve (together the command line's layer of the tool policy, above the workflow's), and
--sandbox (the default confinement of local servers and python nodes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from devall_cli.text import suggest

if TYPE_CHECKING:  # the policy is imported when a command reads these options, not on --help
    from devall_cli.nodes.human_input import Answers
    from devall_cli.tools.policy import ApproveMode, Approver, ToolPolicy, ToolRule

RULE_FORMS = "a tool name glob, server:GLOB, or a hint such as readOnlyHint or destructiveHint"

AllowToolOption = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-tool",
        metavar="RULE",
        help=f"Run the tools RULE matches without asking (repeatable): {RULE_FORMS}.",
    ),
]
DenyToolOption = Annotated[
    list[str] | None,
    typer.Option(
        "--deny-tool",
        metavar="RULE",
        help="Never offer the tools RULE matches to a model (repeatable; beats --allow-tool).",
    ),
]
ApproveOption = Annotated[
    str | None,
    typer.Option(
        "--approve",
        metavar="never|ask|always",
        help="What happens to a call of a tool no rule allows: refused, asked on the terminal "
        "(or --answers), or run. Default: the workflow's tool_policy, else always.",
    ),
]


def cli_policy(
    allow: list[str] | None, deny: list[str] | None, approve: str | None
) -> ToolPolicy | None:
    """The command line's policy layer (None: the options say nothing); a bad rule or mode is
    a usage error naming its option."""
    if not allow and not deny and approve is None:
        return None
    from devall_cli.tools.policy import ToolPolicy

    return ToolPolicy(
        allow=tuple(_rule(text, "--allow-tool") for text in allow or ()),
        deny=tuple(_rule(text, "--deny-tool") for text in deny or ()),
        approve=_mode(approve),
    )


def _rule(text: str, option: str) -> ToolRule:
    from devall_cli.tools.policy import RuleError, parse_rule

    try:
        return parse_rule(text, option)
    except RuleError as exc:
        raise typer.BadParameter(f"{exc} (a rule is {RULE_FORMS})", param_hint=option) from None


def _mode(word: str | None) -> ApproveMode | None:
    if word is None:
        return None
    from devall_cli.tools.policy import APPROVE_MODES

    mode = word.strip().lower()
    if mode in APPROVE_MODES:
        return mode  # type: ignore[return-value]
    message = f"must be one of {', '.join(APPROVE_MODES)}, got {word!r}"
    guess = suggest(mode, list(APPROVE_MODES))
    hint = f"; did you mean '{guess}'?" if guess else ""
    raise typer.BadParameter(message + hint, param_hint="--approve")


def policy_manager(policy: ToolPolicy | None, approver: Approver | None) -> Callable[..., Any]:
    """A run's tool_manager_factory: a ToolManager with the command line's tool policy and the
    approver of the calls it leaves to a person."""

    def make(*args: Any, **kwargs: Any) -> Any:
        # Imported when the run starts its tools, as the engine's own factory does.
        from devall_cli.tools.manager import ToolManager

        return ToolManager(*args, policy=policy, approver=approver, **kwargs)

    return make


def answers_approver(answers: Answers | None) -> Approver:
    """An approver that only reads the answers file's tool_approvals (a batch asks nobody at the
    terminal). A module-level function: a batch hands `partial(answers_approver, answers)` to
    its Ray workers, which must pickle it."""
    from devall_cli.cli.approval_prompt import ChainApprover, ScriptedApprovals

    scripted = ScriptedApprovals(answers) if answers is not None and answers.approvals else None
    return ChainApprover(scripted, None)


SandboxOption = Annotated[
    str | None,
    typer.Option(
        "--sandbox",
        metavar="off|prefer|require",
        help="Confine the mcp_local servers and python nodes that set no sandbox: with "
        "bubblewrap (prefer: run unconfined where it cannot; docs/sandbox.md). Default: off.",
    ),
]


def apply_sandbox(mode: str | None) -> None:
    """Make `--sandbox MODE` the default of this command's children (None: off); a bad mode is
    a usage error. Every command that spawns sets it, so no command inherits another's."""
    from devall_cli.procs.sandbox import set_default_sandbox

    set_default_sandbox(mode)
