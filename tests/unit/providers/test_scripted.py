"""The scripted provider (SPEC.md §3): turns in order, placeholders, running out, tool calls."""

from __future__ import annotations

import json

from devall_cli.config.model import frozen_mapping
from devall_cli.providers.scripted import (
    ScriptedProvider,
    ScriptedToolCall,
    ScriptedTurn,
    fill_placeholders,
)


def conversation(*tool_results: str) -> list[dict[str, object]]:
    messages: list[dict[str, object]] = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "first task"},
        {"role": "user", "content": "second input"},
    ]
    for n, text in enumerate(tool_results, start=1):
        messages.append({"role": "assistant", "content": None, "tool_calls": []})
        messages.append({"role": "tool", "tool_call_id": f"call_{n}", "content": text})
    return messages


def test_placeholders_come_from_the_conversation() -> None:
    text = "in={input} | last={tool_result} | all={tool_results}"
    filled = fill_placeholders(text, conversation("4", "9"))
    assert filled == "in=first task\nsecond input | last=9 | all=4\n9"


def test_other_braces_are_left_alone_and_values_are_not_expanded_again() -> None:
    messages = [{"role": "user", "content": "literal {tool_result} in the task"}]
    text = 'JSON {"a": {input}} {unknown} {0} {input'
    assert fill_placeholders(text, messages) == (
        'JSON {"a": literal {tool_result} in the task} {unknown} {0} {input'
    )


def test_missing_tool_results_fill_as_empty() -> None:
    assert fill_placeholders("[{tool_result}][{tool_results}]", conversation()) == "[][]"


def test_content_given_as_parts_is_read_as_text() -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    ]
    assert fill_placeholders("{input}", messages) == "ab"


async def test_turns_are_used_in_order_with_numbered_tool_calls() -> None:
    script = (
        ScriptedTurn(
            tool_calls=(ScriptedToolCall("rand_num", frozen_mapping({"a": 1, "b": 100})),)
        ),
        ScriptedTurn(
            content="checking",
            tool_calls=(
                ScriptedToolCall("clock"),
                ScriptedToolCall("echo", frozen_mapping({"t": [1]})),
            ),
        ),
        ScriptedTurn(content="Your number is {tool_result}. Task: {input}"),
    )
    provider = ScriptedProvider(script)

    first = await provider.complete(conversation(), [])
    second = await provider.complete(conversation("42"), [])
    third = await provider.complete(conversation("42", "noon", "[1]"), [])

    assert first.content is None
    (call,) = first.tool_calls
    assert (call.id, call.name, call.arguments, call.error) == (
        "call_1",
        "rand_num",
        {"a": 1, "b": 100},
        None,
    )
    assert json.loads(call.raw_arguments) == {"a": 1, "b": 100}
    assert second.content == "checking"
    assert [(c.id, c.name, dict(c.arguments)) for c in second.tool_calls] == [
        ("call_2", "clock", {}),
        ("call_3", "echo", {"t": [1]}),
    ]
    assert third.content == "Your number is [1]. Task: first task\nsecond input"
    assert third.tool_calls == ()


async def test_after_the_script_the_last_content_turn_repeats_without_tool_calls() -> None:
    script = (
        ScriptedTurn(content="answer: {tool_result}"),
        ScriptedTurn(tool_calls=(ScriptedToolCall("again"),)),
    )
    provider = ScriptedProvider(script)
    await provider.complete(conversation(), [])
    await provider.complete(conversation(), [])

    extra = await provider.complete(conversation("7"), [])
    more = await provider.complete(conversation("7", "8"), [])

    assert (extra.content, extra.tool_calls) == ("answer: 7", ())
    assert more.content == "answer: 8"


async def test_a_script_without_content_ends_with_empty_text() -> None:
    provider = ScriptedProvider((ScriptedTurn(tool_calls=(ScriptedToolCall("t"),)),))
    await provider.complete(conversation(), [])
    assert (await provider.complete(conversation(), [])).content == ""
    assert (await ScriptedProvider(()).complete(conversation(), [])).content == ""


async def test_each_instance_starts_the_script_from_the_top() -> None:
    script = (ScriptedTurn(content="one"), ScriptedTurn(content="two"))
    first, second = ScriptedProvider(script), ScriptedProvider(script)
    assert (await first.complete([], [])).content == "one"
    assert (await first.complete([], [])).content == "two"
    assert (await second.complete([], [])).content == "one"


async def test_scripted_tool_calls_become_an_openai_assistant_message() -> None:
    script = (ScriptedTurn(tool_calls=(ScriptedToolCall("add", frozen_mapping({"x": 2})),)),)
    reply = await ScriptedProvider(script).complete([], [])
    assert reply.to_message() == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "add", "arguments": '{"x": 2}'},
            }
        ],
    }
    assert "tool_calls" not in (await ScriptedProvider(()).complete([], [])).to_message()


async def test_placeholders_in_tool_call_arguments_are_filled_too() -> None:
    call = ScriptedToolCall(
        "echo",
        frozen_mapping({"text": "{input}", "nested": {"last": ["got {tool_result}", 3]}}),
    )
    provider = ScriptedProvider((ScriptedTurn(tool_calls=(call,)),))
    (made,) = (await provider.complete(conversation("42"), [])).tool_calls
    assert made.arguments == {
        "text": "first task\nsecond input",
        "nested": {"last": ["got 42", 3]},
    }
    assert json.loads(made.raw_arguments) == made.arguments
