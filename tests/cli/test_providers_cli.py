"""`devall run` with the gemini and anthropic providers, end to end against fake API servers.

Each fake serves a tool-call turn and then the answer; the tool is a real fixture MCP server
started by devall. The key must never show in any output, and every failure must map to its
exit code with one `devall: error:` line.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT
from tests.helpers import events, invoke
from tests.servers.fake_anthropic import FakeAnthropic
from tests.servers.fake_gemini import FakeGemini
from tests.servers.fake_llm import FakeLLM
from tests.servers.fixture_server import png_bytes
from tests.servers.serve import SERVERS_DIR, free_port

KEY = "key-e2e-7c6b5a4d3e2f1a0b"
FAKES: dict[str, type[FakeLLM]] = {"gemini": FakeGemini, "anthropic": FakeAnthropic}
KEY_ENV = {"gemini": "GEMINI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
DEVALL = Path(sys.executable).parent / "devall"


@pytest.fixture(params=sorted(FAKES))
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def fake(provider: str) -> Iterator[Any]:
    with FAKES[provider](api_key=KEY) as server:  # type: ignore[call-arg]
        yield server


RAW = SERVERS_DIR / "raw_server.py"


def workflow(
    path: Path, provider: str, base_url: str, *, tools: bool = True, **config: Any
) -> Path:
    """One agent `a` on the provider, with the fixture server's tools; JSON is YAML."""
    node: dict[str, Any] = {
        "provider": provider,
        "name": "model-test",
        "base_url": base_url,
        "api_key": "${LLM_KEY}",
        "params": {"retries": 0},
        **config,
    }
    if tools:
        # The stdlib server: the tools are what the model is offered, not what is tested.
        args = [str(RAW), "--fixture"]
        server = {"command": sys.executable, "args": args, "wait_for_log": "ready"}
        node["tooling"] = [{"type": "mcp_local", "config": server}]
    document = {
        "graph": {
            "id": "p",
            "start": ["a"],
            "nodes": [{"id": "a", "type": "agent", "config": node}],
        }
    }
    path.mkdir(parents=True, exist_ok=True)
    file = path / "wf.yaml"
    file.write_text(json.dumps(document, indent=1))
    return file


def written(run_dir: Path) -> dict[str, str]:
    return {str(p): p.read_text(errors="replace") for p in run_dir.rglob("*") if p.is_file()}


def tool_result_sent(provider: str, body: dict[str, Any]) -> tuple[str, str]:
    """(call reference, result text) of the tool result in the second request."""
    if provider == "gemini":
        part = body["contents"][-1]["parts"][0]["functionResponse"]
        return part["name"], part["response"]["result"]
    block = body["messages"][-1]["content"][0]
    return block["tool_use_id"], block["content"]


# --- a tool call, then the answer --------------------------------------------------------------


def test_a_tool_call_turn_then_the_answer(tmp_path: Path, provider: str, fake: Any) -> None:
    fake.enqueue(fake.tool_call_reply([("add", {"a": 2, "b": 3})]), "The sum is 5.")
    wf = workflow(tmp_path, provider, fake.base_url)

    code, out, err = invoke(
        "run", str(wf), "--task", "add 2 and 3", "--out", "run", "--var", f"LLM_KEY={KEY}"
    )

    assert code == 0, err
    assert out == "The sum is 5.\n"
    second = fake.requests[1].body
    expected_ref = "add" if provider == "gemini" else "toolu_fake_1"
    assert tool_result_sent(provider, second) == (expected_ref, "5")
    replies = [e for e in events(Path("run")) if e["kind"] == "model.reply"]
    assert replies[0]["tool_calls"][0]["name"] == "add" and replies[0]["usage"]["total_tokens"] > 0
    assert [e["kind"] for e in events(Path("run"))].count("tool.result") == 1
    result = json.loads(Path("run/result.json").read_text())
    assert result["status"] == "ok" and result["output"] == "The sum is 5."
    assert result["totals"]["model_calls"] == 2 and result["totals"]["tool_calls"] == 1


