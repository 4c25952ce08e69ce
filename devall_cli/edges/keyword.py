"""`keyword` conditions: `none` words veto, `any` words or `regex` matches pass."""

from __future__ import annotations

import re
from typing import Any

from devall_cli.config.model import KeywordCondition
from devall_cli.config.schema import (
    Checker,
    KeySpec,
    check_keys,
    check_regex,
    opt_bool,
    opt_str_list,
)
from devall_cli.config.yaml_source import KeyPath
from devall_cli.edges.base import CONDITION_TYPES, Condition, ConditionType, EdgeEnv

KEYS = KeySpec(
    known=frozenset({"any", "none", "regex", "case_sensitive"}), ignored=frozenset({"default"})
)


def parse_keyword(ck: Checker, config: dict[str, Any], path: KeyPath) -> KeywordCondition | None:
    """`any`, `none`, `regex` (a word or a list each; at least one) and `case_sensitive`."""
    check_keys(ck, config, path, KEYS)
    errors = ck.error_count
    words = {key: _words(ck, config, key, path) for key in ("any", "none", "regex")}
    case_sensitive = opt_bool(ck, config, "case_sensitive", path, True)
    flags = 0 if case_sensitive else re.IGNORECASE
    raw_regex = config.get("regex")
    for index, pattern in enumerate(words["regex"]):
        where = (*path, "regex", index) if isinstance(raw_regex, list) else (*path, "regex")
        check_regex(ck, pattern, where, "regex", flags)
    if not any(words.values()) and ck.error_count == errors:
        ck.error(path, "a keyword condition needs at least one of any, none or regex")
    if ck.error_count > errors:
        return None
    return KeywordCondition(
        any=words["any"], none=words["none"], regex=words["regex"], case_sensitive=case_sensitive
    )


def _words(ck: Checker, config: dict[str, Any], key: str, path: KeyPath) -> tuple[str, ...]:
    value = config.get(key)
    if isinstance(value, str):
        return (value,)
    return opt_str_list(ck, config, key, path)


def build_keyword(settings: KeywordCondition, env: EdgeEnv) -> Condition:
    """A `none` hit → false; an `any` hit or `regex` match → true; else false if `any` or
    `regex` were given, true if only `none` was."""
    sensitive = settings.case_sensitive
    flags = 0 if sensitive else re.IGNORECASE
    patterns = [re.compile(pattern, flags) for pattern in settings.regex]
    none = [w if sensitive else w.casefold() for w in settings.none if w]
    any_ = [w if sensitive else w.casefold() for w in settings.any if w]
    default = not (settings.any or settings.regex)

    def holds(text: str) -> bool:
        haystack = text if sensitive else text.casefold()
        if any(word in haystack for word in none):
            return False
        if any(word in haystack for word in any_):
            return True
        if any(pattern.search(text) for pattern in patterns):
            return True
        return default

    return holds


def _label(settings: KeywordCondition) -> str:
    parts = [f"{key}={list(getattr(settings, key))}" for key in ("any", "none", "regex")]
    return "keyword(" + ", ".join(p for p in parts if not p.endswith("=[]")) + ")"


KEYWORD = CONDITION_TYPES.register(
    ConditionType(
        "keyword",
        "passes on words or regular expressions found in the message",
        KEYS,
        parse_keyword,
        build_keyword,
        _label,
    )
)
