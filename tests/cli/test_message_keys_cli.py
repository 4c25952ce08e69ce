"""What a model receives on each visit of a loop, per message handling key, through `devall run`.

The writer runs on the fake LLM (which records every request); the critic is scripted and asks
for changes twice, then approves. So the writer runs three times and its three requests show
exactly what `keep_message`, `clear_context`, `clear_kept_context`, `context_window` and
`input_mode` left in its queue.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.cli.flows import (
    edge,
    invoke,
    llm_agent,
    node,
    scripted,
    sent_messages,
    write_flow,
)
from tests.servers.fake_llm import FakeLLM

TASK = ("user", "the task")
BRIEF = ("user", "BRIEF")
FEEDBACK = [("user", "feedback 1"), ("user", "feedback 2")]
DRAFTS = [("assistant", "draft 1"), ("assistant", "draft 2")]


def writer_requests(
    folder: Path,
    llm: FakeLLM,
    *,
    brief: dict[str, Any] | None = None,
    back: dict[str, Any] | None = None,
    **writer: Any,
) -> list[list[tuple[str, str]]]:
    """Run the loop; the messages of each of the writer's three requests.

    `brief`: the keys of an edge from a literal `BRIEF` node (a start node) to the writer;
    `back`: extra keys of the critic → writer edge; `writer`: extra writer keys.
    """
    llm.enqueue("draft 1", "draft 2", "draft 3")
    nodes = [
        llm_agent("writer", llm, **writer),
        scripted("critic", "feedback 1", "feedback 2", "APPROVED"),
        node("final", "passthrough"),
    ]
    edges = [
        edge("writer", "critic"),
        edge("critic", "writer", none=["APPROVED"], **(back or {})),
        edge("critic", "final", any=["APPROVED"]),
    ]
    start = ["writer"]
    if brief is not None:
        nodes.append(node("brief", "literal", content="BRIEF"))
        edges.append(edge("brief", "writer", **brief))
        start.append("brief")
    flow = write_flow(folder, nodes, edges, start=start)
    code, out, err = invoke("run", str(flow), "--task", "the task", "--out", "run", "-q")
    assert code == 0, err
    assert out == "APPROVED\n"
    requests = sent_messages(llm, "model-writer")
    assert len(requests) == 3
    return requests


def test_by_default_each_visit_sees_only_what_arrived_for_it(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    assert writer_requests(tmp_path, fake_llm) == [
        [TASK],
        [FEEDBACK[0]],
        [FEEDBACK[1]],
    ]


@pytest.mark.parametrize(
    ("brief", "expected"),
    [
        ({}, [[TASK, BRIEF], [FEEDBACK[0]], [FEEDBACK[1]]]),
        ({"keep_message": True}, [[TASK, BRIEF], [BRIEF, FEEDBACK[0]], [BRIEF, FEEDBACK[1]]]),
        ({"keep_message": False}, [[TASK, BRIEF], [FEEDBACK[0]], [FEEDBACK[1]]]),
    ],
    ids=["plain", "keep_message", "keep_message-false"],
)
def test_keep_message_keeps_a_message_for_every_later_visit(
    tmp_path: Path, fake_llm: FakeLLM, brief: dict[str, Any], expected: Any
) -> None:
    assert writer_requests(tmp_path, fake_llm, brief=brief) == expected


def test_clear_kept_context_drops_kept_messages_when_its_edge_delivers(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    sent = writer_requests(
        tmp_path,
        fake_llm,
        brief={"keep_message": True},
        back={"clear_kept_context": True},
    )
    assert sent == [[TASK, BRIEF], [FEEDBACK[0]], [FEEDBACK[1]]]


@pytest.mark.parametrize(
    ("window", "expected"),
    [
        (
            -1,
            [
                [TASK],
                [TASK, DRAFTS[0], FEEDBACK[0]],
                [TASK, DRAFTS[0], FEEDBACK[0], DRAFTS[1], FEEDBACK[1]],
            ],
        ),
        (
            2,
            [
                [TASK],
                [TASK, DRAFTS[0], FEEDBACK[0]],
                [DRAFTS[0], FEEDBACK[0], DRAFTS[1], FEEDBACK[1]],
            ],
        ),
        (1, [[TASK], [TASK, DRAFTS[0], FEEDBACK[0]], [FEEDBACK[0], DRAFTS[1], FEEDBACK[1]]]),
        (0, [[TASK], [FEEDBACK[0]], [FEEDBACK[1]]]),
    ],
)
def test_context_window_remembers_own_answers_and_the_newest_messages(
    tmp_path: Path, fake_llm: FakeLLM, window: int, expected: Any
) -> None:
    assert writer_requests(tmp_path, fake_llm, context_window=window) == expected


def test_kept_messages_count_toward_the_context_window(tmp_path: Path, fake_llm: FakeLLM) -> None:
    sent = writer_requests(tmp_path, fake_llm, brief={"keep_message": True}, context_window=2)
    assert sent == [
        [TASK, BRIEF],
        [TASK, BRIEF, DRAFTS[0], FEEDBACK[0]],
        [BRIEF, FEEDBACK[0], DRAFTS[1], FEEDBACK[1]],
    ]


def test_clear_context_drops_remembered_messages_but_not_kept_ones(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    sent = writer_requests(
        tmp_path,
        fake_llm,
        brief={"keep_message": True},
        back={"clear_context": True},
        context_window=-1,
    )
    assert sent == [[TASK, BRIEF], [BRIEF, FEEDBACK[0]], [BRIEF, FEEDBACK[1]]]


def test_input_mode_prompt_sends_one_user_message_with_a_section_per_input(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    sent = writer_requests(
        tmp_path, fake_llm, input_mode="prompt", role="You write.", context_window=-1
    )
    assert sent[0] == [
        ("system", "You write."),
        ("user", "=== INPUT FROM TASK (user) ===\n\nthe task"),
    ]
    assert sent[1] == [
        ("system", "You write."),
        (
            "user",
            "=== INPUT FROM TASK (user) ===\n\nthe task\n\n"
            "=== INPUT FROM writer (assistant) ===\n\ndraft 1\n\n"
            "=== INPUT FROM critic (user) ===\n\nfeedback 1",
        ),
    ]


def test_input_mode_messages_is_the_default_and_sends_each_input_with_its_role(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    sent = writer_requests(
        tmp_path, fake_llm, input_mode="messages", role="You write.", context_window=-1
    )
    assert sent[1] == [("system", "You write."), TASK, DRAFTS[0], FEEDBACK[0]]
