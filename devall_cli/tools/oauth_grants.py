"""The assertion grants of `auth:`: workload identity (jwt_bearer) and enterprise-managed
authorization (identity_assertion), their config keys and their token requests.

    grant: jwt_bearer                  # RFC 7523 §2.1, workload identity federation
    assertion_file: /var/run/secrets/tokens/mcp   # or assertion: ${WORKLOAD_TOKEN}

    grant: identity_assertion          # the MCP enterprise-managed authorization extension
    id_token: ${IDP_ID_TOKEN}          # or id_token_file: ...
    idp_token_endpoint: https://idp.example.com/oauth2/token
    idp_client_id: devall-at-idp
    idp_client_secret: ${IDP_SECRET}   # optional

jwt_bearer presents the workload's JWT as the `assertion` of a jwt-bearer token request.
identity_assertion first exchanges the ID token at the identity provider (RFC 8693) for an
identity assertion authorization grant (ID-JAG) addressed to the MCP server's authorization
server, then presents that the same way. Both authenticate as the other grants do (oauth_client.py)
and send the `resource` parameter. A token named by a file is read again for each authorization,
since workload tokens rotate. The config part imports nothing heavy: httpx2 is imported when a
token request is built.

The MCP SDK's `IdentityAssertionOAuthProvider` is a flow of its own: it takes the authorization
server as configuration (no protected resource metadata), keeps its own tokens and leaves the
IdP exchange to the caller. devall discovers the authorization server as for every grant, so the
requests are built here and sent by `DevallOAuth`'s flow: one token cache, one client
authentication, DPoP and the redactor for every grant.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import Checker, is_http_url, opt_str
from devall_cli.config.yaml_source import KeyPath
from devall_cli.errors import AuthError

if TYPE_CHECKING:
    import httpx2

JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"
ASSERTION_GRANTS = ("identity_assertion", "jwt_bearer")
# The token each grant presents: (inline key, file key).
_TOKEN_KEYS = {
    "jwt_bearer": ("assertion", "assertion_file"),
    "identity_assertion": ("id_token", "id_token_file"),
}
_IDP_KEYS = ("idp_token_endpoint", "idp_client_id", "idp_client_secret")
GRANT_KEYS = frozenset({key for pair in _TOKEN_KEYS.values() for key in pair} | set(_IDP_KEYS))

RevealSecret = Callable[[str], None]


def registered_grant_type(grant: str) -> str:
    """The grant type a client of this `grant` is registered for (RFC 7591 `grant_types`)."""
    return JWT_BEARER_GRANT if grant in ASSERTION_GRANTS else grant


# --- config -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenSource:
    """A token given in the config, or a file read again for each authorization."""

    key: str  # the config key that names it, for messages
    value: str | None = None
    file: Path | None = None

    def read(self) -> str:
        """The token now (AuthError when its file cannot be read)."""
        if self.file is None:
            return self.value or ""
        try:
            token = self.file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise AuthError(f"{self.key} {self.file} cannot be read: {exc}") from exc
        if not token:
            raise AuthError(f"{self.key} {self.file} is empty")
        return token


@dataclass(frozen=True)
class GrantSettings:
    """The keys of an assertion grant: its token and, for identity_assertion, the IdP."""

    token: TokenSource
    subject: str = ""  # who the token names (`iss sub` of a JWT): tokens are cached per subject
    idp_token_endpoint: str | None = None
    idp_client_id: str | None = None
    idp_client_secret: str | None = None


def parse_grant(
    ck: Checker, config: dict[str, Any], path: KeyPath, grant: str
) -> GrantSettings | None:
    """The grant keys of an `auth:` mapping; keys of another grant are errors at the key."""
    for key in sorted(GRANT_KEYS & config.keys()):
        owner = "identity_assertion" if key in _IDP_KEYS or key.startswith("id_") else "jwt_bearer"
        if owner != grant:
            ck.error((*path, key), f"{key} is only for grant {owner}, not {grant}")
    if grant not in ASSERTION_GRANTS:
        return None
    token, text = _token(ck, config, path, grant)
    endpoint = client_id = None
    if grant == "identity_assertion":
        endpoint = _required(ck, config, path, "idp_token_endpoint", "the IdP's token endpoint")
        if endpoint is not None and not is_http_url(endpoint):
            message = f"idp_token_endpoint must be an http:// or https:// URL, got {endpoint!r}"
            ck.error((*path, "idp_token_endpoint"), message)
        client_id = _required(ck, config, path, "idp_client_id", "the client at the IdP")
    secret = _text(ck, config, "idp_client_secret", path)
    ck.secret(secret)
    if token is None:
        return None
    return GrantSettings(
        token=token,
        subject=token_subject(text),
        idp_token_endpoint=endpoint,
        idp_client_id=client_id,
        idp_client_secret=secret,
    )


def _text(ck: Checker, config: dict[str, Any], key: str, path: KeyPath) -> str | None:
    value = opt_str(ck, config, key, path)
    return value.strip() if value and value.strip() else None


def _required(
    ck: Checker, config: dict[str, Any], path: KeyPath, key: str, what: str
) -> str | None:
    value = _text(ck, config, key, path)
    if value is None and config.get(key) is not UNRESOLVED:
        where = (*path, key) if key in config else (*path, "grant") if "grant" in config else path
        ck.error(where, f"grant identity_assertion needs {key} ({what})")
    return value


def _token(
    ck: Checker, config: dict[str, Any], path: KeyPath, grant: str
) -> tuple[TokenSource | None, str]:
    """The token of the grant, inline (a placeholder) or a readable file, and its text now."""
    inline, file_key = _TOKEN_KEYS[grant]
    value = _text(ck, config, inline, path)
    name = _text(ck, config, file_key, path)
    if value is not None and name is not None:
        ck.error((*path, file_key), f"give {inline} or {file_key}, not both")
        return None, ""
    if value is not None:
        ck.secret(value)
        return TokenSource(inline, value=value), value
    if name is not None:
        return _token_file(ck, (*path, file_key), file_key, ck.file_dir / Path(name).expanduser())
    if config.get(inline) is not UNRESOLVED and config.get(file_key) is not UNRESOLVED:
        where = (*path, "grant") if "grant" in config else path
        ck.error(where, f"grant {grant} needs {inline} (text) or {file_key} (a file holding it)")
    return None, ""


def _token_file(ck: Checker, here: KeyPath, key: str, file: Path) -> tuple[TokenSource | None, str]:
    try:
        token = file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        ck.error(here, f"{key} cannot be read: {exc}")
        return None, ""
    if not token:
        ck.error(here, f"{key} {str(file)!r} is empty")
        return None, ""
    ck.secret(token)
    return TokenSource(key, file=file), token


def token_subject(token: str) -> str:
    """`iss sub` of a JWT, read without checking it (it is the server's to check); else ''."""
    parts = token.split(".")
    if len(parts) != 3:
        return ""
    try:
        padded = parts[1] + "=" * (-len(parts[1]) % 4)
        claims = json.loads(base64.urlsafe_b64decode(padded))
    except (binascii.Error, ValueError):
        return ""
    if not isinstance(claims, dict):
        return ""
    return " ".join(str(claims.get(name, "")) for name in ("iss", "sub")).strip()


# --- the token requests -------------------------------------------------------------------------


class GrantContext(Protocol):
    """What the requests need of the OAuth flow (the SDK's `OAuthContext`, devall's subclass)."""

    def prepare_token_auth(
        self, data: dict[str, str], headers: dict[str, str] | None = None
    ) -> tuple[dict[str, str], dict[str, str]]: ...

    def get_resource_url(self) -> str: ...


class AssertionGrant:
    """The token requests of one server's assertion grant; the IdP step for identity_assertion."""

    def __init__(self, grant: str, settings: GrantSettings, reveal: RevealSecret) -> None:
        self.grant = grant
        self.settings = settings
        self._reveal = reveal
        self._exchange: httpx2.Request | None = None
        self._pending: tuple[GrantContext, str, str | None] | None = None

    def first_request(
        self, context: GrantContext, token_endpoint: str, issuer: str, scope: str | None
    ) -> httpx2.Request:
        """The authorization's first request: the token request, or the IdP's token exchange."""
        token = self.settings.token.read()
        self._reveal(token)
        if self.grant == "jwt_bearer":
            return _token_request(context, token_endpoint, token, scope)
        self._pending = (context, token_endpoint, scope)
        self._exchange = _exchange_request(self.settings, token, issuer, context, scope)
        return self._exchange

    def follow_up(self, sent: httpx2.Request, response: httpx2.Response) -> httpx2.Request | None:
        """After the IdP's answer (read whole): the token request with the ID-JAG; else None."""
        if sent is not self._exchange or self._pending is None:
            return None
        context, token_endpoint, scope = self._pending
        self._exchange = self._pending = None
        id_jag = _issued_id_jag(response)
        self._reveal(id_jag)
        return _token_request(context, token_endpoint, id_jag, scope)


def _token_request(
    context: GrantContext, token_endpoint: str, assertion: str, scope: str | None
) -> httpx2.Request:
    """The jwt-bearer token request (RFC 7523 §2.1), authenticated as the client is."""
    import httpx2

    data = {"grant_type": JWT_BEARER_GRANT, "assertion": assertion}
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    data, headers = context.prepare_token_auth(data, headers)
    data["resource"] = context.get_resource_url()
    if scope:
        data["scope"] = scope
    return httpx2.Request("POST", token_endpoint, data=data, headers=headers)


def _exchange_request(
    settings: GrantSettings, id_token: str, issuer: str, context: GrantContext, scope: str | None
) -> httpx2.Request:
    """The token exchange at the IdP (RFC 8693): the ID token for an ID-JAG addressed to the
    MCP server's authorization server (`audience`) for the MCP server (`resource`)."""
    import httpx2

    data = {
        "grant_type": TOKEN_EXCHANGE_GRANT,
        "requested_token_type": ID_JAG_TYPE,
        "subject_token": id_token,
        "subject_token_type": ID_TOKEN_TYPE,
        "audience": issuer,
        "resource": context.get_resource_url(),
        "client_id": settings.idp_client_id or "",
    }
    if settings.idp_client_secret:
        data["client_secret"] = settings.idp_client_secret
    if scope:
        data["scope"] = scope
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    return httpx2.Request("POST", settings.idp_token_endpoint or "", data=data, headers=headers)


def _issued_id_jag(response: httpx2.Response) -> str:
    """The ID-JAG of the IdP's answer, or AuthError saying why there is none."""
    try:
        body = json.loads(response.content or b"{}")
    except ValueError:
        body = None
    if not isinstance(body, dict):
        status = response.status_code
        raise AuthError(f"the identity provider's token endpoint answered {status} without JSON")
    if response.status_code != 200:
        reason = ": ".join(str(body[k]) for k in ("error", "error_description") if k in body)
        raise AuthError(
            f"the identity provider refused the token exchange ({response.status_code})"
            + (f": {reason}" if reason else "")
        )
    token, issued = body.get("access_token"), body.get("issued_token_type")
    if not isinstance(token, str) or not token or (issued is not None and issued != ID_JAG_TYPE):
        raise AuthError(f"the identity provider's token exchange issued no ID-JAG (got {issued!r})")
    return token
