"""Helpers of the ad-hoc target, mcpServers file, resources and prompts tests."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.servers.serve import SERVERS_DIR

RESOURCES_SERVER = SERVERS_DIR / "resources_server.py"
# The repository root: the server scripts import nothing from it, but the tests run there.
ROOT = SERVERS_DIR.parent.parent


def local_command(script: Path = RESOURCES_SERVER, *extra: str) -> str:
    """A `--command` value starting a stdio server script with this Python."""
    return " ".join([sys.executable, str(script), *extra])


def write_json(path: Path, data: Any) -> Path:
    """Write `data` as indented JSON and return the path."""
    path.write_text(json.dumps(data, indent=2))
    return path
