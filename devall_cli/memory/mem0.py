"""`type: mem0`: memories kept by a Mem0 service (its hosted platform or any server speaking its
API), as ChatDev's Mem0Memory keeps them.

The store speaks Mem0's HTTP API directly, as the `mem0ai` client sends it: `POST
{base_url}/v3/memories/add/` with the visit's input as one user message, and `POST
{base_url}/v3/memories/search/` with the query, `top_k`, `filters` scoping by user and agent,
and `threshold`; `Authorization: Token <api key>`. Requests go through the providers'
`ModelEndpoint` (retries, deadline, size limit): an unreachable service exits 4, an HTTP error
after the retries exits 5. ChatDev logs a failed call and goes on with no memories; devall
stops the node, as for every other endpoint, so a wrong key is never a silent empty memory.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import (
    Checker,
    KeySpec,
    describe,
    is_http_url,
    opt_int,
    opt_number,
    opt_str,
)
from devall_cli.config.yaml_source import KeyPath
from devall_cli.errors import ConfigError, DevallConnectionError, DevallError
from devall_cli.memory.base import (
    MEMORY_STORES,
    MemoryItem,
    MemoryStore,
    MemoryStoreType,
    StoreContext,
    WritePayload,
)

DEFAULT_BASE_URL = "https://api.mem0.ai"  # the `mem0ai` client's default host
KEY_ENV = "MEM0_API_KEY"  # read by the `mem0ai` client when no key is given
BASE_URL_ENV = "MEM0_BASE_URL"
ADD_PATH = "/v3/memories/add/"
SEARCH_PATH = "/v3/memories/search/"
# The section headers of a visit's inputs: Mem0's extraction skips text that reads as metadata.
_INPUT_HEADER = re.compile(r"===\s*INPUT FROM\s+\S+\s*\(\w+\)\s*===\s*")


@dataclass(frozen=True)
class Mem0MemoryConfig:
    """`config` of a mem0 store."""

    api_key: str | None = None  # None: MEM0_API_KEY when the run starts
    base_url: str | None = None  # None: MEM0_BASE_URL, else Mem0's hosted platform
    user_id: str | None = None
    agent_id: str | None = None
    org_id: str | None = None  # accepted as ChatDev does; Mem0 finds both from the key
    project_id: str | None = None
    timeout: float = 60.0
    retries: int = 3


class Mem0Memory:
    """A store whose items live on a Mem0 service; nothing is kept on this machine."""

    def __init__(
        self,
        config: Mem0MemoryConfig,
        context: StoreContext,
    ) -> None:
        from devall_cli.providers.http_client import ModelEndpoint, join_url

        env = os.environ if context.environ is None else context.environ
        api_key = config.api_key or env.get(KEY_ENV, "")
        if not api_key:
            raise ConfigError(
                f"memory store '{context.name}' (mem0): no Mem0 API key: set config.api_key "
                f"or {KEY_ENV}"
            )
        base_url = (config.base_url or env.get(BASE_URL_ENV) or DEFAULT_BASE_URL).rstrip("/")
        self.name = context.name
        self.path: Path | None = None
        self._config = config
        self._redactor = context.redactor.with_secrets([api_key])
        self._base_url = base_url
        self._added = 0

        def endpoint(path: str) -> ModelEndpoint:
            return ModelEndpoint(
                join_url(base_url, path),
                headers={"Authorization": f"Token {api_key}"},
                secrets=(api_key,),
                redactor=self._redactor,
                retries=config.retries,
                timeout=config.timeout,
            )

        self._add = endpoint(ADD_PATH)
        self._search = endpoint(SEARCH_PATH)

    def count(self) -> int:
        """The items this run added (the store itself lives on the service)."""
        return self._added

    async def load(self) -> None:
        """Nothing to read: the service keeps the store."""

    def save(self) -> None:
        """Nothing to write: the service keeps the store."""

    async def aclose(self) -> None:
        """Close the HTTP connections (idempotent)."""
        await self._add.aclose()
        await self._search.aclose()

    async def retrieve(
        self, query: str, top_k: int, threshold: float, *, node: str
    ) -> list[MemoryItem]:
        """What the service finds for `query`, in its order (an empty query asks nothing)."""
        if not query.strip():
            return []
        body: dict[str, Any] = {
            "query": self._redactor.text(query),
            "top_k": top_k,
            "filters": self._filters(node),
        }
        if threshold >= 0:
            body["threshold"] = threshold
        answer = await self._post(self._search, body)
        return [self._item(entry, node) for entry in _entries(answer)]

    async def write(self, payload: WritePayload, *, node: str) -> int:
        """Send the visit's input (its section headers removed) for the service to extract
        memories from; the node's output is not sent, as in ChatDev."""
        text = _INPUT_HEADER.sub("", self._redactor.text(payload.inputs_text)).strip()
        if not text:
            return 0
        body: dict[str, Any] = {"messages": [{"role": "user", "content": text}], "infer": True}
        if self._config.agent_id:
            body["agent_id"] = self._config.agent_id
        if self._config.user_id:
            body["user_id"] = self._config.user_id
        if "agent_id" not in body and "user_id" not in body:
            body["agent_id"] = node  # ChatDev uses the role prompt: see `_filters`
        answer = await self._post(self._add, body)
        results = answer.get("results") if isinstance(answer, dict) else None
        added = len(results) if isinstance(results, list) else 1
        self._added += added
        return added

    def _filters(self, node: str) -> dict[str, Any]:
        """Scope a search: the user's and the agent's memories, either one, or the node's.

        Without ids ChatDev scopes by the agent's role prompt (all of it, or "" when the node
        has none); devall by the node id, which stays put when the prompt is edited."""
        user, agent = self._config.user_id, self._config.agent_id
        if user and agent:
            return {"OR": [{"user_id": user}, {"agent_id": agent}]}
        if user:
            return {"user_id": user}
        return {"agent_id": agent or node}

    def _item(self, entry: Mapping[str, Any], node: str) -> MemoryItem:
        categories = entry.get("categories")
        return MemoryItem(
            id=str(entry.get("id") or f"mem0_{uuid.uuid4().hex}"),
            content_summary=str(entry.get("memory") or ""),
            metadata={
                "agent_role": node,
                "score": entry.get("score"),
                "categories": categories if isinstance(categories, list) else [],
                "source": "mem0",
            },
            timestamp=time.time(),
        )

    async def _post(self, endpoint: Any, body: dict[str, Any]) -> Any:
        from devall_cli import json_limits
        from devall_cli.providers.http_client import invalid_response

        try:
            content = await endpoint.post_json(body)
        except DevallError as exc:
            self._reword(exc)
            raise
        try:
            return json_limits.loads(content)
        except ValueError as exc:
            error = invalid_response(endpoint.display_url, f"body is not JSON ({exc})")
            self._reword(error)
            raise error from None

    def _reword(self, exc: DevallError) -> None:
        """Say the endpoint's error of this store, with a hint for Mem0 rather than a model."""
        exc.message = f"memory store '{self.name}' (mem0): " + exc.message.replace(
            "model endpoint", "Mem0 service"
        )
        exc.args = (exc.message,)
        status = getattr(exc, "status_code", 0)
        if status in (401, 403):
            exc.hint = f"Mem0 refused the API key: check config.api_key or {KEY_ENV}"
        elif isinstance(exc, DevallConnectionError):
            exc.hint = (
                f"check the store's base_url ({self._base_url}) or {BASE_URL_ENV}, and that the "
                "Mem0 service is up"
            )
        else:
            exc.hint = ""


