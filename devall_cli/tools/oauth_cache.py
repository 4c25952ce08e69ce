"""The OAuth token cache: one JSON file per server, grant and client, readable by its owner only.

    $DEVALL_OAUTH_CACHE/     else $XDG_CACHE_HOME/devall/oauth/, else ~/.cache/devall/oauth/
      <sha256 of server, grant, client>.json     (0600, in a 0700 directory)
        {"version": 1, "server": URL, "grant": ..., "client_id": ... (as configured),
         "client": {registered client information}, "tokens": {...}, "expires_at": epoch seconds,
         "resource_metadata": {...}, "server_metadata": {...}, "updated_at": epoch seconds,
         "dpop_key": PEM of the key a DPoP-bound token is bound to, "dpop_bound": true}

Files are replaced whole (a temporary file created 0600, then renamed), so a crash never leaves
half a file and no other user can ever read a token. The authorization server's metadata is
kept with the tokens: a token refreshed by a later process must go to the same token endpoint.
A file that cannot be read or parsed counts as empty (the next authorization rewrites it).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devall_cli import json_limits

CACHE_VERSION = 1


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """Where tokens are cached: DEVALL_OAUTH_CACHE, else the XDG cache directory."""
    env = os.environ if environ is None else environ
    if env.get("DEVALL_OAUTH_CACHE"):
        return Path(env["DEVALL_OAUTH_CACHE"]).expanduser()
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "devall" / "oauth"


@dataclass(frozen=True)
class CachedLogin:
    """What `devall auth list` shows of one cache file (never a token)."""

    path: Path
    server: str
    grant: str
    client_id: str | None
    scopes: str | None
    expires_at: float | None
    refreshable: bool
    updated_at: float | None
    dpop: bool = False  # the token is DPoP-bound (oauth_dpop.py)


class TokenCache:
    """The cache directory: finds, lists and removes entries."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def entry(self, key: str, *, server: str, grant: str, client_id: str | None) -> CacheEntry:
        """The entry of one server, grant and client (its file may not exist yet)."""
        digest = hashlib.sha256(key.encode()).hexdigest()[:32]
        return CacheEntry(self, self.root / f"{digest}.json", server, grant, client_id)

    def logins(self) -> list[CachedLogin]:
        """Every readable entry, oldest first."""
        found: list[CachedLogin] = []
        for path in sorted(self.root.glob("*.json")) if self.root.is_dir() else []:
            data = read_json(path)
            if data is None:
                continue
            tokens = data.get("tokens") if isinstance(data.get("tokens"), dict) else {}
            client = data.get("client") if isinstance(data.get("client"), dict) else {}
            assert isinstance(tokens, dict) and isinstance(client, dict)
            found.append(
                CachedLogin(
                    path=path,
                    server=str(data.get("server", "")),
                    grant=str(data.get("grant", "")),
                    client_id=data.get("client_id") or client.get("client_id"),
                    scopes=tokens.get("scope"),
                    expires_at=_number(data.get("expires_at")),
                    refreshable=bool(tokens.get("refresh_token")),
                    updated_at=_number(data.get("updated_at")),
                    dpop=data.get("dpop_bound") is True,
                )
            )
        return sorted(found, key=lambda login: login.updated_at or 0)

    def remove(self, paths: list[Path]) -> int:
        """Delete these entries; how many were there."""
        removed = 0
        for path in paths:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed += 1
        return removed

    def ensure_root(self) -> None:
        """Create the directory, readable by its owner only."""
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self.root.stat().st_mode & 0o077:
            self.root.chmod(0o700)


class CacheEntry:
    """One cache file, read and written as a whole."""

    def __init__(
        self, cache: TokenCache, path: Path, server: str, grant: str, client_id: str | None
    ) -> None:
        self.cache = cache
        self.path = path
        self.server = server
        self.grant = grant
        self.client_id = client_id

    def load(self) -> dict[str, Any]:
        """The entry's content; empty when there is none or it is unreadable or foreign."""
        data = read_json(self.path)
        if data is None or data.get("version") != CACHE_VERSION:
            return {}
        if data.get("server") != self.server:
            return {}
        return data

    def update(self, **fields: Any) -> None:
        """Set some fields (None removes one) and write the file again."""
        data = self.load()
        for name, value in fields.items():
            if value is None:
                data.pop(name, None)
            else:
                data[name] = value
        data.update(
            version=CACHE_VERSION,
            server=self.server,
            grant=self.grant,
            client_id=self.client_id,
            updated_at=time.time(),
        )
        self.cache.ensure_root()
        write_private(self.path, json.dumps(data, indent=2, sort_keys=True))

    def forget_tokens(self) -> None:
        """Drop the tokens, keep the client registration (a new login reuses it)."""
        if self.path.exists():
            self.update(tokens=None, expires_at=None)

    def remove(self) -> bool:
        """Delete the file; whether it was there."""
        return self.cache.remove([self.path]) == 1


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from a file, or None when it is missing or not one."""
    try:
        data = json_limits.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_private(path: Path, text: str) -> None:
    """Replace `path` with `text`, the file readable and writable by its owner only."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o600)  # O_CREAT's mode is filtered by the umask; 0600 is exact
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
