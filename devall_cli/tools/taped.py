"""Tool sources on a tape: recording what a source answers, or answering from a cassette.

`RecordingSource` wraps a real source and records its start (`initialize`: protocol version
and server name), every listing (`tools/list`), every call (`tools/call`: name, arguments, the
normalized result and what the server reported during the call — progress, elicitation and
sampling with devall's answers, log messages) and the roots devall answered it with; binary
results are kept once, by sha256. `ReplaySource` stands in for the source: it starts no process
and opens no connection, serves the recorded listing, and answers each call with the result
recorded for the same node visit, tool and arguments (saving recorded attachments into the
run's attachments/ again, and asking the node's model again what a server's sampling asked).
"""

from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from devall_cli.cassette import Tape, error_entry, raise_recorded
from devall_cli.errors import DevallError
from devall_cli.tools.base import (
    AttachmentBlock,
    Block,
    CallContext,
    DataBlock,
    ElicitationAnswer,
    ElicitationRequest,
    RawTool,
    ResourceLinkBlock,
    SamplingReply,
    SamplingRequest,
    ServerInfo,
    TextBlock,
    ToolEvents,
    ToolResult,
    ToolSource,
)
from devall_cli.tools.normalize import blocks_to_json
from devall_cli.tools.plan import SourceContext, SourcePlan

_BLOCKS: dict[str, type[Block]] = {
    "text": TextBlock,
    "attachment": AttachmentBlock,
    "resource_link": ResourceLinkBlock,
    "data": DataBlock,
}
# What a source reports during a call, kept with the call and told again on replay.
_NOTES = (
    "tool_progress",
    "elicitation_requested",
    "elicitation_answered",
    "sampling_requested",
    "sampling_answered",
)


def taped_maker(tape: Tape, make: Any) -> Any:
    """A SourceMaker that records through `make`'s sources, or replays without them."""

    def make_taped(plan: SourcePlan, ctx: SourceContext) -> ToolSource:
        if tape.replays("tools"):
            return ReplaySource(plan, ctx, tape)
        if tape.records():
            notes = _CallNotes(ctx.events)
            inner = make(plan, dataclasses.replace(ctx, events=cast(ToolEvents, notes)))
            return RecordingSource(inner, plan, ctx, tape, notes)
        return cast(ToolSource, make(plan, ctx))

    return make_taped


class _CallNotes:
    """The source's ToolEvents, keeping what is reported during each call (by call id)."""

    def __init__(self, events: ToolEvents | None) -> None:
        self._events = events
        self.by_call: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.roots: list[dict[str, Any]] = []  # the roots answered to the server, in order
        self.in_flight: list[str] = []  # the calls running on this source, by call id
        self.messages: list[dict[str, Any]] = []  # log messages no one call can claim

    def server_message(self, server_id: str, level: str, logger: str | None, text: str) -> None:
        # A log message comes with no call: it is the call's when only one is running.
        note = {"event": "server_message", "args": [level, logger, text]}
        if len(self.in_flight) == 1:
            self.by_call[self.in_flight[0]].append(note)
        else:
            self.messages.append(note)
        if self._events is not None:
            self._events.server_message(server_id, level, logger, text)

    def roots_sent(self, server_id: str, roots: Sequence[str], reason: str) -> None:
        self.roots.append({"roots": list(roots), "reason": reason})
        if self._events is not None:
            self._events.roots_sent(server_id, roots, reason)

    def __getattr__(self, name: str) -> Any:
        if self._events is None:
            return lambda *args, **kwargs: None
        forward = getattr(self._events, name)
        if name not in _NOTES:
            return forward

        def noted(server_id: str, call: CallContext | None, *args: Any) -> None:
            if call is not None and call.call_id:
                self.by_call[call.call_id].append({"event": name, "args": _note_args(args)})
            forward(server_id, call, *args)

        return noted


def _note_args(args: Sequence[Any]) -> list[Any]:
    return [vars(a) if dataclasses.is_dataclass(a) else a for a in args]


