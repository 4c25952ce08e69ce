"""An agent visit and its memories: what is retrieved into the prompt, and what is written back.

ChatDev's order: at the `gen` stage the retrieved block goes into the conversation as a user
message just before the last user message (`prompt` input mode: in front of the one message);
after the answer (and the thinking stage), the visit is written to every store the agent may
write.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from devall_cli.memory.bank import MemoryBank
from devall_cli.memory.base import MemoryRefConfig, Snapshot, WritePayload
from devall_cli.messages import USER, input_sections
from devall_cli.nodes.agent_settings import AgentConfig
from devall_cli.nodes.base import NodeRun


class AgentMemory:
    """The memories one agent visit reads and writes."""

    def __init__(
        self, bank: MemoryBank, refs: Sequence[MemoryRefConfig], run: NodeRun, role: str
    ) -> None:
        self.bank = bank
        self.refs = tuple(refs)
        self.run = run
        self.role = role
        self.query = input_sections(run.inputs)

    @classmethod
    def of(cls, config: AgentConfig, run: NodeRun) -> AgentMemory | None:
        """The visit's memories; None when the agent has none."""
        if not config.memories or run.memory is None:
            return None
        return cls(run.memory, config.memories, run, config.role or "")

    async def retrieve(self, stage: str) -> str | None:
        """The memories block for one stage (None when nothing was found)."""
        node = self.run.path
        return await self.bank.retrieve(self.refs, stage=stage, query=self.query, node=node)

    async def insert(self, messages: list[dict[str, Any]], stage: str, input_mode: str) -> None:
        """Put what the memories give for `stage` into the conversation."""
        found = await self.retrieve(stage)
        if not found:
            return
        if input_mode == "prompt":
            last = messages[-1]
            messages[-1] = {**last, "content": f"{found}\n\n{last.get('content') or ''}"}
            return
        users = [i for i, message in enumerate(messages) if message.get("role") == USER]
        at = users[-1] if users else len(messages)
        messages.insert(at, {"role": USER, "content": found})

    async def write(self, output: str) -> None:
        """Write the visit (its inputs and the node's output) back."""
        inputs = self.run.inputs
        payload = WritePayload(
            agent_role=self.role,
            inputs_text=self.query,
            input_snapshot=(
                Snapshot("\n\n".join(f"({m.role}) {m.text}" for m in inputs)) if inputs else None
            ),
            output_snapshot=Snapshot(output),
        )
        await self.bank.write(self.refs, payload, node=self.run.path)
