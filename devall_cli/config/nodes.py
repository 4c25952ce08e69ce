"""Graph nodes: `agent`, `literal` and `passthrough` (SPEC.md §3)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from devall_cli.config.model import (
    RESERVED_PARAMS,
    AgentConfig,
    LiteralConfig,
    NodeConfig,
    NodeSettings,
    PassthroughConfig,
    ScriptedToolCall,
    ScriptedTurn,
    frozen_mapping,
)
from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import (
    Checker,
    KeySpec,
    check_keys,
    describe,
    get_mapping,
    is_http_url,
    opt_bool,
    opt_int,
    opt_number,
    opt_str,
    scalar_text,
    suggest,
)
from devall_cli.config.tooling_registry import parse_tooling
from devall_cli.config.yaml_source import KeyPath, format_path

PROVIDERS = ("openai", "scripted")
UNSUPPORTED_NODE_TYPES = (
    "human",
    "python",
    "python_runner",
    "subgraph",
    "loop_counter",
    "loop_timer",
)

_NODE_KEYS = KeySpec(
    known=frozenset({"id", "type", "config", "description"}),
    ignored=frozenset({"log_output", "context_window"}),
)
_AGENT_KEYS = KeySpec(
    known=frozenset(
        {"provider", "name", "base_url", "api_key", "role", "tooling", "params", "script"}
    ),
    ignored=frozenset({"input_mode"}),
    noted={"retry": "'retry' has no effect in devall (ignored); set params.retries instead"},
    unsupported={
        "memories": "agent memory",
        "memory": "agent memory",
        "thinking": "the thinking stage",
        "skills": "agent skills",
    },
)
_LITERAL_KEYS = KeySpec(known=frozenset({"content", "role"}))
_PASSTHROUGH_KEYS = KeySpec(known=frozenset({"only_last_message"}))
_TURN_KEYS = KeySpec(known=frozenset({"content", "tool_calls"}))
_CALL_KEYS = KeySpec(known=frozenset({"name", "arguments"}))

NodeParser = Callable[[Checker, dict[str, Any], KeyPath], NodeSettings | None]


def parse_node(ck: Checker, raw: Any, path: KeyPath) -> NodeConfig | None:
    """One node: `id`, `type`, `config`, `description`."""
    node = get_mapping(ck, raw, path, "a node")
    if node is None:
        return None
    check_keys(ck, node, path, _NODE_KEYS)
    node_id = opt_str(ck, node, "id", path, required=True)
    node_type = opt_str(ck, node, "type", path, required=True)
    description = opt_str(ck, node, "description", path)
    parser = _node_parser(ck, node_type, path) if node_type is not None else None
    if parser is None:
        return None
    config_path = (*path, "config")
    raw_config = node.get("config")
    if raw_config is None and node_type != "passthrough":
        if raw_config is None and "config" not in node:
            ck.error(config_path, f"config is required for a node of type '{node_type}'")
        elif raw_config is None:
            ck.error(config_path, "config must be a mapping, got nothing (null)", at_key=True)
        return None
    config = get_mapping(ck, raw_config or {}, config_path, "config")
    if config is None:
        return None
    settings = parser(ck, config, config_path)
    if node_id is None or node_type is None or settings is None:
        return None
    return NodeConfig(
        id=node_id,
        type=node_type,
        config=settings,
        description=description,
        path=format_path(path),
    )


def _node_parser(ck: Checker, node_type: str, path: KeyPath) -> NodeParser | None:
    parsers: dict[str, NodeParser] = {
        "agent": parse_agent,
        "literal": parse_literal,
        "passthrough": parse_passthrough,
    }
    if node_type in parsers:
        return parsers[node_type]
    here = (*path, "type")
    if node_type in UNSUPPORTED_NODE_TYPES:
        ck.error(
            here,
            f"node type '{node_type}' is not supported yet "
            "(supported: agent, literal, passthrough)",
        )
        return None
    message = f"unknown node type '{node_type}' (known types: agent, literal, passthrough)"
    guess = suggest(node_type, sorted(parsers))
    ck.error(here, f"{message}; did you mean '{guess}'?" if guess else message)
    return None


# --- agent ---------------------------------------------------------------------------------


def parse_agent(ck: Checker, config: dict[str, Any], path: KeyPath) -> AgentConfig | None:
    """An LLM agent: provider, model, prompt, tooling, request params, or an offline script."""
    check_keys(ck, config, path, _AGENT_KEYS)
    provider = _provider(ck, config, path)
    name = opt_str(ck, config, "name", path, required=provider != "scripted")
    base_url = _base_url(ck, config, path)
    ck.secret_url(base_url)
    api_key = opt_str(ck, config, "api_key", path)
    ck.secret(api_key)
    role = opt_str(ck, config, "role", path)
    tooling = parse_tooling(ck, config.get("tooling"), (*path, "tooling"))
    params, reserved = _params(ck, config, path)
    script = _script(ck, config, path, provider)
    if provider is None or (name is None and provider != "scripted"):
        return None
    return AgentConfig(
        provider=provider,
        name=name or "scripted",
        base_url=base_url,
        api_key=api_key,
        role=role,
        tooling=tooling,
        params=frozen_mapping(params),
        script=script,
        **reserved,
    )


def _provider(ck: Checker, config: dict[str, Any], path: KeyPath) -> str | None:
    provider = opt_str(ck, config, "provider", path, required=True)
    if provider is None:
        return None
    if provider.strip().lower() not in PROVIDERS:
        ck.error(
            (*path, "provider"),
            f"provider '{provider}' is not supported; use 'openai' (any OpenAI-compatible "
            "endpoint: OpenAI, vLLM, Ollama, LM Studio, ...) or 'scripted' (offline)",
        )
        return None
    return provider.strip().lower()


def _base_url(ck: Checker, config: dict[str, Any], path: KeyPath) -> str | None:
    base_url = opt_str(ck, config, "base_url", path)
    if base_url is None or not base_url.strip():
        return None
    if not is_http_url(base_url):
        ck.error(
            (*path, "base_url"),
            f"base_url must be an http:// or https:// URL, got {describe(base_url)}",
        )
        return None
    return base_url.strip().rstrip("/")


def _params(
    ck: Checker, config: dict[str, Any], path: KeyPath
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Request-body params, and the reserved keys that configure devall instead."""
    raw = config.get("params")
    if raw is None or raw is UNRESOLVED:
        return {}, {}
    here = (*path, "params")
    params = get_mapping(ck, raw, here, "params")
    if params is None:
        return {}, {}
    reserved: dict[str, Any] = {
        "tool_loop_limit": opt_int(ck, params, "tool_loop_limit", here, 50, minimum=1),
        "timeout": opt_number(ck, params, "timeout", here, 300.0, positive=True),
        "retries": opt_int(ck, params, "retries", here, 5, minimum=0),
        "max_result_chars": opt_int(ck, params, "max_result_chars", here, 100_000, minimum=1),
    }
    body = {key: value for key, value in params.items() if key not in RESERVED_PARAMS}
    return body, reserved


