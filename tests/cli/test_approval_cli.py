"""Approving tool calls: `--approve ask` asks the operator on the terminal (y / n / always), takes
the answer from `--answers` (`tool_approvals`), or refuses when nobody can be asked; a refused
call goes back to the model as its result and the run goes on."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from devall_cli.cli.approval_prompt import (
    AGAIN,
    QUESTION,
    ChainApprover,
    ScriptedApprovals,
    TerminalApprovals,
)
from devall_cli.cli.human_prompt import TerminalPrompt
from devall_cli.nodes.human_input import Answers, ToolApproval
from devall_cli.redaction import Redactor
from devall_cli.tools.policy import ApprovalRequest, Verdict
from tests.cli.test_function_tools_cli import function_tooling, write_functions
from tests.cli.test_human_terminal import terminal as terminal  # the pty fixture
from tests.cli.test_reliability_cli import workflow
from tests.helpers import events, invoke
from tests.servers.fake_llm import FakeLLM

LLM_KEY = "sk-approval-test-4c1d"
ASK = Verdict("ask", "cli")


def request(tool: str = "echo", call_id: str = "c1", **arguments: Any) -> ApprovalRequest:
    return ApprovalRequest(
        node_id="a",
        call_id=call_id,
        tool=tool,
        original_name=f"orig_{tool}",
        server_id="fs",
        server="python fs.py",
        arguments=arguments,
        verdict=ASK,
    )


# --- the approver: the answers file, then the terminal, then a refusal ---------------------------


async def test_the_answers_file_decides_in_order_then_nobody_is_left_to_ask() -> None:
    answers = Answers(
        "answers.yaml",
        approvals=(
            ToolApproval("write_*", ("yes", "no"), where="answers.yaml:2"),
            ToolApproval("server:fs", ("always",), repeat=True, where="answers.yaml:3"),
        ),
    )
    approver = ChainApprover(ScriptedApprovals(answers), None)
    first = await approver.approve(request("write_file"))
    second = await approver.approve(request("write_file"))
    assert (first.approved, first.by, first.note) == (
        True,
        "answers",
        "answers.yaml:2 says yes for 'write_*'",
    )
    assert (second.approved, second.by) == (False, "answers")
    # The list is used up: the next key matching the call (any tool of server fs) decides.
    third = await approver.approve(request("write_file"))
    assert (third.approved, third.by, third.remember) == (True, "answers", True)
    other = dataclasses.replace(request("write_log"), server_id="web")
    refused = await approver.approve(other)
    assert (refused.approved, refused.by) == (False, "no_terminal")
    assert refused.note == (
        "no terminal to ask and the answers for 'write_*' in answers.yaml are used up"
    )


@pytest.fixture
def typed() -> Iterator[tuple[TerminalApprovals, io.StringIO, int]]:
    """An approver on a terminal whose keyboard is the write end of a pipe."""
    read_end, write_end = os.pipe()
    buffer = io.StringIO()
    # Wide: a line of the question is never wrapped inside its panel.
    console = Console(file=buffer, width=1000, no_color=True, highlight=False)
    prompt = TerminalPrompt(console, Redactor(["sk-hidden-1"]), fd=read_end)
    yield TerminalApprovals(prompt), buffer, write_end
    os.close(read_end)
    with contextlib.suppress(OSError):
        os.close(write_end)


async def test_the_operator_is_shown_the_call_and_asked_until_y_n_or_a(typed: Any) -> None:
    terminal, buffer, keys = typed
    approver = ChainApprover(None, terminal)
    os.write(keys, b"maybe\nAlways\n")
    long_text = "x" * 1000
    answer = await approver.approve(request("echo", text=long_text, key="sk-hidden-1"))
    assert (answer.approved, answer.by, answer.remember) == (True, "terminal", True)
    shown = buffer.getvalue()
    assert "tool approval · node 'a'" in shown
    assert "echo (on the server: orig_echo)" in shown and "fs · python fs.py" in shown
    assert "approve: ask (cli)" in shown
    assert '"text": "' + "x" * 400 + "… (600 more characters)" in shown
    assert "sk-hidden-1" not in shown and '"key": "***"' in shown
    assert shown.count(QUESTION.strip()) == 2 and AGAIN in shown
    # (What "always" then decides, the policy gate remembers: tests/unit/tools/test_policy.py.)
    assert buffer.getvalue().count("tool approval ·") == 1
    os.close(keys)  # Ctrl-D: end of input answers no
    ended = await asyncio.wait_for(approver.approve(request("other")), 5)
    assert (ended.approved, ended.by) == (False, "terminal")


async def test_parallel_calls_are_asked_one_at_a_time(typed: Any) -> None:
    terminal, buffer, keys = typed
    approver = ChainApprover(None, terminal)
    os.write(keys, b"y\nn\n")
    first, second = await asyncio.wait_for(
        asyncio.gather(
            approver.approve(request("one", call_id="c1")),
            approver.approve(request("two", call_id="c2")),
        ),
        5,
    )
    assert (first.approved, second.approved) == (True, False)
    shown = buffer.getvalue()
    # The second question comes only after the first was asked and answered.
    asked = shown.index(QUESTION.strip())
    assert shown.index("one (on the server") < asked < shown.index("two (on the server")


# --- devall run --approve ask --------------------------------------------------------------------


def echo_flow(tmp_path: Path, llm: FakeLLM) -> Path:
    source = 'def echo(text: str) -> str:\n    """Echo."""\n    return text\n'
    write_functions(tmp_path, "tools", source)
    return workflow(tmp_path, function_tooling("echo"), llm=llm)


def enqueue_echoes(llm: FakeLLM, *texts: str) -> None:
    for text in texts:
        llm.enqueue(FakeLLM.tool_call_reply([("echo", {"text": text})]))
    llm.enqueue("done")


def run(tmp_path: Path, path: Path, *args: str) -> tuple[int, str, str]:
    out = str(tmp_path / "run")
    return invoke("run", str(path), "--out", out, "--var", f"LLM_KEY={LLM_KEY}", *args)


def shown_times(tty: Any, text: str, count: int, timeout: float = 15.0) -> None:
    """Read the terminal until `text` was shown `count` times."""
    deadline = time.monotonic() + timeout
    while tty.seen.count(text.encode()) < count and time.monotonic() < deadline:
        if not tty._read(0.1):
            break
    assert tty.seen.count(text.encode()) >= count, tty.text()


def results_seen(llm: FakeLLM) -> list[str]:
    """The tool results the model was given, in order."""
    messages = llm.chat_requests[-1].body["messages"]
    return [m["content"] for m in messages if m["role"] == "tool"]


def test_without_a_terminal_or_an_answer_the_call_is_refused_and_the_run_goes_on(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    enqueue_echoes(fake_llm, "hello")
    code, out, err = run(tmp_path, echo_flow(tmp_path, fake_llm), "--approve", "ask")
    assert code == 0, err
    assert out == "done\n"
    (seen,) = results_seen(fake_llm)
    assert seen.startswith("refused by policy: approve: ask (cli)")
    assert "no terminal to ask and no answer in --answers" in seen
    assert "✗ tool echo (server functions) · a · refused with nobody to ask" in err
    (approval,) = events(tmp_path / "run", "tool.approval")
    assert (approval["approved"], approval["by"]) == (False, "no_terminal")
    policy = json.loads((tmp_path / "run" / "result.json").read_text())["policy"]
    assert policy["refused_calls"] == 1 and policy["approvals"][0]["tool"] == "echo"


def test_the_answers_file_approves_and_refuses_calls(tmp_path: Path, fake_llm: FakeLLM) -> None:
    enqueue_echoes(fake_llm, "one", "two")
    (tmp_path / "answers.yaml").write_text("tool_approvals:\n  ech*: [yes, no]\n")
    code, _, err = run(
        tmp_path,
        echo_flow(tmp_path, fake_llm),
        "--approve",
        "ask",
        "--answers",
        str(tmp_path / "answers.yaml"),
    )
    assert code == 0, err
    first, second = results_seen(fake_llm)
    assert first == "one" and second.startswith("refused by policy:")
    assert "answers.yaml:2 says no for 'ech*'" in second
    decisions = [(e["approved"], e["by"]) for e in events(tmp_path / "run", "tool.approval")]
    assert decisions == [(True, "answers"), (False, "answers")]
    assert "approved by the answers file" in err and "refused by the answers file" in err


def test_on_a_terminal_y_runs_n_refuses_and_a_stops_asking(
    tmp_path: Path, fake_llm: FakeLLM, terminal: Any
) -> None:
    enqueue_echoes(fake_llm, "one", "two", "three", "four")
    path = echo_flow(tmp_path, fake_llm)
    tty = terminal(
        "run", str(path), "--out", "run", "--var", f"LLM_KEY={LLM_KEY}", "--approve", "ask"
    )
    for asked, key in enumerate((b"y\n", b"n\n", b"a\n"), start=1):
        shown_times(tty, QUESTION.strip(), asked)
        tty.type(key)
    assert tty.finish() == 0, tty.text()
    shown = tty.text()
    assert shown.count("tool approval · node 'a'") == 3  # "always": the fourth is not asked
    assert '"text": "three"' in shown and "approve: ask (cli)" in shown
    seen = results_seen(fake_llm)
    assert [seen[0], seen[2], seen[3]] == ["one", "three", "four"]
    assert seen[1].startswith("refused by policy:")
    decisions = [(e["approved"], e["by"]) for e in events(tmp_path / "run", "tool.approval")]
    assert decisions == [
        (True, "terminal"),
        (False, "terminal"),
        (True, "terminal"),
        (True, "remembered"),
    ]
    assert shown.rstrip().endswith("done")
