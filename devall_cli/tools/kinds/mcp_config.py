"""`type: mcp_config`: the servers of an mcpServers file, one tool source per server.

    tooling:
      - type: mcp_config
        prefix: ide          # optional, applied to the tools of every server
        config:
          path: .vscode/mcp.json   # relative to the workflow file
          servers: [git, fs]       # optional: these servers only (default: every enabled one)
          roots: [data]            # optional: the roots offered to each of them (default: none)

The file is read when the workflow loads, so `devall validate` reports its problems located in
the file. The entry stands for one `mcp_local` / `mcp_remote` entry per server (see
`tools/plan.py`), each with the server's name as its source id. mcpServers files have no key
for roots, so `roots` is devall's, on the entry, with the meaning it has on `mcp_local` (paths
relative to the workflow's folder).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from devall_cli.config.model import ToolingConfig
from devall_cli.config.placeholders import value_text
from devall_cli.config.schema import Checker, KeySpec, check_keys, opt_str, opt_str_list
from devall_cli.config.yaml_source import KeyPath
from devall_cli.tools.kinds.client_settings import RootConfig, client_shapes, parse_roots
from devall_cli.tools.kinds.mcp_servers import read_servers_file
from devall_cli.tools.kinds.registry import TOOLING_TYPES, ToolingType

_KEYS = KeySpec(known=frozenset({"path", "servers", "roots"}))


@dataclass(frozen=True)
class McpConfigSettings:
    """`tooling[].config` of `type: mcp_config`: the chosen servers of one file."""

    path: str  # absolute
    servers: tuple[ToolingConfig, ...]

    def identity(self) -> tuple[Any, ...]:
        """Never a source itself: its servers are (see `expand`)."""
        return ("mcp_config", self.path, tuple(s.config.identity() for s in self.servers))

    def display_target(self) -> str:
        """The file."""
        return self.path


def parse_mcp_config(
    ck: Checker, config: dict[str, Any], path: KeyPath
) -> McpConfigSettings | None:
    """Read and check the file now; its problems are located in it."""
    check_keys(ck, config, path, _KEYS)
    file = opt_str(ck, config, "path", path, required=True)
    wanted = opt_str_list(ck, config, "servers", path) if "servers" in config else None
    roots = parse_roots(ck, config.get("roots"), (*path, "roots"))
    if file is None:
        return None
    resolved = (ck.file_dir / os.path.expanduser(file.strip())).resolve()
    values: dict[str, str] = {}
    if ck.scope is not None:  # the workflow's vars, then --var, as for its own placeholders
        values = {k: value_text(v) for k, v in ck.scope.vars.items()}
        values.update(ck.scope.cli_vars)
    shown = os.path.join(os.path.dirname(ck.scope.display), file) if ck.scope else file
    servers_file, file_ck, issues = read_servers_file(
        resolved, shown, environ=ck.environ, values=values, only=wanted
    )
    ck.issues.extend(issues)
    if file_ck is not None:
        ck.secrets.update(file_ck.secrets)
    if servers_file is None or any(issue.severity == "error" for issue in issues):
        if servers_file is None and not issues:
            ck.error((*path, "path"), f"cannot read {file}")
        return None
    if wanted is None:
        chosen = [n for n in servers_file.servers if n not in servers_file.disabled]
    else:
        known = ", ".join(servers_file.names) or "none"
        chosen = []
        for index, name in enumerate(wanted):
            if name in servers_file.servers:
                chosen.append(name)
            else:
                ck.error((*path, "servers", index), f"no server '{name}' in {file} ({known})")
        if len(chosen) != len(wanted):
            return None
    if not chosen:
        ck.error((*path, "path"), f"{file} names no enabled server")
        return None
    servers = tuple(_with_roots(servers_file.servers[n], roots) for n in chosen)
    return McpConfigSettings(str(resolved), servers)


def _with_roots(server: ToolingConfig, roots: tuple[RootConfig, ...]) -> ToolingConfig:
    """A server of the file offered the entry's roots (its settings' `client.roots`)."""
    settings = server.config
    client = replace(settings.client, roots=roots)
    return replace(server, config=replace(settings, client=client))


def expand(entry: ToolingConfig) -> tuple[ToolingConfig, ...]:
    """One entry per server, with the entry's prefix and location."""
    settings: McpConfigSettings = entry.config
    return tuple(
        replace(server, prefix=entry.prefix, path=entry.path) for server in settings.servers
    )


def _base_name(settings: McpConfigSettings) -> str:
    return Path(settings.path).stem


TOOLING_TYPES.register(
    ToolingType(
        "mcp_config",
        parse_mcp_config,
        "the servers of an mcpServers file (Claude Desktop, Cursor, VS Code, Windsurf)",
        base_name=_base_name,
        expand=expand,
        keys=_KEYS,
        shapes=lambda: {"roots": client_shapes()["roots"]},
    )
)
