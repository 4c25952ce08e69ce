"""`devall graph`: every demo and example workflow drawn as Mermaid, SVG and DOT, without a run."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from devall_cli.engine.graph_shape import shape_of
from devall_cli.graphview.shape import walk
from devall_cli.workflow.loader import load_workflow
from tests.cli.flows import edge, invoke, scripted, write_flow
from tests.conftest import REPO_ROOT

WORKFLOWS = REPO_ROOT / "workflows"
# Subgraph files are no workflow of their own: they are drawn inside the workflows that use them.
DRAWN = sorted(p for p in WORKFLOWS.rglob("*.yaml") if p.parent.name != "subgraphs")
SVG = "{http://www.w3.org/2000/svg}"


def node_paths(path: Path) -> list[str]:
    """Every node of the workflow, subgraph nodes as `outer/inner` paths."""
    names = set(re.findall(r"\$\{([A-Za-z_]\w*)", path.read_text()))
    environ = {name: "http://unset.invalid/" if "URL" in name else "x" for name in names}
    workflow = load_workflow(path, environ=environ)
    return [p for p, _ in walk(shape_of(workflow.graph))]


@pytest.mark.parametrize("path", DRAWN, ids=lambda p: str(p.relative_to(WORKFLOWS)))
def test_every_demo_workflow_is_drawn_in_each_format(path: Path) -> None:
    paths = node_paths(path)
    code, mermaid, err = invoke("graph", str(path))
    assert code == 0, err
    assert mermaid.startswith("flowchart TD\n")
    code, svg, err = invoke("graph", str(path), "--format", "svg")
    assert code == 0, err
    root = ET.fromstring(svg.split("\n", 1)[1])  # after the XML declaration
    drawn = {g.get("data-node") for g in root.iter(f"{SVG}g") if g.get("data-node")}
    assert drawn == set(paths)  # every node, those of subgraphs by their path
    code, dot, err = invoke("graph", str(path), "--format", "dot")
    assert code == 0, err
    assert dot.startswith("digraph ") and dot.rstrip().endswith("}")
    for node_id in {p.rsplit("/", 1)[-1] for p in paths}:
        assert node_id in mermaid and node_id in dot


def test_loops_conditions_and_subgraphs_are_visible() -> None:
    code, mermaid, _ = invoke("graph", str(WORKFLOWS / "examples" / "critic_loop.yaml"))
    assert code == 0
    assert "|\"keyword(none=['APPROVED'])\"|" in mermaid  # a condition as the edge's label
    assert '-.->|"no trigger"|' in mermaid
    code, svg, _ = invoke("graph", str(WORKFLOWS / "examples" / "critic_loop.yaml"), "-f", "svg")
    assert 'class="edge back"' in svg  # the loop's closing edge is drawn as one
    code, mermaid, _ = invoke("graph", str(WORKFLOWS / "examples" / "subgraph_files.yaml"))
    assert code == 0
    assert re.search(r'subgraph n\d+ \["article · subgraph', mermaid)
    assert re.search(r'subgraph n\d+ \["polish · subgraph', mermaid)  # nested twice
    code, dot, _ = invoke("graph", str(WORKFLOWS / "examples" / "subgraph_files.yaml"), "-f", "dot")
    assert dot.count("subgraph cluster_") == 2


def test_a_majority_vote_is_drawn_in_each_format() -> None:
    """Three voters and no edges: each format shows the vote they feed and the output it gives."""
    path = str(WORKFLOWS / "examples" / "majority_vote.yaml")
    code, mermaid, _ = invoke("graph", path)
    assert code == 0
    vote = re.search(r'(n\d+)\{\{"majority vote<br/>most common answer wins"\}\}', mermaid)
    assert vote, mermaid
    for voter in ("n1", "n2", "n3"):
        assert f"  {voter} --> {vote[1]}\n" in mermaid and f"  task_ --> {voter}\n" in mermaid
    assert f"  {vote[1]} --> output_\n" in mermaid
    code, dot, _ = invoke("graph", path, "-f", "dot")
    vote = re.search(r'(n\d+) \[label="majority vote\\nmost common answer wins", shape=hex', dot)
    assert code == 0 and vote, dot
    assert all(f"  {voter} -> {vote[1]};" in dot for voter in ("n1", "n2", "n3"))
    assert f"  {vote[1]} -> output;" in dot
    code, svg, _ = invoke("graph", path, "-f", "svg")
    root = ET.fromstring(svg.split("\n", 1)[1])
    boxes = [g for g in root.iter(f"{SVG}g") if "vote" in (g.get("class") or "").split()]
    assert code == 0 and len(boxes) == 1
    texts = [t.text for t in boxes[0].iter(f"{SVG}text")]
    assert texts == ["majority vote", "most common answer wins"]
    assert len(root.findall(f".//{SVG}path[@class='edge']")) == 3 + 3 + 1  # task, votes, output


def test_unset_placeholders_do_not_stop_the_drawing() -> None:
    code, mermaid, err = invoke("graph", str(WORKFLOWS / "demo_mcp.yaml"))
    assert code == 0, err
    assert "poet" in mermaid and "critic" in mermaid
    assert "devall: warning: not set, drawn without a value: API_KEY, BASE_URL" in err


def test_other_config_errors_are_reported_as_validate_does(tmp_path: Path) -> None:
    flow = write_flow(tmp_path, [scripted("a", "hi")], [edge("a", "ghost")], start=["a"])
    code, out, err = invoke("graph", str(flow))
    assert code == 3 and out == ""
    assert err.startswith("devall: error: ") and "ghost" in err
    code, _, err = invoke("graph", str(tmp_path / "missing.yaml"))
    assert code in (2, 3) and err.startswith("devall: error: ")


def test_out_file_takes_its_format_from_the_suffix(tmp_path: Path) -> None:
    flow = write_flow(
        tmp_path, [scripted("a", "hi"), scripted("b", "ho")], [edge("a", "b")], start=["a"]
    )
    for name, start in (
        ("g.svg", "<?xml"),
        ("g.dot", "digraph"),
        ("g.mmd", "flowchart"),
        ("g.picture", "<?xml"),
    ):
        code, out, err = invoke("graph", str(flow), "-o", str(tmp_path / name))
        assert (code, out) == (0, ""), err
        assert (tmp_path / name).read_text().startswith(start)
    code, _, _ = invoke("graph", str(flow), "-o", str(tmp_path / "g.txt"), "--format", "mermaid")
    assert (tmp_path / "g.txt").read_text().startswith("flowchart")
    code, _, err = invoke("graph", str(flow), "-o", str(tmp_path / "no" / "dir" / "g.svg"))
    assert code == 1 and err.startswith("devall: error: could not write")


def test_foreign_text_is_escaped_in_every_format(tmp_path: Path) -> None:
    nodes = [scripted("a", "hi"), scripted("b", "ho")]
    nodes[0]["description"] = '</title><script>alert(1)</script> "quoted" ]] -->'
    edges = [edge("a", "b", any=['x"]; A-->B; %%<b>'])]
    flow = write_flow(tmp_path, nodes, edges, start=["a"])
    code, svg, _ = invoke("graph", str(flow), "-f", "svg")
    assert code == 0 and "<script>" not in svg
    ET.fromstring(svg.split("\n", 1)[1])  # still well-formed
    code, mermaid, _ = invoke("graph", str(flow))
    assert code == 0 and '"]; A-->B' not in mermaid
    code, dot, _ = invoke("graph", str(flow), "-f", "dot")
    assert code == 0 and 'x"]' not in dot


def test_graph_and_report_import_no_network_or_server_library(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    started = {"kind": "run.started", "ts": 1.0, "run_id": "r", "workflow": "w", "task": "t"}
    finished = {"kind": "run.finished", "ts": 2.0, "run_id": "r", "status": "ok"}
    (run_dir / "events.jsonl").write_text(f"{json.dumps(started)}\n{json.dumps(finished)}\n")
    script = textwrap.dedent(
        f"""
        import sys
        from typer.testing import CliRunner
        from devall_cli.cli.app import app
        loaded = lambda *names: sorted(m for m in names if m in sys.modules)
        result = CliRunner().invoke(app, ["graph", {str(WORKFLOWS / "demo_offline.yaml")!r}])
        assert result.exit_code == 0, result.output
        print("graph:", loaded("fastmcp", "httpx", "mcp", "jinja2"))
        result = CliRunner().invoke(app, ["report", {str(run_dir)!r}])
        assert result.exit_code == 0, result.output
        print("report:", loaded("fastmcp", "httpx", "mcp"))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["graph: []", "report: []"]
