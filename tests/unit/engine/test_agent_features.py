"""The agent's thinking stage, memories and skills, driven by the scripted provider."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from devall_cli.config.model import EdgeConfig, GraphConfig, MemoryStoreConfig, NodeConfig
from devall_cli.config.schema import KeySpec
from devall_cli.engine.graph import GraphRun, RunEnv
from devall_cli.events import (
    EventBus,
    MemoryLoadedEvent,
    ModelRequestEvent,
    ToolResultEvent,
)
from devall_cli.memory.bank import MemoryBank, MemoryContext
from devall_cli.memory.base import AUTO, MemoryRefConfig
from devall_cli.memory.blackboard import BlackboardMemoryConfig
from devall_cli.messages import USER, Message, task_messages
from devall_cli.nodes import NODE_TYPES, NodeRun, NodeType
from devall_cli.providers import make_provider
from devall_cli.providers.base import AssistantMessage, Provider
from devall_cli.redaction import Redactor
from devall_cli.skills.config import SkillsConfig
from devall_cli.thinking.base import ThinkingConfig
from devall_cli.thinking.reflection import ReflectionConfig
from devall_cli.tools.base import ToolSpec
from tests.unit.engine.builders import Collector, FakeTools, agent, echo_tool, turn

REFLECT = ThinkingConfig("reflection", ReflectionConfig("Make it shorter."))


class Recording:
    """A provider that keeps every conversation and tool list it was sent."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.requests: list[tuple[list[dict[str, Any]], list[str]]] = []

    async def complete(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolSpec]
    ) -> AssistantMessage:
        self.requests.append(([dict(m) for m in messages], [t.name for t in tools]))
        return await self.inner.complete(messages, tools)

    async def aclose(self) -> None:
        await self.inner.aclose()


class Visit:
    """One visit of an agent node with recorded model requests and events."""

    def __init__(self, tools: FakeTools | None = None) -> None:
        self.bus = EventBus()
        self.events = Collector(self.bus)
        self.tools = tools or FakeTools()
        self.provider: Recording | None = None

    def make(self, config: Any, state: dict[str, Any] | None = None) -> Provider:
        self.provider = Recording(make_provider(config, state=state))
        return self.provider

    async def run(
        self, node: Any, task: str, *, memory: MemoryBank | None = None, folder: Path | None = None
    ) -> str:
        kind = NODE_TYPES.get("agent")
        assert kind is not None
        run = NodeRun(
            node=node,
            inputs=[Message(role=USER, text=task, source="TASK")],
            visit=1,
            path=node.id,
            run_id="r1",
            emit=self.bus.emit,
            tools=self.tools,
            make_provider=self.make,
            state={},
            workflow_dir=folder,
            memory=memory,
        )
        return "\n".join(m.text for m in await kind.run(run))

    @property
    def requests(self) -> list[tuple[list[dict[str, Any]], list[str]]]:
        assert self.provider is not None
        return self.provider.requests


async def board(tmp_path: Path, *posts: str) -> MemoryBank:
    path = tmp_path / "board.json"
    stores = (MemoryStoreConfig("board", "blackboard", BlackboardMemoryConfig(str(path))),)
    bank = await MemoryBank.open(stores, MemoryContext())
    for post in posts:
        await bank.stores["board"].write(_payload(post), node="x")
    return bank


def _payload(text: str) -> Any:
    from devall_cli.memory.base import Snapshot, WritePayload

    return WritePayload("", "", None, Snapshot(text))


async def test_reflection_replaces_the_answer_and_asks_without_tools() -> None:
    node = agent(
        "A", turn("first answer"), turn("short answer"), role="Be a poet.", thinking=REFLECT
    )
    visit = Visit(FakeTools({"echo": echo_tool()}))
    assert await visit.run(node, "write a poem") == "short answer"
    (_, tools), (reflection, no_tools) = visit.requests
    assert tools == ["echo"] and no_tools == []
    assert reflection == [
        {
            "role": "user",
            "content": "Here is a conversation between two roles: SYSTEM: Be a poet.\n\n"
            "USER: === INPUT FROM TASK (user) ===\n\nwrite a poem\n\n"
            "ASSISTANT: first answer Make it shorter.",
        }
    ]
    stages = [e.stage for e in visit.events.of(ModelRequestEvent)]
    assert stages == ["gen", "post_gen_thinking"]


async def test_memories_go_before_the_last_user_message(tmp_path: Path) -> None:
    bank = await board(tmp_path, "yesterday we counted ships")
    refs = (MemoryRefConfig("board", write=False),)
    node = agent("A", turn("ok"), role="Be brief.", memories=refs)
    visit = Visit()
    await visit.run(node, "count again", memory=bank)
    ((messages, _),) = visit.requests
    assert [m["role"] for m in messages] == ["system", "user", "user"]
    assert messages[1]["content"].startswith("===== Related Memories =====\n\n--- board ---\n1. ")
    assert "yesterday we counted ships" in messages[1]["content"]
    assert messages[2]["content"] == "count again"


