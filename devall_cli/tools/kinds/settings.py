"""Settings of the built-in tooling types (SPEC.md §4).

`identity()` methods give the keys that decide when two tooling entries share one server.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from devall_cli.config.function_dirs import NO_FOLDER, FunctionFolder
from devall_cli.config.model import EMPTY
from devall_cli.tools.kinds.client_settings import DEFAULT_CLIENT, McpClientConfig
from devall_cli.tools.kinds.oauth_settings import OAuthConfig


@dataclass(frozen=True)
class McpRemoteConfig:
    """`tooling[].config` of `type: mcp_remote`."""

    server: str
    headers: Mapping[str, str] = EMPTY
    timeout: float = 10.0
    cache_ttl: float = 0.0
    tool_sources: tuple[str, ...] = ("mcp_tools",)
    auth: OAuthConfig | None = None  # OAuth 2.1 (oauth_settings); None: no authorization
    client: McpClientConfig = DEFAULT_CLIENT  # elicitation, sampling, roots, log_level

    def identity(self) -> tuple[Any, ...]:
        """Entries with the same identity share one client session per run."""
        auth = self.auth.identity() if self.auth is not None else None
        headers = tuple(sorted(self.headers.items()))
        return ("mcp_remote", self.server, headers, self.timeout, auth, self.client)

    def display_target(self) -> str:
        """The URL, as shown in tables and traces."""
        return self.server


@dataclass(frozen=True)
class McpLocalConfig:
    """`tooling[].config` of `type: mcp_local`."""

    command: str
    args: tuple[str, ...] = ()
    cwd: str | None = None  # absolute after loading (relative paths resolve against the workflow)
    env: Mapping[str, str] = EMPTY
    inherit_env: bool = True
    startup_timeout: float = 10.0
    wait_for_log: str | None = None
    cache_ttl: float = 0.0
    tool_sources: tuple[str, ...] = ("mcp_tools",)
    max_concurrency: int = 1
    call_timeout: float = 60.0
    max_restarts: int = 1
    client: McpClientConfig = DEFAULT_CLIENT  # elicitation, sampling, roots, log_level

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
        )

    def display_target(self) -> str:
        """The command line, as shown in tables and traces."""
        import shlex

        return shlex.join([self.command, *self.args])


@dataclass(frozen=True)
class FunctionRef:
    """One entry of a function tooling's `tools` list."""

    name: str  # a function name, or `module:All`


@dataclass(frozen=True)
class FunctionToolingConfig:
    """`tooling[].config` of `type: function`."""

    tools: tuple[FunctionRef, ...]
    timeout: float = 30.0
    folder: FunctionFolder = NO_FOLDER  # where the loader found the functions

    @property
    def functions_dir(self) -> str:
        """The functions directory (absolute), as listings show it."""
        return self.folder.root

    def identity(self) -> tuple[Any, ...]:
        """Function tooling has no server; each entry is its own source."""
        return ("function", self.folder, self.tools, self.timeout)

    def display_target(self) -> str:
        """The functions directory."""
        return self.functions_dir
