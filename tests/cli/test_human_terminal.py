"""A `human` node on a terminal: devall runs on a pseudo-terminal that the test types into."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

DEVALL = Path(sys.executable).parent / "devall"
TOKEN = "tok-terminal-5d1e8a2c7f"


def _controlling_tty() -> None:
    """In the child: the pty becomes its controlling tty, and SIGINT does what it does in a
    shell even when the tests were started where it is ignored (a background job)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """`devall` with stdin, stdout and stderr on a pseudo-terminal it has as controlling tty."""

    def __init__(self, *args: str, cwd: Path) -> None:
        self.master, slave = pty.openpty()
        env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "120", "TERM": "dumb"}
        self.proc = subprocess.Popen(
            [str(DEVALL), *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            env=env,
            start_new_session=True,
            # The terminal becomes the child's controlling tty: Ctrl-C there sends it SIGINT.
            preexec_fn=_controlling_tty,
        )
        os.close(slave)
        self.seen = b""

    def expect(self, text: str, timeout: float = 15.0) -> None:
        """Read until `text` was shown (a failure shows what was)."""
        wanted = text.encode()
        deadline = time.monotonic() + timeout
        while wanted not in self.seen and time.monotonic() < deadline:
            if not self._read(0.1):
                break
        assert wanted in self.seen, self.seen.decode(errors="replace")

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def finish(self, timeout: float = 60.0) -> int:
        """Read everything until devall exits; its exit status."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self._read(0.1)
        while self._read(0.1) and time.monotonic() < deadline + 1:
            pass
        return self.proc.wait(timeout=1)

    def text(self) -> str:
        return self.seen.decode(errors="replace").replace("\r\n", "\n")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)

    def _read(self, wait: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], wait)
        if not ready:
            return self.proc.poll() is None
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: the other side closed
            return False
        self.seen += chunk
        return bool(chunk)


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Any]:
    opened: list[Terminal] = []

    def start(*args: str) -> Terminal:
        opened.append(Terminal(*args, cwd=tmp_path))
        return opened[-1]

    yield start
    for each in opened:
        each.close()


def review_workflow(tmp_path: Path, content: str = "my draft", second: bool = False) -> Path:
    nodes: list[dict[str, Any]] = [
        {"id": "draft", "type": "literal", "config": {"content": content}},
        {"id": "review", "type": "human", "config": {"description": "Check the draft."}},
    ]
    edges = [{"from": "draft", "to": "review"}]
    if second:
        nodes.append({"id": "sign", "type": "human", "config": {"description": "Sign it."}})
        edges.append({"from": "review", "to": "sign"})
    document = {"graph": {"id": "tty", "start": ["draft"], "nodes": nodes, "edges": edges}}
    path = tmp_path / "tty.yaml"
    path.write_text(json.dumps(document, indent=1))
    return path


def result(tmp_path: Path) -> dict[str, Any]:
    return json.loads((tmp_path / "run" / "result.json").read_text())  # type: ignore[no-any-return]


def test_a_multi_line_reply_ends_with_an_empty_line(tmp_path: Path, terminal: Any) -> None:
    wf = review_workflow(tmp_path, content="the key is ${TOKEN}, \x1b[2Jand more")
    tty = terminal("run", str(wf), "--out", "run", "--var", f"TOKEN={TOKEN}")
    tty.expect("Your reply: end it with an empty line or Ctrl-D")
    tty.expect("> ")
    tty.type(b"first line\n")
    tty.expect("first line")
    tty.type(b"second line\n\n")
    assert tty.finish() == 0, tty.text()
    shown = tty.text()
    assert "human input · node 'review'" in shown
    assert "Check the draft." in shown
    assert "=== INPUT FROM draft (user) ===" in shown
    assert "the key is ***, \\x1b[2Jand more" in shown  # masked, and the escape is not obeyed
    assert TOKEN not in shown and "\x1b[2J" not in shown
    assert shown.rstrip().endswith("first line\nsecond line")  # the answer, on stdout
    (reply,) = result(tmp_path)["human_replies"]
    assert reply == {
        "node": "review",
        "visit": 1,
        "channel": "terminal",
        "reply": "first line\nsecond line",
    }


def test_ctrl_d_ends_a_reply_and_the_next_node_asks_in_turn(tmp_path: Path, terminal: Any) -> None:
    tty = terminal("run", str(review_workflow(tmp_path, second=True)), "--out", "run", "-q")
    tty.expect("> ")
    tty.type(b"looks good\nno notes")
    tty.expect("no notes")
    tty.type(b"\x04")  # Ctrl-D after some text: the line is flushed to devall
    tty.type(b"\x04")  # and again: end of input, the reply is complete
    tty.expect("human input · node 'sign'")
    tty.expect("Sign it.")
    tty.type(b"\x04")  # at once: an empty reply
    assert tty.finish() == 0, tty.text()
    replies = [(r["node"], r["reply"]) for r in result(tmp_path)["human_replies"]]
    assert replies == [("review", "looks good\nno notes"), ("sign", "")]


def test_ctrl_c_at_the_prompt_cancels_the_run(tmp_path: Path, terminal: Any) -> None:
    tty = terminal("run", str(review_workflow(tmp_path)), "--out", "run")
    tty.expect("> ")
    tty.type(b"half a rep")
    tty.expect("half a rep")
    tty.type(b"\x03")
    assert tty.finish() == 130, tty.text()  # finish() gives up after a minute: a hang guard
    assert "devall: error: interrupted (Ctrl-C)" in tty.text()
    assert "Traceback" not in tty.text()
    document = result(tmp_path)
    assert document["status"] == "interrupted" and document["human_replies"] == []
