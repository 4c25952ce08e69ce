"""The limits on JSON from outside, and how stdout lines beyond them are read."""

from __future__ import annotations

import json
from typing import Any

import pytest

from devall_cli import json_limits
from devall_cli.json_limits import (
    MAX_INT_DIGITS,
    MAX_NESTING,
    JsonLimitError,
    check_value,
    loads,
    message_head,
    nests_too_deep,
)
from devall_cli.tools.stdio_lines import split_message


def lists(levels: int, inner: str = "1") -> str:
    return "[" * levels + inner + "]" * levels


def nested_value(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def test_nesting_up_to_the_limit_loads_and_one_more_level_is_refused() -> None:
    assert loads(lists(MAX_NESTING)) == nested_value(MAX_NESTING)
    with pytest.raises(JsonLimitError, match=f"is nested deeper than {MAX_NESTING} levels"):
        loads(lists(MAX_NESTING + 1))


def test_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps({"text": "[" * 5000, "quote": '\\"[[[' * 300})
    assert not nests_too_deep(text)
    assert loads(text)["text"] == "[" * 5000


def test_depth_far_beyond_the_recursion_limit_is_refused_not_a_recursion_error() -> None:
    for levels in (1_000, 100_000):
        with pytest.raises(JsonLimitError):
            loads('{"a": ' + lists(levels) + "}")


def test_integers_up_to_the_limit_load_and_longer_ones_are_refused() -> None:
    assert loads("-" + "7" * MAX_INT_DIGITS) == -int("7" * MAX_INT_DIGITS)
    with pytest.raises(JsonLimitError, match=f"holds an integer longer than {MAX_INT_DIGITS}"):
        loads('{"n": ' + "7" * (MAX_INT_DIGITS + 1) + "}")
    assert loads("1" + "0" * 5000 + ".5") == float("inf")  # floats are not limited


def test_invalid_json_is_still_a_plain_value_error() -> None:
    with pytest.raises(ValueError) as info:
        loads("{not json")
    assert not isinstance(info.value, JsonLimitError)


def test_check_value_counts_levels_from_where_the_value_sits() -> None:
    check_value(nested_value(MAX_NESTING))
    check_value({"a": nested_value(MAX_NESTING - 1)})
    with pytest.raises(JsonLimitError):
        check_value({"a": nested_value(MAX_NESTING)})
    check_value(nested_value(MAX_NESTING - 2), level=3)  # its deepest list at level 100
    with pytest.raises(JsonLimitError):
        check_value(nested_value(MAX_NESTING - 1), level=3)
    with pytest.raises(JsonLimitError):
        check_value(nested_value(100_000))  # no recursion error either


@pytest.mark.parametrize(
    ("text", "head"),
    [
        ('{"jsonrpc": "2.0", "id": 7, "result": ' + lists(2000) + "}", (7, False)),
        ('{"jsonrpc": "2.0", "result": ' + lists(2000) + ', "id": "r-1"}', ("r-1", False)),
        ('{"id": 3, "method": "x", "params": ' + lists(2000) + "}", (3, True)),
        ('{"jsonrpc": "2.0", "result": {"id": 9, "x": ' + lists(2000) + "}}", (None, False)),
        ('{"jsonrpc": "2.0", "id": ' + lists(3) + "}", (None, False)),
        ('{"note": "id", "id": 4}', (4, False)),
    ],
    ids=["id_first", "id_last", "request", "id_only_inside", "id_not_scalar", "value_named_id"],
)
def test_message_head_finds_the_top_level_id_and_method(text: str, head: tuple[Any, bool]) -> None:
    assert message_head(text) == head


def test_a_deep_response_line_becomes_an_error_answer_and_a_log_note() -> None:
    line = 'progress 50% {"jsonrpc": "2.0", "result": ' + lists(3000) + ', "id": 12}'
    log, answer = split_message(line)
    assert log.startswith("progress 50% [devall: dropped a JSON-RPC message that is nested")
    assert answer is not None and answer["id"] == 12
    assert answer["error"]["message"] == (
        f"invalid JSON-RPC response from the server: the response is nested deeper than "
        f"{MAX_NESTING} levels"
    )


def test_a_deep_request_from_the_server_is_only_logged() -> None:
    log, answer = split_message(
        '{"jsonrpc": "2.0", "id": 5, "method": "m", "params": ' + lists(3000) + "}"
    )
    assert answer is None and "nested deeper than" in log


def test_many_brackets_that_do_not_nest_are_fine() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "result": {"rows": [[i] for i in range(50_000)]}}
    junk, parsed = split_message(json.dumps(message))
    assert junk == "" and parsed == message
    assert json_limits.MAX_NESTING < 50_000
