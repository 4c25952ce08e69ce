"""Reading `graph.memory` (the stores), an agent's `memories` (references to them) and a store's
`embedding` block; checking that every reference names a store of its graph."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from devall_cli.config.json_shapes import Schema, array_of, keys_object
from devall_cli.config.model import MemoryStoreConfig
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
)
from devall_cli.config.yaml_source import KeyPath, format_path
from devall_cli.memory.base import AUTO, MEMORY_STORES, EmbeddingConfig, MemoryRefConfig
from devall_cli.text import suggest
from devall_cli.thinking.base import STAGES

STORE_KEYS = KeySpec(known=frozenset({"name", "type", "config"}))
_REF_KEYS = KeySpec(
    known=frozenset({"name", "retrieve_stage", "top_k", "similarity_threshold", "read", "write"})
)
_EMBEDDING_KEYS = KeySpec(known=frozenset({"provider", "model", "base_url", "api_key", "params"}))
_EMBEDDING_PARAMS = KeySpec(
    known=frozenset({"max_length", "use_chunking", "chunk_strategy", "timeout", "retries"})
)
CHUNK_STRATEGIES = ("average", "weighted", "first")


def parse_memory_list(ck: Checker, raw: Any, path: KeyPath) -> tuple[MemoryStoreConfig, ...]:
    """`graph.memory`: a list of `{name, type, config}` with unique names."""
    if raw is None or raw is UNRESOLVED or raw == []:
        return ()
    if not isinstance(raw, list):
        ck.error(path, f"memory must be a list of memory stores, got {describe(raw)}")
        return ()
    stores: list[MemoryStoreConfig] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(raw):
        here = (*path, index)
        store = _store(ck, item, here)
        if store is None:
            continue
        if store.name in seen:
            ck.error(
                (*here, "name"),
                f"duplicate memory store name '{store.name}' (first used by "
                f"{format_path((*path, seen[store.name]))})",
            )
            continue
        seen[store.name] = index
        stores.append(store)
    return tuple(stores)


def _store(ck: Checker, raw: Any, path: KeyPath) -> MemoryStoreConfig | None:
    entry = get_mapping(ck, raw, path, "a memory store")
    if entry is None:
        return None
    check_keys(ck, entry, path, STORE_KEYS)
    name = opt_str(ck, entry, "name", path, required=True)
    type_name = opt_str(ck, entry, "type", path, required=True)
    kind = MEMORY_STORES.get(type_name.strip()) if type_name is not None else None
    if type_name is not None and kind is None:
        ck.error((*path, "type"), MEMORY_STORES.unknown_message(type_name))
    if kind is None:
        return None
    here = (*path, "config")
    raw_config = entry.get("config")
    if raw_config is None:
        # ChatDev insists on the block even for types whose keys all have defaults; devall
        # takes a missing block as `{}` when that is valid.
        if kind.config_required:
            ck.error(here, f"a memory store of type '{kind.name}' needs a config block")
            return None
        raw_config = {}
    config = get_mapping(ck, raw_config, here, "config")
    if config is None:
        return None
    check_keys(ck, config, here, kind.keys)
    settings = kind.parse(ck, config, here)
    if name is None or settings is None:
        return None
    return MemoryStoreConfig(name.strip(), kind.name, settings, path=format_path(path))


def memory_path(ck: Checker, config: dict[str, Any], key: str, path: KeyPath) -> str | None:
    """A store file: `auto`, or a path taken from the workflow's folder (made absolute)."""
    value = opt_str(ck, config, key, path)
    if value is None or not value.strip():
        return None
    value = value.strip()
    if value == AUTO:
        return AUTO
    return str((ck.workflow_dir / value).resolve())


def parse_embedding(ck: Checker, raw: Any, path: KeyPath) -> EmbeddingConfig | None:
    """A store's `embedding: {provider: openai, model, base_url, api_key, params}`."""
    if raw is None or raw is UNRESOLVED:
        return None
    block = get_mapping(ck, raw, path, "embedding")
    if block is None:
        return None
    check_keys(ck, block, path, _EMBEDDING_KEYS)
    provider = opt_str(ck, block, "provider", path)
    if provider is not None and provider.strip().lower() not in ("openai", ""):
        ck.error(
            (*path, "provider"),
            f"embedding provider '{provider}' is not supported: devall reads embeddings from an "
            "OpenAI-compatible /embeddings endpoint (provider: openai)",
        )
    model = opt_str(ck, block, "model", path, required=True)
    base_url = opt_str(ck, block, "base_url", path)
    if base_url is not None and base_url.strip() and not is_http_url(base_url):
        ck.error(
            (*path, "base_url"),
            f"base_url must be an http:// or https:// URL, got {describe(base_url)}",
        )
        base_url = None
    ck.secret_url(base_url)
    api_key = opt_str(ck, block, "api_key", path)
    ck.secret(api_key)
    params = _embedding_params(ck, block, path)
    if model is None:
        return None
    return EmbeddingConfig(
        model=model.strip(),
        base_url=base_url.strip().rstrip("/") if base_url and base_url.strip() else None,
        api_key=api_key or None,
        **params,
    )


