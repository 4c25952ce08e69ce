"""`HttpLines`: streamable HTTP as the message channel of devall's own MCP client (mcp_direct.py).

`DirectSession` speaks JSON-RPC on a `MessageChannel` (`send_line`, `receive_message`,
`discard_pending`): over stdio a supervised process, for a remote server this. It speaks the
streamable HTTP transport of the protocol versions the session reaches (mcp_handshake.py):

- every message is a POST to the configured URL with the configured headers, `Accept:
  application/json, text/event-stream`, `Content-Type: application/json`, the `Mcp-Session-Id`
  the server gave with its answer to `initialize`, and `MCP-Protocol-Version`: the version in
  the request's `_meta` (2026-07-28: every request, the `server/discover` probe included), or
  the one the handshake agreed on;
- each POST also carries the headers that mirror its body (mcp_headers.py): `Mcp-Method`,
  `Mcp-Name`, and for a `tools/call` the `Mcp-Param-*` of the arguments the tool's listed input
  schema designates (learnt from the `tools/list` answers this channel carries);
- on a 2026-07-28 connection the client sends no notifications (there is no session to send
  them in): a request given up is cancelled by closing its POST;
- an HTTP error status answering the `server/discover` probe is a JSON-RPC error (404: method
  not found), as the SDK's transport makes it, so the session falls back to the handshake;
- the answer to a request comes as one JSON body or as an event stream, in which the server may
  first send requests and notifications of its own (progress, log messages, an elicitation: the
  session answers those with POSTs of their own); `send_line` of a request returns once its
  answer is in, so a source's timeout covers it all;
- notifications and answers are accepted with 202 (any 2xx), their bodies ignored;
- once the handshake is over, a server that gave a session id is also listened to on a GET
  stream of its own (as the SDK's client does): a request it makes during a call outside that
  call's stream comes there (ended quietly where the server offers none);
- an event stream that ends before the answer is resumed once the server's `retry` wait is over
  with a GET carrying `Last-Event-ID` (at most twice), when the server numbered its events;
- redirects are followed only when they keep the method (307, 308) and the URL's origin, at
  most five times: a request never goes to another server;
- `close` ends the session with a DELETE (best effort, bounded) and closes the connections.

Limits, as over stdio (stdio_lines.py): a body or event longer than `limits.STDIO_LINE_BYTES`,
or JSON beyond json_limits.py's limits, fails the request it answers with an `invalid JSON-RPC
response` error. Escaped lone surrogates parse (Python's json keeps them) and the session turns
them into U+FFFD (`clean_value`), as mcp_remote.py's `clean_json_escapes` does for fastmcp's
client.

Failures are raised from `send_line` as httpx2's exceptions (a refused connection, a timeout,
`HTTPStatusError` for an HTTP error status), so that mcp_errors.py words them as it words
fastmcp's; `on_response` hears every status, with the first lines of an error answer's body
(`error_reason`, http_reasons.py). HTTP 404 on a session is `SessionClosed` (the server forgot
the session: the source reconnects). What this client does not speak raises `NotSpoken`, and the
source hands the server to fastmcp's client: an authorization challenge (401 or 403 with
`WWW-Authenticate`) to the probe or the handshake, an answer of another content type, a redirect
it does not follow.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import httpx2

from devall_cli import json_limits, limits
from devall_cli.tools.http_reasons import error_reason
from devall_cli.tools.mcp_handshake import MODERN_VERSIONS, PROTOCOL_VERSION_KEY
from devall_cli.tools.mcp_headers import RequestHeaders
from devall_cli.tools.mcp_protocol import SessionClosed
from devall_cli.tools.stdio_lines import INVALID_RESPONSE

ResponseFn = Callable[[int, str | None], None]  # (HTTP status, reason of an error answer)

ACCEPT = "application/json, text/event-stream"
MAX_REDIRECTS = 5
MAX_RESUMES = 2  # GETs that resume an event stream which ended before its answer (as the SDK)
DEFAULT_RETRY_MS = 1000  # the wait before resuming, when the server names none
ERROR_BODY_BYTES = 4096  # what is read of an error answer's body, for its first lines
CLOSE_WAIT = 2.0  # seconds the DELETE that ends a session may take
_INTERNAL_ERROR = -32603
_INVALID_REQUEST = -32600
_METHOD_NOT_FOUND = -32601


class NotSpoken(SessionClosed):
    """The server wants what this client does not speak: fastmcp's client takes over.

    A SessionClosed, so that a session meeting it mid-request is replaced (mcp_errors.py
    counts it as lost), by fastmcp's client then.
    """


class _Stream:
    """What an event stream said of itself so far: the last event's id, the retry wait."""

    last_id: str | None = None
    retry_ms: int | None = None


