"""OAuth 2.1 against a real authorization server on loopback (tests/servers/oauth_server.py).

Each test runs `devall tools call` (the real CLI) on a workflow whose `mcp_remote` has `auth:`,
with DEVALL_OAUTH_BROWSER=fetch (the fixture approves at once) and a token cache of its own, then
reads back what the server saw (`GET /_log`): discovery, registration, PKCE, the grant, the
client authentication, refresh and step-up.
"""

from __future__ import annotations

import json
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from devall_cli.cli.app import app
from tests.helpers import invoke as invoke  # re-exported
from tests.servers.serve import SERVERS_DIR, ServerProcess

OAUTH_SERVER = SERVERS_DIR / "oauth_server.py"
SECRET = "s3cret-of-the-ci-client"


@pytest.fixture(autouse=True)
def _oauth_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "oauth-cache"
    monkeypatch.setenv("DEVALL_OAUTH_CACHE", str(cache))
    monkeypatch.setenv("DEVALL_OAUTH_BROWSER", "fetch")
    monkeypatch.delenv("DEVALL_OAUTH_TIMEOUT", raising=False)
    return cache


@pytest.fixture(scope="module")
def shared_server() -> Iterator[ServerProcess]:
    with ServerProcess(OAUTH_SERVER) as process:
        yield process


@pytest.fixture
def serve(shared_server: ServerProcess) -> Any:
    """Set the shared server's options (it forgets every client, token and log record)."""

    def start(*args: str) -> ServerProcess:
        answer = httpx.post(f"http://127.0.0.1:{shared_server.port}/_reset", json=list(args))
        answer.raise_for_status()
        return shared_server

    return start


def server_log(server: ServerProcess) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = httpx.get(f"http://127.0.0.1:{server.port}/_log").json()
    return records


def of(records: list[dict[str, Any]], event: str) -> list[dict[str, Any]]:
    return [r for r in records if r["event"] == event]


def workflow(folder: Path, url: str, **auth: Any) -> Path:
    """A one-agent workflow whose only tooling is the protected server."""
    config = {"server": url, "timeout": 10, "auth": {"type": "oauth", **auth}}
    agent = {
        "provider": "scripted",
        "script": ["done"],
        "tooling": [{"type": "mcp_remote", "config": config}],
    }
    document = {"graph": {"id": "auth", "start": ["a"], "nodes": [
        {"id": "a", "type": "agent", "config": agent},
    ]}}  # fmt: skip
    path = folder / "flow.yaml"
    path.write_text(json.dumps(document))
    return path


def call(path: Path, tool: str = "whoami", *extra: str) -> tuple[int, str, str]:
    arguments = '{"text": "hello"}' if tool == "echo" else "{}"
    command = ["tools", "call", str(path), tool, "--args", arguments, *extra]
    result = CliRunner().invoke(app, command)
    return result.exit_code, result.stdout, result.stderr


def tokens_in(cache: Path) -> list[str]:
    found: list[str] = []
    for file in cache.glob("*.json"):
        tokens = json.loads(file.read_text()).get("tokens") or {}
        found += [tokens[k] for k in ("access_token", "refresh_token") if k in tokens]
    return found


