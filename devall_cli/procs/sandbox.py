"""Children confined with bubblewrap (`bwrap`): local MCP servers and python nodes' scripts.

A confined child sees the system read-only (`/` bound read-only), a minimal `/dev`, its own
`/proc`, and private, empty, writable folders over `/tmp`, `/var/tmp`, `/run`, `/root`, `/home`
and `$HOME`. Inside those hidden folders only what it needs is bound again: read-only its
program's own tree (a virtualenv's prefix, the interpreter it links to), its script's folder,
the workflow's folder and each `read:` path; writable its working directory and each `write:`
path. It runs in new namespaces (`--unshare-all`: no network but its own loopback, unless
`network: true`) and dies with the process that started it (`--die-with-parent`). Its
environment is an allow-list of devall's (`DEFAULT_ENV` plus the entry's `env:` names) with the
entry's own variables, and `HOME` points at the private, empty home.

No `--new-session`: devall already starts each child in a session of its own with pipes for
stdio and no controlling terminal, so there is no terminal to push input into; staying in that
session's process group lets devall's teardown signal the whole sandbox at once.

`sandbox: prefer` runs the child unconfined where bwrap cannot run and says why; `require` (the
default of `sandbox: true`) refuses to start it (SandboxError). docs/sandbox.md tells users what
this protects and what it does not.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from devall_cli.errors import SandboxError, UsageError

TOOL = "bwrap"
MODES = ("off", "prefer", "require")
# devall's variables a confined child gets without asking: the search path, the locale, the
# terminal and the time zone, and the switches that quiet FastMCP servers.
DEFAULT_ENV = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "TERM",
    "TZ",
    "FASTMCP_SHOW_SERVER_BANNER",
    "FASTMCP_CHECK_FOR_UPDATES",
)
# Folders a child does not see (each replaced by an empty private tmpfs), beside `$HOME`.
HIDDEN = ("/tmp", "/var/tmp", "/run", "/root", "/home")
# Never hidden as a home folder: a `$HOME` of `/` or of a system folder would hide the system.
_NOT_A_HOME = frozenset({"/", "/usr", "/etc", "/var", "/opt", "/bin", "/lib", "/sbin", "/dev"})
_BASE = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")
_CONFINE = ("--unshare-all", "--die-with-parent")
TRIAL_TIMEOUT = 10.0
INSTALL_HINT = "install bubblewrap (`apt-get install bubblewrap`)"
USERNS_HINT = (
    "allow unprivileged user namespaces (`sysctl -w kernel.unprivileged_userns_clone=1`; on "
    "Ubuntu also `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`; in a container, "
    "run it with user namespaces allowed)"
)


@dataclass(frozen=True)
class SandboxConfig:
    """A `sandbox:` setting (or the CLI default): how one child is confined."""

    mode: str = "require"  # off | prefer | require
    network: bool = False
    env: tuple[str, ...] = ()  # names let through from devall's environment, beyond DEFAULT_ENV
    read: tuple[str, ...] = ()  # absolute paths, bound read-only
    write: tuple[str, ...] = ()  # absolute paths, bound writable
    # From `--sandbox`, not from the workflow: the error's hint names the option.
    from_cli: bool = field(default=False, compare=False)


SANDBOX_OFF = SandboxConfig(mode="off")
_DEFAULT_MODE = ["off"]


def set_default_sandbox(mode: str | None) -> None:
    """The CLI default (`--sandbox off|prefer|require`; None: off) for the `mcp_local` servers
    and python nodes that set no `sandbox:`; it applies to the children spawned from now on."""
    chosen = (mode or "off").strip().lower()
    if chosen not in MODES:
        raise UsageError(f"--sandbox must be off, prefer or require, got {mode!r}")
    _DEFAULT_MODE[0] = chosen


def default_sandbox() -> str:
    """The CLI default mode now: off, prefer or require."""
    return _DEFAULT_MODE[0]


def effective_sandbox(own: SandboxConfig | None) -> SandboxConfig | None:
    """The entry's own setting, else the CLI default; None when the child runs unconfined."""
    if own is None:
        mode = _DEFAULT_MODE[0]
        own = SANDBOX_OFF if mode == "off" else SandboxConfig(mode=mode, from_cli=True)
    return None if own.mode == "off" else own


# --- availability --------------------------------------------------------------------------

