"""The authorization step of the code grant: a loopback redirect URI, and how the code gets there.

`DEVALL_OAUTH_BROWSER` chooses how the authorization URL is visited:
- `browser` (default): the system browser opens it (the URL is also shown, for machines without
  one); devall listens on `http://127.0.0.1:PORT/callback` until the browser is sent back there.
  On Linux without a display (and without $BROWSER) no browser is started: a text browser would
  take over the terminal.
- `none`: the URL is only shown; someone opens it (on this machine) and devall waits.
- `fetch`: devall requests the URL itself and follows its redirects to the redirect URI, for
  authorization servers that approve without a person (test servers, some CI set-ups).
`DEVALL_OAUTH_TIMEOUT` bounds the wait for the browser (seconds, default 300).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
import webbrowser
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2
from mcp.shared.auth import AuthorizationCodeResult

from devall_cli.errors import AuthError, UsageError

MODES = ("browser", "none", "fetch")
DEFAULT_TIMEOUT = 300.0
FETCH_REDIRECTS = 10
CALLBACK_PATH = "/callback"
_PAGE = (
    "<!doctype html><html><head><meta charset='utf-8'><title>devall</title></head>"
    "<body style='font-family:sans-serif'><h2>{title}</h2><p>{text}</p></body></html>"
)
# What the redirect step reports: (message, url).
Notify = Callable[[str, str], None]


@dataclass(frozen=True)
class RedirectSettings:
    """How the authorization URL is visited, from the environment."""

    mode: str = "browser"
    timeout: float = DEFAULT_TIMEOUT

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RedirectSettings:
        """DEVALL_OAUTH_BROWSER and DEVALL_OAUTH_TIMEOUT; a bad value is a usage error."""
        env = os.environ if environ is None else environ
        mode = env.get("DEVALL_OAUTH_BROWSER", "").strip().lower() or "browser"
        if mode not in MODES:
            raise UsageError(f"DEVALL_OAUTH_BROWSER must be browser, none or fetch, got {mode!r}")
        raw = env.get("DEVALL_OAUTH_TIMEOUT", "").strip()
        try:
            timeout = float(raw) if raw else DEFAULT_TIMEOUT
        except ValueError:
            timeout = -1.0
        if not timeout > 0:
            raise UsageError(f"DEVALL_OAUTH_TIMEOUT must be a number of seconds, got {raw!r}")
        return cls(mode, timeout)

    @property
    def needs_person(self) -> bool:
        """Whether someone has to sign in (every mode but fetch)."""
        return self.mode != "fetch"


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_is_free(port: int) -> bool:
    """Whether the loopback port can be listened on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def redirect_uri(port: int) -> str:
    """The loopback redirect URI on `port` (RFC 8252 §7.3: an IP literal, not `localhost`)."""
    return f"http://127.0.0.1:{port}{CALLBACK_PATH}"


class LoopbackRedirect:
    """Visits an authorization URL and returns the code the server redirects back with."""

    def __init__(
        self,
        port: int,
        settings: RedirectSettings,
        *,
        notify: Notify,
        person: Callable[[], AbstractContextManager[None]],
    ) -> None:
        self.port = port
        self.settings = settings
        self._notify = notify
        self._person = person
        self._url: str | None = None

    @property
    def uri(self) -> str:
        """The redirect URI registered with the authorization server."""
        return redirect_uri(self.port)

    async def redirect_handler(self, url: str) -> None:
        """The SDK hands over the authorization URL (the code is awaited in `callback_handler`)."""
        self._url = url

    async def callback_handler(self) -> AuthorizationCodeResult:
        """Visit the URL the way the settings say; the code and state the server sent back."""
        url, self._url = self._url, None
        if url is None:
            raise AuthError("no authorization URL to visit")
        if self.settings.mode == "fetch":
            self._notify("authorizing without a browser (DEVALL_OAUTH_BROWSER=fetch)", url)
            return await fetch_authorization(url, self.uri)
        return await self._through_browser(url)

    async def _through_browser(self, url: str) -> AuthorizationCodeResult:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[dict[str, str]] = loop.create_future()
        try:
            expected = _state_of(url)
            server = await asyncio.start_server(
                lambda r, w: _serve_callback(r, w, answer, expected), "127.0.0.1", self.port
            )
        except OSError as exc:
            raise AuthError(
                f"cannot listen for the authorization redirect on 127.0.0.1:{self.port}: {exc}"
            ) from exc
        try:
            with self._person():
                opened = self.settings.mode == "browser" and await open_browser(url)
                how = "opened a browser; if it did not, open" if opened else "open"
                self._notify(f"{how} this URL to authorize devall", url)
                try:
                    async with asyncio.timeout(self.settings.timeout):
                        params = await answer
                except TimeoutError:
                    limit = f"{self.settings.timeout:g}s"
                    raise AuthError(
                        f"no authorization within {limit} (the browser never came back to "
                        f"{self.uri}); DEVALL_OAUTH_TIMEOUT sets the wait",
                        status="http_401",
                    ) from None
        finally:
            server.close()
            with contextlib.suppress(Exception):
                await server.wait_closed()
        return code_result(params)


