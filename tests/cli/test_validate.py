"""`devall validate`: exit codes, human and JSON output, secrets, and start-up cost."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Mapping
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from typer.testing import CliRunner

from devall_cli.cli.app import app
from devall_cli.errors import ExitCode
from tests.unit.config.hostile_files import CASES, HostileCase, mutated_files
from tests.unit.config.test_invalid_corpus import expectations

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO_ROOT / "workflows"
INVALID = sorted((REPO_ROOT / "tests" / "data" / "invalid").glob("*.yaml"))
LLM_ENV = {"BASE_URL": "http://127.0.0.1:9/v1", "API_KEY": "sk-test-cli-key"}

runner = CliRunner()

# Seconds. A refusal answers in milliseconds; reading a file over the size limit whole or
# expanding an alias bomb takes minutes. The bound catches only that, never a slow machine.
HANG_GUARD = 30


def validate(*args: str, env: Mapping[str, str | None] | None = None):  # type: ignore[no-untyped-def]
    return runner.invoke(app, ["validate", *args], env=env)


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


VALID = """\
graph:
  id: tiny
  start: ask
  end: [done]
  nodes:
    - id: ask
      type: agent
      config:
        provider: openai
        name: gpt-4o-mini
        tooling:
          - type: mcp_remote
            prefix: web
            config:
              server: http://127.0.0.1:8001/mcp?key=${SERVICE_KEY}
              headers: {Authorization: "Bearer header-secret-value"}
          - type: mcp_local
            config: {command: python, args: [server.py]}
    - id: done
      type: passthrough
  edges:
    - {from: ask, to: done}
