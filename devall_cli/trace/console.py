"""The human trace: Rich rendering of run events on stderr, with a live status line on a TTY."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from devall_cli.block_text import render_link, repeats_text
from devall_cli.events import (
    AttachmentSavedEvent,
    CodeFinishedEvent,
    CodeStartedEvent,
    EdgeEvent,
    EmbeddingsEvent,
    Event,
    GraphNoteEvent,
    HumanAskedEvent,
    HumanRepliedEvent,
    MemoryLoadedEvent,
    MemoryRetrievedEvent,
    MemoryWrittenEvent,
    ModelReplyEvent,
    ModelRequestEvent,
    NodeFinishedEvent,
    NodeStartedEvent,
    RunFinishedEvent,
    RunStartedEvent,
    ServerAuthEvent,
    ServerExitedEvent,
    ServerLogEvent,
    ServerReadyEvent,
    ServerRestartedEvent,
    ServerStartingEvent,
    ToolCallEvent,
    ToolErrorEvent,
    ToolResultEvent,
)
from devall_cli.redaction import Redactor
from devall_cli.text import visible
from devall_cli.trace.console_cost import budget_line, cost_cell, model_lines
from devall_cli.trace.console_mcp import McpRequestsTrace
from devall_cli.trace.console_policy import PolicyTrace, sandbox_suffix
from devall_cli.trace.policy_text import REFUSED_BY_POLICY
from devall_cli.trace.recorder import RunRecorder, RunResult
from devall_cli.trace.status import WaitState

Verbosity = Literal["quiet", "normal", "verbose"]

# Log levels of a server's messages that the normal trace shows (warning, then worse).
NOTABLE_LEVELS = ("warning", "error", "critical", "alert", "emergency")
# How much of a long text the normal mode shows; verbose shows everything.
SHORT_LINES = 6
SHORT_CHARS = 600


def format_ms(ms: float) -> str:
    """`850 ms`, `2.35 s`."""
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.2f} s"


def shorten(text: str, lines: int = SHORT_LINES, chars: int = SHORT_CHARS) -> str:
    """The first `lines` lines / `chars` characters, saying how much was left out."""
    kept = text.splitlines()[:lines]
    short = "\n".join(kept)
    if len(short) > chars:
        short = short[:chars]
    if len(short) < len(text.rstrip("\n")):
        hidden_lines = text.count("\n") - short.count("\n")
        more = f"{hidden_lines} more lines" if hidden_lines > 0 else "more"
        short += f"\n… ({more}; --verbose shows all)"
    return short


def render_blocks(blocks: Sequence[Mapping[str, Any]]) -> str:
    """Result blocks as text: text as is, attachments as saved paths, links, data as JSON.

    Structured content that the text blocks already say (see normalize.repeats_text) is left
    out; events.jsonl and `--json` keep it.
    """
    texts = [str(block.get("text", "")) for block in blocks if block.get("type") == "text"]
    parts: list[str] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "attachment":
            parts.append(
                f"[{block.get('kind', 'file')} saved: {block.get('path')} "
                f"({block.get('mime_type')}, {block.get('size')} bytes)]"
            )
        elif kind == "resource_link":
            link = (block.get("name"), block.get("mime_type"), block.get("description"))
            parts.append(render_link(str(block.get("uri", "")), *link))
        elif kind != "data" or not repeats_text(block.get("data"), texts):
            parts.append(_json(block.get("data", block)))
    return "\n".join(parts)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _turn(stage: str, round_no: int) -> str:
    """`round 2`, `sampling` (a server asked), or the thinking stage a model call belongs to."""
    if stage == "sampling":
        return stage
    return f"round {round_no}" if stage == "gen" else f"thinking ({stage})"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


class ConsoleSink(McpRequestsTrace, PolicyTrace):
    """Renders events to a Rich console; `quiet` prints nothing."""

    def __init__(
        self,
        console: Console,
        redactor: Redactor,
        verbosity: Verbosity = "normal",
        *,
        live: bool | None = None,
        recorder: RunRecorder | None = None,
    ) -> None:
        self.console = console
        self.redactor = redactor
        self.verbosity = verbosity
        # A run session's recorder is shared (and fed by the session); otherwise keep our own.
        self._own = recorder is None
        self.recorder = recorder if recorder is not None else RunRecorder()
        self.waits = WaitState()
        self._calls: dict[str, ToolCallEvent] = {}
        # No spinner and no live line without colour (--no-color, NO_COLOR) or a terminal.
        animated = console.is_terminal and not console.no_color and verbosity != "quiet"
        self._use_live = animated if live is None else live
        self._live: Live | None = None
        self._spinner = Spinner("dots", style="cyan")
        self._progress_shown: dict[str, float] = {}  # call id -> when a progress line was shown

    @property
    def verbose(self) -> bool:
        """Whether texts are shown in full."""
        return self.verbosity == "verbose"

    def __call__(self, event: Event) -> None:
        """Render one event."""
        if self._own:
            self.recorder(event)
        if self.verbosity == "quiet":
            if isinstance(event, ServerAuthEvent) and event.step == "authorize":
                self._on_server_auth(event)  # the run waits for this sign-in: always shown
            return
        self.waits.update(event)
        if isinstance(event, RunStartedEvent):
            self._start_live()
        handler = getattr(self, "_on_" + event.kind.replace(".", "_"), None)
        if handler is not None:
            handler(event)
        if isinstance(event, RunFinishedEvent):
            self.close()
            self._print_summary(self.recorder.result(), event)
        elif self._live is not None:
            self._live.refresh()  # show the new wait state now, not at the next tick

    def close(self) -> None:
        """Stop the live status line (idempotent)."""
        if self._live is not None:
            self._live.stop()
            self._live = None

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No live status line during the block (the terminal asks the operator)."""
        running = self._live is not None
        self.close()
        try:
            yield
        finally:
            if running:
                self._start_live()

    # --- helpers -----------------------------------------------------------------------------

    def _t(self, text: str, style: str = "", *, body: bool = False) -> Text:
        # Text, never a str: Rich would read `[/x]` as markup and `:bug:` as an emoji. Control
        # characters are escaped; a body (a reply, a result) keeps its tabs and newlines.
        return Text(visible(self.redactor.text(text), multiline=body), style=style)

    def _print(self, text: str, style: str = "", *, body: bool = False) -> None:
        self.console.print(self._t(text, style, body=body), soft_wrap=True)

    def _body(self, text: str) -> str:
        text = self.redactor.text(text)  # before cutting: a cut secret would leak its start
        return text if self.verbose else shorten(text)

    def _start_live(self) -> None:
        if not self._use_live or self._live is not None:
            return
        self._live = Live(
            console=self.console,
            get_renderable=self._status_line,
            refresh_per_second=8,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._live.start()

    def _status_line(self) -> RenderableType:
        self._spinner.update(text=self._t(self.waits.describe(), "dim"))
        bars = self._progress_bars()
        return Group(self._spinner, *bars) if bars else self._spinner

    # --- run and servers ---------------------------------------------------------------------

    def _on_run_started(self, event: RunStartedEvent) -> None:
        self._print(f"devall run {event.run_id} · workflow {event.workflow}", "bold")
        if self.verbose:
            self._print(f"task: {event.task}", "dim", body=True)

    def _on_server_starting(self, event: ServerStartingEvent) -> None:
        self._print(f"· starting {event.server_id} ({event.source}: {event.target})", "dim")

    def _on_server_ready(self, event: ServerReadyEvent) -> None:
        details = [event.server_name or "", f"protocol {event.protocol_version}"]
        details += [f"{event.tools} tools", format_ms(event.connect_ms)]
        shown = " · ".join(d for d in details if d and not d.endswith("None"))
        shown += sandbox_suffix(event.sandbox)
        self._print(f"✓ server '{event.server_id}' ready · {shown}", "green")
        self._sandbox_note(f"server '{event.server_id}'", event.sandbox)

    def _on_server_log(self, event: ServerLogEvent) -> None:
        # A server's own warnings and errors are shown in the normal trace too.
        if self.verbose or event.level in NOTABLE_LEVELS:
            style = {"warning": "yellow"}.get(event.level or "", "dim")
            if event.level in NOTABLE_LEVELS[1:]:
                style = "red"
            self._print(f"  {event.server_id} | {event.line}", style)

    def _on_server_exited(self, event: ServerExitedEvent) -> None:
        message = f": {event.message}" if event.message else ""
        # `exited` for a process that ended; otherwise what went wrong (`unreachable`, ...).
        what = event.status.replace("_", " ") if event.status else "exited"
        self._print(f"✗ server '{event.server_id}' {what}{message}", "red")

    def _on_server_restarted(self, event: ServerRestartedEvent) -> None:
        self._print(f"↻ server '{event.server_id}' restarted (attempt {event.attempt})", "yellow")

    def _on_server_auth(self, event: ServerAuthEvent) -> None:
        if event.step == "authorize":
            self._print(f"→ server {event.server_id}: {event.message}:", "yellow")
            if event.url:
                self._print(f"  {event.url}")
        elif event.step == "authorized":
            self._print(f"✓ server {event.server_id} {event.message}", "green")
        else:
            self._print(f"· server {event.server_id}: {event.message}", "dim")

    # --- nodes and model ---------------------------------------------------------------------

    def _on_node_started(self, event: NodeStartedEvent) -> None:
        title = f"node {event.node_id}" + (f" (visit {event.visit})" if event.visit > 1 else "")
        self.console.rule(self._t(title, "bold cyan"), style="cyan")
        if self.verbose:
            for text in event.inputs:
                self._print(f"input: {text}", "dim", body=True)

    def _on_model_request(self, event: ModelRequestEvent) -> None:
        if self.verbose:
            tools = ", ".join(event.tools) or "none"
            count = _plural(event.messages, "message")
            head = f"→ model · {event.node_id} · {_turn(event.stage, event.round)}"
            self._print(f"{head} · {count} · tools: {tools}", "dim")

    def _on_model_reply(self, event: ModelReplyEvent) -> None:
        tokens = event.usage.get("total_tokens", 0)
        # Every line names its node: parallel branches interleave.
        turn = _turn(event.stage, event.round)
        head = f"model · {event.node_id} · {turn} · {format_ms(event.duration_ms)}"
        self._print(head + (f" · {tokens} tokens" if tokens else ""), "magenta")
        if event.content:
            self._print(self._body(event.content), body=True)
        for call in event.tool_calls:
            args = _json(self.redactor.value(call.get("arguments", {})))
            args = args if self.verbose else shorten(args, lines=1, chars=200)
            name = visible(str(call.get("name")))  # one line, though the rest may hold several
            self._print(f"  ⇢ {name} {args}", "blue", body=True)

    def _on_node_finished(self, event: NodeFinishedEvent) -> None:
        name = f"node {event.node_id}" + (f" (visit {event.visit})" if event.visit > 1 else "")
        if event.status == "ok":
            quiet = "" if event.outputs else " · no output"
            self._print(f"✓ {name} ok · {format_ms(event.duration_ms)}{quiet}", "green")
            if self.verbose:
                for text in event.outputs:
                    self._print(f"output: {text}", "dim", body=True)
        elif event.status == "skipped":
            self._print(f"- {name} skipped (never triggered)", "dim")
        else:
            self._print(f"✗ {name} failed: {event.error}", "bold red")

    def _on_edge(self, event: EdgeEvent) -> None:
        if not self.verbose:
            return
        if not event.met:
            what = "condition not met"
        elif event.dropped:
            what = "payload dropped by its processor"
        else:
            what = ("delivered" if event.delivered else "no data") + (
                ", triggered" if event.triggered else ""
            )
        self._print(f"  → {event.source} → {event.target} [{event.condition}]: {what}", "dim")

    def _on_graph_note(self, event: GraphNoteEvent) -> None:
        self._print(f"! {event.message}", "yellow")

    # --- human and code nodes -------------------------------------------------------------

    def _on_human_asked(self, event: HumanAskedEvent) -> None:
        via = {"answers": "from the answers file", "terminal": "on the terminal"}
        where = via.get(event.channel, "with no terminal and no answers file")
        self._print(f"? {event.node_id} asks the operator {where}", "yellow")

    def _on_human_replied(self, event: HumanRepliedEvent) -> None:
        lines = _plural(len(event.reply.splitlines()), "line")
        self._print(f"  reply · {event.node_id} · {lines}", "yellow")
        if event.channel != "terminal" or self.verbose:  # typed replies are on screen already
            self._print(self._body(event.reply) or "(empty reply)", body=True)

    def _on_code_started(self, event: CodeStartedEvent) -> None:
        confined = sandbox_suffix(event.sandbox)
        if self.verbose:
            self._print(f"… {event.node_id} runs {' '.join(event.command)}{confined}", "dim")
        elif confined:  # how a script is confined is worth a line in the normal trace too
            self._print(f"… {event.node_id} runs {event.script}{confined}", "dim")
        self._sandbox_note(f"{event.node_id}'s script", event.sandbox)

    def _on_code_finished(self, event: CodeFinishedEvent) -> None:
        took = format_ms(event.duration_ms)
        head = f"code · {event.node_id} · {event.script or 'no script'}"
        if event.status == "ok":
            self._print(f"{head} · exit 0 · {took}", "green")
            if event.stderr and self.verbose:
                self._print(event.stderr, "dim", body=True)
            return
        what = {
            "failed": f"failed (exit {event.exit_code})",
            "timeout": "stopped at its timeout",
            "not_started": "could not start",
            "no_code": "no code in the input",
        }.get(event.status, event.status)
        self._print(f"{head} · {what} · {took}", "red")
        if event.stderr:
            self._print(self._body(event.stderr), "red", body=True)

    # --- memory ------------------------------------------------------------------------------

    def _on_memory_loaded(self, event: MemoryLoadedEvent) -> None:
        where = f"{event.graph}/" if event.graph else ""
        place = event.path or "this run only"
        count = _plural(event.items, "item")
        self._print(f"· memory {where}{event.store} ({event.type}) · {count} · {place}", "dim")

    def _on_memory_retrieve(self, event: MemoryRetrievedEvent) -> None:
        stores = ", ".join(event.stores)
        found = _plural(event.items, "item") if event.items else "nothing"
        head = f"memory · {event.node_id} · {event.stage} · {found} from {stores}"
        self._print(f"{head} · {format_ms(event.duration_ms)}", "cyan")
        if event.text and self.verbose:
            self._print(event.text, "dim", body=True)

    def _on_memory_write(self, event: MemoryWrittenEvent) -> None:
        what = f"kept {_plural(event.added, 'item')}" if event.added else "nothing new"
        self._print(
            f"memory · {event.node_id} · wrote {event.store}: {what} "
            f"({_plural(event.items, 'item')})",
            "cyan",
        )

    def _on_memory_embeddings(self, event: EmbeddingsEvent) -> None:
        if self.verbose:
            who = event.node_id or "loading"
            self._print(
                f"  embeddings · {event.store} · {who} · {_plural(event.inputs, 'text')} · "
                f"{format_ms(event.duration_ms)}",
                "dim",
            )

    # --- tools -------------------------------------------------------------------------------

    def _on_tool_call(self, event: ToolCallEvent) -> None:
        self._calls[event.call_id] = event
        if self.verbose:
            self._print(f"… {event.node_id} calls {event.tool}", "dim")

    def _on_tool_result(self, event: ToolResultEvent) -> None:
        call = self._calls.pop(event.call_id, None)
        self._progress_shown.pop(event.call_id, None)
        infra = isinstance(event, ToolErrorEvent)
        refused = event.error_class == REFUSED_BY_POLICY
        style = "yellow" if refused else "red" if event.is_error else "green"
        title = f"tool {event.tool} · {event.node_id}"
        if event.original_name and event.original_name != event.tool:
            title += f" ({event.original_name})"
        where = " ".join(p for p in (event.source, event.server) if p)
        title += f" · {where}" if where else ""
        title += f" · {format_ms(event.duration_ms)}"
        if refused:
            title += " · refused by the tool policy"
        elif event.is_error:
            label = "infrastructure error" if infra else "error"
            title += f" · {label}" + (f" ({event.error_class})" if event.error_class else "")
        body = Text()
        if call is not None:
            args = _json(self.redactor.value(call.arguments))
            body.append_text(
                self._t("args: " + (args if self.verbose else shorten(args, 2)), "dim", body=True)
            )
            body.append("\n")
        shown = self._body(render_blocks(event.blocks)) or "(empty result)"
        body.append_text(self._t(shown, body=True))
        panel = Panel(body, title=self._t(title), title_align="left", border_style=style)
        # Wrapped inside the panel (long words folded), never cut at the console's width.
        self.console.print(panel, soft_wrap=False)

    _on_tool_error = _on_tool_result

    def _on_attachment_saved(self, event: AttachmentSavedEvent) -> None:
        self._print(
            f"  attachment: {event.path} ({event.mime_type}, {event.size} bytes, "
            f"sha256 {event.sha256[:12]}…)",
            "cyan",
        )

    # --- summary -----------------------------------------------------------------------------

    def _print_summary(self, result: RunResult, event: RunFinishedEvent) -> None:
        table = Table(title=self._t("run summary"), title_justify="left")
        for name in ("node", "status", "model calls", "tool calls", "tokens", "cost", "duration"):
            justify: Literal["left", "right"] = "left" if name in ("node", "status") else "right"
            table.add_column(name, justify=justify)
        for node in result.nodes:
            style = {"ok": "green", "failed": "red"}.get(node.status, "dim")
            table.add_row(
                self._t(node.node_id),
                Text(node.status, style=style),
                Text(str(node.model_calls)),
                Text(str(node.tool_calls)),
                Text(str(node.tokens.total)),
                cost_cell(node.cost),
                Text(format_ms(node.duration_ms)),
            )
        refused = result.policy.refused_calls
        failed = result.tool_errors - refused  # a refused call is the policy's doing, no failure
        notes = [f"{failed} failed" if failed else "", f"{refused} refused" if refused else ""]
        shown = ", ".join(n for n in notes if n)
        calls = f"{result.tool_calls} ({shown})" if shown else str(result.tool_calls)
        table.add_row(
            Text("total", style="bold"),
            Text(event.status, style="bold"),
            Text(str(result.model_calls)),
            Text(calls, style="yellow" if shown else ""),
            Text(str(result.tokens.total)),
            cost_cell(result.cost),
            Text(format_ms(event.duration_ms)),
        )
        self.console.print(table)
        for line in model_lines(result):
            self._print(line, "dim")
        self._print_status_line(event, failed, refused)

    def _print_status_line(
        self, event: RunFinishedEvent, tool_errors: int = 0, refused: int = 0
    ) -> None:
        took = format_ms(event.duration_ms)
        if event.status == "ok" and (tool_errors or refused):
            # The run went on (tool failures are data the model sees), but the user must see it.
            said = [
                f"{_plural(tool_errors, 'tool call')} failed" if tool_errors else "",
                f"{_plural(refused, 'tool call')} refused by the tool policy" if refused else "",
            ]
            but = " and ".join(part for part in said if part)
            self._print(f"✓ run ok in {took}, but {but}", "bold yellow")
        elif event.status == "ok":
            self._print(f"✓ run ok in {took}", "bold green")
        elif event.status == "interrupted":
            self._print(f"■ run interrupted after {took}", "bold yellow")
        elif event.status == "budget":
            self._print(budget_line(took, event.exit_code, event.error), "bold yellow")
        else:
            self._print(
                f"✗ run failed after {took} (exit {event.exit_code}): {event.error}", "bold red"
            )
