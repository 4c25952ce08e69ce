"""`${NAME}` placeholders: parsing, lookup order, `vars` recursion with cycle detection, secrets.

Lookup order for NAME: `--var` flags → `vars` (itself resolved recursively) → the values a
subgraph file inherits from the files that include it → process environment → `.env` values.
A `vars` entry that refers to its own name (`API_KEY: ${API_KEY}`) skips `vars` for that name,
so it reads the inherited value or the environment instead of being a cycle.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from devall_cli.config.expansion import ExpansionBudget
from devall_cli.config.yaml_source import KeyPath
from devall_cli.errors import ConfigError
from devall_cli.redaction import is_secret_name
from devall_cli.text import clean_text

_NAME = re.compile(r"[A-Za-z0-9_]+")
_MAX_DEPTH = 50  # nested defaults or chains of vars deeper than this are surely a mistake
# Collections plus placeholders being resolved inside each other, across every chain of vars
# and defaults: bounds the resolver's recursion far below Python's limit.
_MAX_LEVELS = 150
_MALFORMED = (
    "'${' does not start a placeholder ${NAME} (NAME: letters, digits, underscore); "
    "it is kept as text (write '$${' for a literal '${')"
)


class TextValue(str):
    """Text that came from `--var`, the environment, `.env` or a `:-default`.

    Such text may stand for a number or a boolean where the workflow expects one
    (`timeout: ${TIMEOUT:-10}`); text written in the YAML itself may not.
    """


class PlaceholderError(ConfigError):
    """A placeholder could not be resolved (unknown name, cycle, nesting too deep)."""


class _ReportedElsewhere(ConfigError):
    """A `vars` entry this value refers to failed; its error is already recorded."""


class _Unresolved:
    """Stands in for a value whose placeholder failed, so later checks stay quiet about it."""

    _instance: _Unresolved | None = None

    def __new__(cls) -> _Unresolved:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNRESOLVED"


UNRESOLVED = _Unresolved()


@dataclass(frozen=True)
class PlaceholderRef:
    """One `${NAME}` or `${NAME:-default}` in a string."""

    name: str
    default: str | None = None


Segment = str | PlaceholderRef


def value_text(value: Any) -> str:
    """How a resolved value reads inside a longer string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def parse_template(text: str) -> tuple[list[Segment], int]:
    """Split `text` into literal text and placeholders; also count malformed `${`."""
    segments: list[Segment] = []
    literal: list[str] = []
    malformed = 0
    closing = _closing_braces(text)
    i, n = 0, len(text)
    while i < n:
        if text.startswith("$${", i):
            literal.append("${")
            i += 3
            continue
        if text.startswith("${", i):
            ref, end = _parse_ref(text, i, closing)
            if ref is not None:
                if literal:
                    segments.append("".join(literal))
                    literal = []
                segments.append(ref)
                i = end
                continue
            malformed += 1
            literal.append("${")
            i += 2
            continue
        literal.append(text[i])
        i += 1
    if literal:
        segments.append("".join(literal))
    return segments, malformed


def _parse_ref(text: str, start: int, closing: dict[int, int]) -> tuple[PlaceholderRef | None, int]:
    match = _NAME.match(text, start + 2)
    if match is None:
        return None, start
    end = match.end()
    if text.startswith("}", end):
        return PlaceholderRef(match.group()), end + 1
    if text.startswith(":-", end) and start in closing:
        close = closing[start]
        return PlaceholderRef(match.group(), text[end + 2 : close]), close + 1
    return None, start


def _closing_braces(text: str) -> dict[int, int]:
    """Index of each `${` → index of the `}` that closes it; `$${` is an escape.

    One pass for the whole string: searching for each default's end separately would read
    the rest of the string once per unclosed `${NAME:-`, which a hostile file repeats by
    the thousand.
    """
    closing: dict[int, int] = {}
    opened: list[int] = []
    k, n = 0, len(text)
    while k < n:
        if text.startswith("$${", k):
            k += 3
        elif text.startswith("${", k):
            opened.append(k)
            k += 2
        else:
            if text[k] == "}" and opened:
                closing[opened.pop()] = k
            k += 1
    return closing


