"""Reading `graph.memory`, an agent's `thinking`, `memories` and `skills`."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from devall_cli.memory.base import AUTO, EmbeddingConfig, MemoryRefConfig
from devall_cli.memory.blackboard import BlackboardMemoryConfig
from devall_cli.memory.file import FileMemoryConfig
from devall_cli.memory.simple import SimpleMemoryConfig
from devall_cli.thinking.base import ThinkingConfig
from devall_cli.thinking.reflection import ReflectionConfig
from devall_cli.workflow.loader import load_workflow, validate_workflow

HEAD = """
graph:
  start: [a]
  memory:
{stores}
  nodes:
    - id: a
      type: agent
      config:
        provider: scripted
        script: [hi]
{agent}
"""


def write(folder: Path, stores: str = "", agent: str = "") -> Path:
    path = folder / "flows" / "flow.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = HEAD.format(
        stores=textwrap.indent(textwrap.dedent(stores), "    ") or "    []",
        agent=textwrap.indent(textwrap.dedent(agent), "        "),
    )
    path.write_text(text)
    return path


def messages(path: Path) -> list[str]:
    return [f"{i.severity}: {i.path}: {i.message}" for i in validate_workflow(path, environ={})[1]]


def test_stores_and_references_are_read_with_chatdev_defaults(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        - name: notes
          type: simple
          config:
            memory_path: ../state/notes.json
            embedding: {provider: openai, model: emb, api_key: sk-emb-9a8b7c6d,
                        params: {max_length: 100, use_chunking: true, chunk_strategy: weighted}}
        - name: scratch
          type: simple
          config: {}
        - name: board
          type: blackboard
        - name: docs
          type: file
          config:
            memory_path: docs.json
            file_sources: {path: ., file_types: [.md]}
            embedding: {model: emb}
        """,
        """
        thinking: {type: reflection, config: {reflection_prompt: Shorter.}}
        memories:
          - name: notes
          - {name: board, retrieve_stage: gen, top_k: 5, similarity_threshold: 0.5, write: no}
        """,
    )
    workflow = load_workflow(path, environ={})
    notes, scratch, board, docs = workflow.graph.memory
    assert notes.config == SimpleMemoryConfig(
        str(tmp_path / "state" / "notes.json"),
        EmbeddingConfig("emb", None, "sk-emb-9a8b7c6d", 100, True, "weighted"),
    )
    assert scratch.config == SimpleMemoryConfig(AUTO, None)  # no path: `auto`, as in ChatDev
    assert board.config == BlackboardMemoryConfig(None, 1000)  # no config block at all
    assert isinstance(docs.config, FileMemoryConfig)
    assert docs.config.index_path == str(tmp_path / "flows" / "docs.json")  # memory_path alias
    assert docs.config.sources[0].path == str(tmp_path / "flows")
    agent = workflow.graph.nodes[0].config
    assert agent.thinking == ThinkingConfig("reflection", ReflectionConfig("Shorter."))
    assert agent.memories[0] == MemoryRefConfig("notes", key_path=agent.memories[0].key_path)
    board_ref = agent.memories[1]
    assert (board_ref.retrieve_stage, board_ref.top_k, board_ref.similarity_threshold) == (
        ("gen",),
        5,
        0.5,
    )
    assert (board_ref.read, board_ref.write) == (True, False)
    assert workflow.redactor.text("key sk-emb-9a8b7c6d") == "key ***"


def test_store_errors_are_all_reported_where_they_are(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        - name: docs
          type: file
          config: {file_sources: [], embedding: {provider: local, model: m}}
        - name: files
          type: file
        - name: bb
          type: blackboard
          config: {max_items: 0, memory_path: [x]}
        - name: emb
          type: simple
          config: {embedding: {base_url: ftp://x, params: {chunk_strategy: median}}}
        - {name: odd, type: vector}
        """,
    )
    assert messages(path) == [
        "error: graph.memory[0].config.file_sources: file_sources must list at least one "
        "{path: ...}, got a list",
        "error: graph.memory[0].config.embedding.provider: embedding provider 'local' is not "
        "supported: devall reads embeddings from an OpenAI-compatible /embeddings endpoint "
        "(provider: openai)",
        "error: graph.memory[1].config: a memory store of type 'file' needs a config block",
        "error: graph.memory[2].config.max_items: max_items must be at least 1, got 0",
        "error: graph.memory[2].config.memory_path: memory_path must be text, got a list",
        "error: graph.memory[3].config.embedding.model: model is required",
        "error: graph.memory[3].config.embedding.base_url: base_url must be an http:// or "
        "https:// URL, got 'ftp://x' (text)",
        "error: graph.memory[3].config.embedding.params.chunk_strategy: chunk_strategy must be "
        "one of average, weighted, first, got 'median'",
        "error: graph.memory[4].type: unknown memory store type 'vector' (known: blackboard, "
        "file, mem0, simple)",
    ]


def test_file_memory_needs_an_embedding_and_warns_about_missing_folders(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        - name: docs
          type: file
          config: {file_sources: [{path: nowhere}]}
        """,
    )
    assert messages(path) == [
        "error: graph.memory[0].config.embedding: a file memory needs an embedding block to "
        "search its files",
        "warning: graph.memory[0].config.file_sources[0].path: nowhere does not exist "
        "(nothing is indexed from it)",
    ]


def test_the_legacy_agent_memory_key_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, agent="memory: {name: x}")
    assert messages(path) == [
        "error: graph.nodes[0].config.memory: an agent-level memory block (ChatDev's old form) "
        "('memory') is not supported yet"
    ]


def test_validating_a_memory_workflow_loads_neither_numpy_nor_httpx(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        - name: notes
          type: simple
          config: {embedding: {model: emb}}
        """,
        "memories: [{name: notes}]\nthinking: {type: reflection, config: {reflection_prompt: x}}",
    )
    code = (
        "import sys\nfrom devall_cli.workflow.loader import load_workflow\n"
        f"load_workflow({str(path)!r}, environ={{}})\n"
        "print(sorted(m for m in ('numpy', 'httpx') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
