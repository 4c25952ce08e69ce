"""Scenario 14: big surfaces: a server with 5,000 tools, a 1 MB tool result.

The server is `benchmarks/light_server.py --tools 5000` (standard library: its own start-up is
a few tens of ms, so the rows measure the client). 14a/14b: `devall tools list` of it as a table
and with `--json`, fresh processes, alternating with the MCP Inspector CLI's `--method
tools/list` (where `make bench-tools` installed it); targets under 1 s and under 0.5 s.
14c: a one-turn agent on the fake OpenAI-compatible server sees all 5,000 tools: the bytes of
its model request (informational) and whether the oversize warning is given (the
`tools.oversize` event in events.jsonl and a `warnings` entry in result.json). 14d: `devall tools
call` of the server's `big` tool answering 1 MB: the size of the run directory it writes, against
the result's size (target: the result stored once, within 1.2x of its size).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from benchmarks.core import (
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
from benchmarks.fixtures import (
    LIGHT_SERVER,
    ServerScript,
    agent_node,
    local_tooling,
    scratch_dir,
    write_workflow,
)
from benchmarks.floor import INSPECTOR, NODE22, inspector_available

TABLE_TARGET_S = 1.0
JSON_TARGET_S = 0.5
STORED_TARGET = 1.2
MB = 2**20


def surface_server(tools: int) -> ServerScript:
    """The light server listing `tools` generated tools (and echo, big)."""
    return ServerScript(LIGHT_SERVER, ("--tools", str(tools)), "light server ready", "")


def _timer(argv: list[str], cwd: Path) -> Callable[[], float]:
    env = bench_env()

    def run() -> float:
        timing = time_process(argv, env=env, cwd=cwd)
        if timing.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited with {timing.returncode}")
        return timing.wall_s

    return run


def _listing_rows(
    tmp: Path, server: ServerScript, tools: int, rounds: int, quick: bool
) -> list[Row]:
    """Rows 14a (table) and 14b (--json), next to the Inspector CLI."""
    devall = venv_command("devall")
    flow = write_workflow(tmp, "surface", [agent_node("a", [local_tooling(server=server)])], ["a"])
    contenders = {
        "table": _timer([devall, "tools", "list", str(flow)], tmp),
        "json": _timer([devall, "tools", "list", str(flow), "--json"], tmp),
    }
    if inspector_available():
        argv = [str(NODE22), str(INSPECTOR), "--cli", sys.executable, str(server.path)]
        contenders["inspector"] = _timer([*argv, *server.args, "--method", "tools/list"], tmp)
    if not quick:
        for timer in contenders.values():
            timer()  # warm-up: page cache
    samples = alternate_sync(contenders, rounds)
    inspector = median(samples["inspector"]) if "inspector" in samples else None
    rows = []
    for row_id, key, target in (("14a", "table", TABLE_TARGET_S), ("14b", "json", JSON_TARGET_S)):
        mid = median(samples[key])
        note = f"best {min(samples[key]) * 1000:.0f} ms"
        if inspector is None:
            note += "; skipped the Inspector CLI: Node 22 and the Inspector not installed"
        rows.append(
            Row(
                id=row_id,
                title=f"tools list of {tools} tools, {key}",
                devall=mid * 1000,
                comparison=inspector * 1000 if inspector else None,
                unit="ms",
                ratio=mid / inspector if inspector else None,
                target=f"< {target * 1000:.0f} ms",
                status=verdict(mid < target),
                compared_with="Inspector CLI --method tools/list" if inspector else "",
                note=note,
                samples={k: rounded(v) for k, v in samples.items() if k in (key, "inspector")},
            )
        )
    return rows


def _request_row(tmp: Path, server: ServerScript, tools: int) -> Row:
    """Row 14c: the model request of a node seeing every tool, and the oversize warning."""
    from tests.servers.fake_llm import FakeLLM

    with FakeLLM() as llm:
        config = (
            f"provider: openai, name: bench-model, base_url: {json.dumps(llm.base_url)}, "
            "api_key: sk-bench, params: {retries: 0}"
        )
        tooling = local_tooling(server=server)
        node = "\n".join(
            [
                "    - id: a",
                "      type: agent",
                "      config: {" + config + ", tooling: [" + tooling + "]}",
            ]
        )
        flow = write_workflow(tmp, "surface-model", [node], ["a"])
        out = tmp / "model-run"
        argv = [venv_command("devall"), "run", str(flow), "--task", "go", "--out", str(out), "-q"]
        done = subprocess.run(argv, env=bench_env(), capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"devall run exited {done.returncode}: {done.stderr[-1000:]}")
        if not llm.chat_requests:
            raise RuntimeError("the model got no request")
        sent = len(llm.chat_requests[0].raw)
    in_events = '"tools.oversize"' in (out / "events.jsonl").read_text(encoding="utf-8")
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    in_result = any(w.get("kind") == "tools_oversize" for w in result.get("warnings") or [])
    return Row(
        id="14c",
        title=f"model request of a node with {tools} tools",
        devall=sent / 1024,
        comparison=None,
        unit="KB",
        ratio=None,
        target="oversize warning given",
        status=verdict(in_events and in_result),
        note=f"request {sent / MB:.2f} MB; tools.oversize event: {'yes' if in_events else 'no'}, "
        f"result.json warning: {'yes' if in_result else 'no'}",
    )


def tree_bytes(folder: Path) -> int:
    """The bytes of every file under `folder`."""
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def _stored_row(tmp: Path, size: int) -> Row:
    """Row 14d: the run directory of `tools call` of a `size`-byte result."""
    flow = write_workflow(
        tmp, "big-result", [agent_node("a", [local_tooling(server=surface_server(0))])], ["a"]
    )
    out = tmp / "call-run"
    argv = [venv_command("devall"), "tools", "call", str(flow), "big"]
    argv += ["--args", json.dumps({"size": size}), "--out", str(out)]
    done = subprocess.run(
        argv,
        env=bench_env(),
        cwd=tmp,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise RuntimeError(f"devall tools call exited {done.returncode}: {done.stderr[-1000:]}")
    stored = tree_bytes(out)
    files = ", ".join(
        f"{p.relative_to(out)} {p.stat().st_size / 1024:.0f} KB"
        for p in sorted(out.rglob("*"))
        if p.is_file()
    )
    return Row(
        id="14d",
        title=f"tools call of a {size / MB:g} MB result: run directory",
        devall=stored / MB,
        comparison=size / MB,
        unit="MB",
        ratio=stored / size,
        target=f"<= {STORED_TARGET:.1f}x",
        status=verdict(stored / size <= STORED_TARGET),
        compared_with="the result's size",
        note=files,
    )


def big_surfaces(settings: Settings) -> list[Row]:
    """Scenario 14: rows 14a-14d."""
    tools = settings.pick(5000, 200)  # quick: still past the 128-tool warning limit
    rounds = settings.pick(5, 1)
    size = settings.pick(MB, 64 * 1024)
    with scratch_dir("surfaces") as tmp:
        server = surface_server(tools)
        rows = _listing_rows(tmp, server, tools, rounds, settings.quick)
        rows.append(_request_row(tmp, server, tools))
        rows.append(_stored_row(tmp, size))
    if not inspector_available():
        reason = "Node 22 and the Inspector not installed (run `make bench-tools`)"
        rows.append(skip_row("14e", "Inspector CLI tools/list of the same server", "ms", reason))
    return rows
