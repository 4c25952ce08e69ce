"""Secrets never survive redaction: known values, credential keys, and credentials in URLs."""

from __future__ import annotations

from devall_cli.config.model import (
    AgentConfig,
    McpLocalConfig,
    McpRemoteConfig,
    NodeConfig,
    ToolingConfig,
)
from devall_cli.trace.redact import Redactor, secret_key
from tests.unit.engine.builders import workflow


def test_known_secrets_are_masked_wherever_they_occur() -> None:
    redactor = Redactor(["s3cr3t-value", "", "   "])
    assert redactor.text("key=s3cr3t-value; again s3cr3t-value.") == "key=***; again ***."
    assert redactor.text("nothing here") == "nothing here"


def test_the_longest_secret_wins_when_secrets_overlap() -> None:
    redactor = Redactor(["abc", "abcdef"])
    assert redactor.text("xabcdefx") == "x***x"


def test_a_bearer_header_value_also_masks_the_bare_token() -> None:
    redactor = Redactor(["Bearer tok-123456"])
    assert redactor.text("sent tok-123456") == "sent ***"


def test_values_are_redacted_recursively() -> None:
    redactor = Redactor(["hunter22"])
    value = {
        "args": ["pw is hunter22", {"deep": ("hunter22",)}],
        "count": 3,
        "flag": True,
    }
    assert redactor.value(value) == {
        "args": ["pw is ***", {"deep": ["***"]}],
        "count": 3,
        "flag": True,
    }


def test_credential_keys_are_masked_but_token_counters_are_not() -> None:
    redactor = Redactor()
    value = {
        "headers": {"Authorization": "Basic Zm9vOmJhcg==", "Accept": "text/plain"},
        "api_key": "unknown-key",
        "X-API-Key": "k",
        "github_token": "ghp_x",
        "password": "p",
        "client_secret": {"nested": "x"},
        "usage": {"prompt_tokens": 10, "total_tokens": 12, "max_tokens": 100},
        "token": "",
    }
    masked = redactor.value(value)
    assert masked["headers"] == {"Authorization": "***", "Accept": "text/plain"}
    assert masked["api_key"] == masked["X-API-Key"] == masked["github_token"] == "***"
    assert masked["password"] == masked["client_secret"] == "***"
    assert masked["usage"] == {"prompt_tokens": 10, "total_tokens": 12, "max_tokens": 100}
    assert masked["token"] == ""
    assert not secret_key("tokens") and not secret_key("keyword")


def test_credentials_in_urls_are_masked() -> None:
    redactor = Redactor()
    text = "connect https://alice:pa55word@example.test/mcp?access_token=abc123&page=2 now"
    assert redactor.text(text) == (
        "connect https://alice:***@example.test/mcp?access_token=***&page=2 now"
    )
    assert redactor.text("GET /v1?key=AIza123") == "GET /v1?key=***"


def test_for_workflow_collects_api_keys_headers_and_secret_env() -> None:
    tooling = (
        ToolingConfig(
            type="mcp_remote",
            config=McpRemoteConfig(server="http://127.0.0.1:1/mcp", headers={"X-Auth": "hdr-val"}),
        ),
        ToolingConfig(
            type="mcp_local",
            config=McpLocalConfig(command="srv", env={"DB_PASSWORD": "dbpass", "DEBUG": "1"}),
        ),
    )
    config = AgentConfig(provider="openai", name="m", api_key="sk-live-1", tooling=tooling)
    flow = workflow([NodeConfig(id="A", type="agent", config=config)], secrets=["from-var"])
    redactor = Redactor.for_workflow(flow)
    text = "sk-live-1 hdr-val dbpass from-var DEBUG=1"
    assert redactor.text(text) == "*** *** *** *** DEBUG=1"
