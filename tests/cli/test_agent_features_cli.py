"""`devall run` with the thinking stage, each memory store and skills, end to end.

The fake OpenAI-compatible server answers the chat model and `/v1/embeddings`; memory stores are
run twice, and the second run must retrieve what the first one wrote.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT
from tests.helpers import events, invoke
from tests.servers.fake_llm import FakeLLM
from tests.servers.fake_mem0 import FakeMem0
from tests.servers.serve import free_port

KEY = "sk-features-5f1e9c3a7b"
EXAMPLES = REPO_ROOT / "workflows" / "examples"
MEMORY_HEADER = "===== Related Memories ====="


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


@pytest.fixture
def examples(tmp_path: Path) -> Path:
    """A copy of the examples folder: runs write their memory files beside the workflows."""
    folder = tmp_path / "examples"
    shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns("memory"))
    return folder


def run(path: Path, task: str, out: Path, *args: str) -> tuple[int, str, str]:
    return invoke("run", str(path), "--task", task, "--out", str(out), *args)


def result(out: Path) -> dict[str, Any]:
    return json.loads((out / "result.json").read_text())


def on_llm(llm: FakeLLM) -> list[str]:
    return ["--var", f"BASE_URL={llm.base_url}", "--var", f"API_KEY={KEY}"]


def user_texts(body: dict[str, Any]) -> str:
    return "\n".join(str(m["content"]) for m in body["messages"] if m["role"] == "user")


def no_secret_anywhere(root: Path, *texts: str) -> None:
    for text in texts:
        assert KEY not in text
    for path in root.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path


# --- thinking --------------------------------------------------------------------------------


def test_reflection_is_the_output_and_its_call_is_traced_and_counted(
    tmp_path: Path, llm: FakeLLM
) -> None:
    path = tmp_path / "wf.yaml"
    path.write_text(
        f"""
graph:
  id: think
  start: [writer]
  nodes:
    - id: writer
      type: agent
      config:
        provider: openai
        name: m
        base_url: {llm.base_url}
        api_key: {KEY}
        role: You write.
        params: {{retries: 0}}
        thinking:
          type: reflection
          config: {{reflection_prompt: Keep the first sentence.}}
"""
    )
    llm.enqueue("A long draft. With two sentences.", "A long draft.")
    code, out, err = run(path, "topic", tmp_path / "out", "--json")
    assert code == 0, err
    assert json.loads(out)["output"] == "A long draft."
    _, second = llm.chat_requests
    assert second.body["messages"] == [
        {
            "role": "user",
            "content": "Here is a conversation between two roles: SYSTEM: You write.\n\n"
            "USER: === INPUT FROM TASK (user) ===\n\ntopic\n\n"
            "ASSISTANT: A long draft. With two sentences. Keep the first sentence.",
        }
    ]
    stages = [e["stage"] for e in events(tmp_path / "out", "model.reply")]
    assert stages == ["gen", "post_gen_thinking"]
    node = result(tmp_path / "out")["nodes"][0]
    assert node["model_calls"] == 2
    assert node["tokens"]["total"] == sum(
        e["usage"]["total_tokens"] for e in events(tmp_path / "out", "model.reply")
    )
    assert "thinking (post_gen_thinking)" in err
    no_secret_anywhere(tmp_path / "out", out, err)


def test_thinking_example_runs_offline(examples: Path, tmp_path: Path) -> None:
    path = examples / "thinking_reflection.yaml"
    assert invoke("validate", str(path))[0] == 0
    code, out, err = run(path, "autumn", tmp_path / "out")
    assert code == 0, err
    assert out.strip() == "Fog rolls over the harbour while the boats sleep."


# --- memory: simple --------------------------------------------------------------------------


def test_simple_memory_second_run_retrieves_what_the_first_wrote(
    examples: Path, tmp_path: Path, llm: FakeLLM
) -> None:
    path = examples / "memory_simple.yaml"
    assert invoke("validate", str(path), *on_llm(llm))[0] == 0
    llm.enqueue("The lighthouse keeper counted seventeen ships in the fog.")
    code, out1, err1 = run(path, "lighthouse keeper", tmp_path / "run1", *on_llm(llm))
    assert code == 0, err1
    notes = examples / "memory" / "notes.json"
    (item,) = json.loads(notes.read_text())
    assert "seventeen ships" in item["content_summary"] and len(item["embedding"]) == 64
    assert MEMORY_HEADER not in user_texts(llm.chat_requests[0].body)

    llm.enqueue("More about the keeper.")
    code, out2, err2 = run(path, "the lighthouse keeper again", tmp_path / "run2", *on_llm(llm))
    assert code == 0, err2
    prompt = llm.chat_requests[1].body["messages"]
    assert [m["role"] for m in prompt] == ["system", "user", "user"]
    assert prompt[1]["content"].startswith(f"{MEMORY_HEADER}\n\n--- notes ---\n1. ")
    assert "seventeen ships" in prompt[1]["content"]
    assert len(json.loads(notes.read_text())) == 2
    (retrieved,) = events(tmp_path / "run2", "memory.retrieve")
    assert (retrieved["stage"], retrieved["items"]) == ("gen", 1)
    memory = result(tmp_path / "run2")["memory"][0]
    assert (memory["store"], memory["loaded_items"], memory["items"]) == ("notes", 1, 2)
    assert memory["embedding_calls"] == 2  # the query, then the new note
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in llm.embedding_requests)
    no_secret_anywhere(tmp_path, out1, err1, out2, err2)


def test_an_auto_memory_path_lives_in_the_run_directory_only(tmp_path: Path, llm: FakeLLM) -> None:
    path = tmp_path / "wf.yaml"
    path.write_text(
        f"""
