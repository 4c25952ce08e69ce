"""Who decides a tool call that the tool policy leaves to a person (verdict `ask`).

In order: the answers file's `tool_approvals` (the first key that matches the call decides; a
list is used up one answer per call, then the next key or the terminal decides), then the
operator on the terminal when standard input and standard error are one, else nobody: the call
is refused and the refusal says why. "always" approves the tool for the rest of the run in that
node without asking again. One question at a time: parallel calls wait for the terminal in turn,
and share it with human nodes' questions when given the same TerminalPrompt.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Mapping
from typing import Any

from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from devall_cli.cli.human_prompt import TerminalPrompt
from devall_cli.nodes.human_input import Answers, ToolApproval
from devall_cli.text import visible
from devall_cli.tools.policy import ApprovalAnswer, ApprovalRequest, Approver, ToolRule, parse_rule
from devall_cli.trace.console import ConsoleSink

QUESTION = "Allow this call? [y]es / [n]o / [a]lways for this tool: "
AGAIN = "Answer y (yes), n (no) or a (always for this tool); Ctrl-D answers no."
WORDS = {"y": "yes", "yes": "yes", "n": "no", "no": "no", "a": "always", "always": "always"}
VALUE_CHARS = 400  # a longer argument value is cut in the question (the trace keeps it whole)
ARGUMENT_LINES = 40  # the most lines of arguments the question shows


def approver_for(
    answers: Answers | None, console: ConsoleSink, *, terminal: TerminalPrompt | None = None
) -> Approver:
    """The run's approver: `--answers`' tool_approvals, then the terminal (`terminal`, else one
    made when stdin and stderr are a terminal), else the base refusal."""
    if terminal is None and sys.stdin.isatty() and sys.stderr.isatty():
        terminal = TerminalPrompt(
            console.console, console.redactor, fd=sys.stdin.fileno(), pause=console.paused
        )
    scripted = ScriptedApprovals(answers) if answers is not None and answers.approvals else None
    return ChainApprover(scripted, TerminalApprovals(terminal) if terminal else None)


class ChainApprover(Approver):
    """The answers file first, then the terminal, then the base class's refusal. The tool
    manager's policy gate asks it about one call at a time and remembers "always" itself."""

    def __init__(
        self, scripted: ScriptedApprovals | None, terminal: TerminalApprovals | None
    ) -> None:
        self.scripted = scripted
        self.terminal = terminal

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        """The first decision the chain reaches (never raises for a missing person)."""
        answer = self.scripted.answer(request) if self.scripted is not None else None
        if answer is None and self.terminal is not None:
            async with self.terminal.lock:  # shared with human nodes' questions
                answer = await self.terminal.ask(request)
        if answer is None:
            answer = await super().approve(request)
            spent = self.scripted.spent(request) if self.scripted is not None else ""
            if spent:
                answer = ApprovalAnswer(False, answer.by, note=f"no terminal to ask and {spent}")
        return answer


class ScriptedApprovals:
    """The answers file's `tool_approvals`, tried in file order."""

    def __init__(self, answers: Answers) -> None:
        self.file = answers.file
        self._entries: list[tuple[ToolApproval, ToolRule]] = [
            (entry, parse_rule(entry.key)) for entry in answers.approvals
        ]
        self._used: dict[int, int] = {}  # entry index -> answers of its list used

    def answer(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        """The decision of the first matching key with an answer left, or None."""
        for index, (entry, rule) in enumerate(self._entries):
            if not rule.matches(request.tool, request.server_id, None):
                continue
            if entry.repeat:
                word = entry.answers[0]
            else:
                used = self._used.get(index, 0)
                if used >= len(entry.answers):
                    continue  # used up: the next key, or the terminal, decides
                self._used[index] = used + 1
                word = entry.answers[used]
            note = f"{entry.where} says {word} for '{entry.key}'"
            return ApprovalAnswer(word != "no", "answers", remember=word == "always", note=note)
        return None

    def spent(self, request: ApprovalRequest) -> str:
        """`the answers for 'write_*' in FILE are used up`, when a matching key had a list."""
        keys = [
            entry.key
            for entry, rule in self._entries
            if not entry.repeat and rule.matches(request.tool, request.server_id, None)
        ]
        if not keys:
            return ""
        names = ", ".join(f"'{key}'" for key in keys)
        return f"the answers for {names} in {self.file} are used up"


class TerminalApprovals:
    """Asks the operator on the terminal, one call at a time (the caller holds `lock`)."""

    def __init__(self, prompt: TerminalPrompt) -> None:
        self.prompt = prompt
        self.console = prompt.console
        self.redactor = prompt.redactor

    @property
    def lock(self) -> asyncio.Lock:
        """The terminal's lock: one question at a time, approvals and human nodes alike."""
        return self.prompt.lock

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        """Show the call, then read y / n / a until one of them (Ctrl-D answers no)."""
        with self.prompt.paused():
            self.console.print(self._question(request), soft_wrap=False)
            while True:
                self.console.print(Text(QUESTION, style="bold"), end="")
                self.console.file.flush()
                try:
                    line, ended = await self.prompt.read_line(f"the approval of {request.tool}")
                except asyncio.CancelledError:
                    self.console.print()  # Ctrl-C: the trace goes on below the prompt line
                    raise
                if ended:
                    self.console.print()
                    note = "the operator gave no answer (end of input)"
                    return ApprovalAnswer(False, "terminal", note=note)
                word = WORDS.get(line.strip().lower())
                if word is not None:
                    return ApprovalAnswer(word != "no", "terminal", remember=word == "always")
                self.console.print(Text(AGAIN, style="yellow"))

    def _question(self, request: ApprovalRequest) -> Panel:
        facts = Table.grid(padding=(0, 2))
        facts.add_column(style="dim")
        facts.add_column()
        tool = request.tool
        if request.original_name and request.original_name != request.tool:
            tool += f" (on the server: {request.original_name})"
        server = " · ".join(p for p in (request.server_id, request.server) if p)
        for name, value in (
            ("tool", tool),
            ("server", server),
            ("asked because", request.verdict.reason()),
        ):
            facts.add_row(name, self._text(value, "bold" if name == "tool" else ""))
        arguments = self._text(shown_arguments(request.arguments), "", multiline=True)
        body = Group(facts, Text("arguments", style="dim"), arguments)
        title = self._text(f"tool approval · node '{request.node_id}'", "bold yellow")
        return Panel(body, title=title, title_align="left", border_style="yellow")

    def _text(self, text: str, style: str, *, multiline: bool = False) -> Text:
        return Text(visible(self.redactor.text(text), multiline=multiline), style=style)


def shown_arguments(arguments: Any) -> str:
    """The arguments as indented JSON, long values cut, at most ARGUMENT_LINES lines."""
    text = json.dumps(_cut(arguments), indent=2, ensure_ascii=False, default=str)
    lines = text.splitlines()
    if len(lines) > ARGUMENT_LINES:
        hidden = len(lines) - ARGUMENT_LINES
        lines = [*lines[:ARGUMENT_LINES], f"… ({hidden} more lines)"]
    return "\n".join(lines)


def _cut(value: Any) -> Any:
    if isinstance(value, str) and len(value) > VALUE_CHARS:
        return f"{value[:VALUE_CHARS]}… ({len(value) - VALUE_CHARS} more characters)"
    if isinstance(value, Mapping):
        return {str(key): _cut(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_cut(item) for item in value]
    return value
