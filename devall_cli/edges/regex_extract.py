"""`regex_extract` processors: the payload becomes what a regular expression matched in it.

Keys and defaults are ChatDev's: `pattern` (required), `group` (a number or a name; the whole
match by default), `case_sensitive` (true), `multiline`, `dotall`, `multiple` (false: only the
first match; true: every match, one per line), `template` (`{match}` stands for the value),
`on_no_match` (`pass` leaves the payload as it is, `default` replaces it by `default_value`,
`drop` delivers nothing and does not trigger the target). Unlike ChatDev, a `group` the pattern
does not have is an error when the file is loaded, not a silent pass-through at run time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from devall_cli.config.schema import (
    Checker,
    KeySpec,
    check_keys,
    describe,
    opt_bool,
    opt_str,
    regex_group,
)
from devall_cli.config.yaml_source import KeyPath
from devall_cli.edges.base import PROCESSOR_TYPES, EdgeEnv, Processor, ProcessorType
from devall_cli.messages import Message

NO_MATCH = ("pass", "default", "drop")
KEYS = KeySpec(
    known=frozenset(
        {
            "pattern",
            "group",
            "case_sensitive",
            "multiline",
            "dotall",
            "multiple",
            "template",
            "on_no_match",
            "default_value",
        }
    )
)


@dataclass(frozen=True)
class RegexExtract:
    """`process: {type: regex_extract, config: {...}}`."""

    pattern: str
    group: int | str | None = None
    case_sensitive: bool = True
    multiline: bool = False
    dotall: bool = False
    multiple: bool = False
    template: str | None = None
    on_no_match: str = "pass"
    default_value: str | None = None

    @property
    def flags(self) -> int:
        """The `re` flags the settings ask for."""
        flags = 0 if self.case_sensitive else re.IGNORECASE
        if self.multiline:
            flags |= re.MULTILINE
        if self.dotall:
            flags |= re.DOTALL
        return flags


def parse_regex_extract(ck: Checker, config: dict[str, Any], path: KeyPath) -> RegexExtract | None:
    """Every key checked; the pattern compiled with its flags and the group looked up in it."""
    check_keys(ck, config, path, KEYS)
    errors = ck.error_count
    pattern = opt_str(ck, config, "pattern", path, required=True)
    group = regex_group(ck, config.get("group"), (*path, "group"))
    on_no_match = opt_str(ck, config, "on_no_match", path) or "pass"
    if on_no_match not in NO_MATCH:
        ck.error(
            (*path, "on_no_match"),
            f"on_no_match must be one of {', '.join(NO_MATCH)}, got {describe(on_no_match)}",
        )
    settings = RegexExtract(
        pattern=pattern or "",
        group=group,
        case_sensitive=opt_bool(ck, config, "case_sensitive", path, True),
        multiline=opt_bool(ck, config, "multiline", path, False),
        dotall=opt_bool(ck, config, "dotall", path, False),
        multiple=opt_bool(ck, config, "multiple", path, False),
        template=opt_str(ck, config, "template", path) or None,
        on_no_match=on_no_match,
        default_value=opt_str(ck, config, "default_value", path),
    )
    if pattern is not None:
        _check_pattern(ck, settings, path)
    return None if ck.error_count > errors else settings


def _check_pattern(ck: Checker, settings: RegexExtract, path: KeyPath) -> None:
    try:
        compiled = re.compile(settings.pattern, settings.flags)
    except (re.error, RecursionError, OverflowError) as exc:
        ck.error((*path, "pattern"), f"pattern is not a valid regular expression: {exc}")
        return
    group = settings.group
    if isinstance(group, int) and group > compiled.groups:
        count = compiled.groups
        ck.error(
            (*path, "group"),
            f"group {group} does not exist: the pattern has {count} group{'s' * (count != 1)}",
        )
    elif isinstance(group, str) and group not in compiled.groupindex:
        names = ", ".join(compiled.groupindex) or "none"
        ck.error((*path, "group"), f"the pattern has no group named '{group}' (named: {names})")


def build_regex_extract(settings: RegexExtract, env: EdgeEnv) -> Processor:
    """The processor: matches → the new payload; no match → as `on_no_match` says."""
    compiled = re.compile(settings.pattern, settings.flags)

    def process(message: Message) -> Message | None:
        values = _values(compiled, message.text, settings)
        if values:
            return message.but(text="\n".join(values) if settings.multiple else values[0])
        if settings.on_no_match == "drop":
            return None
        if settings.on_no_match == "default":
            return message.but(text=settings.default_value or "")
        return message

    return process


def _values(compiled: re.Pattern[str], text: str, settings: RegexExtract) -> list[str]:
    """The extracted value of each match (the first only unless `multiple`)."""
    values: list[str] = []
    for match in compiled.finditer(text):
        value = match.group(0 if settings.group is None else settings.group)
        if value is None:  # the group did not take part in this match
            continue
        if settings.template:
            value = settings.template.replace("{match}", value)
        values.append(value)
        if not settings.multiple:
            break
    return values


REGEX_EXTRACT = PROCESSOR_TYPES.register(
    ProcessorType(
        "regex_extract",
        "replaces the payload by what a regular expression matched in it",
        KEYS,
        parse_regex_extract,
        build_regex_extract,
        lambda settings: f"regex({settings.pattern})",
    )
)
