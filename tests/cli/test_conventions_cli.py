"""The CLI's conventions: exit codes, one-line errors with hints, run files, colour, completion.

In-process (`cli`, Typer's CliRunner) where what is pinned is what the command prints and exits
with; through the installed `devall` command (a subprocess) where only a process shows it: a
terminal's colour and live line, shell completion, and a usage error from the entry point.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

import jsonschema

from tests.helpers import cli, devall, free_port
from tests.servers.fake_llm import FakeLLM

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
DEVALL = BIN / "devall"
DEMO = ROOT / "workflows" / "demo_offline.yaml"
INVALID = ROOT / "tests" / "data" / "invalid"
# The venv's bin/ first, so that `python` in a workflow finds fastmcp (as `make demo` does).
ENV = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1"}
VENV_PATH = {"PATH": ENV["PATH"]}  # for a workflow's `python`, run in-process
RUN_FILES = re.compile(r"^run files: (\S+)/$")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def scripted(tmp_path: Path, *, script: object = ("done",), tooling: object = None) -> Path:
    """A one-agent workflow driven by the scripted provider (JSON, which is YAML)."""
    config: dict[str, object] = {"provider": "scripted", "name": "s", "script": script}
    if tooling is not None:
        config["tooling"] = tooling
    node = {"id": "solo", "type": "agent", "config": config}
    flow = {"version": "0.4.0", "graph": {"id": "flow", "start": ["solo"], "nodes": [node]}}
    path = tmp_path / "flow.yaml"
    path.write_text(json.dumps(flow))
    return path


FUNCTIONS = '''\
def long_word() -> str:
    """One long word."""
    return "A" * 300 + "END"


def greet(name: str) -> str:
    """Greet someone."""
    return "hello " + name
'''


def with_functions(tmp_path: Path, script: object = ("done",)) -> Path:
    write(tmp_path / "functions" / "tools.py", FUNCTIONS)
    tools = [{"name": "long_word"}, {"name": "greet"}]
    tooling = [{"type": "function", "config": {"tools": tools}}]
    return scripted(tmp_path, script=script, tooling=tooling)


def last_line(text: str) -> str:
    return text.rstrip("\n").splitlines()[-1]


# --- usage errors ------------------------------------------------------------------------------


def test_an_unknown_option_is_one_error_line_and_a_hint_exit_2() -> None:
    done = devall("run", str(DEMO), "--bogus")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        done.stderr.splitlines()[0],
        "  hint: try 'devall run --help'",
    ]
    assert done.stderr.startswith("devall: error: no such option: --bogus")
    assert "Usage:" not in done.stderr


def test_bad_args_json_is_one_error_line_and_a_hint_exit_2(tmp_path: Path) -> None:
    done = cli("tools", "call", str(with_functions(tmp_path)), "greet", "--args", "{bad")
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("devall: error: invalid value for --args: not valid JSON")
    assert lines[1] == "  hint: try 'devall tools call --help'"


def test_debug_shows_the_traceback_of_a_usage_error() -> None:
    done = cli("--debug", "run", str(DEMO), "--bogus")
    assert done.returncode == 2
    assert "Traceback (most recent call last)" in done.stderr
    assert "devall: error: no such option: --bogus" in done.stderr


def test_debug_shows_where_each_config_error_was_found(tmp_path: Path) -> None:
    bad = INVALID / "unknown_keys_in_node.yaml"
    plain = cli("validate", str(bad))
    debug = cli("--debug", "validate", str(bad))
    assert plain.returncode == debug.returncode == 3
    assert "Traceback" not in plain.stderr and 'File "' not in plain.stderr
    assert 'File "' in debug.stderr and "check_keys" in debug.stderr
    assert "unknown key 'tolling'; did you mean 'tooling'?" in debug.stderr


# --- unknown keys ------------------------------------------------------------------------------


def test_an_unknown_key_in_a_node_or_tooling_entry_is_an_error_with_a_suggestion() -> None:
    done = cli("validate", str(INVALID / "unknown_keys_in_node.yaml"))
    assert done.returncode == 3
    assert "error: " in done.stderr
    for typo, meant in (
        ("tolling", "tooling"),
        ("prefx", "prefix"),
        ("startup_timout", "startup_timeout"),
        ("contxt_window", "context_window"),
    ):
        assert "devall: error: " in done.stderr
        assert f"unknown key '{typo}'; did you mean '{meant}'?" in done.stderr
    assert "devall: warning: " in done.stderr and "unknown key 'edgs' (ignored)" in done.stderr


def test_keys_chatdev_accepts_in_a_node_stay_accepted(tmp_path: Path) -> None:
    flow = write(
        tmp_path / "flow.yaml",
        """\
        graph:
          id: flow
          log_level: INFO
          start: [solo]
          nodes:
            - id: solo
              type: agent
              input: []
              output: []
              config: {provider: scripted, name: s, script: [done]}
        """,
    )
    done = cli("validate", str(flow))
    assert done.returncode == 0, done.stderr


# --- the run directory -------------------------------------------------------------------------


def test_run_ends_its_trace_with_the_run_files_line(tmp_path: Path) -> None:
    done = cli("run", str(scripted(tmp_path)), "--task", "x", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    found = RUN_FILES.match(last_line(done.stderr))
    assert found, done.stderr
    assert found.group(1).startswith("logs/")
    assert (tmp_path / found.group(1) / "result.json").is_file()


def test_tools_call_records_the_call_like_a_run(tmp_path: Path) -> None:
    flow = with_functions(tmp_path)
    done = cli("tools", "call", str(flow), "greet", "--args", '{"name": "Ann"}', cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello Ann\n"
    found = RUN_FILES.match(last_line(done.stderr))
    assert found and found.group(1).startswith("logs/tools-call-"), done.stderr
    done = cli("tools", "call", str(flow), "greet", "--args", '{"name": "Bo"}', "--out", "rec")
    assert done.returncode == 0, done.stderr
    assert last_line(done.stderr) == "run files: rec/"


def test_tools_call_out_writes_events_and_result_and_json_paths_open_from_the_cwd(
    tmp_path: Path,
) -> None:
    done = cli("tools", "call", str(DEMO), "sample_image", "--out", "rec", "--json", env=VENV_PATH)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "rec" / "events.jsonl").is_file()
    result = json.loads((tmp_path / "rec" / "result.json").read_text())
    assert result["status"] == "ok" and result["exit_code"] == 0
    (block,) = json.loads(done.stdout)["blocks"]
    assert block["type"] == "attachment"
    assert (tmp_path / block["path"]).is_file()  # relative to the current directory
    assert last_line(done.stderr) == "run files: rec/"


# --- colour, live line, verbose ----------------------------------------------------------------


def run_in_terminal(args: list[str], env: dict[str, str]) -> str:
    """Everything the command writes to a terminal (a pseudo-terminal), until it exits."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [str(DEVALL), *args], stdin=follower, stdout=follower, stderr=follower, env=env
    )
    os.close(follower)
    chunks: list[bytes] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        elif process.poll() is not None:
            break
    process.wait(timeout=10)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


