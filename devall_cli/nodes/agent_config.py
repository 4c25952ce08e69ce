"""`agent`, as a workflow configures it: the descriptor, its config parsing and its summary.

The config names a provider (a registered descriptor), a model, a system prompt (`role`), tooling
entries, request params, and optionally a thinking stage, the graph's memories it uses and its
skills. Running a visit is `agent.py`'s, imported only when a node runs.
"""

from __future__ import annotations

from typing import Any

from devall_cli.config.json_shapes import Schema, array_of, ref
from devall_cli.config.model import frozen_mapping
from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import (
    Checker,
    KeySpec,
    check_keys,
    describe,
    get_mapping,
    is_http_url,
    opt_int,
    opt_number,
    opt_str,
)
from devall_cli.config.yaml_source import KeyPath
from devall_cli.kinds import runtime
from devall_cli.memory.base import MemoryRefConfig
from devall_cli.memory.config import memory_refs_shape, parse_memory_refs
from devall_cli.nodes.agent_settings import AgentConfig
from devall_cli.nodes.base import NODE_TYPES, NodeType
from devall_cli.providers.base import RESERVED_PARAMS
from devall_cli.providers.registry import PROVIDERS, ProviderType
from devall_cli.skills.config import parse_skills, skills_shape
from devall_cli.thinking.base import parse_thinking, thinking_shape
from devall_cli.tools.kinds.registry import parse_tooling
from devall_cli.tools.policy_config import check_tool_rules, parse_tool_policy, policy_shape

COMMON_KEYS = frozenset(
    {
        "provider",
        "name",
        "base_url",
        "api_key",
        "role",
        "tooling",
        "params",
        "input_mode",
        "thinking",
        "memories",
        "skills",
        "tool_policy",
    }
)
INPUT_MODES = ("messages", "prompt")
_RETRY_NOTE = "'retry' has no effect in devall (ignored); set params.retries instead"


def _keys(provider: ProviderType | None) -> KeySpec:
    """The agent keys: the common ones and those the chosen provider reads."""
    own = provider.keys if provider is not None else frozenset()
    others = frozenset(k for p in PROVIDERS.all().values() if p is not provider for k in p.keys)
    return KeySpec(
        known=COMMON_KEYS | own,
        ignored=others,  # another provider's key (a leftover `script`) is reported below
        noted={"retry": _RETRY_NOTE},
        unsupported={"memory": "an agent-level memory block (ChatDev's old form)"},
    )


def parse_agent(ck: Checker, config: dict[str, Any], path: KeyPath) -> AgentConfig | None:
    """An LLM agent: provider, model, prompt, tooling, request params."""
    provider = _provider(ck, config, path)
    check_keys(ck, config, path, _keys(provider))
    _other_providers_keys(ck, config, path, provider)
    required = provider is None or provider.name_required
    name = opt_str(ck, config, "name", path, required=required)
    base_url = _base_url(ck, config, path)
    ck.secret_url(base_url)
    api_key = opt_str(ck, config, "api_key", path)
    ck.secret(api_key)
    role = opt_str(ck, config, "role", path)
    input_mode = _input_mode(ck, config, path)
    tooling = parse_tooling(ck, config.get("tooling"), (*path, "tooling"))
    params, reserved = _params(ck, config, path)
    own = provider.parse(ck, config, path) if provider is not None else None
    thinking = parse_thinking(ck, config.get("thinking"), (*path, "thinking"))
    memories = parse_memory_refs(ck, config.get("memories"), (*path, "memories"))
    skills = parse_skills(ck, config.get("skills"), (*path, "skills"))
    tool_policy = parse_tool_policy(ck, config.get("tool_policy"), (*path, "tool_policy"))
    check_tool_rules(ck, tool_policy, tooling, "the node")
    if provider is None or (name is None and provider.name_required):
        return None
    return AgentConfig(
        provider=provider.name,
        name=name or provider.name,
        base_url=base_url,
        api_key=api_key,
        role=role,
        tooling=tooling,
        params=frozen_mapping(params),
        provider_config=own,
        input_mode=input_mode,
        thinking=thinking,
        memories=memories,
        skills=skills,
        tool_policy=tool_policy,
        **reserved,
    )


def _provider(ck: Checker, config: dict[str, Any], path: KeyPath) -> ProviderType | None:
    name = opt_str(ck, config, "provider", path, required=True)
    if name is None:
        return None
    provider = PROVIDERS.get(name.strip().lower())
    if provider is None:
        ck.error((*path, "provider"), PROVIDERS.unknown_message(name))
    return provider


def _other_providers_keys(
    ck: Checker, config: dict[str, Any], path: KeyPath, provider: ProviderType | None
) -> None:
    if provider is None:
        return
    for other in PROVIDERS.all().values():
        for key in sorted(other.keys - provider.keys):
            if config.get(key) is not None and other is not provider:
                ck.warning(
                    (*path, key),
                    f"{key} is only used by 'provider: {other.name}' (ignored)",
                    at_key=True,
                )


def _input_mode(ck: Checker, config: dict[str, Any], path: KeyPath) -> str:
    mode = opt_str(ck, config, "input_mode", path)
    if mode is None or not mode.strip():
        return "messages"
    mode = mode.strip().lower()
    if mode not in INPUT_MODES:
        ck.error((*path, "input_mode"), f"input_mode must be 'messages' or 'prompt', got {mode!r}")
        return "messages"
    return mode


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


def _details(settings: AgentConfig) -> dict[str, Any]:
    details: dict[str, Any] = {"provider": settings.provider, "model": settings.name}
    if settings.thinking is not None:
        details["thinking"] = settings.thinking.type
    if settings.memories:
        details["memories"] = [ref.name for ref in settings.memories]
    if settings.skills is not None:
        details["skills"] = list(settings.skills.allow) or ["*"]
    return details


def _memory_refs(settings: AgentConfig) -> tuple[MemoryRefConfig, ...]:
    return settings.memories


def _shapes() -> dict[str, Schema]:
    """The nested blocks of an agent's config, with those of every provider's own keys."""
    shapes: dict[str, Schema] = {
        "provider": {"enum": [*PROVIDERS.names(), None]},
        "input_mode": {"enum": list(INPUT_MODES)},
        "tooling": array_of(ref("tooling_entry")),
        "params": {"type": "object"},
        "thinking": thinking_shape(),
        "memories": memory_refs_shape(),
        "skills": skills_shape(),
        "tool_policy": policy_shape(),
    }
    for provider in PROVIDERS.all().values():
        shapes.update(provider.shapes())
    return shapes


AGENT = NODE_TYPES.register(
    NodeType(
        "agent",
        "an LLM that may call tools",
        _keys(None),  # every key an agent accepts, whichever its provider
        parse_agent,
        runtime("devall_cli.nodes.agent:run_agent"),
        details=_details,
        memory_refs=_memory_refs,
        shapes=_shapes,
        label=lambda settings: settings.name,
        note=lambda settings: f"{settings.provider}: {settings.name}",
    )
)