def test_code_grant_discovers_registers_uses_pkce_and_caches(
    serve: Any, tmp_path: Path, _oauth_env: Path
) -> None:
    server = serve("--scopes", "files:read tools")
    path = workflow(tmp_path, server.url)
    code, out, err = call(path, "echo")
    assert code == 0, err
    assert out == "hello\n"
    log = server_log(server)
    assert next(r["status"] for r in of(log, "mcp")) == 401
    assert of(log, "prm") and of(log, "asm")
    (registration,) = of(log, "register")
    assert registration["requested_method"] == "none"
    assert registration["redirect_uris"][0].startswith("http://127.0.0.1:")
    (authorize,) = of(log, "authorize")
    assert authorize["code_challenge_method"] == "S256"
    assert authorize["scope"] == "files:read tools"  # scopes_supported, nothing configured
    assert authorize["resource"] == server.url  # RFC 8707
    (token,) = of(log, "token")
    assert token["grant_type"] == "authorization_code" and "error" not in token
    # The cache: one file, 0600 in a 0700 directory, holding the tokens.
    (file,) = list(_oauth_env.glob("*.json"))
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert stat.S_IMODE(_oauth_env.stat().st_mode) == 0o700
    cached = tokens_in(_oauth_env)
    assert len(cached) == 2
    assert not any(value in out + err for value in cached)
    # A second command uses the cached token: no new registration nor authorization.
    code, out, err = call(path)
    assert code == 0, err
    assert out == "authorized\n"
    log = server_log(server)
    assert len(of(log, "register")) == 1 and len(of(log, "authorize")) == 1


def test_configured_scopes_and_preregistered_public_client(serve: Any, tmp_path: Path) -> None:
    server = serve("--scopes", "a b c", "--no-dcr", "--client", "fixed", "--client-auth-method",
                   "none")  # fmt: skip
    path = workflow(tmp_path, server.url, client_id="fixed", scopes=["b"])
    code, _, err = call(path)
    assert code == 0, err
    log = server_log(server)
    assert not of(log, "register")
    (authorize,) = of(log, "authorize")
    assert authorize["client_id"] == "fixed" and authorize["scope"] == "b"


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
def test_client_credentials_with_a_secret(serve: Any, tmp_path: Path, method: str) -> None:
    server = serve("--client", f"ci:{SECRET}", "--auth-methods", method, "--scopes", "tools")
    path = workflow(
        tmp_path, server.url, grant="client_credentials", client_id="ci", client_secret=SECRET
    )
    code, out, err = call(path)
    assert code == 0, err
    assert out == "authorized\n"
    log = server_log(server)
    assert not of(log, "authorize") and not of(log, "register")
    (token,) = of(log, "token")
    assert token["grant_type"] == "client_credentials"
    assert token["auth_method"] == method  # chosen from token_endpoint_auth_methods_supported
    assert token["resource"] == server.url


def _key_pair(folder: Path, kind: str) -> tuple[Path, Path]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    key: Any = (
        ec.generate_private_key(ec.SECP256R1())
        if kind == "ec"
        else rsa.generate_private_key(public_exponent=65537, key_size=2048)
    )
    private = folder / f"{kind}-key.pem"
    public = folder / f"{kind}-pub.pem"
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return private, public


@pytest.mark.parametrize(("kind", "alg"), [("ec", "ES256"), ("rsa", "RS256")])
def test_client_credentials_with_private_key_jwt(
    serve: Any, tmp_path: Path, kind: str, alg: str
) -> None:
    private, public = _key_pair(tmp_path, kind)
    server = serve("--client-key", f"signer:{public}", "--auth-methods", "private_key_jwt")
    path = workflow(
        tmp_path,
        server.url,
        grant="client_credentials",
        client_id="signer",
        private_key=private.name,  # a path, relative to the workflow file
    )
    code, out, err = call(path)
    assert code == 0, err
    assert out == "authorized\n"
    log = server_log(server)
    (token,) = of(log, "token")
    assert token["auth_method"] == "private_key_jwt" and "error" not in token
    (assertion,) = of(log, "assertion")
    assert assertion["alg"] == alg
    assert private.read_text().strip().splitlines()[1] not in out + err


def test_code_grant_with_private_key_jwt(serve: Any, tmp_path: Path) -> None:
    private, public = _key_pair(tmp_path, "ec")
    server = serve("--client-key", f"signer:{public}", "--auth-methods", "private_key_jwt")
    path = workflow(tmp_path, server.url, client_id="signer", private_key=private.name)
    code, _, err = call(path)
    assert code == 0, err
    log = server_log(server)
    assert of(log, "authorize") and not of(log, "register")
    (token,) = of(log, "token")
    assert token["grant_type"] == "authorization_code"
    assert token["auth_method"] == "private_key_jwt" and "error" not in token


