"""The matchers expectations share, and how a grader's reply is read."""

from __future__ import annotations

from typing import Any

import pytest

from devall_cli.testing.checks import check_text
from devall_cli.testing.judge import read_grade
from devall_cli.testing.model import JsonPathConfig, TextConfig
from devall_cli.testing.parse_expect import parse_json_path

ANSWER = 'Here it is:\n```json\n{"items": [{"name": "a b", "n": 0}], "done": false}\n```\n'


def at(path: str, **check: Any) -> TextConfig:
    steps = parse_json_path(path)
    assert steps is not None, path
    has_equals = "equals" in check
    return TextConfig(json_path=JsonPathConfig(path, steps, has_equals=has_equals, **check))


@pytest.mark.parametrize(
    ("text", "config", "passed", "actual"),
    [
        ("exact", TextConfig(equals="  exact  "), True, "exact"),
        ("exact", TextConfig(equals="exact."), False, "exact"),
        ("exact", TextConfig(contains=("xa", "ct"), regex=r"^e\w+t$"), True, "exact"),
        ("exact", TextConfig(not_contains=("xa",)), False, "exact"),
        ("exact", at("$.items[0].name", equals="a b"), False, "exact"),  # not JSON
        (ANSWER, at("$.items[0].name", equals="a b"), True, "a b"),
        (ANSWER, at('items[0]["n"]', equals=0), True, 0),
        (ANSWER, at("$.items[0].n", equals=False), False, 0),  # false is not 0 in JSON
        (ANSWER, at("$.done", equals=False), True, False),
        (ANSWER, at("$.items[1]", exists=False), True, None),
        (ANSWER, at("$.items", contains='"n": 0'), True, [{"n": 0, "name": "a b"}]),
        (ANSWER, at("$.items[0].name", regex="^a\\s"), True, "a b"),
        (ANSWER, at("$.missing", equals=None), False, None),
    ],
)
def test_text_checks_say_what_they_saw(
    text: str, config: TextConfig, passed: bool, actual: Any
) -> None:
    verdict = check_text(config, text, "the answer")
    assert (verdict.passed, verdict.actual) == (passed, actual), verdict.message
    assert bool(verdict.message) != passed
    assert passed or verdict.message.startswith("the answer")


@pytest.mark.parametrize(
    ("reply", "score", "problem"),
    [
        ('{"score": 0.9, "reasoning": "names the number"}', 0.9, ""),
        ('Sure! {"note": 1} then ```json\n{"score": "0.25", "reasoning": "x"}\n```', 0.25, ""),
        ("I would give it 8/10.", None, "no JSON object with a score"),
        ('{"score": 7, "reasoning": "out of ten"}', None, "is not a number from 0 to 1"),
        ('{"score": true}', None, "is not a number from 0 to 1"),
    ],
)
def test_a_grade_is_found_anywhere_in_the_reply(
    reply: str, score: float | None, problem: str
) -> None:
    grade = read_grade(reply)
    assert grade.score == score
    assert problem in grade.problem and bool(problem) == bool(grade.problem)
