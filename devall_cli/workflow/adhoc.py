"""Ad-hoc targets: servers named on the command line (or in an mcpServers file) as a workflow.

`devall tools list --command 'npx -y @scope/server'` and its kin need what a workflow gives
them: sources to start and nodes that see them. An ad-hoc target becomes a synthetic workflow
of one node per server (the node's id is the server's readable name), whose tooling entry is
checked by the same parser as a workflow's `mcp_local` / `mcp_remote` entry. A problem in a
command-line value is a usage error naming the option; a problem in a file is a config error
located in it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from devall_cli.config.model import GraphConfig, NodeConfig, ToolingConfig, Workflow
from devall_cli.config.schema import Checker
from devall_cli.config.yaml_source import SourceDocument
from devall_cli.errors import UsageError
from devall_cli.nodes.agent_settings import AgentConfig
from devall_cli.redaction import Redactor
from devall_cli.text import safe_id
from devall_cli.tools.kinds.mcp_local import McpLocalConfig, node_package, parse_mcp_local
from devall_cli.tools.kinds.mcp_remote import parse_mcp_remote
from devall_cli.tools.kinds.mcp_servers import load_servers_file

# Which option each key of the tooling config came from, for usage errors.
_OPTION_OF = {
    "server": "--url",
    "headers": "--header",
    "command": "--command",
    "args": "--command",
    "env": "--env",
    "cwd": "--cwd",
    "wait_for_log": "--wait-for-log",
    "startup_timeout": "--startup-timeout",
    "timeout": "--timeout",
}
_PYTHON = re.compile(r"python[0-9.]*")
_RUNNERS = frozenset(
    {"npx", "uvx", "uv", "pipx", "node", "bunx", "bun", "deno", "docker", "pnpm", "npm", "yarn"}
)
_SUBCOMMANDS = frozenset({"run", "x", "exec", "tool", "dlx", "start"})
_GENERIC = frozenset(
    {"index", "main", "__main__", "server", "cli", "stdio", "dist", "build", "src", "lib", "bin"}
)


@dataclass(frozen=True)
class AdhocTarget:
    """The ad-hoc target options of a command (at most one of url, command, mcp_config)."""

    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    command: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    wait_for_log: str | None = None
    startup_timeout: float | None = None
    timeout: float | None = None  # request timeout of a remote server
    mcp_config: Path | None = None
    servers: tuple[str, ...] = ()

    @property
    def given(self) -> bool:
        """Whether any server is named on the command line."""
        return any(x is not None for x in (self.url, self.command, self.mcp_config))


def adhoc_workflow(
    target: AdhocTarget, *, environ: Mapping[str, str], values: Mapping[str, str]
) -> Workflow:
    """A synthetic workflow with one node per server of the target."""
    if target.mcp_config is not None:
        servers, secrets = _file_servers(target, environ, values)
    else:
        tooling, secrets = _option_server(target)
        servers = [(tooling.name or _fallback_name(tooling), tooling)]
    nodes = tuple(
        NodeConfig(
            id=name,
            type="agent",
            config=AgentConfig(provider="scripted", name="adhoc", tooling=(tooling,)),
            path=tooling.path,
        )
        for name, tooling in servers
    )
    graph = GraphConfig(nodes=nodes, start=(nodes[0].id,), id="adhoc")
    return Workflow(graph=graph, path=Path.cwd() / "adhoc", redactor=Redactor(secrets))


def _file_servers(
    target: AdhocTarget, environ: Mapping[str, str], values: Mapping[str, str]
) -> tuple[list[tuple[str, ToolingConfig]], set[str]]:
    assert target.mcp_config is not None
    servers_file, ck = load_servers_file(
        target.mcp_config,
        str(target.mcp_config),
        environ=environ,
        values=values,
        only=target.servers or None,
    )
    known = list(servers_file.names)
    if target.servers:
        target = replace(target, servers=tuple(_as_keyed(n, known) for n in target.servers))
        unknown = [name for name in target.servers if name not in servers_file.servers]
        if unknown:
            raise UsageError(
                f"--server: no server {', '.join(repr(n) for n in unknown)} in "
                f"{target.mcp_config} (servers: {', '.join(known) or 'none'})"
            )
        chosen = list(dict.fromkeys(target.servers))
    else:
        chosen = [name for name in known if name not in servers_file.disabled]
    if not chosen:
        raise UsageError(f"--mcp-config: {target.mcp_config} names no enabled server")
    return [(name, servers_file.servers[name]) for name in chosen], set(ck.secrets)


def _as_keyed(name: str, known: list[str]) -> str:
    """The file's key for a server named as its id shows it, when exactly one key matches."""
    if name in known:
        return name
    matches = [key for key in known if safe_id(key) == name]
    return matches[0] if len(matches) == 1 else name