def test_an_expired_token_is_refreshed_by_the_next_process(
    serve: Any, tmp_path: Path, _oauth_env: Path
) -> None:
    server = serve("--token-lifetime", "1")
    path = workflow(tmp_path, server.url)
    assert call(path)[0] == 0
    before = tokens_in(_oauth_env)
    time.sleep(1.2)  # the access token is now expired (it was treated as such a little earlier)
    code, _, err = call(path)
    assert code == 0, err
    log = server_log(server)
    grants = [r["grant_type"] for r in of(log, "token")]
    assert grants == ["authorization_code", "refresh_token"]
    assert len(of(log, "authorize")) == 1  # refreshed, not authorized again
    assert set(tokens_in(_oauth_env)).isdisjoint(before)


def test_a_refused_refresh_authorizes_again(serve: Any, tmp_path: Path) -> None:
    server = serve("--token-lifetime", "1", "--refuse-refresh")
    path = workflow(tmp_path, server.url)
    assert call(path)[0] == 0
    time.sleep(1.2)
    code, _, err = call(path)
    assert code == 0, err
    log = server_log(server)
    grants = [r["grant_type"] for r in of(log, "token")]
    assert grants == ["authorization_code", "refresh_token", "authorization_code"]


def test_insufficient_scope_steps_up_with_the_union_of_scopes(serve: Any, tmp_path: Path) -> None:
    server = serve("--scopes", "read write", "--required-scope", "read", "--call-scope", "write")
    path = workflow(tmp_path, server.url, scopes=["read"])
    code, out, err = call(path)
    assert code == 0, err
    assert out == "authorized\n"
    log = server_log(server)
    statuses = [(r["method"], r["status"]) for r in of(log, "mcp")]
    assert ("tools/call", 403) in statuses and statuses[-1] == ("tools/call", 200)
    scopes = [r["scope"] for r in of(log, "authorize")]
    assert scopes[0] == "read"
    assert set(scopes[1].split()) == {"read", "write"}


def test_a_refused_authorization_is_a_clear_connection_error(serve: Any, tmp_path: Path) -> None:
    server = serve("--deny")
    code, out, err = call(workflow(tmp_path, server.url))
    assert code == 4
    assert "access_denied" in err and "the user said no" in err
    assert "Traceback" not in err and out == ""


def test_fetch_mode_cannot_sign_in_on_a_login_page(serve: Any, tmp_path: Path) -> None:
    server = serve("--login-page")
    code, _, err = call(workflow(tmp_path, server.url))
    assert code == 4
    assert "needs a person to sign in" in err


def test_an_issuer_other_than_the_advertised_one_is_refused(serve: Any, tmp_path: Path) -> None:
    server = serve("--bad-issuer", "https://elsewhere.example")
    code, _, err = call(workflow(tmp_path, server.url))
    assert code == 4
    assert "issuer" in err.lower()
    assert not of(server_log(server), "authorize")


def test_a_wrong_client_secret_fails_without_showing_it(serve: Any, tmp_path: Path) -> None:
    server = serve("--client", f"ci:{SECRET}")
    path = workflow(
        tmp_path,
        server.url,
        grant="client_credentials",
        client_id="ci",
        client_secret="not-the-right-secret-42",
    )
    code, out, err = call(path)
    assert code == 4
    assert "not-the-right-secret-42" not in out + err
    assert "Traceback" not in err


def test_a_token_a_server_sends_back_is_masked(
    serve: Any, tmp_path: Path, _oauth_env: Path
) -> None:
    server = serve()
    code, out, err = call(workflow(tmp_path, server.url), "leak")
    assert code == 0, err
    (access, _) = tokens_in(_oauth_env)
    assert out == "your token: Bearer ***\n"
    assert access not in out + err


