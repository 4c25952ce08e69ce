"""The loop, gate, voting and message-handling examples in workflows/examples/, validated and run
as shipped (the one written for a real model runs on the fake LLM).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.flows import events, invoke, visits
from tests.conftest import REPO_ROOT
from tests.servers.fake_llm import FakeLLM

EXAMPLES = REPO_ROOT / "workflows" / "examples"
OFFLINE = ["critic_loop", "loop_counter_gate", "majority_vote", "message_handling"]


def example(name: str) -> str:
    return str(EXAMPLES / f"{name}.yaml")


def run_offline(name: str, task: str) -> tuple[str, Path]:
    code, out, err = invoke("run", example(name), "--task", task, "--out", "run")
    assert code == 0, err
    return out, Path("run")


@pytest.mark.parametrize("name", OFFLINE)
def test_offline_examples_are_valid(name: str) -> None:
    code, out, err = invoke("validate", example(name))
    assert code == 0, err
    assert "is valid" in out
    assert err == ""  # no warning either


def test_timer_example_is_valid_with_its_endpoint_given() -> None:
    code, out, err = invoke(
        "validate", example("loop_timer_gate"), "--var", "BASE_URL=http://127.0.0.1:9/v1",
        "--var", "API_KEY=unused",
    )  # fmt: skip
    assert code == 0, err
    assert "time_limit  loop_timer" in out


def test_critic_loop_runs_until_approval() -> None:
    out, run = run_offline("critic_loop", "a slogan for a bakery")
    assert out == "Draft 3: Fresh bread, baked at dawn, still warm at nine.\n"
    assert len(visits(run, "writer")) == 3
    assert visits(run, "critic")[-1] == ["APPROVED"]


def test_loop_counter_example_ends_after_three_rounds() -> None:
    out, run = run_offline("loop_counter_gate", "name a cat")
    message = "Three rounds without approval: stopping here."
    assert out == message + "\n"
    assert visits(run, "round_limit") == [[], [], [message]]
    assert visits(run, "writer")[-1] == ["Sir Whiskers the Third"]


def test_majority_vote_example_picks_the_answer_two_panelists_gave() -> None:
    out, _ = run_offline("majority_vote", "What is the capital of Australia?")
    assert out == "Canberra\n"


def test_message_handling_example_keeps_remembers_and_forgets_as_described() -> None:
    out, run = run_offline("message_handling", "a motto for a library")
    assert out == "Open doors, open books\n"
    inputs = {(e["node_id"], e["visit"]): e["inputs"] for e in events(run, "node.started")}
    brief = "Brief: at most six words, no exclamation marks."
    # keep_message: the brief on every visit; context_window 2: two messages of the last visit
    assert inputs[("writer", 3)] == [
        brief,
        "Too plain: make it sound welcoming.",
        "Every story, open to everyone",
        "Closer; make it shorter.",
    ]
    # context_window -1: the critic remembers every draft and its own notes
    assert len(inputs[("critic", 3)]) == 5
    # clear_context: only the newest draft waits at publish
    assert inputs[("publish", 1)] == ["Open doors, open books"]


def test_timer_example_ends_the_loop_when_its_time_is_up(fake_llm: FakeLLM) -> None:
    fake_llm.enqueue(*(FakeLLM.text_reply(f"text {n}", delay=0.1) for n in range(40)))
    code, out, err = invoke(
        "run", example("loop_timer_gate"), "--task", "a haiku", "--out", "run",
        "--var", f"BASE_URL={fake_llm.base_url}", "--var", "API_KEY=sk-example-1f2e3d",
        "--var", "LOOP_SECONDS=0.3",
    )  # fmt: skip
    assert code == 0, err
    run = Path("run")
    gate = visits(run, "time_limit")
    assert gate[-1] == ["Time is up."] and all(v == [] for v in gate[:-1])
    drafts = visits(run, "writer")
    assert out == drafts[-1][0] + "\n"  # the writer's latest draft is the answer
    assert len(drafts) == len(gate) >= 2