def _option_server(target: AdhocTarget) -> tuple[ToolingConfig, set[str]]:
    """The one server of --url or --command, checked like a workflow's entry."""
    raw: dict[str, Any]
    if target.url is not None:
        raw = {"server": target.url, "headers": dict(target.headers)}
        if target.timeout is not None:
            raw["timeout"] = target.timeout
        kind = "mcp_remote"
    else:
        assert target.command is not None
        try:
            argv = shlex.split(target.command)
        except ValueError as exc:
            raise UsageError(f"--command: cannot split {target.command!r}: {exc}") from None
        if not argv:
            raise UsageError("--command: the command is empty")
        raw = {"command": argv[0], "args": argv[1:], "env": dict(target.env)}
        optional = {
            "cwd": target.cwd,
            "wait_for_log": target.wait_for_log,
            "startup_timeout": target.startup_timeout,
        }
        raw.update({key: value for key, value in optional.items() if value is not None})
        kind = "mcp_local"
    doc = SourceDocument(data=raw, file="command line")
    ck = Checker(doc, workflow_dir=Path.cwd())
    settings: Any = (parse_mcp_remote if kind == "mcp_remote" else parse_mcp_local)(ck, raw, ())
    errors = [issue for issue in ck.issues if issue.severity == "error"]
    if errors or settings is None:
        raise UsageError("; ".join(_option_message(issue.path, issue.message) for issue in errors))
    name = None
    if isinstance(settings, McpLocalConfig):
        name = command_name(settings.command, settings.args)
    return ToolingConfig(type=kind, config=settings, path="command line", name=name), ck.secrets


def _option_message(path: str, message: str) -> str:
    key = path.split(".", 1)[0].split("[", 1)[0]
    return f"{_OPTION_OF.get(key, key)}: {message}" if key else message


def _fallback_name(tooling: ToolingConfig) -> str:
    from devall_cli.tools.kinds.registry import TOOLING_TYPES

    return TOOLING_TYPES.all()[tooling.type].base_name(tooling.config)


def command_name(command: str, args: Sequence[str]) -> str:
    """A readable server id for a command line: the package or script it runs.

    `npx -y @modelcontextprotocol/server-everything` → `server-everything`,
    `python -m mcp_server_git` → `mcp_server_git`, `node pkg/dist/index.js` → `pkg`,
    `node .../node_modules/@scope/server-x/dist/index.js` → `server-x`.
    """
    program = PurePosixPath(command).name
    if _PYTHON.fullmatch(program) or program in _RUNNERS:
        words = [a for a in args if not a.startswith("-") and a not in _SUBCOMMANDS]
        if words:
            return node_package(words[0]) or _readable(words[0]) or program
    return node_package(command) or _readable(command) or "server"


def _readable(word: str) -> str:
    """The meaningful part of a package name or path (`@scope/name@1.2` → `name`)."""
    # A version follows the name (`name@1.2`, `name==1.2`) in the last part; an `@` that opens
    # a part is a scope (`@scope/name`, `.../node_modules/@scope/name/...`).
    head, sep, last = word.rpartition("/")
    last = last[:1] + last[1:].split("@", 1)[0]
    word = (head + sep + last.split("==", 1)[0]).lstrip("@")
    parts = [PurePosixPath(p).stem if "." in p else p for p in PurePosixPath(word).parts]
    for part in reversed(parts):
        if part and part not in _GENERIC and part not in ("/", ".", ".."):
            return part
    return parts[-1] if parts else ""
