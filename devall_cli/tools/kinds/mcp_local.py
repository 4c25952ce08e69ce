"""`type: mcp_local`: a local MCP server program spoken to over stdio (SPEC.md §4)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from devall_cli.config.file_probe import is_dir, is_file
from devall_cli.config.json_shapes import Schema, array_of, keys_object
from devall_cli.config.model import EMPTY, frozen_mapping
from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import (
    Checker,
    KeySpec,
    as_bool,
    check_keys,
    describe,
    opt_bool,
    opt_int,
    opt_number,
    opt_regex,
    opt_str,
    opt_str_list,
    opt_str_map,
)
from devall_cli.config.yaml_source import KeyPath
from devall_cli.errors import DevallError
from devall_cli.procs.sandbox import SANDBOX_OFF, SandboxConfig
from devall_cli.redaction import flag_secrets
from devall_cli.tools.kinds.client_settings import (
    CLIENT_KEYS,
    DEFAULT_CLIENT,
    McpClientConfig,
    client_shapes,
    parse_client_config,
    tool_sources_of,
)
from devall_cli.tools.kinds.registry import TOOLING_TYPES, ToolingType, opt_cache_ttl
from devall_cli.tools.start_hints import local_start_hint

if TYPE_CHECKING:
    from devall_cli.tools.base import ToolSource
    from devall_cli.tools.plan import SourceContext


STARTUP_TIMEOUT = 10.0
# A program that fetches the package it runs (`npx -y pkg`, `uvx pkg`) may download it first.
FETCHING_STARTUP_TIMEOUT = 60.0
_FETCHERS = frozenset({"npx", "uvx", "bunx"})
_FETCHING_SUBCOMMANDS = {"pnpm": "dlx", "yarn": "dlx", "bun": "x"}


def fetches_package(command: str, args: Sequence[str]) -> bool:
    """Whether the command runs a package its program may download first (`npx`, `uvx`,
    `bunx`, `pnpm dlx`, `yarn dlx`, `bun x`)."""
    program = PurePosixPath(command).name
    if program in _FETCHERS:
        return True
    words = [arg for arg in args if not arg.startswith("-")]
    return bool(words) and _FETCHING_SUBCOMMANDS.get(program) == words[0]


def default_startup_timeout(command: str, args: Sequence[str]) -> float:
    """The `startup_timeout` of an entry that sets none: longer for a package fetcher."""
    return FETCHING_STARTUP_TIMEOUT if fetches_package(command, args) else STARTUP_TIMEOUT


@dataclass(frozen=True)
class McpLocalConfig:
    """`tooling[].config` of `type: mcp_local`."""

    command: str
    args: tuple[str, ...] = ()
    cwd: str | None = None  # absolute after loading (relative paths resolve against the workflow)
    env: Mapping[str, str] = EMPTY
    inherit_env: bool = True
    startup_timeout: float = STARTUP_TIMEOUT
    wait_for_log: str | None = None
    cache_ttl: float | None = None  # None: the server's cache hint, else 0
    tool_sources: tuple[str, ...] = ("mcp_tools",)
    max_concurrency: int = 1
    call_timeout: float = 60.0
    max_restarts: int = 1
    client: McpClientConfig = DEFAULT_CLIENT  # elicitation, sampling, roots, log_level
    sandbox: SandboxConfig | None = None  # None: not set, the CLI default applies
    # The folder of the file that declares the entry: a sandboxed server sees it (read-only).
    base_dir: str | None = field(default=None, compare=False)

    def identity(self) -> tuple[Any, ...]:
        """Entries with the same identity share one process per run."""
        return (
            "mcp_local",
            self.command,
            self.args,
            self.cwd,
            tuple(sorted(self.env.items())),
            self.inherit_env,
            self.startup_timeout,
            self.wait_for_log,
            self.client,
            self.sandbox,
        )

    def display_target(self) -> str:
        """The command line, as shown in tables and traces."""
        import shlex

        return shlex.join([self.command, *self.args])


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
            "sandbox",
        }
    )
    | CLIENT_KEYS
)


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
        startup_timeout=opt_number(
            ck,
            config,
            "startup_timeout",
            path,
            default_startup_timeout(command or "", args),
            positive=True,
        ),
        wait_for_log=opt_regex(ck, config, "wait_for_log", path),
        cache_ttl=opt_cache_ttl(ck, config, path),
        tool_sources=tool_sources_of(ck, config, path),
        max_concurrency=opt_int(ck, config, "max_concurrency", path, 1, minimum=1),
        call_timeout=opt_number(ck, config, "call_timeout", path, 60.0, positive=True),
        max_restarts=opt_int(ck, config, "max_restarts", path, 1, minimum=0),
        client=parse_client_config(ck, config, path),
        sandbox=parse_sandbox(ck, config, path),
        base_dir=str(ck.file_dir),
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
    if not is_dir(resolved):
        ck.warning((*path, "cwd"), f"cwd {resolved} is not a directory; the server will not start")
    return str(resolved)


# --- sandbox: (shared with the python node) -------------------------------------------------

SANDBOX_KEYS = KeySpec(known=frozenset({"mode", "network", "env", "read", "write"}))
_SANDBOX_MODES = ("require", "prefer")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_sandbox(ck: Checker, config: Mapping[str, Any], path: KeyPath) -> SandboxConfig | None:
    """`sandbox:` false, true (= require), prefer, require, or a mapping `{mode, network, env,
    read, write}`; None when it is not set (the CLI default applies)."""
    value = config.get("sandbox")
    here = (*path, "sandbox")
    if value is None or value is UNRESOLVED:
        return None
    if isinstance(value, str) and value.strip().lower() in _SANDBOX_MODES:
        return SandboxConfig(mode=value.strip().lower())
    flag = as_bool(value)
    if flag is not None:
        return SandboxConfig() if flag else SANDBOX_OFF
    if not isinstance(value, dict):
        ck.error(
            here,
            "sandbox must be true, false, prefer, require or a mapping (mode, network, env, "
            f"read, write), got {describe(value)}",
        )
        return None
    check_keys(ck, value, here, SANDBOX_KEYS)
    mode = opt_str(ck, value, "mode", here) or "require"
    if mode.strip().lower() not in _SANDBOX_MODES:
        ck.error((*here, "mode"), f"mode must be require or prefer, got {describe(mode)}")
    names = opt_str_list(ck, value, "env", here)
    for index, name in enumerate(names):
        if not _ENV_NAME.fullmatch(name):
            message = f"every item of env must be a variable name, got {describe(name)}"
            ck.error((*here, "env", index), message)
    return SandboxConfig(
        mode=mode.strip().lower() if mode.strip().lower() in _SANDBOX_MODES else "require",
        network=opt_bool(ck, value, "network", here, False),
        env=names,
        read=_sandbox_paths(ck, value, "read", here),
        write=_sandbox_paths(ck, value, "write", here),
    )


def _sandbox_paths(
    ck: Checker, value: Mapping[str, Any], key: str, here: KeyPath
) -> tuple[str, ...]:
    """Absolute paths (`~` expanded, relative ones from the workflow's folder)."""
    paths: list[str] = []
    for index, item in enumerate(opt_str_list(ck, value, key, here)):
        if not item.strip():
            ck.error((*here, key, index), f"every item of {key} must be a path, got ''")
            continue
        resolved = (ck.file_dir / os.path.expanduser(item.strip())).resolve()
        if not (is_dir(resolved) or is_file(resolved)):
            ck.warning((*here, key, index), f"{resolved} does not exist; it is not bound")
        paths.append(str(resolved))
    return tuple(paths)


def sandbox_shape() -> Schema:
    """`sandbox:` for `devall schema`: a word (or boolean), or the mapping."""
    text_list = array_of({"type": "string"})
    shapes = {"mode": {"enum": list(_SANDBOX_MODES)}, "env": text_list}
    shapes.update(read=text_list, write=text_list)
    mapping = keys_object(SANDBOX_KEYS, strict=True, shapes=shapes)
    return {"anyOf": [{"type": ["boolean", "string", "null"]}, mapping]}


def _shapes() -> dict[str, Schema]:
    return {**client_shapes(), "sandbox": sandbox_shape()}


def _start_hint(settings: McpLocalConfig, error: DevallError, where: str) -> str:
    """The error's own hint (a sandbox that cannot run says how to fix it), else the usual."""
    return error.hint or local_start_hint(settings, error, where)


def make_local_source(source_id: str, settings: McpLocalConfig, ctx: SourceContext) -> ToolSource:
    """A supervised local server process (spoken to by the light client where it is enough)."""
    from devall_cli.tools.head_start import local_client, local_log_path
    from devall_cli.tools.mcp_local import LocalSource

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
        process=ctx.head_start.take(source_id) if ctx.head_start is not None else None,
        stop_at_once=ctx.stop_at_once,
        client=local_client(ctx),
        workflow_dir=readable_dir(settings, ctx),
    )


