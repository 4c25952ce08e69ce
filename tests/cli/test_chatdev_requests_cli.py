"""The exact model requests devall sends for ChatDev-format workflows, as ChatDev's source says.

A deterministic fake model answers each request with a pure function of it (`respond`), so every
later request is known in advance; each test pins the whole request list: roles, order,
contents, tools and parameters. The rules and where ChatDev's source (OpenBMB/ChatDev) says them:

- runtime/node/executor/agent_executor.py: the conversation is the system prompt (`role`), then
  each queued message with its own role; the start node's queue holds the task as a user message.
- runtime/edge/conditions/base.py: a delivered message becomes a user message, except a literal
  node's, which keeps its role.
- runtime/node/executor/base.py: `input_mode: prompt` sends one user message with a section
  `=== INPUT FROM <source> (<role>) ===` and a blank line before each input's text.
- runtime/node/agent/providers/openai_provider.py (Chat Completions): `temperature` 0.7 unless
  the node's params set one; `tool_choice: auto` whenever tools are offered; each tool as
  `{type: function, function: {name, description, parameters}}`.
- agent_executor.py `_build_tool_message`: a dict result goes back as indented JSON; the tool
  message answers the assistant message that asked for the call.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import invoke
from tests.servers.fake_llm import FakeLLM, ReplyLike


def respond(body: dict[str, Any]) -> ReplyLike:
    """The model: call the first offered tool once, then answer with what it was last told."""
    messages = body["messages"]
    last = messages[-1]
    if body.get("tools") and last["role"] != "tool":
        name = body["tools"][0]["function"]["name"]
        return {
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps({"word": "hi"})},
                }
            ],
        }
    return f"[{len(messages)}] {last['content']}"


@pytest.fixture
def model() -> Any:
    with FakeLLM(responder=respond) as llm:
        yield llm


def run(tmp_path: Path, llm: FakeLLM, graph: dict[str, Any]) -> list[Any]:
    """Run the graph (written as JSON, which is YAML) on the task "the task"; the requests."""
    for node in graph["nodes"]:
        if node["type"] == "agent":
            node["config"] = {
                "provider": "openai", "base_url": llm.base_url, "api_key": "sk-test",
                "name": "gpt-4o", **node["config"],
            }  # fmt: skip
    (tmp_path / "flow.yaml").write_text(json.dumps({"graph": graph}, indent=2))
    code, _, err = invoke(
        "run", str(tmp_path / "flow.yaml"), "--task", "the task", "--out", str(tmp_path / "run"),
        "--quiet",
    )  # fmt: skip
    assert code == 0, err
    return [request.body for request in llm.requests]


def agent(node_id: str, role: str, **config: Any) -> dict[str, Any]:
    return {"id": node_id, "type": "agent", "config": {"role": role, **config}}


def test_a_chain_sends_the_system_prompt_then_the_input_as_a_user_message(
    tmp_path: Path, model: FakeLLM
) -> None:
    graph = {
        "start": ["writer"],
        "nodes": [agent("writer", "You write."), agent("critic", "You critique.")],
        "edges": [{"from": "writer", "to": "critic"}],
    }
    bodies = run(tmp_path, model, graph)
    assert bodies == [
        {
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": "You write."},
                {"role": "user", "content": "the task"},
            ],
            "temperature": 0.7,
        },
        {
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": "You critique."},
                {"role": "user", "content": "[2] the task"},
            ],
            "temperature": 0.7,
        },
    ]


def test_a_literal_keeps_its_role_and_prompt_mode_sends_one_sectioned_message(
    tmp_path: Path, model: FakeLLM
) -> None:
    graph = {
        "start": ["brief", "writer"],
        "end": ["editor"],
        "nodes": [
            {
                "id": "brief",
                "type": "literal",
                "config": {"content": "Be brief.", "role": "assistant"},
            },
            agent("writer", "You write."),
            agent("editor", "You edit.", input_mode="prompt"),
        ],
        "edges": [{"from": "brief", "to": "writer"}, {"from": "writer", "to": "editor"}],
    }
    bodies = run(tmp_path, model, graph)
    writer, editor = bodies
    assert writer["messages"] == [
        {"role": "system", "content": "You write."},
        {"role": "user", "content": "the task"},
        {"role": "assistant", "content": "Be brief."},  # a literal's message keeps its role
    ]
    assert editor["messages"] == [
        {"role": "system", "content": "You edit."},
        {"role": "user", "content": "=== INPUT FROM writer (user) ===\n\n[3] Be brief."},
    ]
    assert editor["temperature"] == writer["temperature"] == 0.7


def test_a_function_tool_round_sends_the_call_and_its_indented_result(
    tmp_path: Path, model: FakeLLM
) -> None:
    functions = tmp_path / "functions"
    functions.mkdir()
    (functions / "words.py").write_text(
        textwrap.dedent(
            '''\
            from typing import Annotated


            def echo(word: Annotated[str, "The word to echo"]) -> dict:
                """Echo a word back."""
                return {"word": word, "length": len(word)}
            '''
        )
    )
    tooling = [{"type": "function", "config": {"tools": [{"name": "echo"}]}}]
    graph = {
        "start": ["a"],
        "nodes": [agent("a", "You use tools.", params={"temperature": 0.2}, tooling=tooling)],
    }
    bodies = run(tmp_path, model, graph)
    tool = {
        "type": "function",
        "function": {
            "name": "echo",
            "description": "Echo a word back.",
            "parameters": {
                "type": "object",
                "properties": {"word": {"type": "string", "description": "The word to echo"}},
                "required": ["word"],
            },
        },
    }
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "echo", "arguments": json.dumps({"word": "hi"})},
    }
    result = json.dumps({"word": "hi", "length": 2}, indent=2)
    assert bodies == [
        {
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": "You use tools."},
                {"role": "user", "content": "the task"},
            ],
            "temperature": 0.2,  # the node's own
            "tools": [tool],
            "tool_choice": "auto",
        },
        {
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": "You use tools."},
                {"role": "user", "content": "the task"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "call_1", "content": result},
            ],
            "temperature": 0.2,
            "tools": [tool],
            "tool_choice": "auto",
        },
    ]
