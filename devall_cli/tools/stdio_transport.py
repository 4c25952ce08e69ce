"""A fastmcp client transport over a supervised stdio process (see stdio_process.py).

The process belongs to the supervisor, not to the session: leaving `connect_session` stops the
message pumps but leaves the process running (keep-alive). When the process dies, the session's
read stream ends, so requests in flight fail at once with "Connection closed".
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncGenerator
from typing import Any, Unpack

import anyio
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from fastmcp.client.transports import ClientTransport
from fastmcp.client.transports.base import SessionKwargs, TransportOptions
from mcp import ClientSession
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from devall_cli.text import clean_value
from devall_cli.tools.stdio_lines import INVALID_RESPONSE
from devall_cli.tools.stdio_process import StdioProcess

logger = logging.getLogger(__name__)

_Incoming = SessionMessage | Exception
_SHOWN_CHARS = 300


def parse_message(obj: dict[str, Any]) -> _Incoming:
    """Validate one JSON-RPC object as the SDK does; a validation error is returned as a value."""
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_python(obj, by_name=False))
    except ValidationError as exc:
        return exc


def serialize_message(message: SessionMessage) -> str:
    """One outgoing message as a single JSON line (without the newline), as the SDK writes it."""
    return message.message.model_dump_json(by_alias=True, exclude_unset=True)


def _describe_invalid(obj: dict[str, Any], exc: Exception) -> str:
    """A one-line log entry for a JSON object that is not a valid JSON-RPC message."""
    text = json.dumps(obj, ensure_ascii=False)
    if len(text) > _SHOWN_CHARS:
        text = text[:_SHOWN_CHARS] + "..."
    problems = exc.error_count() if isinstance(exc, ValidationError) else 1
    return f"[devall: invalid JSON-RPC message ({problems} validation errors): {text}]"


def invalid_response_error(obj: dict[str, Any], exc: Exception) -> SessionMessage | None:
    """An error answer for the request an invalid response names by id, else None.

    Without it the SDK drops the invalid response and the request waits for its timeout.
    Objects with a `method` are (broken) requests or notifications from the server: left alone.
    """
    request_id = obj.get("id")
    if "method" in obj or isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    reason = _response_problem(obj, exc)
    error = mcp_types.JSONRPCError(
        jsonrpc="2.0",
        id=request_id,
        error=mcp_types.ErrorData(
            code=mcp_types.INTERNAL_ERROR, message=f"{INVALID_RESPONSE} from the server: {reason}"
        ),
    )
    return SessionMessage(error)


def _response_problem(obj: dict[str, Any], exc: Exception) -> str:
    """What is wrong with a response, read from the error or result branch of the union."""
    if not isinstance(exc, ValidationError) or not exc.errors():
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    branch = "JSONRPCError" if "error" in obj else "JSONRPCResponse"
    problems = [e for e in exc.errors() if tuple(e.get("loc", ()))[:1] == (branch,)]
    first = problems[0] if problems else exc.errors()[0]
    loc = tuple(first.get("loc", ()))
    where = ".".join(str(part) for part in (loc[1:] if problems else loc))
    return f"{where}: {first.get('msg', '')}" if where else str(first.get("msg", ""))


class SupervisedStdioTransport(ClientTransport):
    """Connects an MCP ClientSession to a running StdioProcess; one session at a time."""

    def __init__(self, process: StdioProcess) -> None:
        self.process = process

    @contextlib.asynccontextmanager
    async def connect_session(
        self,
        *,
        transport_options: TransportOptions | None = None,
        **session_kwargs: Unpack[SessionKwargs],
    ) -> AsyncGenerator[ClientSession, None]:
        """Yield a (not yet initialized) ClientSession wired to the process's stdin/stdout."""
        options = transport_options or TransportOptions()
        if dropped := self.process.discard_pending():
            self.process.log_line(f"[devall: dropped {dropped} stale message(s)]", match=False)
        to_session, read_stream = anyio.create_memory_object_stream[_Incoming](0)
        write_stream, from_session = anyio.create_memory_object_stream[SessionMessage](0)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._pump_in, to_session)
                tg.start_soon(self._pump_out, from_session, to_session)
                try:
                    async with options.session_class(
                        read_stream, write_stream, **session_kwargs
                    ) as session:
                        yield session
                finally:
                    tg.cancel_scope.cancel()
        finally:
            for stream in (to_session, read_stream, write_stream, from_session):
                stream.close()

    async def _pump_in(self, to_session: MemoryObjectSendStream[_Incoming]) -> None:
        """Process stdout -> session; ends the session's read stream when the process is gone."""
        try:
            while (obj := await self.process.receive_message()) is not None:
                # Where a local server's text enters: results, listings, notifications, errors.
                obj = clean_value(obj)
                item = parse_message(obj)
                if isinstance(item, Exception):
                    self.process.log_line(_describe_invalid(obj, item), match=False)
                    item = invalid_response_error(obj, item) or item
                await to_session.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return  # the session is gone
        finally:
            to_session.close()

    async def _pump_out(
        self,
        from_session: MemoryObjectReceiveStream[SessionMessage],
        to_session: MemoryObjectSendStream[_Incoming],
    ) -> None:
        """Session -> process stdin, one JSON line per message."""
        try:
            async for message in from_session:
                await self.process.send_line(serialize_message(message))
        except (OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            # The process may still be running but cannot hear us: end the session rather
            # than let a request wait for an answer that cannot come.
            to_session.close()

    def __repr__(self) -> str:
        return f"<SupervisedStdioTransport {self.process!r}>"
