"""A `judge` expectation: a model grades the output against a rubric, through devall's providers.

The grader is asked for one JSON object `{"score": 0..1, "reasoning": "..."}`; the first JSON
object with a `score` anywhere in its reply is taken (models wrap JSON in prose or code fences).
A reply without a usable score fails the expectation and says so; the reasoning is kept either
way. The grader is always asked live: its exchange is not part of a case's cassette.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from devall_cli.errors import DevallError
from devall_cli.providers.base import ModelSettings, Provider
from devall_cli.redaction import Redactor
from devall_cli.testing.checks import shown_text
from devall_cli.testing.model import JudgeConfig
from devall_cli.text import finite_number

ProviderMaker = Callable[..., Provider]

SYSTEM_PROMPT = (
    "You grade the answer of an AI workflow against a rubric. Reply with one JSON object and "
    'nothing else: {"score": <a number from 0 to 1>, "reasoning": "<one short paragraph>"}. '
    "A score of 1 means the answer fully meets the rubric, 0 that it does not meet it at all."
)
_REPLY_SHOWN = 300


@dataclass(frozen=True)
class Grade:
    """What the grader said: a score (None when its reply held none), its reasoning, and why the
    grade could not be read (the reply, or the error that stopped the call)."""

    score: float | None
    reasoning: str = ""
    problem: str = ""
    reply: str = ""


def grading_messages(config: JudgeConfig, task: str, output: str) -> list[dict[str, Any]]:
    """The conversation sent to the grader."""
    prompt = (
        f"Rubric:\n{config.rubric}\n\n"
        f"Task given to the workflow:\n{task or '(none)'}\n\n"
        f"Answer to grade:\n{output}"
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}]


async def ask_grader(
    config: JudgeConfig,
    task: str,
    output: str,
    *,
    environ: Mapping[str, str] | None,
    redactor: Redactor,
    make_provider: ProviderMaker | None = None,
) -> Grade:
    """Ask the grader; its reply read into a Grade (a failed call is a Grade with a problem)."""
    if make_provider is None:
        from devall_cli.providers import make_provider as default_maker

        make_provider = default_maker
    try:
        provider = make_provider(config.model, environ=environ, redactor=redactor)
    except DevallError as exc:
        return Grade(None, problem=f"the grader cannot be used: {exc.message}")
    try:
        reply = await provider.complete(grading_messages(config, task, output), ())
    except DevallError as exc:
        return Grade(None, problem=f"the grader did not answer: {exc.message}")
    finally:
        await provider.aclose()
    return read_grade(reply.content or "")


def read_grade(reply: str) -> Grade:
    """The score and reasoning in a grader's reply: the first JSON object with a `score`."""
    found = _score_object(reply)
    if found is None:
        problem = f"the grader's reply has no JSON object with a score: {_cut(reply)}"
        return Grade(None, problem=problem, reply=reply)
    reasoning = found.get("reasoning", "")
    reasoning = reasoning if isinstance(reasoning, str) else json.dumps(reasoning)
    score = finite_number(found.get("score"))
    if score is None or not 0 <= score <= 1:
        problem = f"the grader's score {json.dumps(found.get('score'))} is not a number from 0 to 1"
        return Grade(None, reasoning, problem, reply)
    return Grade(score, reasoning, reply=reply)


def _score_object(reply: str) -> dict[str, Any] | None:
    decoder = json.JSONDecoder()
    start = reply.find("{")
    while start >= 0:
        try:
            value, _end = decoder.raw_decode(reply, start)
        except ValueError:
            value = None
        if isinstance(value, dict) and "score" in value:
            return value
        start = reply.find("{", start + 1)
    return None


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return json.dumps(text if len(text) <= _REPLY_SHOWN else text[:_REPLY_SHOWN] + "...")


def grade_extra(grade: Grade, model: ModelSettings) -> dict[str, Any]:
    """What a judge's result adds beside its verdict: score, reasoning, the grader's model."""
    extra: dict[str, Any] = {
        "score": grade.score,
        "reasoning": grade.reasoning,
        "grader": f"{model.provider}:{model.name}",
    }
    if grade.score is None and grade.reply:
        extra["reply"] = shown_text(grade.reply)
    return extra
