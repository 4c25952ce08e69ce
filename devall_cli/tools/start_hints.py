"""How to fix a server that did not start, where devall can tell from what it saw.

Each function words the hint for one tooling type (the descriptor names it); `where` is the
path of the tooling entry's `config` in the workflow (`graph.nodes[0].config.tooling[0].config`).
This module is light: it imports neither fastmcp nor httpx.
"""

from __future__ import annotations

import os
import re
from pathlib import PurePath
from typing import TYPE_CHECKING

from devall_cli.errors import DevallError

if TYPE_CHECKING:  # the kinds import this module to word their hints
    from devall_cli.tools.kinds.mcp_local import McpLocalConfig
    from devall_cli.tools.kinds.mcp_remote import McpRemoteConfig

_MISSING_MODULE = re.compile(r"No module named '([^']+)'")
_MISSING_FILE = re.compile(r"can't open file|No such file or directory|ENOENT|Cannot find module")
# A start that ended this way may just have been slow.
_SLOW_START = frozenset({"startup_timeout", "handshake_timeout"})
_VENV = "activate the virtualenv that has the server's packages (`. .venv/bin/activate`)"


def local_start_hint(settings: McpLocalConfig, error: DevallError, where: str) -> str:
    """A hint for a local server that could not be started, or ''."""
    from devall_cli.tools.kinds.mcp_local import fetches_package  # which imports this module

    status = str(getattr(error, "status", ""))
    tail = "\n".join(getattr(error, "log_tail", ()))
    missing = _MISSING_MODULE.search(tail)
    if missing:
        return (
            f"the server's Python has no module '{missing.group(1)}': {_VENV} before running "
            f"devall, or set `command:` in {where} to that virtualenv's python"
        )
    if status == "spawn_failed" and "command not found" in error.message:
        if _is_python(settings.command):
            return (
                f"{_VENV} so that `{settings.command}` is found, or give the interpreter's "
                f"full path in `command:` in {where}"
            )
        return f"install `{settings.command}` or give its full path in `command:` in {where}"
    if "working directory not found" in error.message:
        return f"correct `cwd:` in {where} (a relative cwd is read from the workflow's folder)"
    if status == "exited" and settings.cwd is None and _MISSING_FILE.search(tail):
        return (
            f"the server ran in {os.getcwd()}, where its files are not: set `cwd:` in {where} "
            "to the folder its paths are relative to (relative to the workflow's folder)"
        )
    if status in _SLOW_START and fetches_package(settings.command, settings.args):
        return _fetching_hint(settings, error, where)
    if status == "startup_timeout" and settings.wait_for_log:
        return (
            "compare `wait_for_log:` with the server's log lines (servers/<id>.log of the run), "
            f"or raise `startup_timeout:` in {where}"
        )
    return ""


def _fetching_hint(settings: McpLocalConfig, error: DevallError, where: str) -> str:
    """`npx -y pkg` and its kin download the package on a first start, which can be slow."""
    program = PurePath(settings.command).name
    if where == "the command line":  # probe bounds an ad-hoc server's start by its --timeout
        longer = "`--startup-timeout SECONDS` (`--timeout SECONDS` for probe)"
    else:
        longer = f"`startup_timeout:` in {where}"
    server_id = getattr(error, "server_id", "") or "<id>"
    return (
        f"`{program}` may still be downloading the package (a first start can take minutes): "
        f"give it longer with {longer}, or run the command once by hand to fill its cache; "
        f"what it printed is in the server's log (servers/{server_id}.log in the run's folder)"
    )


def remote_start_hint(settings: McpRemoteConfig, error: DevallError, where: str) -> str:
    """A hint for a remote server that could not be reached, or ''."""
    status = str(getattr(error, "status", ""))
    if status == "unreachable":
        return (
            f"start the MCP server that should answer at {settings.server}, "
            f"or correct `server:` in {where}"
        )
    if status in ("http_401", "http_403"):
        return (
            "the server refused the request: "
            f"give the credentials it expects in `headers:` in {where}"
        )
    if status == "handshake_timeout":
        return (
            f"check that {settings.server} is an MCP endpoint (streamable HTTP; SSE when the "
            f"path ends in /sse), or raise `timeout:` in {where}"
        )
    return ""


def _is_python(command: str) -> bool:
    return re.fullmatch(r"python[0-9.]*", PurePath(command).name) is not None
