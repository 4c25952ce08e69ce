"""Parallel pressure through the ToolManager: 20 concurrent calls per server, results matched.

The stdlib raw server's fixture `track(seconds, tag)`, over stdio and over HTTP, counts how many
of its calls run at once in the server process and answers `<tag> peak=<most at once so far>`,
so the test sees both whether each result came back to its own call and how many calls the
server really had in flight. (What is tested is devall's client, not what the server is built
on: the raw server costs a fraction of a FastMCP server's CPU.)
"""

from __future__ import annotations

import asyncio
import re
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from devall_cli.procs.process_groups import watcher_pid
from devall_cli.tools.base import ToolResult
from devall_cli.tools.manager import ToolManager
from devall_cli.tools.mcp_remote import REMOTE_MAX_CONCURRENCY
from devall_cli.workflow.loader import load_workflow
from tests.helpers import text_of
from tests.servers.serve import SERVERS_DIR, ServerProcess, live_children

CALLS = 20
LOCAL_LIMIT = 4
SLEEP = 0.25
RAW = SERVERS_DIR / "raw_server.py"
_PEAK = re.compile(r"^(?P<tag>\S+) peak=(?P<peak>\d+)$")


@pytest.fixture
def remote() -> Iterator[ServerProcess]:
    with ServerProcess(RAW, args=["--fixture"]) as server:
        yield server


def workflow_file(tmp_path: Path, url: str) -> Path:
    text = f"""
    graph:
      id: pressure
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
                prefix: loc
                config:
                  command: "{sys.executable}"
                  args: ["{RAW}", "--fixture"]
                  wait_for_log: raw server ready
                  max_concurrency: {LOCAL_LIMIT}
              - type: mcp_remote
                prefix: web
                config: {{server: "{url}"}}
    """
    path = tmp_path / "wf.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def tag_and_peak(result: ToolResult) -> tuple[str, int]:
    match = _PEAK.match(text_of(result))
    assert match is not None and not result.is_error, text_of(result)
    return match.group("tag"), int(match.group("peak"))


@pytest.mark.slow  # a soak test: `make test` runs it, `make test-fast` does not
async def test_twenty_concurrent_calls_per_server_are_matched_and_bounded(
    tmp_path: Path, remote: ServerProcess
) -> None:
    before = set(live_children())
    workflow = load_workflow(workflow_file(tmp_path, remote.url))
    async with ToolManager(workflow) as manager:
        await manager.start()
        names = [spec.name for spec in await manager.specs_for("a")]
        assert {"loc_track", "web_track", "loc_peak", "web_peak"} <= set(names)
        tags = [f"{side}{n}" for n in range(CALLS) for side in ("L", "R")]
        started = time.monotonic()
        results = await asyncio.gather(
            *(
                manager.call(
                    "a",
                    "loc_track" if tag[0] == "L" else "web_track",
                    {"seconds": SLEEP, "tag": tag},
                )
                for tag in tags
            )
        )
        elapsed = time.monotonic() - started
        seen = [tag_and_peak(result) for result in results]
        assert [tag for tag, _ in seen] == tags  # every result belongs to its own call
        local_peaks = [peak for tag, peak in seen if tag[0] == "L"]
        remote_peaks = [peak for tag, peak in seen if tag[0] == "R"]
        # Never more than max_concurrency on the local server, and the limit was really used.
        assert max(local_peaks) == LOCAL_LIMIT
        assert text_of(await manager.call("a", "loc_peak", {})) == str(LOCAL_LIMIT)
        # The remote session carries many calls at once (devall's own cap for remote servers).
        assert LOCAL_LIMIT < max(remote_peaks) <= REMOTE_MAX_CONCURRENCY
        # 20 local calls, never more than 4 at a time: at least five rounds of SLEEP.
        assert elapsed >= CALLS / LOCAL_LIMIT * SLEEP
        spawned = set(live_children()) - before - {watcher_pid()}  # devall's own watcher
        assert len(spawned) == 1  # one local process served all twenty calls
    assert set(live_children()) - before == set()
