"""Masking of secrets in everything devall prints or writes (DESIGN.md "Secrets").

Three layers: known secret values (from the workflow) are replaced wherever they occur; values
under keys that name a credential (`Authorization`, `api_key`, `token`, …) are masked whatever
they are; and credentials inside URLs (`user:pass@`, `?token=…`) are masked in any text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any

from devall_cli.config.model import (
    AgentConfig,
    McpLocalConfig,
    McpRemoteConfig,
    Workflow,
)

MASK = "***"
_PLAIN_SCALARS = (int, float, bool, type(None))

# Whole key names (case-insensitive) whose values are credentials. Anchored so that counters
# like `prompt_tokens` or `max_tokens` stay visible.
_SECRET_KEY = re.compile(
    r"""^(?:
        (?:proxy[-_]?)?authorization | auth | cookie | set[-_]?cookie
        | (?:x[-_])?api[-_]?key | (?:secret|private|access)[-_]?key
        | (?:[a-z0-9]+[-_])?(?:token|secret|password|passwd|pwd|apikey|api[-_]key)
      )$""",
    re.IGNORECASE | re.VERBOSE,
)
# Environment-style names that DESIGN.md treats as secret (`*KEY*`, `*TOKEN*`, …).
_SECRET_ENV_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|AUTH", re.IGNORECASE)
_URL_USERINFO = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s/:@]+:)[^\s/@]+(?=@)")
_URL_QUERY = re.compile(
    r"(?P<head>[?&;](?P<name>[A-Za-z0-9_.-]+)=)(?P<value>[^&#;\s\"'<>()\[\]]+)",
)
_AUTH_SCHEME = re.compile(r"^(?:Bearer|Basic|Token|Bot)\s+(?P<credential>\S+)$", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def secret_key(name: str) -> bool:
    """Whether a mapping key names a credential."""
    # Cached: every event written to the log asks this for the same few dozen keys.
    return bool(_SECRET_KEY.match(name.strip()))


class Redactor:
    """Replaces secrets by `***` in text and in nested JSON-like values."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = {s for s in (str(v).strip() for v in secrets if v is not None) if s}
        for value in list(values):
            match = _AUTH_SCHEME.match(value)
            if match:  # `Bearer xyz` is masked, and so is `xyz` on its own
                values.add(match.group("credential"))
        self.secrets: tuple[str, ...] = tuple(sorted(values, key=len, reverse=True))
        # Longest first, so a secret containing another one is masked as a whole.
        self._pattern = (
            re.compile("|".join(re.escape(v) for v in self.secrets)) if self.secrets else None
        )

    @classmethod
    def for_workflow(cls, workflow: Workflow, extra: Iterable[str] = ()) -> Redactor:
        """A redactor for everything a workflow declares as (or that looks) secret."""
        return cls([*workflow.secrets, *workflow_secrets(workflow), *extra])

    def text(self, text: str) -> str:
        """`text` with every secret, and every credential in a URL, masked."""
        if self._pattern is not None:
            text = self._pattern.sub(MASK, text)
        if "://" in text:
            text = _URL_USERINFO.sub(lambda m: m.group("head") + MASK, text)
        if "=" in text:
            text = _URL_QUERY.sub(_mask_query, text)
        return text

    def value(self, obj: Any) -> Any:
        """A copy of `obj` (dicts, lists, tuples, strings) with secrets masked."""
        if isinstance(obj, str):
            return self.text(obj)
        if type(obj) in _PLAIN_SCALARS:  # nothing to mask; skips the slower ABC checks
            return obj
        if isinstance(obj, Mapping):
            return {key: self._item(key, item) for key, item in obj.items()}
        if isinstance(obj, list | tuple):
            return [self.value(item) for item in obj]
        return obj

    def _item(self, key: Any, item: Any) -> Any:
        if isinstance(key, str) and secret_key(key) and _has_value(item):
            return MASK
        return self.value(item)


def _has_value(item: Any) -> bool:
    """Whether a value under a credential key is worth masking (not empty, not a flag)."""
    if isinstance(item, bool) or item is None:
        return False
    if isinstance(item, str | Mapping | list | tuple):
        return len(item) > 0
    return isinstance(item, int | float)


def _mask_query(match: re.Match[str]) -> str:
    if secret_key(match.group("name")) or match.group("name").lower() in {"key", "sig"}:
        return match.group("head") + MASK
    return match.group(0)


def workflow_secrets(workflow: Workflow) -> list[str]:
    """Values the workflow itself marks as secret: api keys, headers, secret-named env."""
    found: list[str] = []
    for node in workflow.graph.nodes:
        config = node.config
        if not isinstance(config, AgentConfig):
            continue
        if config.api_key:
            found.append(config.api_key)
        for tooling in config.tooling:
            settings = tooling.config
            if isinstance(settings, McpRemoteConfig):
                found.extend(settings.headers.values())
            elif isinstance(settings, McpLocalConfig):
                # Only secret-looking names: masking a value such as "1" everywhere would
                # garble every number in the trace.
                found.extend(v for k, v in settings.env.items() if _SECRET_ENV_NAME.search(k))
    return found