class HttpLines:
    """One MCP session's streamable HTTP exchanges with the server at `url`."""

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        timeout: float,
        on_response: ResponseFn | None = None,
    ) -> None:
        self.url = url
        self._timeout = timeout
        self._on_response = on_response
        # A call may wait long on the server (or on a person the server asks): reading is not
        # cut short here; the source bounds every request itself.
        self._client = httpx2.AsyncClient(
            headers=dict(headers),
            timeout=httpx2.Timeout(timeout, read=max(300.0, timeout)),
            follow_redirects=False,
        )
        self._messages: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._initialize_id: Any = None
        self._closed = False
        self._listener: asyncio.Task[None] | None = None
        self._mirrored = RequestHeaders()  # Mcp-Method, Mcp-Name, Mcp-Param-* (mcp_headers.py)
        self._listings: set[Any] = set()  # ids of the tools/list requests not yet answered

    # --- the channel (mcp_direct.MessageChannel) ------------------------------------------------

    def discard_pending(self) -> int:
        return 0  # one channel per session: nothing is left from an earlier one

    async def receive_message(self) -> dict[str, Any] | None:
        return await self._messages.get()

    async def send_line(self, line: str) -> None:
        """POST one message; for a request, return once its answer is queued."""
        if self._closed:
            raise ConnectionError("the session was closed")
        message = json.loads(line)
        request_id = message.get("id")
        if "method" not in message or request_id is None:
            if "method" in message and self.protocol_version in MODERN_VERSIONS:
                return  # no notifications on the 2026-07-28 wire; a cancel closed its POST
            await self._post_quietly(line, self._mirrored.of(message))
            if message.get("method") == "notifications/initialized" and self.session_id:
                self._listener = asyncio.create_task(self._listen())
            return
        handshake = message["method"] == "initialize"
        if handshake:
            self._initialize_id, self.session_id, self.protocol_version = request_id, None, None
        elif (version := _meta_version(message)) is not None:
            self.protocol_version = version  # the header says what the request's `_meta` says
        probe = message["method"] == "server/discover"
        if message["method"] == "tools/list":
            self._listings.add(request_id)
        try:
            async with self._exchange("POST", line, self._mirrored.of(message)) as response:
                await self._answer(response, request_id, handshake=handshake, probe=probe)
        finally:
            self._listings.discard(request_id)

    async def close(self) -> None:
        """End the session on the server (DELETE, best effort) and close the connections."""
        if self._closed:
            return
        self._closed = True
        self._messages.put_nowait(None)
        if self._listener is not None:
            self._listener.cancel()
            await asyncio.gather(self._listener, return_exceptions=True)
        try:
            if self.session_id is not None:
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(min(self._timeout, CLOSE_WAIT)):
                        async with self._exchange("DELETE"):
                            pass
        finally:
            with contextlib.suppress(Exception):
                await self._client.aclose()

    # --- HTTP ------------------------------------------------------------------------------------

    def _headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        headers = {"Accept": ACCEPT, "Content-Type": "application/json"}
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return {**headers, **(extra or {})}

    @contextlib.asynccontextmanager
    async def _exchange(
        self, method: str, body: str | None = None, extra: Mapping[str, str] | None = None
    ) -> AsyncIterator[httpx2.Response]:
        """The response to one request, after the redirects this client follows."""
        content = body.encode("utf-8") if body is not None else None
        request = self._client.build_request(
            method, self.url, content=content, headers=self._headers(extra)
        )
        for _ in range(MAX_REDIRECTS):
            response = await self._client.send(request, stream=True)
            following = _followed_redirect(response)
            if following is None:
                break
            await response.aclose()
            request = following
        else:
            response = await self._client.send(request, stream=True)
        try:
            yield response
        finally:
            await response.aclose()

    async def _post_quietly(self, line: str, extra: Mapping[str, str] | None = None) -> None:
        """POST a notification or an answer; nothing is waited for but its acceptance."""
        try:
            async with self._exchange("POST", line, extra) as response:
                self._heard(response.status_code, None)
        except httpx2.HTTPError as exc:  # the session's writes fail as a process's do
            raise ConnectionError(str(exc) or type(exc).__name__) from exc

    async def _listen(self) -> None:
        """The server's own stream (a GET), for what it sends outside any request's stream: a
        request it makes during a call may come there. Resumed as a call's stream is; ends
        quietly when the server offers none (405) or it fails."""
        stream = _Stream()
        with contextlib.suppress(httpx2.HTTPError):
            for _ in range(MAX_RESUMES + 1):
                extra = {"Accept": "text/event-stream"}
                if stream.last_id is not None:
                    extra["Last-Event-ID"] = stream.last_id
                async with self._exchange("GET", extra=extra) as response:
                    if not _is_stream(response):
                        return
                    await self._read_events(response, None, stream)
                wait = stream.retry_ms if stream.retry_ms is not None else DEFAULT_RETRY_MS
                await asyncio.sleep(wait / 1000)

    def _heard(self, status: int, reason: str | None) -> None:
        if self._on_response is not None:
            self._on_response(status, reason)

    # --- answers ---------------------------------------------------------------------------------

    async def _answer(
        self, response: httpx2.Response, request_id: Any, *, handshake: bool, probe: bool = False
    ) -> None:
        """Queue what the server sent in answer to request `request_id`."""
        status = response.status_code
        if status >= 300:
            await self._refused(response, request_id, handshake=handshake, probe=probe)
            return
        self._heard(status, None)
        if handshake and (session := response.headers.get("mcp-session-id")):
            self.session_id = session
        kind = _content_type(response)
        if status == 202:
            self._fail(request_id, "the server accepted the request without answering it")
        elif kind == "application/json":
            body = await _read(response, limits.STDIO_LINE_BYTES)
            if body is None:
                self._fail(request_id, _too_long())
            else:
                self._deliver(body, request_id)
        elif kind == "text/event-stream":
            await self._events(response, request_id)
        else:
            raise NotSpoken(f"the server answered with content type {kind or 'none'!r}")

    async def _refused(
        self, response: httpx2.Response, request_id: Any, *, handshake: bool, probe: bool
    ) -> None:
        """An answer with a redirect or error status: the request fails (or is handed on)."""
        status = response.status_code
        if status < 400:
            self._heard(status, None)
            raise NotSpoken(f"the server redirects with HTTP {status}, which is not followed")
        body = await _read(response, ERROR_BODY_BYTES, cut=True) or b""
        kind = _content_type(response)
        self._heard(status, error_reason(body, kind))
        opening = handshake or probe
        if opening and status in (401, 403) and "www-authenticate" in response.headers:
            raise NotSpoken(f"the server asks for authorization (HTTP {status})")
        if status == 404 and self.session_id is not None:
            raise SessionClosed("the server ended the session (HTTP 404)")
        if kind == "application/json" and self._rpc_error(body, request_id):
            return  # the server's JSON-RPC error, sent with an HTTP status
        if probe:  # an older server refusing the probe: the session shakes hands instead
            code = _METHOD_NOT_FOUND if status == 404 else _INTERNAL_ERROR
            error = {"code": code, "message": f"server/discover refused with HTTP {status}"}
            self._messages.put_nowait({"jsonrpc": "2.0", "id": request_id, "error": error})
            return
        raise httpx2.HTTPStatusError(
            f"HTTP {status}", request=response.request, response=response
        )

    def _rpc_error(self, body: bytes, request_id: Any) -> bool:
        """Queue a JSON-RPC error answer found in an error body; whether there was one."""
        try:
            message = json_limits.loads(body)
        except ValueError:
            return False
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return False
        if not isinstance(message.get("error"), Mapping):
            return False
        self._messages.put_nowait({**message, "id": request_id})  # `id: null` at times
        return True

    async def _events(self, response: httpx2.Response, request_id: Any) -> None:
        """Read an event stream up to the answer, resuming it when it ends before."""
        stream = _Stream()
        if await self._read_events(response, request_id, stream):
            return
        for _ in range(MAX_RESUMES):
            if stream.last_id is None:
                break
            wait = stream.retry_ms if stream.retry_ms is not None else DEFAULT_RETRY_MS
            await asyncio.sleep(wait / 1000)
            extra = {"Accept": "text/event-stream", "Last-Event-ID": stream.last_id}
            async with self._exchange("GET", extra=extra) as resumed:
                self._heard(resumed.status_code, None)
                if not _is_stream(resumed):
                    break
                if await self._read_events(resumed, request_id, stream):
                    return
        raise SessionClosed("the server's event stream ended before its answer")

    async def _read_events(
        self, response: httpx2.Response, request_id: Any, stream: _Stream
    ) -> bool:
        """Queue the messages of one event stream; whether the answer was among them.

        A stream that breaks counts as ended once the server numbered its events (it can be
        resumed); before, its failure is raised.
        """
        try:
            async for event in httpx2.EventSource(response, max_event_size=limits.STDIO_LINE_BYTES):
                stream.last_id = event.id or stream.last_id
                stream.retry_ms = event.retry if event.retry is not None else stream.retry_ms
                answered = event.event == "message" and bool(event.data)
                if answered and self._deliver(event.data, request_id):
                    return True
        except httpx2.SSEError:  # the content type was checked: an event too long
            self._fail(request_id, _too_long())
            return True
        except httpx2.TransportError:
            if stream.last_id is None:
                raise
        return False

    def _deliver(self, data: str | bytes, request_id: Any) -> bool:
        """Queue one message of the server's; whether it answers `request_id` (None: the
        server's own stream, where a message that cannot be read is dropped)."""
        try:
            message = json_limits.loads(data)
        except json_limits.JsonLimitError as exc:
            return self._fail(request_id, f"the response {exc}")
        except ValueError:
            return self._fail(request_id, "the response is not valid JSON")
        if not isinstance(message, dict):
            return self._fail(request_id, "the response is not a JSON-RPC message")
        answers = "method" not in message and _same_id(message.get("id"), request_id)
        if answers and request_id in self._listings and isinstance(message.get("result"), Mapping):
            self._mirrored.learn(message["result"])  # the arguments its tools mirror in headers
        if answers and request_id == self._initialize_id:
            result = message.get("result")
            version = result.get("protocolVersion") if isinstance(result, Mapping) else None
            self.protocol_version = version if isinstance(version, str) else None
        self._messages.put_nowait(message)
        return answers

    def _fail(self, request_id: Any, reason: str) -> bool:
        """Answer `request_id` with an `invalid JSON-RPC response` error, as stdio_lines does
        (True: the request has its answer; False when there is no request)."""
        if request_id is None:
            return False
        code = _INVALID_REQUEST if "without answering" in reason else _INTERNAL_ERROR
        error = {"code": code, "message": f"{INVALID_RESPONSE} from the server: {reason}"}
        self._messages.put_nowait({"jsonrpc": "2.0", "id": request_id, "error": error})
        return True


