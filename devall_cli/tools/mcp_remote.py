"""`mcp_remote`: an MCP server reached over streamable HTTP, or SSE when the URL ends in `/sse`.

One session per server per run, spoken by fastmcp's client or, for the commands that only list
and call (`client="direct"`: `tools list`, `tools call`, `probe`), by devall's own light client
(mcp_direct.py on http_lines.py, without importing fastmcp) when the URL is streamable HTTP and
no `auth:` is configured. What the light client does not speak (an authorization challenge to
its handshake, a server it agrees on no protocol version with, an odd answer) hands the server
to fastmcp's client, once, with a note in the server's log.

`headers` go with every request; `timeout` bounds each request and each connect + handshake
attempt. Connecting and listing are tried 3 times (waiting 0.5 s, then 1 s) while the server
cannot be reached. A session the server forgot (HTTP 404 after a restart) or a dropped
connection is replaced once, transparently, and the request retried. With `auth:` the requests
carry an OAuth access token (oauth_client.py), obtained, cached, refreshed and stepped up as the
MCP authorization spec describes. Escaped lone surrogates in the server's JSON become U+FFFD
before the MCP SDK parses it (its parser refuses the whole message otherwise), as for every other
foreign text (see text.py). An HTTP error names the first lines of the answer's body
(`error_reason`), masked and cut.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

import httpx2

from devall_cli.errors import DevallError
from devall_cli.redaction import Redactor, is_secret_name
from devall_cli.text import clean_json_escapes, visible
from devall_cli.tools.attachments import AttachmentStore
from devall_cli.tools.base import AuthCallback, AuthNotice, Elicitor, LogCallback, ToolEvents
from devall_cli.tools.http_lines import ERROR_BODY_BYTES, HttpLines, NotSpoken
from devall_cli.tools.http_reasons import error_reason
from devall_cli.tools.kinds.mcp_remote import McpRemoteConfig
from devall_cli.tools.mcp_errors import chain
from devall_cli.tools.mcp_handshake import MODERN_VERSIONS
from devall_cli.tools.mcp_input_required import with_result_type
from devall_cli.tools.mcp_protocol import RpcError
from devall_cli.tools.mcp_session import McpSessionSource

if TYPE_CHECKING:
    from fastmcp.client.transports import SSETransport, StreamableHttpTransport

    from devall_cli.tools.mcp_protocol import McpSession
    from devall_cli.tools.oauth_client import DevallOAuth

ClientKind = Literal["fastmcp", "direct"]
REMOTE_MAX_CONCURRENCY = 16
LIST_RETRY_DELAYS = (0.5, 1.0)
REASON_CHARS = 200  # of an error answer's body, in the error that names its status


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
        client: ClientKind = "fastmcp",
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
        self._last_reason: str | None = None
        # The light client speaks plain streamable HTTP only: not SSE, not OAuth.
        light = client == "direct" and config.auth is None and not uses_sse(config.server)
        self.client: ClientKind = "direct" if light else "fastmcp"
        self._output_schemas: dict[str, Mapping[str, Any] | None] = {}
        secrets = [value for name, value in config.headers.items() if is_secret_name(name)]
        self._mask = Redactor([*secrets, config.server])
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
        from fastmcp.client.transports import SSETransport, StreamableHttpTransport

        headers = self._headers()
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

    def _headers(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in self.config.headers.items()}

    async def _new_session(self) -> McpSession:
        """The light client's session, or fastmcp's where the light one cannot speak."""
        if self.client == "direct":
            try:
                return await self._open_direct()
            except NotSpoken as exc:
                self._fall_back(str(exc))
            except RpcError as exc:  # no protocol version agreed, e.g. -32022
                self._fall_back(f"the server refused the initialize handshake: {exc.message}")
        return await super()._new_session()

    async def _open_direct(self) -> McpSession:
        from devall_cli.tools.mcp_direct import open_direct

        self._last_status = self._last_reason = None  # a new connection, as in make_transport
        lines = HttpLines(
            self.config.server,
            headers=self._headers(),
            timeout=self.config.timeout,
            on_response=self._heard,
        )
        async with asyncio.timeout(self.init_timeout):  # fastmcp's Client bounds its own
            return await open_direct(
                lines,
                self.requests,
                server=self.server,
                note=self._log,
                output_schemas=self._output_schemas,
                closing=lines.close,
                probe_timeout=self.init_timeout / 2,  # the handshake gets the rest
            )

    def _fall_back(self, why: str) -> None:
        """Speak to the server with fastmcp's client from now on."""
        self.client = "fastmcp"
        self._log(f"[devall] {why}; speaking to it with fastmcp's client")

    def _heard(self, status: int, reason: str | None) -> None:
        """A response of the light client's (the fastmcp path records them in `_record_status`)."""
        self._last_status, self._last_reason = status, reason

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
            self._last_reason = None
            if response.status_code >= 400:
                self._last_reason = await _peek_reason(response)

    def _http_status(self) -> int | None:
        status = self._last_status
        return status if status is not None and status >= 400 else None

    def _http_reason(self) -> str | None:
        """What the body of the latest failed response said, masked and cut."""
        if self._http_status() is None or not self._last_reason:
            return None
        return self._mask.preview(visible(self._last_reason), REASON_CHARS)

    async def _on_session_lost(self, exc: BaseException) -> bool:
        """Replace the session once; a failure to reconnect is raised as a DevallError."""
        unspoken = next((item for item in chain(exc) if isinstance(item, NotSpoken)), None)
        if unspoken is not None and self.client == "direct":
            self._fall_back(str(unspoken))
        self._log("[devall] session lost; reconnecting")
        try:
            await self._reconnect()
        except DevallError as error:
            self._log(f"[devall] reconnect failed: {error.message}")
            raise
        self._log("[devall] reconnected")
        return True


