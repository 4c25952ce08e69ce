"""A small but real OAuth 2.1 authorization server and an MCP resource it protects, on one port.

    python oauth_server.py --transport http --port 0 [options]   # `oauth server ready on port N`

The MCP endpoint is `/mcp` (FastMCP, streamable HTTP). Without a valid bearer token it answers
401 with `WWW-Authenticate: Bearer resource_metadata="...", scope="..."`; a token lacking the
scope `tools/call` needs (`--call-scope`) gets 403 `insufficient_scope` (a step-up). The
authorization server publishes RFC 9728 protected-resource metadata and RFC 8414 metadata,
registers clients dynamically (RFC 7591), approves every authorization request at once (no
person: it redirects straight back with a code, or with `error=access_denied` under `--deny`),
checks PKCE (S256), and issues access and refresh tokens; client credentials too. Token
requests authenticate with client_secret_basic, client_secret_post, none or private_key_jwt
(ES256 / RS256 assertions checked against a pre-registered public key).

`GET /_log` returns what happened, for the tests: one record per registration, authorization,
token request and MCP request (never a secret, never a token). `POST /_reset` with a JSON list
of options starts over with those options (clients, codes, tokens and log forgotten), so that
tests share one process.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import secrets
import socket
import sys
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")

import jwt
import uvicorn
from fastmcp import FastMCP
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


@dataclass
class Client:
    """A registered client."""

    client_id: str
    secret: str | None = None
    auth_method: str = "none"
    redirect_uris: list[str] = field(default_factory=list)
    public_key: str | None = None  # PEM, for private_key_jwt


@dataclass
class Grant:
    """An issued access token (or a pending authorization code)."""

    client_id: str
    scopes: list[str]
    expires_at: float = 0.0
    challenge: str = ""
    redirect_uri: str = ""
    resource: str | None = None


class AuthServer:
    """The authorization server's state and endpoints."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.base = ""  # http://127.0.0.1:PORT, set once the socket is bound
        self.reset(args)

    def reset(self, args: argparse.Namespace) -> None:
        """Start over with these options: no clients but the configured ones, no tokens, no log."""
        self.args = args
        self.clients: dict[str, Client] = {}
        self.codes: dict[str, Grant] = {}
        self.tokens: dict[str, Grant] = {}
        self.refresh: dict[str, Grant] = {}
        self.log: list[dict[str, Any]] = []
        for item in args.client:
            client_id, _, secret = item.partition(":")
            method = args.client_auth_method or "client_secret_basic"
            self.clients[client_id] = Client(client_id, secret or None, method)
        for item in args.client_key:
            client_id, _, path = item.partition(":")
            key = Path(path).read_text()
            self.clients[client_id] = Client(client_id, None, "private_key_jwt", public_key=key)

    async def reset_endpoint(self, request: Request) -> Response:
        """`POST /_reset` with a JSON list of options: the tests share one server process."""
        self.reset(parse_args([str(item) for item in await request.json()]))
        return JSONResponse({"issuer": self.issuer})

    async def dispatch(self, request: Request) -> Response:
        """The authorization server's endpoints, found under the current issuer path."""
        path = request.url.path
        prefix = self.args.issuer_path
        if path == "/.well-known/oauth-protected-resource/mcp" and not self.args.no_prm:
            return self.resource_metadata(request)
        if path == "/.well-known/oauth-authorization-server" + prefix:
            return self.server_metadata(request)
        handlers: dict[tuple[str, str], Callable[[Request], Any]] = {
            ("POST", f"{prefix}/register"): self.register,
            ("GET", f"{prefix}/authorize"): self.authorize,
            ("POST", f"{prefix}/token"): self.token,
        }
        handler = handlers.get((request.method, path))
        if handler is None:
            return JSONResponse({"error": "not_found"}, status_code=404)
        answer = handler(request)
        return await answer if hasattr(answer, "__await__") else answer  # type: ignore[no-any-return]

    @property
    def issuer(self) -> str:
        """The issuer identifier (the server's origin, plus `--issuer-path`)."""
        return self.base + self.args.issuer_path

    def endpoint(self, name: str) -> str:
        """An endpoint URL under the issuer."""
        return f"{self.issuer}/{name}"

    # --- metadata ----------------------------------------------------------------------------

    def resource_metadata(self, request: Request) -> Response:
        """RFC 9728 protected resource metadata of `/mcp`."""
        self.log.append({"event": "prm", "path": request.url.path})
        body: dict[str, Any] = {
            "resource": self.args.prm_resource or f"{self.base}/mcp",
            "authorization_servers": [self.issuer],
        }
        if self.args.scopes:
            body["scopes_supported"] = self.args.scopes.split()
        return JSONResponse(body)

    def server_metadata(self, request: Request) -> Response:
        """RFC 8414 authorization server metadata."""
        self.log.append({"event": "asm", "path": request.url.path})
        body: dict[str, Any] = {
            "issuer": self.args.bad_issuer or self.issuer,
            "authorization_endpoint": self.endpoint("authorize"),
            "token_endpoint": self.endpoint("token"),
            "response_types_supported": ["code"],
            "grant_types_supported": self.args.grants.split(","),
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": self.args.auth_methods.split(","),
            "token_endpoint_auth_signing_alg_values_supported": ["ES256", "RS256"],
        }
        if not self.args.no_dcr:
            body["registration_endpoint"] = self.endpoint("register")
        if self.args.scopes:
            body["scopes_supported"] = self.args.scopes.split()
        if self.args.cimd:
            body["client_id_metadata_document_supported"] = True
        return JSONResponse(body)

    # --- registration and authorization --------------------------------------------------------

    async def register(self, request: Request) -> Response:
        """RFC 7591 dynamic client registration."""
        body = await request.json()
        requested = body.get("token_endpoint_auth_method") or "client_secret_basic"
        supported = self.args.auth_methods.split(",")
        method = requested if requested in supported else supported[0]
        client = Client(
            client_id=f"client-{secrets.token_hex(4)}",
            secret=None if method == "none" else secrets.token_urlsafe(16),
            auth_method=method,
            redirect_uris=list(body.get("redirect_uris") or []),
        )
        self.clients[client.client_id] = client
        self.log.append(
            {
                "event": "register",
                "client_id": client.client_id,
                "requested_method": body.get("token_endpoint_auth_method"),
                "method": method,
                "grant_types": body.get("grant_types"),
                "redirect_uris": client.redirect_uris,
                "client_name": body.get("client_name"),
            }
        )
        answer: dict[str, Any] = {**body, "client_id": client.client_id}
        answer["token_endpoint_auth_method"] = method
        if client.secret:
            answer["client_secret"] = client.secret
        return JSONResponse(answer, status_code=201)

    def authorize(self, request: Request) -> Response:
        """Approve at once: redirect back with a code (no login page, no consent)."""
        query = request.query_params
        record = {"event": "authorize", **{k: query.get(k) for k in _AUTHORIZE_KEYS}}
        self.log.append(record)
        if self.args.login_page:
            return HTMLResponse("<html><body><form>Sign in</form></body></html>")
        client = self._known_client(query.get("client_id") or "")
        redirect_uri = query.get("redirect_uri") or ""
        if client is None:
            return JSONResponse({"error": "invalid_client"}, status_code=400)
        if client.redirect_uris and redirect_uri not in client.redirect_uris:
            return JSONResponse({"error": "invalid_redirect_uri"}, status_code=400)
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        params: dict[str, str] = {"state": query.get("state") or ""}
        if self.args.deny:
            params.update(error="access_denied", error_description="the user said no")
        else:
            code = secrets.token_urlsafe(16)
            self.codes[code] = Grant(
                client_id=client.client_id,
                scopes=(query.get("scope") or "").split(),
                challenge=query.get("code_challenge") or "",
                redirect_uri=redirect_uri,
                resource=query.get("resource"),
            )
            params["code"] = code
        return RedirectResponse(f"{redirect_uri}?{urlencode(params)}", status_code=302)

    def _known_client(self, client_id: str) -> Client | None:
        if client_id in self.clients:
            return self.clients[client_id]
        if self.args.cimd and client_id.startswith("https://"):
            return Client(client_id)  # a client metadata document URL (not fetched here)
        return None

    # --- tokens ------------------------------------------------------------------------------

    async def token(self, request: Request) -> Response:
        """The token endpoint: authorization_code, refresh_token and client_credentials."""
        form = dict(await request.form())
        grant_type = str(form.get("grant_type") or "")
        record: dict[str, Any] = {
            "event": "token",
            "grant_type": grant_type,
            "scope": form.get("scope"),
            "resource": form.get("resource"),
        }
        self.log.append(record)
        client, method, problem = self._authenticate(request, form)
        record["auth_method"] = method
        if problem:
            record["error"] = problem
            return JSONResponse({"error": "invalid_client", "detail": problem}, status_code=401)
        assert client is not None
        handler = {
            "authorization_code": self._code_grant,
            "refresh_token": self._refresh_grant,
            "client_credentials": self._credentials_grant,
        }.get(grant_type)
        if handler is None or grant_type not in self.args.grants.split(","):
            record["error"] = "unsupported_grant_type"
            return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
        grant, problem = handler(client, form)
        if problem or grant is None:
            record["error"] = problem
            return JSONResponse({"error": "invalid_grant", "detail": problem}, status_code=400)
        record["granted"] = grant.scopes
        issued = self._issue(grant, refresh=grant_type != "client_credentials")
        if self.args.huge_token_body:
            return _padded(issued, self.args.huge_token_body)
        return JSONResponse(issued)

    def _authenticate(
        self, request: Request, form: dict[str, Any]
    ) -> tuple[Client | None, str, str | None]:
        """(client, method used, problem): the client authentication of a token request."""
        header = request.headers.get("authorization", "")
        if header.startswith("Basic "):
            raw = base64.b64decode(header[6:]).decode()
            client_id, _, secret = raw.partition(":")
            return self._check_secret(client_id, secret, "client_secret_basic")
        if form.get("client_assertion_type") == JWT_BEARER:
            return self._check_assertion(str(form.get("client_assertion") or ""))
        if form.get("client_secret"):
            client_id = str(form.get("client_id") or "")
            return self._check_secret(client_id, str(form["client_secret"]), "client_secret_post")
        client = self._known_client(str(form.get("client_id") or ""))
        if client is None:
            return None, "none", "unknown client"
        if client.auth_method != "none":
            return None, "none", f"client must authenticate with {client.auth_method}"
        return client, "none", None

    def _check_secret(
        self, client_id: str, secret: str, method: str
    ) -> tuple[Client | None, str, str | None]:
        client = self.clients.get(client_id)
        if client is None or client.secret != secret:
            return None, method, "wrong client id or secret"
        if method not in self.args.auth_methods.split(","):
            return None, method, f"{method} is not supported"
        return client, method, None

    def _check_assertion(self, assertion: str) -> tuple[Client | None, str, str | None]:
        method = "private_key_jwt"
        try:
            unverified = jwt.decode(assertion, options={"verify_signature": False})
            header = jwt.get_unverified_header(assertion)
        except jwt.PyJWTError as exc:
            return None, method, f"bad assertion: {exc}"
        client = self.clients.get(str(unverified.get("iss")))
        if client is None or client.public_key is None:
            return None, method, "unknown client"
        try:
            claims = jwt.decode(
                assertion,
                client.public_key,
                algorithms=["ES256", "RS256"],
                audience=[self.issuer, self.endpoint("token")],
                options={"require": ["exp", "iat", "jti", "iss", "sub", "aud"]},
            )
        except jwt.PyJWTError as exc:
            return None, method, f"assertion rejected: {exc}"
        if claims["sub"] != client.client_id:
            return None, method, "sub is not the client id"
        self.log.append({"event": "assertion", "alg": header.get("alg"), "aud": claims["aud"]})
        return client, method, None

    def _code_grant(self, client: Client, form: dict[str, Any]) -> tuple[Grant | None, str | None]:
        grant = self.codes.pop(str(form.get("code") or ""), None)
        if grant is None or grant.client_id != client.client_id:
            return None, "unknown code"
        verifier = str(form.get("code_verifier") or "")
        digest = hashlib.sha256(verifier.encode()).digest()
        if base64.urlsafe_b64encode(digest).decode().rstrip("=") != grant.challenge:
            return None, "PKCE verifier does not match"
        if form.get("redirect_uri") != grant.redirect_uri:
            return None, "redirect_uri differs from the authorization request"
        return grant, None

    def _refresh_grant(
        self, client: Client, form: dict[str, Any]
    ) -> tuple[Grant | None, str | None]:
        if self.args.refuse_refresh:
            return None, "refresh refused"
        grant = self.refresh.pop(str(form.get("refresh_token") or ""), None)
        if grant is None or grant.client_id != client.client_id:
            return None, "unknown refresh token"
        return grant, None

    def _credentials_grant(
        self, client: Client, form: dict[str, Any]
    ) -> tuple[Grant | None, str | None]:
        scopes = str(form.get("scope") or "").split()
        return Grant(client_id=client.client_id, scopes=scopes), None

    def _issue(self, grant: Grant, *, refresh: bool) -> dict[str, Any]:
        access = f"at-{secrets.token_urlsafe(18)}"
        lifetime = self.args.token_lifetime
        self.tokens[access] = Grant(grant.client_id, grant.scopes, time.time() + lifetime)
        body: dict[str, Any] = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": lifetime,
            "scope": " ".join(grant.scopes),
        }
        if refresh:
            refresh_token = f"rt-{secrets.token_urlsafe(18)}"
            self.refresh[refresh_token] = Grant(grant.client_id, grant.scopes)
            body["refresh_token"] = refresh_token
        return body

    # --- the protected resource ----------------------------------------------------------------

    def challenge(self, status: int, scope: str, error: str) -> Response:
        """A 401/403 with the WWW-Authenticate header MCP clients follow."""
        metadata = f"{self.base}/.well-known/oauth-protected-resource/mcp"
        parts = [f'error="{error}"'] if error != "invalid_token" or status == 403 else []
        if not self.args.no_prm:
            parts.append(f'resource_metadata="{metadata}"')
        if scope:
            parts.append(f'scope="{scope}"')
        headers = {"WWW-Authenticate": "Bearer " + ", ".join(parts)}
        return JSONResponse({"error": error}, status_code=status, headers=headers)

    def check_token(self, authorization: str, method: str) -> Response | None:
        """None when the request may pass; else the 401/403 answer."""
        base_scope = self.args.required_scope.split()
        needed = [*base_scope, *(self.args.call_scope.split() if method == "tools/call" else [])]
        token = authorization[7:] if authorization.startswith("Bearer ") else ""
        grant = self.tokens.get(token)
        if grant is None or grant.expires_at < time.time():
            return self.challenge(401, " ".join(base_scope), "invalid_token")
        if not set(needed) <= set(grant.scopes):
            return self.challenge(403, " ".join(needed), "insufficient_scope")
        return None


