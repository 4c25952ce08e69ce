"""`devall init [DIR]`: a starter workflow that runs offline, its MCP server and a .env.example."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from devall_cli.cli.app import app
from devall_cli.cli.common import error_boundary, print_line, stderr_console
from devall_cli.errors import UsageError

WORKFLOW = """\
# A starter workflow: runs offline (no API key). A scripted agent calls the `rand_num` tool of
# the MCP server in mcp_server.py (started by devall over stdio); a second agent answers.
#   devall run workflow.yaml --task "Tell me my fortune"
# To use a real model, set `provider: openai` with base_url/api_key/name as in .env.example.
# The tool policy below is the recommended one (docs/policy.md): read-only tools run, every
# other call asks on the terminal (or --answers); in CI, `--approve never` refuses those calls
# unless allowed by name (`--allow-tool NAME`).
# workflow.schema.json lets editors (yaml-language-server) complete and check this file
# through the line below; `devall schema -o workflow.schema.json` refreshes it.
# yaml-language-server: $schema=workflow.schema.json
version: 0.4.0
graph:
  id: starter
  description: One agent draws a lucky number from a local MCP server; another writes a fortune.
  start: [lucky]
  end: [fortune]
  tool_policy:
    allow: [readOnlyHint]      # tools that say they change nothing run
    approve: ask               # any other call asks a person; with nobody to ask, it is refused
  nodes:
    - id: lucky
      type: agent
      config:
        provider: scripted
        name: scripted-lucky
        role: You draw lucky numbers with the rand_num tool.
        tooling:
          - type: mcp_local
            config:
              command: python          # the Python that has fastmcp (devall's virtualenv)
              args: [mcp_server.py]
              cwd: .                   # relative to this file
              wait_for_log: "MCP server ready"
              startup_timeout: 20
        script:
          - tool_calls:
              - name: rand_num
                arguments: {a: 1, b: 100}
          - content: "Your lucky number is {tool_result}. Task: {input}"
    - id: fortune
      type: agent
      config:
        provider: scripted
        name: scripted-fortune
        script:
          - content: "Fortune cookie says: {input}"
  edges:
    - from: lucky
      to: fortune
"""

SERVER = '''\
"""A small MCP server for the starter workflow: one tool, `rand_num`, over stdio."""

from __future__ import annotations

import os
import random
import sys

os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")

from fastmcp import FastMCP  # noqa: E402

mcp = FastMCP("starter server")


@mcp.tool(annotations={"readOnlyHint": True})  # it changes nothing: the tool policy lets it run
def rand_num(a: int, b: int) -> int:
    """Return a random integer between a and b, both included."""
    return random.randint(min(a, b), max(a, b))


if __name__ == "__main__":
    print("MCP server ready", file=sys.stderr, flush=True)  # what wait_for_log waits for
    mcp.run(transport="stdio", show_banner=False)
'''

ENV_EXAMPLE = """\
# Copy to .env and fill in to run agents on a real model (provider: openai):
#   base_url: ${BASE_URL}   api_key: ${API_KEY}   name: ${MODEL_NAME}
# devall reads .env from the workflow's folder (or --env-file PATH). Never commit .env.
BASE_URL=https://api.openai.com/v1
API_KEY=
MODEL_NAME=gpt-4o-mini
"""

TESTS = """\
# Test cases for workflow.yaml (docs/testing.md): each case runs the workflow on a task and
# checks what the run did. The starter runs offline, so these pass with no API key:
#   devall test workflow.test.yaml
# `replay: cassettes/<name>.jsonl` on a case replays a recorded run instead (no network, no
# server); `devall test --record` records it.
cases:
  - name: the fortune names the lucky number
    workflow: workflow.yaml
    task: Tell me my fortune
    expect:
      - output: {contains: "Fortune cookie says", regex: "lucky number is \\\\d+"}
      - tool: {name: rand_num, args: {a: 1, b: 100}, times: 1}
      - node: {id: fortune, visits: 1}
      - edge: {from: lucky, to: fortune}
      - budget: {model_calls: 3, tool_calls: 1, seconds: 60}
"""

SCHEMA_FILE = "workflow.schema.json"
FILES = {
    "workflow.yaml": WORKFLOW,
    "workflow.test.yaml": TESTS,
    "mcp_server.py": SERVER,
    ".env.example": ENV_EXAMPLE,
}


@app.command("init")
@error_boundary
def init_command(
    directory: Annotated[
        Path, typer.Argument(metavar="[DIR]", help="Folder to write into (created if needed).")
    ] = Path("."),
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing files.")] = False,
) -> None:
    """Write a starter workflow (offline scripted agent + an MCP server) and a .env.example.

    Also writes workflow.test.yaml, test cases for `devall test`, and workflow.schema.json
    (`devall schema`), which the workflow names for editors.
    """
    targets = {name: directory / name for name in (*FILES, SCHEMA_FILE)}
    existing = [str(path) for path in targets.values() if path.exists()]
    if existing and not force:
        raise UsageError(
            f"not overwriting {', '.join(existing)}",
            hint="choose another DIR, or pass --force to overwrite",
        )
    from devall_cli.workflow.json_schema import workflow_schema

    contents = {**FILES, SCHEMA_FILE: json.dumps(workflow_schema(), indent=2) + "\n"}
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for name, path in targets.items():
            path.write_text(contents[name], encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {directory}: {exc.strerror or exc}") from None
    console = stderr_console()
    for path in targets.values():
        print_line(console, f"wrote {path}")
    workflow = targets["workflow.yaml"]
    print_line(console, f'next: devall run {workflow} --task "Tell me my fortune"')
    print_line(console, f"      devall test {targets['workflow.test.yaml']}")
