"""The client the MCP conformance suite runs: it drives devall's own command line.

    conformance client --command "python tests/conformance/devall_client.py" --scenario NAME

The suite appends the server URL, names the scenario in MCP_CONFORMANCE_SCENARIO and passes
credentials and tool calls in MCP_CONFORMANCE_CONTEXT. This script writes a one-node workflow
whose `mcp_remote` tooling points at the URL (with `auth:` for the auth scenarios), lists the
server's tools with `devall tools list --json`, then calls the scenario's own tools with
`devall tools call`: the calls the suite names in its context, else every listed tool whose
required arguments are known (ARGUMENTS). Tokens are cached in a fresh directory and the
authorization URL is fetched without a browser (DEVALL_OAUTH_BROWSER=fetch). The skills
scenarios (sep-2640-client-*) then list and read the server's skills (`use_skills`). The exit
status is the first non-zero one of those devall commands, else 0. The commands run in this
process, one after the other, as the tests' `cli()` runs them (one import of devall for all).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The client metadata document URL the suite's CIMD scenario expects.
CIMD_URL = "https://conformance-test.local/client-metadata.json"
Listing = list[dict[str, Any]]


def _schema_of(name: str) -> Callable[[Listing], dict[str, Any]]:
    """Arguments that hand back the input schema devall listed for tool `name`."""
    return lambda tools: {"schema": next(t["input_schema"] for t in tools if t["name"] == name)}


# Arguments of the suite's tools that take required ones, by tool name: fixed ones, or a
# function of the listing (the schema echo must get back the schema devall received).
ARGUMENTS: dict[str, dict[str, Any] | Callable[[Listing], dict[str, Any]]] = {
    "add_numbers": {"a": 5, "b": 3},
    "valid_tool": {"region": "us-west1"},
    "json_schema_echo": _schema_of("json_schema_2020_12_tool"),
}
# Scenarios that need only some of their tools called (the others are there to be listed).
ONLY: dict[str, tuple[str, ...]] = {
    "json-schema-2020-12-preservation": ("json_schema_echo",),
}


def auth_config(scenario: str, context: dict[str, Any]) -> dict[str, Any]:
    """The `auth:` mapping for a scenario (secrets go through placeholders)."""
    auth: dict[str, Any] = {"type": "oauth"}
    if scenario == "auth/basic-cimd":
        auth["client_metadata_url"] = CIMD_URL
    if scenario.startswith("auth/client-credentials"):
        auth["grant"] = "client_credentials"
    if scenario == "auth/enterprise-managed-authorization":
        auth.update(grant="identity_assertion", id_token="${ID_TOKEN}")
        auth.update(idp_token_endpoint=context["idp_token_endpoint"])
        auth.update(idp_client_id=context["idp_client_id"])
    if scenario == "auth/wif-jwt-bearer":
        auth.update(grant="jwt_bearer", assertion="${WORKLOAD_JWT}")
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


def planned_calls(
    scenario: str, context: dict[str, Any], tools: Listing
) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls to make: the suite's own list, else each listed tool we can call."""
    if isinstance(context.get("toolCalls"), list):
        return [(call["name"], call.get("arguments") or {}) for call in context["toolCalls"]]
    calls = []
    for tool in tools:
        name = tool["name"]
        if scenario in ONLY and name not in ONLY[scenario]:
            continue
        known = ARGUMENTS.get(name)
        if known is None and (tool.get("input_schema") or {}).get("required"):
            continue  # required arguments nobody told us: listing it is the test
        arguments = known(tools) if callable(known) else dict(known or {})
        calls.append((name, arguments))
    return calls


@dataclass(frozen=True)
class Ran:
    """One devall command's exit status and output."""

    returncode: int
    stdout: str
    stderr: str


def devall(args: list[str], env: dict[str, str], folder: str) -> Ran:
    """`devall ARGS` run in this process, as the tests' `cli()` runs it: the commands of one
    scenario share one import of devall (and of the MCP client stack an OAuth server needs,
    about a second of CPU a command). What devall wrote on stderr is passed on."""
    from typer.testing import CliRunner

    from devall_cli.cli.app import app

    changes = {k: v for k, v in env.items() if os.environ.get(k) != v}
    with contextlib.chdir(folder):
        result = CliRunner().invoke(app, args, env=changes)
    sys.stderr.write(result.stderr)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        sys.stderr.write("".join(traceback.format_exception(result.exception)))
        return Ran(70, result.stdout, result.stderr)
    return Ran(result.exit_code, result.stdout, result.stderr)


def use_skills(path: Path, env: dict[str, str], folder: str, scenario: str) -> int:
    """The skills scenarios: `devall skills list`, then (but for no-prefetch, where nothing
    needs a skill) `devall skills read` of each skill and, once its SKILL.md verified, of its
    other files. devall refusing a file with its verification error is the behaviour the
    verify scenarios test: it counts as success, any other failure does not."""
    listed = devall(["skills", "list", str(path), "--json"], env, folder)
    if listed.returncode or scenario == "sep-2640-client-no-prefetch":
        return listed.returncode
    for skill in json.loads(listed.stdout):
        others = [f["path"] for f in skill["files"] or [] if f["path"] != "SKILL.md"]
        for file in ["SKILL.md", *others]:
            read = devall(["skills", "read", str(path), skill["name"], file], env, folder)
            if read.returncode == 1 and "failed verification" in read.stderr:
                break  # refused, content unused: the skill is not loaded, its files not read
            if read.returncode:
                return read.returncode
    return 0


def main(argv: list[str]) -> int:
    """List the scenario's tools with devall, call them; the first failing status, else 0."""
    url = argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    with tempfile.TemporaryDirectory(prefix="devall-conformance-") as folder:
        path = Path(folder) / "workflow.json"
        path.write_text(json.dumps(workflow(url, scenario, context)))  # JSON is YAML
        env = dict(os.environ)
        env.update(
            DEVALL_OAUTH_BROWSER="fetch",
            DEVALL_OAUTH_CACHE=str(Path(folder) / "oauth"),
            CLIENT_SECRET=str(context.get("client_secret", "")),
            PRIVATE_KEY=str(context.get("private_key_pem", "")),
            ID_TOKEN=str(context.get("idp_id_token", "")),
            WORKLOAD_JWT=str(context.get("valid_jwt", "")),
        )
        listed = devall(["tools", "list", str(path), "--json", "--schema"], env, folder)
        if listed.returncode:
            return listed.returncode
        status = 0
        for tool, arguments in planned_calls(scenario, context, json.loads(listed.stdout)):
            command = ["tools", "call", str(path), tool, "--args", json.dumps(arguments)]
            called = devall(command, env, folder)
            sys.stdout.write(called.stdout)
            status = status or called.returncode
        if scenario.startswith("sep-2640-client-"):
            status = status or use_skills(path, env, folder, scenario)
        return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