graph:
  start: [a]
  memory:
    - name: scratch
      type: simple
      config:
        memory_path: auto
        embedding: {{model: e, base_url: {llm.base_url}, api_key: {KEY}}}
  nodes:
    - id: a
      type: agent
      config:
        provider: scripted
        script: ["A remembered answer about {{input}} and more words."]
        memories: [{{name: scratch}}]
"""
    )
    assert run(path, "ships", tmp_path / "run1")[0] == 0
    assert len(json.loads((tmp_path / "run1" / "memory_scratch.json").read_text())) == 1
    assert run(path, "ships", tmp_path / "run2")[0] == 0
    (retrieved,) = events(tmp_path / "run2", "memory.retrieve")
    assert retrieved["items"] == 0  # a new run directory: a new memory
    assert not list(tmp_path.glob("memory_*.json"))


# --- memory: blackboard ----------------------------------------------------------------------


def test_blackboard_example_second_run_reads_the_first_runs_posts(
    examples: Path, tmp_path: Path
) -> None:
    path = examples / "memory_blackboard.yaml"
    assert invoke("validate", str(path))[0] == 0
    code, out1, err = run(path, "north pier", tmp_path / "run1")
    assert code == 0, err
    assert "Sighting at north pier" in out1  # this run's scout posted before the planner read
    code, out2, err = run(path, "south pier", tmp_path / "run2")
    assert code == 0, err
    assert "Sighting at north pier" in out2 and "Sighting at south pier" in out2
    board = json.loads((examples / "memory" / "board.json").read_text())
    assert [item["content_summary"] for item in board] == [
        "Sighting at north pier: three fishing boats.",
        "Sighting at south pier: three fishing boats.",
    ]
    writes = events(tmp_path / "run2", "memory.write")
    assert [(w["node_id"], w["store"], w["items"]) for w in writes] == [("scout", "sightings", 2)]


# --- memory: file ----------------------------------------------------------------------------


def test_file_memory_indexes_once_and_the_second_run_uses_the_saved_index(
    examples: Path, tmp_path: Path, llm: FakeLLM
) -> None:
    path = examples / "memory_file.yaml"
    assert invoke("validate", str(path), *on_llm(llm))[0] == 0
    llm.enqueue("Closed on the first Monday.")
    code, _, err = run(path, "When is the harbour closed?", tmp_path / "run1", *on_llm(llm))
    assert code == 0, err
    indexed = [len(r.body["input"]) for r in llm.embedding_requests]
    assert indexed == [2, 1]  # two documents at load, then the question
    assert (examples / "memory" / "docs_index.json").exists()
    prompt = user_texts(llm.chat_requests[0].body)
    assert "first Monday of every month" in prompt and "twelve euros" not in prompt

    llm.enqueue("Twelve euros.")
    before = len(llm.embedding_requests)
    code, _, err = run(path, "What does a mooring cost?", tmp_path / "run2", *on_llm(llm))
    assert code == 0, err
    assert [r.body["input"] for r in llm.embedding_requests[before:]] == [
        ["INPUT FROM TASK user What does a mooring cost"]  # the query alone: index reused
    ]
    second = user_texts(llm.chat_requests[1].body)
    assert "twelve euros a night" in second and "first Monday" not in second
    (loaded,) = events(tmp_path / "run2", "memory.loaded")
    assert (loaded["store"], loaded["type"], loaded["items"]) == ("harbour_docs", "file", 2)


# --- memory: failures and what is not supported ----------------------------------------------


# --- memory: mem0 (a local stand-in for Mem0's HTTP API) -------------------------------------

MEM0_KEY = "m0-features-8d2b61"


def on_mem0(mem0: FakeMem0) -> list[str]:
    return ["--var", f"MEM0_API_KEY={MEM0_KEY}", "--var", f"MEM0_BASE_URL={mem0.base_url}"]


def test_mem0_example_second_run_retrieves_what_the_first_sent(
    examples: Path, tmp_path: Path
) -> None:
    path = examples / "memory_mem0.yaml"
    with FakeMem0(MEM0_KEY) as mem0:
        assert invoke("validate", str(path), *on_mem0(mem0))[0] == 0
        code, _, err = run(path, "I keep three hives of bees", tmp_path / "run1", *on_mem0(mem0))
        assert code == 0, err
        code, out, err = run(path, "How many hives of bees?", tmp_path / "run2", *on_mem0(mem0))
        assert code == 0, err
        requests = [(r.path, r.body) for r in mem0.requests]
    assert all(r.headers["authorization"] == f"Token {MEM0_KEY}" for r in mem0.requests)
    search, add = requests[0], requests[1]
    assert search == (
        "/v3/memories/search/",
        {
            "query": "=== INPUT FROM TASK (user) ===\n\nI keep three hives of bees",
            "top_k": 3,
            "filters": {"OR": [{"user_id": "example-user"}, {"agent_id": "assistant"}]},
        },
    )
    # The visit's input, without its section header, as one user message (ChatDev's payload).
    assert add == (
        "/v3/memories/add/",
        {
            "messages": [{"role": "user", "content": "I keep three hives of bees"}],
            "infer": True,
            "agent_id": "assistant",
            "user_id": "example-user",
        },
    )
    assert MEMORY_HEADER in out and "I keep three hives of bees" in out
    (retrieved,) = events(tmp_path / "run2", "memory.retrieve")
    assert retrieved["items"] == 1
    (written,) = events(tmp_path / "run2", "memory.write")
    assert (written["store"], written["added"], written["path"]) == ("mem0_store", 1, None)
    assert not list(examples.glob("memory/*mem0*"))  # nothing of it is kept on this machine


def test_mem0_from_the_environment_without_ids_scopes_by_the_node_and_sends_the_threshold(
    tmp_path: Path,
) -> None:
    path = tmp_path / "wf.yaml"
    path.write_text(
        "graph:\n  start: [a]\n  memory:\n"
        "    - {name: cloud, type: mem0}\n"  # the key and the URL from the environment
        "  nodes:\n    - id: a\n      type: agent\n      config:\n"
        "        provider: scripted\n        role: scribe\n        script: [noted]\n"
        "        memories: [{name: cloud, similarity_threshold: 0.5}]\n"
    )
    with FakeMem0(MEM0_KEY) as mem0:
        code, _, err = invoke(
            "run", str(path), "--task", "t", "--out", str(tmp_path / "run"),
            env={"MEM0_API_KEY": MEM0_KEY, "MEM0_BASE_URL": mem0.base_url},
        )
        assert code == 0, err
        bodies = [r.body for r in mem0.requests]
    # Scoped by the node id (ChatDev: by the role prompt), the same for search and add.
    assert bodies[0]["filters"] == {"agent_id": "a"} and bodies[0]["threshold"] == 0.5
    assert bodies[1]["agent_id"] == "a" and "user_id" not in bodies[1]


def test_mem0_refusing_the_key_stops_the_run_with_exit_5_and_a_hint(tmp_path: Path) -> None:
    path = EXAMPLES / "memory_mem0.yaml"
    with FakeMem0("another-key") as mem0:
        code, out, err = run(path, "t", tmp_path / "run", *on_mem0(mem0))
    assert code == 5 and out == ""
    assert "memory store 'mem0_store' (mem0): Mem0 service http://127.0.0.1:" in err
    assert "answered HTTP 401" in err and "Mem0 refused the API key" in err
    assert MEM0_KEY not in err and "Traceback" not in err


def test_mem0_unreachable_is_exit_4_and_no_key_is_exit_3(tmp_path: Path) -> None:
    path = EXAMPLES / "memory_mem0.yaml"
    url = f"http://127.0.0.1:{free_port()}"
    code, _, err = run(
        path, "t", tmp_path / "run1", "--var", f"MEM0_API_KEY={MEM0_KEY}",
        "--var", f"MEM0_BASE_URL={url}",
    )
    assert code == 4, err
    assert f"memory store 'mem0_store' (mem0): cannot reach Mem0 service {url}" in err
    assert f"hint: check the store's base_url ({url}) or MEM0_BASE_URL" in err
    flow = tmp_path / "nokey.yaml"
    flow.write_text(
        "graph:\n  start: [a]\n  memory:\n    - {name: cloud, type: mem0, config: {}}\n"
        "  nodes:\n    - {id: a, type: passthrough}\n"
    )
    code, out, err = invoke("run", str(flow), "--task", "t", env={"MEM0_API_KEY": ""})
    assert (code, out) == (3, "")
    assert err.startswith(
        f"devall: error: {flow}:4:41: graph.memory[0].config: no Mem0 API key: set api_key here "
        "or MEM0_API_KEY in the environment\n"
    )


def test_an_unreachable_embeddings_endpoint_is_exit_4(tmp_path: Path) -> None:
    path = tmp_path / "wf.yaml"
    url = f"http://127.0.0.1:{free_port()}/v1"
    path.write_text(
        "graph:\n  start: [a]\n  memory:\n    - name: docs\n      type: file\n      config:\n"
        f"        file_sources: [{{path: .}}]\n        embedding: {{model: e, base_url: '{url}', "
        f"api_key: {KEY}, params: {{retries: 0}}}}\n"
        "  nodes:\n    - {id: a, type: agent, config: {provider: scripted, script: [hi],"
        " memories: [{name: docs}]}}\n"
    )
    code, out, err = run(path, "t", tmp_path / "out")
    assert code == 4 and out == ""
    assert f"devall: error: cannot reach model endpoint {url}/embeddings" in err
    assert "Traceback" not in err and KEY not in err
    assert result(tmp_path / "out")["status"] == "failed"


def test_an_embeddings_http_error_is_exit_5(tmp_path: Path, llm: FakeLLM) -> None:
    llm.enqueue_embedding_error(FakeLLM.error_reply(400))
    path = tmp_path / "wf.yaml"
    path.write_text(
        "graph:\n  start: [a]\n  memory:\n    - name: docs\n      type: file\n      config:\n"
        f"        file_sources: [{{path: .}}]\n        embedding: {{model: e, base_url: "
        f"'{llm.base_url}', api_key: {KEY}}}\n"
        "  nodes:\n    - {id: a, type: agent, config: {provider: scripted, script: [hi],"
        " memories: [{name: docs}]}}\n"
    )
    code, _, err = run(path, "t", tmp_path / "out")
    assert code == 5
    assert "embeddings answered HTTP 400: fake error 400" in err


# --- skills ----------------------------------------------------------------------------------


def test_skills_example_activates_a_skill_and_reads_its_file(
    examples: Path, tmp_path: Path
) -> None:
    path = examples / "skills.yaml"
    code, out, err = invoke("validate", str(path), "--json")
    assert code == 0 and json.loads(out)["summary"]["nodes"][0]["skills"] == ["release-notes"]
    code, out, err = run(path, "version 2.1", tmp_path / "out")
    assert code == 0, err
    assert out.startswith("RELEASE NOTES")
    calls = events(tmp_path / "out", "tool.result")
    assert [(c["tool"], c["source"], c["is_error"]) for c in calls] == [
        ("activate_skill", "skill", False),
        ("read_skill_file", "skill", False),
    ]
    assert "Version: <version>" in calls[1]["blocks"][0]["text"]
    assert [t["tool"] for t in result(tmp_path / "out")["tools"]] == [
        "activate_skill",
        "read_skill_file",
    ]


def test_a_real_model_sees_the_skills_and_the_activated_instructions(
    examples: Path, llm: FakeLLM, tmp_path: Path
) -> None:
    path = examples / "skills.yaml"
    text = path.read_text().replace(
        "provider: scripted",
        f"provider: openai\n        name: m\n"
        f"        base_url: {llm.base_url}\n        api_key: {KEY}",
    )
    path.write_text(text.split("        script:")[0])
    llm.enqueue(
        FakeLLM.tool_call_reply([("activate_skill", {"skill_name": "release-notes"})]),
        "RELEASE NOTES\nVersion: 2.1",
    )
    code, _, err = run(path, "version 2.1", tmp_path / "out")
    assert code == 0, err
    first, second = llm.chat_requests
    system = first.body["messages"][0]["content"]
    assert "<name>release-notes</name>" in system
    assert "<location>.agents/skills/release-notes/SKILL.md</location>" in system
    assert [t["function"]["name"] for t in first.body["tools"]] == [
        "activate_skill",
        "read_skill_file",
    ]
    roles = [m["role"] for m in second.body["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "system"]
    assert second.body["messages"][-1]["content"].startswith(
        "Activated Agent Skill `release-notes`."
    )


def test_skill_problems_are_located_warnings(tmp_path: Path) -> None:
    folder = tmp_path / ".agents" / "skills" / "notes"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: notes\ndescription: Notes.\n---\nbody\n")
    path = tmp_path / "wf.yaml"
    path.write_text(
        "graph:\n  start: [a]\n  nodes:\n    - id: a\n      type: agent\n      config:\n"
        "        provider: scripted\n        script: [hi]\n"
        "        skills: {enabled: true, allow: [{name: note}]}\n"
    )
    code, _, err = invoke("validate", str(path))
    assert code == 0
    assert (
        "wf.yaml:9:48: graph.nodes[0].config.skills.allow[0].name: no skill 'note' in "
        ".agents/skills (skills: notes); did you mean 'notes'?" in err
    )


def test_off_values_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "wf.yaml"
    path.write_text(
        "graph:\n  start: [a]\n  memory: []\n  nodes:\n    - id: a\n      type: agent\n"
        "      config:\n        provider: scripted\n        script: [hi]\n"
        "        thinking: null\n        memories: []\n        skills: {enabled: false}\n"
    )
    code, _, err = invoke("validate", str(path))
    assert (code, err) == (0, "")


# --- Ctrl-C --------------------------------------------------------------------------------


def test_ctrl_c_while_the_model_thinks_leaves_the_memory_file_whole(
    tmp_path: Path, llm: FakeLLM
) -> None:
    path = tmp_path / "wf.yaml"
    path.write_text(
        f"""
graph:
  start: [a]
  memory:
    - {{name: board, type: blackboard, config: {{memory_path: board.json}}}}
  nodes:
    - id: a
      type: agent
      config:
        provider: openai
        name: m
        base_url: {llm.base_url}
        api_key: {KEY}
        params: {{retries: 0}}
        memories: [{{name: board}}]
        thinking: {{type: reflection, config: {{reflection_prompt: Shorter.}}}}
"""
    )
    llm.enqueue("first answer", "first reflection")
    assert run(path, "one", tmp_path / "run1")[0] == 0
    board = (tmp_path / "board.json").read_text()
    llm.enqueue("second answer", FakeLLM.slow_reply(30, "never"))
    out = tmp_path / "run2"
    devall = Path(sys.executable).parent / "devall"
    proc = subprocess.Popen(
        [str(devall), "run", str(path), "--task", "two", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(llm.chat_requests) < 4:
            time.sleep(0.05)
        assert len(llm.chat_requests) == 4  # the reflection request is waiting
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert result(out)["status"] == "interrupted"
    assert [e["stage"] for e in events(out, "memory.retrieve")] == ["gen", "post_gen_thinking"]
    assert (tmp_path / "board.json").read_text() == board  # nothing half-written
