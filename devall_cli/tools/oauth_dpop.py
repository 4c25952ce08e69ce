"""DPoP (RFC 9449): access tokens bound to a key of devall's, as the MCP DPoP extension uses them.

A DPoP-bound token is worth nothing without the private key it is bound to, so:
- each token cache entry has its own ES256 key, created the first time one is needed and kept
  in the entry (an owner-only file, oauth_cache.py) beside the token, so that a cached bound
  token keeps working in a later run;
- every token request, and every request that presents a bound token, carries a proof in the
  `DPoP` header: a JWT of type `dpop+jwt` with the public key in its `jwk` header, a new `jti`
  each time, `htm` (the method), `htu` (the URL without query and fragment), `iat`, and on
  requests to the MCP server `ath`, the base64url SHA-256 of the token;
- the latest `DPoP-Nonce` a server (an origin) sent goes into the next proof to it; a
  `use_dpop_nonce` error (400 from the token endpoint, 401 with `WWW-Authenticate: DPoP
  error="use_dpop_nonce"` from the MCP server) is answered by sending the request once more
  with a fresh proof carrying the new nonce.

When: `auth: dpop: true` always, `false` never, else (`auto`, the default) when the
authorization server's metadata lists ES256 in `dpop_signing_alg_values_supported`, or when the
cached token is bound already. The token is presented as `Authorization: DPoP <token>` when the
token response said `token_type: DPoP`, else as a Bearer token. Proofs and the key are never
logged; the key is handed to the redactor all the same.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2
import jwt
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from mcp.client.auth.utils import extract_field_from_www_auth

from devall_cli import json_limits
from devall_cli.tools.oauth_cache import CacheEntry

ALGORITHM = "ES256"
PROOF_TYPE = "dpop+jwt"
PROOF_HEADER = "DPoP"
NONCE_HEADER = "DPoP-Nonce"
USE_NONCE = "use_dpop_nonce"
SCHEME = "DPoP"
# Where authorization server metadata is read (RFC 8414, OpenID discovery): the MCP SDK's model
# of it drops `dpop_signing_alg_values_supported`, so the answer is read here too.
METADATA_PATHS = ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def htu(url: str) -> str:
    """The `htu` of a request URL: without its query and fragment (RFC 9449 §4.2)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def ath(token: str) -> str:
    """The `ath` of an access token: base64url of its SHA-256 (RFC 9449 §4.2)."""
    return _b64url(hashlib.sha256(token.encode("ascii")).digest())


def origin(url: str) -> str:
    """Whose nonce a URL uses: its scheme and authority."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class DpopKey:
    """An EC P-256 key pair that signs proofs."""

    def __init__(self, private: ec.EllipticCurvePrivateKey) -> None:
        self.private = private
        numbers = private.public_key().public_numbers()
        self.public_jwk = {
            "kty": "EC",
            "crv": "P-256",
            "x": _b64url(numbers.x.to_bytes(32, "big")),
            "y": _b64url(numbers.y.to_bytes(32, "big")),
        }

    @classmethod
    def generate(cls) -> DpopKey:
        """A new key."""
        return cls(ec.generate_private_key(ec.SECP256R1()))

    @classmethod
    def from_pem(cls, pem: str) -> DpopKey | None:
        """A key kept as PEM text, or None when the text is not an EC P-256 private key."""
        try:
            key = serialization.load_pem_private_key(pem.encode(), password=None)
        except (ValueError, TypeError, UnsupportedAlgorithm):
            return None
        if isinstance(key, ec.EllipticCurvePrivateKey) and isinstance(key.curve, ec.SECP256R1):
            return cls(key)
        return None

    def pem(self) -> str:
        """The private key as PKCS#8 PEM text, to keep in the cache entry."""
        return self.private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode("ascii")

    def thumbprint(self) -> str:
        """The JWK SHA-256 thumbprint (RFC 7638), what a bound token's `cnf.jkt` names."""
        canonical = json.dumps(self.public_jwk, sort_keys=True, separators=(",", ":"))
        return _b64url(hashlib.sha256(canonical.encode()).digest())

    def proof(
        self,
        method: str,
        url: str,
        *,
        token: str | None = None,
        nonce: str | None = None,
        now: float | None = None,
    ) -> str:
        """A DPoP proof for one request (with `ath` when it presents `token`)."""
        claims: dict[str, Any] = {
            "jti": str(uuid.uuid4()),
            "htm": method.upper(),
            "htu": htu(url),
            "iat": int(time.time() if now is None else now),
        }
        if token is not None:
            claims["ath"] = ath(token)
        if nonce is not None:
            claims["nonce"] = nonce
        headers = {"typ": PROOF_TYPE, "jwk": self.public_jwk}
        return jwt.encode(claims, self.private, algorithm=ALGORITHM, headers=headers)


