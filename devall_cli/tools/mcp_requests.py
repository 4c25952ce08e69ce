"""What an MCP server may ask of devall during a session, and what it reports about calls.

`ServerRequests` holds the handlers a session's fastmcp Client is built with: sampling (the
calling node's model answers, within `sampling_max_tokens`), elicitation (the `elicitation`
policy, or the operator's terminal form), roots (`roots/list`, and `roots/list_changed` when
they change), log messages (`log_level`) and per-call progress. Each handler reports to the
run through `ToolEvents`.

Roots are offered only when the user configured some (`roots:`): a filesystem server takes the
roots it is given in place of the folders on its command line, so a root devall chose itself
would widen what the user granted. Without any, the roots capability is not advertised.

Which call a request belongs to: a server on the 2026 protocol embeds its requests in the
call's own result (`input_required`), so they arrive in the calling task and a context variable
names the call. A server on an older protocol sends them on the session, where nothing says
which request they are for: they go to the server's only running call, or to the oldest one
when several run at once. While devall waits on the operator or on the model for a call, that
call's timeout is paused (`CallClock`).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devall_cli.errors import DevallError
from devall_cli.tools.base import (
    CallContext,
    ElicitationAnswer,
    ElicitationRequest,
    Elicitor,
    SamplingReply,
    ToolEvents,
)
from devall_cli.tools.kinds.client_settings import (
    LOG_LEVELS,
    McpClientConfig,
    RootConfig,
    present_roots,
)
from devall_cli.tools.mcp_sampling import SamplingRefused, sampling_request

if TYPE_CHECKING:
    import mcp_types
    from fastmcp.client.logging import LogMessage
    from mcp.shared.dispatcher import ProgressFnT

    from devall_cli.tools.mcp_protocol import McpSession

USER_REJECTED = -1  # the MCP spec's code for a sampling request the client refused
# Which call of which source the running task serves: (id of the ServerRequests, call key).
_CURRENT: ContextVar[tuple[int, int] | None] = ContextVar("devall_mcp_call", default=None)


@dataclass
class CallClock:
    """Time a call spent waiting on devall (the operator, the model), which its timeout skips."""

    paused: float = 0.0
    _since: list[float] = field(default_factory=list)

    @property
    def active(self) -> bool:
        """Whether the call is waiting on devall right now."""
        return bool(self._since)

    def extra(self) -> float:
        """Seconds paused so far, the pauses still going on included."""
        now = time.monotonic()
        return self.paused + sum(now - since for since in self._since)

    @contextlib.contextmanager
    def pausing(self) -> Iterator[None]:
        """The timeout does not run during the block."""
        since = time.monotonic()
        self._since.append(since)
        try:
            yield
        finally:
            self._since.remove(since)
            self.paused += time.monotonic() - since


@dataclass
class RunningCall:
    """A call in flight on one session."""

    context: CallContext
    clock: CallClock = field(default_factory=CallClock)
    asked: Counter[str] = field(default_factory=Counter)  # sampling / elicitation requests


class ServerRequests:
    """The handlers of one source's sessions (the same across reconnects)."""

    def __init__(
        self,
        *,
        server_id: str,
        settings: McpClientConfig,
        events: ToolEvents | None = None,
        elicitor: Elicitor | None = None,
        note: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.server_id = server_id
        self.settings = settings
        self.events = events
        self.elicitor = elicitor  # for requests that come with no call (or a call without one)
        self._note = note  # a line for the server's log (tail and file), no event
        self._calls: dict[int, RunningCall] = {}  # in the order the calls started
        self._keys = itertools.count(1)
        self._known_roots: tuple[str, ...] | None = None
        self._asked: Counter[str] = Counter()  # requests of each kind over the whole run
        # `notifications/resources/updated` of a handshake-era session: whoever watches sets it.
        self.on_resource_updated: Callable[[str], None] | None = None

    def _over_limit(self, kind: str, call: RunningCall | None) -> str | None:
        """Count one `kind` request (sampling, elicitation); why it is refused, if it is."""
        per_call = getattr(self.settings, f"{kind}_max_requests")
        per_run = getattr(self.settings, f"{kind}_max_requests_per_run")
        if call is not None and call.asked[kind] >= per_call:
            return (
                f"this tool call already made {per_call} {kind} requests, the most "
                f"{kind}_max_requests allows"
            )
        if self._asked[kind] >= per_run:
            return (
                f"the server already made {per_run} {kind} requests in this run, the most "
                f"{kind}_max_requests_per_run allows"
            )
        if call is not None:
            call.asked[kind] += 1
        self._asked[kind] += 1
        return None

    # --- calls -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def calling(self, context: CallContext | None) -> Iterator[RunningCall]:
        """Register a call for the duration of the block; requests meanwhile may be its own."""
        key = next(self._keys)
        call = RunningCall(context or CallContext())
        self._calls[key] = call
        token = _CURRENT.set((id(self), key))
        try:
            yield call
        finally:
            _CURRENT.reset(token)
            del self._calls[key]

    def current(self) -> RunningCall | None:
        """The call a request arriving now belongs to (see the module docstring)."""
        mark = _CURRENT.get()
        # A mark inherited by a task that outlived its call (a session opened during a call)
        # no longer names a running call, and is ignored.
        if mark is not None and mark[0] == id(self) and mark[1] in self._calls:
            return self._calls[mark[1]]
        return next(iter(self._calls.values()), None)

    def client_kwargs(self) -> dict[str, Any]:
        """The handlers to build a fastmcp Client with (sampling only when allowed, roots only
        when configured: the client advertises a capability only with its handler)."""
        kwargs: dict[str, Any] = {
            "elicitation_handler": self.elicit,
            "log_handler": self.log_message,
            "message_handler": self.on_message,
        }
        if self.offers_roots:
            kwargs["roots"] = self.list_roots
        if self.settings.sampling == "allow":
            kwargs["sampling_handler"] = self.sample
        return kwargs

    async def on_message(self, message: Any) -> None:
        """Every notification (and transport fault) of a session: resource updates go on."""
        method = getattr(message, "method", None)
        if self.on_resource_updated is not None and method == "notifications/resources/updated":
            self.on_resource_updated(str(message.params.uri))

    def progress_handler(self, call: RunningCall) -> ProgressFnT:
        """The progress handler of one call: `tool.progress` events."""

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if self.events is not None:
                self.events.tool_progress(self.server_id, call.context, progress, total, message)

        return on_progress

    # --- logging -----------------------------------------------------------------------------

    async def log_message(self, message: LogMessage) -> None:
        """A `notifications/message`: a `server.log` event (below `log_level`: dropped)."""
        level = str(message.level).lower()
        if not self._at_level(level):
            return
        text = log_text(message.data)
        origin = f" ({message.logger})" if message.logger else ""
        self._note(f"{level}{origin}: {text}")
        if self.events is not None:
            self.events.server_message(self.server_id, level, message.logger, text)

    def _at_level(self, level: str) -> bool:
        wanted = self.settings.log_level
        if wanted is None or level not in LOG_LEVELS:
            return True
        return LOG_LEVELS.index(level) >= LOG_LEVELS.index(wanted)

    async def apply_log_level(self, session: McpSession) -> None:
        """Ask a server on an older protocol to send log messages from `log_level` up."""
        level = self.settings.log_level
        if level is None or not session.logs:
            return  # the 2026 protocol has no such request; `_at_level` filters instead
        try:
            await session.set_log_level(level)
        except Exception as exc:  # a server that refuses it still works; its logs are filtered
            self._note(f"[devall] the server refused log_level {level}: {exc}")

    # --- roots -------------------------------------------------------------------------------

    @property
    def offers_roots(self) -> bool:
        """Whether the server is offered roots at all (only those the user configured)."""
        return bool(self.settings.roots)

    def roots(self) -> list[RootConfig]:
        """The roots to offer now: the configured ones that exist."""
        return present_roots(self.settings.roots)

    async def list_roots(self, context: Any) -> list[mcp_types.Root]:
        """`roots/list`: the roots as `file://` URIs, named after their folder by default."""
        import mcp_types
        from pydantic import FileUrl

        return [
            mcp_types.Root(uri=FileUrl(root["uri"]), name=root["name"]) for root in self.root_list()
        ]

    def root_list(self) -> list[dict[str, str]]:
        """The answer to `roots/list` as JSON objects (`uri`, `name`), reported as sent."""
        roots = self.roots()
        self._known_roots = tuple(root.uri for root in roots)
        if self.events is not None:
            self.events.roots_sent(self.server_id, self._known_roots, "listed")
        return [{"uri": root.uri, "name": root.name or Path(root.path).name} for root in roots]

    def session_started(self) -> None:
        """A new session knows the roots as they are now."""
        self._known_roots = tuple(root.uri for root in self.roots())

    async def check_roots(self, session: McpSession) -> None:
        """Send `roots/list_changed` when the roots differ from what the session knows."""
        now = tuple(root.uri for root in self.roots())
        if self._known_roots is None or now == self._known_roots:
            return
        self._known_roots = now
        try:
            await session.send_roots_list_changed()
        except Exception as exc:  # the 2026 protocol has no such notification
            self._note(f"[devall] could not tell the server that its roots changed: {exc}")
            return
        if self.events is not None:
            self.events.roots_sent(self.server_id, now, "changed")

    # --- elicitation ---------------------------------------------------------------------------

    async def elicit(
        self, message: str, response_type: Any, params: Any, context: Any
    ) -> mcp_types.ElicitResult:
        """`elicitation/create` (fastmcp's handler): answered by the policy, or by the form."""
        import mcp_types

        url = getattr(params, "url", None)
        schema = dict(getattr(params, "requested_schema", None) or {})
        answer = await self.answer_elicitation(
            message, str(url) if url is not None else None, schema
        )
        content = dict(answer.content) if answer.content is not None else None
        return mcp_types.ElicitResult(action=answer.action, content=content)  # type: ignore[arg-type]

    async def answer_elicitation(
        self, message: str, url: str | None, schema: dict[str, Any]
    ) -> ElicitationAnswer:
        """The answer to an elicitation: by the `elicitation` policy, or by the operator."""
        call = self.current()
        ctx = call.context if call is not None else None
        request = ElicitationRequest(
            server_id=self.server_id,
            message=message,
            mode="url" if url is not None else "form",
            schema=schema,
            url=url,
            node_id=ctx.node_id if ctx is not None else "",
            tool=ctx.tool if ctx is not None else "",
        )
        elicitor = (ctx.elicitor if ctx is not None else None) or self.elicitor
        policy = self.settings.elicitation or ("prompt" if elicitor is not None else "decline")
        refused = self._over_limit("elicitation", call)
        if refused is not None:
            policy = "decline"
            self._note(f"devall declined an elicitation request: {refused}")
        if self.events is not None:
            self.events.elicitation_requested(self.server_id, ctx, request, policy)
        if refused is not None:
            answer = ElicitationAnswer("decline")
            channel = "limit"
        elif policy == "prompt" and elicitor is not None:
            with call.clock.pausing() if call is not None else contextlib.nullcontext():
                answer = await elicitor.elicit(request)
            channel = elicitor.channel
        else:
            answer = answer_by_policy(request, policy)
            channel = "none" if policy == "prompt" else "config"
        if self.events is not None:
            self.events.elicitation_answered(self.server_id, ctx, answer, channel)
        return answer

    # --- sampling ------------------------------------------------------------------------------

    async def sample(self, messages: Any, params: Any, context: Any) -> Any:
        """`sampling/createMessage`: the calling node's model answers."""
        call = self.current()
        ctx = call.context if call is not None else None
        started = time.monotonic()
        try:
            request = sampling_request(params, self.settings.sampling_max_tokens)
        except SamplingRefused as exc:
            return self._refuse(ctx, str(exc), started)
        if self.events is not None:
            self.events.sampling_requested(self.server_id, ctx, request)
        refused = self._over_limit("sampling", call)
        if refused is not None:
            return self._refuse(ctx, f"devall refused this sampling request: {refused}", started)
        if ctx is None or ctx.sampler is None:
            why = "no agent node's tool call is running to answer it with its model"
            return self._refuse(ctx, f"devall cannot answer this sampling request: {why}", started)
        try:
            with call.clock.pausing() if call is not None else contextlib.nullcontext():
                reply = await ctx.sampler.sample(request)
        except DevallError as exc:
            return self._refuse(ctx, f"the model could not answer: {exc.message}", started)
        if self.events is not None:
            ms = _ms(started)
            self.events.sampling_answered(self.server_id, ctx, "ok", reply, None, ms)
        return create_message_result(reply)

    def _refuse(self, ctx: CallContext | None, reason: str, started: float) -> Any:
        if self.events is not None:
            self.events.sampling_answered(self.server_id, ctx, "failed", None, reason, _ms(started))
        import mcp_types

        return mcp_types.ErrorData(code=USER_REJECTED, message=reason)


def log_text(data: Any) -> str:
    """The text of a log message's data: text as is, FastMCP's `{msg, extra}` as its message."""
    if isinstance(data, str):
        return data
    if (
        isinstance(data, Mapping)
        and isinstance(data.get("msg"), str)
        and set(data)
        <= {
            "msg",
            "extra",
        }
    ):
        extra = data.get("extra")
        return data["msg"] if extra is None else f"{data['msg']} {_json(extra)}"
    return _json(data)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def answer_by_policy(request: ElicitationRequest, policy: str) -> ElicitationAnswer:
    """The answer of a policy that asks nobody: defaults, decline or cancel.

    `accept_defaults` accepts a form with the default of every field that has one; a form
    whose required fields lack a default, and a URL request, are declined.
    """
    if policy == "cancel":
        return ElicitationAnswer("cancel")
    if policy != "accept_defaults" or request.mode != "form":
        return ElicitationAnswer("decline")
    content = schema_defaults(request.schema)
    required = request.schema.get("required") or []
    if any(name not in content for name in required if isinstance(name, str)):
        return ElicitationAnswer("decline")
    return ElicitationAnswer("accept", content)


def schema_defaults(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The `default` of each property of a requested schema that has one."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return {}
    return {
        str(name): spec["default"]
        for name, spec in properties.items()
        if isinstance(spec, Mapping) and "default" in spec
    }


def create_message_result(reply: SamplingReply) -> mcp_types.CreateMessageResult:
    """The `sampling/createMessage` result of a model reply."""
    import mcp_types

    return mcp_types.CreateMessageResult(
        role="assistant",
        content=mcp_types.TextContent(type="text", text=reply.text),
        model=reply.model,
        stop_reason=reply.stop_reason,
    )


def _ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 3)
