"""The lockfile of a workflow's tool surface (`devall tools lock`), and the live surface it is
compared with (`devall tools diff`, `devall probe --locked`, `devall run --locked`).

The lockfile is JSON (2-space indent, sorted keys, a trailing newline) with no time stamp, so
locking a surface that did not change writes the same bytes. Per MCP server, by its devall id:
its kind and target, protocol version, server name and version, and its tools as the server
lists them (original names, before prefixes and filters), with their resources, resource
templates and prompts when the server offers them. Secrets are masked as in every other output;
descriptions are kept as their first line and the sha256 of the whole (masked) text. The format
is documented in docs/lockfile.md; how two surfaces differ is lock_diff.py's business.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from devall_cli.config.model import Workflow
from devall_cli.errors import ConfigError, ConfigIssue, UsageError
from devall_cli.tools.base import RawTool, ServerInfo, ToolSource
from devall_cli.tools.plan import (
    SourceContext,
    SourcePlan,
    build_source,
    plan_sources,
    tooling_type,
)

LOCK_VERSION = 1
LOCK_NAME = "devall.lock"
Mask = Callable[[str], str]


def sha256(text: str) -> str:
    """The hex sha256 of a text's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _described(text: str | None) -> dict[str, Any]:
    """`description` (its first line) and `description_sha256` (of the whole text)."""
    full = text or ""
    first = full.strip().split("\n", 1)[0].strip()
    return {"description": first, "description_sha256": sha256(full)}


def tool_entry(tool: RawTool, mask: Mask) -> dict[str, Any]:
    """A listed tool as the lockfile holds it."""
    return {
        "title": tool.title,
        **_described(mask(tool.description)),
        "input_schema": _plain(tool.input_schema),
        "output_schema": _plain(tool.output_schema) if tool.output_schema is not None else None,
        "annotations": _plain(tool.annotations) if tool.annotations else None,
        "task_support": tool.task_support,
    }


