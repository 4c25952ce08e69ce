"""Helpers of the ad-hoc target, mcpServers file, resources and prompts tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.servers.serve import SERVERS_DIR

DEVALL = Path(sys.executable).parent / "devall"
RESOURCES_SERVER = SERVERS_DIR / "resources_server.py"
# The repository root: the server scripts import nothing from it, but the tests run there.
ROOT = SERVERS_DIR.parent.parent


def devall(
    *args: str,
    env: Mapping[str, str] | None = None,
    drop: tuple[str, ...] = (),
    cwd: Path | None = None,
    timeout: float = 30,
) -> subprocess.CompletedProcess[str]:
    """The installed command in a subprocess, with `env` added and `drop` removed."""
    environ = {**os.environ, "NO_COLOR": "1", **(env or {})}
    for name in drop:
        environ.pop(name, None)
    return subprocess.run(
        [str(DEVALL), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environ,
        cwd=cwd,
    )


def local_command(script: Path = RESOURCES_SERVER, *extra: str) -> str:
    """A `--command` value starting a stdio server script with this Python."""
    return " ".join([sys.executable, str(script), *extra])


def write_json(path: Path, data: Any) -> Path:
    """Write `data` as indented JSON and return the path."""
    path.write_text(json.dumps(data, indent=2))
    return path