class Dpop:
    """The DPoP state of one server's OAuth: its key, whether the token is bound, the nonces."""

    def __init__(
        self, entry: CacheEntry, setting: bool | None, reveal: Callable[[str], None]
    ) -> None:
        self.entry = entry
        self.setting = setting  # None: when the authorization server offers it
        self.bound = False
        self._reveal = reveal
        self._key: DpopKey | None = None
        self._nonces: dict[str, str] = {}
        self._offered: list[str] = []  # the authorization server's dpop_signing_alg_values

    def load(self, data: dict[str, Any]) -> None:
        """Take the key and the binding from the cache entry's content."""
        pem = data.get("dpop_key")
        self._key = DpopKey.from_pem(pem) if isinstance(pem, str) else None
        if self._key is not None and isinstance(pem, str):
            self._reveal(pem)
        self.bound = data.get("dpop_bound") is True and self._key is not None

    def wanted(self) -> bool:
        """Whether token requests carry a proof (ask for a bound token)."""
        if self.setting is not None:
            return self.setting
        return self.bound or ALGORITHM in self._offered

    def key(self) -> DpopKey:
        """The entry's key, created and kept the first time it is needed."""
        if self._key is None:
            self._key = DpopKey.generate()
            pem = self._key.pem()
            self._reveal(pem)
            self.entry.update(dpop_key=pem)
        return self._key

    def sign(self, request: httpx2.Request, token: str | None = None) -> None:
        """Put a fresh proof on a request (one presenting `token`, or a token request)."""
        url = str(request.url)
        nonce = self._nonces.get(origin(url))
        request.headers[PROOF_HEADER] = self.key().proof(
            request.method, url, token=token, nonce=nonce
        )

    def present(self, request: httpx2.Request, token: str) -> None:
        """Present a bound token: the DPoP scheme and a proof with its `ath`."""
        request.headers["Authorization"] = f"{SCHEME} {token}"
        self.sign(request, token)

    def heard(self, response: httpx2.Response, *, resource: bool) -> bool:
        """What an answer tells: the algorithms the authorization server offers, a nonce to
        use from now on; whether it asks to send the request again with that nonce."""
        request = response.request
        if request.method == "GET" and request.url.path.endswith(METADATA_PATHS):
            body = _json(response) if response.status_code == 200 else None
            offered = body.get("dpop_signing_alg_values_supported") if body else None
            if body and "issuer" in body:
                self._offered = [str(alg) for alg in offered] if isinstance(offered, list) else []
        nonce = response.headers.get(NONCE_HEADER, "").strip()
        if not nonce:
            return False
        self._nonces[origin(str(response.request.url))] = nonce
        if PROOF_HEADER not in response.request.headers:
            return False
        if resource:
            error = extract_field_from_www_auth(response, "error")
            return response.status_code == 401 and error == USE_NONCE
        return response.status_code == 400 and _json_error(response) == USE_NONCE

    def accept(self, response: httpx2.Response) -> None:
        """Note whether a token response's token is bound; the MCP SDK knows only Bearer, so
        a `token_type` of DPoP is handed on to it as Bearer."""
        body = _json(response) if response.status_code in (200, 201) else None
        if body is None or not isinstance(body.get("access_token"), str):
            return
        kind = body.get("token_type")
        self.bound = isinstance(kind, str) and kind.lower() == SCHEME.lower()
        if self.bound:
            body["token_type"] = "Bearer"
            response._content = json.dumps(body).encode()  # what the SDK's `aread()` returns
        self.entry.update(dpop_bound=True if self.bound else None)


def _json(response: httpx2.Response) -> dict[str, Any] | None:
    """A read answer's JSON object, or None."""
    try:
        body = json_limits.loads(response.content)
    except (ValueError, httpx2.ResponseNotRead):  # JsonLimitError is a ValueError
        return None
    return body if isinstance(body, dict) else None


def _json_error(response: httpx2.Response) -> str | None:
    body = _json(response)
    error = body.get("error") if body else None
    return error if isinstance(error, str) else None
