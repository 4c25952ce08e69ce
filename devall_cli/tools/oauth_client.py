"""OAuth 2.1 for remote MCP servers: the MCP SDK's client provider, completed where it stops.

The SDK's `OAuthClientProvider` does the protocol: 401 + WWW-Authenticate → protected resource
metadata → authorization server metadata (with the fallbacks for older servers, and the issuer
checked strictly, RFC 8414 §3.3) → registration (pre-registered, CIMD or dynamic) → code + PKCE
→ token on every request, refresh, step-up on 403 `insufficient_scope`. `DevallOAuth` adds:
- the client credentials grant, and every token endpoint auth method (basic, post, none and
  private_key_jwt, whose assertion is signed with ES256 or RS256 as the key requires) for
  every grant, the method chosen from the server's metadata unless the config names one;
- the token cache (oauth_cache.py), metadata included so a later process refreshes at the
  right token endpoint, and tokens treated as expired a little early;
- the loopback redirect (oauth_redirect.py) and its browser, `none` and fetch modes;
- at most MAX_AUTHORIZATIONS authorizations in a row without a request getting through;
- DPoP-bound tokens (oauth_dpop.py): a proof on token requests and on every request, nonces;
- the jwt_bearer and identity_assertion grants (oauth_grants.py): a presented workload token, or
  an ID token exchanged at the identity provider for an ID-JAG, then presented;
- notices for the user, and every token handed to the redactor.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractContextManager
from dataclasses import fields
from typing import Any, TypeVar
from urllib.parse import parse_qsl, quote, urlsplit

import httpx2
import jwt
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.oauth2 import OAuthContext
from mcp.client.auth.utils import union_scopes
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import AnyUrl, BaseModel, ValidationError

from devall_cli import limits
from devall_cli.errors import AuthError
from devall_cli.tools.base import AuthNotice
from devall_cli.tools.kinds.oauth_settings import OAuthConfig, signing_algorithm
from devall_cli.tools.oauth_cache import CacheEntry, TokenCache, cache_root
from devall_cli.tools.oauth_dpop import Dpop, htu
from devall_cli.tools.oauth_grants import AssertionGrant, registered_grant_type
from devall_cli.tools.oauth_redirect import (
    LoopbackRedirect,
    RedirectSettings,
    free_port,
    port_is_free,
    redirect_uri,
)

MAX_AUTHORIZATIONS = 3
CLIENT_NAME = "devall"
ASSERTION_LIFETIME = 300
JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
# A token is used until this long before it expires (at most a tenth of its lifetime).
EXPIRY_MARGIN = 30.0

Notify = Callable[[AuthNotice], None]
RevealSecret = Callable[[str], None]


class _Context(OAuthContext):
    """The SDK's flow context, with devall's client authentication and expiry margin."""

    owner: DevallOAuth

    def update_token_expiry(self, token: OAuthToken) -> None:
        """Expire a little early, so a token is refreshed before the server refuses it."""
        super().update_token_expiry(token)
        if self.token_expiry_time is not None and token.expires_in:
            self.token_expiry_time -= min(EXPIRY_MARGIN, int(token.expires_in) / 10)

    def prepare_token_auth(
        self, data: dict[str, str], headers: dict[str, str] | None = None
    ) -> tuple[dict[str, str], dict[str, str]]:
        """Authenticate a token request with the method the client uses."""
        headers = {} if headers is None else headers
        client = self.client_info
        if client is None:
            return data, headers
        method = self.owner.auth_method()
        data = {k: v for k, v in data.items() if k != "client_secret"}
        data["client_id"] = client.client_id
        secret = client.client_secret or ""
        if method == "client_secret_basic":
            pair = f"{quote(client.client_id, safe='')}:{quote(secret, safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        elif method == "client_secret_post":
            data["client_secret"] = secret
        elif method == "private_key_jwt":
            data["client_assertion_type"] = JWT_BEARER
            data["client_assertion"] = self.owner.assertion()
        return data, headers


class DevallOAuth(OAuthClientProvider):
    """httpx2 auth for one remote server, configured by its `auth:` mapping."""

    def __init__(
        self,
        *,
        server: str,
        config: OAuthConfig,
        entry: CacheEntry,
        redirect: LoopbackRedirect | None,
        notify: Notify,
        reveal: RevealSecret,
        interactive: bool = True,
    ) -> None:
        code_grant = config.grant == "authorization_code"
        metadata = OAuthClientMetadata(
            client_name=CLIENT_NAME,
            redirect_uris=[AnyUrl(redirect.uri)] if code_grant and redirect else None,
            grant_types=(
                ["authorization_code", "refresh_token"]
                if code_grant
                else [registered_grant_type(config.grant)]
            ),
            token_endpoint_auth_method=_registered_method(config),
            scope=" ".join(config.scopes) or None,
        )
        super().__init__(
            server_url=server,
            client_metadata=metadata,
            storage=_CacheStorage(entry),
            redirect_handler=redirect.redirect_handler if redirect else None,
            callback_handler=redirect.callback_handler if redirect else None,
            client_metadata_url=config.client_metadata_url,
        )
        context = _Context(**{f.name: getattr(self.context, f.name) for f in fields(self.context)})
        context.owner = self
        self.context = context
        self.config = config
        self.entry = entry
        self.redirect = redirect
        self.interactive = interactive
        self._notify = notify
        self._reveal = reveal
        self._fixed_client = _preregistered(config, metadata)
        self._in_a_row = 0
        self._step_up = False
        self._algorithm = signing_algorithm(config.private_key) if config.private_key else None
        self.dpop = Dpop(entry, config.dpop, reveal)
        assertion = config.assertion
        self._grant = AssertionGrant(config.grant, assertion, reveal) if assertion else None

    # --- the flow ------------------------------------------------------------------------------

    async def _auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The SDK's flow, watched: what answers the request, and the registration it asks."""
        flow = super()._auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                if outgoing is not request:
                    outgoing = self._registration(outgoing)
                self._prove(outgoing, request, retry=False)
                response = yield outgoing
                if outgoing is not request:  # discovery, registration, token: read, bounded
                    response = await bounded_response(response)
                if self.dpop.heard(response, resource=outgoing is request):
                    outgoing = self._prove(outgoing, request, retry=True)  # once, with the nonce
                    response = yield outgoing
                    if outgoing is not request:
                        response = await bounded_response(response)
                    self.dpop.heard(response, resource=outgoing is request)
                following = self._grant.follow_up(outgoing, response) if self._grant else None
                if following is not None:  # the IdP answered: the token request comes next
                    outgoing = following
                    continue
                if outgoing is request:
                    self._answered(response)
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        except OAuthFlowError as exc:
            raise AuthError(f"authorization failed: {exc}") from exc
        finally:
            await flow.aclose()

    def _prove(
        self, outgoing: httpx2.Request, request: httpx2.Request, *, retry: bool
    ) -> httpx2.Request:
        """The DPoP proof of a token request, or a fresh one for a request sent again."""
        if outgoing is request:
            if retry and self.context.is_token_valid():
                self._add_auth_header(request)
            return request
        is_token = outgoing.method == "POST" and htu(str(outgoing.url)) == htu(
            self._get_token_endpoint()
        )
        if not is_token or not self.dpop.wanted():
            return outgoing
        if retry:
            outgoing = self._renewed(outgoing)
        self.dpop.sign(outgoing)
        return outgoing

    def _renewed(self, outgoing: httpx2.Request) -> httpx2.Request:
        """A token request to send again, with a new client assertion (a jti is used once)."""
        form = dict(parse_qsl(outgoing.content.decode()))
        if "client_assertion" not in form:
            return outgoing
        form["client_assertion"] = self.assertion()
        headers = {k: v for k, v in outgoing.headers.items() if k.lower() != "content-length"}
        return httpx2.Request(outgoing.method, outgoing.url, data=form, headers=headers)

    def _add_auth_header(self, request: httpx2.Request) -> None:
        """A bound token goes with the DPoP scheme and a fresh proof, any other as Bearer."""
        tokens = self.context.current_tokens
        if self.dpop.bound and tokens is not None and tokens.access_token:
            self.dpop.present(request, tokens.access_token)
        else:
            super()._add_auth_header(request)

    def _answered(self, response: httpx2.Response) -> None:
        if response.status_code < 400:
            self._in_a_row = 0
        self._step_up = response.status_code == 403

    def _registration(self, outgoing: httpx2.Request) -> httpx2.Request:
        """Ask for a token endpoint auth method the authorization server supports."""
        is_json = outgoing.headers.get("content-type", "").startswith("application/json")
        if outgoing.method != "POST" or not is_json or self.context.client_info is not None:
            return outgoing
        body = json.loads(outgoing.content or b"{}")
        if isinstance(body, dict) and "token_endpoint_auth_method" not in body:
            supported = self._supported_methods()
            for method in ("none", "client_secret_basic", "client_secret_post"):
                if supported is None or method in supported:
                    body["token_endpoint_auth_method"] = method
                    break
            return httpx2.Request(
                "POST", outgoing.url, json=body, headers={"Content-Type": "application/json"}
            )
        return outgoing

    async def _perform_authorization(self) -> httpx2.Request:
        """One authorization (code or client credentials), bounded in number and interactivity."""
        self._in_a_row += 1
        if self._in_a_row > MAX_AUTHORIZATIONS:
            raise AuthError(
                f"gave up after {MAX_AUTHORIZATIONS} authorizations in a row: the server keeps "
                "refusing the token"
            )
        self._apply_configured_scopes()
        if self.config.grant == "client_credentials":
            return self._client_credentials_request()
        if self._grant is not None:
            endpoint, scope = self._get_token_endpoint(), self.context.client_metadata.scope
            return self._grant.first_request(self.context, endpoint, self._issuer(), scope)
        if self.redirect is None or (not self.interactive and self.redirect.settings.needs_person):
            raise AuthError(
                "needs a sign-in in the browser first: run `devall auth login WORKFLOW` (or "
                f"`devall auth login --url {self.context.server_url}`)",
                status="http_401",
            )
        try:
            return await super()._perform_authorization()
        except Exception:
            self._forget_registration()
            raise

    def _apply_configured_scopes(self) -> None:
        """Configured scopes replace the discovered choice; a step-up adds what is asked for."""
        if not self.config.scopes:
            return
        configured = " ".join(self.config.scopes)
        challenged = self.context.client_metadata.scope
        self.context.client_metadata.scope = (
            union_scopes(configured, challenged) if self._step_up else configured
        )

    def _issuer(self) -> str:
        """The authorization server's issuer, the audience of an ID-JAG (a root issuer is written
        without the slash the URL parser adds, as RFC 8414 writes issuers)."""
        metadata = self.context.oauth_metadata
        issuer = str(metadata.issuer) if metadata else self.context.auth_server_url or ""
        return issuer.rstrip("/") if urlsplit(issuer).path == "/" else issuer

    def _client_credentials_request(self) -> httpx2.Request:
        data: dict[str, str] = {"grant_type": "client_credentials"}
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        data, headers = self.context.prepare_token_auth(data, headers)
        if self.context.should_include_resource_param(self.context.protocol_version):
            data["resource"] = self.context.get_resource_url()
        if self.context.client_metadata.scope:
            data["scope"] = self.context.client_metadata.scope
        return httpx2.Request("POST", self._get_token_endpoint(), data=data, headers=headers)

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        self.dpop.accept(response)
        try:
            await super()._handle_token_response(response)
        except OAuthFlowError:
            if response.status_code in (400, 401):
                self._forget_registration()
            raise
        self._tokens_saved()
        token = self.context.current_tokens
        scopes = f" (scopes: {token.scope})" if token and token.scope else ""
        grant = self.config.grant.replace("_", " ")
        bound = "; the token is DPoP-bound" if self.dpop.bound else ""
        self._notify(AuthNotice("authorized", f"authorized with the {grant} grant{scopes}{bound}"))

    async def _handle_refresh_response(self, response: httpx2.Response) -> bool:
        self.dpop.accept(response)
        refreshed = await super()._handle_refresh_response(response)
        if refreshed:
            self._tokens_saved()
            self._notify(AuthNotice("refreshed", "access token refreshed"))
        else:
            self.entry.forget_tokens()
        return refreshed

    # --- state -------------------------------------------------------------------------------

    async def _initialize(self) -> None:
        """Cached tokens, client and metadata; a pre-registered client replaces a cached one."""
        await super()._initialize()
        data = self.entry.load()
        self.dpop.load(data)
        if self._fixed_client is not None:
            self.context.client_info = self._fixed_client
        else:
            self._fit_redirect()
        if self.context.current_tokens is not None:
            expires_at = data.get("expires_at")
            self.context.token_expiry_time = (
                float(expires_at) if isinstance(expires_at, int | float) else None
            )
        self._restore_metadata(data)
        self._reveal_all()

    def _fit_redirect(self) -> None:
        """Reuse the port a cached registration names, or register again on a new one."""
        client = self.context.client_info
        if client is None or self.redirect is None or not client.redirect_uris:
            return
        registered = str(client.redirect_uris[0])
        if registered == self.redirect.uri:
            return
        port = urlsplit(registered).port or 0
        reusable = registered == redirect_uri(port) and self.config.redirect_port is None
        if reusable and port_is_free(port):
            self.redirect.port = port
            self.context.client_metadata.redirect_uris = [AnyUrl(self.redirect.uri)]
        elif client.client_id != self.config.client_metadata_url:
            self.context.client_info = None  # registered for another redirect URI: register again

    def _forget_registration(self) -> None:
        """A dynamic registration the server refused is dropped: the next try registers again."""
        client = self.context.client_info
        dynamic = self._fixed_client is None and client is not None
        if dynamic and client is not None and client.client_id != self.config.client_metadata_url:
            self.context.client_info = None
            self.entry.update(client=None)

    def _restore_metadata(self, data: dict[str, Any]) -> None:
        try:
            if isinstance(data.get("server_metadata"), dict):
                self.context.oauth_metadata = OAuthMetadata.model_validate(data["server_metadata"])
            if isinstance(data.get("resource_metadata"), dict):
                self.context.protected_resource_metadata = ProtectedResourceMetadata.model_validate(
                    data["resource_metadata"]
                )
        except ValidationError:
            self.context.oauth_metadata = None
            self.context.protected_resource_metadata = None
        if isinstance(data.get("auth_server_url"), str):
            self.context.auth_server_url = data["auth_server_url"]

    def _tokens_saved(self) -> None:
        """Store the expiry and the metadata beside the tokens the SDK stored."""
        context = self.context
        self.entry.update(
            expires_at=context.token_expiry_time,
            server_metadata=_dump(context.oauth_metadata),
            resource_metadata=_dump(context.protected_resource_metadata),
            auth_server_url=context.auth_server_url,
        )
        self._reveal_all()

    def _reveal_all(self) -> None:
        tokens = self.context.current_tokens
        client = self.context.client_info
        for value in (
            tokens.access_token if tokens else None,
            tokens.refresh_token if tokens else None,
            client.client_secret if client else None,
        ):
            if value:
                self._reveal(value)

    # --- client authentication ------------------------------------------------------------------

    def _supported_methods(self) -> list[str] | None:
        metadata = self.context.oauth_metadata
        return list(metadata.token_endpoint_auth_methods_supported or []) if metadata else None

    def auth_method(self) -> str:
        """The token endpoint auth method: configured, else registered, else from the metadata."""
        if self.config.token_endpoint_auth_method:
            return self.config.token_endpoint_auth_method
        if self.config.private_key:
            return "private_key_jwt"
        client = self.context.client_info
        if client is not None and client.token_endpoint_auth_method and not self.config.client_id:
            return client.token_endpoint_auth_method
        if client is None or not client.client_secret:
            return "none"
        # RFC 8414 §2: without a list, client_secret_basic is the default.
        supported = self._supported_methods() or ["client_secret_basic"]
        if "client_secret_basic" not in supported and "client_secret_post" in supported:
            return "client_secret_post"
        return "client_secret_basic"

    def assertion(self) -> str:
        """A private_key_jwt client assertion (RFC 7523 §2.2) for the authorization server."""
        client = self.context.client_info
        if client is None or self.config.private_key is None or self._algorithm is None:
            raise AuthError("private_key_jwt needs client_id and private_key")
        metadata = self.context.oauth_metadata
        audience = str(metadata.issuer) if metadata else self._get_token_endpoint()
        now = int(time.time())
        claims = {
            "iss": client.client_id,
            "sub": client.client_id,
            "aud": audience,
            "iat": now,
            "exp": now + ASSERTION_LIFETIME,
            "jti": str(uuid.uuid4()),
        }
        return jwt.encode(claims, self.config.private_key, algorithm=self._algorithm)


