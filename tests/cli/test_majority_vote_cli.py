"""Majority voting through `devall run`: every node answers the task; the common answer wins."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.flows import events, invoke, llm_agent, result, sent_messages, write_flow
from tests.servers.fake_llm import FakeLLM


def panel(folder: Path, llm: FakeLLM, **graph: object) -> Path:
    nodes = [llm_agent(name, llm, role="Answer with one word.") for name in ("a", "b", "c")]
    return write_flow(folder, nodes, [], start=["a", "b", "c"], is_majority_voting=True, **graph)


def test_two_of_three_agree_and_their_answer_is_the_result(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.enqueue("Paris", "Lyon", "Paris")  # which agent gets which does not matter
    flow = panel(tmp_path, fake_llm)
    code, out, err = invoke("run", str(flow), "--task", "capital of France?", "--out", "run")
    assert code == 0, err
    assert out == "Paris\n"
    assert "majority vote: 2 of 3 nodes gave the winning answer" in err
    run = tmp_path / "run"
    assert result(run)["output"] == "Paris"
    [note] = events(run, "graph.note")
    assert note["note"] == "vote"
    assert note["details"] == {"votes": 2, "voters": 3, "answer": "Paris"}
    # every node got exactly the task, once
    for model in ("model-a", "model-b", "model-c"):
        assert sent_messages(fake_llm, model) == [
            [("system", "Answer with one word."), ("user", "capital of France?")]
        ]


def test_edges_and_end_play_no_part_in_a_vote(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.enqueue("yes", "yes", "no")
    flow = panel(tmp_path, fake_llm, end=["c"])
    document = json.loads(flow.read_text())
    document["graph"]["edges"] = [{"from": "a", "to": "b"}, {"from": "b", "to": "c"}]
    flow.write_text(json.dumps(document))
    code, out, err = invoke("run", str(flow), "--task", "t", "--out", "run", "--json")
    assert code == 0, err
    record = json.loads(out)
    assert record["output"] == "yes"
    assert [len(n["visits"]) for n in record["nodes"]] == [1, 1, 1]
    assert len(fake_llm.requests) == 3