def readable_dir(settings: McpLocalConfig, ctx: SourceContext) -> str | None:
    """The folder a sandboxed server sees read-only: its declaring file's, else the run's."""
    if settings.base_dir is not None:
        return settings.base_dir
    return str(ctx.workflow_dir) if ctx.workflow_dir is not None else None


def make_local_process(source_id: str, settings: McpLocalConfig, ctx: SourceContext) -> Any:
    """The local server's process, spawned before the MCP client stack is imported."""
    from devall_cli.tools.head_start import new_local_process

    return new_local_process(source_id, settings, ctx)


# Arguments that name the script a command runs: the server's name is the script's.
_SCRIPT_SUFFIXES = frozenset(
    {".py", ".js", ".mjs", ".cjs", ".ts", ".mts", ".rb", ".sh", ".pl", ".php", ".jar"}
)
# Words of a runner that come before what it runs (`uv run`, `pnpm dlx`, `docker run`, `bun x`).
_RUNNER_WORDS = frozenset({"run", "dlx", "x", "exec", "tool"})


def local_name(settings: McpLocalConfig) -> str:
    """What the command runs: its script's name (its package's, for a script under
    `node_modules`), else the module of `-m`, else the package a runner is given (`npx -y
    @scope/server-x` → `server-x`), else the command's name. Flag values, numbers and paths
    given to the server (`--pages 2`, a folder to serve) never name it."""
    words = [a for a in settings.args if not a.startswith("-")]
    package = next((name for name in map(node_package, words) if name), None)
    if package:
        return package
    script = next((w for w in words if PurePosixPath(w).suffix.lower() in _SCRIPT_SUFFIXES), None)
    if script is not None:
        return PurePosixPath(script).stem
    args = list(settings.args)
    if "-m" in args[:-1]:
        return args[args.index("-m") + 1]
    named = next((w for w in _leading_words(args) if w not in _RUNNER_WORDS), None)
    if named is not None and not named.startswith(("/", ".", "~")) and not named.isdigit():
        return _package_name(named)
    return PurePosixPath(settings.command).name