HIDE_CURSOR = "\x1b[?25l"  # what the live status line (spinner) does first
SPINNER = re.compile("[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]")  # Rich's "dots" frames
COLOUR = re.compile(r"\x1b\[[0-9;]*3[0-9]m")  # a foreground colour (bold is not a colour)


def test_no_color_and_NO_COLOR_turn_off_the_spinner_and_the_live_line(tmp_path: Path) -> None:
    flow = str(scripted(tmp_path))
    colour = {k: v for k, v in ENV.items() if k != "NO_COLOR"} | {"TERM": "xterm", "COLUMNS": "100"}
    shown = run_in_terminal(["run", flow, "--task", "x", "--out", str(tmp_path / "a")], colour)
    assert HIDE_CURSOR in shown and COLOUR.search(shown)  # a terminal with colour: animated
    for args, env in (
        (["--no-color", "run", flow, "--task", "x", "--out", str(tmp_path / "b")], colour),
        (["run", flow, "--task", "x", "--out", str(tmp_path / "c")], colour | {"NO_COLOR": "1"}),
    ):
        shown = run_in_terminal(args, env)
        assert "run ok" in shown
        assert HIDE_CURSOR not in shown  # no live line
        assert not SPINNER.search(shown)
        assert not COLOUR.search(shown)