class RecordingSource:
    """A real source whose start, listings and calls are kept on the tape."""

    def __init__(
        self, inner: ToolSource, plan: SourcePlan, ctx: SourceContext, tape: Tape, notes: _CallNotes
    ) -> None:
        self._inner = inner
        self._plan = plan
        self._ctx = ctx
        self._tape = tape
        self._notes = notes

    @property
    def id(self) -> str:
        return self._inner.id

    @property
    def kind(self) -> str:
        return self._inner.kind

    @property
    def target(self) -> str:
        return self._inner.target

    @property
    def pid(self) -> int | None:
        return getattr(self._inner, "pid", None)

    @property
    def listing_ttl_ms(self) -> int | None:
        """The cache hint of the inner source's last listing (tools/cache_hints.py)."""
        return getattr(self._inner, "listing_ttl_ms", None)

    async def start(self) -> ServerInfo:
        started = time.monotonic()
        entry: dict[str, Any] = {"type": "mcp", "server": self.id, "method": "initialize"}
        try:
            info = await self._inner.start()
        except DevallError as exc:
            self._tape.record({**entry, "error": error_entry(exc), "ms": _ms(started)})
            raise
        result = {"protocol_version": info.protocol_version, "server_name": info.server_name}
        self._tape.record({**entry, "result": result, "ms": _ms(started)})
        return info

    async def list_tools(self) -> list[RawTool]:
        started = time.monotonic()
        entry: dict[str, Any] = {"type": "mcp", "server": self.id, "method": "tools/list"}
        try:
            tools = await self._inner.list_tools()
        except DevallError as exc:
            self._tape.record({**entry, "error": error_entry(exc), "ms": _ms(started)})
            raise
        listed = [{k: v for k, v in vars(t).items() if v is not None} for t in tools]
        self._tape.record({**entry, "result": {"tools": listed}, "ms": _ms(started)})
        return tools

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], *, context: CallContext | None = None
    ) -> ToolResult:
        started = time.monotonic()
        params = {"name": name, "arguments": dict(arguments)}
        entry: dict[str, Any] = {"type": "mcp", "server": self.id, "method": "tools/call"}
        running = context.call_id if context is not None else ""
        if running:
            self._notes.in_flight.append(running)
        try:
            result = await self._inner.call_tool(name, arguments, context=context)
        except DevallError as exc:
            self._tape.record(
                {**entry, "params": params, "error": error_entry(exc), **self._notes_of(context)}
            )
            raise
        finally:
            if running in self._notes.in_flight:
                self._notes.in_flight.remove(running)
        kept = {
            "is_error": result.is_error,
            "error_class": result.error_class,
            "duration_ms": result.duration_ms,
            "meta": result.meta,
            "blocks": [self._kept_block(block) for block in result.blocks],
        }
        self._tape.record(
            {
                **entry,
                "params": params,
                "result": {k: v for k, v in kept.items() if v is not None},
                **self._notes_of(context),
                "ms": _ms(started),
            }
        )
        return result

    def _notes_of(self, context: CallContext | None) -> dict[str, Any]:
        if context is None or not context.call_id:
            return {}
        notes = self._notes.by_call.pop(context.call_id, [])
        return {"notifications": notes} if notes else {}

    def _kept_block(self, block: Block) -> dict[str, Any]:
        (data,) = blocks_to_json([block])
        if isinstance(block, AttachmentBlock) and self._ctx.run_dir is not None:
            content = (Path(self._ctx.run_dir) / block.path).read_bytes()
            data.pop("path", None)
            data["sha256"] = self._tape.store_blob(content, block.mime_type)
        return data

    async def close(self) -> None:
        await self._inner.close()
        if self._notes.roots:
            answers = {"answers": self._notes.roots}
            self._tape.record({"type": "mcp", "server": self.id, "method": "roots/list",
                               "result": answers})  # fmt: skip
            self._notes.roots = []
        if self._notes.messages:
            kept = {"messages": self._notes.messages}
            self._tape.record({"type": "mcp", "server": self.id,
                               "method": "notifications/message", "result": kept})  # fmt: skip
            self._notes.messages = []