def _leading_words(args: list[str]) -> list[str]:
    """The words before the first flag that takes a value: `-y pkg --pages 2` → `pkg`."""
    words: list[str] = []
    for arg in args:
        if arg.startswith("-"):
            if words:
                break  # what follows may be this flag's value (`--pages 2`)
            continue
        words.append(arg)
    return words


def _package_name(word: str) -> str:
    """`@scope/server-x@1.2` → `server-x`, `mcp-server-time==2025.1` → `mcp-server-time`,
    `mcp/time:latest` → `time`."""
    name = word.rsplit("/", 1)[-1]
    for mark in ("==", "@", ":"):
        name = name.split(mark, 1)[0] if not name.startswith(mark) else name
    return name or word


def node_package(path: str) -> str | None:
    """The npm package a path under `node_modules` is part of, else None.

    `.../node_modules/@scope/server-x/dist/index.js` → `server-x`, `node_modules/.bin/tool` →
    `tool`: the script's own name there (`index`, `dist`) says nothing of the server.
    """
    parts = PurePosixPath(path).parts
    if "node_modules" not in parts:
        return None
    rest = parts[len(parts) - parts[::-1].index("node_modules") :]
    if rest and (rest[0].startswith("@") or rest[0] == ".bin"):
        rest = rest[1:]  # a scope, or the folder of the packages' commands
    return rest[0] if rest else None


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
        roots=lambda settings: settings.client.roots,
        start_hint=_start_hint,
        timeout_status="startup_timeout",  # the process did not get ready
        shapes=_shapes,
    )
)
