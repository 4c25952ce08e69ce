"""The terminal as the reply source of `human` nodes: a Rich prompt on stderr, replies from stdin.

The question (the node's task and its inputs, secrets masked, control characters escaped) is
shown on stderr, so stdout stays the product. The reply is read from the terminal line by line
through the event loop, never from a blocked thread: an empty line or Ctrl-D ends it, and Ctrl-C
cancels the run at once, as anywhere else.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from contextlib import AbstractContextManager

from rich.console import Console, Group
from rich.panel import Panel
from rich.text import Text

from devall_cli.errors import RunFailedError
from devall_cli.nodes.human_input import HumanRequest
from devall_cli.redaction import Redactor
from devall_cli.text import clean_text, visible

READ_SIZE = 4096
HINT = "Your reply: end it with an empty line or Ctrl-D (Ctrl-C cancels the run)."
LINE_PROMPT = "> "


class TerminalPrompt:
    """Asks on the terminal; `pause` stops the trace's live status line while it asks."""

    channel = "terminal"

    def __init__(
        self,
        console: Console,
        redactor: Redactor,
        *,
        fd: int,
        pause: Callable[[], AbstractContextManager[None]] | None = None,
    ) -> None:
        self.console = console
        self.redactor = redactor
        self.fd = fd
        self._pause = pause or contextlib.nullcontext
        self._pending = b""  # typed ahead: read past the end of the last reply
        # One question at a time on the terminal: a human node's, or a server's form.
        self.lock = asyncio.Lock()

    def paused(self) -> AbstractContextManager[None]:
        """No live status line while the terminal asks."""
        return self._pause()

    async def read_line(self, label: str) -> tuple[str, bool]:
        """The next line typed (decoded, without its newline), and whether Ctrl-D ended it."""
        line, ended = await self._read_line(label)
        return clean_text(line.rstrip(b"\r").decode("utf-8", "replace")), ended

    async def reply(self, request: HumanRequest) -> str:
        """Show the question, then read lines until an empty one or Ctrl-D."""
        async with self.lock:
            return await self._reply(request)

    async def _reply(self, request: HumanRequest) -> str:
        with self._pause():
            self.console.print(self._question(request), soft_wrap=False)
            self.console.print(Text(HINT, style="dim"))
            lines: list[bytes] = []
            while True:
                self.console.print(Text(LINE_PROMPT, style="bold"), end="")
                self.console.file.flush()
                try:
                    line, ended = await self._read_line(request.label)
                except asyncio.CancelledError:
                    self.console.print()  # Ctrl-C: the trace goes on below the prompt line
                    raise
                if ended:  # Ctrl-D: the reply ends with what was typed so far
                    self.console.print()
                if line.strip(b"\r"):
                    lines.append(line.rstrip(b"\r"))
                if ended or not line.strip(b"\r"):
                    break
        return clean_text(b"\n".join(lines).decode("utf-8", "replace"))

    def _question(self, request: HumanRequest) -> Panel:
        parts: list[Text] = []
        if request.description:
            parts.append(self._text(request.description, "bold"))
        if request.inputs:
            if parts:
                parts.append(Text(""))
            parts.append(self._text(request.inputs, ""))
        body = Group(*parts) if parts else Text("(no task and no inputs)", style="dim")
        title = self._text(f"human input · {request.label}", "bold yellow")
        return Panel(body, title=title, title_align="left", border_style="yellow")

    def _text(self, text: str, style: str) -> Text:
        return Text(visible(self.redactor.text(text), multiline=True), style=style)

    async def _read_line(self, label: str) -> tuple[bytes, bool]:
        """The next line typed (without its newline), and whether Ctrl-D ended it."""
        while b"\n" not in self._pending:
            chunk = await self._read_chunk(label)
            if not chunk:  # end of input: Ctrl-D on a line, or twice after some text
                partial, self._pending = self._pending, b""
                return partial, True
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line, False

    async def _read_chunk(self, label: str) -> bytes:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[bytes] = loop.create_future()

        def on_readable() -> None:
            if ready.done():
                return
            try:
                ready.set_result(os.read(self.fd, READ_SIZE))
            except OSError as exc:
                ready.set_exception(exc)

        loop.add_reader(self.fd, on_readable)
        try:
            return await ready
        except OSError as exc:
            raise RunFailedError(
                f"{label}: cannot read the reply from the terminal: {exc.strerror or exc}"
            ) from None
        finally:
            loop.remove_reader(self.fd)
