"""Cutting dynamic-edge payloads into units: by message, by regex, by JSON path."""

from __future__ import annotations

import pytest

from devall_cli.config.dynamic import JsonPathSplit, RegexSplit, SplitConfig, json_path_steps
from devall_cli.engine.splitting import follow, split_messages
from devall_cli.messages import Message

LIST = "Plan:\n- apples\n- Pears\nthat is all\n- plums"


def user(text: str, source: str = "planner") -> Message:
    return Message(role="user", text=text, source=source, meta={"dynamic_from": source})


def regex(pattern: str, **options: object) -> SplitConfig:
    return SplitConfig("regex", RegexSplit(pattern, **options))  # type: ignore[arg-type]


def json_path(path: str) -> SplitConfig:
    steps = json_path_steps(path)
    assert steps is not None
    return SplitConfig("json_path", JsonPathSplit(path, steps))


def texts(units: list[Message]) -> list[str]:
    return [unit.text for unit in units]


def test_a_message_split_makes_every_message_a_unit() -> None:
    messages = [user("one"), user("two", "other")]
    assert split_messages(SplitConfig(), messages) == messages


def test_a_regex_split_makes_every_match_a_unit_and_keeps_the_message_around_it() -> None:
    (unit, *_) = units = split_messages(regex(r"^- (.+)$", group=1, multiline=True), [user(LIST)])
    assert texts(units) == ["apples", "Pears", "plums"]
    assert (unit.role, unit.source, unit.meta) == ("user", "planner", {"dynamic_from": "planner"})


def test_regex_options_change_what_matches() -> None:
    assert texts(split_messages(regex(r"- p\w+"), [user(LIST)])) == ["- plums"]
    insensitive = regex(r"- p\w+", case_sensitive=False)
    assert texts(split_messages(insensitive, [user(LIST)])) == ["- Pears", "- plums"]
    assert texts(split_messages(regex(r"^- \w+$"), [user(LIST)])) == [LIST]  # no match: pass
    whole = regex(r"Plan:.*all", dotall=True)
    assert texts(split_messages(whole, [user(LIST)])) == ["Plan:\n- apples\n- Pears\nthat is all"]


def test_a_named_group_is_the_unit_and_a_group_that_did_not_take_part_is_empty() -> None:
    split = regex(r"(?P<word>[a-z]+)|(\d+)", group="word")
    assert texts(split_messages(split, [user("ab 12 cd")])) == ["ab", "", "cd"]


def test_without_a_match_the_message_passes_whole_or_as_an_empty_unit() -> None:
    messages = [user("no list here"), user("- one")]
    assert texts(split_messages(regex(r"- (\w+)", group=1), messages)) == ["no list here", "one"]
    empty = regex(r"- (\w+)", group=1, on_no_match="empty")
    assert texts(split_messages(empty, messages)) == ["", "one"]


@pytest.mark.parametrize(
    ("path", "text", "units"),
    [
        ("items", '{"items": ["a", "b"]}', ["a", "b"]),
        ("data.results", '{"data": {"results": [{"n": 1}, [2, 3]]}}', ['{"n": 1}', "[2, 3]"]),
        ("$.items[*]", '{"items": ["ü", 4, 2.5, true, null]}', ["ü", "4", "2.5", "true", "null"]),
        ("items.1", '{"items": ["a", ["b", "c"]]}', ["b", "c"]),
        ("items.0.name", '{"items": [{"name": "x"}]}', ["x"]),
        ("", '["a", "b"]', ["a", "b"]),
        ("", '{"a": 1}', ['{"a": 1}']),
        ("title", '{"title": "one thing"}', ["one thing"]),
    ],
)
def test_a_json_path_split_makes_every_item_of_the_array_a_unit(
    path: str, text: str, units: list[str]
) -> None:
    assert texts(split_messages(json_path(path), [user(text)])) == units


def test_json_in_one_fenced_block_is_read_inside_the_fence() -> None:
    reply = 'Here:\n```json\n{"items": [1, 2]}\n```'
    assert texts(split_messages(json_path("items"), [user(reply)])) == [reply]  # not only a fence
    fenced = '```json\n{"items": [1, 2]}\n```\n'
    assert texts(split_messages(json_path("items"), [user(fenced)])) == ["1", "2"]


def test_text_that_is_not_json_is_one_unit_and_a_missing_path_gives_no_units() -> None:
    messages = [user("not json"), user('{"other": []}'), user('{"items": ["x"]}')]
    assert texts(split_messages(json_path("items"), messages)) == ["not json", "x"]


def test_when_nothing_comes_out_every_message_is_a_unit() -> None:
    messages = [user('{"other": 1}'), user('{"items": []}')]
    assert split_messages(json_path("items"), messages) == messages


def test_json_past_the_nesting_limit_is_not_json() -> None:
    deep = "[" * 200 + "]" * 200
    assert texts(split_messages(json_path(""), [user(deep)])) == [deep]


@pytest.mark.parametrize(
    ("data", "steps", "items"),
    [
        ({"a": {"b": [1, 2]}}, ("a", "b"), [1, 2]),
        ({"a": [10, 20]}, ("a", "5"), []),
        ({"a": [10, 20]}, ("a", "x"), []),
        ({"a": None}, ("a",), []),
        ({"0": "key"}, ("0",), ["key"]),
        ("text", ("a",), []),
    ],
)
def test_following_a_path_as_chatdev_does(
    data: object, steps: tuple[str], items: list[object]
) -> None:
    assert follow(data, steps) == items
