"""Deadlines that stop while devall waits on a person (an OAuth sign-in in the browser).

A source bounds its handshake and every request (mcp_session.py). When an authorization needs
someone to sign in, those bounds measure the server no longer: `PersonWaits.person()` stops
every running deadline of the source and restarts each with the time it had left once the
person is done. The MCP SDK stops its own request clocks the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator


class PersonWaits:
    """The deadlines of one source, and whether someone is being waited on."""

    def __init__(self) -> None:
        self._active: set[asyncio.Timeout] = set()
        self._left: dict[asyncio.Timeout, float] = {}
        self._depth = 0
        self._waited = 0.0  # seconds spent waiting on a person, earlier waits
        self._since: float | None = None  # when the current wait began (monotonic)

    @property
    def waiting(self) -> bool:
        """Whether a person is being waited on right now."""
        return self._depth > 0

    def waited(self) -> float:
        """Seconds spent waiting on a person so far, the current wait included: a bound that
        polls (rather than holding a deadline) subtracts the difference over its own span."""
        ongoing = time.monotonic() - self._since if self._since is not None else 0.0
        return self._waited + ongoing

    @contextlib.asynccontextmanager
    async def deadline(self, seconds: float) -> AsyncIterator[asyncio.Timeout]:
        """`asyncio.timeout(seconds)`, not counting the time spent waiting on a person."""
        async with asyncio.timeout(seconds) as timeout:
            self._active.add(timeout)
            if self._depth:
                self._pause(timeout)
            try:
                yield timeout
            finally:
                self._active.discard(timeout)
                self._left.pop(timeout, None)

    @contextlib.contextmanager
    def person(self) -> Iterator[None]:
        """While open, the deadlines of this source do not run."""
        if self._depth == 0:
            self._since = time.monotonic()
            for timeout in list(self._active):
                self._pause(timeout)
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                if self._since is not None:
                    self._waited += time.monotonic() - self._since
                    self._since = None
                for timeout in list(self._active):
                    self._resume(timeout)

    def _pause(self, timeout: asyncio.Timeout) -> None:
        when = timeout.when()
        if when is None:
            return
        self._left[timeout] = when - asyncio.get_running_loop().time()
        with contextlib.suppress(RuntimeError):  # it fired already: nothing left to stop
            timeout.reschedule(None)

    def _resume(self, timeout: asyncio.Timeout) -> None:
        left = self._left.pop(timeout, None)
        if left is None:
            return
        with contextlib.suppress(RuntimeError):
            timeout.reschedule(asyncio.get_running_loop().time() + max(left, 0.0))