async def _peek_reason(response: httpx2.Response) -> str | None:
    """The `error_reason` of an error answer, read from the first bytes of its body, which the
    response then hands on whole (plain bodies only: a compressed one is left alone)."""
    plain = response.headers.get("content-encoding", "").strip().lower() in ("", "identity")
    if not plain or not isinstance(response.stream, httpx2.AsyncByteStream):
        return None
    inner = response.stream
    head = bytearray()
    rest = aiter(inner)
    async for chunk in rest:
        head += chunk
        if len(head) >= ERROR_BODY_BYTES:
            break
    response.stream = _Prefixed(bytes(head), rest, inner)
    return error_reason(bytes(head[:ERROR_BODY_BYTES]), response.headers.get("content-type", ""))


class _Prefixed(httpx2.AsyncByteStream):
    """A body whose first bytes were read already: those, then the rest."""

    def __init__(
        self, head: bytes, rest: AsyncIterator[bytes], inner: httpx2.AsyncByteStream
    ) -> None:
        self._head, self._rest, self._inner = head, rest, inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._head:
            yield self._head
        async for chunk in self._rest:
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


async def clean_json_response(response: httpx2.Response) -> None:
    """Read JSON and event-stream bodies through `clean_json_escapes` (plain bodies only)."""
    content_type = response.headers.get("content-type", "")
    is_json = "json" in content_type or "event-stream" in content_type
    # A compressed body is decoded later, from the raw stream: its bytes are not JSON text.
    plain = response.headers.get("content-encoding", "").strip().lower() in ("", "identity")
    if is_json and plain and isinstance(response.stream, httpx2.AsyncByteStream):
        # A 2026-07-28 result without `resultType` is complete; the SDK would refuse it.
        modern = _request_version(response) in MODERN_VERSIONS
        response.stream = _CleanJsonStream(response.stream, complete=modern)


def _request_version(response: httpx2.Response) -> str | None:
    """The `MCP-Protocol-Version` of the request a response answers."""
    try:
        return response.request.headers.get("mcp-protocol-version")
    except RuntimeError:  # a response made without its request
        return None


class _CleanJsonStream(httpx2.AsyncByteStream):
    """A response body passed on line by line, lone surrogate escapes replaced (and with
    `complete`, a result without `resultType` made complete: mcp_input_required.py)."""

    def __init__(self, inner: httpx2.AsyncByteStream, *, complete: bool = False) -> None:
        self._inner = inner
        self._complete = complete

    def _clean(self, lines: bytes) -> bytes:
        cleaned = clean_json_escapes(lines)
        if not self._complete:
            return cleaned
        return b"".join(with_result_type(line) for line in cleaned.splitlines(keepends=True))

    async def __aiter__(self) -> AsyncIterator[bytes]:
        held = bytearray()  # the start of a line not yet complete: an escape may be cut in two
        async for chunk in self._inner:
            end = max(chunk.rfind(b"\n"), chunk.rfind(b"\r")) + 1
            if end == 0:
                held += chunk
                continue
            yield self._clean(bytes(held) + chunk[:end])
            held = bytearray(chunk[end:])
        if held:
            yield self._clean(bytes(held))

    async def aclose(self) -> None:
        await self._inner.aclose()