def server_entry(
    plan: SourcePlan,
    info: ServerInfo,
    tools: Sequence[RawTool],
    mask: Mask,
    *,
    version: str | None = None,
    listings: Mapping[str, list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """One server's entry: what it says of itself and everything it offers."""
    entry: dict[str, Any] = {
        "kind": plan.kind,
        "target": plan.target,
        "protocol_version": info.protocol_version,
        "server": {"name": info.server_name, "version": version},
        "tools": {tool.name: tool_entry(tool, mask) for tool in tools},
    }
    for section, rows in (listings or {}).items():
        if rows:  # a server that offers a kind of listing but lists none: nothing to lock
            entry[section] = _listing(section, rows, mask)
    return entry


def _listing(section: str, rows: list[dict[str, Any]], mask: Mask) -> dict[str, Any]:
    """Resources by URI, resource templates by URI template, prompts by name."""
    found: dict[str, Any] = {}
    for row in rows:
        described = _described(mask(str(row.get("description") or "")))
        if section == "prompts":
            arguments = [
                {"name": a.get("name"), "required": bool(a.get("required"))}
                for a in row.get("arguments") or []
                if isinstance(a, Mapping)
            ]
            found[str(row.get("name"))] = {**described, "arguments": arguments}
            continue
        key = row.get("uri") if section == "resources" else row.get("uriTemplate")
        found[str(key)] = {
            "name": row.get("name"),
            "mimeType": row.get("mimeType"),
            "description_sha256": described["description_sha256"],
        }
    return found


def lock_document(servers: Mapping[str, Any], mask_value: Callable[[Any], Any]) -> dict[str, Any]:
    """The whole lockfile: `{"version": 1, "servers": {...}}`, secrets masked."""
    return {"version": LOCK_VERSION, "servers": _plain(mask_value(dict(servers)))}


def lock_text(document: Mapping[str, Any]) -> str:
    """The lockfile's bytes as text: the same surface always gives the same text."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_lock(path: Path, text: str) -> bool:
    """Write the lockfile (its folder made); False when it already held exactly this text."""
    with contextlib.suppress(OSError):
        if path.read_text(encoding="utf-8") == text:
            return False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write the lockfile {path}: {exc.strerror or exc}") from None
    return True


def _plain(value: Any) -> Any:
    """A JSON value made of dicts, lists and scalars only (what reading it back gives)."""
    return json.loads(json.dumps(value, default=str))


# --- reading -----------------------------------------------------------------------------------


def read_lock(path: Path, *, make_hint: str = "devall tools lock") -> dict[str, Any]:
    """The servers of the lockfile at `path` (by id); a located ConfigError (exit 3) when it is
    missing or is not a lockfile."""
    from devall_cli import json_limits

    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{where}: no lockfile here (write it with '{make_hint}')") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot read the lockfile: {exc}") from None
    try:
        document = json_limits.loads(text)
    except json_limits.JsonLimitError as exc:
        raise ConfigError.from_issues([ConfigIssue(f"the lockfile {exc}", file=where)]) from None
    except json.JSONDecodeError as exc:
        issue = ConfigIssue(f"not valid JSON: {exc.msg}", file=where, line=exc.lineno,
                            col=exc.colno)
        raise ConfigError.from_issues([issue]) from None
    issues = [ConfigIssue(message, path=at, file=where) for at, message in lock_problems(document)]
    if issues:
        raise ConfigError.from_issues(issues)
    servers: dict[str, Any] = document["servers"]
    return servers


# What each entry of a tool must be, when present.
_TOOL_FIELDS: dict[str, tuple[type, ...]] = {
    "title": (str, type(None)),
    "description": (str, type(None)),
    "description_sha256": (str, type(None)),
    "input_schema": (dict, type(None)),
    "output_schema": (dict, type(None)),
    "annotations": (dict, type(None)),
    "task_support": (str, type(None)),
}
_SECTIONS = ("resources", "resource_templates", "prompts")


def lock_problems(document: Any) -> list[tuple[str, str]]:
    """Every (path, problem) that keeps `document` from being a lockfile of this version."""
    if not isinstance(document, dict):
        return [("", "a lockfile is a JSON object with `version` and `servers`")]
    problems: list[tuple[str, str]] = []
    if document.get("version") != LOCK_VERSION:
        got = json.dumps(document.get("version"))
        problems.append(("version", f"must be {LOCK_VERSION} (this devall's format), not {got}"))
    servers = document.get("servers")
    if not isinstance(servers, dict):
        return [*problems, ("servers", "must be an object of servers by id")]
    for server_id, server in servers.items():
        at = f"servers.{server_id}"
        if not isinstance(server, dict):
            problems.append((at, "must be an object"))
            continue
        problems += _section_problems(server, "tools", at)
        for name, tool in (server.get("tools") or {}).items():
            if isinstance(tool, dict):
                problems += [
                    (f"{at}.tools.{name}.{key}", f"must be {_kinds(kinds)}")
                    for key, kinds in _TOOL_FIELDS.items()
                    if key in tool and not isinstance(tool[key], kinds)
                ]
        for section in _SECTIONS:
            if section in server:
                problems += _section_problems(server, section, at)
    return problems


def _section_problems(server: dict[str, Any], section: str, at: str) -> list[tuple[str, str]]:
    value = server.get(section)
    if section == "tools" and value is None:
        return [(f"{at}.tools", "is missing (an object of tools by name)")]
    if not isinstance(value, dict):
        return [(f"{at}.{section}", "must be an object")]
    return [
        (f"{at}.{section}.{key}", "must be an object")
        for key, item in value.items()
        if not isinstance(item, dict)
    ]


def _kinds(kinds: tuple[type, ...]) -> str:
    names = {str: "a string", dict: "an object", type(None): "null"}
    return " or ".join(names[kind] for kind in kinds)


# --- the live surface ----------------------------------------------------------------------------


def server_plans(workflow: Workflow) -> list[SourcePlan]:
    """The MCP servers a workflow declares (function tooling has no server to lock)."""
    return [p for p in plan_sources(workflow).sources if tooling_type(p.tooling).is_server]


async def live_servers(workflow: Workflow) -> dict[str, Any]:
    """Start every MCP server of the workflow once, concurrently, and take its surface: the
    server entries (by id) a lockfile holds, secrets masked. A server that cannot be reached
    raises its DevallConnectionError (exit 4) once all are closed."""
    from devall_cli.tools.head_start import HeadStart

    plans = server_plans(workflow)
    head_start = HeadStart()
    ctx = SourceContext(
        workflow_dir=workflow.directory,
        redact=workflow.redactor.text,
        reveal=workflow.redactor.add,
        interactive=False,
        head_start=head_start,
        stop_at_once=True,
    )
    try:
        await head_start.spawn(plans, ctx)  # local servers start while the client is imported
        found = await asyncio.gather(
            *(_one_server(plan, ctx, workflow.redactor.text) for plan in plans),
            return_exceptions=True,
        )
    finally:
        await head_start.close()
    for outcome in found:
        if isinstance(outcome, BaseException):
            raise outcome
    entries = {plan.id: entry for plan, entry in zip(plans, found, strict=True)}
    return dict(lock_document(entries, workflow.redactor.value)["servers"])


async def _one_server(plan: SourcePlan, ctx: SourceContext, mask: Mask) -> dict[str, Any]:
    source = build_source(plan, replace(ctx, direct_client=False))
    try:
        info = await source.start()
        tools = await source.list_tools()
        return await surface_of(plan, source, info, tools, mask)
    finally:
        with contextlib.suppress(Exception):
            await source.close()


async def surface_of(
    plan: SourcePlan, source: ToolSource, info: ServerInfo, tools: Sequence[RawTool], mask: Mask
) -> dict[str, Any]:
    """The entry of a started server whose tools are listed: with its version and, when it
    offers them, its resources, resource templates and prompts (asked of it now)."""
    request = getattr(source, "request", None)
    if request is None:  # a source with no MCP session of its own
        return server_entry(plan, info, tools, mask)
    version, offers = await request(_server_facts)
    listings = await _listings(plan, source, offers)
    return server_entry(plan, info, tools, mask, version=version, listings=listings)


async def _server_facts(client: Any) -> tuple[str | None, set[str]]:
    """The server's version, and which of `resources` and `prompts` it offers."""
    server = client.server_info
    capabilities = client.server_capabilities
    offers = {
        name for name in ("resources", "prompts") if getattr(capabilities, name, None) is not None
    }
    version = getattr(server, "version", None)
    return (version if isinstance(version, str) else None), offers


async def _listings(
    plan: SourcePlan, source: ToolSource, offers: set[str]
) -> dict[str, list[dict[str, Any]]]:
    from devall_cli.tools.mcp_extras import Listing, Server, list_items

    wanted: tuple[tuple[str, str, Listing], ...] = (
        ("resources", "resources", "resources"),
        ("resource_templates", "resources", "templates"),
        ("prompts", "prompts", "prompts"),
    )
    found: dict[str, list[dict[str, Any]]] = {}
    for section, capability, what in wanted:
        if capability in offers:
            listed = await list_items([Server(plan, source)], what)
            if not listed.missing:
                rows = [{k: v for k, v in r.items() if k != "server"} for r in listed.rows]
                found[section] = rows
    return found
