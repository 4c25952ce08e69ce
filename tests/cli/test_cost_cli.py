"""The cost ledger and the budgets: tokens and cost in result.json, the trace and the report;
`--max-cost` / `--max-model-calls` stopping a loop (exit 8); a batch's budget and its resume.

Only the model is faked (tests/servers/fake_llm.py, which reports the usage it is given); the
loops run on the `scripted` provider, whose turns say what they used (`usage:`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers import cli
from tests.servers.fake_llm import FakeLLM, FakeReply

NO_COLOR = {"NO_COLOR": "1", "COLUMNS": "150"}


def write(path: Path, document: dict[str, Any]) -> Path:
    path.write_text(json.dumps(document, indent=1))
    return path


def read(path: Path) -> Any:
    return json.loads(path.read_text())


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def agent(node_id: str, llm: FakeLLM, model: str) -> dict[str, Any]:
    config = {
        "provider": "openai",
        "name": model,
        "base_url": llm.base_url,
        "api_key": "sk-cost-test-1f2e",
        "params": {"retries": 0},
    }
    return {"id": node_id, "type": "agent", "config": config}


def usage(prompt: int, completion: int, cached: int = 0) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def test_tokens_and_cost_per_node_per_model_and_in_total(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    flow = write(
        tmp_path / "flow.yaml",
        {
            # USD per million tokens: a's call costs (600*2 + 400*0.5 + 200*8) / 1e6 = $0.003.
            "pricing": {"acme-*": {"input": 2, "output": 8, "cached_input": 0.5}},
            "graph": {
                "id": "priced",
                "start": ["a"],
                "nodes": [agent("a", fake_llm, "acme-large"), agent("b", fake_llm, "mystery-1")],
                "edges": [{"from": "a", "to": "b"}],
            },
        },
    )
    fake_llm.enqueue(
        FakeReply(message={"role": "assistant", "content": "draft"}, usage=usage(1000, 200, 400)),
        FakeReply(message={"role": "assistant", "content": "final"}, usage=usage(50, 10)),
    )
    run_dir = tmp_path / "r"
    done = cli("run", str(flow), "--task", "go", "--out", str(run_dir), "--report", env=NO_COLOR)
    assert done.returncode == 0, done.stderr
    result = read(tmp_path / "r" / "result.json")
    a, b = result["nodes"]
    assert a["cost"] == {
        "input_tokens": 1000,
        "output_tokens": 200,
        "cached_tokens": 400,
        "reasoning_tokens": 0,
        "cost_usd": 0.003,
        "priced": True,
        "price_source": "workflow",
    }
    assert (b["cost"]["input_tokens"], b["cost"]["cost_usd"], b["cost"]["priced"]) == (
        50,
        None,
        False,
    )
    total = result["cost"]
    assert (total["input_tokens"], total["output_tokens"]) == (1050, 210)
    assert total["cost_usd"] is None and total["unpriced_models"] == ["mystery-1"]
    assert total["models"]["acme-large"]["cost_usd"] == 0.003
    assert total["models"]["mystery-1"]["calls"] == 1
    # The trace's summary: a cost column that never makes a number up.
    rows = {line.split("│")[1].strip(): line for line in done.stderr.splitlines() if "│" in line}
    assert "$0.0030" in rows["a"] and "no price" in rows["b"] and "no price" in rows["total"]
    assert "model acme-large: 1 call, 1,000 in / 200 out tokens (400 cached)" in done.stderr
    page = (tmp_path / "r" / "report.html").read_text()
    assert '<section id="cost">' in page and "$0.0030" in page and "no price" in page

    # --pricing FILE prices the second model, and wins over the workflow for the first.
    prices = tmp_path / "prices.yaml"
    prices.write_text("mystery-1: {input: 100, output: 100}\nacme-large: {input: 0, output: 0}\n")
    fake_llm.enqueue(
        FakeReply(message={"role": "assistant", "content": "draft"}, usage=usage(1000, 200, 400)),
        FakeReply(message={"role": "assistant", "content": "final"}, usage=usage(50, 10)),
    )
    again = tmp_path / "r2"
    done = cli("run", str(flow), "--task", "go", "--out", str(again), "--pricing", str(prices))
    assert done.returncode == 0, done.stderr
    total = read(again / "result.json")["cost"]
    assert (total["cost_usd"], total["priced"], total["price_source"]) == (0.006, True, "file")


def loop_flow(folder: Path) -> Path:
    """A writer that never says DONE, so it loops; each turn uses 10 + 5 tokens = $0.02."""
    turn = {"content": "draft {input}", "usage": {"input_tokens": 10, "output_tokens": 5}}
    writer = {
        "id": "writer",
        "type": "agent",
        "config": {"provider": "scripted", "name": "scripted-writer", "script": [turn]},
    }
    never_done = {"type": "keyword", "config": {"none": ["DONE"]}}
    return write(
        folder / "loop.yaml",
        {
            "pricing": {"scripted-*": {"input": 1000, "output": 2000}},
            "graph": {
                "id": "loop",
                "start": ["writer"],
                "nodes": [writer],
                "edges": [{"from": "writer", "to": "writer", "condition": never_done}],
            },
        },
    )


def test_a_budget_stops_a_loop_before_the_next_model_call_with_exit_8(tmp_path: Path) -> None:
    flow = loop_flow(tmp_path)
    done = cli("run", str(flow), "--task", "t", "--out", str(tmp_path / "c"), "--max-cost", "0.05")
    assert done.returncode == 8, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("devall: error:")]
    assert errors == [
        "devall: error: budget reached: --max-cost $0.0500: $0.0600 spent; "
        "stopped before the next model call"
    ]
    result = read(tmp_path / "c" / "result.json")
    assert (result["status"], result["exit_code"]) == ("budget", 8)
    assert result["budget"] == {"kind": "cost", "limit": 0.05, "spent": 0.06, "scope": "run"}
    assert result["totals"]["model_calls"] == 3 and result["cost"]["cost_usd"] == 0.06
    events = lines(tmp_path / "c" / "events.jsonl")
    assert events[-1]["kind"] == "run.finished" and events[-1]["budget"]["kind"] == "cost"

    done = cli("run", str(flow), "--out", str(tmp_path / "n"), "--max-model-calls", "2")
    assert done.returncode == 8, done.stderr
    result = read(tmp_path / "n" / "result.json")
    assert result["totals"]["model_calls"] == 2 and result["budget"]["kind"] == "model_calls"
    assert "--max-model-calls 2: 2 model calls made" in result["error"]


def test_a_batch_budget_stops_starting_tasks_and_resume_finishes_them(tmp_path: Path) -> None:
    # Each task: "one" (loops), then "two DONE" (ends): 2 model calls, $0.04.
    turns = [
        {"content": "one {input}", "usage": {"input_tokens": 10, "output_tokens": 5}},
        {"content": "two DONE", "usage": {"input_tokens": 10, "output_tokens": 5}},
    ]
    flow = loop_flow(tmp_path)
    document = read(flow)
    document["graph"]["nodes"][0]["config"]["script"] = turns
    write(flow, document)
    tasks = tmp_path / "tasks.txt"
    tasks.write_text("t1\nt2\nt3\nt4\n")
    out = tmp_path / "b"
    args = ("batch", str(flow), str(tasks), "--out", str(out), "-c", "1")
    done = cli(*args, "--max-model-calls", "5")
    assert done.returncode == 8, done.stderr
    assert "the batch's budget reached: --max-model-calls 5: 5 model calls made" in done.stderr
    assert [(r["id"], r["status"]) for r in lines(out / "results.jsonl")] == [
        ("1", "ok"),
        ("2", "ok"),
        ("3", "budget"),  # its second call would have been the sixth
    ]
    summary = read(out / "summary.json")
    assert (summary["status"], summary["exit_code"]) == ("budget", 8) and summary["stopped_early"]
    assert summary["budget"] == {"kind": "model_calls", "limit": 5, "spent": 5, "scope": "batch"}
    assert (summary["counts"]["budget"], summary["counts"]["not_run"]) == (1, 1)
    assert summary["cost"]["cost_usd"] == 0.1  # 2 + 2 + 1 calls at $0.02

    done = cli(*args, "--json")  # resume: the tasks not ok run, with a fresh budget
    assert done.returncode == 0, done.stderr
    assert [r["id"] for r in lines(out / "results.jsonl")[3:]] == ["3", "4"]
    summary = json.loads(done.stdout)
    assert summary["status"] == "ok" and summary["counts"]["ok"] == 4
    assert summary["cost"]["cost_usd"] == 0.16 and "budget" not in summary


def test_a_bad_pricing_file_is_a_located_config_error(tmp_path: Path) -> None:
    flow = loop_flow(tmp_path)
    prices = tmp_path / "prices.yaml"
    prices.write_text("gpt-4o:\n  input: 2.5\n  ouptut: 10\n")
    done = cli("run", str(flow), "--pricing", str(prices), "--max-model-calls", "1")
    assert done.returncode == 3, done.stderr
    assert f"{prices}:3:3: gpt-4o.ouptut: unknown key" in done.stderr
    assert "needs output" in done.stderr
