"""Hostile MCP servers: garbage answers, duplicate tool names and odd tool names.

`tests/servers/hostile_server.py` is written by hand (no SDK) so it can break the protocol in
ways an SDK server cannot. Every answer must end in a traced error (an error result for calls,
a DevallError for listings), never a crash and never a wait beyond the call timeout.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from devall_cli.errors import ExitCode, ProtocolError
from devall_cli.procs.process_groups import live_child_pids
from devall_cli.tools.base import TextBlock
from devall_cli.tools.kinds.mcp_local import McpLocalConfig
from devall_cli.tools.manager import ToolManager
from devall_cli.tools.mcp_local import LocalSource
from devall_cli.tools.stdio_process import LINE_LIMIT
from devall_cli.workflow.loader import load_workflow
from tests.helpers import direct_local_source, text_of

HOSTILE = Path(__file__).resolve().parents[1] / "servers" / "hostile_server.py"
READY = "hostile server ready"
CALL_TIMEOUT = 1.0
SAFE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@pytest.fixture(autouse=True)
def _no_child_left() -> Iterator[None]:
    """Every server a test starts is torn down by the end of the test."""
    before = set(live_child_pids())
    yield
    leaked = set(live_child_pids()) - before
    for pid in leaked:
        os.killpg(pid, 9)
    assert not leaked, f"server processes left running: {leaked}"


def hostile(*args: str, **settings: Any) -> McpLocalConfig:
    return McpLocalConfig(
        command=sys.executable, args=(str(HOSTILE), *args), wait_for_log=READY, **settings
    )


# Both clients meet the same server: fastmcp's, and devall's own (tools list/call, probe).
CLIENTS = pytest.mark.parametrize(
    "kind", [LocalSource, direct_local_source], ids=["fastmcp", "direct"]
)


@pytest.fixture(params=[LocalSource, direct_local_source], ids=["fastmcp", "direct"])
async def source(request: pytest.FixtureRequest) -> AsyncIterator[tuple[LocalSource, list[str]]]:
    lines: list[str] = []
    src = request.param(
        id="hostile",
        config=hostile(call_timeout=CALL_TIMEOUT, max_concurrency=8),
        on_log=lambda _id, line: lines.append(line),
    )
    await src.start()
    yield src, lines
    await src.close()


# The answer each hostile tool gives, and what devall makes of it.
EXPECTED = {
    # No id: nothing can be matched to the call, which ends at its timeout.
    "no_id": ("timeout", f"timed out after {CALL_TIMEOUT:g}s"),
    # Not JSON: a log line; the call ends at its timeout.
    "not_json": ("timeout", f"timed out after {CALL_TIMEOUT:g}s"),
    # Invalid JSON-RPC that names the call's id: the call fails at once.
    "bad_result": ("invalid_result", "invalid JSON-RPC response from the server: result:"),
    "wrong_version": ("invalid_result", "invalid JSON-RPC response from the server: jsonrpc:"),
    # Longer than devall keeps: dropped, and the call it answers fails at once.
    "huge_line": ("invalid_result", f"the response is longer than {LINE_LIMIT} bytes"),
    # Valid JSON-RPC, but not a valid tool result.
    "wrong_types": ("invalid_result", "returned an invalid result"),
    "unknown_block": ("invalid_result", "returned an invalid result"),
}


async def test_every_garbage_answer_is_an_error_result_within_the_timeout(
    source: tuple[LocalSource, list[str]],
) -> None:
    src, lines = source
    names = sorted(EXPECTED)
    # A hang guard: the two answers devall cannot match end at the call timeout, the rest at once.
    calls = asyncio.gather(*(src.call_tool(name, {}) for name in names))
    results = await asyncio.wait_for(calls, 30)
    for name, result in zip(names, results, strict=True):
        error_class, words = EXPECTED[name]
        assert result.is_error, (name, text_of(result))
        assert result.error_class == error_class, (name, text_of(result))
        assert words in text_of(result), (name, text_of(result))
    # What could not be used is in the server log, not lost.
    assert any(line.startswith("[devall: invalid JSON-RPC message") for line in lines)
    assert any('"result": {"content": [}' in line for line in lines)  # the non-JSON line
    assert f"[devall: dropped a stdout line longer than {LINE_LIMIT} bytes]" in lines
    # The session is still good for well-behaved calls.
    assert text_of(await src.call_tool("echo", {"text": "still here"})) == "still here"
    assert src.restarts == 0


async def test_bad_base64_is_a_visible_placeholder_not_a_crash(
    source: tuple[LocalSource, list[str]],
) -> None:
    src, _ = source
    result = await src.call_tool("bad_base64", {})
    assert text_of(result) == "[failed to decode image content from bad_base64]"
    assert not [b for b in result.blocks if not isinstance(b, TextBlock)]


@CLIENTS
async def test_a_tool_list_with_a_duplicate_name_is_a_protocol_error(
    tmp_path: Path, kind: type[LocalSource]
) -> None:
    src = kind(id="dups", config=hostile("--duplicates"))
    try:
        await src.start()
        with pytest.raises(ProtocolError) as info:
            await src.list_tools()
    finally:
        await src.close()
    assert info.value.exit_code == ExitCode.REMOTE
    assert "listed more than one tool named 'echo'" in info.value.message
    assert "dups" in info.value.message


# --- odd tool names ----------------------------------------------------------------------------


def odd_names_workflow(tmp_path: Path) -> Path:
    text = f"""
    graph:
      id: odd
      start: [a]
      nodes:
        - id: a
          type: agent
          config:
            provider: scripted
            name: s
            script: [{{content: done}}]
            tooling:
              - type: mcp_local
                config:
                  command: "{sys.executable}"
                  args: ["{HOSTILE}", "--odd-names"]
                  wait_for_log: {READY}
    """
    path = tmp_path / "wf.yaml"
    path.write_text(textwrap.dedent(text))
    return path


async def test_odd_tool_names_become_safe_unique_names_that_reach_the_original(
    tmp_path: Path,
) -> None:
    from tests.servers.hostile_server import LONG_NAME, LONG_NAME_TWIN, ODD_NAMES

    workflow = load_workflow(odd_names_workflow(tmp_path))
    async with ToolManager(workflow) as manager:
        specs = await manager.specs_for("a")
        by_original = {spec.original_name: spec.name for spec in specs}
        assert sorted(by_original) == sorted(ODD_NAMES)
        safe = list(by_original.values())
        assert all(SAFE.match(name) for name in safe), safe
        assert len(set(safe)) == len(safe)
        assert by_original["ok_name"] == "ok_name"  # a name that is fine stays as it is
        assert by_original["my.tool/v2"] == "my_tool_v2"
        assert by_original["name with spaces"] == "name_with_spaces"
        assert by_original[LONG_NAME] != by_original[LONG_NAME_TWIN]
        for original, name in by_original.items():
            result = await manager.call("a", name, {})
            assert text_of(result) == f"called {original}"  # the server got the original name
