"""`devall tools lock|diff`, `probe --locked` and `run --locked`, against a real local server
whose tools a test changes between starts (raw_server.py --tools-file)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from tests.cli.mcp_targets import raw_tools_workflow
from tests.helpers import cli
from tests.servers.serve import SERVERS_DIR


def schema(*required: str, **properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


TEXT = {"type": "string"}
# The locked surface: every tool a change below reaches.
TOOLS = [
    {
        "name": "search",
        "description": "Search the notes.",
        "inputSchema": schema(
            "query",
            query=TEXT,
            mode={"enum": ["fast", "deep"]},
            limit={"type": ["integer", "null"]},
            legacy=TEXT,
        ),
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "wipe",
        "description": "Wipe a note.",
        "inputSchema": schema("path", path=TEXT),
        "annotations": {"destructiveHint": False},
    },
    {"name": "old_name", "description": "Renamed later.", "inputSchema": schema("x", x=TEXT)},
    {"name": "gone", "description": "Removed later.", "inputSchema": schema()},
]


def changed(*, breaking: bool = True) -> list[dict[str, Any]]:
    """The surface after a release: compatible changes only, or breaking ones too."""
    search = json.loads(json.dumps(TOOLS[0]))
    search["description"] = "Search the notes, faster."
    search["inputSchema"]["properties"]["tag"] = TEXT  # a new optional property
    tools = [search, *TOOLS[1:]]
    if not breaking:
        return tools
    props = search["inputSchema"]["properties"]
    props["page"] = {"type": "integer"}
    search["inputSchema"]["required"].append("page")
    del props["legacy"]
    props["limit"] = {"type": "integer"}
    props["mode"] = {"enum": ["fast"]}
    search.pop("annotations")
    wipe = {**TOOLS[1], "annotations": {"destructiveHint": True}}
    renamed = {**TOOLS[2], "name": "new_name"}
    fresh = {"name": "fresh", "description": "New.", "inputSchema": schema()}
    return [search, wipe, renamed, fresh]


def setup(tmp_path: Path) -> Path:
    """wf.yaml with one local server listing tools.json (TOOLS), and its lockfile written."""
    workflow = raw_tools_workflow(tmp_path, TOOLS)
    done = cli("tools", "lock", str(workflow))
    assert done.returncode == 0, done.stderr
    return workflow


def release(tmp_path: Path, tools: list[dict[str, Any]]) -> None:
    (tmp_path / "tools.json").write_text(json.dumps(tools))


def test_an_unchanged_surface_has_no_drift_and_locks_to_the_same_bytes(tmp_path: Path) -> None:
    workflow = setup(tmp_path)
    lock = tmp_path / "devall.lock"
    first = lock.read_bytes()
    document = json.loads(first)
    assert document["version"] == 1
    notes = document["servers"]["notes"]
    assert notes["server"] == {"name": "raw server", "version": "1"}
    assert sorted(notes["tools"]) == ["gone", "old_name", "search", "wipe"]
    assert notes["tools"]["search"]["annotations"] == {"readOnlyHint": True}
    assert first.decode() == json.dumps(document, indent=2, sort_keys=True) + "\n"
    diff = cli("tools", "diff", str(workflow))
    assert diff.returncode == 0, diff.stderr
    assert diff.stdout.splitlines() == ["server notes: unchanged", f"no drift from {lock}"]
    again = cli("tools", "lock", str(workflow))
    assert again.returncode == 0
    assert "unchanged" in again.stderr
    assert lock.read_bytes() == first


def test_each_breaking_change_is_detected_and_compatible_ones_are_not_breaking(
    tmp_path: Path,
) -> None:
    workflow = setup(tmp_path)
    release(tmp_path, changed())
    done = cli("tools", "diff", str(workflow), "--json")
    assert done.returncode == 7, done.stderr
    assert "devall: error: the tools drifted from" in done.stderr
    document = json.loads(done.stdout)
    found = {(c["tool"], c["kind"], c["path"]): c["breaking"]
             for c in document["servers"][0]["changes"]}
    p = "input_schema.properties"
    assert found == {
        ("search", "description", "description"): False,
        ("search", "input_schema", f"{p}.tag"): False,
        ("search", "input_schema", f"{p}.page"): True,  # a new required property
        ("search", "input_schema", f"{p}.legacy"): True,  # a property removed
        ("search", "input_schema", f"{p}.limit.type"): True,  # null taken out of the union
        ("search", "input_schema", f"{p}.mode.enum"): True,  # an enum value removed
        ("search", "annotations", "annotations.readOnlyHint"): True,
        ("wipe", "annotations", "annotations.destructiveHint"): True,
        ("old_name", "tool_renamed", ""): True,
        ("gone", "tool_removed", ""): True,
        ("fresh", "tool_added", ""): False,
    }
    assert (document["ok"], document["breaking"], document["compatible"]) == (False, 8, 3)
    text = cli("tools", "diff", str(workflow)).stdout
    assert f"  ~ search: {p}.page: new required property 'page'  [breaking]" in text
    assert "  + fresh: tool added\n" in text
    assert "  - gone: tool removed  [breaking]" in text


def test_compatible_drift_passes_unless_strict(tmp_path: Path) -> None:
    workflow = setup(tmp_path)
    release(tmp_path, changed(breaking=False))
    done = cli("tools", "diff", str(workflow))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].endswith(": 0 breaking, 2 compatible")
    assert cli("tools", "diff", str(workflow), "--strict").returncode == 7


def test_probe_locked_reports_drift_in_json_table_and_junit(tmp_path: Path) -> None:
    workflow = setup(tmp_path)
    release(tmp_path, changed())
    done = cli("probe", str(workflow), "--locked", "--json", "--junit", "probe.xml")
    assert done.returncode == 7, done.stderr
    document = json.loads(done.stdout)
    assert document["ok"] is False
    row = document["servers"][0]
    assert row["ok"] is True  # healthy, but drifted
    assert (row["drift"]["status"], row["drift"]["breaking"]) == ("changed", 8)
    failure = ElementTree.parse("probe.xml").getroot().find("testcase/failure")
    assert failure is not None and failure.get("type") == "drift"
    table = cli("probe", str(workflow), "--locked")
    assert table.returncode == 7
    assert "8 breaking, 3 compatible" in table.stdout  # the drift column
    assert "drift" not in cli("probe", str(workflow)).stdout  # only with --locked


def test_run_locked_refuses_breaking_drift_and_runs_on_compatible(tmp_path: Path) -> None:
    workflow = setup(tmp_path)
    release(tmp_path, changed())
    refused = cli("run", str(workflow), "--task", "hi", "--locked")
    assert refused.returncode == 7
    assert refused.stdout == ""
    assert "  - gone: tool removed  [breaking]" in refused.stderr
    assert "the run was not started" in refused.stderr
    assert not (tmp_path / "logs").exists()  # nothing was run
    release(tmp_path, changed(breaking=False))
    ran = cli("run", str(workflow), "--task", "hi", "--locked")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "done\n"
    assert "devall: warning: the tools drifted from" in ran.stderr


def test_a_missing_or_malformed_lockfile_is_a_located_error(tmp_path: Path) -> None:
    workflow = setup(tmp_path)
    (tmp_path / "bad.lock").write_text('{\n  "version": 1,\n  "servers": {,}\n}\n')
    done = cli("probe", str(workflow), "--lock", "bad.lock")
    assert done.returncode == 3
    assert done.stderr.splitlines() == [
        "devall: error: bad.lock:3:15: not valid JSON: Expecting property name enclosed in "
        "double quotes"
    ]
    missing = cli("tools", "diff", str(workflow), "--lock", "none.lock")
    assert missing.returncode == 3
    assert missing.stderr.startswith("devall: error: none.lock: no lockfile here")
    assert "Traceback" not in missing.stderr


def test_an_unreachable_server_exits_4(tmp_path: Path) -> None:
    setup(tmp_path)
    exits = f"{sys.executable} {SERVERS_DIR / 'exit_at_once_server.py'}"
    done = cli("tools", "diff", "--command", exits, "--lock", "devall.lock")
    assert done.returncode == 4, done.stderr
