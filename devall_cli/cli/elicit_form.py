"""The terminal form for a server's elicitation requests (`elicitation: prompt`).

The form is built from the requested schema: one question per field, its title, description
and whether it is required; enums (`enum`, `oneOf` with `const`, `enumNames`) as numbered
choices, arrays of enums as several choices, booleans as y/n; the default shown in brackets
and kept when Enter is pressed. Every answer is checked against its field's schema (types,
ranges, lengths, formats) and asked again until it fits. `:decline` or `:cancel` at any field
refuses, Ctrl-D cancels; Ctrl-C cancels the run, as everywhere. A URL request shows the URL
and asks whether to accept. Lines are read through the human prompt's terminal reader, one
question at a time on the terminal.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rich.panel import Panel
from rich.text import Text

from devall_cli.cli.human_prompt import TerminalPrompt
from devall_cli.text import visible
from devall_cli.tools.base import ElicitationAnswer, ElicitationRequest

HINT = "Enter keeps the value in [brackets]; :decline or :cancel refuses (Ctrl-D cancels)."
_YES = ("y", "yes", "true", "1")
_NO = ("n", "no", "false", "0")


class Refused(Exception):
    """The operator declined or cancelled (`action`)."""

    def __init__(self, action: str) -> None:
        super().__init__(action)
        self.action = action


@dataclass(frozen=True)
class Choice:
    """One allowed value of an enum field and how it is shown."""

    value: Any
    title: str


def choices_of(spec: Mapping[str, Any]) -> list[Choice]:
    """The choices of an enum field (or of the items of an array field)."""
    if isinstance(spec.get("enum"), list):
        names = spec.get("enumNames")
        titles = names if isinstance(names, list) and len(names) == len(spec["enum"]) else None
        return [
            Choice(value, str(titles[i]) if titles else str(value))
            for i, value in enumerate(spec["enum"])
        ]
    for key in ("oneOf", "anyOf"):
        options = spec.get(key)
        if isinstance(options, list) and all(
            isinstance(o, Mapping) and "const" in o for o in options
        ):
            return [Choice(o["const"], str(o.get("title", o["const"]))) for o in options]
    return []


class TerminalForm:
    """Asks the operator on the terminal; the Elicitor of `devall run` and `tools call`."""

    channel = "terminal"

    def __init__(self, prompt: TerminalPrompt) -> None:
        self.prompt = prompt
        self.console = prompt.console

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        """Show the request, ask each field, and answer accept, decline or cancel."""
        async with self.prompt.lock:
            with self.prompt.paused():
                self.console.print(self._panel(request))
                self.console.print(Text(HINT, style="dim"))
                try:
                    if request.mode == "url":
                        return await self._url(request)
                    return ElicitationAnswer("accept", await self._form(request))
                except Refused as refused:
                    return ElicitationAnswer(refused.action)

    def _panel(self, request: ElicitationRequest) -> Panel:
        where = f" (node {request.node_id}, tool {request.tool})" if request.node_id else ""
        body = self._text(request.message or "(no message)", "bold")
        if request.url:
            body.append("\n")
            body.append_text(self._text(f"URL: {request.url}", ""))
        title = self._text(f"server {request.server_id} asks{where}", "bold yellow")
        return Panel(body, title=title, title_align="left", border_style="yellow")

    def _text(self, text: str, style: str) -> Text:
        return Text(visible(self.prompt.redactor.text(text), multiline=True), style=style)

    async def _url(self, request: ElicitationRequest) -> ElicitationAnswer:
        while True:
            answer = (await self._ask("Open this URL and accept? [y/N]")).lower()
            if answer in _YES:
                return ElicitationAnswer("accept")
            if answer in ("", *_NO):
                return ElicitationAnswer("decline")
            self._problem("answer y or n")

    async def _form(self, request: ElicitationRequest) -> dict[str, Any]:
        schema = request.schema
        properties = schema.get("properties")
        required = set(schema.get("required") or ())
        content: dict[str, Any] = {}
        if not isinstance(properties, Mapping):
            return content
        for name, spec in properties.items():
            if isinstance(spec, Mapping):
                value = await self._field(str(name), spec, str(name) in required)
                if value is not _SKIPPED:
                    content[str(name)] = value
        return content

    async def _field(self, name: str, spec: Mapping[str, Any], required: bool) -> Any:
        """Ask one field until the answer fits its schema."""
        self._describe(name, spec, required)
        while True:
            raw = await self._ask(self._question(spec))
            if raw == "":
                if "default" in spec:
                    return spec["default"]
                if not required:
                    return _SKIPPED
                self._problem("this field is required")
                continue
            try:
                value = parse_answer(raw, spec)
            except ValueError as exc:
                self._problem(str(exc))
                continue
            problem = schema_problem(value, spec)
            if problem is None:
                return value
            self._problem(problem)

    def _describe(self, name: str, spec: Mapping[str, Any], required: bool) -> None:
        title = str(spec.get("title") or name)
        line = self._text(f"{title}{' *' if required else ''}", "bold")
        if spec.get("description"):
            line.append_text(self._text(f" — {spec['description']}", "dim"))
        self.console.print(line)
        options = choices_of(spec) or choices_of(spec.get("items") or {})
        for number, choice in enumerate(options, 1):
            self.console.print(self._text(f"  {number}. {choice.title}", ""))

    def _question(self, spec: Mapping[str, Any]) -> str:
        kind = spec.get("type")
        if kind == "boolean":
            what = "y/n"
        elif kind == "array":
            what = "numbers or values, separated by commas"
        elif choices_of(spec):
            what = "a number or a value"
        else:
            what = str(spec.get("format") or kind or "value")
        default = f" [{_shown(spec['default'])}]" if "default" in spec else ""
        return f"({what}){default}"

    async def _ask(self, question: str) -> str:
        self.console.print(self._text(f"{question} > ", "bold"), end="")
        self.console.file.flush()
        line, ended = await self.prompt.read_line("the elicitation form")
        if ended:
            self.console.print()
            raise Refused("cancel")
        answer = line.strip()
        if answer in (":decline", ":cancel"):
            raise Refused(answer[1:])
        return answer

    def _problem(self, text: str) -> None:
        self.console.print(self._text(f"  ✗ {text}", "red"))


_SKIPPED = object()


def parse_answer(raw: str, spec: Mapping[str, Any]) -> Any:
    """The typed value of an answer: a choice by number or value, a number, a boolean, ..."""
    kind = spec.get("type")
    if kind == "array":
        items = spec.get("items")
        item_spec: Mapping[str, Any] = items if isinstance(items, Mapping) else {}
        return [_choose(part.strip(), item_spec) for part in raw.split(",") if part.strip()]
    return _choose(raw, spec)


def _choose(raw: str, spec: Mapping[str, Any]) -> Any:
    options = choices_of(spec)
    if options:
        if raw.isdigit() and 1 <= int(raw) <= len(options):
            return options[int(raw) - 1].value
        for choice in options:
            if raw in (str(choice.value), choice.title):
                return choice.value
        raise ValueError(f"choose one of 1-{len(options)}")
    kind = spec.get("type")
    if kind == "boolean":
        if raw.lower() in _YES:
            return True
        if raw.lower() in _NO:
            return False
        raise ValueError("answer y or n")
    if kind == "integer":
        try:
            return int(raw)
        except ValueError:
            raise ValueError("a whole number is needed") from None
    if kind == "number":
        try:
            number = float(raw)
        except ValueError:
            raise ValueError("a number is needed") from None
        return int(number) if number.is_integer() and "." not in raw else number
    return raw


def schema_problem(value: Any, spec: Mapping[str, Any]) -> str | None:
    """Why `value` does not fit the field's schema, or None."""
    from jsonschema import FormatChecker
    from jsonschema.validators import validator_for

    checker = validator_for(spec)(dict(spec), format_checker=FormatChecker())
    errors = sorted(checker.iter_errors(value), key=lambda e: e.path)
    return errors[0].message if errors else None


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
