"""The secrets rule end to end: secrets never leak, ordinary values are never masked.

Each test drives the real CLI against fixture servers on loopback and reads every output:
stdout, stderr, `--json`, the JUnit file and every file of the run directory.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_reliability_cli import (
    RAW,
    invoke,
    local_tooling,
    remote_tooling,
    workflow,
    written_texts,
)
from tests.servers.serve import ServerProcess

QUERY_SECRETS = {
    "apiToken": "qs-api-token-1111",
    "accessToken": "qs-access-token-2222",
    "clientSecret": "qs-client-secret-3333",
    "signature": "qs-signature-4444",
    "X-Amz-Signature": "qs-amz-signature-5555",
}


@pytest.fixture(scope="module")
def remote() -> Iterator[ServerProcess]:
    """The stdlib server over HTTP, with its fixture tools (echo, request_header)."""
    with ServerProcess(RAW, args=["--fixture"]) as server:
        yield server


def calls(*pairs: tuple[str, dict[str, str]]) -> list[dict[str, object]]:
    """A script: one turn calling the tools, then an answer made of all their results."""
    tool_calls = [{"name": name, "arguments": args} for name, args in pairs]
    return [{"tool_calls": tool_calls}, {"content": "{tool_results}"}]


def test_ordinary_env_and_header_values_are_never_masked(
    tmp_path: Path, remote: ServerProcess
) -> None:
    script = calls(
        ("loc_echo", {"text": "switch from debug to production"}),
        ("web_echo", {"text": "took 10 ms"}),
        ("loc_env", {"name": "DB_PASSWORD"}),
    )
    env = {"LOG_LEVEL": "debug", "DB_PASSWORD": "db-pass-0451"}
    wf = workflow(
        tmp_path,
        local_tooling(RAW, "--fixture", prefix="loc", env=env),
        remote_tooling(remote.url, prefix="web", headers={"x-tenant": "1"}),
        script=script,
    )
    code, out, err = invoke("run", str(wf), "--out", "run")
    assert code == 0, err
    assert out == "switch from debug to production\ntook 10 ms\n***\n"
    result = json.loads(Path("run/result.json").read_text())
    assert result["output"] == out.rstrip("\n")
    texts = [err, *written_texts(Path("run"))]
    assert all("db-pass-0451" not in text for text in texts)
    for text in (err, Path("run/events.jsonl").read_text()):
        assert "switch from debug to production" in text and "took 10 ms" in text


def test_a_short_ad_hoc_header_does_not_garble_the_probe_report(remote: ServerProcess) -> None:
    code, out, err = invoke("probe", "--url", remote.url, "--header", "x-tenant: 1", "--json")
    assert code == 0, err
    (row,) = json.loads(out)["servers"]
    assert row["target"] == remote.url
    assert "***" not in out


def test_secret_query_parameters_never_leak(tmp_path: Path, remote: ServerProcess) -> None:
    query = "&".join(f"{name}={value}" for name, value in QUERY_SECRETS.items())
    url = f"{remote.url}?page=22&{query}"
    wf = workflow(tmp_path, remote_tooling(url), script=calls(("echo", {"text": "hi"})))
    runs = [
        invoke("probe", str(wf), "--json", "--junit", "probe.xml"),
        invoke("probe", str(wf)),
        invoke("tools", "list", str(wf), "--json"),
        invoke("run", str(wf), "--out", "run", "--verbose"),
        invoke("run", str(wf), "--out", "run-json", "--json"),
    ]
    assert [code for code, _, _ in runs] == [0] * len(runs), runs
    texts = [text for _, out, err in runs for text in (out, err)]
    texts += [Path("probe.xml").read_text(), *written_texts(Path("run"), Path("run-json"))]
    for text in texts:
        for value in QUERY_SECRETS.values():
            assert value not in text
    assert "page=22" in runs[0][1]  # ordinary parameters stay readable
    assert "apiToken=***" in runs[0][1] and "X-Amz-Signature=***" in runs[0][1]


def test_the_basic_credential_derived_from_url_userinfo_is_masked(
    tmp_path: Path, remote: ServerProcess
) -> None:
    url = remote.url.replace("http://", "http://bob:hunter2-long@")
    basic = base64.b64encode(b"bob:hunter2-long").decode()
    script = calls(("request_header", {"name": "authorization"}))
    wf = workflow(tmp_path, remote_tooling(url), script=script)
    code, out, err = invoke("run", str(wf), "--out", "run", "--verbose")
    assert code == 0, err
    assert out == "Basic ***\n"  # the server did get the header; devall's outputs hide it
    for text in (out, err, *written_texts(Path("run"))):
        assert basic not in text and "hunter2-long" not in text


def test_a_secret_cut_by_the_trace_preview_leaks_none_of_its_characters(tmp_path: Path) -> None:
    secret = "Zq9-preview-secret-7731"
    text = "x" * 590 + secret  # the normal trace shows the first 600 characters
    wf = workflow(
        tmp_path,
        local_tooling(RAW, "--fixture"),
        script=calls(("echo", {"text": text})),
    )
    code, out, err = invoke("run", str(wf), "--out", "run", "--var", f"SERVICE_TOKEN={secret}")
    assert code == 0, err
    assert "Zq9" not in err and "x" * 590 + "***" in err
    assert out == "x" * 590 + "***\n"
