"""DPoP proofs and state (RFC 9449); the flow against servers is the conformance suite's."""

from __future__ import annotations

import base64
import hashlib
import time
from pathlib import Path

import httpx2
import jwt

from devall_cli.tools.oauth_cache import TokenCache
from devall_cli.tools.oauth_dpop import Dpop, DpopKey


def claims_of(proof: str) -> tuple[dict[str, object], dict[str, object]]:
    """The header and the claims of a proof, its signature checked with the key it names."""
    header = jwt.get_unverified_header(proof)
    public = jwt.PyJWK(header["jwk"], algorithm="ES256").key
    return header, jwt.decode(proof, public, algorithms=["ES256"])


def test_a_proof_is_signed_by_the_key_in_its_header() -> None:
    key = DpopKey.generate()
    proof = key.proof("post", "https://mcp.test/mcp?x=1#top", token="tok-1", nonce="n-1")
    header, claims = claims_of(proof)
    assert header["typ"] == "dpop+jwt" and header["alg"] == "ES256"
    assert header["jwk"] == key.public_jwk and "d" not in key.public_jwk
    digest = base64.urlsafe_b64encode(hashlib.sha256(b"tok-1").digest()).rstrip(b"=").decode()
    assert claims["ath"] == digest
    assert claims["htm"] == "POST" and claims["htu"] == "https://mcp.test/mcp"
    assert claims["nonce"] == "n-1"
    assert abs(int(str(claims["iat"])) - time.time()) < 60
    # A token request's proof has neither ath nor nonce; every proof has its own jti.
    _, other = claims_of(key.proof("POST", "https://as.test/token"))
    assert "ath" not in other and "nonce" not in other and other["jti"] != claims["jti"]


def test_key_binding_and_nonces_outlive_the_process(tmp_path: Path) -> None:
    server = "https://mcp.test/mcp"
    entry = TokenCache(tmp_path).entry("k", server=server, grant="g", client_id=None)
    revealed: list[str] = []
    dpop = Dpop(entry, None, revealed.append)
    token_url = "https://as.test/token"
    metadata = httpx2.Response(
        200,
        json={"issuer": "https://as.test", "dpop_signing_alg_values_supported": ["ES256"]},
        request=httpx2.Request("GET", "https://as.test/.well-known/oauth-authorization-server"),
    )
    assert not dpop.wanted() and not dpop.heard(metadata, resource=False) and dpop.wanted()
    # The token endpoint asks for a nonce: the request is to be sent again, carrying it.
    request = httpx2.Request("POST", token_url)
    dpop.sign(request)
    challenge = httpx2.Response(
        400,
        headers={"DPoP-Nonce": "as-nonce"},
        json={"error": "use_dpop_nonce"},
        request=request,
    )
    assert dpop.heard(challenge, resource=False)
    dpop.sign(request)
    assert claims_of(request.headers["DPoP"])[1]["nonce"] == "as-nonce"
    # A DPoP token is bound; the SDK, which knows only Bearer, reads it as one.
    answer = httpx2.Response(
        200, json={"access_token": "at-1", "token_type": "DPoP"}, request=request
    )
    dpop.accept(answer)
    assert dpop.bound and b'"Bearer"' in answer.content
    assert revealed and "PRIVATE KEY" in revealed[0]  # the key is masked like a token
    assert [login.dpop for login in TokenCache(tmp_path).logins()] == [True]  # `auth list`
    # A later run finds the same key, still bound, and presents the token with it.
    later = Dpop(entry, None, lambda secret: None)
    later.load(entry.load())
    mcp = httpx2.Request("POST", "https://mcp.test/mcp")
    later.present(mcp, "at-1")
    header, _ = claims_of(mcp.headers["DPoP"])
    assert mcp.headers["Authorization"] == "DPoP at-1" and header["jwk"] == dpop.key().public_jwk
    assert later.bound and later.wanted()
    # A server that resends a 401 challenge with a nonce is retried; one without a nonce is not.
    refused = httpx2.Response(
        401,
        headers={"WWW-Authenticate": 'DPoP error="use_dpop_nonce"', "DPoP-Nonce": "rs-1"},
        request=mcp,
    )
    assert later.heard(refused, resource=True)
    plain = httpx2.Response(401, headers={"WWW-Authenticate": "DPoP"}, request=mcp)
    assert not later.heard(plain, resource=True)
    # `dpop: false` never asks for a bound token.
    assert not Dpop(entry, False, lambda secret: None).wanted()
