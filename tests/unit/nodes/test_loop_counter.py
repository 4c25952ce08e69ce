"""`loop_counter`: ChatDev's keys, defaults and validation, and its count across visits."""

from __future__ import annotations

from pathlib import Path

import pytest

from devall_cli.messages import ASSISTANT
from devall_cli.nodes.loop_counter import LoopCounterConfig
from tests.unit.nodes.gates import Visits, errors, load_gate


def test_defaults_are_chatdevs(tmp_path: Path) -> None:
    node, issues = load_gate(tmp_path, "loop_counter", "")
    assert node is not None and not issues
    assert node.config == LoopCounterConfig(max_iterations=10, reset_on_emit=True, message=None)


def test_every_key_is_read(tmp_path: Path) -> None:
    node, issues = load_gate(
        tmp_path,
        "loop_counter",
        """
        max_iterations: 3
        reset_on_emit: false
        message: enough rounds
        """,
    )
    assert node is not None and not issues
    assert node.config == LoopCounterConfig(3, False, "enough rounds")


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("reset_on_emit: null", LoopCounterConfig(10, False, None)),  # ChatDev: bool(None)
        ("message: ''", LoopCounterConfig(10, True, None)),
        ("message: null", LoopCounterConfig(10, True, None)),
        ("max_iterations: null", LoopCounterConfig(10, True, None)),
        ("max_iterations: 4.0", LoopCounterConfig(4, True, None)),
    ],
)
def test_values_that_mean_off_or_default_are_accepted(
    tmp_path: Path, config: str, expected: LoopCounterConfig
) -> None:
    node, issues = load_gate(tmp_path, "loop_counter", config)
    assert node is not None and not issues
    assert node.config == expected


def test_bad_values_are_located_errors_reported_together(tmp_path: Path) -> None:
    node, issues = load_gate(
        tmp_path,
        "loop_counter",
        """
        max_iterations: 0
        reset_on_emit: maybe
        message: 5
        max_iteration: 3
        """,
    )
    assert node is None
    base = "graph.nodes[0].config"
    assert errors(issues) == [
        (f"{base}.max_iterations", "max_iterations must be at least 1, got 0"),
        (f"{base}.reset_on_emit", "reset_on_emit must be true or false, got 'maybe' (text)"),
        (f"{base}.message", "message must be text, got 5 (number)"),
        (f"{base}.max_iteration", "unknown key 'max_iteration'; did you mean 'max_iterations'?"),
    ]


@pytest.mark.parametrize("value", ["2.5", "true", "'3'", "[3]"])
def test_max_iterations_must_be_a_whole_number(tmp_path: Path, value: str) -> None:
    node, issues = load_gate(tmp_path, "loop_counter", f"max_iterations: {value}")
    assert node is None
    assert errors(issues)[0][1].startswith("max_iterations must be a whole number")


async def test_nothing_until_the_limit_then_the_release_message_and_again(
    tmp_path: Path,
) -> None:
    node, _ = load_gate(tmp_path, "loop_counter", "max_iterations: 3")
    assert node is not None
    gate = Visits(node)
    assert await gate.visit("draft 1") == []
    assert await gate.visit("draft 2") == []
    [released] = await gate.visit("draft 3")
    assert released.role == ASSISTANT
    assert released.text == "Loop limit reached (3)"
    assert released.meta["loop_counter"] == {"count": 3, "max": 3, "reset_on_emit": True}
    # reset_on_emit: the count starts again
    assert await gate.visit("draft 4") == []
    assert await gate.visit("draft 5") == []
    assert [m.text for m in await gate.visit("draft 6")] == ["Loop limit reached (3)"]


async def test_without_reset_every_visit_after_the_limit_releases(tmp_path: Path) -> None:
    node, _ = load_gate(
        tmp_path, "loop_counter", "max_iterations: 2\nreset_on_emit: false\nmessage: go on"
    )
    assert node is not None
    gate = Visits(node)
    outputs = [[m.text for m in await gate.visit("x")] for _ in range(4)]
    assert outputs == [[], ["go on"], ["go on"], ["go on"]]


async def test_a_limit_of_one_releases_on_the_first_visit(tmp_path: Path) -> None:
    node, _ = load_gate(tmp_path, "loop_counter", "max_iterations: 1")
    assert node is not None
    assert [m.text for m in await Visits(node).visit()] == ["Loop limit reached (1)"]
