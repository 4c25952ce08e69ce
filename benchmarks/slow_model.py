"""The tests' fake OpenAI-compatible server in a process of its own, answering after a delay.

    python -m benchmarks.slow_model SECONDS

Prints its base URL on the first line, answers every chat request with "ok" after SECONDS, and
stops when its stdin closes. Run apart from the harness so that its CPU (and its GIL) is
neither devall's, measured with wait4, nor the harness's.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

from benchmarks.core import bench_env


def serve(delay: float) -> None:
    """Serve until stdin closes."""
    from tests.servers.fake_llm import FakeLLM

    def reply(_: Any) -> Any:
        return FakeLLM.text_reply("ok", delay=delay)

    with FakeLLM(responder=reply) as llm:
        print(llm.base_url, flush=True)
        sys.stdin.read()


@contextlib.contextmanager
def slow_model(delay: float) -> Iterator[str]:
    """The server in a child process; yields its base URL."""
    with subprocess.Popen(
        [sys.executable, "-m", "benchmarks.slow_model", str(delay)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=bench_env(),
        text=True,
    ) as proc:
        assert proc.stdout is not None and proc.stdin is not None
        url = proc.stdout.readline().strip()
        if not url:
            raise RuntimeError("the slow model server did not start")
        try:
            yield url
        finally:
            proc.stdin.close()
            proc.wait(30)


if __name__ == "__main__":
    serve(float(sys.argv[1]))