def _entries(answer: Any) -> list[Mapping[str, Any]]:
    """The memories of a search answer: `{"results": [...]}`, `{"memories": [...]}` or a list."""
    if isinstance(answer, dict):
        found = answer.get("results", answer.get("memories", []))
    else:
        found = answer
    if not isinstance(found, list):
        return []
    return [entry for entry in found if isinstance(entry, Mapping)]


def parse_mem0(ck: Checker, config: dict[str, Any], path: KeyPath) -> Any:
    """The key (or MEM0_API_KEY), the service's URL, the scoping ids and the request limits."""
    api_key = opt_str(ck, config, "api_key", path)
    ck.secret(api_key)
    scope = ck.scope
    listing = scope is not None and scope.tools_only  # listings and probes use no memory
    given = config.get("api_key") is UNRESOLVED or bool(api_key and api_key.strip())
    if not given and not ck.environ.get(KEY_ENV) and not listing:
        ck.error(path, f"no Mem0 API key: set api_key here or {KEY_ENV} in the environment")
    base_url = opt_str(ck, config, "base_url", path)
    if base_url is not None and base_url.strip() and not is_http_url(base_url.strip()):
        ck.error(
            (*path, "base_url"),
            f"base_url must be an http:// or https:// URL, got {describe(base_url)}",
        )
        base_url = None
    ck.secret_url(base_url)
    ids = {
        key: (opt_str(ck, config, key, path) or "").strip() or None
        for key in ("user_id", "agent_id", "org_id", "project_id")
    }
    timeout = opt_number(ck, config, "timeout", path, 60.0, positive=True)
    retries = opt_int(ck, config, "retries", path, 3, minimum=0)
    return Mem0MemoryConfig(
        api_key=api_key.strip() if api_key and api_key.strip() else None,
        base_url=base_url.strip() if base_url and base_url.strip() else None,
        timeout=timeout,
        retries=retries,
        **ids,
    )


def _build(settings: Any, context: StoreContext) -> MemoryStore:
    return Mem0Memory(settings, context)


MEM0 = MEMORY_STORES.register(
    MemoryStoreType(
        "mem0",
        "memories kept by a Mem0 service (hosted, or any server with Mem0's API)",
        KeySpec(
            known=frozenset(
                {
                    "api_key",
                    "base_url",
                    "user_id",
                    "agent_id",
                    "org_id",
                    "project_id",
                    "timeout",
                    "retries",
                }
            )
        ),
        parse_mem0,
        _build,
    )
)