def test_verbose_shows_a_tool_result_whole_wrapped_not_cut(tmp_path: Path) -> None:
    flow = with_functions(tmp_path, script=[{"tool_calls": [{"name": "long_word"}]}, "done"])
    done = cli(
        "run", str(flow), "--task", "x", "-v", "--out", "rec", env={"COLUMNS": "60"}, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    panel = [line for line in done.stderr.splitlines() if line.startswith("│")]
    text = "".join(line.strip("│ ") for line in panel)
    assert "A" * 300 + "END" in text
    assert all(len(line) <= 60 for line in panel)


# --- errors say how to fix them ----------------------------------------------------------------


def test_an_unreachable_server_is_named_as_written_with_a_hint(tmp_path: Path) -> None:
    port = free_port()
    tooling = [{"type": "mcp_remote", "config": {"server": f"http://127.0.0.1:{port}/mcp"}}]
    done = cli("run", str(scripted(tmp_path, tooling=tooling)), "--task", "x", cwd=tmp_path)
    assert done.returncode == 4
    assert f"✗ server '127.0.0.1:{port}' unreachable" in done.stderr
    assert f"hint: start the MCP server that should answer at http://127.0.0.1:{port}/mcp" in (
        done.stderr
    )
    assert "exited (" not in done.stderr and f"127.0.0.1-{port}" not in done.stderr


def test_a_server_missing_a_module_says_activate_the_venv(tmp_path: Path) -> None:
    write(tmp_path / "server.py", "import no_such_module_for_devall\n")
    tooling = [{"type": "mcp_local", "config": {"command": sys.executable, "args": ["server.py"]}}]
    done = cli("tools", "list", str(scripted(tmp_path, tooling=tooling)))
    assert done.returncode == 4
    assert "server 'server' exited" in done.stderr  # the id is the script's name, quoted
    assert "hint: the server's Python has no module 'no_such_module_for_devall'" in done.stderr
    assert "activate the virtualenv" in done.stderr


def test_a_refused_api_key_says_set_api_key(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.enqueue(FakeLLM.error_reply(401))
    flow = write(
        tmp_path / "flow.yaml",
        f"""\
        graph:
          id: flow
          start: [solo]
          nodes:
            - id: solo
              type: agent
              config: {{provider: openai, base_url: '{fake_llm.base_url}', api_key: k, name: m}}
        """,
    )
    done = cli("run", str(flow), "--task", "x", cwd=tmp_path)
    assert done.returncode == 5, done.stderr
    assert "hint: the model endpoint refused the API key: set API_KEY" in done.stderr


# --- completion --------------------------------------------------------------------------------


def complete(words: str, cwd: Path | None = None) -> list[str]:
    """What bash completion offers for the last word of `words` (Typer's protocol)."""
    env = ENV | {
        "_DEVALL_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split(" ")) - 1),
    }
    done = subprocess.run(
        [str(DEVALL)], capture_output=True, text=True, env=env, cwd=cwd, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_show_and_install_completion(tmp_path: Path) -> None:
    # Typer asks the process tree for the shell before it reads the one given, so the test
    # names it alone: under `sh -c` (make, CI runners) the detected `sh` would be refused.
    env = ENV | {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    done = devall("--show-completion", "bash", env=env)
    assert done.returncode == 0 and "_DEVALL_COMPLETE=complete_bash" in done.stdout
    home = tmp_path / "home"
    home.mkdir()
    done = devall("--install-completion", "bash", env=env | {"HOME": str(home)})
    assert done.returncode == 0, done.stderr
    assert "devall" in (home / ".bashrc").read_text()


def test_workflow_node_and_tool_names_complete(tmp_path: Path) -> None:
    flow = with_functions(tmp_path)
    write(tmp_path / "other.yml", "graph: {}\n")
    assert complete("devall run fl", cwd=tmp_path) == ["flow.yaml"]
    assert complete("devall validate ", cwd=tmp_path) == ["flow.yaml", "functions/", "other.yml"]
    assert complete(f"devall tools list {flow} --node ") == ["solo"]
    assert complete(f"devall tools call {flow} ") == ["greet", "long_word"]
    assert complete(f"devall tools call {flow} gr") == ["greet"]
    assert complete("devall tools ca") == ["call"]


# --- init, schema, packaging -------------------------------------------------------------------


def test_init_writes_a_starter_that_runs_offline(tmp_path: Path) -> None:
    # That the starter runs offline, and its tests pass: tests/cli/test_test_cmd.py runs them.
    done = cli("init", "proj", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    files = ("workflow.yaml", "workflow.test.yaml", "mcp_server.py", ".env.example")
    for name in (*files, "workflow.schema.json"):
        assert (tmp_path / "proj" / name).is_file(), name
    assert "API_KEY=" in (tmp_path / "proj" / ".env.example").read_text()
    assert 'next: devall run proj/workflow.yaml --task "Tell me my fortune"' in done.stderr
    assert "devall test proj/workflow.test.yaml" in done.stderr
    again = cli("init", "proj", cwd=tmp_path)
    assert again.returncode == 2
    assert "hint: choose another DIR, or pass --force" in again.stderr


def test_schema_is_a_json_schema_that_editors_can_use(tmp_path: Path) -> None:
    done = cli("schema")
    assert done.returncode == 0, done.stderr
    schema = json.loads(done.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert cli("schema", "-o", str(tmp_path / "s.json")).returncode == 0
    assert json.loads((tmp_path / "s.json").read_text()) == schema
    readme = (ROOT / "README.md").read_text()
    assert "# yaml-language-server: $schema=" in readme and "devall schema" in readme


def test_license_metadata_is_in_the_current_form() -> None:
    # A TOML table (`{text = ...}`) makes setuptools print a deprecation warning on install.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert isinstance(project["project"]["license"], str)
    (backend,) = project["build-system"]["requires"]
    assert re.fullmatch(r"setuptools>=(\d+)", backend)
    assert int(backend.split(">=")[1]) >= 77  # the first release that reads an SPDX string
