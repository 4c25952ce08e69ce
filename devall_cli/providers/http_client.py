"""POSTing JSON to a model endpoint over httpx: what every HTTP provider shares.

This is the one place where httpx exceptions become devall errors (`translate_httpx_error`).
Transient failures (connection errors, timeouts, 408/409/425/429/5xx) are retried with exponential
backoff and jitter, honouring `Retry-After`; what is left after the retries is raised as
`LLMUnreachableError` (exit 4) or `LLMHTTPError` (exit 5). Messages name the endpoint URL without
userinfo or query, and never the API key: an excerpt of an error body is masked before it is cut.

`params.timeout` is a deadline for each whole attempt, reading the answer included: httpx's own
timeouts bound each read, which an endpoint trickling one byte at a time never lets expire. An
answer longer than `limits.MODEL_REPLY_BYTES` is refused as soon as that is known. The JSON of an
answer is read within devall's JSON limits, lone surrogates cleaned.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import random
import re
import socket
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from devall_cli import __version__, json_limits, limits
from devall_cli.cassette import active_tape, error_entry, raise_recorded
from devall_cli.errors import DevallError, LLMHTTPError, LLMUnreachableError
from devall_cli.providers import http_pool
from devall_cli.providers.base import dump_json
from devall_cli.redaction import Redactor
from devall_cli.text import clean_text, clean_value

# Module-level so that tests (of a provider or of the engine) can shorten the waits.
BACKOFF_BASE = 0.5
BACKOFF_CAP = 8.0
RETRY_AFTER_CAP = 30.0
RETRY_STATUSES = frozenset({408, 409, 425, 429, *range(500, 600)})
# The httpx exceptions `post_json` catches; every subclass maps to a DevallError.
CAUGHT_HTTPX_ERRORS: tuple[type[Exception], ...] = (httpx.HTTPError, httpx.InvalidURL)
_RETRYABLE_HTTPX_ERRORS = (
    httpx.TimeoutException,
    httpx.NetworkError,
    httpx.RemoteProtocolError,
    httpx.ProxyError,
)
_EXCERPT_CHARS = 200


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """The TLS context of every endpoint of this process, built once.

    Loading the CA bundle takes tens of milliseconds of CPU, on the event loop: paid per
    endpoint, it would stall every other task of a batch each time a task starts.
    """
    return httpx.create_ssl_context()


class DeadlineExceededError(httpx.TimeoutException):
    """An attempt did not complete, answer included, within `params.timeout`."""


@dataclass(frozen=True)
class Answer:
    """One HTTP answer of the endpoint, its body read (within the size limit)."""

    status_code: int
    headers: httpx.Headers
    content: bytes


@dataclass(frozen=True)
class RetryTiming:
    """How long to wait between attempts (tests shorten these)."""

    backoff_base: float = BACKOFF_BASE
    backoff_cap: float = BACKOFF_CAP
    retry_after_cap: float = RETRY_AFTER_CAP

    @classmethod
    def of(
        cls,
        backoff_base: float | None = None,
        backoff_cap: float | None = None,
        retry_after_cap: float | None = None,
    ) -> RetryTiming:
        """The module defaults, each replaced by the value given."""
        return cls(
            BACKOFF_BASE if backoff_base is None else backoff_base,
            BACKOFF_CAP if backoff_cap is None else backoff_cap,
            RETRY_AFTER_CAP if retry_after_cap is None else retry_after_cap,
        )


class ModelEndpoint:
    """One model endpoint URL: JSON POSTs with retries, a deadline per attempt and size limits."""

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        secrets: tuple[str, ...] = (),
        redactor: Redactor | None = None,
        retries: int = 5,
        timeout: float = 300.0,
        transport: httpx.AsyncBaseTransport | None = None,
        timing: RetryTiming | None = None,
    ) -> None:
        self._url = url
        self.display_url = safe_url(url)
        # Error excerpts are cut short here, so they are masked here first.
        self._redactor = (redactor or Redactor()).with_secrets([s for s in secrets if s])
        self._headers = {
            "Content-Type": "application/json",
            "User-Agent": f"devall/{__version__}",
            **headers,
        }
        self._retries = max(0, retries)
        self._deadline = timeout if timeout > 0 else None
        self._timeout = httpx.Timeout(self._deadline)
        self._timing = timing or RetryTiming.of()
        # A transport of its own (tests) gets a client of its own; otherwise a client is
        # borrowed at the first request (http_pool: its connections kept alive across tasks).
        self._own_client: httpx.AsyncClient | None = None
        if transport is not None:
            self._own_client = httpx.AsyncClient(
                transport=transport, timeout=self._timeout, verify=shared_ssl_context()
            )
        self._pooled: httpx.AsyncClient | None = None

    async def post_json(self, body: Any) -> bytes:
        """POST `body` as JSON; the body of the successful answer (raises a DevallError)."""
        # Text entering devall is cleaned where it enters; this is the last line of defence.
        payload = clean_text(dump_json(body)).encode("utf-8")
        tape = active_tape()
        if tape is None:
            return (await self._post_with_retries(payload)).content
        request = {"endpoint": self.display_url, "request": json.loads(payload)}
        if tape.replays("model"):
            return _replayed(tape.take("model", "model request", request))
        started = time.monotonic()
        try:
            content = (await self._post_with_retries(payload)).content
        except DevallError as exc:
            tape.record({"type": "model", **request, "error": error_entry(exc), "ms": _ms(started)})
            raise
        tape.record({"type": "model", **request, **_reply_entry(content), "ms": _ms(started)})
        return content

    async def aclose(self) -> None:
        """Close the HTTP connections, or give the borrowed client back (idempotent)."""
        if self._own_client is not None:
            await self._own_client.aclose()
        pooled, self._pooled = self._pooled, None
        if pooled is not None:
            await http_pool.give_back(pooled)

    def _client(self) -> httpx.AsyncClient:
        if self._own_client is not None:
            return self._own_client
        if self._pooled is None:
            self._pooled = http_pool.borrow(self._timeout)
        return self._pooled

    async def _post_with_retries(self, payload: bytes) -> Answer:
        attempts = self._retries + 1
        for attempt in range(1, attempts + 1):
            final = attempt == attempts
            try:
                response = await self._post(payload, read_body=final)
            except CAUGHT_HTTPX_ERRORS as exc:
                # A name that does not resolve will not resolve in a second; a port nobody
                # listens on gets one more try (a server restarting), not the whole backoff.
                failure = connect_failure(exc)
                last = final or failure == "dns" or (failure == "refused" and attempt >= 2)
                if last or not isinstance(exc, _RETRYABLE_HTTPX_ERRORS):
                    raise translate_httpx_error(exc, self.display_url, attempts=attempt) from exc
                await asyncio.sleep(self._backoff(attempt))
                continue
            if response.status_code in RETRY_STATUSES and not final:
                await asyncio.sleep(self._retry_delay(attempt, response))
                continue
            if response.status_code >= 300:
                raise self._http_error(response, attempt)
            return response
        raise AssertionError("the last attempt always returns or raises")  # pragma: no cover

    async def _post(self, payload: bytes, *, read_body: bool) -> Answer:
        """One attempt, body included, within the deadline; a body to retry on is not read."""
        try:
            async with asyncio.timeout(self._deadline):
                async with self._client().stream(
                    "POST", self._url, content=payload, headers=self._headers, timeout=self._timeout
                ) as response:
                    status = response.status_code
                    if status in RETRY_STATUSES and not read_body:
                        content = b""
                    elif status >= 300:
                        content = await _read_some(response, limits.MODEL_ERROR_BODY_BYTES)
                    else:
                        content = await self._read_reply(response)
                    return Answer(status, response.headers, content)
        except TimeoutError:
            reason = f"no complete answer within {self._deadline:g} s"
            raise DeadlineExceededError(reason) from None

    async def _read_reply(self, response: httpx.Response) -> bytes:
        """The whole body, refused (LLMHTTPError) once it proves longer than the limit."""
        limit = limits.MODEL_REPLY_BYTES
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > limit:
            raise self._too_long(f"{declared} bytes")
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > limit:
                raise self._too_long(f"more than {limit} bytes")
        return bytes(body)

    def _too_long(self, size: str) -> LLMHTTPError:
        return LLMHTTPError(
            f"model endpoint {self.display_url} answered with {size}; devall reads at most "
            f"{limits.MODEL_REPLY_BYTES} bytes of a model's answer"
        )

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter: base * 2^(attempt-1), capped, times 0.5 to 1."""
        timing = self._timing
        delay: float = min(timing.backoff_cap, timing.backoff_base * 2.0 ** (attempt - 1))
        return delay * random.uniform(0.5, 1.0)

    def _retry_delay(self, attempt: int, response: Answer) -> float:
        asked = parse_retry_after(response.headers.get("Retry-After"))
        if asked is None:
            return self._backoff(attempt)
        return min(asked, self._timing.retry_after_cap)

    def _http_error(self, response: Answer, attempts: int) -> LLMHTTPError:
        status = response.status_code
        excerpt = response_excerpt(response.content, self._redactor)
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        message = f"model endpoint {self.display_url} answered HTTP {status}{tries}"
        error = LLMHTTPError(f"{message}: {excerpt}" if excerpt else message, status_code=status)
        error.hint = model_error_hint(error, self.display_url)
        return error