def test_a_recorded_run_keeps_no_token_in_its_cassette(
    serve: Any, tmp_path: Path, _oauth_env: Path
) -> None:
    """The tool answers with the caller's bearer token: the cassette holds it masked."""
    server = serve()
    config = {"server": server.url, "timeout": 10, "auth": {"type": "oauth"}}
    agent = {
        "provider": "scripted",
        "script": [{"tool_calls": [{"name": "leak", "arguments": {}}]}, "{tool_result}"],
        "tooling": [{"type": "mcp_remote", "config": config}],
    }
    path = tmp_path / "leak.yaml"
    path.write_text(json.dumps({"graph": {"id": "leak", "start": ["a"], "nodes": [
        {"id": "a", "type": "agent", "config": agent}]}}))  # fmt: skip
    cassette = tmp_path / "leak.jsonl"
    code, out, err = invoke("run", str(path), "--out", str(tmp_path / "run"),
                            "--record", str(cassette))  # fmt: skip
    assert code == 0, err
    assert out == "your token: Bearer ***\n"
    tokens = tokens_in(_oauth_env)
    text = cassette.read_text()
    assert tokens and not any(token in text for token in tokens)
    assert "your token: Bearer ***" in text


def test_a_token_answer_longer_than_the_limit_is_refused(
    serve: Any, tmp_path: Path, _oauth_env: Path
) -> None:
    """11 MB of valid JSON from the token endpoint: refused once past 10 MB, not read whole."""
    server = serve("--huge-token-body", str(11 * 1024 * 1024))
    code, _, err = call(workflow(tmp_path, server.url), "whoami")
    assert code == 4, err
    assert "longer than 10485760 bytes" in err
    assert "Traceback" not in err
    assert tokens_in(_oauth_env) == []


def test_login_list_and_logout(serve: Any, tmp_path: Path, _oauth_env: Path) -> None:
    server = serve("--scopes", "tools")
    path = workflow(tmp_path, server.url)
    code, out, err = invoke("auth", "login", str(path))
    assert code == 0, err
    assert "authorized (scopes: tools)" in out
    assert "/authorize?" in err  # the URL visited is shown
    code, out, _ = invoke("auth", "login", str(path))
    assert code == 0 and "already authorized (cached token)" in out
    code, out, _ = invoke("auth", "list", "--json")
    (row,) = json.loads(out)
    assert row["server"] == server.url and row["refreshable"] is True
    assert row["grant"] == "authorization_code" and row["scopes"] == "tools"
    assert not any(token in out for token in tokens_in(_oauth_env))
    # A run after the login needs no authorization of its own.
    assert call(path)[0] == 0
    assert len(of(server_log(server), "authorize")) == 1
    code, _, err = invoke("auth", "logout", str(path))
    assert code == 0 and "removed 1 cached login" in err
    assert not list(_oauth_env.glob("*.json"))
    code, out, _ = invoke("auth", "list", "--json")
    assert json.loads(out) == []


def test_login_by_url_is_used_by_a_workflow_on_that_server(
    serve: Any, tmp_path: Path, _oauth_env: Path
) -> None:
    server = serve("--scopes", "a b")
    code, out, err = invoke("auth", "login", "--url", server.url, "--scope", "a", "--json")
    assert code == 0, err
    (row,) = json.loads(out)
    assert row["status"] == "authorized" and row["scopes"] == "a"
    assert call(workflow(tmp_path, server.url))[0] == 0
    assert len(of(server_log(server), "authorize")) == 1
    code, _, err = invoke("auth", "logout", "--url", server.url)
    assert "removed 1 cached login" in err
    code, _, err = invoke("auth", "logout", "--all")
    assert code == 0 and "removed 0 cached logins" in err


