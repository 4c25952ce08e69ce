"""Listings and probes need no model settings: only `tooling` placeholders must resolve."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.mcp_targets import RESOURCES_SERVER
from tests.helpers import cli
from tests.servers.serve import ServerProcess

MODEL_VARS = ("API_KEY", "BASE_URL", "TOKEN")


@pytest.fixture(scope="module")
def remote() -> Iterator[ServerProcess]:
    with ServerProcess(RESOURCES_SERVER) as server:
        yield server


def workflow(tmp_path: Path, url: str, *, header: str = "ok", vars_block: str = "{}") -> Path:
    text = f"""
    vars: {vars_block}
    graph:
      start: [a]
      nodes:
        - id: a
          type: agent
          config:
            provider: openai
            base_url: ${{BASE_URL}}
            api_key: ${{API_KEY}}
            name: gpt-4o-mini
            tooling:
              - type: mcp_remote
                config:
                  server: "{url}"
                  headers: {{x-check: "{header}"}}
    """
    path = tmp_path / "wf.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_probe_and_listing_skip_unresolved_model_settings(
    tmp_path: Path, remote: ServerProcess
) -> None:
    wf = workflow(tmp_path, remote.url)
    probe = cli("probe", str(wf), "--json", drop=MODEL_VARS)
    assert probe.returncode == 0, probe.stderr
    assert json.loads(probe.stdout)["servers"][0]["status"] == "ok"
    listing = cli("tools", "list", str(wf), drop=MODEL_VARS)
    assert listing.returncode == 0 and "ping" in listing.stdout, listing.stderr
    called = cli("tools", "call", str(wf), "ping", drop=MODEL_VARS)
    assert called.returncode == 0 and called.stdout == "pong\n", called.stderr
    # validate and run still need them
    checked = cli("validate", str(wf), drop=MODEL_VARS)
    assert checked.returncode == 3 and "${API_KEY}" in checked.stderr


def test_an_unresolved_tooling_placeholder_is_still_an_error(
    tmp_path: Path, remote: ServerProcess
) -> None:
    wf = workflow(tmp_path, remote.url, header="${TOKEN}")
    result = cli("tools", "list", str(wf), drop=MODEL_VARS)
    assert result.returncode == 3
    assert "${TOKEN}" in result.stderr and "${API_KEY}" not in result.stderr


def test_a_vars_entry_is_reported_only_when_tooling_needs_it(
    tmp_path: Path, remote: ServerProcess
) -> None:
    unused = workflow(tmp_path, remote.url, vars_block="{KEY: '${API_KEY}'}")
    assert cli("probe", str(unused), drop=MODEL_VARS).returncode == 0
    used = workflow(tmp_path, remote.url, header="${KEY}", vars_block="{KEY: '${TOKEN}'}")
    result = cli("probe", str(used), drop=MODEL_VARS)
    assert result.returncode == 3 and "vars.KEY" in result.stderr and "${TOKEN}" in result.stderr