# --- answers ------------------------------------------------------------------------------------


def _reply_entry(content: bytes) -> dict[str, Any]:
    """A reply as a cassette keeps it: its JSON when it is JSON, else its text."""
    try:
        return {"reply": json.loads(content)}
    except ValueError:
        return {"reply_text": content.decode("utf-8", "replace")}


def _replayed(entry: Mapping[str, Any]) -> bytes:
    """The recorded reply (or error) of a model request."""
    if isinstance(entry.get("error"), Mapping):
        raise_recorded(entry["error"])
    if "reply" in entry:
        return json.dumps(entry["reply"], ensure_ascii=False).encode("utf-8")
    return str(entry.get("reply_text", "")).encode("utf-8")


def _ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 3)


def parse_json_object(content: bytes, display_url: str) -> dict[str, Any]:
    """The JSON object of a successful answer, within devall's JSON limits, surrogates cleaned."""
    try:
        # A "\ud800" escape is valid JSON but a lone surrogate, which no UTF-8 writer takes.
        data = clean_value(json_limits.loads(content))
    except json_limits.JsonLimitError as exc:
        raise invalid_response(display_url, f"the body {exc}") from exc
    except ValueError as exc:
        raise invalid_response(display_url, f"body is not JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise invalid_response(display_url, "body is not a JSON object")
    return data


def invalid_response(display_url: str, reason: str) -> LLMHTTPError:
    """The error for an answer that is not what the API promises."""
    return LLMHTTPError(f"invalid response from model endpoint {display_url}: {reason}")


def error_text(error: Any) -> str:
    """The message of an API `error` member (an object with `message`, or a string)."""
    if isinstance(error, dict):
        return str(error.get("message") or "")
    return "" if error is None else str(error)


def count(data: Mapping[str, Any], key: str) -> int:
    """A token count of a usage object: 0 when absent or not a whole number."""
    value = data.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# --- errors -------------------------------------------------------------------------------------


_DNS_WORDS = (
    "name or service not known",
    "nodename nor servname",
    "temporary failure in name resolution",
    "no address associated with hostname",
    "name does not resolve",
)


def connect_failure(exc: BaseException) -> str | None:
    """`dns` (the host name does not resolve), `refused` (nothing listens), or None."""
    seen: BaseException | None = exc
    for _ in range(8):  # httpx wraps httpcore, which wraps the OSError
        if seen is None:
            break
        if isinstance(seen, socket.gaierror):
            return "dns"
        if isinstance(seen, ConnectionRefusedError):
            return "refused"
        text = str(seen).lower()
        if any(words in text for words in _DNS_WORDS):
            return "dns"
        if "connection refused" in text or "errno 111" in text:
            return "refused"
        seen = seen.__cause__ or seen.__context__
    return None


def model_error_hint(error: DevallError, display_url: str) -> str:
    """How to fix a failed model request, where its kind tells: the key, the name, the server."""
    status = getattr(error, "status_code", 0)
    if status in (401, 403):
        return (
            "the model endpoint refused the API key: set API_KEY (or the placeholder the "
            "node's `api_key:` names) in the environment or a .env file"
        )
    if isinstance(error, LLMUnreachableError) and "does not resolve" in error.message:
        return (
            "check the host name in the node's `base_url:`, and that this machine can look "
            "names up (its network and DNS)"
        )
    if isinstance(error, LLMUnreachableError) and "invalid URL" not in error.message:
        return f"start the model server at {display_url}, or correct the node's `base_url:`"
    return ""


def translate_httpx_error(exc: Exception, display_url: str, *, attempts: int = 1) -> DevallError:
    """The DevallError for an httpx exception raised while talking to `display_url`.

    Secrets in the message are masked where it is printed or written (the run's Redactor).
    """
    error = _translate(exc, display_url, attempts)
    error.hint = model_error_hint(error, display_url)
    return error


def _translate(exc: Exception, display_url: str, attempts: int) -> DevallError:
    where = f"model endpoint {display_url}"
    reason = str(exc) or type(exc).__name__
    tail = f" (after {attempts} attempts)" if attempts > 1 else ""
    if isinstance(exc, httpx.TimeoutException):
        why = str(exc) if isinstance(exc, DeadlineExceededError) else type(exc).__name__
        return LLMUnreachableError(f"{where} timed out ({why}){tail}")
    if isinstance(exc, httpx.InvalidURL | httpx.UnsupportedProtocol):
        return LLMUnreachableError(f"invalid URL for {where}: {reason}")
    if isinstance(exc, httpx.HTTPStatusError):
        status = exc.response.status_code
        return LLMHTTPError(f"{where} answered HTTP {status}{tail}", status_code=status)
    if isinstance(exc, httpx.DecodingError | httpx.TooManyRedirects):
        return LLMHTTPError(f"invalid response from {where}: {reason}")
    if isinstance(exc, httpx.TransportError):
        failure = connect_failure(exc)
        if failure == "dns":
            host = urlsplit(display_url).hostname or display_url
            return LLMUnreachableError(
                f"cannot reach {where}: the host name {host} does not resolve ({reason})"
            )
        if failure == "refused":
            return LLMUnreachableError(
                f"cannot reach {where}: connection refused, nothing listens there{tail}"
            )
        return LLMUnreachableError(f"cannot reach {where}: {reason}{tail}")
    return LLMHTTPError(f"request to {where} failed: {reason}")


async def _read_some(response: httpx.Response, limit: int) -> bytes:
    """The first `limit` bytes of the body, or all of a shorter one; the rest is left unread."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= limit:
            break
    return bytes(body[:limit])


def join_url(base_url: str, path: str) -> str:
    """`{base_url}{path}`, keeping a query such as `?api-version=…` at the end."""
    try:
        parts = urlsplit(base_url.strip())
    except ValueError:
        # Left to httpx, whose InvalidURL is translated like every other request failure.
        return base_url.strip().rstrip("/") + path
    joined = parts.path.rstrip("/") + path
    return urlunsplit((parts.scheme, parts.netloc, joined, parts.query, ""))


def url_path(base_url: str) -> str:
    """The path of `base_url` without a trailing slash ('' when it cannot be read)."""
    try:
        return urlsplit(base_url.strip()).path.rstrip("/")
    except ValueError:
        return ""


def safe_url(url: str) -> str:
    """`url` without userinfo, query or fragment, fit to show in messages and logs."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "<invalid URL>"
    if ":" in host:
        host = f"[{host}]"  # IPv6 literal
    netloc = f"{host}:{port}" if port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def response_excerpt(content: bytes, redactor: Redactor | None = None) -> str:
    """A short one-line excerpt of an error body: the API's error message, or the text."""
    text = content.decode("utf-8", errors="replace")
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and data.get("error"):
        text = error_text(data["error"])
    text = re.sub(r"\s+", " ", text).strip()
    return (redactor or Redactor()).preview(text, _EXCERPT_CHARS, tail="…")


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait per a `Retry-After` header (seconds or HTTP date); None if unusable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - time.time()
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)