def test_auth_commands_need_one_target(tmp_path: Path) -> None:
    code, _, err = invoke("auth", "login")
    assert code == 2 and "give a WORKFLOW or --url URL" in err
    code, _, err = invoke("auth", "logout", "--all", "--url", "http://127.0.0.1:9/mcp")
    assert code == 2
    path = tmp_path / "plain.yaml"
    path.write_text(json.dumps({"graph": {"id": "g", "start": ["a"], "nodes": [
        {"id": "a", "type": "agent", "config": {"provider": "scripted", "script": ["x"]}},
    ]}}))  # fmt: skip
    code, _, err = invoke("auth", "login", str(path))
    assert code == 2 and "no mcp_remote server with auth:" in err


def test_probe_never_waits_for_a_sign_in(
    serve: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEVALL_OAUTH_BROWSER", "none")
    server = serve()
    code, out, _ = invoke("probe", str(workflow(tmp_path, server.url)), "--json")
    assert code == 1
    (row,) = json.loads(out)["servers"]
    assert row["status"] == "http_401"
    assert "devall auth login" in row["error"]
    assert not of(server_log(server), "authorize")


@pytest.mark.parametrize("way", ["auth login", "tools call"])
def test_a_person_opens_the_printed_url(
    serve: Any, tmp_path: Path, _oauth_env: Path, way: str
) -> None:
    """DEVALL_OAUTH_BROWSER=none: devall prints the URL and waits on its loopback redirect,
    whether it signs in ahead (`auth login`) or because a command needs the server."""
    import os
    import subprocess
    import sys

    server = serve()
    env = {**os.environ, "DEVALL_OAUTH_BROWSER": "none", "DEVALL_OAUTH_TIMEOUT": "60"}
    command = [sys.executable, "-m", "devall_cli"]
    if way == "auth login":
        command += ["auth", "login", "--url", server.url]
    else:
        command += ["tools", "call", str(workflow(tmp_path, server.url)), "whoami"]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stderr is not None
        url = ""
        for line in process.stderr:
            if "/authorize?" in line:
                url = line.strip()
                break
        assert url.startswith(f"http://127.0.0.1:{server.port}/authorize?")
        # The "browser": the server approves at once and sends it to devall's redirect URI.
        answer = httpx.get(url, follow_redirects=True, timeout=30)
        assert answer.status_code == 200 and "devall is authorized" in answer.text
        out, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0
    if way == "auth login":
        assert "authorized" in out
    assert len(tokens_in(_oauth_env)) == 2


EXAMPLE = Path(__file__).resolve().parents[2] / "workflows" / "examples" / "oauth_remote.yaml"


def test_the_example_runs_and_no_token_reaches_the_run_directory(
    serve: Any, tmp_path: Path, _oauth_env: Path
) -> None:
    server = serve("--scopes", "tools")
    url = f"MCP_URL={server.url}"
    code, _, err = invoke("validate", str(EXAMPLE), "--var", url)
    assert code == 0, err
    run_dir = tmp_path / "run"
    code, out, err = invoke("run", str(EXAMPLE), "--var", url, "--out", str(run_dir), "-v")
    assert code == 0, err
    assert "The server says: authorized" in out
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    steps = [e["step"] for e in map(json.loads, lines) if e["kind"] == "server.auth"]
    assert steps == ["authorize", "authorized"]
    written = "".join(p.read_text() for p in run_dir.rglob("*") if p.is_file())
    tokens = tokens_in(_oauth_env)
    assert tokens and not any(token in written + out + err for token in tokens)


def test_cimd_client_id_is_the_metadata_url(serve: Any, tmp_path: Path) -> None:
    server = serve("--cimd", "--no-dcr")
    metadata_url = "https://client.example.test/devall.json"
    code, _, err = call(workflow(tmp_path, server.url, client_metadata_url=metadata_url))
    assert code == 0, err
    log = server_log(server)
    assert not of(log, "register")
    (authorize,) = of(log, "authorize")
    assert authorize["client_id"] == metadata_url