class _CacheStorage:
    """The SDK's TokenStorage, on a cache entry."""

    def __init__(self, entry: CacheEntry) -> None:
        self.entry = entry

    async def get_tokens(self) -> OAuthToken | None:
        return _load(OAuthToken, self.entry.load().get("tokens"))

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.entry.update(tokens=tokens.model_dump(mode="json", exclude_none=True))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return _load(OAuthClientInformationFull, self.entry.load().get("client"))

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.entry.update(client=client_info.model_dump(mode="json", exclude_none=True))


_Model = TypeVar("_Model", bound=BaseModel)


async def bounded_response(response: httpx2.Response) -> httpx2.Response:
    """The answer of an authorization request, read whole but refused (AuthError) once it is
    longer than `limits.AUTH_RESPONSE_BYTES`; the flow and httpx then find it read."""
    limit = limits.AUTH_RESPONSE_BYTES
    body = bytearray()
    try:
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > limit:
                raise AuthError(
                    f"the authorization server's answer to {response.request.url.path} is "
                    f"longer than {limit} bytes; devall reads at most that much of it"
                )
    except httpx2.HTTPError as exc:
        raise AuthError(f"cannot read the authorization server's answer: {exc}") from exc
    finally:
        await response.aclose()
    # What `aread()` keeps: later reads (the SDK's, httpx's own) return it.
    response._content = bytes(body)
    return response