_TRIALS: dict[str, str | None] = {}  # bwrap's path -> why it cannot confine a child (None: it can)


def bwrap_problem() -> str | None:
    """Why no child can be confined here (None: it can); bwrap is tried once per path."""
    program = shutil.which(TOOL)
    if program is None:
        return f"{TOOL} not found on PATH"
    if program not in _TRIALS:
        _TRIALS[program] = _trial(program)
    return _TRIALS[program]


def sandbox_available() -> bool:
    """Whether bwrap is on PATH and can make its namespaces here."""
    return bwrap_problem() is None


def _trial(program: str) -> str | None:
    """Run `true` in a sandbox as a child would be: user namespaces may be off."""
    # Here, not at the top: parsing a workflow's `sandbox:` needs neither (nor ctypes).
    import subprocess

    from devall_cli.procs.parent_death import die_with_parent

    true = shutil.which("true") or "/bin/true"
    try:
        done = subprocess.run(
            [program, *_BASE, "--tmpfs", "/tmp", *_CONFINE, "--", true],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=TRIAL_TIMEOUT,
            preexec_fn=die_with_parent(),
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{TOOL} could not be run: {exc}"
    if done.returncode == 0:
        return None
    said = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    return f"{TOOL} cannot set up its sandbox ({said[-1] if said else f'exit {done.returncode}'})"


def _fix(problem: str, config: SandboxConfig) -> str:
    """How to make the sandbox run, or how to run without it knowingly."""
    make = INSTALL_HINT if "not found" in problem else USERNS_HINT
    unconfined = "`--sandbox prefer`" if config.from_cli else "`sandbox: prefer`"
    return f"{make}, or set {unconfined} to run it unconfined knowingly"


# --- paths ---------------------------------------------------------------------------------


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def home_folder() -> str | None:
    """devall's `$HOME`, resolved; None when it is unset or a system folder."""
    home = os.environ.get("HOME", "")
    if not home or not os.path.isabs(home):
        return None
    home = os.path.realpath(home)
    return None if home in _NOT_A_HOME else home


def hidden_folders() -> list[str]:
    """The folders a confined child sees empty: HIDDEN and `$HOME`, those that exist."""
    folders = list(HIDDEN)
    home = home_folder()
    if home is not None and not any(_within(home, f) for f in folders):
        folders.append(home)
    return [f for f in folders if os.path.isdir(f) and not os.path.islink(f)]


def script_argument(args: Sequence[str], cwd: str | None) -> str | None:
    """The first argument that names an existing file (a server's script), made absolute."""
    for arg in args:
        if arg.startswith("-"):
            continue
        path = os.path.join(cwd or os.getcwd(), arg)
        return os.path.abspath(path) if os.path.isfile(path) else None
    return None


def _tree(path: str, *, program: bool) -> str:
    """The folder a file needs around it: a program's prefix (`X` of `X/bin/p`), the outermost
    `node_modules` a script lies in, else the file's folder."""
    parts = path.split("/")
    if "node_modules" in parts:
        return "/".join(parts[: parts.index("node_modules") + 1])
    folder = os.path.dirname(path)
    if program and os.path.basename(folder) == "bin":
        return os.path.dirname(folder)
    return folder


class Sandbox:
    """How one child runs confined: its bwrap command line, environment and description."""

    def __init__(
        self,
        config: SandboxConfig,
        *,
        workdir: str,
        program: str,
        script: str | None = None,
        workflow_dir: str | None = None,
    ) -> None:
        self.config = config
        self.workdir = os.path.abspath(workdir)
        self._hidden = hidden_folders()
        # Bound whole, these would undo the hiding (a home inside /tmp is one of them too).
        self._guarded = [*self._hidden, *filter(None, [home_folder()])]
        needed = [self._around(p, program=True) for p in _both(program)]
        if script is not None:
            needed += [self._around(p, program=False) for p in _both(script)]
        if workflow_dir is not None:
            needed.append(self._folder(os.path.abspath(workflow_dir)))
        self.readable = _unique([*config.read, *(p for p in needed if p is not None)])
        workdir_bound = self._folder(self.workdir, hidden_only=False)
        self.writable = _unique([*([workdir_bound] if workdir_bound else []), *config.write])
        home = home_folder()
        # The child's HOME: where its own home was, empty and private (else /tmp).
        self.home = home if home is not None and self._is_hidden(home) else "/tmp"
        self.active = False
        self.reason = ""
        self.env_names: list[str] = []

    def _is_hidden(self, path: str) -> bool:
        return any(_within(path, folder) for folder in self._hidden)

    def _undoes_hiding(self, path: str) -> bool:
        """Whether binding `path` would show a hidden folder whole (`/`, `/home`, `$HOME`)."""
        return path == "/" or any(_within(folder, path) for folder in self._guarded)

    def _folder(self, path: str, *, hidden_only: bool = True) -> str | None:
        """`path` if it must be bound: it lies in a hidden folder and does not undo the hiding."""
        if (hidden_only and not self._is_hidden(path)) or self._undoes_hiding(path):
            return None
        return path

    def _around(self, path: str, *, program: bool) -> str | None:
        """What to bind for a needed file: its tree, or the file alone where the tree is too big."""
        if not self._is_hidden(path):
            return None
        tree = _tree(path, program=program)
        return path if self._undoes_hiding(tree) else tree

    # --- the child's command line and environment ---------------------------------------------

    def arguments(self) -> list[str]:
        """bwrap's options, up to and including `--`."""
        args = [*_BASE]
        for folder in self._hidden:
            args += ["--tmpfs", folder]
        args += ["--dir", self.home]
        if self.config.network:
            resolver = os.path.realpath("/etc/resolv.conf")
            if self._is_hidden(resolver):  # systemd-resolved keeps it under /run
                args += ["--ro-bind-try", os.path.dirname(resolver), os.path.dirname(resolver)]
        # Parents first, so that a path inside another gets its own mode; writable after
        # read-only for the same path.
        binds = [(p, False) for p in self.readable] + [(p, True) for p in self.writable]
        for path, writable in sorted(binds, key=lambda b: (b[0].count("/"), b[1], b[0])):
            args += ["--bind-try" if writable else "--ro-bind-try", path, path]
        args += [*_CONFINE, *(["--share-net"] if self.config.network else [])]
        return [*args, "--chdir", self.workdir, "--"]

    def environment(self, env: Mapping[str, str], own: Iterable[str]) -> dict[str, str]:
        """The allowed part of `env` (the child's unconfined environment): DEFAULT_ENV, the
        `env:` names of the setting and the names the entry sets itself (`own`); HOME private."""
        own = set(own)
        allowed = {*DEFAULT_ENV, *self.config.env, *own}
        confined = {name: value for name, value in env.items() if name in allowed}
        if "HOME" not in own:
            confined["HOME"] = self.home
        return confined

    def confine(
        self, env: Mapping[str, str], own: Iterable[str], *, who: str
    ) -> tuple[list[str], dict[str, str]]:
        """The command prefix (bwrap and its options, or nothing) and the child's environment.

        SandboxError when the setting requires a sandbox that cannot run here; with `prefer`
        the child runs unconfined (`active` false, `reason` says why).
        """
        problem = bwrap_problem()
        if problem is not None:
            if self.config.mode == "require":
                raise SandboxError(
                    f"{who} must run sandboxed, but {problem}", hint=_fix(problem, self.config)
                )
            self.reason = problem
            return [], dict(env)
        confined = self.environment(env, own)
        self.active = True
        self.env_names = sorted(confined)
        return [shutil.which(TOOL) or TOOL, *self.arguments()], confined

    def describe(self) -> dict[str, Any]:
        """The record of how the child runs: for traces, result.json, probe and the report."""
        if not self.active:
            reason = self.reason or "not started yet"
            return {"active": False, "mode": self.config.mode, "reason": reason}
        return {
            "active": True,
            "tool": TOOL,
            "mode": self.config.mode,
            "network": self.config.network,
            "writable": list(self.writable),
            "readable": list(self.readable),
            "env": list(self.env_names),
        }

    def unconfined_note(self, who: str) -> str:
        """The log line of a `prefer` child that runs without the sandbox."""
        return f"[devall] {who} runs unconfined: {self.reason} (sandbox: prefer)"


def _both(path: str) -> list[str]:
    """A path as given (made absolute) and as resolved, when that differs (a symlink)."""
    given = os.path.abspath(path)
    real = os.path.realpath(given)
    return [given] if real == given else [given, real]


def _unique(paths: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(paths))
