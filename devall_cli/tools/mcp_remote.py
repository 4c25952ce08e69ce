"""`mcp_remote`: an MCP server reached over streamable HTTP, or SSE when the URL ends in `/sse`.

One session per server per run. `headers` go with every request; `timeout` bounds each request
and each connect + handshake attempt. Connecting and listing are tried 3 times (waiting 0.5 s,
then 1 s) while the server cannot be reached. A session the server forgot (HTTP 404 after a
restart) or a dropped connection is replaced once, transparently, and the request retried.
With `auth:` the requests carry an OAuth access token (oauth_client.py), obtained, cached,
refreshed and stepped up as the MCP authorization spec describes.
Escaped lone surrogates in the server's JSON become U+FFFD before the MCP SDK parses it (its
parser refuses the whole message otherwise), as for every other foreign text (see text.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx2
from fastmcp.client.transports import SSETransport, StreamableHttpTransport

from devall_cli.errors import DevallError
from devall_cli.text import clean_json_escapes
from devall_cli.tools.attachments import AttachmentStore
from devall_cli.tools.base import AuthCallback, AuthNotice, Elicitor, LogCallback, ToolEvents
from devall_cli.tools.kinds.mcp_remote import McpRemoteConfig
from devall_cli.tools.mcp_session import McpSessionSource

if TYPE_CHECKING:
    from devall_cli.tools.oauth_client import DevallOAuth

REMOTE_MAX_CONCURRENCY = 16
LIST_RETRY_DELAYS = (0.5, 1.0)


def uses_sse(url: str) -> bool:
    """Whether a server URL selects the legacy SSE transport (its path ends in `/sse`)."""
    return urlsplit(url).path.rstrip("/").endswith("/sse")


class RemoteSource(McpSessionSource):
    """A remote MCP server over HTTP with one long-lived session."""

    kind = "mcp_remote"
    retry_delays = LIST_RETRY_DELAYS

    def __init__(
        self,
        *,
        id: str,
        config: McpRemoteConfig,
        store: AttachmentStore | None = None,
        on_log: LogCallback | None = None,
        max_concurrency: int = REMOTE_MAX_CONCURRENCY,
        on_auth: AuthCallback | None = None,
        reveal: Callable[[str], None] | None = None,
        interactive: bool = True,
        events: ToolEvents | None = None,
        elicitor: Elicitor | None = None,
    ) -> None:
        super().__init__(
            id=id,
            target=config.display_target(),
            request_timeout=config.timeout,
            init_timeout=config.timeout,
            store=store,
            on_log=on_log,
            max_concurrency=max_concurrency,
            client_config=config.client,
            events=events,
            elicitor=elicitor,
        )
        self.config = config
        self._last_status: int | None = None
        self._on_auth = on_auth
        self._reveal = reveal
        self._interactive = interactive
        self._oauth: DevallOAuth | None = None
        self._path = urlsplit(config.server).path.rstrip("/")

    @property
    def log_tail(self) -> list[str]:
        """The latest log lines (server notifications and reconnect notes)."""
        return list(self._recent_log)

    def make_transport(self) -> StreamableHttpTransport | SSETransport:
        """A streamable HTTP transport, or SSE for `/sse` URLs, sending the configured headers."""
        headers = {str(k): str(v) for k, v in self.config.headers.items()}
        self._last_status = None  # a new connection: forget statuses of the previous one
        auth = self.oauth()
        if uses_sse(self.config.server):
            return SSETransport(
                self.config.server,
                headers=headers,
                auth=auth,
                httpx_client_factory=self._http_client,
            )
        return StreamableHttpTransport(
            self.config.server, headers=headers, auth=auth, httpx_client_factory=self._http_client
        )

    def oauth(self) -> DevallOAuth | None:
        """The server's OAuth (one for every connection, so tokens outlive a reconnect)."""
        if self.config.auth is None:
            return None
        if self._oauth is None:
            from devall_cli.tools.oauth_client import build_oauth

            self._oauth = build_oauth(
                self.config.server,
                self.config.auth,
                notify=self._auth_notice,
                reveal=self._reveal or (lambda secret: None),
                person=self.waits.person,
                interactive=self._interactive,
            )
        return self._oauth

    def _auth_notice(self, notice: AuthNotice) -> None:
        self._log(f"[devall] oauth: {notice.message}" + (f": {notice.url}" if notice.url else ""))
        if self._on_auth is not None:
            self._on_auth(self.id, notice)

    def _client_init_timeout(self) -> float:
        # fastmcp's handshake bound cannot stop while someone signs in; ours can (mcp_session).
        return 0.0 if self.config.auth is not None else self.init_timeout

    def _http_client(
        self,
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
        **_: Any,
    ) -> httpx2.AsyncClient:
        """The HTTP client of one connection; it records response statuses for error reports."""
        # Redirects are not followed here: the MCP transports follow same-origin ones themselves.
        return httpx2.AsyncClient(
            headers=headers,
            timeout=timeout or httpx2.Timeout(30.0, read=300.0),
            auth=auth,
            event_hooks={"response": [self._record_status, clean_json_response]},
        )

    async def _record_status(self, response: httpx2.Response) -> None:
        # Only the MCP endpoint's answers: not those of OAuth discovery or the token endpoint.
        if response.request.url.path.rstrip("/").startswith(self._path):
            self._last_status = response.status_code

    def _http_status(self) -> int | None:
        status = self._last_status
        return status if status is not None and status >= 400 else None

    async def _on_session_lost(self, exc: BaseException) -> bool:
        """Replace the session once; a failure to reconnect is raised as a DevallError."""
        self._log("[devall] session lost; reconnecting")
        try:
            await self._reconnect()
        except DevallError as error:
            self._log(f"[devall] reconnect failed: {error.message}")
            raise
        self._log("[devall] reconnected")
        return True


async def clean_json_response(response: httpx2.Response) -> None:
    """Read JSON and event-stream bodies through `clean_json_escapes` (plain bodies only)."""
    content_type = response.headers.get("content-type", "")
    is_json = "json" in content_type or "event-stream" in content_type
    # A compressed body is decoded later, from the raw stream: its bytes are not JSON text.
    plain = response.headers.get("content-encoding", "").strip().lower() in ("", "identity")
    if is_json and plain and isinstance(response.stream, httpx2.AsyncByteStream):
        response.stream = _CleanJsonStream(response.stream)


class _CleanJsonStream(httpx2.AsyncByteStream):
    """A response body passed on line by line, lone surrogate escapes replaced."""

    def __init__(self, inner: httpx2.AsyncByteStream) -> None:
        self._inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        held = bytearray()  # the start of a line not yet complete: an escape may be cut in two
        async for chunk in self._inner:
            end = max(chunk.rfind(b"\n"), chunk.rfind(b"\r")) + 1
            if end == 0:
                held += chunk
                continue
            yield clean_json_escapes(bytes(held) + chunk[:end])
            held = bytearray(chunk[end:])
        if held:
            yield clean_json_escapes(bytes(held))

    async def aclose(self) -> None:
        await self._inner.aclose()
