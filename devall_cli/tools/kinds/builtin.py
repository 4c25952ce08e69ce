"""The built-in tooling types: `mcp_remote`, `mcp_local` and `function` (SPEC.md §4)."""

from __future__ import annotations

import os
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from devall_cli.config.function_dirs import TOOLS, FunctionFolder, locate
from devall_cli.config.json_shapes import array_of, keys_object
from devall_cli.config.model import frozen_mapping
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
    opt_regex,
    opt_str,
    opt_str_list,
    opt_str_map,
)
from devall_cli.config.yaml_source import KeyPath
from devall_cli.redaction import flag_secrets
from devall_cli.tools.kinds.client_settings import CLIENT_KEYS, client_shapes, parse_client_config
from devall_cli.tools.kinds.oauth_settings import OAuthConfig, auth_shape, parse_auth
from devall_cli.tools.kinds.registry import TOOLING_TYPES, ToolingType
from devall_cli.tools.kinds.settings import (
    FunctionRef,
    FunctionToolingConfig,
    McpLocalConfig,
    McpRemoteConfig,
)
from devall_cli.tools.start_hints import local_start_hint, remote_start_hint

if TYPE_CHECKING:
    from devall_cli.tools.base import ToolSource
    from devall_cli.tools.plan import SourceContext

DEFAULT_TOOL_SOURCES = ("mcp_tools",)

_REMOTE_KEYS = KeySpec(
    known=frozenset({"server", "headers", "timeout", "cache_ttl", "tool_sources", "auth"})
    | CLIENT_KEYS
)
_LOCAL_KEYS = KeySpec(
    known=frozenset(
        {
            "command",
            "args",
            "cwd",
            "env",
            "inherit_env",
            "startup_timeout",
            "wait_for_log",
            "cache_ttl",
            "tool_sources",
            "max_concurrency",
            "call_timeout",
            "max_restarts",
        }
    )
    | CLIENT_KEYS
)
_FUNCTION_KEYS = KeySpec(known=frozenset({"tools", "timeout"}), ignored=frozenset({"auto_load"}))
_FUNCTION_REF_KEYS = KeySpec(
    known=frozenset({"name"}),
    noted={
        key: f"'{key}' of a function tool has no effect in devall (ignored)"
        for key in ("description", "parameters", "auto_fill")
    },
)


def _tool_sources(ck: Checker, config: dict[str, Any], path: KeyPath) -> tuple[str, ...]:
    value = config.get("tool_sources")
    if isinstance(value, str):  # ChatDev accepts a single name too
        return (value,)
    sources = opt_str_list(ck, config, "tool_sources", path, DEFAULT_TOOL_SOURCES)
    return tuple(s.strip() for s in sources if s.strip())


def parse_mcp_remote(ck: Checker, config: dict[str, Any], path: KeyPath) -> McpRemoteConfig | None:
    """`type: mcp_remote`: an MCP server reached over HTTP(S)."""
    check_keys(ck, config, path, _REMOTE_KEYS)
    server = opt_str(ck, config, "server", path, required=True)
    if server is not None and not is_http_url(server):
        ck.error(
            (*path, "server"),
            f"server must be an http:// or https:// URL, got {describe(server)}",
        )
        server = None
    headers = opt_str_map(ck, config, "headers", path, secret_names=True)
    timeout = opt_number(ck, config, "timeout", path, 10.0, positive=True)
    cache_ttl = opt_number(ck, config, "cache_ttl", path, 0.0, minimum=0)
    sources = _tool_sources(ck, config, path)
    auth = _auth(ck, config, headers, path)
    client = parse_client_config(ck, config, path)
    if server is None or auth is _BAD_AUTH:
        return None
    ck.secret_url(server)
    return McpRemoteConfig(
        server=server.strip(),
        headers=frozen_mapping(headers),
        timeout=timeout,
        cache_ttl=cache_ttl,
        tool_sources=sources,
        auth=auth if isinstance(auth, OAuthConfig) else None,
        client=client,
    )


_BAD_AUTH = object()


def _auth(
    ck: Checker, config: dict[str, Any], headers: dict[str, str], path: KeyPath
) -> OAuthConfig | object | None:
    """The `auth:` mapping: None when absent, `_BAD_AUTH` after reporting its problems."""
    raw = config.get("auth")
    if raw is None or raw is UNRESOLVED:
        return None
    here = (*path, "auth")
    auth = parse_auth(ck, raw, here)
    if auth is None:
        return _BAD_AUTH
    if any(name.lower() == "authorization" for name in headers):
        ck.warning(here, "headers.Authorization is replaced by the OAuth access token", at_key=True)
    return auth