def _load(model: type[_Model], value: Any) -> _Model | None:
    if not isinstance(value, dict):
        return None
    try:
        return model.model_validate(value)
    except ValidationError:
        return None


def _dump(model: Any) -> dict[str, Any] | None:
    return model.model_dump(mode="json", exclude_none=True) if model is not None else None


def _registered_method(config: OAuthConfig) -> Any:
    """The method a dynamic registration asks for when the config names one."""
    return config.token_endpoint_auth_method


def _preregistered(
    config: OAuthConfig, metadata: OAuthClientMetadata
) -> OAuthClientInformationFull | None:
    """The client information of a pre-registered client (`client_id` in the config)."""
    if not config.client_id:
        return None
    return OAuthClientInformationFull(
        client_id=config.client_id,
        client_secret=config.client_secret,
        redirect_uris=metadata.redirect_uris,
        grant_types=metadata.grant_types,
        token_endpoint_auth_method=config.token_endpoint_auth_method,
        scope=metadata.scope,
    )


def cache_entry(server: str, config: OAuthConfig) -> CacheEntry:
    """The token cache entry of a server and its auth settings."""
    client = config.client_id or config.client_metadata_url
    cache = TokenCache(cache_root())
    key = config.cache_key(server)
    return cache.entry(key, server=server, grant=config.grant, client_id=client)


def build_oauth(
    server: str,
    config: OAuthConfig,
    *,
    notify: Notify,
    reveal: RevealSecret,
    person: Callable[[], AbstractContextManager[None]],
    interactive: bool = True,
) -> DevallOAuth:
    """The auth of one remote server, its redirect set up from the environment."""
    settings = RedirectSettings.from_env()
    redirect = None
    if config.grant == "authorization_code":
        redirect = LoopbackRedirect(
            config.redirect_port or free_port(),
            settings,
            notify=lambda message, url: notify(AuthNotice("authorize", message, url)),
            person=person,
        )
    return DevallOAuth(
        server=server,
        config=config,
        entry=cache_entry(server, config),
        redirect=redirect,
        notify=notify,
        reveal=reveal,
        interactive=interactive,
    )
