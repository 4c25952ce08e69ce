"""Exit codes and the one exception tree of devall.

    DevallError                       exit 1   (a run or probe failed)
    (a bug: any other exception)      exit 70  internal error (EX_SOFTWARE)
    ├── RunFailedError                exit 1   a node failed, a server is unhealthy
    ├── UsageError                    exit 2   a command-line value names nothing (node, tool)
    ├── ConfigError                   exit 3   YAML, schema, ${VAR}, graph shape, duplicate tools
    │   └── DuplicateToolError                 two sources offer one node the same tool name
    ├── DevallConnectionError         exit 4   something could not be reached or started
    │   ├── ServerStartError                   spawn failed, exited before ready, startup timeout
    │   ├── ServerUnreachableError             remote MCP server unreachable
    │   ├── ServerDiedError                    a local server died or a session was lost mid-run
    │   ├── AuthError                          a server's OAuth authorization could not be obtained
    │   ├── SandboxError                       a child must run sandboxed, but bwrap cannot run
    │   └── LLMUnreachableError                the model endpoint could not be reached
    ├── RemoteError                   exit 5   the other side answered, but wrongly
    │   ├── ProtocolError                      MCP protocol error
    │   └── LLMHTTPError                       model endpoint HTTP error after retries
    ├── DriftError                    exit 7   the servers' tools drifted from the lockfile
    ├── BudgetError                   exit 8   --max-cost / --max-tokens / --max-model-calls reached
    └── InterruptedRunError           exit 130 Ctrl-C (143 for SIGTERM)

The core raises these and never exits; the CLI maps them to exit codes in one place.
The errors `devall probe` can report carry their failure class as the class attribute `status`
(an instance may narrow it, e.g. a ServerStartError says which start step failed).
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import IntEnum

# Whether a config issue keeps the stack of the code that found it (`devall --debug`).
_RECORD_ORIGINS = [False]


@contextlib.contextmanager
def issue_origins_recorded(on: bool = True) -> Iterator[None]:
    """Record issue origins (or not) inside the block; the previous setting comes back after."""
    previous = _RECORD_ORIGINS[0]
    _RECORD_ORIGINS[0] = on
    try:
        yield
    finally:
        _RECORD_ORIGINS[0] = previous


def recording_issue_origins() -> bool:
    """Whether ConfigIssues keep the stack that created them right now."""
    return _RECORD_ORIGINS[0]


class ExitCode(IntEnum):
    """Process exit codes; part of the CLI contract."""

    OK = 0
    FAILED = 1
    USAGE = 2
    CONFIG = 3
    CONNECTION = 4
    REMOTE = 5
    REPLAY_MISMATCH = 6  # a replayed run asked for something its cassette does not hold
    DRIFT = 7  # a server's tools drifted from the lockfile in a breaking way (tools lock)
    BUDGET = 8  # a run reached its --max-cost / --max-tokens / --max-model-calls budget
    INTERNAL = 70  # EX_SOFTWARE: a bug in devall (an unexpected exception), not a failed run
    INTERRUPTED = 130
    TERMINATED = 143


@dataclass(frozen=True)
class ConfigIssue:
    """One problem found in a workflow file, with where it is."""

    message: str
    path: str = ""
    file: str = ""
    line: int = 0
    col: int = 0
    severity: str = "error"  # "error" | "warning"
    source_line: str = ""
    # The stack of the check that found it; kept only when asked (`--debug`), never compared.
    origin: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        if _RECORD_ORIGINS[0] and not self.origin:
            stack = "".join(traceback.format_stack()[:-2])  # not this method, nor __init__
            object.__setattr__(self, "origin", f"Traceback (most recent call last):\n{stack}")

    def location(self) -> str:
        """`file:line:col`, leaving out the parts that are unknown."""
        parts = [self.file] if self.file else []
        if self.line:
            parts.append(str(self.line))
            if self.col:
                parts.append(str(self.col))
        return ":".join(parts)

    def headline(self) -> str:
        """`file:line:col: path: message`."""
        prefix = [p for p in (self.location(), self.path) if p]
        return ": ".join([*prefix, self.message])


class DevallError(Exception):
    """Base of every error devall reports to the user."""

    exit_code: ExitCode = ExitCode.FAILED

    def __init__(self, message: str, *, details: Sequence[str] = (), hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.details: list[str] = list(details)
        # How to fix it, where devall can tell (`start the server: ...`); shown as `hint: ...`.
        self.hint = hint


class RunFailedError(DevallError):
    """A node failed or a probed server is unhealthy."""

    exit_code = ExitCode.FAILED


class UsageError(DevallError):
    """A command-line value is wrong in a way only the core can tell (unknown node or tool)."""

    exit_code = ExitCode.USAGE


class ConfigError(DevallError):
    """The workflow is invalid; carries every issue found."""

    exit_code = ExitCode.CONFIG

    def __init__(
        self,
        message: str,
        *,
        issues: Sequence[ConfigIssue] = (),
        details: Sequence[str] = (),
    ) -> None:
        super().__init__(message, details=details)
        self.issues: list[ConfigIssue] = list(issues)

    @classmethod
    def from_issues(cls, issues: Sequence[ConfigIssue]) -> ConfigError:
        """One error for a list of issues; the message counts the errors."""
        errors = [i for i in issues if i.severity == "error"]
        if len(errors) == 1:
            return cls(errors[0].headline(), issues=issues)
        return cls(f"{len(errors)} problems in workflow", issues=issues)


class DuplicateToolError(ConfigError):
    """Two tooling entries of one node offer a tool under the same final name."""

    def __init__(
        self, message: str, *, tool: str, sources: tuple[str, str], issues: Sequence[ConfigIssue]
    ) -> None:
        super().__init__(message, issues=issues)
        self.tool = tool
        self.sources = sources  # the ids of the two sources (the same id twice: one source)


class DevallConnectionError(DevallError):
    """Something devall needs could not be reached or started."""

    exit_code = ExitCode.CONNECTION


class ServerStartError(DevallConnectionError):
    """A local server failed to spawn, exited before it was ready, or timed out starting."""

    # spawn_failed | exited | startup_timeout | handshake_timeout (each instance says which)
    status: str = "spawn_failed"

    def __init__(
        self,
        message: str,
        *,
        status: str,
        server_id: str = "",
        log_tail: Sequence[str] = (),
        details: Sequence[str] = (),
    ) -> None:
        super().__init__(message, details=details or [f"  | {line}" for line in log_tail])
        self.status = status
        self.server_id = server_id
        self.log_tail = list(log_tail)


class ServerUnreachableError(DevallConnectionError):
    """A remote MCP server could not be reached (or refused us with an HTTP status)."""

    # unreachable | http_401 | http_403 | http_error | handshake_timeout
    status: str = "unreachable"

    def __init__(self, message: str, *, status: str = "unreachable") -> None:
        super().__init__(message)
        self.status = status


class ServerDiedError(DevallConnectionError):
    """A server died or its session was lost and could not be recovered."""

    status: str = "exited"


class AuthError(DevallConnectionError):
    """A remote MCP server needs authorization that devall could not obtain."""

    status: str = "auth_failed"  # auth_failed | http_401 (authorization needs a person)

    def __init__(self, message: str, *, status: str = "auth_failed") -> None:
        super().__init__(message)
        self.status = status


class SandboxError(DevallConnectionError):
    """A child that must run sandboxed cannot be: bwrap is missing or cannot make its namespaces."""

    status: str = "spawn_failed"


class LLMUnreachableError(DevallConnectionError):
    """The model endpoint could not be reached."""


class RemoteError(DevallError):
    """The other side answered, but not as it should."""

    exit_code = ExitCode.REMOTE


class ProtocolError(RemoteError):
    """An MCP server broke the protocol."""

    status: str = "protocol_error"


class LLMHTTPError(RemoteError):
    """The model endpoint answered with an HTTP error after the retries."""

    def __init__(self, message: str, *, status_code: int = 0) -> None:
        super().__init__(message)
        self.status_code = status_code


class ReplayMismatchError(DevallError):
    """A replayed run sent a request that differs from the recording (or one it never made)."""

    exit_code = ExitCode.REPLAY_MISMATCH
    status: str = "replay_mismatch"


class DriftError(DevallError):
    """The servers' tools drifted from the lockfile in a breaking way (or at all, `--strict`)."""

    exit_code = ExitCode.DRIFT
    status: str = "drift"


class BudgetError(DevallError):
    """A run (or a batch) reached its --max-cost, --max-tokens or --max-model-calls budget."""

    exit_code = ExitCode.BUDGET
    status: str = "budget"

    def __init__(
        self, message: str, *, kind: str, limit: float, spent: float, scope: str = "run"
    ) -> None:
        super().__init__(message)
        self.kind = kind  # cost | tokens | model_calls
        self.limit = limit
        self.spent = spent
        self.scope = scope  # run | batch

    def record(self) -> dict[str, object]:
        """The `budget` object of result.json and summary.json."""
        return {"kind": self.kind, "limit": self.limit, "spent": self.spent, "scope": self.scope}


class InterruptedRunError(DevallError):
    """The user interrupted the run (Ctrl-C) or devall received SIGTERM."""

    exit_code = ExitCode.INTERRUPTED

    def __init__(self, message: str = "interrupted", *, signal_name: str = "SIGINT") -> None:
        super().__init__(message)
        if signal_name == "SIGTERM":
            self.exit_code = ExitCode.TERMINATED
