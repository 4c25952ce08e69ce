"""`function` conditions: a Python function `f(text) -> bool` from `functions/edge/`.

`true` and `false` are built in (ChatDev's default condition is the function `true`). Any other
name must be defined in the edge folder: `validate` finds it by reading the source, and a run
imports its module before the first node starts. ChatDev treats a missing function as `true`;
devall reports it when the file is loaded.
"""

from __future__ import annotations

from typing import Any

from devall_cli.config.function_dirs import CONDITIONS
from devall_cli.config.model import ConditionConfig, FunctionCondition
from devall_cli.config.schema import Checker, KeySpec, check_keys, opt_str
from devall_cli.config.yaml_source import KeyPath
from devall_cli.edges.base import CONDITION_TYPES, Condition, ConditionType, EdgeEnv
from devall_cli.edges.user_functions import attribute, find_edge_function

KEYS = KeySpec(known=frozenset({"name"}))
BUILT_IN: dict[str, Condition] = {"true": lambda text: True, "false": lambda text: False}


def parse_function_condition(
    ck: Checker, config: dict[str, Any], path: KeyPath
) -> FunctionCondition | None:
    """`name`: `true`, `false`, or a function of `functions/edge/`."""
    check_keys(ck, config, path, KEYS)
    name = opt_str(ck, config, "name", path, required=True)
    if name is None:
        return None
    return named_condition(ck, name, (*path, "name"))


def named_condition(ck: Checker, name: str, path: KeyPath) -> FunctionCondition | None:
    """The condition a function name gives (`condition: is_done` or `config: {name: ...}`)."""
    name = name.strip()
    if name.lower() in BUILT_IN:
        return FunctionCondition(name.lower())
    file = find_edge_function(
        ck, CONDITIONS, name, path, what="edge condition", arguments=("the message text",)
    )
    return None if file is None else FunctionCondition(name, file)


def condition_from_text(ck: Checker, text: str, path: KeyPath) -> ConditionConfig | None:
    """ChatDev's short form `condition: <function name>` (`'true'` included)."""
    settings = named_condition(ck, text, path)
    return None if settings is None else ConditionConfig("function", settings)


def build_function_condition(settings: FunctionCondition, env: EdgeEnv) -> Condition:
    """The built-in or user function; its result is read as a boolean."""
    built_in = BUILT_IN.get(settings.name)
    if built_in is not None:
        return built_in
    function = env.function(attribute(settings.name), settings.file)
    return lambda text: bool(function(text))


FUNCTION = CONDITION_TYPES.register(
    ConditionType(
        "function",
        "calls a Python function of functions/edge/ (built in: true, false)",
        KEYS,
        parse_function_condition,
        build_function_condition,
        lambda settings: settings.name,
    )
)
