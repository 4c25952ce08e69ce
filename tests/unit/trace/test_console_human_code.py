"""How the trace shows human questions and replies, and the scripts of python nodes."""

from __future__ import annotations

import io

from rich.console import Console

from devall_cli.events import (
    CodeFinishedEvent,
    CodeStartedEvent,
    EventBus,
    HumanAskedEvent,
    HumanRepliedEvent,
    RunStartedEvent,
)
from devall_cli.redaction import Redactor
from devall_cli.trace.console import ConsoleSink
from devall_cli.trace.status import WaitState

SECRET = "sk-console-human-4b2e9f"


def render(*events: object, verbosity: str = "normal") -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=100, no_color=True, highlight=False)
    bus = EventBus()
    bus.subscribe(ConsoleSink(console, Redactor([SECRET]), verbosity))  # type: ignore[arg-type]
    for event in events:
        bus.emit(event)  # type: ignore[arg-type]
    assert bus.sink_errors == []
    return buffer.getvalue()


def test_questions_and_replies_name_their_node_and_source() -> None:
    asked = HumanAskedEvent(node_id="review", channel="answers", description="Approve?")
    replied = HumanRepliedEvent(node_id="review", channel="answers", reply=f"yes {SECRET}\nok")
    out = render(asked, replied)
    assert "? review asks the operator from the answers file" in out
    assert "reply · review · 2 lines" in out
    assert "yes ***\nok" in out and SECRET not in out


def test_a_typed_reply_is_not_echoed_again_except_in_verbose_mode() -> None:
    replied = HumanRepliedEvent(node_id="review", channel="terminal", reply="typed text")
    assert "typed text" not in render(replied)
    assert "typed text" in render(replied, verbosity="verbose")


def test_a_failed_script_shows_why_and_its_stderr() -> None:
    failed = CodeFinishedEvent(
        node_id="run",
        script="code_workspace/run.py",
        status="failed",
        exit_code=2,
        stderr="Traceback: boom",
        duration_ms=12,
    )
    later = "code_workspace/run_run-2.py"
    timeout = CodeFinishedEvent(node_id="run", script=later, status="timeout")
    out = render(failed, timeout)
    assert "code · run · code_workspace/run.py · failed (exit 2) · 12 ms" in out
    assert "Traceback: boom" in out
    assert "code · run · code_workspace/run_run-2.py · stopped at its timeout" in out


def test_a_script_that_worked_shows_its_stderr_only_in_verbose_mode() -> None:
    started = CodeStartedEvent(node_id="run", script="s.py", command=["python3", "s.py"])
    done = CodeFinishedEvent(node_id="run", script="s.py", stderr="a warning")
    assert "a warning" not in render(started, done)
    verbose = render(started, done, verbosity="verbose")
    assert "… run runs python3 s.py" in verbose and "a warning" in verbose


def test_the_status_line_says_which_script_runs() -> None:
    waits = WaitState()
    waits.update(RunStartedEvent(workflow="w", task=""))
    waits.update(CodeStartedEvent(node_id="run", script="code_workspace/run.py"))
    assert "run running code_workspace/run.py" in waits.describe()
    waits.update(CodeFinishedEvent(node_id="run", script="code_workspace/run.py"))
    assert "code_workspace" not in waits.describe()


def test_paused_stops_the_live_status_line_and_starts_it_again() -> None:
    console = Console(file=io.StringIO(), width=100, force_terminal=True, no_color=True)
    sink = ConsoleSink(console, Redactor(), "normal", live=True)
    sink(RunStartedEvent(workflow="w", task=""))
    assert sink._live is not None
    with sink.paused():
        assert sink._live is None
    assert sink._live is not None
    sink.close()
