"""Foreign text through the CLI: lone surrogates, Rich markup and terminal control sequences.

Text from servers, models, files and argv reaches every record (lone surrogates as U+FFFD), is
printed verbatim (never as markup or emoji), reaches the terminal only with its control
characters escaped, and leaves the product on stdout exact when stdout is not a terminal.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.cli.test_reliability_cli import (
    API_KEY,
    HOSTILE,
    events,
    invoke,
    local_tooling,
    of_kind,
    remote_tooling,
    tool_messages,
    workflow,
)
from tests.servers.fake_llm import FakeLLM
from tests.servers.odd_text_server import CONTROLS, MARKUP
from tests.servers.serve import SERVERS_DIR, ServerProcess

ODD = SERVERS_DIR / "odd_text_server.py"
# What must never reach a terminal: C0 controls but tab and newline, DEL, C1, surrogates.
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
SHOWN_CONTROLS = "before\\x1b[2J\\x1b]0;pwned\\x07\\x1b]52;c;ZXZpbA==\\x07\\x9b31m\\x7fafter"


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


@pytest.fixture
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables wide enough that no cell is wrapped."""
    monkeypatch.setenv("COLUMNS", "1000")


def run_llm(wf: Path, *args: str) -> tuple[int, str, str]:
    return invoke("run", str(wf), "--out", "run", "--var", f"LLM_KEY={API_KEY}", *args)


def scripted(tmp_path: Path, *turns: dict[str, object], **settings: object) -> Path:
    """A scripted agent using the odd text server; JSON escapes carry the odd text into YAML."""
    return workflow(tmp_path, local_tooling(ODD, **settings), script=list(turns))


# --- lone surrogates ------------------------------------------------------------------------------


def test_lone_surrogates_from_a_server_and_the_model_become_replacement_characters(
    tmp_path: Path, llm: FakeLLM
) -> None:
    wf = workflow(tmp_path, local_tooling(ODD), llm=llm)
    calls = [("lone", {}), ("notify", {}), ("echo", {"text": "x\ud800y"})]
    llm.enqueue(
        FakeLLM.tool_call_reply(calls, content="thinking \ud800"),
        FakeLLM.tool_call_reply([("echo", {"text": "again"})]),
        "answer \ud800",
    )
    # Undecodable bytes in argv reach Python as lone surrogates (surrogateescape).
    code, out, err = run_llm(wf, "--task", "task \udcff")
    assert code == 0, err
    assert out == "answer \ufffd\n"
    assert "internal error" not in err and "failed" not in err and "Traceback" not in err
    run = Path("run")
    assert [e["kind"] for e in events(run)][-1] == "run.finished"
    result = json.loads((run / "result.json").read_text(encoding="utf-8"))
    assert result["status"] == "ok" and result["output"] == "answer \ufffd"
    assert result["task"] == "task \ufffd"
    offered = {t["function"]["name"]: t["function"] for t in llm.requests[0].body["tools"]}
    assert offered["lone"]["description"] == (
        "Returns a lone surrogate \ufffd in text and structure."
    )
    sent = tool_messages(llm.requests[1].body)
    # the text, then the structured content it does not repeat
    assert sent["call_fake_1"] == 'a\ufffdb\n{"value":"a\ufffdb","key\ufffd":["\ufffd"]}'
    assert sent["call_fake_3"] == "x\ufffdy"  # what the server was sent, echoed back
    last = [m for m in llm.requests[2].body["messages"] if m["role"] == "tool"][-1]
    assert last["content"] == "again"  # the session still serves calls
    (reply, _, _) = of_kind(run, "model.reply")
    assert reply["content"] == "thinking \ufffd"
    echo = next(e for e in of_kind(run, "tool.call") if e["original_name"] == "echo")
    assert echo["arguments"] == {"text": "x\ufffdy"}
    log = (run / "servers" / "odd_text_server.log").read_text(encoding="utf-8")
    assert "warning (odd\ufffd): note \ufffd\x1b[2J" in log and "\ufffd" in log


