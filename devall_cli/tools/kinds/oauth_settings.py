"""`auth:` of an `mcp_remote` config: OAuth 2.1 as the MCP authorization spec describes it.

    auth:
      type: oauth                        # required
      grant: authorization_code          # or client_credentials, jwt_bearer, identity_assertion
      client_id: ${ID}                   # a pre-registered client (else CIMD or registration)
      client_secret: ${SECRET}
      client_metadata_url: https://example.com/client.json
      private_key: ${KEY_PEM}            # private_key_jwt (PEM text, or a path to a PEM file)
      token_endpoint_auth_method: client_secret_basic   # else chosen from the server's list
      scopes: [files:read]
      redirect_port: 33418               # the loopback redirect's port (else a free one)
      dpop: auto                         # DPoP-bound tokens (RFC 9449): true, false or auto
      assertion: ${JWT}                  # jwt_bearer and identity_assertion keys: oauth_grants.py

Secrets (`client_secret`, the private key) are declared to the redactor. The private key is
read and checked here, so `devall validate` reports an unusable key; cryptography is imported
only when a workflow names one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from devall_cli.config.json_shapes import Schema, keys_object
from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import (
    Checker,
    KeySpec,
    as_bool,
    check_keys,
    describe,
    get_mapping,
    opt_int,
    opt_str,
)
from devall_cli.config.yaml_source import KeyPath
from devall_cli.tools.oauth_grants import ASSERTION_GRANTS, GRANT_KEYS, GrantSettings, parse_grant

AUTH_TYPES = ("oauth",)
GRANTS = ("authorization_code", "client_credentials", *ASSERTION_GRANTS)
AUTH_METHODS = ("client_secret_basic", "client_secret_post", "none", "private_key_jwt")
_KEYS = KeySpec(
    known=frozenset(
        {
            "type",
            "grant",
            "client_id",
            "client_secret",
            "client_metadata_url",
            "private_key",
            "token_endpoint_auth_method",
            "scopes",
            "redirect_port",
            "dpop",
        }
    )
    | GRANT_KEYS
)


@dataclass(frozen=True)
class OAuthConfig:
    """The parsed `auth:` mapping of one remote server."""

    grant: str = "authorization_code"
    client_id: str | None = None
    client_secret: str | None = None
    client_metadata_url: str | None = None
    private_key: str | None = None  # PEM text (read from the file when a path was given)
    token_endpoint_auth_method: str | None = None  # None: chosen from the server's metadata
    scopes: tuple[str, ...] = ()
    redirect_port: int | None = None
    dpop: bool | None = None  # None (auto): when the authorization server offers it
    assertion: GrantSettings | None = None  # the token of jwt_bearer and identity_assertion

    def identity(self) -> tuple[Any, ...]:
        """What makes two auth settings different sessions."""
        return (
            self.grant,
            self.client_id,
            self.client_secret,
            self.client_metadata_url,
            self.private_key,
            self.token_endpoint_auth_method,
            self.scopes,
            self.redirect_port,
            self.dpop,
            self.assertion,
        )

    def cache_key(self, server: str) -> str:
        """Which cached tokens these settings use: the server, the grant and the client."""
        client = self.client_id or self.client_metadata_url or ""
        parts = (server, self.grant, client)
        # An assertion grant's tokens belong to the identity its token names, not to the client.
        return "\n".join((*parts, self.assertion.subject) if self.assertion else parts)


def parse_auth(ck: Checker, raw: Any, path: KeyPath) -> OAuthConfig | None:
    """The `auth:` mapping; every problem is reported, each at its key."""
    config = get_mapping(ck, raw, path, "auth")
    if config is None:
        return None
    check_keys(ck, config, path, _KEYS)
    errors_before = ck.error_count
    kind = opt_str(ck, config, "type", path, required=True)
    if kind is not None and kind.strip() not in AUTH_TYPES:
        ck.error((*path, "type"), f"unknown auth type {kind!r} (known types: oauth)")
    grant = _choice(ck, config, "grant", path, GRANTS) or "authorization_code"
    client_id = _text(ck, config, "client_id", path)
    client_secret = _text(ck, config, "client_secret", path)
    ck.secret(client_secret)
    metadata_url = _metadata_url(ck, config, path)
    private_key = _private_key(ck, config, path)
    method = _choice(ck, config, "token_endpoint_auth_method", path, AUTH_METHODS)
    settings = OAuthConfig(
        grant=grant,
        client_id=client_id,
        client_secret=client_secret,
        client_metadata_url=metadata_url,
        private_key=private_key,
        token_endpoint_auth_method=method,
        scopes=_scopes(ck, config, path),
        redirect_port=_port(ck, config, path),
        dpop=_dpop(ck, config, path),
        assertion=parse_grant(ck, config, path, grant),
    )
    _check_combination(ck, config, settings, path)
    return settings if ck.error_count == errors_before and kind is not None else None


def _text(ck: Checker, config: dict[str, Any], key: str, path: KeyPath) -> str | None:
    value = opt_str(ck, config, key, path)
    return value.strip() if value and value.strip() else None


def _choice(
    ck: Checker, config: dict[str, Any], key: str, path: KeyPath, choices: tuple[str, ...]
) -> str | None:
    value = _text(ck, config, key, path)
    if value is not None and value not in choices:
        ck.error((*path, key), f"{key} must be one of {', '.join(choices)}, got {value!r}")
        return None
    return value


def _metadata_url(ck: Checker, config: dict[str, Any], path: KeyPath) -> str | None:
    url = _text(ck, config, "client_metadata_url", path)
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname or parts.path in ("", "/"):
        ck.error(
            (*path, "client_metadata_url"),
            f"client_metadata_url must be an https:// URL with a path, got {url!r}",
        )
        return None
    return url


def _scopes(ck: Checker, config: dict[str, Any], path: KeyPath) -> tuple[str, ...]:
    value = config.get("scopes")
    if value is None or value is UNRESOLVED:
        return ()
    if isinstance(value, str):  # one space-separated text, as OAuth writes scopes
        return tuple(value.split())
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        ck.error((*path, "scopes"), f"scopes must be a list of scope names, got {describe(value)}")
        return ()
    return tuple(scope for item in value for scope in item.split())


def _port(ck: Checker, config: dict[str, Any], path: KeyPath) -> int | None:
    if config.get("redirect_port") is None:
        return None
    port = opt_int(ck, config, "redirect_port", path, 0, minimum=1)
    if port > 65535:
        ck.error((*path, "redirect_port"), f"redirect_port must be at most 65535, got {port}")
        return None
    return port or None


def _dpop(ck: Checker, config: dict[str, Any], path: KeyPath) -> bool | None:
    value = config.get("dpop")
    if value is None or value is UNRESOLVED:
        return None
    if isinstance(value, str) and value.strip().lower() == "auto":
        return None
    parsed = as_bool(value)
    if parsed is None:
        ck.error((*path, "dpop"), f"dpop must be true, false or auto, got {describe(value)}")
    return parsed


def _private_key(ck: Checker, config: dict[str, Any], path: KeyPath) -> str | None:
    """The PEM text of `private_key` (given inline, or as a path to a file), checked."""
    value = _text(ck, config, "private_key", path)
    if value is None:
        return None
    here = (*path, "private_key")
    pem = value
    if "-----BEGIN" not in value:
        file = ck.file_dir / Path(value).expanduser()
        try:
            pem = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            ck.error(here, f"private_key is neither PEM text nor a readable file: {exc}")
            return None
    ck.secret(pem)
    ck.secret(pem.strip())
    problem = key_problem(pem)
    if problem:
        ck.error(here, problem)
        return None
    return pem


def key_problem(pem: str) -> str | None:
    """Why a PEM text cannot sign private_key_jwt assertions, or None when it can."""
    try:
        signing_algorithm(pem)
    except ValueError as exc:
        return str(exc)
    return None


def signing_algorithm(pem: str) -> str:
    """The JWS algorithm a private key signs with: ES256 (EC P-256) or RS256 (RSA)."""
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError) as exc:
        reason = "it is encrypted" if isinstance(exc, TypeError) else "it is not a PEM private key"
        raise ValueError(f"private_key cannot be used: {reason}") from None
    if isinstance(key, rsa.RSAPrivateKey):
        return "RS256"
    if isinstance(key, ec.EllipticCurvePrivateKey) and isinstance(key.curve, ec.SECP256R1):
        return "ES256"
    raise ValueError("private_key must be an RSA key or an EC key on the P-256 curve")


def _check_combination(
    ck: Checker, config: dict[str, Any], settings: OAuthConfig, path: KeyPath
) -> None:
    """Keys that only make sense together, or not at all together."""
    if settings.client_secret and settings.private_key:
        ck.error((*path, "private_key"), "give client_secret or private_key, not both")
    if (settings.client_secret or settings.private_key) and not settings.client_id:
        key = "client_secret" if settings.client_secret else "private_key"
        ck.error((*path, key), f"{key} needs client_id (the client it belongs to)")
    if settings.grant == "client_credentials" and not (
        settings.client_secret or settings.private_key
    ):
        where = (*path, "grant") if "grant" in config else path
        message = "grant client_credentials needs client_id with client_secret or private_key"
        ck.error(where, message)
    if settings.grant in ASSERTION_GRANTS and not settings.client_id and "client_id" not in config:
        where = (*path, "grant") if "grant" in config else path
        ck.error(where, f"grant {settings.grant} needs client_id (the client registered for it)")
    _check_method(ck, settings, path)


def _check_method(ck: Checker, settings: OAuthConfig, path: KeyPath) -> None:
    method = settings.token_endpoint_auth_method
    here = (*path, "token_endpoint_auth_method")
    if method == "private_key_jwt" and not settings.private_key:
        ck.error(here, "token_endpoint_auth_method private_key_jwt needs private_key")
    elif method in ("client_secret_basic", "client_secret_post") and not settings.client_secret:
        ck.error(here, f"token_endpoint_auth_method {method} needs client_secret")
    elif method == "none" and settings.grant == "client_credentials":
        ck.error(here, "grant client_credentials cannot use token_endpoint_auth_method none")


def auth_shape() -> Schema:
    """The schema of an `auth` block (`devall schema`)."""
    return keys_object(_KEYS, strict=True)
