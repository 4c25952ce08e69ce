"""`loop_timer`: ChatDev's keys, defaults and validation; both modes against a fake clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from devall_cli.messages import ASSISTANT
from devall_cli.nodes import loop_timer
from devall_cli.nodes.loop_timer import LoopTimerConfig
from tests.unit.nodes.gates import Visits, errors, load_gate


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(loop_timer, "clock", fake)
    return fake


async def gate_of(folder: Path, config: str) -> Visits:
    node, issues = load_gate(folder, "loop_timer", config)
    assert node is not None, issues
    return Visits(node)


async def texts(gate: Visits, *inputs: str) -> list[str]:
    return [m.text for m in await gate.visit(*inputs)]


def test_defaults_are_chatdevs(tmp_path: Path) -> None:
    node, issues = load_gate(tmp_path, "loop_timer", "")
    assert node is not None and not issues
    assert node.config == LoopTimerConfig(60.0, "seconds", True, None, False)


def test_every_key_is_read(tmp_path: Path) -> None:
    node, issues = load_gate(
        tmp_path,
        "loop_timer",
        """
        max_duration: 1.5
        duration_unit: minutes
        reset_on_emit: false
        message: time is up
        passthrough: true
        """,
    )
    assert node is not None and not issues
    assert node.config == LoopTimerConfig(1.5, "minutes", False, "time is up", True)
    assert node.config.limit_seconds == 90.0


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("passthrough: null", LoopTimerConfig()),
        ("reset_on_emit: null", LoopTimerConfig(reset_on_emit=False)),
        ("message: ''", LoopTimerConfig()),
        ("duration_unit: null", LoopTimerConfig()),
        ("max_duration: null", LoopTimerConfig()),
        ("duration_unit: hours\nmax_duration: 2", LoopTimerConfig(2.0, "hours")),
    ],
)
def test_values_that_mean_off_or_default_are_accepted(
    tmp_path: Path, config: str, expected: LoopTimerConfig
) -> None:
    node, issues = load_gate(tmp_path, "loop_timer", config)
    assert node is not None and not issues
    assert node.config == expected


def test_bad_values_are_located_errors_reported_together(tmp_path: Path) -> None:
    node, issues = load_gate(
        tmp_path,
        "loop_timer",
        """
        max_duration: 0
        duration_unit: Seconds
        passthrough: sometimes
        message: [a]
        """,
    )
    assert node is None
    base = "graph.nodes[0].config"
    assert errors(issues) == [
        (f"{base}.max_duration", "max_duration must be greater than 0, got 0"),
        (
            f"{base}.duration_unit",
            "duration_unit must be one of: seconds, minutes, hours; got 'Seconds'",
        ),
        (f"{base}.passthrough", "passthrough must be true or false, got 'sometimes' (text)"),
        (f"{base}.message", "message must be text, got a list"),
    ]


async def test_nothing_before_the_limit_then_the_message_and_the_clock_restarts(
    tmp_path: Path, clock: FakeClock
) -> None:
    gate = await gate_of(tmp_path, "max_duration: 10")
    assert await texts(gate, "a") == []  # the clock starts here
    clock.now += 9.9
    assert await texts(gate, "b") == []
    clock.now += 0.1
    [released] = await gate.visit("c")
    assert released.role == ASSISTANT
    assert released.text == "Time limit reached (10.0 seconds)"  # ChatDev's text, exactly
    assert released.meta["loop_timer"]["elapsed_time"] == pytest.approx(10.0)
    # reset_on_emit: a new period starts at the release, and ends with a release again
    clock.now += 5
    assert await texts(gate, "d") == []
    clock.now += 5
    assert await texts(gate, "e") == ["Time limit reached (10.0 seconds)"]
    clock.now += 1
    assert await texts(gate, "f") == []


async def test_without_reset_every_visit_after_the_limit_releases(
    tmp_path: Path, clock: FakeClock
) -> None:
    gate = await gate_of(
        tmp_path, "max_duration: 1\nduration_unit: minutes\nreset_on_emit: false\nmessage: stop"
    )
    assert await texts(gate, "a") == []
    clock.now += 59
    assert await texts(gate, "b") == []
    clock.now += 1
    assert await texts(gate, "c") == ["stop"]
    clock.now += 0.001
    assert await texts(gate, "d") == ["stop"]


async def test_passthrough_forwards_until_the_limit_then_says_so_once_then_forwards(
    tmp_path: Path, clock: FakeClock
) -> None:
    gate = await gate_of(tmp_path, "max_duration: 2\npassthrough: true\nmessage: limit")
    assert await texts(gate, "a", "b") == ["a", "b"]  # every input, unchanged
    clock.now += 2
    assert await texts(gate, "c") == ["limit"]  # instead of the input
    assert await texts(gate, "d") == ["d"]
    clock.now += 10
    assert await texts(gate, "e") == ["e"]  # open for good
    forwarded = await gate.visit("f")
    assert forwarded[0].source == "writer" and forwarded[0].role == "user"
