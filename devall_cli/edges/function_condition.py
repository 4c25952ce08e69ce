"""`function` conditions: a Python function `f(text) -> bool` from `functions/edge/`.

`true` and `false` are built in (ChatDev's default condition is the function `true`).
"""

from __future__ import annotations

from typing import Any

from devall_cli.config.model import FunctionCondition
from devall_cli.config.schema import Checker, KeySpec, check_keys, opt_str
from devall_cli.config.yaml_source import KeyPath
from devall_cli.edges.base import CONDITION_TYPES, Condition, ConditionType, EdgeEnv
from devall_cli.errors import ConfigError

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
    return FunctionCondition(name=name.strip())


def build_function_condition(settings: FunctionCondition, env: EdgeEnv) -> Condition:
    """The built-in or user function; its result is read as a boolean."""
    built_in = BUILT_IN.get(settings.name)
    if built_in is not None:
        return built_in
    function = env.function("edge", settings.name)
    if function is None:
        raise ConfigError(f"edge condition function '{settings.name}' was not found")
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