async def _read(response: httpx2.Response, limit: int, *, cut: bool = False) -> bytes | None:
    """The body (decoded), up to `limit` bytes; longer: None, or with `cut` its first bytes."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            return bytes(body[:limit]) if cut else None
    return bytes(body)


def _too_long() -> str:
    return f"the response is longer than {limits.STDIO_LINE_BYTES} bytes"


def _content_type(response: httpx2.Response) -> str:
    return response.headers.get("content-type", "").partition(";")[0].strip().lower()


def _is_stream(response: httpx2.Response) -> bool:
    return response.status_code == 200 and _content_type(response) == "text/event-stream"


def _followed_redirect(response: httpx2.Response) -> httpx2.Request | None:
    """The next request of a redirect this client follows: 307 or 308, within the origin."""
    following = response.next_request
    if following is None or response.status_code not in (307, 308):
        return None
    sent, target = response.request.url, following.url
    same = (sent.scheme, sent.host, sent.port) == (target.scheme, target.host, target.port)
    if not same or (target.userinfo and target.userinfo != sent.userinfo):
        return None
    return following


def _meta_version(message: Mapping[str, Any]) -> str | None:
    """The protocol version a request names in its `_meta` (2026-07-28), if any."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    version = meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, Mapping) else None
    return version if isinstance(version, str) else None


def _same_id(value: Any, request_id: Any) -> bool:
    """Whether an answer's id is the request's, also echoed as a string ("1" for 1)."""
    if isinstance(value, bool):
        return False
    return value == request_id or (isinstance(value, str) and value == str(request_id))
