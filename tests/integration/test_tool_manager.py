"""ToolManager against real servers: one remote over HTTP, one local over stdio, and functions."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from devall_cli.errors import ConfigError
from devall_cli.tools.manager import ToolManager, safe_tool_names
from devall_cli.workflow.loader import load_workflow
from tests.servers.serve import (
    FIXTURE_SERVER,
    SERVERS_DIR,
    ServerProcess,
    live_children,
    pid_gone,
)

# The local server: the stdlib one with the fixture tools (echo, add). What is tested is how the
# manager merges, names, caches and closes its sources, not what the server is built on.
RAW = SERVERS_DIR / "raw_server.py"

FUNCTIONS = '''
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()
'''


@pytest.fixture(scope="module")
def remote() -> Iterator[ServerProcess]:
    """One HTTP fixture server for the module: its tests only list and call tools."""
    with ServerProcess(FIXTURE_SERVER) as server:
        yield server


def write_workflow(tmp_path: Path, url: str, *, extra_tooling: str = "", ttl: float = 0) -> Path:
    (tmp_path / "functions").mkdir(exist_ok=True)
    (tmp_path / "functions" / "text.py").write_text(FUNCTIONS)
    text = f"""
    graph:
      id: tm
      start: [a]
      nodes:
        - id: a
          type: agent
          config:
            provider: scripted
            name: s
            script: [{{content: done}}]
            tooling:
              - type: mcp_remote
                prefix: web
                config: {{server: "{url}", cache_ttl: {ttl}}}
              - type: mcp_local
                prefix: loc
                config:
                  command: "{sys.executable}"
                  args: ["{RAW}", "--fixture"]
                  wait_for_log: raw server ready
              - type: function
                config: {{tools: [{{name: shout}}]}}
{textwrap.indent(extra_tooling, " " * 14)}
        - id: b
          type: agent
          config:
            provider: scripted
            name: s
            script: [{{content: done}}]
            tooling:
              - type: mcp_local
                prefix: loc
                config:
                  command: "{sys.executable}"
                  args: ["{RAW}", "--fixture"]
                  wait_for_log: raw server ready
      edges: [{{from: a, to: b}}]
    """
    path = tmp_path / "wf.yaml"
    path.write_text(textwrap.dedent(text))
    return path


async def test_specs_merge_sources_in_order_with_prefixes(
    tmp_path: Path, remote: ServerProcess
) -> None:
    workflow = load_workflow(write_workflow(tmp_path, remote.url))
    async with ToolManager(workflow) as manager:
        await manager.start()
        specs = await manager.specs_for("a")
        names = [s.name for s in specs]
        assert names.index("web_echo") < names.index("loc_echo") < names.index("shout")
        by_name = {s.name: s for s in specs}
        assert by_name["web_echo"].source == "mcp_remote"
        assert by_name["loc_echo"].source == "mcp_local"
        assert by_name["shout"].source == "function"
        assert by_name["loc_echo"].original_name == "echo"
        # tool_sources defaults to [mcp_tools]: the tool tagged `other_source` is filtered out
        assert "web_other_source_tool" not in names
        # the local server is shared by nodes a and b: one process only
        assert len(manager.plan.sources) == 3
        result = await manager.call("b", "loc_add", {"a": 2, "b": 3})
        assert not result.is_error and result.blocks[0].text == "5"  # type: ignore[union-attr]
        result = await manager.call("a", "shout", {"text": "hi"})
        assert result.blocks[0].text == "HI"  # type: ignore[union-attr]
        unknown = await manager.call("a", "nope", {})
        assert unknown.is_error and unknown.error_class == "unknown_tool"


async def test_duplicate_final_names_are_a_config_error(
    tmp_path: Path, remote: ServerProcess
) -> None:
    extra = f"- type: mcp_remote\n  prefix: loc\n  config: {{server: '{remote.url}', timeout: 5}}\n"
    workflow = load_workflow(write_workflow(tmp_path, remote.url, extra_tooling=extra))
    async with ToolManager(workflow) as manager:
        with pytest.raises(ConfigError) as info:
            await manager.specs_for("a")
    assert "Duplicate tool name 'loc_echo' detected. Please use a unique 'prefix'" in str(
        info.value
    )
    assert "graph.nodes[0].config.tooling[3]" in info.value.issues[0].path


async def test_tool_sources_keeps_listed_sources_only(
    tmp_path: Path, remote: ServerProcess
) -> None:
    path = write_workflow(tmp_path, remote.url)
    text = path.read_text().replace("cache_ttl: 0}", "cache_ttl: 0, tool_sources: [other_source]}")
    path.write_text(text)
    workflow = load_workflow(path)
    async with ToolManager(workflow) as manager:
        names = [s.name for s in await manager.specs_for("a") if s.source == "mcp_remote"]
    assert names == ["web_other_source_tool"]


@pytest.mark.parametrize(("ttl", "expected_lists"), [(0, 3), (60, 1)])
async def test_cache_ttl_controls_relisting(
    tmp_path: Path, remote: ServerProcess, ttl: float, expected_lists: int
) -> None:
    workflow = load_workflow(write_workflow(tmp_path, remote.url, ttl=ttl))
    async with ToolManager(workflow) as manager:
        source_id = manager.plan.entries[("a", 0)]
        await manager.start_source(manager.plan.source(source_id))
        source = manager._sources[source_id]
        calls = 0
        real = source.list_tools

        async def counting() -> list:  # type: ignore[type-arg]
            nonlocal calls
            calls += 1
            return await real()

        source.list_tools = counting  # type: ignore[method-assign]
        manager._listed.clear()
        for _ in range(3):
            await manager.specs_for("a")
    assert calls == expected_lists


def test_safe_tool_names_are_mapped_and_unique() -> None:
    assert safe_tool_names(["ok-name_1", "a.b", "a_b", "x" * 80]) == [
        "ok-name_1",
        "a_b_2",  # `a_b` belongs to the tool of that name, listed later
        "a_b",
        "x" * 58,
    ]
    assert safe_tool_names(["a b", "a.b", "a_b_2"]) == ["a_b", "a_b_3", "a_b_2"]


async def test_local_processes_are_gone_after_close(tmp_path: Path, remote: ServerProcess) -> None:
    before = set(live_children())
    workflow = load_workflow(write_workflow(tmp_path, remote.url))
    async with ToolManager(workflow) as manager:
        await manager.start()
        started = set(live_children()) - before
        assert started, "the local server should be running"
    assert all(pid_gone(pid) for pid in started)