def test_lone_surrogates_from_a_remote_server_become_replacement_characters(
    tmp_path: Path,
) -> None:
    calls = [("lone", {}), ("notify", {}), ("echo", {"text": "x\ud800y"})]
    turns = [
        {"tool_calls": [{"name": name, "arguments": args} for name, args in calls]},
        {"tool_calls": [{"name": "echo", "arguments": {"text": "again"}}]},
        {"content": "{tool_results}"},
    ]
    with ServerProcess(ODD) as server:
        wf = workflow(tmp_path, remote_tooling(server.url), script=turns)
        code, out, err = invoke("tools", "list", str(wf), "--json")
        assert code == 0, err
        described = {row["name"]: row["description"] for row in json.loads(out)}
        assert described["lone"] == "Returns a lone surrogate \ufffd in text and structure."
        code, out, err = invoke("run", str(wf), "--out", "run")
    assert code == 0, err
    texts = [e["blocks"][0]["text"] for e in of_kind(Path("run"), "tool.result")]
    # The three calls of the first turn run at once and are recorded as they end.
    assert sorted(texts[:3]) == sorted(["a\ufffdb", "sent", "x\ufffdy"])
    assert texts[3:] == ["again"]  # the session lived on
    logged = [e["line"] for e in of_kind(Path("run"), "server.log")]
    assert "warning (odd\ufffd): note \ufffd\x1b[2J" in logged
    assert [e["kind"] for e in events(Path("run"))][-1] == "run.finished"


def test_lone_surrogates_in_yaml_vars_and_the_environment_are_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ODD_ENV", "e\udcff")  # an environment value that is not UTF-8
    texts = ["y\ud800", "${ODD_VAR}", "${ODD_ENV}"]
    wf = scripted(
        tmp_path,
        {"tool_calls": [{"name": "echo", "arguments": {"text": t}} for t in texts]},
        {"content": "{tool_results} \ud800"},
    )
    code, out, err = invoke("run", str(wf), "--out", "run", "--var", "ODD_VAR=v\udcff")
    assert code == 0, err
    assert out == "y\ufffd\nv\ufffd\ne\ufffd \ufffd\n"
    results = [e["blocks"][0]["text"] for e in of_kind(Path("run"), "tool.result")]
    assert results == ["y\ufffd", "v\ufffd", "e\ufffd"]


def test_tools_list_and_call_carry_lone_surrogates_as_replacement_characters(
    tmp_path: Path,
) -> None:
    wf = scripted(tmp_path, {"content": "x"})
    code, out, err = invoke("tools", "list", str(wf), "--json")
    assert code == 0, err
    described = {row["name"]: row for row in json.loads(out)}
    assert described["lone"]["description"] == (
        "Returns a lone surrogate \ufffd in text and structure."
    )
    assert described["echo"]["input_schema"]["properties"]["text"]["description"] == "text \ufffd"
    code, out, err = invoke("tools", "call", str(wf), "lone", "--json")
    assert code == 0, err
    assert json.loads(out)["blocks"][0]["text"] == "a\ufffdb"
    code, out, err = invoke("tools", "call", str(wf), "echo", "--args", '{"text": "\\ud800"}')
    assert (code, out) == (0, "\ufffd\n"), err


