"""`auth:` keys of the jwt_bearer and identity_assertion grants: parsed, checked, masked."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from devall_cli.tools.kinds.oauth_settings import OAuthConfig
from tests.helpers import cli
from tests.unit.config.test_oauth_config import remote_of, write


def jwt(claims: dict[str, str]) -> str:
    """An unsigned JWT-shaped token (devall reads its claims only to key the cache)."""
    part = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"eyJhbGciOiJFUzI1NiJ9.{part}.c2lnbmF0dXJl"


def test_bad_grant_keys_are_config_errors_at_their_key(tmp_path: Path) -> None:
    auth = {
        "type": "oauth",
        "grant": "identity_assertion",
        "client_id": "mcp-client",
        "id_token_file": "absent.jwt",
        "assertion": "${WORKLOAD}",
        "idp_token_endpoint": "idp.example.test/token",
        "idp_client_id": "at-idp",
    }
    result = cli("validate", str(write(tmp_path, auth)), env={"WORKLOAD": "w-secret-123"})
    assert result.returncode == 3
    lines = [line for line in result.stderr.splitlines() if "error:" in line]
    assert len(lines) == 3
    assert "flow.yaml:" in lines[0] and all(".config.auth." in line for line in lines)
    assert any("auth.id_token_file: id_token_file cannot be read" in line for line in lines)
    assert any("auth.assertion: assertion is only for grant jwt_bearer" in line for line in lines)
    assert any("auth.idp_token_endpoint: idp_token_endpoint must be" in line for line in lines)
    assert "w-secret-123" not in result.stderr
    # A grant without its token, or without a client, is reported at `grant`.
    bare = cli("validate", str(write(tmp_path, {"type": "oauth", "grant": "jwt_bearer"})))
    assert bare.returncode == 3
    assert "auth.grant: grant jwt_bearer needs assertion (text) or assertion_file" in bare.stderr
    assert "auth.grant: grant jwt_bearer needs client_id" in bare.stderr


def test_a_token_file_is_read_masked_and_keys_the_cache(tmp_path: Path) -> None:
    token = jwt({"iss": "https://ci.example.test", "sub": "repo:acme/app"})
    (tmp_path / "token.jwt").write_text(token + "\n")
    auth = {
        "type": "oauth",
        "grant": "jwt_bearer",
        "client_id": "ci-workload",
        "assertion_file": "token.jwt",
    }
    remote = remote_of(write(tmp_path, auth))
    assert remote.auth is not None and remote.auth.assertion is not None
    assert remote.auth.assertion.token.read() == token
    (tmp_path / "token.jwt").write_text(jwt({"iss": "https://ci.example.test", "sub": "x"}))
    assert remote.auth.assertion.token.read() != token  # read again: workload tokens rotate
    key = remote.auth.cache_key("https://mcp.example.test/mcp")
    assert key.endswith("https://ci.example.test repo:acme/app")
    other = OAuthConfig(grant="jwt_bearer", client_id="ci-workload")
    assert other.cache_key("https://mcp.example.test/mcp") != key
    # The token never shows in the config's masked output.
    listed = cli("validate", str(tmp_path / "flow.yaml"))
    assert listed.returncode == 0 and token not in listed.stdout + listed.stderr
