"""Where a `human` node's replies come from: the terminal, an answers file, or nowhere.

The command decides (`devall run --answers FILE`, or a terminal on stdin and stderr) and hands
the source to the nodes through `NodeRun.extras[HUMAN_INPUT]`; nodes never import the CLI. With
no source at all, asking fails the run at once, naming the node: a run never hangs waiting for
an operator who is not there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from devall_cli.cassette import Tape, active_tape
from devall_cli.errors import RunFailedError

HUMAN_INPUT = "human_input"  # the key of the reply source in NodeRun.extras
ANY_NODE = "*"  # the answers-file key whose replies serve every human node


@dataclass(frozen=True)
class HumanRequest:
    """What a human node asks: which node and visit, its task, and its inputs as text."""

    node_id: str
    path: str  # `outer/inner/node` inside subgraphs; the node id otherwise
    visit: int
    description: str
    inputs: str  # ChatDev's `=== INPUT FROM <source> (<role>) ===` sections

    @property
    def label(self) -> str:
        """`node 'review'`, with the visit from the second one on."""
        visit = f" (visit {self.visit})" if self.visit > 1 else ""
        return f"node '{self.path}'{visit}"


class HumanInput(Protocol):
    """A source of replies to human nodes."""

    @property
    def channel(self) -> str:
        """`terminal`, `answers` or `none`: recorded with every question and reply."""
        ...

    async def reply(self, request: HumanRequest) -> str:
        """The operator's reply; RunFailedError when there is none to be had."""
        ...


class NoOperator:
    """No terminal and no answers file: asking fails the run."""

    channel = "none"

    async def reply(self, request: HumanRequest) -> str:
        """Never a reply: the error names the node and says how to give one."""
        raise RunFailedError(
            f"{request.label} waits for a human reply, but there is no terminal to ask on "
            "and no --answers file",
            hint=(
                "run devall on a terminal (standard input and standard error), or give "
                "--answers FILE with the replies (see docs/cli.md)"
            ),
        )


APPROVAL_WORDS = ("yes", "no", "always")  # what the answers file may say about a tool call


@dataclass(frozen=True)
class ToolApproval:
    """One entry of the answers file's `tool_approvals`: which calls it decides, and how."""

    key: str  # a glob on the final tool name, or `server:GLOB` on the server id
    answers: tuple[str, ...]  # yes | no | always, one per call in order
    repeat: bool = False  # a lone answer decides every call; a list is used up one per call
    where: str = ""  # `answers.yaml:3` (for the trace: which line decided)


@dataclass(frozen=True)
class Answers:
    """The replies of an answers file: by node path or id, and for any node (`*`); and the
    decisions on tool calls that need approval (`tool_approvals`, in file order)."""

    file: str
    replies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    approvals: tuple[ToolApproval, ...] = ()


class ScriptedReplies:
    """Replies from an answers file: each visit takes the next reply of its node, then of `*`."""

    channel = "answers"

    def __init__(self, answers: Answers) -> None:
        self.answers = answers
        self._used: dict[str, int] = {}

    async def reply(self, request: HumanRequest) -> str:
        """The next unused reply for the node (its path, its id, then `*`)."""
        keys = list(dict.fromkeys((request.path, request.node_id, ANY_NODE)))
        for key in keys:
            replies = self.answers.replies.get(key, ())
            used = self._used.get(key, 0)
            if used < len(replies):
                self._used[key] = used + 1
                return replies[used]
        raise RunFailedError(
            f"{request.label} waits for a human reply, but {self.answers.file} has no reply "
            f"left for it ({self._spent(keys)})"
        )

    def _spent(self, keys: list[str]) -> str:
        given = [k for k in keys if k in self.answers.replies]
        if not given:
            names = " or ".join(f"'{k}'" for k in keys)
            return f"no list under {names}"
        counts = [f"{len(self.answers.replies[k])} under '{k}'" for k in given]
        return "all used: " + ", ".join(counts)


def human_input(extras: Mapping[str, Any]) -> HumanInput:
    """The run's reply source; NoOperator when the command gave none.

    On a tape, a replay answers from the cassette and a recording keeps every reply.
    """
    source: HumanInput | None = extras.get(HUMAN_INPUT)
    found = source if source is not None else NoOperator()
    tape = active_tape()
    if tape is not None and tape.replays("human"):
        return TapedReplies(tape)
    if tape is not None and tape.records():
        return RecordedReplies(found, tape)
    return found


def _asked(request: HumanRequest) -> dict[str, Any]:
    return {"question": {"description": request.description, "inputs": request.inputs}}


class TapedReplies:
    """Replies served from a cassette: the one recorded for the same question of the visit."""

    channel = "cassette"

    def __init__(self, tape: Tape) -> None:
        self._tape = tape

    async def reply(self, request: HumanRequest) -> str:
        """The recorded reply (ReplayMismatchError when the question differs)."""
        entry = self._tape.take("human", "question to a person", _asked(request))
        return str(entry.get("reply", ""))


class RecordedReplies:
    """Another reply source whose replies are kept on a cassette."""

    def __init__(self, inner: HumanInput, tape: Tape) -> None:
        self._inner = inner
        self._tape = tape
        self.channel = inner.channel

    async def reply(self, request: HumanRequest) -> str:
        """The inner source's reply, recorded."""
        text = await self._inner.reply(request)
        self._tape.record({"type": "human", **_asked(request), "reply": text})
        return text