def test_json_output_is_the_result_document(tmp_path: Path, provider: str, fake: Any) -> None:
    fake.enqueue(fake.tool_call_reply([("echo", {"text": "hi"})]), "Echoed.")
    wf = workflow(tmp_path, provider, fake.base_url)
    code, out, err = invoke("run", str(wf), "--out", "run", "--json", "--var", f"LLM_KEY={KEY}")
    assert code == 0, err
    document = json.loads(out)
    assert document == json.loads(Path("run/result.json").read_text())
    assert document["output"] == "Echoed." and document["tools"][0]["tool"] == "echo"


# --- secrets --------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["placeholder", "environment"])
def test_the_key_never_appears_in_any_output(
    tmp_path: Path, provider: str, fake: Any, source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def script() -> None:
        # The key travels: the model asks a tool to echo it and then says it.
        fake.enqueue(fake.tool_call_reply([("echo", {"text": KEY})]), f"Your key is {KEY}.")

    if source == "environment":
        monkeypatch.setenv(KEY_ENV[provider], KEY)
        wf = workflow(tmp_path, provider, fake.base_url, api_key=None)
        secrets: list[str] = []
    else:
        wf = workflow(tmp_path, provider, fake.base_url)
        secrets = ["--var", f"LLM_KEY={KEY}"]
    script()
    code, out, err = invoke("run", str(wf), "--out", "run1", "--verbose", *secrets)
    assert code == 0, err
    script()
    code2, json_out, err2 = invoke("run", str(wf), "--out", "run2", "--json", *secrets)
    assert code2 == 0, err2
    header = "x-goog-api-key" if provider == "gemini" else "x-api-key"
    assert fake.requests[0].headers[header] == KEY  # it was sent
    outputs = {"stdout": out, "stderr": err, "--json": json_out, "stderr 2": err2}
    outputs |= written(Path("run1")) | written(Path("run2"))
    assert "run1/events.jsonl" in outputs and "run1/result.json" in outputs
    for name, text in outputs.items():
        assert KEY not in text, name
    assert out == "Your key is ***.\n"


# --- failures ---------------------------------------------------------------------------------


def test_a_wrong_key_is_exit_5_with_one_error_line(
    tmp_path: Path, provider: str, fake: Any
) -> None:
    wrong = "key-wrong-1234567890abcdef"
    wf = workflow(tmp_path, provider, fake.base_url, tools=False)
    code, out, err = invoke("run", str(wf), "--out", "run", "--var", f"LLM_KEY={wrong}")
    assert code == 5, err
    assert out == "" and "Traceback" not in err
    (line,) = [x for x in err.splitlines() if x.startswith("devall: error:")]
    assert "answered HTTP 40" in line and fake.base_url in line
    for text in (err, *written(Path("run")).values()):
        assert wrong not in text
    assert json.loads(Path("run/result.json").read_text())["exit_code"] == 5


@pytest.mark.parametrize("status", [404, 429, 500])
def test_http_errors_after_retries_are_exit_5(
    tmp_path: Path, provider: str, fake: Any, status: int
) -> None:
    fake.enqueue(*[fake.error_reply(status, headers={"Retry-After": "0"})] * 2)
    wf = workflow(tmp_path, provider, fake.base_url, tools=False, params={"retries": 1})
    code, _, err = invoke("run", str(wf), "--out", "run", "--var", f"LLM_KEY={KEY}")
    assert code == 5, err
    tries = 1 if status == 404 else 2
    assert len(fake.requests) == tries
    assert f"answered HTTP {status}" in err and f"fake error {status}" in err


def test_an_unreachable_endpoint_is_exit_4(tmp_path: Path, provider: str) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    wf = workflow(tmp_path, provider, url, tools=False)
    code, out, err = invoke("run", str(wf), "--out", "run", "--json", "--var", f"LLM_KEY={KEY}")
    assert code == 4, err
    assert f"devall: error: cannot reach model endpoint {url}" in err
    assert json.loads(out)["status"] == "failed"
    assert KEY not in out + err


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_the_model_thinks_ends_the_run(
    tmp_path: Path, provider: str, fake: Any, signum: int, code: int
) -> None:
    fake.enqueue(fake.slow_reply(60, "too late"))
    wf = workflow(tmp_path, provider, fake.base_url, tools=False)
    run_dir = tmp_path / "run"
    env = {**os.environ, "LLM_KEY": KEY}
    proc = subprocess.Popen(
        [str(DEVALL), "run", str(wf), "--out", str(run_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 30
        while not fake.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert fake.requests, "the model was never asked"
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, err
    assert out == "" and "Traceback" not in err and "devall: error:" in err
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "interrupted" and result["exit_code"] == code
    assert events(run_dir)[-1]["kind"] == "run.finished"
    assert KEY not in err


# --- images ---------------------------------------------------------------------------------


def test_an_image_gemini_answers_with_is_saved_as_an_attachment(tmp_path: Path) -> None:
    image = png_bytes()
    with FakeGemini(api_key=KEY) as gemini:
        gemini.enqueue(FakeGemini.image_reply(image, text="Here is your picture."))
        wf = workflow(tmp_path, "gemini", gemini.base_url, tools=False)
        code, out, err = invoke("run", str(wf), "--out", "run", "--var", f"LLM_KEY={KEY}")
    assert code == 0, err
    saved = f"[image saved: attachments/gemini_image_1.png (image/png, {len(image)} bytes)]"
    assert out == f"Here is your picture.\n{saved}\n"
    assert Path("run/attachments/gemini_image_1.png").read_bytes() == image
    (attachment,) = json.loads(Path("run/result.json").read_text())["attachments"]
    assert attachment["path"] == "attachments/gemini_image_1.png"
    assert attachment["node"] == "a" and attachment["tool"] == "gemini"


# --- validate --------------------------------------------------------------------------------


def test_validate_warns_about_params_gemini_does_not_send(tmp_path: Path) -> None:
    wf = workflow(
        tmp_path,
        "gemini",
        "http://127.0.0.1:1",
        tools=False,
        params={"temperature": 0.1, "logit_bias": {}, "top_k": 3},
    )
    code, out, err = invoke("validate", str(wf), "--var", "LLM_KEY=k")
    assert code == 0, err
    assert "params.logit_bias is not sent by 'provider: gemini' (ignored)" in err
    assert err.count("is not sent by") == 1  # temperature and top_k are sent
    assert "agent (gemini: model-test)" in out


# --- the examples -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("example", "provider", "answers"),
    [
        ("gemini_tools.yaml", "gemini", ["I picked 42."]),
        ("anthropic_tools.yaml", "anthropic", ["One\nTwo", "Short but fine: 7/10"]),
    ],
)
def test_the_examples_validate_and_run_against_the_fakes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, example: str, provider: str, answers: list[str]
) -> None:
    # The examples start the example server with `python`: the one that has fastmcp.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    path = REPO_ROOT / "workflows" / "examples" / example
    key_var = f"{KEY_ENV[provider]}={KEY}"
    code, _, err = invoke("validate", str(path), "--var", key_var)
    assert code == 0, err
    with FAKES[provider](api_key=KEY) as fake:  # type: ignore[call-arg]
        fake.enqueue(fake.tool_call_reply([("rand_num", {"a": 1, "b": 2})]), *answers)
        code, out, err = invoke(
            "run",
            str(path),
            "--task",
            "go",
            "--out",
            "run",
            "--var",
            key_var,
            "--var",
            f"BASE_URL={fake.base_url}",
        )
        bodies = [r.body for r in fake.requests]
    assert code == 0, err
    assert out == f"{answers[-1]}\n"
    _, drawn = tool_result_sent(provider, bodies[1])
    assert drawn in {"1", "2"}


def test_validating_the_examples_imports_no_http_stack() -> None:
    examples = [
        str(REPO_ROOT / "workflows" / "examples" / n)
        for n in ("gemini_tools.yaml", "anthropic_tools.yaml")
    ]
    script = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from devall_cli.cli.app import app\n"
        f"result = CliRunner().invoke(app, ['validate', *{examples!r}])\n"
        "assert result.exit_code == 0, result.output\n"
        "print(sorted(m for m in ('fastmcp', 'httpx', 'mcp') if m in sys.modules))\n"
    )
    env = {**os.environ, "GEMINI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