def parse_mcp_local(ck: Checker, config: dict[str, Any], path: KeyPath) -> McpLocalConfig | None:
    """`type: mcp_local`: a local program spoken to over stdio, kept alive for the run."""
    check_keys(ck, config, path, _LOCAL_KEYS)
    command = opt_str(ck, config, "command", path, required=True)
    args = _args(ck, config, path)
    ck.secrets.update(flag_secrets(args))
    cwd = _cwd(ck, config, path)
    env = opt_str_map(ck, config, "env", path, secret_names=True)
    settings = McpLocalConfig(
        command=command or "",
        args=args,
        cwd=cwd,
        env=frozen_mapping(env),
        inherit_env=opt_bool(ck, config, "inherit_env", path, True),
        startup_timeout=opt_number(ck, config, "startup_timeout", path, 10.0, positive=True),
        wait_for_log=opt_regex(ck, config, "wait_for_log", path),
        cache_ttl=opt_number(ck, config, "cache_ttl", path, 0.0, minimum=0),
        tool_sources=_tool_sources(ck, config, path),
        max_concurrency=opt_int(ck, config, "max_concurrency", path, 1, minimum=1),
        call_timeout=opt_number(ck, config, "call_timeout", path, 60.0, positive=True),
        max_restarts=opt_int(ck, config, "max_restarts", path, 1, minimum=0),
        client=parse_client_config(ck, config, path),
    )
    return settings if command is not None else None


def _args(ck: Checker, config: dict[str, Any], path: KeyPath) -> tuple[str, ...]:
    value = config.get("args")
    if isinstance(value, str):
        ck.error(
            (*path, "args"),
            f"args must be a list of text items, got {describe(value)} "
            f"(write args: [{value!r}] or one item per argument)",
        )
        return ()
    return opt_str_list(ck, config, "args", path)


def _cwd(ck: Checker, config: dict[str, Any], path: KeyPath) -> str | None:
    cwd = opt_str(ck, config, "cwd", path)
    if cwd is None or not cwd.strip():
        return None
    resolved = (ck.file_dir / os.path.expanduser(cwd.strip())).resolve()
    if not resolved.is_dir():
        ck.warning((*path, "cwd"), f"cwd {resolved} is not a directory; the server will not start")
    return str(resolved)


def functions_folder(ck: Checker, kind: str = TOOLS) -> FunctionFolder:
    """Where functions of `kind` are looked for, for the workflow being loaded."""
    return locate(kind, ck.workflow_dir, ck.environ)


def parse_function(
    ck: Checker, config: dict[str, Any], path: KeyPath
) -> FunctionToolingConfig | None:
    """`type: function`: Python functions from the functions directory.

    Every reference is checked, also when others are wrong, and each problem is reported at the
    entry that names it.
    """
    check_keys(ck, config, path, _FUNCTION_KEYS)
    refs = _function_refs(ck, config, path)
    timeout = opt_number(ck, config, "timeout", path, 30.0, positive=True)
    if refs is None:
        return None
    folder = functions_folder(ck)
    usable = tuple(ref for _, ref in refs)
    names = _resolve_functions(ck, folder, refs, path)
    if names is None or len(usable) != len(_entries(config)):
        return None
    ck.static_tool_names[path[:-1]] = names
    return FunctionToolingConfig(tools=usable, timeout=timeout, folder=folder)


def _entries(config: dict[str, Any]) -> list[Any]:
    tools = config.get("tools")
    return tools if isinstance(tools, list) else []


def _function_refs(
    ck: Checker, config: dict[str, Any], path: KeyPath
) -> list[tuple[int, FunctionRef]] | None:
    """(index in `tools`, reference) of every well-formed entry; None when `tools` is unusable."""
    tools = config.get("tools")
    here = (*path, "tools")
    if tools is UNRESOLVED:
        return None
    if tools is None or tools == []:
        ck.error(here, "tools is required: list the functions, e.g. tools: [{name: get_weather}]")
        return None
    if not isinstance(tools, list):
        ck.error(here, f"tools must be a list of {{name: ...}} entries, got {describe(tools)}")
        return None
    refs: list[tuple[int, FunctionRef]] = []
    for index, item in enumerate(tools):
        entry = get_mapping(ck, item, (*here, index), "a function tool entry")
        if entry is None:
            continue
        check_keys(ck, entry, (*here, index), _FUNCTION_REF_KEYS)
        name = opt_str(ck, entry, "name", (*here, index), required=True)
        if name is not None:
            refs.append((index, FunctionRef(name.strip())))
    return refs


