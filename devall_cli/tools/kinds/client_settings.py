"""What devall answers when an MCP server asks something of it: the keys `elicitation`,
`sampling`, `sampling_max_tokens`, `roots`, `log_level` and the limits on how many sampling and
elicitation requests a server may make, shared by `mcp_remote` and `mcp_local` (parsed here,
used by tools/mcp_requests.py).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from devall_cli.config.file_probe import is_dir
from devall_cli.config.json_shapes import Schema, array_of, keys_object
from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import (
    Checker,
    KeySpec,
    check_keys,
    describe,
    get_mapping,
    opt_int,
    opt_str,
    opt_str_list,
)
from devall_cli.config.yaml_source import KeyPath
from devall_cli.text import suggest

ELICITATION_POLICIES = ("prompt", "accept_defaults", "decline", "cancel")
SAMPLING_POLICIES = ("allow", "deny")
# MCP's log levels (RFC 5424 severities), least severe first.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
DEFAULT_SAMPLING_MAX_TOKENS = 4096
# How many sampling / elicitation requests a server may make during one tool call, and in all
# during a run: past them devall refuses (a server must not run up the model bill unbounded).
DEFAULT_MAX_PER_CALL = 10
DEFAULT_MAX_PER_RUN = 100
LIMIT_KEYS = (
    "sampling_max_requests",
    "sampling_max_requests_per_run",
    "elicitation_max_requests",
    "elicitation_max_requests_per_run",
)
CLIENT_KEYS = frozenset(
    {"elicitation", "sampling", "sampling_max_tokens", "roots", "log_level", *LIMIT_KEYS}
)
_ROOT_KEYS = KeySpec(known=frozenset({"path", "name"}))


@dataclass(frozen=True)
class RootConfig:
    """One root devall advertises: an absolute directory, and the name shown for it."""

    path: str
    name: str | None = None

    @property
    def uri(self) -> str:
        """The `file://` URI of the directory."""
        return Path(self.path).as_uri()


def present_roots(roots: Sequence[RootConfig]) -> list[RootConfig]:
    """The roots offered now: those configured whose directory exists, each once."""
    seen: set[str] = set()
    present: list[RootConfig] = []
    for root in roots:
        if root.path not in seen and Path(root.path).is_dir():
            seen.add(root.path)
            present.append(root)
    return present


@dataclass(frozen=True)
class McpClientConfig:
    """How devall answers a server's requests (the same for every tool call on it)."""

    elicitation: str | None = None  # None: `prompt` on a terminal, else `decline`
    sampling: str = "allow"
    sampling_max_tokens: int = DEFAULT_SAMPLING_MAX_TOKENS
    # The folders offered to the server; none unless configured (a filesystem server takes its
    # roots in place of the folders on its command line: devall never widens that on its own).
    roots: tuple[RootConfig, ...] = ()
    log_level: str | None = None  # None: whatever the server sends
    sampling_max_requests: int = DEFAULT_MAX_PER_CALL  # per tool call
    sampling_max_requests_per_run: int = DEFAULT_MAX_PER_RUN  # per server, the whole run
    elicitation_max_requests: int = DEFAULT_MAX_PER_CALL
    elicitation_max_requests_per_run: int = DEFAULT_MAX_PER_RUN


DEFAULT_CLIENT = McpClientConfig()


def parse_client_config(ck: Checker, config: dict[str, Any], path: KeyPath) -> McpClientConfig:
    """The client keys of an `mcp_remote` or `mcp_local` config (every problem reported)."""
    return McpClientConfig(
        elicitation=_choice(ck, config, "elicitation", path, ELICITATION_POLICIES),
        sampling=_choice(ck, config, "sampling", path, SAMPLING_POLICIES) or "allow",
        sampling_max_tokens=opt_int(
            ck, config, "sampling_max_tokens", path, DEFAULT_SAMPLING_MAX_TOKENS, minimum=1
        ),
        roots=parse_roots(ck, config.get("roots"), (*path, "roots")),
        log_level=_choice(ck, config, "log_level", path, LOG_LEVELS),
        sampling_max_requests=_limit(ck, config, "sampling_max_requests", path),
        sampling_max_requests_per_run=_limit(ck, config, "sampling_max_requests_per_run", path),
        elicitation_max_requests=_limit(ck, config, "elicitation_max_requests", path),
        elicitation_max_requests_per_run=_limit(
            ck, config, "elicitation_max_requests_per_run", path
        ),
    )


