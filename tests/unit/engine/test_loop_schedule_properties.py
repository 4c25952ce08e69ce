"""Random looping graphs: the schedule does not depend on how long a node takes to answer.

A workflow tried offline (scripted models, literals: answers at once) must go round its loops
exactly as it will with a real model (answers after a while): the same visits, each on the same
inputs, the same answer or the same error.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devall_cli.config.model import EdgeConfig, Workflow
from devall_cli.errors import RunFailedError
from tests.unit.engine.builders import edge, workflow
from tests.unit.engine.test_graph import keyword, probe, run, seen, visits

WORDS = ("go", "stop", "more")


@st.composite
def looping_graphs(draw: st.DrawFn) -> dict[str, Any]:
    """Nodes with scripted answers, a ring through them, chords and self-loops, some with
    keyword conditions and edge flags."""
    count = draw(st.integers(3, 4))
    answers = [draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4)) for _ in range(count)]
    pairs = {(i, (i + 1) % count) for i in range(count) if draw(st.booleans()) or i == 0}
    chord = st.tuples(st.integers(0, count - 1), st.integers(0, count - 1))
    pairs |= set(draw(st.lists(chord, min_size=2, max_size=6)))
    # A self-loop keeps a node out of its loop's first pass: later it shares a step with others.
    pairs |= {(i, i) for i in range(count) if draw(st.integers(0, 2)) == 0}
    edges = []
    for source, target in sorted(pairs):
        condition = draw(st.sampled_from([None, "any", "none"]))
        flags = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "trigger": st.booleans(),
                    "keep_message": st.booleans(),
                    "clear_context": st.booleans(),
                },
            )
        )
        edges.append((source, target, condition, draw(st.sampled_from(WORDS)), flags))
    windows = [draw(st.sampled_from([0, 0, -1, 1])) for _ in range(count)]
    return {
        "answers": answers,
        "edges": edges,
        "windows": windows,
        "start": draw(st.integers(0, count - 1)),
    }


def build(shape: dict[str, Any], delay: float) -> Workflow:
    nodes = [
        probe(f"n{i}", *answers, delay=delay, context_window=shape["windows"][i])
        for i, answers in enumerate(shape["answers"])
    ]
    edges: list[EdgeConfig] = []
    for source, target, condition, word, flags in shape["edges"]:
        settings_: dict[str, Any] = dict(flags)
        if condition is not None:
            settings_["condition"] = keyword(**{condition: word})
        edges.append(edge(f"n{source}", f"n{target}", **settings_))
    return workflow(nodes, edges, start=[f"n{shape['start']}"])


async def outcome_of(flow: Workflow) -> tuple[Any, ...]:
    try:
        result = await run(flow, max_steps=60)
    except RunFailedError as exc:
        return ("error", exc.message, [seen(flow, n.id) for n in flow.graph.nodes])
    return ("ok", result.output, visits(result), [seen(flow, n.id) for n in flow.graph.nodes])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(looping_graphs())
async def test_instant_and_slow_nodes_give_the_same_run(shape: dict[str, Any]) -> None:
    instant, slow = await outcome_of(build(shape, 0.0)), await outcome_of(build(shape, 0.001))
    if runaway(instant) and runaway(slow):
        # Two loops that never end run side by side until the step budget is spent: which of
        # them takes the last step (and how far each got) is a race with a real model too.
        return
    assert instant == slow


def runaway(outcome: tuple[Any, ...]) -> bool:
    return outcome[0] == "error" and "--max-steps" in outcome[1]
