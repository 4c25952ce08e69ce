"""Loops through `devall run`: visits in the trace, events and result.json; the step guard;
ChatDev's iteration limit; loop_counter and loop_timer gates ending a loop.
"""

from __future__ import annotations

from pathlib import Path

from tests.cli.flows import (
    edge,
    events,
    invoke,
    llm_agent,
    node,
    result,
    scripted,
    sent_messages,
    visits,
    write_flow,
)
from tests.servers.fake_llm import FakeLLM


def critic_loop(folder: Path, llm: FakeLLM, *gate: dict[str, object]) -> Path:
    """writer ⇄ critic until the critic says APPROVED; `final` gets the writer's last draft.

    With a gate node, the critic's feedback also goes to the gate, whose release ends the loop.
    """
    nodes = [llm_agent("writer", llm), llm_agent("critic", llm), node("final", "passthrough")]
    edges = [
        edge("writer", "critic"),
        edge("critic", "writer", none=["APPROVED"]),
        edge("critic", "final", any=["APPROVED"], carry_data=False),
        edge("writer", "final", trigger=False),
    ]
    for item in gate:
        gate_id = str(item["id"])
        nodes.append(item)
        edges += [
            edge("critic", gate_id, none=["APPROVED"]),
            edge(gate_id, "writer"),
            edge(gate_id, "final"),
        ]
    return write_flow(folder, nodes, edges, start=["writer"], end=["final"])


def test_a_critic_loop_runs_until_the_keyword_and_every_visit_is_recorded(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.enqueue("draft one", "needs a title", "draft two", "APPROVED")
    flow = critic_loop(tmp_path, fake_llm)
    code, out, err = invoke("run", str(flow), "--task", "write a poem", "--out", "run")
    assert code == 0, err
    assert out == "draft two\n"
    run = tmp_path / "run"
    assert visits(run, "writer") == [["draft one"], ["draft two"]]
    assert visits(run, "critic") == [["needs a title"], ["APPROVED"]]
    assert visits(run, "final") == [["draft two"]]
    # the trace names each visit after the first
    assert "node writer (visit 2)" in err and "node critic (visit 2)" in err
    assert "visit 3" not in err
    started = [(e["node_id"], e["visit"]) for e in events(run, "node.started")]
    assert started == [("writer", 1), ("critic", 1), ("writer", 2), ("critic", 2), ("final", 1)]
    finished = [(e["node_id"], e["visit"]) for e in events(run, "node.finished")]
    assert finished == started
    # on its second visit the writer got the critic's feedback, and only that
    assert sent_messages(fake_llm, "model-writer") == [
        [("user", "write a poem")],
        [("user", "needs a title")],
    ]
    assert fake_llm.pending == 0


def test_max_steps_ends_a_loop_that_never_exits_with_a_clear_error(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    flow = critic_loop(tmp_path, fake_llm)  # the critic never approves: every reply is "ok"
    code, out, err = invoke("run", str(flow), "--task", "t", "--out", "run", "--max-steps", "5")
    assert code == 1
    assert out == ""
    assert err.splitlines()[-2:] == [
        "devall: error: the run reached --max-steps=5 node visits at 'critic' without finishing",
        "  a loop may never meet its exit condition; check the conditions of the edges that "
        "leave it, or raise --max-steps if the workflow needs more visits",
    ]
    record = result(tmp_path / "run")
    assert record["status"] == "failed"
    assert [len(n["visits"]) for n in record["nodes"]] == [3, 2, 0]  # the 6th never started
    assert len(fake_llm.requests) == 5


def test_a_loop_without_exit_stops_at_chatdevs_iteration_limit(tmp_path: Path) -> None:
    nodes = [scripted("ping", "ping"), scripted("pong", "pong")]
    flow = write_flow(tmp_path, nodes, [edge("ping", "pong"), edge("pong", "ping")], start=["ping"])
    code, _, err = invoke("run", str(flow), "--task", "t", "--out", "run")
    assert code == 0, err
    assert "stopped after 100 iterations (ChatDev's limit)" in err
    assert [len(visits(tmp_path / "run", n)) for n in ("ping", "pong")] == [100, 100]
    notes = events(tmp_path / "run", "graph.note")
    assert [n["note"] for n in notes] == ["cycle_limit"]


def test_a_loop_counter_ends_a_loop_after_its_limit(tmp_path: Path, fake_llm: FakeLLM) -> None:
    gate = node("rounds", "loop_counter", max_iterations=3, message="three rounds, done")
    flow = critic_loop(tmp_path, fake_llm, gate)  # the critic never approves
    code, out, err = invoke("run", str(flow), "--task", "t", "--out", "run")
    assert code == 0, err
    assert out == "three rounds, done\n"
    run = tmp_path / "run"
    assert visits(run, "rounds") == [[], [], ["three rounds, done"]]
    assert len(visits(run, "writer")) == 3
    assert "node rounds (visit 3)" in err and "no output" in err
    finished = [e for e in events(run, "node.finished") if e["node_id"] == "rounds"]
    assert [e["outputs"] for e in finished] == [[], [], ["three rounds, done"]]


def test_a_loop_timer_ends_a_loop_once_its_time_is_up(tmp_path: Path, fake_llm: FakeLLM) -> None:
    # every model answer takes 0.1 s, so the 0.25 s limit passes within a few rounds
    fake_llm.enqueue(*(FakeLLM.text_reply(f"reply {n}", delay=0.1) for n in range(40)))
    gate = node("clock", "loop_timer", max_duration=0.25, message="time is up")
    flow = critic_loop(tmp_path, fake_llm, gate)
    code, out, err = invoke("run", str(flow), "--task", "t", "--out", "run")
    assert code == 0, err
    assert out == "time is up\n"
    run = tmp_path / "run"
    gate_visits = visits(run, "clock")
    assert len(gate_visits) >= 2
    assert gate_visits[-1] == ["time is up"] and all(v == [] for v in gate_visits[:-1])
    assert len(visits(run, "writer")) == len(gate_visits)
    assert not events(run, "graph.note")  # ended by the gate, not by a limit


def test_a_loop_entered_at_two_nodes_at_once_fails_the_run(tmp_path: Path) -> None:
    nodes = [
        node("x", "literal", content="X"),
        node("y", "literal", content="Y"),
        node("a", "passthrough"),
        node("b", "passthrough"),
    ]
    edges = [edge("x", "a"), edge("y", "b"), edge("a", "b"), edge("b", "a")]
    flow = write_flow(tmp_path, nodes, edges, start=["x", "y"])
    code, out, err = invoke("run", str(flow), "--task", "t", "--out", "run", "-q")
    assert (code, out) == (1, "")
    assert err == (
        "devall: error: the cycle (a, b) was entered at more than one node (a, b); "
        "a cycle must be entered at one node only\n"
    )
    assert visits(tmp_path / "run", "a") == []


def test_two_start_nodes_in_one_loop_are_a_config_error(tmp_path: Path) -> None:
    nodes = [scripted("a", "A"), scripted("b", "B")]
    flow = write_flow(tmp_path, nodes, [edge("a", "b"), edge("b", "a")], start=["a", "b"])
    code, _, err = invoke("validate", str(flow))
    assert code == 3
    assert "a cycle can have only one start node" in err