def _limit(ck: Checker, config: dict[str, Any], key: str, path: KeyPath) -> int:
    default = DEFAULT_MAX_PER_RUN if key.endswith("_per_run") else DEFAULT_MAX_PER_CALL
    return opt_int(ck, config, key, path, default, minimum=0)


def _choice(
    ck: Checker, config: dict[str, Any], key: str, path: KeyPath, choices: tuple[str, ...]
) -> str | None:
    value = opt_str(ck, config, key, path)
    if value is None or not value.strip():
        return None
    word = value.strip().lower()
    if word in choices:
        return word
    listed = ", ".join(choices)
    message = f"{key} must be one of {listed}, got {value!r}"
    guess = suggest(word, list(choices))
    ck.error((*path, key), f"{message}; did you mean '{guess}'?" if guess else message)
    return None


def parse_roots(ck: Checker, raw: Any, path: KeyPath) -> tuple[RootConfig, ...]:
    """`roots:` a list of directories (paths or `file://` URIs, or `{path, name}` mappings)."""
    if raw is None or raw is UNRESOLVED:
        return ()
    if not isinstance(raw, list):
        ck.error(path, f"roots must be a list of directories, got {describe(raw)}")
        return ()
    roots: list[RootConfig] = []
    for index, item in enumerate(raw):
        root = _root(ck, item, (*path, index))
        if root is not None and root not in roots:
            roots.append(root)
    return tuple(roots)


def _root(ck: Checker, item: Any, path: KeyPath) -> RootConfig | None:
    name: str | None = None
    where = path
    if isinstance(item, dict):
        entry = get_mapping(ck, item, path, "a root")
        if entry is None:
            return None
        check_keys(ck, entry, path, _ROOT_KEYS)
        name = opt_str(ck, entry, "name", path) or None
        item = opt_str(ck, entry, "path", path, required=True)
        where = (*path, "path")
        if item is None:
            return None
    if item is UNRESOLVED:
        return None
    if not isinstance(item, str) or not item.strip():
        ck.error(where, f"a root must be a directory path or a file:// URI, got {describe(item)}")
        return None
    directory = _directory(ck, item.strip(), where)
    if directory is None:
        return None
    if not is_dir(directory):
        ck.warning(where, f"root {directory} is not a directory; it is advertised once it exists")
    return RootConfig(path=str(directory), name=name)


def _directory(ck: Checker, text: str, path: KeyPath) -> Path | None:
    """The absolute directory a root names; relative paths start at the workflow's folder."""
    if "://" in text:
        parts = urlsplit(text)
        if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
            ck.error(path, f"a root must be a local directory or a file:// URI, got {text!r}")
            return None
        text = unquote(parts.path)
    return (ck.file_dir / os.path.expanduser(text)).resolve()


def client_shapes() -> dict[str, Schema]:
    """The nested blocks of the client keys (`roots`), for `devall schema`."""
    root = keys_object(_ROOT_KEYS, strict=True)
    return {"roots": array_of({"anyOf": [{"type": "string"}, root]})}


DEFAULT_TOOL_SOURCES = ("mcp_tools",)


def tool_sources_of(ck: Checker, config: dict[str, Any], path: KeyPath) -> tuple[str, ...]:
    """`tool_sources`: one name or a list (ChatDev accepts a single name too)."""
    value = config.get("tool_sources")
    if isinstance(value, str):  # ChatDev accepts a single name too
        return (value,)
    sources = opt_str_list(ck, config, "tool_sources", path, DEFAULT_TOOL_SOURCES)
    return tuple(s.strip() for s in sources if s.strip())