async def test_in_prompt_mode_memories_lead_the_one_message(tmp_path: Path) -> None:
    bank = await board(tmp_path, "an old post")
    node = agent("A", turn("ok"), memories=(MemoryRefConfig("board"),), input_mode="prompt")
    visit = Visit()
    await visit.run(node, "task", memory=bank)
    ((messages, _),) = visit.requests
    assert len(messages) == 1
    assert messages[0]["content"].startswith("===== Related Memories =====")
    assert messages[0]["content"].endswith("=== INPUT FROM TASK (user) ===\n\ntask")


async def test_stages_decide_when_memories_are_read_and_the_visit_is_written(
    tmp_path: Path,
) -> None:
    bank = await board(tmp_path, "an old post")
    refs = (MemoryRefConfig("board", retrieve_stage=("post_gen_thinking",)),)
    node = agent("A", turn("answer"), turn("reflected"), memories=refs, thinking=REFLECT)
    visit = Visit()
    await visit.run(node, "task", memory=bank)
    (gen, _), (reflection, _) = visit.requests
    assert all("Related Memories" not in str(m["content"]) for m in gen)
    assert reflection[0]["content"].startswith(
        "Here is a conversation between two roles: ===== Related Memories ====="
    )
    assert [item.content_summary for item in bank.stores["board"].items] == [  # type: ignore[attr-defined]
        "an old post",
        "reflected",
    ]


async def test_skill_tools_are_answered_by_the_agent_and_their_instructions_follow(
    tmp_path: Path,
) -> None:
    root = tmp_path / ".agents" / "skills" / "greet"
    root.mkdir(parents=True)
    (root / "SKILL.md").write_text("---\nname: greet\ndescription: Greets.\n---\nSay GREETING.\n")
    node = agent(
        "A",
        turn(None, ("activate_skill", {"skill_name": "greet"}), ("echo", {"text": "hi"})),
        turn("GREETING"),
        role="Help.",
        skills=SkillsConfig((), str(root.parent)),
    )
    tools = FakeTools({"echo": echo_tool()})
    visit = Visit(tools)
    assert await visit.run(node, "hello", folder=tmp_path) == "GREETING"
    (first, offered), (second, _) = visit.requests
    assert offered == ["echo", "activate_skill", "read_skill_file"]
    assert first[0]["content"].startswith("Help.\n\nYou have access to Agent Skills.")
    assert "<location>.agents/skills/greet/SKILL.md</location>" in first[0]["content"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "tool", "system"]
    assert second[-1]["content"].startswith("Activated Agent Skill `greet`.")
    assert tools.calls == [("A", "echo", {"text": "hi"})]  # the skill tool never reached it
    sources = {e.tool: e.source for e in visit.events.of(ToolResultEvent)}
    assert sources == {"activate_skill": "skill", "echo": "function"}


# --- a graph run and its stores ----------------------------------------------------------------


async def _run_inner(run: NodeRun) -> list[Message]:
    assert run.run_subgraph is not None
    return await run.run_subgraph(run.node.config, run.inputs, "")


NODE_TYPES.register(
    NodeType(
        "nest", "runs its config (a graph) as a subgraph", KeySpec(frozenset()), None, _run_inner
    )  # type: ignore[arg-type]
)


async def test_each_graph_loads_its_own_stores_and_saves_them_when_done(tmp_path: Path) -> None:
    def board_graph(node: NodeConfig) -> GraphConfig:
        store = MemoryStoreConfig("board", "blackboard", BlackboardMemoryConfig(AUTO))
        return GraphConfig(nodes=(node,), start=(node.id,), memory=(store,))

    writer = agent("w", turn("posted {input}"), memories=(MemoryRefConfig("board"),))
    inner = board_graph(writer)
    outer = board_graph(agent("a", turn("outer says hi"), memories=(MemoryRefConfig("board"),)))
    outer = GraphConfig(
        nodes=(*outer.nodes, NodeConfig("sub", "nest", inner)),
        start=("a",),
        edges=(EdgeConfig("a", "sub"),),
        memory=outer.memory,
    )
    bus = EventBus()
    collected = Collector(bus)
    env = RunEnv(
        run_id="r1",
        bus=bus,
        tools=FakeTools(),
        make_provider=lambda config, state=None: make_provider(config, state=state),
        edge_env=None,  # type: ignore[arg-type]
        run_dir=tmp_path,
        memory=MemoryContext("r1", tmp_path, {}, Redactor(), bus.emit),
    )
    await GraphRun(outer, env).run(task_messages("T"))
    top = json.loads((tmp_path / "memory_board.json").read_text())
    sub = json.loads((tmp_path / "memory_sub_board.json").read_text())
    assert [item["content_summary"] for item in top] == ["outer says hi"]
    assert [item["content_summary"] for item in sub] == ["posted outer says hi"]
    loaded = [(e.graph, e.store) for e in collected.of(MemoryLoadedEvent)]
    assert loaded == [("", "board"), ("sub", "board")]