_AUTHORIZE_KEYS = (
    "client_id",
    "scope",
    "resource",
    "redirect_uri",
    "code_challenge_method",
    "response_type",
)


def protect(server: AuthServer, inner: ASGIApp) -> ASGIApp:
    """ASGI middleware: every request to the MCP endpoint needs a good bearer token."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/mcp"):
            await inner(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            method = json.loads(body).get("method", "") if body else ""
        except (ValueError, AttributeError):
            method = ""
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        denied = server.check_token(headers.get("authorization", ""), method)
        status = denied.status_code if denied is not None else 200
        server.log.append({"event": "mcp", "method": method, "status": status})
        if denied is not None:
            await denied(scope, receive, send)
            return
        sent = False

        async def replay() -> MutableMapping[str, Any]:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await inner(scope, replay, send)

    return app


def build_app(server: AuthServer) -> ASGIApp:
    """The authorization server's routes, and the protected MCP app under them."""
    mcp = FastMCP("devall oauth fixture")

    @mcp.tool
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @mcp.tool
    def whoami() -> str:
        """Say that the call was authorized."""
        return "authorized"

    @mcp.tool
    def leak() -> str:
        """Send the caller's access token back (a careless server: devall must mask it)."""
        from fastmcp.server.dependencies import get_http_headers

        return "your token: " + get_http_headers(include_all=True).get("authorization", "")

    mcp_app = mcp.http_app(path="/mcp")
    methods = ["GET", "POST"]
    routes = [
        Route("/_log", lambda request: JSONResponse(server.log)),
        Route("/_reset", server.reset_endpoint, methods=["POST"]),
        Route("/{path:path}", server.dispatch, methods=methods),
    ]
    outer = Starlette(routes=routes, lifespan=mcp_app.lifespan)
    protected = protect(server, mcp_app)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/mcp"):
            await protected(scope, receive, send)
        else:
            await outer(scope, receive, send)

    return app


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The server's options."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", default="http")  # accepted for a uniform command line
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--scopes", default="", help="scopes_supported (space separated)")
    parser.add_argument("--required-scope", default="", help="scope every MCP request needs")
    parser.add_argument("--call-scope", default="", help="extra scope tools/call needs")
    parser.add_argument("--token-lifetime", type=int, default=3600)
    parser.add_argument("--auth-methods", default="none,client_secret_basic,client_secret_post")
    parser.add_argument("--grants", default="authorization_code,refresh_token,client_credentials")
    parser.add_argument("--client", action="append", default=[], metavar="ID:SECRET")
    parser.add_argument("--client-auth-method", default="")
    parser.add_argument("--client-key", action="append", default=[], metavar="ID:PEM_FILE")
    parser.add_argument("--issuer-path", default="", help="e.g. /tenant: a path-based issuer")
    parser.add_argument("--bad-issuer", default="", help="name this issuer in the metadata")
    parser.add_argument("--prm-resource", default="", help="resource named in the PRM")
    parser.add_argument("--no-dcr", action="store_true")
    parser.add_argument("--no-prm", action="store_true")
    parser.add_argument("--cimd", action="store_true")
    parser.add_argument("--deny", action="store_true")
    parser.add_argument("--login-page", action="store_true")
    parser.add_argument("--refuse-refresh", action="store_true")
    parser.add_argument(
        "--huge-token-body", type=int, default=0, metavar="BYTES",
        help="token answers padded to BYTES (valid JSON, made up as it is sent)",
    )
    return parser.parse_args(argv)



def _padded(issued: dict[str, Any], size: int) -> StreamingResponse:
    """A token answer of `size` bytes: the grant, then a long string field, sent in pieces."""
    head = json.dumps(issued)[:-1].encode() + b', "pad": "'
    rest = max(0, size - len(head) - 2)

    async def pieces() -> Any:
        yield head
        left = rest
        while left > 0:
            chunk = min(left, 65536)
            yield b"x" * chunk
            left -= chunk
        yield b'"}'

    return StreamingResponse(pieces(), media_type="application/json")

def main(argv: list[str] | None = None) -> None:
    """Bind, announce the port, serve until killed."""
    args = parse_args(argv)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(128)
    port = sock.getsockname()[1]
    server = AuthServer(args)
    server.base = f"http://{args.host}:{port}"
    config = uvicorn.Config(build_app(server), log_level="warning", lifespan="on")
    print(f"oauth server ready on port {port}", file=sys.stderr, flush=True)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
