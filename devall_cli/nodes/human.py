"""`human`: shows its task and inputs to the operator, waits for the reply, outputs it.

The reply comes from the run's reply source (`human_input.py`): the terminal, an answers file,
or none (the run fails naming the node). Human nodes of a run ask one at a time, as ChatDev's
resource limit of one per type has them do, so two prompts never interleave.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from devall_cli.config.schema import Checker, KeySpec, check_keys, opt_str
from devall_cli.config.yaml_source import KeyPath
from devall_cli.messages import USER, Message, input_sections
from devall_cli.nodes.base import NODE_TYPES, NodeRun, NodeType
from devall_cli.text import clean_text

if TYPE_CHECKING:
    from devall_cli.nodes.human_input import HumanRequest

KEYS = KeySpec(known=frozenset({"description"}))


@dataclass(frozen=True)
class HumanConfig:
    """`config` of a `human` node."""

    description: str | None = None  # the task shown to the operator


def parse_human(ck: Checker, config: dict[str, Any], path: KeyPath) -> HumanConfig:
    """`description` (optional text)."""
    check_keys(ck, config, path, KEYS)
    return HumanConfig(description=opt_str(ck, config, "description", path) or None)


def request_for(run: NodeRun) -> HumanRequest:
    """What the node asks on this visit."""
    from devall_cli.nodes.human_input import HumanRequest  # runtime: not when parsing

    config: HumanConfig = run.node.config
    # devall: a node without config.description shows the node's own description.
    description = config.description or run.node.description or ""
    return HumanRequest(
        node_id=run.node.id,
        path=run.path,
        visit=run.visit,
        description=description,
        inputs=input_sections(run.inputs),
    )


async def run_human(run: NodeRun) -> list[Message]:
    """Ask, record the question and the reply as events, output the reply as a user message."""
    from devall_cli.events import HumanAskedEvent, HumanRepliedEvent
    from devall_cli.nodes.human_input import human_input

    request = request_for(run)
    source = human_input(run.extras)
    run.emit(
        HumanAskedEvent(
            run_id=run.run_id,
            node_id=run.path,
            visit=run.visit,
            description=request.description,
            channel=source.channel,
        )
    )
    reply = clean_text(await source.reply(request))
    run.emit(
        HumanRepliedEvent(
            run_id=run.run_id,
            node_id=run.path,
            visit=run.visit,
            reply=reply,
            channel=source.channel,
        )
    )
    return [Message(role=USER, text=reply)]


def _details(config: HumanConfig) -> dict[str, Any]:
    return {"description": config.description}


HUMAN = NODE_TYPES.register(
    NodeType(
        "human",
        "asks the operator and outputs the reply",
        KEYS,
        parse_human,
        run_human,
        config_required=False,
        serial=True,
        details=_details,
        asks_operator=True,
    )
)
