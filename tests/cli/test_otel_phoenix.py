"""A traced run as a real OpenTelemetry backend sees it: Arize Phoenix on loopback.

Phoenix is too heavy for devall's virtualenv and its pins: it lives in `.venv-phoenix`, which
`make test` installs (`make phoenix`). Without it, or without the otel extra, the test is skipped
and says why. Two agents on the fake LLM run in parallel, each calling the raw server's `echo`
over stdio with the API key in its arguments; Phoenix's REST API then shows what was sent.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.batch_flows import fixture_tooling
from tests.cli.flows import LLM_KEY, llm_agent, write_flow
from tests.conftest import REPO_ROOT
from tests.helpers import cli, free_port
from tests.servers.fake_llm import FakeLLM, FakeReply
from tests.servers.serve import group_alive

pytestmark = pytest.mark.slow  # Phoenix takes 10-20 s to start
pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

PHOENIX = REPO_ROOT / ".venv-phoenix" / "bin" / "phoenix"
INSTALLED = REPO_ROOT / ".venv-phoenix" / ".installed"  # written once the install succeeded
PROJECT = "devall-e2e"
START_TIMEOUT = 120.0
USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:  # loopback only
            return int(answer.status), answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b""
    except OSError:
        return 0, b""


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM Phoenix's whole process group, SIGKILL what lingers, and wait for it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    deadline = time.monotonic() + 5
    while group_alive(process.pid) and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Phoenix serving on a free loopback port for the module; its base URL."""
    if not (INSTALLED.exists() and PHOENIX.exists()):
        pytest.skip("Phoenix is not installed in .venv-phoenix (`make phoenix`, from PyPI)")
    work = tmp_path_factory.mktemp("phoenix")
    port = free_port()
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PHOENIX_"))}
    environ.update(
        PHOENIX_WORKING_DIR=str(work),
        PHOENIX_HOST="127.0.0.1",
        PHOENIX_PORT=str(port),
        PHOENIX_GRPC_PORT=str(free_port()),
        PHOENIX_TELEMETRY_ENABLED="false",
    )
    log = (work / "phoenix.log").open("wb")
    process = subprocess.Popen(
        [str(PHOENIX), "serve"], env=environ, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while _get(f"{url}/healthz")[0] != 200:
            tail = (work / "phoenix.log").read_text(errors="replace")[-2000:]
            assert process.poll() is None, f"Phoenix exited:\n{tail}"
            assert time.monotonic() < deadline, f"Phoenix did not start:\n{tail}"
            time.sleep(0.25)
        yield url
    finally:
        _stop(process)
        log.close()


def answer(body: Any) -> FakeReply:
    """Each agent calls `echo` with the API key in the text, then answers."""
    model = body["model"]
    if any(message["role"] == "tool" for message in body["messages"]):
        return dataclasses.replace(FakeLLM.text_reply(f"{model} done"), usage=USAGE)
    leak = [("echo", {"text": f"{model} knows {LLM_KEY}"})]
    return dataclasses.replace(FakeLLM.tool_call_reply(leak), usage=USAGE)


def spans_of(url: str, expected: int) -> list[dict[str, Any]]:
    """The project's spans, once Phoenix has ingested `expected` of them (it does so later)."""
    deadline = time.monotonic() + 30
    spans: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        status, body = _get(f"{url}/v1/projects/{PROJECT}/spans?limit=1000")
        spans = json.loads(body)["data"] if status == 200 else []
        if len(spans) >= expected:
            return spans
        time.sleep(0.25)
    raise AssertionError(f"Phoenix holds {len(spans)} spans, not {expected}")


def test_phoenix_gets_one_trace_nested_as_the_run_went(phoenix: str, tmp_path: Path) -> None:
    meta_log = tmp_path / "meta.jsonl"
    with FakeLLM(responder=answer) as llm:
        tooling = fixture_tooling()
        tooling["config"]["args"] += ["--meta-log", str(meta_log)]
        nodes = [llm_agent(n, llm, tooling=[tooling]) for n in ("a", "b")]
        flow = write_flow(tmp_path, nodes, [], start=["a", "b"], end=["a", "b"])
        done = cli(
            "run", str(flow), "--task", "go", "--quiet", "--otel-content",
            env={
                "OTEL_EXPORTER_OTLP_ENDPOINT": phoenix,
                "OTEL_EXPORTER_OTLP_HEADERS": f"x-project-name={PROJECT}",
            },
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # the spans went through: no warning
    # run, server start, 2 visits, 2 model calls and 1 tool call each
    spans = spans_of(phoenix, 1 + 1 + 2 * 4)
    assert LLM_KEY not in json.dumps(spans)
    assert len({span["context"]["trace_id"] for span in spans}) == 1
    named: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        named.setdefault(span["name"], []).append(span)
    (run,) = [span for span in spans if span["parent_id"] is None]
    assert run["name"] == "run flow"
    root = run["context"]["span_id"]
    (server,) = [s for name, found in named.items() if name.startswith("start_server ")
                 for s in found]  # fmt: skip
    assert server["parent_id"] == root and server["attributes"]["network.transport"] == "pipe"
    sent = [json.loads(line)["meta"] for line in meta_log.read_text().splitlines()]
    for node in ("a", "b"):
        (visit,) = named[f"invoke_agent {node}"]
        assert visit["parent_id"] == root
        assert visit["attributes"]["gen_ai.provider.name"] == "openai"
        models = named[f"chat model-{node}"]
        assert [m["parent_id"] for m in models] == [visit["context"]["span_id"]] * 2
        first = min(models, key=lambda m: m["start_time"])
        assert first["attributes"]["gen_ai.operation.name"] == "chat"
        assert first["attributes"]["gen_ai.request.model"] == f"model-{node}"
        assert first["attributes"]["gen_ai.usage.input_tokens"] == USAGE["prompt_tokens"]
        assert first["attributes"]["gen_ai.usage.output_tokens"] == USAGE["completion_tokens"]
        assert first["attributes"]["gen_ai.response.finish_reasons"] == ["tool_call"]
        calls = named["execute_tool echo"]
        (call,) = [t for t in calls if t["parent_id"] == visit["context"]["span_id"]]
        attributes = call["attributes"]
        assert attributes["gen_ai.tool.name"] == "echo"
        assert attributes["gen_ai.tool.call.id"] == "call_fake_1"
        assert attributes["mcp.method.name"] == "tools/call"
        assert attributes["network.transport"] == "pipe"
        assert "***" in attributes["gen_ai.tool.call.arguments"]  # content, masked
        assert visit["start_time"] <= call["start_time"] <= call["end_time"] <= visit["end_time"]
        # The server got the trace context of this very call's span.
        trace_id, span_id = call["context"]["trace_id"], call["context"]["span_id"]
        assert any(m["traceparent"].startswith(f"00-{trace_id}-{span_id}-") for m in sent)
