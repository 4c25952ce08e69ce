"""How-to-fix hints for servers that did not start and model requests that failed."""

from __future__ import annotations

import httpx

from devall_cli.errors import ServerStartError, ServerUnreachableError
from devall_cli.providers.http_client import translate_httpx_error
from devall_cli.tools.kinds.mcp_local import McpLocalConfig
from devall_cli.tools.kinds.mcp_remote import McpRemoteConfig, remote_name
from devall_cli.tools.start_hints import local_start_hint, remote_start_hint

WHERE = "graph.nodes[0].config.tooling[0].config"


def test_missing_module_says_activate_the_venv() -> None:
    error = ServerStartError(
        "server s exited", status="exited", log_tail=["ModuleNotFoundError: No module named 'x'"]
    )
    hint = local_start_hint(McpLocalConfig(command="python", args=("s.py",)), error, WHERE)
    assert "no module 'x'" in hint
    assert "activate the virtualenv" in hint
    assert WHERE in hint


def test_missing_file_without_cwd_says_set_cwd() -> None:
    tail = ["python: can't open file '/x/server.py': [Errno 2] No such file or directory"]
    error = ServerStartError("server s exited", status="exited", log_tail=tail)
    hint = local_start_hint(McpLocalConfig(command="python", args=("server.py",)), error, WHERE)
    assert "set `cwd:`" in hint


def test_python_not_found_says_activate_the_venv() -> None:
    error = ServerStartError("server s: command not found: python3", status="spawn_failed")
    hint = local_start_hint(McpLocalConfig(command="python3"), error, WHERE)
    assert "activate the virtualenv" in hint


def test_other_command_not_found_says_install_it() -> None:
    error = ServerStartError("server s: command not found: npx", status="spawn_failed")
    assert "install `npx`" in local_start_hint(McpLocalConfig(command="npx"), error, WHERE)


def test_unreachable_remote_says_start_the_server() -> None:
    settings = McpRemoteConfig(server="http://127.0.0.1:8009/mcp")
    hint = remote_start_hint(settings, ServerUnreachableError("refused"), WHERE)
    assert hint.startswith("start the MCP server")
    assert "http://127.0.0.1:8009/mcp" in hint


def test_remote_id_is_host_and_port_as_written() -> None:
    assert remote_name(McpRemoteConfig(server="http://127.0.0.1:8009/mcp")) == "127.0.0.1:8009"
    assert remote_name(McpRemoteConfig(server="https://example.org/mcp")) == "example.org"


def test_model_401_says_set_api_key() -> None:
    request = httpx.Request("POST", "http://127.0.0.1:1/v1")
    response = httpx.Response(401, request=request)
    error = translate_httpx_error(
        httpx.HTTPStatusError("401", request=request, response=response), "http://127.0.0.1:1/v1"
    )
    assert "API_KEY" in error.hint


def test_unreachable_model_says_start_it() -> None:
    error = translate_httpx_error(httpx.ConnectError("refused"), "http://127.0.0.1:1/v1")
    assert error.hint.startswith("start the model server at http://127.0.0.1:1/v1")
