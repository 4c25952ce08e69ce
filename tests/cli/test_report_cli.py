"""`devall report` and `devall run --report`: the page of a failed, an interrupted, a subgraph
and a dynamic run, read back as HTML; bad run directories are clear errors."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import textwrap
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from tests.cli.flows import LLM_KEY, edge, invoke, node, scripted, write_flow
from tests.cli.test_signals import DEVALL, events, wait_for
from tests.conftest import REPO_ROOT, SERVERS_DIR

EXAMPLES = REPO_ROOT / "workflows" / "examples"


def page(path: Path) -> str:
    """The report's HTML, checked to load nothing: no src/href leaving the page but data: URIs
    and relative links, and the Content-Security-Policy in place."""
    html = path.read_text(encoding="utf-8")
    assert "default-src 'none'" in html
    for url in re.findall(r'(?:src|href)="([^"#][^"]*)"', html):
        assert url.startswith("data:") or "://" not in url, url
    return html


def node_ids(html: str) -> list[str]:
    """The node paths the page has a section for, in order."""
    return [unescape(i) for i in re.findall(r'<b class="node-id">([^<]*)</b>', html)]


def status_of(html: str, node_path: str) -> str:
    """The status the graph shows for a node."""
    found = re.search(rf'<g class="node st-([a-z_]+)"[^>]*data-node="{re.escape(node_path)}"', html)
    assert found, node_path
    return found.group(1)


def test_a_failed_run_says_where_and_why_and_keeps_secrets_masked(tmp_path: Path) -> None:
    secret = f"{LLM_KEY}-do-not-show"
    broken = node(
        "ask",
        "agent",
        provider="openai",
        name="model-ask",
        base_url="http://127.0.0.1:9/v1",
        api_key=secret,
        params={"retries": 0},
    )
    flow = write_flow(
        tmp_path,
        [scripted("draft", "a draft"), broken, scripted("never", "x")],
        [edge("draft", "ask"), edge("ask", "never")],
        start=["draft"],
    )
    run_dir = tmp_path / "run"
    code, _, err = invoke("run", str(flow), "--out", str(run_dir), "--task", "go", "--report")
    assert code == 4, err
    assert f"report: {run_dir / 'report.html'}" in err
    html = page(run_dir / "report.html")
    assert secret not in html and secret not in (run_dir / "events.jsonl").read_text()
    assert '<body class="run-failed">' in html
    assert "The run failed (exit 4)" in html
    failure = html.split('id="failure"', 1)[1].split("</section>", 1)[0]
    assert 'href="#' in failure and ">ask</a>" in failure  # the failed node, linked
    assert "127.0.0.1:9" in failure  # and why
    assert node_ids(html) == ["draft", "ask", "never"]
    assert [status_of(html, n) for n in ("draft", "ask", "never")] == ["ok", "failed", "not_run"]
    assert "a draft" in html


@pytest.mark.slow
def test_report_of_an_interrupted_run_from_run_report(tmp_path: Path) -> None:
    functions = tmp_path / "functions"
    functions.mkdir()
    (functions / "nap.py").write_text(
        textwrap.dedent(
            '''
            import time


            def nap(seconds: float) -> str:
                """Sleep for a while."""
                time.sleep(seconds)
                return "rested"
            '''
        )
    )
    workflow = tmp_path / "wf.yaml"
    workflow.write_text(
        textwrap.dedent(
            """
            graph:
              id: sleepy
              start: [first]
              nodes:
                - {id: first, type: agent, config: {provider: scripted, script: [warmed up]}}
                - id: sleeper
                  type: agent
                  config:
                    provider: scripted
                    script:
                      - tool_calls: [{name: nap, arguments: {seconds: 30}}]
                      - content: never reached
                    tooling:
                      - type: function
                        config: {tools: [{name: nap}], timeout: 60}
              edges:
                - {from: first, to: sleeper}
            """
        )
    )
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        [str(DEVALL), "run", str(workflow), "--out", str(run_dir), "--report"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert wait_for(lambda: any(e["kind"] == "tool.call" for e in events(run_dir)), 30)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert f"report: {run_dir / 'report.html'}" in err
    html = page(run_dir / "report.html")
    assert '<body class="run-interrupted">' in html
    assert "The run was interrupted (exit 130)" in html
    stopped = html.split('id="failure"', 1)[1].split("</section>", 1)[0]
    assert "Still running then:" in stopped and ">sleeper</a>" in stopped
    assert status_of(html, "first") == "ok" and status_of(html, "sleeper") == "interrupted"
    assert "nap" in html and "warmed up" in html
    # Made again from the same records by `devall report`, into a file elsewhere.
    other = tmp_path / "elsewhere" / "page.html"
    other.parent.mkdir()
    code, out, err = invoke("report", str(run_dir), "-o", str(other))
    assert (code, out) == (0, f"{other}\n"), err
    assert node_ids(page(other)) == node_ids(html)


def with_server(node_id: str, command: list[str], **config: Any) -> dict[str, Any]:
    """A scripted agent that calls `shaped` of a local server, then says `done`."""
    agent = scripted(node_id, "done")
    agent["config"]["script"] = [
        {"tool_calls": [{"name": "shaped", "arguments": {"mode": "right"}}]},
        {"content": "done"},
    ]
    server = {"command": command[0], "args": command[1:], **config}
    agent["config"]["tooling"] = [{"type": "mcp_local", "config": server}]
    return agent


def test_a_server_that_failed_to_start_leaves_its_last_log_lines(tmp_path: Path) -> None:
    """What `devall run` prints under the error is in result.json and the report, masked."""
    secret = "tok-settings-5f3c"
    script = tmp_path / "settings_server.py"
    script.write_text(
        "import os, sys\n"
        "print('loading settings', file=sys.stderr)\n"
        "token = os.environ['API_TOKEN']\n"
        "print(f'config file settings.toml not found (token {token})', file=sys.stderr)\n"
        "sys.exit(3)\n"
    )
    agent = with_server("a", [sys.executable, str(script)], env={"API_TOKEN": secret})
    flow = write_flow(tmp_path, [agent], [], start=["a"])
    run_dir = tmp_path / "run"
    code, _, err = invoke("run", str(flow), "--out", str(run_dir), "--task", "go")
    assert code == 4 and "config file settings.toml not found (token ***)" in err, err
    details = json.loads((run_dir / "result.json").read_text())["details"]
    cause = "config file settings.toml not found (token ***)"
    assert details == ["  | loading settings", f"  | {cause}"]
    code, _, err = invoke("report", str(run_dir))
    assert code == 0, err
    html = page(run_dir / "report.html")
    failure = unescape(html.split('id="failure"', 1)[1].split("</section>", 1)[0])
    assert "server 'settings_server' exited" in failure
    assert cause in failure and secret not in html


def test_a_tool_calls_boxes_are_labelled(tmp_path: Path) -> None:
    agent = with_server("a", [sys.executable, str(SERVERS_DIR / "raw_server.py")])
    flow = write_flow(tmp_path, [agent], [], start=["a"])
    run_dir = tmp_path / "run"
    code, _, err = invoke("run", str(flow), "--out", str(run_dir), "--task", "go", "--report")
    assert code == 0, err
    html = page(run_dir / "report.html")
    call = html.split('<details class="step tool', 1)[1].split("</details>", 1)[0]
    boxes = re.findall(r'<div class="box-label">([^<]*)</div>\s*<pre class="([^"]*)">([^<]*)', call)
    labelled = [(label, kind, unescape(text).split()) for label, kind, text in boxes]
    assert labelled[0] == ("arguments", "json args", ["{", '"mode":', '"right"', "}"])
    assert [(label, kind) for label, kind, _ in labelled[1:]] == [
        ("result", "text"),
        ("structured content", "json data"),
    ]
    assert labelled[2][2] == ["{", '"n":', "3", "}"]  # the data alone, not the raw block


def test_subgraph_nodes_appear_by_their_path(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    code, _, err = invoke("run", str(EXAMPLES / "subgraph_files.yaml"), "--out", str(run_dir))
    assert code == 0, err
    code, out, err = invoke("report", str(run_dir))
    assert (code, out) == (0, f"{run_dir / 'report.html'}\n"), err
    html = page(run_dir / "report.html")
    ids = node_ids(html)
    assert {"planner", "article", "article/writer", "article/polish/copyedit"} <= set(ids)
    assert status_of(html, "article/polish/headline") == "ok"
    assert '<g class="cluster' in html  # the subgraph drawn as a cluster


def test_dynamic_units_are_grouped_under_their_node(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    code, _, err = invoke(
        "run", str(EXAMPLES / "dynamic_map.yaml"), "--out", str(run_dir), "--report"
    )
    assert code == 0, err
    html = page(run_dir / "report.html")
    units = [i for i in node_ids(html) if i.startswith("researcher#")]
    assert len(units) >= 2, node_ids(html)
    assert status_of(html, "researcher") == "ok"
    assert "map over json_path" in html  # the dynamic edge's label


def test_report_of_no_run_directory_is_a_usage_error(tmp_path: Path) -> None:
    code, out, err = invoke("report", str(tmp_path / "missing"))
    assert (code, out) == (2, "")
    assert err.startswith("devall: error: ") and err.count("\n") <= 2
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = invoke("report", str(empty))
    assert code == 2 and "events.jsonl" in err


def test_damaged_records_still_give_a_page(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    flow = write_flow(
        tmp_path, [scripted("a", "alpha"), scripted("b", "beta")], [edge("a", "b")], start=["a"]
    )
    code, _, err = invoke("run", str(flow), "--out", str(run_dir))
    assert code == 0, err
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    # A run killed mid-write: no result.json, the last event cut in half, a stray line.
    (run_dir / "result.json").unlink()
    cut = [*lines[: len(lines) // 2], "not json", lines[len(lines) // 2][:10]]
    (run_dir / "events.jsonl").write_text("\n".join(cut))
    code, _, err = invoke("report", str(run_dir))
    assert code == 0, err
    html = page(run_dir / "report.html")
    assert '<body class="run-running">' in html and "no end in its records" in html
    assert "a" in node_ids(html)


def test_run_json_output_stays_one_document_with_report(tmp_path: Path) -> None:
    flow = write_flow(tmp_path, [scripted("a", "alpha")], [], start=["a"])
    run_dir = tmp_path / "run"
    code, out, err = invoke("run", str(flow), "--out", str(run_dir), "--json", "--report")
    assert code == 0, err
    assert json.loads(out)["status"] == "ok"
    assert (run_dir / "report.html").stat().st_mode & 0o777 == 0o600