async def open_browser(url: str) -> bool:
    """Open `url` in the system browser, unless there is none to open; whether one was asked."""
    graphical = any(os.environ.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"))
    if sys.platform.startswith("linux") and not graphical:
        return False
    try:
        return bool(await asyncio.to_thread(webbrowser.open, url))
    except Exception:
        return False


def _state_of(url: str) -> str | None:
    """The `state` the authorization URL carries: the redirect back must bring the same."""
    values = parse_qs(urlsplit(url).query, keep_blank_values=True).get("state")
    return values[0] if values else None


async def _serve_callback(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    answer: asyncio.Future[dict[str, str]],
    expected_state: str | None = None,
) -> None:
    """Answer one HTTP request on the loopback listener; the callback's query ends the wait.

    Only a redirect that brings back the state of devall's own authorization URL counts: any
    other request to the callback (a page, another program, a forged link) gets an error page,
    and devall keeps waiting for the real one.
    """
    try:
        request_line = await asyncio.wait_for(reader.readline(), 10)
        while (await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
            pass
        parts = request_line.decode("latin-1").split()
        target = urlsplit(parts[1]) if len(parts) >= 2 else urlsplit("/")
        if target.path != CALLBACK_PATH:
            await _respond(writer, 404, "Not found", "This is devall's authorization redirect.")
            return
        params = {k: v[0] for k, v in parse_qs(target.query, keep_blank_values=True).items()}
        if expected_state is not None and params.get("state") != expected_state:
            text = "The state does not match devall's authorization request; devall keeps waiting."
            await _respond(writer, 400, "Not devall's authorization", text)
            return
        if "error" in params:
            await _respond(writer, 200, "Authorization refused", "You can close this tab.")
        else:
            await _respond(writer, 200, "devall is authorized", "You can close this tab.")
        if not answer.done():
            answer.set_result(params)
    except (OSError, TimeoutError, ValueError, IndexError):
        pass
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


async def _respond(writer: asyncio.StreamWriter, status: int, title: str, text: str) -> None:
    body = _PAGE.format(title=title, text=text).encode()
    reason = {200: "OK", 400: "Bad Request"}.get(status, "Not Found")
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        "Content-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    writer.write(head.encode() + body)
    await writer.drain()


async def fetch_authorization(url: str, redirect_to: str) -> AuthorizationCodeResult:
    """Request the authorization URL and follow its redirects until one reaches `redirect_to`."""
    target = urlsplit(redirect_to)
    expected = _state_of(url)
    async with httpx2.AsyncClient(timeout=30.0, follow_redirects=False) as client:
        for _ in range(FETCH_REDIRECTS):
            try:
                response = await client.get(url)
            except httpx2.HTTPError as exc:
                raise AuthError(f"cannot reach the authorization endpoint: {exc}") from exc
            location = response.headers.get("location")
            if not response.is_redirect or not location:
                raise AuthError(_not_redirected(response))
            url = urljoin(str(response.url), location)
            here = urlsplit(url)
            if (here.scheme, here.netloc, here.path) == (target.scheme, target.netloc, target.path):
                query = parse_qs(here.query, keep_blank_values=True)
                params = {k: v[0] for k, v in query.items()}
                if expected is not None and params.get("state") != expected:
                    raise AuthError(
                        "the authorization endpoint redirected back with another state than "
                        "devall's request: refused"
                    )
                return code_result(params)
    raise AuthError(f"the authorization endpoint redirected more than {FETCH_REDIRECTS} times")


def _not_redirected(response: httpx2.Response) -> str:
    status = response.status_code
    if status < 300:
        return (
            f"the authorization endpoint answered HTTP {status} with a page instead of "
            "redirecting back: it needs a person to sign in (DEVALL_OAUTH_BROWSER=fetch only "
            "works with servers that approve at once)"
        )
    return f"the authorization endpoint answered HTTP {status}"


def code_result(params: Mapping[str, str]) -> AuthorizationCodeResult:
    """The code and state of an authorization response; an error response raises AuthError."""
    if "error" in params:
        detail = params.get("error_description") or ""
        reason = f"{params['error']}: {detail}" if detail else params["error"]
        raise AuthError(f"the authorization server refused: {reason}")
    if not params.get("code"):
        raise AuthError("the authorization server sent no code back")
    return AuthorizationCodeResult(
        code=params["code"], state=params.get("state"), iss=params.get("iss")
    )
