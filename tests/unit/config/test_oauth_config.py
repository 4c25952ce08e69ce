"""`auth:` of `mcp_remote`: every key parsed, each problem reported at its key, secrets masked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from devall_cli.errors import ConfigIssue
from devall_cli.nodes.agent_settings import AgentConfig
from devall_cli.tools.kinds.mcp_remote import McpRemoteConfig
from devall_cli.tools.kinds.oauth_settings import OAuthConfig, signing_algorithm
from devall_cli.workflow.loader import load_workflow, validate_workflow


def write(folder: Path, auth: Any, **remote: Any) -> Path:
    config = {"server": "https://mcp.example.test/mcp", "auth": auth, **remote}
    agent = {
        "provider": "scripted",
        "script": ["done"],
        "tooling": [{"type": "mcp_remote", "config": config}],
    }
    document = {"graph": {"id": "g", "start": ["a"], "nodes": [
        {"id": "a", "type": "agent", "config": agent},
    ]}}  # fmt: skip
    path = folder / "flow.yaml"
    path.write_text(json.dumps(document, indent=1))
    return path


def remote_of(path: Path, environ: dict[str, str] | None = None) -> McpRemoteConfig:
    flow = load_workflow(path, environ=environ or {})
    config = flow.graph.node("a").config
    assert isinstance(config, AgentConfig)
    remote = config.tooling[0].config
    assert isinstance(remote, McpRemoteConfig)
    return remote


def issues_of(path: Path) -> list[ConfigIssue]:
    workflow, issues = validate_workflow(path, environ={})
    assert workflow is None
    return [issue for issue in issues if issue.severity == "error"]


def ec_key_pem() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def test_defaults(tmp_path: Path) -> None:
    remote = remote_of(write(tmp_path, {"type": "oauth"}))
    assert remote.auth == OAuthConfig()
    assert remote.auth.grant == "authorization_code"


def test_every_key(tmp_path: Path) -> None:
    auth = {
        "type": "oauth",
        "grant": "client_credentials",
        "client_id": "${ID}",
        "client_secret": "${SECRET}",
        "token_endpoint_auth_method": "client_secret_post",
        "scopes": ["files:read", "files:write tools"],
        "redirect_port": 33418,
        "dpop": False,
    }
    environ = {"ID": "ci-client", "SECRET": "very-secret-value-1"}
    flow = load_workflow(write(tmp_path, auth), environ=environ)
    config = flow.graph.node("a").config
    assert isinstance(config, AgentConfig)
    remote = config.tooling[0].config
    assert isinstance(remote, McpRemoteConfig) and remote.auth is not None
    assert remote.auth.client_id == "ci-client"
    assert remote.auth.scopes == ("files:read", "files:write", "tools")
    assert remote.auth.redirect_port == 33418
    assert remote.auth.token_endpoint_auth_method == "client_secret_post"
    assert remote.auth.dpop is False
    # The secret is masked everywhere devall prints.
    assert "very-secret-value-1" not in flow.redactor.text("x very-secret-value-1 y")


def test_cimd_url_and_scopes_as_text(tmp_path: Path) -> None:
    auth = {
        "type": "oauth",
        "client_metadata_url": "https://client.example.test/devall.json",
        "scopes": "a b",
    }
    remote = remote_of(write(tmp_path, auth))
    assert remote.auth is not None
    assert remote.auth.client_metadata_url == "https://client.example.test/devall.json"
    assert remote.auth.scopes == ("a", "b")


def test_private_key_from_a_file_signs_with_es256(tmp_path: Path) -> None:
    pem = ec_key_pem()
    (tmp_path / "key.pem").write_text(pem)
    auth = {
        "type": "oauth",
        "grant": "client_credentials",
        "client_id": "signer",
        "private_key": "key.pem",
    }
    flow = load_workflow(write(tmp_path, auth), environ={})
    config = flow.graph.node("a").config
    assert isinstance(config, AgentConfig)
    remote = config.tooling[0].config
    assert isinstance(remote, McpRemoteConfig) and remote.auth is not None
    assert remote.auth.private_key == pem
    assert signing_algorithm(pem) == "ES256"
    body = pem.splitlines()[1]
    assert body not in flow.redactor.text(pem)


def test_every_problem_reported_at_its_key(tmp_path: Path) -> None:
    auth = {
        "type": "oauth2",
        "grant": "password",
        "client_secret": "a-secret-without-a-client",
        "client_metadata_url": "http://client.example.test/",
        "token_endpoint_auth_method": "magic",
        "scopes": [1, 2],
        "redirect_port": 70000,
        "dpop": "sometimes",
        "colour": "blue",
    }
    issues = issues_of(write(tmp_path, auth))
    where = {issue.path.rsplit(".", 1)[-1]: issue.message for issue in issues}
    assert "unknown auth type 'oauth2'" in where["type"]
    assert "grant must be one of" in where["grant"]
    assert "needs client_id" in where["client_secret"]
    assert "https://" in where["client_metadata_url"]
    assert "token_endpoint_auth_method must be one of" in where["token_endpoint_auth_method"]
    assert "list of scope names" in where["scopes"]
    assert "at most 65535" in where["redirect_port"]
    assert "dpop must be true, false or auto, got 'sometimes'" in where["dpop"]
    # Inside a tooling entry an unknown key is an error, as for the entry's other keys.
    assert "unknown key 'colour'" in where["colour"]
    assert all(issue.line for issue in issues)
    assert not any("a-secret-without-a-client" in issue.message for issue in issues)


def test_client_credentials_needs_a_client_that_authenticates(tmp_path: Path) -> None:
    issues = issues_of(write(tmp_path, {"type": "oauth", "grant": "client_credentials"}))
    (issue,) = issues
    assert issue.path.endswith("auth.grant")
    assert "needs client_id with client_secret or private_key" in issue.message


def test_a_bad_private_key_is_a_config_error(tmp_path: Path) -> None:
    pem = "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n"
    (tmp_path / "bad.pem").write_text(pem)
    auth = {"type": "oauth", "client_id": "c", "private_key": "bad.pem"}
    (issue,) = issues_of(write(tmp_path, auth))
    assert issue.path.endswith("auth.private_key")
    assert "not a PEM private key" in issue.message
    missing = {"type": "oauth", "client_id": "c", "private_key": "absent.pem"}
    (issue,) = issues_of(write(tmp_path, missing))
    assert "neither PEM text nor a readable file" in issue.message


def test_auth_must_be_a_mapping_with_a_type(tmp_path: Path) -> None:
    (issue,) = issues_of(write(tmp_path, "oauth"))
    assert issue.path.endswith("auth")
    (issue,) = issues_of(write(tmp_path, {"grant": "authorization_code"}))
    assert "type" in issue.path or "type" in issue.message


def test_an_authorization_header_is_replaced_with_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path, {"type": "oauth"}, headers={"Authorization": "Bearer x"})
    workflow, issues = validate_workflow(path, environ={})
    assert workflow is not None
    (warning,) = [issue for issue in issues if issue.severity == "warning"]
    assert "replaced by the OAuth access token" in warning.message


def test_auth_settings_are_part_of_the_session_identity(tmp_path: Path) -> None:
    plain = McpRemoteConfig(server="https://x.test/mcp")
    with_auth = McpRemoteConfig(server="https://x.test/mcp", auth=OAuthConfig())
    assert plain.identity() != with_auth.identity()
