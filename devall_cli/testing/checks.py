"""The matchers expectations share: text (equals, contains, regex, JSON schema, JSON path) and tool
arguments (a subset, or patterns per argument). Each answers with a Verdict saying what it saw.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from devall_cli import json_limits
from devall_cli.testing.model import JsonPathConfig, JsonStep, TextConfig

SHOWN_CHARS = 2000  # of a text quoted as the actual value
_FENCED = re.compile(r"```(?:json)?\s*\n(.*?)\n\s*```", re.DOTALL)
_MISSING = object()


@dataclass(frozen=True)
class Verdict:
    """Whether a check held; the message says why not, `actual` is what was looked at."""

    passed: bool
    message: str = ""
    actual: Any = None


def shown_text(text: str) -> str:
    """A text as reports quote it (long ones cut, the cut said)."""
    if len(text) <= SHOWN_CHARS:
        return text
    return text[:SHOWN_CHARS] + f"... ({len(text) - SHOWN_CHARS} more characters)"


def check_text(config: TextConfig, text: str | None, what: str) -> Verdict:
    """Every check `config` sets, on `text` (`what` names it: "the final answer")."""
    if text is None:
        return Verdict(False, f"{what}: there is none", None)
    actual = shown_text(text)
    for failure in _text_failures(config, text, what):
        return Verdict(False, failure, actual)
    if config.json_schema is not None or config.json_path is not None:
        return _json_checks(config, text, what)  # its actual: the JSON, or the value at the path
    return Verdict(True, "", actual)


def _text_failures(config: TextConfig, text: str, what: str) -> list[str]:
    found: list[str] = []
    if config.equals is not None and text.strip() != config.equals.strip():
        found.append(f"{what} is not equal to {_quoted(config.equals)}")
    found += [f"{what} does not contain {_quoted(p)}" for p in config.contains if p not in text]
    found += [f"{what} contains {_quoted(p)}" for p in config.not_contains if p in text]
    if config.regex is not None and re.search(config.regex, text) is None:
        found.append(f"{what} does not match the regex {_quoted(config.regex)}")
    return found


def _json_checks(config: TextConfig, text: str, what: str) -> Verdict:
    value = json_of(text)
    if value is _MISSING:
        return Verdict(False, f"{what} is not JSON", shown_text(text))
    if config.json_schema is not None:
        problem = schema_problem(config.json_schema, value)
        if problem is not None:
            return Verdict(False, f"{what} does not match the JSON schema: {problem}", value)
    if config.json_path is not None:
        return check_json_path(config.json_path, value, what)
    return Verdict(True, "", value)


def json_of(text: str) -> Any:
    """The JSON value of a text: all of it, or the one fenced block (```json) it holds."""
    candidates = [text.strip(), *(m.group(1) for m in _FENCED.finditer(text))]
    for candidate in candidates:
        try:
            return json_limits.loads(candidate)
        except (ValueError, json_limits.JsonLimitError):
            continue
    return _MISSING


def schema_problem(schema: Mapping[str, Any], value: Any) -> str | None:
    """The first way `value` breaks `schema` (`at $.items[0]: 3 is not of type 'string'`)."""
    from jsonschema import validators

    validator = validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    first = errors[0]
    where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first.absolute_path)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"at {where}: {first.message}{more}"


def check_json_path(config: JsonPathConfig, value: Any, what: str) -> Verdict:
    """The value at `config.path` inside `value`, compared as the config asks."""
    found = value_at(value, config.steps)
    label = f"{what} at {config.path}"
    if found is _MISSING:
        if config.exists is False:
            return Verdict(True, "", None)
        return Verdict(False, f"{label}: there is no such value", None)
    if config.exists is False:
        return Verdict(False, f"{label} exists, expected none", found)
    if config.has_equals and not same_value(config.equals, found):
        expected = json.dumps(config.equals, ensure_ascii=False)
        return Verdict(False, f"{label} is {_json(found)}, expected {expected}", found)
    text = found if isinstance(found, str) else _json(found)
    if config.contains is not None and config.contains not in text:
        return Verdict(False, f"{label} does not contain {_quoted(config.contains)}", found)
    if config.regex is not None and re.search(config.regex, text) is None:
        return Verdict(False, f"{label} does not match the regex {_quoted(config.regex)}", found)
    return Verdict(True, "", found)


def value_at(value: Any, steps: tuple[JsonStep, ...]) -> Any:
    """The value the steps lead to, or the module's missing marker."""
    for step in steps:
        if isinstance(step, int):
            if not isinstance(value, list) or not -len(value) <= step < len(value):
                return _MISSING
        elif not isinstance(value, dict) or step not in value:
            return _MISSING
        value = value[step]
    return value


def same_value(expected: Any, actual: Any) -> bool:
    """JSON equality, where `true` is not `1` (Python's `==` says it is)."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, dict):
        return (
            isinstance(actual, dict)
            and expected.keys() == actual.keys()
            and all(same_value(v, actual[k]) for k, v in expected.items())
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(same_value(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return bool(expected == actual)


def args_match(expected: Any, actual: Any) -> bool:
    """Whether `actual` holds `expected`: mappings as subsets (at any depth), the rest equal."""
    if isinstance(expected, dict):
        return isinstance(actual, Mapping) and all(
            key in actual and args_match(value, actual[key]) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list | tuple)
            and len(expected) == len(actual)
            and all(args_match(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return same_value(expected, actual)


def args_match_patterns(patterns: Mapping[str, str], actual: Mapping[str, Any]) -> bool:
    """Whether each named argument is there and its text (JSON if not text) matches."""
    for name, pattern in patterns.items():
        if name not in actual:
            return False
        value = actual[name]
        text = value if isinstance(value, str) else _json(value)
        if re.search(pattern, text) is None:
            return False
    return True


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _quoted(text: str) -> str:
    return json.dumps(text if len(text) <= 200 else text[:200] + "...", ensure_ascii=False)