class ReplaySource:
    """A source answered from a cassette: no process, no connection."""

    def __init__(self, plan: SourcePlan, ctx: SourceContext, tape: Tape) -> None:
        self._plan = plan
        self._ctx = ctx
        self._tape = tape
        self._store: Any = ctx.store

    @property
    def id(self) -> str:
        return self._plan.id

    @property
    def kind(self) -> str:
        return self._plan.kind

    @property
    def target(self) -> str:
        return self._plan.target

    async def start(self) -> ServerInfo:
        entry = self._tape.take_server(self.id, "initialize")
        if isinstance(entry.get("error"), Mapping):
            raise_recorded(entry["error"])
        result = entry.get("result") or {}
        roots = self._tape.server_entry(self.id, "roots/list")
        if roots is not None and self._ctx.events is not None:
            for answer in (roots.get("result") or {}).get("answers") or []:
                listed = [str(root) for root in answer.get("roots") or []]
                self._ctx.events.roots_sent(self.id, listed, str(answer.get("reason", "listed")))
        logged = self._tape.server_entry(self.id, "notifications/message")
        if logged is not None:  # the log messages of no one call, told at the start
            await self._tell((logged.get("result") or {}).get("messages") or [], None)
        return ServerInfo(
            protocol_version=result.get("protocol_version"),
            server_name=result.get("server_name"),
        )

    async def list_tools(self) -> list[RawTool]:
        entry = self._tape.take_server(self.id, "tools/list")
        if isinstance(entry.get("error"), Mapping):
            raise_recorded(entry["error"])
        listed = (entry.get("result") or {}).get("tools") or []
        names = {f.name for f in dataclasses.fields(RawTool)}
        return [RawTool(**{k: v for k, v in item.items() if k in names}) for item in listed]

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], *, context: CallContext | None = None
    ) -> ToolResult:
        params = {"name": name, "arguments": dict(arguments)}
        entry = self._tape.take(
            "mcp",
            f"call of tool '{name}' on server '{self.id}'",
            {"params": params},
            server=self.id,
            method="tools/call",
        )
        await self._tell(entry.get("notifications") or [], context)
        if isinstance(entry.get("error"), Mapping):
            raise_recorded(entry["error"])
        result = entry.get("result") or {}
        blocks = tuple(self._block(item, name) for item in result.get("blocks") or [])
        return ToolResult(
            blocks=blocks,
            is_error=bool(result.get("is_error")),
            error_class=result.get("error_class"),
            duration_ms=float(result.get("duration_ms") or 0.0),
            meta=result.get("meta"),
        )

    def _block(self, item: Mapping[str, Any], tool: str) -> Block:
        kind = str(item.get("type", "text"))
        cls = _BLOCKS.get(kind, TextBlock)
        names = {f.name for f in dataclasses.fields(cls)} - {"type"}
        fields = {k: v for k, v in item.items() if k in names}
        if cls is ResourceLinkBlock and fields.get("icons") is not None:
            fields["icons"] = tuple(fields["icons"])
        if cls is not AttachmentBlock:
            block: Block = cls(**fields)
            return block
        data = self._tape.blob(str(item.get("sha256", "")))
        saved: AttachmentBlock = self._attachments().save(
            data,
            tool_name=str(fields.get("tool_name") or tool),
            kind=str(fields.get("kind", "file")),
            mime_type=str(fields.get("mime_type", "application/octet-stream")),
            uri=fields.get("uri"),
            source=str(fields.get("source", "mcp_tool")),
        )
        return dataclasses.replace(
            saved,
            annotations=fields.get("annotations"),
            meta=fields.get("meta"),
            resource_meta=fields.get("resource_meta"),
        )

    def _attachments(self) -> Any:
        if self._store is None:
            from devall_cli.tools.attachments import AttachmentStore

            self._store = AttachmentStore(Path(self._ctx.run_dir or "."))
        return self._store

    async def _tell(self, notes: Sequence[Mapping[str, Any]], context: CallContext | None) -> None:
        """Report again what the server reported during the recorded call.

        A sampling request the node's model answered is asked of it again (served from the
        cassette like any model request): the model's turns, and a scripted model's place in
        its script, stay those of the recording.
        """
        events = self._ctx.events
        for number, note in enumerate(notes):
            name, args = str(note.get("event", "")), list(note.get("args") or [])
            call = context or CallContext()
            if name == "sampling_requested" and len(args) == 1:
                if events is not None:
                    events.sampling_requested(self.id, call, _sampling(args[0]))
                if _answered_ok(notes[number + 1 :]) and call.sampler is not None:
                    await call.sampler.sample(_sampling(args[0]))
                continue
            if events is None or name not in (*_NOTES, "server_message"):
                continue
            if name == "server_message" and len(args) == 3:
                events.server_message(self.id, str(args[0]), args[1], str(args[2]))
            elif name == "tool_progress" and len(args) == 3:
                events.tool_progress(self.id, call, *args)
            elif name == "elicitation_requested" and len(args) == 2:
                events.elicitation_requested(self.id, call, _elicitation(args[0]), args[1])
            elif name == "elicitation_answered" and len(args) == 2:
                answer = ElicitationAnswer(**args[0])
                events.elicitation_answered(self.id, call, answer, args[1])
            elif name == "sampling_answered" and len(args) == 4:
                reply = SamplingReply(**args[1]) if isinstance(args[1], Mapping) else None
                events.sampling_answered(self.id, call, args[0], reply, args[2], args[3])

    async def close(self) -> None:
        return None


def _answered_ok(later: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the next sampling answer among `later` notes was the model's reply."""
    for note in later:
        if note.get("event") == "sampling_answered":
            args = list(note.get("args") or [])
            return bool(args) and args[0] == "ok"
    return False


def _elicitation(data: Mapping[str, Any]) -> ElicitationRequest:
    names = {f.name for f in dataclasses.fields(ElicitationRequest)}
    return ElicitationRequest(**{k: v for k, v in data.items() if k in names})


def _sampling(data: Mapping[str, Any]) -> SamplingRequest:
    names = {f.name for f in dataclasses.fields(SamplingRequest)}
    fields = {k: v for k, v in data.items() if k in names}
    for key in ("messages", "stop_sequences", "model_hints"):
        if key in fields:
            fields[key] = tuple(fields[key])
    return SamplingRequest(**fields)


def _ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 3)