"""


def test_exit_codes_are_pinned() -> None:
    assert {member.name: member.value for member in ExitCode} == {
        "OK": 0,
        "FAILED": 1,
        "USAGE": 2,
        "CONFIG": 3,
        "CONNECTION": 4,
        "REMOTE": 5,
        "REPLAY_MISMATCH": 6,
        "DRIFT": 7,
        "BUDGET": 8,
        "INTERNAL": 70,
        "INTERRUPTED": 130,
        "TERMINATED": 143,
    }


def test_valid_workflow_prints_a_summary(tmp_path: Path) -> None:
    path = write(tmp_path / "flow.yaml", VALID)
    result = validate(str(path), "--var", "SERVICE_KEY=svc-key-123")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == f"{path}: workflow 'tiny' is valid (2 nodes, 1 edge)"
    assert lines[1] == "start: ask   end: done"
    assert "ask   agent (openai: gpt-4o-mini)" in result.stdout
    assert "mcp_remote prefix=web  http://127.0.0.1:8001/mcp?key=***" in result.stdout
    assert "mcp_local  python server.py" in result.stdout
    assert "done  passthrough" in result.stdout
    assert "svc-key-123" not in result.output
    assert "header-secret-value" not in result.output


def test_warnings_go_to_stderr(tmp_path: Path) -> None:
    path = write(
        tmp_path / "flow.yaml",
        "graph:\n  start: a\n  nodez: 1\n  nodes: [{id: a, type: passthrough}]\n",
    )
    result = validate(str(path))
    assert result.exit_code == 0
    assert result.stderr.splitlines()[0] == (
        f"devall: warning: {path}:3:3: graph.nodez: unknown key 'nodez' (ignored); "
        "did you mean 'nodes'?"
    )
    assert "is valid" in result.stdout


def test_every_issue_is_reported_with_source_line_and_caret() -> None:
    path = next(p for p in INVALID if p.stem == "several_issues")
    result = validate(str(path))
    assert result.exit_code == ExitCode.CONFIG
    assert result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if line.startswith("devall: error:")]
    assert len(errors) == 5
    assert errors[1] == (
        f"devall: error: {path}:15:68: graph.nodes[0].config.tooling[0].config.timeout: "
        "timeout must be a number, got 'slow' (text)"
    )
    lines = result.stderr.splitlines()
    at = lines.index(errors[1])
    assert lines[at + 1].strip().startswith("config: {server:")
    assert lines[at + 2] == "  " + " " * 67 + "^"


@pytest.mark.parametrize("path", INVALID, ids=[p.stem for p in INVALID])
def test_every_broken_workflow_exits_3_without_a_traceback(path: Path) -> None:
    result = validate(str(path))
    assert result.exit_code == ExitCode.CONFIG, result.output
    assert result.stderr.startswith("devall: error: ")
    assert "Traceback" not in result.output
    assert "internal error" not in result.output
    for line, _, message in expectations(path):
        where = f"{path}:{line}:" if line else f"{path}: "
        assert any(
            text.startswith(f"devall: error: {where}") and message in text
            for text in result.stderr.splitlines()
        ), (where, message, result.stderr)


# --- hostile input ------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_hostile_input_exits_3_with_a_located_message(tmp_path: Path, case: HostileCase) -> None:
    path = case.write(tmp_path)
    started = time.perf_counter()
    result = validate(str(path))
    elapsed = time.perf_counter() - started
    assert result.exit_code == ExitCode.CONFIG, result.output
    assert result.stdout == ""
    first = result.stderr.splitlines()[0]
    where = f"{path}:{case.where[0]}:{case.where[1]}: " if case.where else f"{path}: "
    assert first.startswith(f"devall: error: {where}"), first
    assert case.message in first
    assert "Traceback" not in result.output
    assert "\x1b" not in result.output and "\x00" not in result.output
    assert elapsed < HANG_GUARD


@pytest.mark.parametrize("name", ["file_over_10_mb", "alias_bomb"])
def test_oversized_file_and_alias_bomb_are_refused_before_reading_or_expanding(
    tmp_path: Path, name: str
) -> None:
    (case,) = [case for case in CASES if case.name == name]
    path = case.write(tmp_path)
    started = time.perf_counter()
    result = validate(str(path))
    assert time.perf_counter() - started < HANG_GUARD
    assert result.exit_code == ExitCode.CONFIG


def test_hostile_input_as_json_keeps_the_location(tmp_path: Path) -> None:
    (case,) = [case for case in CASES if case.name == "alias_bomb"]
    result = validate(str(case.write(tmp_path)), "--json")
    assert result.exit_code == ExitCode.CONFIG
    (issue,) = json.loads(result.stdout)["issues"]
    assert (issue["line"], issue["col"]) == case.where


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(mutated_files())
def test_mutated_workflows_exit_0_or_3_and_never_show_a_traceback(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "flow.yaml"
        path.write_bytes(data)
        result = validate(str(path), env=LLM_ENV)
    assert result.exit_code in (0, ExitCode.CONFIG), result.output
    assert "Traceback" not in result.output
    if result.exit_code == ExitCode.CONFIG:
        errors = [line for line in result.stderr.splitlines() if line.startswith("devall: error:")]
        assert errors
        assert all(line.startswith(f"devall: error: {path}") for line in errors)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    missing = validate(str(tmp_path / "nope.yaml"))
    assert missing.exit_code == ExitCode.CONFIG
    assert missing.stderr.strip() == f"devall: error: {tmp_path / 'nope.yaml'}: no such file"
    directory = validate(str(tmp_path))
    assert directory.exit_code == ExitCode.CONFIG
    assert "is a directory" in directory.stderr


def test_malformed_var_is_a_usage_error(tmp_path: Path) -> None:
    path = write(tmp_path / "flow.yaml", VALID)
    assert validate(str(path), "--var", "NO_EQUALS").exit_code == ExitCode.USAGE


def test_env_file_option(tmp_path: Path) -> None:
    path = write(tmp_path / "flow.yaml", VALID)
    (tmp_path / "vals.env").write_text("SERVICE_KEY=from-env-file\n")
    assert validate(str(path)).exit_code == ExitCode.CONFIG
    assert validate(str(path), "--env-file", str(tmp_path / "vals.env")).exit_code == 0
    missing = validate(str(path), "--env-file", str(tmp_path / "missing.env"))
    assert missing.exit_code == ExitCode.CONFIG
    assert "env file not found" in missing.stderr


# --- JSON ---------------------------------------------------------------------------------


def test_json_for_a_valid_workflow(tmp_path: Path) -> None:
    path = write(tmp_path / "flow.yaml", VALID)
    result = validate(str(path), "--json", "--var", "SERVICE_KEY=svc-key-123")
    assert result.exit_code == 0
    assert result.stderr == ""
    assert json.loads(result.stdout) == {
        "ok": True,
        "issues": [],
        "summary": {
            "workflow": "tiny",
            "nodes": [
                {
                    "id": "ask",
                    "type": "agent",
                    "provider": "openai",
                    "model": "gpt-4o-mini",
                    "tooling": [
                        {
                            "type": "mcp_remote",
                            "prefix": "web",
                            "target": "http://127.0.0.1:8001/mcp?key=***",
                        },
                        {"type": "mcp_local", "prefix": None, "target": "python server.py"},
                    ],
                },
                {"id": "done", "type": "passthrough", "tooling": []},
            ],
            "edges": 1,
            "start": ["ask"],
            "end": ["done"],
            "memory": [],
        },
    }


def test_json_for_an_invalid_workflow() -> None:
    path = next(p for p in INVALID if p.stem == "several_issues")
    result = validate(str(path), "--json")
    assert result.exit_code == ExitCode.CONFIG
    document = json.loads(result.stdout)
    assert document["ok"] is False
    assert document["summary"] is None
    assert len(document["issues"]) == 5
    assert document["issues"][0] == {
        "file": str(path),
        "path": "graph.nodes[0].config.name",
        "line": 11,
        "col": 7,
        "message": "name is required",
        "severity": "error",
    }


def test_json_when_the_file_cannot_be_read(tmp_path: Path) -> None:
    result = validate(str(tmp_path / "missing.yaml"), "--json")
    assert result.exit_code == ExitCode.CONFIG
    document = json.loads(result.stdout)
    assert document == {
        "ok": False,
        "issues": [
            {
                "file": str(tmp_path / "missing.yaml"),
                "path": "",
                "line": 0,
                "col": 0,
                "message": "no such file",
                "severity": "error",
            }
        ],
        "summary": None,
    }


def test_json_keeps_warnings_and_stays_ok(tmp_path: Path) -> None:
    path = write(
        tmp_path / "flow.yaml", "graph: {start: a, nodes: [{id: a, type: passthrough}], x: 1}\n"
    )
    result = validate(str(path), "--json")
    document = json.loads(result.stdout)
    assert result.exit_code == 0
    assert document["ok"] is True
    assert [issue["severity"] for issue in document["issues"]] == ["warning"]


# --- secrets ------------------------------------------------------------------------------


def test_secrets_are_masked_in_errors(tmp_path: Path) -> None:
    path = write(
        tmp_path / "flow.yaml",
        """\
        graph:
          start: a
          nodes:
            - id: a
              type: agent
              config:
                provider: openai
                name: m
                api_key: sk-literal-secret
                tooling: [{type: mcp_remote, config: {server: "${API_TOKEN}"}}]
        """,
    )
    result = validate(str(path), env={"API_TOKEN": "tok-not-a-url"})
    assert result.exit_code == ExitCode.CONFIG
    assert "tok-not-a-url" not in result.output
    assert "server must be an http:// or https:// URL, got '***' (text)" in result.stderr


# --- the shipped workflows ----------------------------------------------------------------


def test_offline_demo_is_valid_without_any_environment() -> None:
    result = validate(str(WORKFLOWS / "demo_offline.yaml"))
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert "workflow 'demo_offline' is valid (2 nodes, 1 edge)" in result.stdout
    assert "mcp_local  python mcp_example/mcp_server.py" in result.stdout


@pytest.mark.parametrize("name", ["local_openai", "demo_mcp"])
def test_llm_workflows_are_valid_with_base_url_and_api_key(name: str) -> None:
    result = validate(str(WORKFLOWS / f"{name}.yaml"), env=LLM_ENV)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert f"workflow '{name}' is valid" in result.stdout
    assert LLM_ENV["API_KEY"] not in result.output


def test_remote_demo_names_the_missing_placeholders() -> None:
    result = validate(str(WORKFLOWS / "demo_mcp.yaml"), env={"BASE_URL": None, "API_KEY": None})
    assert result.exit_code == ExitCode.CONFIG
    assert "unresolved placeholder ${BASE_URL}" in result.stderr
    assert "unresolved placeholder ${API_KEY}" in result.stderr


# Placeholders the shipped workflows leave for the run to set (dropped from the environment).
RUN_ONLY = ("BASE_URL", "API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "MEM0_API_KEY")


def test_allow_unset_passes_the_repositorys_own_workflows_and_imports_no_function_module() -> None:
    globs = ("*.yaml", "examples/*.yaml")  # as a shell expands them
    files = [str(p) for pattern in globs for p in sorted(WORKFLOWS.glob(pattern))]
    before = set(sys.modules)
    result = validate("--allow-unset", *files, env=dict.fromkeys(RUN_ONLY))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count(" is valid (") == len(files)
    assert "is not set; checked with a stand-in value" in result.stderr
    assert [line for line in result.stderr.splitlines() if "error" in line] == []
    imported = [sys.modules[name] for name in set(sys.modules) - before]
    assert [m for m in imported if str(WORKFLOWS) in str(getattr(m, "__file__", ""))] == []


def test_allow_unset_warns_at_each_use_and_json_keeps_them_as_warnings() -> None:
    demo = str(WORKFLOWS / "demo_mcp.yaml")
    result = validate("--allow-unset", demo, env={"BASE_URL": None, "API_KEY": None})
    assert result.exit_code == 0, result.stderr
    uses = [("21:19", "0", "base_url", "BASE_URL"), ("22:18", "0", "api_key", "API_KEY")]
    uses += [("36:19", "1", "base_url", "BASE_URL"), ("37:18", "1", "api_key", "API_KEY")]
    assert result.stderr.splitlines() == [
        f"devall: warning: {demo}:{at}: graph.nodes[{node}].config.{key}: ${{{name}}} is not "
        "set; checked with a stand-in value"
        for at, node, key, name in uses
    ]
    assert "workflow 'demo_mcp' is valid (2 nodes, 1 edge)" in result.stdout
    result = validate("--allow-unset", "--json", demo, env=dict.fromkeys(RUN_ONLY))
    document = json.loads(result.stdout)
    assert document["ok"] is True
    assert {issue["severity"] for issue in document["issues"]} == {"warning"}


def test_allow_unset_still_reports_every_other_error(tmp_path: Path) -> None:
    path = write(
        tmp_path / "flow.yaml",
        """\
        graph:
          start: [a]
          nodes:
            - {id: a, type: agent, config: {provider: openai, name: m, api_key: "${API_KEY}"}}
            - {id: b, type: no_such_type}
        """,
    )
    result = validate("--allow-unset", str(path), env={"API_KEY": None})
    assert result.exit_code == ExitCode.CONFIG
    lines = result.stderr.splitlines()
    assert lines[0] == (
        f"devall: warning: {path}:4:73: graph.nodes[0].config.api_key: ${{API_KEY}} is not set; "
        "checked with a stand-in value"
    )
    assert any(line.startswith(f"devall: error: {path}:5:") for line in lines), lines


def test_local_openai_defaults_model_and_base_url() -> None:
    from devall_cli.nodes.agent_settings import AgentConfig
    from devall_cli.workflow.loader import load_workflow

    flow = load_workflow(WORKFLOWS / "local_openai.yaml", environ={"API_KEY": "sk-x-1234"})
    config = flow.graph.node("lucky").config
    assert isinstance(config, AgentConfig)
    assert (config.name, config.base_url) == ("gpt-4o-mini", "https://api.openai.com/v1")
    assert flow.redactor.secrets == ("sk-x-1234",)


# --- the installed command ----------------------------------------------------------------


def devall_command() -> str:
    beside = Path(sys.executable).parent / "devall"
    found = str(beside) if beside.exists() else shutil.which("devall")
    assert found, "the devall entry point is not installed"
    return found


def test_installed_entry_point(tmp_path: Path) -> None:
    env = {**os.environ, "NO_COLOR": "1"}
    ok = subprocess.run(
        [devall_command(), "validate", str(WORKFLOWS / "demo_offline.yaml")],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )
    assert ok.returncode == 0, ok.stderr
    assert "workflow 'demo_offline' is valid" in ok.stdout
    broken = subprocess.run(
        [devall_command(), "validate", "--json", str(INVALID[0])],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )
    assert broken.returncode == ExitCode.CONFIG
    assert json.loads(broken.stdout)["ok"] is False


def test_validate_does_not_import_heavy_libraries() -> None:
    script = textwrap.dedent(
        f"""
        import sys
        from typer.testing import CliRunner
        from devall_cli.cli.app import app
        result = CliRunner().invoke(app, ["validate", {str(WORKFLOWS / "demo_offline.yaml")!r}])
        assert result.exit_code == 0, result.output
        heavy = sorted(m for m in ("fastmcp", "httpx", "mcp") if m in sys.modules)
        print("heavy:", heavy)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "heavy: []"


def test_several_files_at_once_as_a_shell_glob_gives_them() -> None:
    files = sorted(str(p) for p in WORKFLOWS.glob("*.yaml"))
    assert len(files) >= 3
    result = validate(*files)  # BASE_URL and API_KEY missing: the two LLM demos are invalid
    assert result.exit_code == ExitCode.CONFIG
    assert "demo_offline' is valid" in result.stdout
    assert "unresolved placeholder ${API_KEY}" in result.stderr
    result = validate(*files, "--json", env=LLM_ENV)
    assert result.exit_code == 0, result.stdout
    documents = json.loads(result.stdout)
    assert [d["file"] for d in documents] == files
    assert all(d["ok"] for d in documents)
    assert LLM_ENV["API_KEY"] not in result.stdout