def _whole_ref(segments: list[Segment]) -> PlaceholderRef | None:
    """The placeholder if the segments are exactly one, give or take surrounding spaces."""
    core = list(segments)
    while core and isinstance(core[0], str) and not core[0].strip():
        core.pop(0)
    while core and isinstance(core[-1], str) and not core[-1].strip():
        core.pop()
    if len(core) == 1 and isinstance(core[0], PlaceholderRef):
        return core[0]
    return None


class PlaceholderResolver:
    """Resolves placeholders against `--var`, `vars`, the environment and `.env` values."""

    def __init__(
        self,
        *,
        vars_block: Mapping[str, Any] | None = None,
        cli_vars: Mapping[str, str] | None = None,
        environ: Mapping[str, str] | None = None,
        dotenv: Mapping[str, str] | None = None,
        inherited: Mapping[str, Any] | None = None,
        budget: ExpansionBudget | None = None,
        deferred: Callable[[KeyPath], bool] | None = None,
    ) -> None:
        self._vars = dict(vars_block or {})
        self._inherited = dict(inherited or {})  # resolved already, by the including file
        self._cli = dict(cli_vars or {})
        self._environ = dict(environ or {})
        self._dotenv = dict(dotenv or {})
        self._resolved: dict[str, Any] = {}
        self._failed: set[str] = set()
        self._stack: list[str] = []
        self._levels = 0  # collections and placeholders being resolved inside each other
        self._walk_depth = 0  # collections the value being resolved sits in
        # shared by the files of one load: subgraph files expand within the workflow's budget
        self._budget = budget if budget is not None else ExpansionBudget()
        self._budget_spent = False  # reported once; later placeholders fail silently
        self.secrets: set[str] = set()
        # (path, message, severity) of every problem found while walking trees
        self.issues: list[tuple[KeyPath, str, str]] = []
        # Paths whose unresolved placeholders are not errors (`tools list` needs no model
        # settings); a `vars` entry's failure is reported once a needed path refers to it.
        self._deferred = deferred
        self._held: list[tuple[KeyPath, str, str]] = []

    # --- public ------------------------------------------------------------------------

    def resolve_text(self, text: str) -> Any:
        """Resolve one string; a whole-value placeholder keeps the type of what it refers to."""
        return self._resolve_template(text, 0)

    def resolve_vars(self) -> dict[str, Any]:
        """Resolve every `vars` entry (`--var` flags replace entries of the same name)."""
        result: dict[str, Any] = {}
        for name in self._vars:
            if name in self._cli:
                continue
            try:
                result[name] = self._resolve_var(name)
            except _ReportedElsewhere:
                result[name] = UNRESOLVED
        for name, value in self._cli.items():
            result[name] = TextValue(value)
        for name, value in result.items():
            if is_secret_name(name) and value is not UNRESOLVED:
                self._add_secret(value)
        return result

    def resolve_tree(self, data: Any, path: KeyPath) -> Any:
        """Resolve every string in `data`; failures are recorded and become UNRESOLVED."""
        result, _ok = self._walk(data, path)
        return result

    # --- trees and vars ------------------------------------------------------------------

    def _walk(self, data: Any, path: KeyPath) -> tuple[Any, bool]:
        if not isinstance(data, (dict, list)):
            return self._walk_text(data, path) if isinstance(data, str) else (data, True)
        self._levels += 1
        self._walk_depth += 1
        try:
            return self._walk_collection(data, path)
        finally:
            self._levels -= 1
            self._walk_depth -= 1

    def _walk_collection(self, data: Any, path: KeyPath) -> tuple[Any, bool]:
        if isinstance(data, dict):
            out: dict[str, Any] = {}
            ok = True
            for key, value in data.items():
                out[key], child_ok = self._walk(value, (*path, key))
                ok = ok and child_ok
            return out, ok
        if isinstance(data, list):
            items: list[Any] = []
            ok = True
            for index, value in enumerate(data):
                item, child_ok = self._walk(value, (*path, index))
                items.append(item)
                ok = ok and child_ok
            return items, ok
        return data, True

    def _walk_text(self, text: str, path: KeyPath) -> tuple[Any, bool]:
        if "${" not in text:
            return text, True
        if parse_template(text)[1]:
            self.issues.append((path, _MALFORMED, "warning"))
        deferred = self._deferred is not None and self._deferred(path)
        try:
            return self._resolve_template(text, 0), True
        except _ReportedElsewhere:
            if not deferred:  # a needed value refers to a `vars` entry that failed
                self.issues += self._held
                self._held = []
            return UNRESOLVED, False
        except PlaceholderError as exc:
            (self._held if deferred else self.issues).append((path, exc.message, "error"))
            return UNRESOLVED, False

    def _resolve_var(self, name: str) -> Any:
        if name in self._resolved:
            return self._resolved[name]
        if name in self._failed:
            raise _ReportedElsewhere(name)
        if name in self._stack:
            cycle = [*self._stack[self._stack.index(name) :], name]
            raise PlaceholderError(f"placeholder cycle in vars: {' -> '.join(cycle)}")
        if len(self._stack) >= _MAX_DEPTH:
            raise PlaceholderError(f"vars refer to each other more than {_MAX_DEPTH} levels deep")
        self._stack.append(name)
        try:
            value, ok = self._walk(self._vars[name], ("vars", name))
        finally:
            self._stack.pop()
        if not ok:
            self._failed.add(name)
            raise _ReportedElsewhere(name)
        self._resolved[name] = value
        return value

    # --- strings -------------------------------------------------------------------------

    def _resolve_template(self, text: str, depth: int) -> Any:
        if "${" not in text:
            return text
        if depth > _MAX_DEPTH:
            raise PlaceholderError("placeholder defaults are nested too deeply")
        self._levels += 1
        try:
            if self._levels > _MAX_LEVELS:
                raise PlaceholderError(
                    f"placeholders and values nest more than {_MAX_LEVELS} levels deep"
                )
            segments, _malformed = parse_template(text)
            whole = _whole_ref(segments)
            if whole is not None:
                return self._resolve_ref(whole, depth)
            parts = [
                seg if isinstance(seg, str) else value_text(self._resolve_ref(seg, depth))
                for seg in segments
            ]
            self._charge(self._budget.charge_text(sum(len(part) for part in parts)))
            return "".join(parts)
        finally:
            self._levels -= 1

    def _charge(self, refusal: str | None) -> None:
        """Stop at the first substitution beyond the expansion budget (reported once)."""
        if refusal is None:
            return
        if self._budget_spent:
            raise _ReportedElsewhere(refusal)
        self._budget_spent = True
        raise PlaceholderError(f"{refusal}; refused before expanding them")

    def _resolve_ref(self, ref: PlaceholderRef, depth: int) -> Any:
        found, value = self._lookup(ref.name)
        if ref.default is not None and (not found or value is None or value == ""):
            value = self._resolve_template(ref.default, depth + 1)
            if type(value) is str:
                value = TextValue(value)
            found = True
        if not found:
            raise PlaceholderError(
                f"unresolved placeholder ${{{ref.name}}}: set it in vars, with "
                f"--var {ref.name}=VALUE, in the environment, or in a .env file "
                f"(or give a default: ${{{ref.name}:-default}})"
            )
        # Charged before anything walks or prints the value: it may be shared many times over.
        self._charge(self._budget.charge_value(value, self._walk_depth))
        if is_secret_name(ref.name):
            self._add_secret(value)
        return value

    def _lookup(self, name: str) -> tuple[bool, Any]:
        # argv and the environment carry bytes that are not UTF-8 as lone surrogates.
        if name in self._cli:
            return True, TextValue(clean_text(self._cli[name]))
        current = self._stack[-1] if self._stack else None
        if name in self._vars and name != current:
            return True, self._resolve_var(name)
        if name in self._inherited:
            return True, self._inherited[name]
        if name in self._environ:
            return True, TextValue(clean_text(self._environ[name]))
        if name in self._dotenv:
            return True, TextValue(clean_text(self._dotenv[name]))
        return False, None

    def _add_secret(self, value: Any) -> None:
        if isinstance(value, dict):
            for item in value.values():
                self._add_secret(item)
            return
        if isinstance(value, list):
            for item in value:
                self._add_secret(item)
            return
        self.secrets.add(value_text(value))  # the Redactor leaves out values too short to mask