def _resolve_functions(
    ck: Checker,
    folder: FunctionFolder,
    refs: list[tuple[int, FunctionRef]],
    path: KeyPath,
) -> list[str] | None:
    """The final function names, or None after reporting every reason they cannot be resolved."""
    from devall_cli.config.functions import resolve_functions

    infos, problems = resolve_functions(folder, [ref for _, ref in refs])
    for problem in problems:
        where: KeyPath = (*path, "tools")
        if problem.index is not None:
            where = (*where, refs[problem.index][0], "name")
        ck.error(where, problem.message)
    for info in infos:
        for warning in info.warnings:
            ck.warning((*path, "tools", refs[info.ref_index][0], "name"), warning)
    return None if problems else [info.name for info in infos]


# --- runtime: each type makes its source (the heavy modules are imported only here) ------


def make_remote_source(source_id: str, settings: McpRemoteConfig, ctx: SourceContext) -> ToolSource:
    """A session with a remote server."""
    from devall_cli.tools.mcp_remote import RemoteSource

    return RemoteSource(
        id=source_id,
        config=settings,
        store=ctx.store,
        on_log=ctx.on_log,
        on_auth=ctx.on_auth,
        reveal=ctx.reveal,
        interactive=ctx.interactive,
        events=ctx.events,
        elicitor=ctx.elicitor,
        workflow_dir=ctx.workflow_dir,
    )


def make_local_source(source_id: str, settings: McpLocalConfig, ctx: SourceContext) -> ToolSource:
    """A supervised local server process (spoken to by the light client where it is enough)."""
    from devall_cli.tools.head_start import local_log_path, uses_direct_client

    if uses_direct_client(ctx):
        from devall_cli.tools.mcp_direct import DirectLocalSource as LocalSource
    else:
        from devall_cli.tools.mcp_local import LocalSource  # type: ignore[assignment]

    return LocalSource(
        id=source_id,
        config=settings,
        store=ctx.store,
        on_log=ctx.on_log,
        log_path=local_log_path(source_id, ctx.run_dir),
        on_restart=ctx.on_restart,
        redact=ctx.redact,
        events=ctx.events,
        elicitor=ctx.elicitor,
        workflow_dir=ctx.workflow_dir,
        process=ctx.head_start.take(source_id) if ctx.head_start is not None else None,
        stop_at_once=ctx.stop_at_once,
    )


def make_local_process(source_id: str, settings: McpLocalConfig, ctx: SourceContext) -> Any:
    """The local server's process, spawned before the MCP client stack is imported."""
    from devall_cli.tools.head_start import new_local_process

    return new_local_process(source_id, settings, ctx)


def make_function_source(
    source_id: str, settings: FunctionToolingConfig, ctx: SourceContext
) -> ToolSource:
    """The functions of a functions directory."""
    from devall_cli.tools.functions import FunctionSource

    context = {
        "run_id": ctx.run_id,
        "workflow_dir": ctx.workflow_dir,
        "attachment_store": ctx.store,
    }
    return FunctionSource(
        id=source_id,
        config=settings,
        store=ctx.store,
        context=context,
        import_modules=ctx.import_functions,
    )


def remote_name(settings: McpRemoteConfig) -> str:
    """`host:port` of the URL, as written in it."""
    parts = urlsplit(settings.server)
    host = parts.hostname or "remote"
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{host}:{port}" if port else host


def local_name(settings: McpLocalConfig) -> str:
    """The script's name, else the command's."""
    scripts = [a for a in settings.args if not a.startswith("-")]
    return PurePosixPath(scripts[-1]).stem if scripts else PurePosixPath(settings.command).name


TOOLING_TYPES.register(
    ToolingType(
        "mcp_remote",
        parse_mcp_remote,
        "an MCP server reached over HTTP(S)",
        keys=_REMOTE_KEYS,
        make_source=make_remote_source,
        base_name=remote_name,
        cache_ttl=lambda settings: settings.cache_ttl,
        start_hint=remote_start_hint,
        shapes=lambda: {**client_shapes(), "auth": auth_shape()},
    )
)
TOOLING_TYPES.register(
    ToolingType(
        "mcp_local",
        parse_mcp_local,
        "a local MCP server program spoken to over stdio",
        keys=_LOCAL_KEYS,
        make_source=make_local_source,
        early_process=make_local_process,
        base_name=local_name,
        cache_ttl=lambda settings: settings.cache_ttl,
        start_hint=local_start_hint,
        timeout_status="startup_timeout",  # the process did not get ready
        shapes=client_shapes,
    )
)
TOOLING_TYPES.register(
    ToolingType(
        "function",
        parse_function,
        "Python functions from the functions directory",
        keys=_FUNCTION_KEYS,
        make_source=make_function_source,
        base_name=lambda settings: "functions",
        is_server=False,
        shapes=lambda: {"tools": array_of(keys_object(_FUNCTION_REF_KEYS, strict=True))},
    )
)
