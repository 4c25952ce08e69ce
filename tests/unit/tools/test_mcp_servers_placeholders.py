"""Placeholders of an mcpServers file: nested defaults resolve as the workflow loader's do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devall_cli.errors import ConfigError
from devall_cli.tools.kinds.mcp_servers import load_servers_file


def env_of(tmp_path: Path, value: str, environ: dict[str, str]) -> dict[str, str]:
    path = tmp_path / "claude_desktop_config.json"
    server = {"command": "python", "args": ["s.py"], "env": {"V": value}}
    path.write_text(json.dumps({"mcpServers": {"s": server}}))
    servers, _ = load_servers_file(path, path.name, environ=environ, values={})
    return dict(servers.servers["s"].config.env)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("value", "environ", "expected"),
    [
        ("${A:-${B:-deep}}", {}, "deep"),
        ("${A:-${B:-deep}}", {"B": "b"}, "b"),
        ("${A:-${B:-deep}}", {"A": "a"}, "a"),
        ("x${A:-{literal}}y", {}, "x{literal}y"),
        ("${env:A:-${B:-}}end", {}, "end"),
        ("${A:-${B:-${C:-three}}} and ${D:-d}", {}, "three and d"),
    ],
)
def test_nested_defaults_resolve(
    tmp_path: Path, value: str, environ: dict[str, str], expected: str
) -> None:
    assert env_of(tmp_path, value, environ) == {"V": expected}


def test_an_unset_placeholder_inside_a_default_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unresolved placeholder \$\{B\}"):
        env_of(tmp_path, "${A:-${B}}", {})
