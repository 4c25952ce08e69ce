"""The client the MCP conformance suite runs: it drives the real `devall` command.

    conformance client --command "python tests/conformance/devall_client.py" --scenario NAME

The suite appends the server URL, names the scenario in MCP_CONFORMANCE_SCENARIO and passes
credentials in MCP_CONFORMANCE_CONTEXT. This script writes a one-node workflow whose
`mcp_remote` tooling points at the URL (with `auth:` for the auth scenarios), then runs
`devall tools call` on the scenario's tool, tokens cached in a fresh directory and the
authorization URL fetched without a browser (DEVALL_OAUTH_BROWSER=fetch). devall's exit status
is this script's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

# The client metadata document URL the suite's CIMD scenario expects.
CIMD_URL = "https://conformance-test.local/client-metadata.json"
# The tool each scenario's server offers, and its arguments.
TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "tools_call": ("add_numbers", {"a": 5, "b": 3}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
    "sse-retry": ("test_reconnection", {}),
}
AUTH_TOOL = ("test-tool", {})
# Scenarios whose server offers no tool: devall initializes and lists.
LIST_ONLY = frozenset({"initialize"})


def auth_config(scenario: str, context: dict[str, Any]) -> dict[str, Any]:
    """The `auth:` mapping for a scenario (secrets go through placeholders)."""
    auth: dict[str, Any] = {"type": "oauth"}
    if scenario == "auth/basic-cimd":
        auth["client_metadata_url"] = CIMD_URL
    if scenario.startswith("auth/client-credentials"):
        auth["grant"] = "client_credentials"
    if "client_id" in context:
        auth["client_id"] = context["client_id"]
    if "client_secret" in context:
        auth["client_secret"] = "${CLIENT_SECRET}"
    if "private_key_pem" in context:
        auth["private_key"] = "${PRIVATE_KEY}"
    return auth


def workflow(url: str, scenario: str, context: dict[str, Any]) -> dict[str, Any]:
    """A workflow with one agent whose tooling is the scenario's server."""
    config: dict[str, Any] = {"server": url, "timeout": 20}
    if scenario.startswith("auth/"):
        config["auth"] = auth_config(scenario, context)
    if scenario.startswith("elicitation"):
        config["elicitation"] = "accept_defaults"  # answered with the schema's defaults
    agent = {
        "provider": "scripted",
        "name": "conformance",
        "tooling": [{"type": "mcp_remote", "config": config}],
        "script": ["done"],
    }
    graph = {"id": "conformance", "start": ["client"], "nodes": [
        {"id": "client", "type": "agent", "config": agent},
    ]}  # fmt: skip
    return {"version": "0.4.0", "graph": graph}


def main(argv: list[str]) -> int:
    """Run devall against the scenario's server; devall's exit status."""
    url = argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    tool, arguments = TOOLS.get(scenario, AUTH_TOOL)
    with tempfile.TemporaryDirectory(prefix="devall-conformance-") as folder:
        path = Path(folder) / "workflow.json"
        path.write_text(json.dumps(workflow(url, scenario, context)))  # JSON is YAML
        env = dict(os.environ)
        env.update(
            DEVALL_OAUTH_BROWSER="fetch",
            DEVALL_OAUTH_CACHE=str(Path(folder) / "oauth"),
            CLIENT_SECRET=str(context.get("client_secret", "")),
            PRIVATE_KEY=str(context.get("private_key_pem", "")),
        )
        command = [sys.executable, "-m", "devall_cli", "tools"]
        if scenario in LIST_ONLY:  # a server without tools: initialize and list
            command += ["list", str(path)]
        else:
            command += ["call", str(path), tool, "--args", json.dumps(arguments)]
        return subprocess.run(command, env=env, cwd=folder, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))
