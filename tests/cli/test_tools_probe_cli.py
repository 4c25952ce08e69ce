"""`devall tools list`, `tools call` and `probe` through the CLI, against real servers."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.helpers import devall, events, invoke
from tests.servers.serve import SERVERS_DIR, ServerProcess, free_port, live_children

NEVER_READY = SERVERS_DIR / "never_ready_server.py"


# The stdlib server with its fixture tools: what these tests probe and call is devall.
RAW = SERVERS_DIR / "raw_server.py"
SHAPED_DESCRIPTION = "Returns structured content as asked."


@pytest.fixture(scope="module")
def remote() -> Iterator[ServerProcess]:
    """One HTTP server for the module (the stdlib one): its tests only list and call its tools."""
    with ServerProcess(RAW, args=["--fixture"]) as server:
        yield server


def local_tooling(prefix: str, script: Path = RAW, extra: str = "") -> str:
    args = f'"{script}", "--fixture"' if script == RAW else f'"{script}"'
    return f"""
              - type: mcp_local
                prefix: {prefix}
                config:
                  command: "{sys.executable}"
                  args: [{args}]
                  wait_for_log: raw server ready
                  {extra}"""


def write(tmp_path: Path, tooling: str, headers: str = "") -> Path:
    text = f"""
    vars:
      TOKEN: s3cr3t-token-value
    graph:
      start: [a]
      nodes:
        - id: a
          type: agent
          config:
            provider: scripted
            name: s
            script: [{{content: done}}]
            tooling:{tooling}
    """
    path = tmp_path / "wf.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def remote_tooling(prefix: str, url: str) -> str:
    return f"""
              - type: mcp_remote
                prefix: {prefix}
                config:
                  server: "{url}"
                  timeout: 5
                  headers: {{x-test-token: "${{TOKEN}}"}}"""


def test_tools_list_table_and_json(tmp_path: Path, remote: ServerProcess) -> None:
    wf = write(tmp_path, remote_tooling("web", remote.url) + local_tooling("loc"))
    code, out, err = invoke("tools", "list", str(wf))
    assert code == 0, err
    assert "web_echo" in out and "loc_add" in out
    # Each server is named once, on its heading line, with the node all its tools go to.
    assert out.count("mcp_remote") == 1 and out.count("mcp_local") == 1
    assert f"web · mcp_remote · {remote.url} · node: a\n" in out
    assert "s3cr3t-token-value" not in out + err
    code, out, err = invoke("tools", "list", str(wf), "--json")
    assert code == 0, err
    rows = json.loads(out)
    add = next(r for r in rows if r["name"] == "loc_add")
    assert add["original_name"] == "add" and add["nodes"] == ["a"] and add["source"] == "mcp_local"
    assert set(add) == {
        "name",
        "original_name",
        "nodes",
        "source",
        "server",
        "description",
        "input_schema",
        "title",
        "annotations",
        "output_schema",
        "roots",
        "_meta",
        "execution",
        "icons",
        "policy",
    }
    assert add["input_schema"]["required"] == ["a", "b"]
    assert add["roots"] == []  # none unless configured
    assert add["_meta"] is None and add["execution"] is None  # the server lists neither


def test_tools_list_schema_flag(tmp_path: Path) -> None:
    wf = write(tmp_path, local_tooling("loc"))
    code, out, _ = invoke("tools", "list", str(wf), "--schema")
    assert code == 0
    assert '"properties"' in out and "a*, b*" in out
    assert "\nloc_add:\n{\n" in out and "\\x0a" not in out  # a blank line, not an escape


def test_tools_call_text_image_and_error(tmp_path: Path) -> None:
    wf = write(tmp_path, local_tooling("loc"))
    code, out, err = invoke("tools", "call", str(wf), "loc_add", "--args", '{"a": 1, "b": 6}')
    assert (code, out.strip()) == (0, "7"), err
    code, out, err = invoke("tools", "call", str(wf), "loc_image", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["ok"] is True and doc["is_error"] is False and doc["duration_ms"] > 0
    block = doc["blocks"][0]
    assert block["type"] == "attachment" and block["mime_type"] == "image/png"
    saved = list(Path("logs").glob("*/attachments/*.png"))
    assert len(saved) == 1 and saved[0].stat().st_size == block["size"]
    code, out, err = invoke("tools", "call", str(wf), "loc_fail", "--args", '{"message": "boom"}')
    assert code == 1 and "boom" in err


def test_tools_list_names_each_server_once_and_fits_100_columns() -> None:
    command = f"{sys.executable} {RAW} --pages 5"
    done = devall("tools", "list", "--command", command, env={"COLUMNS": "100"})
    assert done.returncode == 0, done.stderr
    heading, *table = done.stdout.splitlines()
    assert heading == f"raw_server · mcp_local · {command} · node: raw_server"  # whole
    assert table[0].split() == ["tool", "parameters", "description"]
    # The header, its rule, then one line per tool, each description whole.
    assert len(table) == 2 + 6 and all(len(line) <= 100 for line in table)
    shaped = table[3].split()
    assert shaped[:2] == ["shaped", "mode"] and " ".join(shaped[2:]) == SHAPED_DESCRIPTION


def test_tools_call_usage_errors(tmp_path: Path) -> None:
    wf = write(tmp_path, local_tooling("loc"))
    code, _, err = invoke("tools", "call", str(wf), "loc_add", "--args", "{not json")
    assert code == 2 and "--args" in err
    code, _, err = invoke("tools", "call", str(wf), "nope")
    assert code == 2 and "no tool 'nope'" in err and "loc_add" in err
    code, _, err = invoke("tools", "call", str(wf), "nope", "--out", "x/run")
    assert code == 2 and "run files" not in err
    code, _, err = invoke("tools", "call", str(wf), "loc_add", "--node", "b")
    assert code == 2 and "no node 'b' in the workflow (nodes: a)" in err
    # Nothing was called: no run directory is left behind, not even an empty logs/.
    assert not Path("logs").exists() and not Path("x").exists()


def test_tools_call_checks_an_mcp_tools_arguments_before_sending_them(tmp_path: Path) -> None:
    wf = write(tmp_path, local_tooling("loc"))
    code, out, err = invoke(
        "tools", "call", str(wf), "loc_add", "--args", '{"a": "x"}', "--out", "run"
    )
    assert (code, out) == (1, ""), err
    assert err.splitlines()[1:] == [
        "devall: error: 'a' must be an integer, got \"x\"",
        "devall: error: missing required argument 'b' (an integer)",
        "  hint: 'loc_add' was not called; its parameters (* = required): "
        "a* (an integer), b* (an integer)",
    ]
    (result,) = events(Path("run"), "tool.result")
    assert result["error_class"] == "invalid_arguments"


def test_probe_mixed_servers_concurrently(tmp_path: Path, remote: ServerProcess) -> None:
    dead_url = f"http://127.0.0.1:{free_port()}/mcp"
    never = local_tooling("never", NEVER_READY, "startup_timeout: 3")

    def stamping(prefix: str) -> str:
        """A never-ready server that writes its start time to `<prefix>.started`."""
        args = f'args: ["{NEVER_READY}", "{tmp_path / prefix}.started"]'
        return never.replace("prefix: never", f"prefix: {prefix}").replace(
            f'args: ["{NEVER_READY}"]', args
        )

    tooling = (
        remote_tooling("web", remote.url)
        + remote_tooling("dead", dead_url)
        + stamping("never")
        + stamping("never2")
        + local_tooling("loc")
    )
    wf = write(tmp_path, tooling)
    junit = tmp_path / "probe.xml"
    before = set(live_children())
    code, out, err = invoke("probe", str(wf), "--json", "--junit", str(junit))
    assert code == 1, err
    doc = json.loads(out)
    assert doc["ok"] is False
    status = {s["id"]: s["status"] for s in doc["servers"]}
    assert status == {
        "web": "ok",
        "dead": "unreachable",
        "never": "startup_timeout",
        "never2": "startup_timeout",
        "loc": "ok",
    }
    keys = {
        "id",
        "kind",
        "target",
        "nodes",
        "ok",
        "status",
        "error",
        "protocol_version",
        "server_name",
        "tools",
        "connect_ms",
        "list_ms",
        "log_tail",
        "hint",
        "roots",
        "task_only",
        "client",
        "policy",
        "sandbox",
    }
    for row in doc["servers"]:
        assert set(row) == keys
        assert row["roots"] == []  # none unless configured
    web = next(s for s in doc["servers"] if s["id"] == "web")
    assert web["tools"] > 5 and web["protocol_version"] and web["server_name"]
    never = next(s for s in doc["servers"] if s["id"] == "never")
    assert never["log_tail"], "the never-ready server's log lines are reported"
    dead = next(s for s in doc["servers"] if s["id"] == "dead")
    assert dead["hint"].startswith("start the MCP server that should answer at")
    assert web["hint"] is None
    # concurrent: the second never-ready server started before the first one's 3 s were up
    starts = [float((tmp_path / f"{p}.started").read_text()) for p in ("never", "never2")]
    first, second = sorted(starts)
    assert second - first < 3
    suite = ElementTree.parse(junit).getroot()
    assert suite.get("tests") == "5" and suite.get("failures") == "3"
    assert len(suite.findall("testcase/failure")) == 3
    assert set(live_children()) <= before


def test_probe_adhoc_url_and_command(remote: ServerProcess) -> None:
    code, out, err = invoke("probe", "--url", remote.url, "--header", "x-test-token: abcdefgh")
    assert code == 0, err
    assert "ok" in out and "abcdefgh" not in out
    cmd = f"{sys.executable} {RAW} --fixture"
    code, out, err = invoke("probe", "--command", cmd, "--wait-for-log", "ready", "--json")
    assert code == 0, err
    assert json.loads(out)["servers"][0]["status"] == "ok"


def test_probe_needs_exactly_one_target() -> None:
    code, _, err = invoke("probe")
    assert code == 2 and "exactly one" in err


def test_unreachable_remote_server_is_exit_4_after_three_attempts(tmp_path: Path) -> None:
    wf = write(tmp_path, remote_tooling("dead", f"http://127.0.0.1:{free_port()}/mcp"))
    t0 = time.monotonic()
    code, out, err = invoke("tools", "list", str(wf))
    assert code == 4 and out == ""
    assert "devall: error:" in err and "127.0.0.1" in err and "Traceback" not in err
    assert time.monotonic() - t0 >= 1.5  # 3 attempts, waiting 0.5 s then 1 s


def test_an_unreachable_ad_hoc_url_is_said_once_with_a_hint_that_exists() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    code, out, err = invoke("probe", "--url", url)
    assert code == 1, err
    err = out + err  # the report is on stdout, the table's notes with it
    assert err.count(f"({url})") == 1  # the retries' log lines give the reason only
    assert "connect attempt 1/3 failed (connection refused); retrying in" in err
    assert "command line.config" not in err and "`server:` in the command line" in err