def _script(
    ck: Checker, config: dict[str, Any], path: KeyPath, provider: str | None
) -> tuple[ScriptedTurn, ...]:
    raw = config.get("script")
    here = (*path, "script")
    if raw is UNRESOLVED:
        return ()
    if provider != "scripted":
        if raw is not None and provider is not None:
            ck.warning(here, "script is only used by 'provider: scripted' (ignored)", at_key=True)
        return ()
    if raw is None or raw == []:
        ck.error(
            here,
            "provider 'scripted' needs a non-empty script: a list of turns, each with "
            "'content' and/or 'tool_calls'",
        )
        return ()
    if not isinstance(raw, list):
        ck.error(here, f"script must be a list of turns, got {describe(raw)}")
        return ()
    turns = [_turn(ck, item, (*here, index)) for index, item in enumerate(raw)]
    return tuple(turn for turn in turns if turn is not None)


def _turn(ck: Checker, raw: Any, path: KeyPath) -> ScriptedTurn | None:
    if isinstance(raw, str):
        return ScriptedTurn(content=str(raw))  # a bare string is a content-only turn
    turn = get_mapping(ck, raw, path, "a script turn")
    if turn is None:
        return None
    check_keys(ck, turn, path, _TURN_KEYS)
    if turn.get("content") is None and not turn.get("tool_calls"):
        ck.error(path, "a script turn needs 'content' or 'tool_calls'")
        return None
    content = opt_str(ck, turn, "content", path)
    calls = _tool_calls(ck, turn.get("tool_calls"), (*path, "tool_calls"))
    return ScriptedTurn(content=content, tool_calls=calls)


def _tool_calls(ck: Checker, raw: Any, path: KeyPath) -> tuple[ScriptedToolCall, ...]:
    if raw is None or raw is UNRESOLVED:
        return ()
    if not isinstance(raw, list):
        ck.error(path, f"tool_calls must be a list of {{name, arguments}}, got {describe(raw)}")
        return ()
    calls: list[ScriptedToolCall] = []
    for index, item in enumerate(raw):
        here = (*path, index)
        call = get_mapping(ck, item, here, "a tool call")
        if call is None:
            continue
        check_keys(ck, call, here, _CALL_KEYS)
        name = opt_str(ck, call, "name", here, required=True)
        raw_arguments = call.get("arguments")
        arguments: dict[str, Any] | None = None
        if raw_arguments is not None:
            arguments = get_mapping(ck, raw_arguments, (*here, "arguments"), "arguments")
        if name is not None:
            calls.append(ScriptedToolCall(name=name, arguments=frozen_mapping(arguments or {})))
    return tuple(calls)


# --- literal and passthrough ---------------------------------------------------------------


def parse_literal(ck: Checker, config: dict[str, Any], path: KeyPath) -> LiteralConfig | None:
    """A node that emits fixed text."""
    check_keys(ck, config, path, _LITERAL_KEYS)
    content = config.get("content")
    role = opt_str(ck, config, "role", path) or "user"
    if role not in ("user", "assistant"):
        ck.error((*path, "role"), f"role must be 'user' or 'assistant', got {describe(role)}")
    if content is UNRESOLVED:
        return None
    if content is None:
        ck.error((*path, "content"), "content is required")
        return None
    if isinstance(content, (list, dict)):
        ck.error((*path, "content"), f"content must be text, got {describe(content)}")
        return None
    return LiteralConfig(content=scalar_text(content), role=role)


def parse_passthrough(
    ck: Checker, config: dict[str, Any], path: KeyPath
) -> PassthroughConfig | None:
    """A node that forwards its inputs."""
    check_keys(ck, config, path, _PASSTHROUGH_KEYS)
    return PassthroughConfig(
        only_last_message=opt_bool(ck, config, "only_last_message", path, True)
    )