def test_a_task_on_stdin_that_is_not_utf8_is_a_usage_error(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from devall_cli.cli.app import app

    wf = scripted(tmp_path, {"content": "x"})
    result = CliRunner().invoke(app, ["run", str(wf), "--task-file", "-"], input=b"caf\xe9\n")
    assert result.exit_code == 2, result.stderr
    assert "devall: error: cannot read the task from standard input" in result.stderr
    assert "not valid UTF-8" in result.stderr and "internal error" not in result.stderr


# --- markup and emoji codes -----------------------------------------------------------------------


def test_tools_list_shows_descriptions_verbatim(tmp_path: Path, wide: None) -> None:
    wf = scripted(tmp_path, {"content": "x"})
    code, out, err = invoke("tools", "list", str(wf))
    assert code == 0, err
    assert "Reads [/etc/hosts]-style paths; :warning: [bold]x[/bold]" in out
    assert "⚠" not in out
    assert "Says " + SHOWN_CONTROLS in out
    assert RAW_CONTROL.search(out + err) is None


def test_probe_shows_server_names_verbatim_and_escaped(tmp_path: Path, wide: None) -> None:
    wf = scripted(tmp_path, {"content": "x"})
    code, out, err = invoke("probe", str(wf))
    assert code == 0, err
    assert "odd [/x] :bug: \ufffd\\x1b]0;pwned\\x07" in out
    assert RAW_CONTROL.search(out + err) is None
    code, out, err = invoke("probe", str(wf), "--json")
    assert code == 0, err
    (server,) = json.loads(out)["servers"]
    assert server["server_name"] == "odd [/x] :bug: \ufffd\x1b]0;pwned\x07"  # exact in records


def test_tools_call_prints_text_blocks_byte_exact(tmp_path: Path) -> None:
    wf = scripted(tmp_path, {"content": "x"})
    code, out, err = invoke("tools", "call", str(wf), "markup")
    assert (code, out) == (0, MARKUP + "\n"), err
    code, out, err = invoke("tools", "call", str(wf), "controls")
    assert (code, out) == (0, CONTROLS + "\n"), err  # stdout is not a terminal: exact


def test_the_run_trace_shows_markup_verbatim_and_controls_escaped(tmp_path: Path) -> None:
    calls = [{"name": name, "arguments": {}} for name in ("markup", "controls")]
    wf = scripted(tmp_path, {"tool_calls": calls}, {"content": "said {tool_results}"})
    code, out, err = invoke("run", str(wf), "--out", "run", "--verbose")
    assert code == 0, err
    assert ":bug: [bold]x[/bold]" in err and "[/etc/hosts] :warning:" in err
    assert "🐛" not in err and "⚠" not in err
    assert SHOWN_CONTROLS in err and "odd text server ready " + SHOWN_CONTROLS in err
    assert RAW_CONTROL.search(err) is None
    assert out == f"said {MARKUP}\n{CONTROLS}\n"  # the product on a pipe stays exact
    texts = [e["blocks"][0]["text"] for e in of_kind(Path("run"), "tool.result")]
    assert texts == [MARKUP, CONTROLS]  # and so do the records


def test_validate_shows_var_values_verbatim_and_escaped(tmp_path: Path) -> None:
    wf = workflow(tmp_path, script=[{"content": "x"}], name="m${X}")
    code, out, err = invoke("validate", str(wf), "--var", "X=\x1b[2J :warning: [bold]b[/bold]")
    assert code == 0, err
    assert "(scripted: m\\x1b[2J :warning: [bold]b[/bold])" in out
    assert RAW_CONTROL.search(out + err) is None


# --- control characters on the console ------------------------------------------------------------


def test_error_lines_escape_control_characters(tmp_path: Path) -> None:
    tooling = local_tooling(Path("x"), command="no-such-command-${X}")
    wf = workflow(tmp_path, tooling, script=[{"content": "x"}])
    code, _, err = invoke("run", str(wf), "--out", "run", "--var", "X=\x1b]0;pwned\x07")
    assert code == 4, err
    assert "no-such-command-\\x1b]0;pwned\\x07" in err
    assert RAW_CONTROL.search(err) is None


def test_the_answer_on_a_terminal_is_escaped(tmp_path: Path) -> None:
    wf = workflow(tmp_path, script=[{"content": "done\x1b]0;pwned\x07\tok"}])
    primary, secondary = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "devall_cli", "run", str(wf), "--out", "run", "-q"],
            stdout=secondary,
            stderr=subprocess.PIPE,
            timeout=30,
            env={**os.environ, "NO_COLOR": "1"},
        )
        os.close(secondary)
        shown = b""
        while True:
            try:
                chunk = os.read(primary, 4096)
            except OSError:  # EIO: the terminal's other side is closed
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(primary)
    assert proc.returncode == 0, proc.stderr
    assert shown.decode() == "done\\x1b]0;pwned\\x07\tok\r\n"
    result = json.loads(Path("run/result.json").read_text(encoding="utf-8"))
    assert result["output"] == "done\x1b]0;pwned\x07\tok"


# --- JUnit ----------------------------------------------------------------------------------------


def test_junit_is_well_formed_whatever_the_server_log_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ODD_LOG", "\x1b[2J\x01\x0b\x0c\x7f\x9b\ufffe end")
    junit = tmp_path / "probe.xml"
    command = f"{sys.executable} {HOSTILE} --fail-with-env ODD_LOG"
    code, out, err = invoke("probe", "--command", command, "--junit", str(junit))
    assert code == 1, err
    failure = ElementTree.parse(junit).getroot().find("testcase/failure")
    assert failure is not None and failure.text is not None
    assert "ODD_LOG=\\x1b[2J\\x01\\x0b\\x0c\\x7f\\x9b\\ufffe end" in failure.text
    assert "ODD_LOG=\\x1b[2J" in out and RAW_CONTROL.search(out + err) is None