def _embedding_params(ck: Checker, block: dict[str, Any], path: KeyPath) -> dict[str, Any]:
    raw = block.get("params")
    if raw is None or raw is UNRESOLVED:
        return {}
    here = (*path, "params")
    params = get_mapping(ck, raw, here, "params")
    if params is None:
        return {}
    check_keys(ck, params, here, _EMBEDDING_PARAMS)
    strategy = opt_str(ck, params, "chunk_strategy", here) or "average"
    if strategy not in CHUNK_STRATEGIES:
        ck.error(
            (*here, "chunk_strategy"),
            f"chunk_strategy must be one of {', '.join(CHUNK_STRATEGIES)}, got {strategy!r}",
        )
        strategy = "average"
    return {
        "max_length": opt_int(ck, params, "max_length", here, 8191, minimum=1),
        "use_chunking": opt_bool(ck, params, "use_chunking", here, False),
        "chunk_strategy": strategy,
        "timeout": opt_number(ck, params, "timeout", here, 60.0, positive=True),
        "retries": opt_int(ck, params, "retries", here, 5, minimum=0),
    }


# --- an agent's references -------------------------------------------------------------------


def parse_memory_refs(ck: Checker, raw: Any, path: KeyPath) -> tuple[MemoryRefConfig, ...]:
    """An agent's `memories`: a list of `{name, retrieve_stage, top_k, ...}`."""
    if raw is None or raw is UNRESOLVED or raw == []:
        return ()
    if not isinstance(raw, list):
        ck.error(path, f"memories must be a list of memory references, got {describe(raw)}")
        return ()
    refs = [_ref(ck, item, (*path, index)) for index, item in enumerate(raw)]
    return tuple(ref for ref in refs if ref is not None)


def _ref(ck: Checker, raw: Any, path: KeyPath) -> MemoryRefConfig | None:
    entry = get_mapping(ck, raw, path, "a memory reference")
    if entry is None:
        return None
    check_keys(ck, entry, path, _REF_KEYS)
    name = opt_str(ck, entry, "name", path, required=True)
    stages = _stages(ck, entry.get("retrieve_stage"), (*path, "retrieve_stage"))
    top_k = opt_int(ck, entry, "top_k", path, 3, minimum=1)
    threshold = opt_number(ck, entry, "similarity_threshold", path, -1.0)
    read = opt_bool(ck, entry, "read", path, True)
    write = opt_bool(ck, entry, "write", path, True)
    if name is None:
        return None
    return MemoryRefConfig(name.strip(), stages, top_k, threshold, read, write, key_path=path)


def _stages(ck: Checker, raw: Any, path: KeyPath) -> tuple[str, ...] | None:
    if raw is None or raw is UNRESOLVED:
        return None
    items = raw if isinstance(raw, list) else [raw]  # ChatDev takes a single stage too
    stages: list[str] = []
    for index, item in enumerate(items):
        here = (*path, index) if isinstance(raw, list) else path
        if item is UNRESOLVED:
            continue
        if not isinstance(item, str) or item.strip() not in STAGES:
            ck.error(
                here,
                f"retrieve_stage entries must be one of {', '.join(STAGES)}, got {describe(item)}",
            )
            continue
        stages.append(item.strip())
    return tuple(stages)


def declared_names(raw: Any) -> list[str]:
    """The names `graph.memory` declares, also of stores that have other errors (a reference to
    one of those is not reported again)."""
    if not isinstance(raw, list):
        return []
    names = [item.get("name") for item in raw if isinstance(item, dict)]
    return list(dict.fromkeys(n.strip() for n in names if isinstance(n, str) and n.strip()))


def check_memory_refs(ck: Checker, refs: Iterable[MemoryRefConfig], names: Sequence[str]) -> None:
    """Every reference names a store of its graph (each bad one reported where it is)."""
    names = list(names)
    for ref in refs:
        if ref.name in names:
            continue
        if not names:
            message = f"memories names '{ref.name}', but the graph declares no memory stores"
        else:
            message = (
                f"memories names '{ref.name}', which is not a memory store of this graph "
                f"(stores: {', '.join(names)})"
            )
            guess = suggest(ref.name, names)
            message += f"; did you mean '{guess}'?" if guess else ""
        ck.error((*ref.key_path, "name"), message)


def embedding_shape() -> Schema:
    """The schema of a store's `embedding` block (`devall schema`)."""
    params = keys_object(_EMBEDDING_PARAMS, strict=False)
    return keys_object(_EMBEDDING_KEYS, strict=False, shapes={"params": params})


def memory_refs_shape() -> Schema:
    """The schema of an agent's `memories` list (`devall schema`)."""
    return array_of(keys_object(_REF_KEYS, strict=True))
