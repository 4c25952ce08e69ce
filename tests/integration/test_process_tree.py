"""Helpers of a local server that left its process group are torn down with it."""

from __future__ import annotations

import sys

from devall_cli.tools.stdio_process import StdioProcess
from tests.servers.serve import pid_gone

# Starts a helper that calls setsid (as daemons do), says so, and leaves 0.5 s later.
DAEMONIZING = """
import subprocess, sys, time
helper = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
)
print(f"helper {helper.pid} ready", file=sys.stderr, flush=True)
time.sleep(0.5)
"""


async def test_a_setsid_helper_is_killed_at_teardown_after_its_server_exited() -> None:
    proc = StdioProcess(
        id="daemonizing", command=sys.executable, args=["-c", DAEMONIZING], wait_for_log="ready"
    )
    await proc.spawn()
    try:
        await proc.wait_ready(10)
        helper = int(proc.log_tail[-1].split()[1])
        await proc.exited.wait()
        assert proc.returncode == 0 and not pid_gone(helper)  # the server left; its helper not
    finally:
        await proc.close()
    assert pid_gone(helper)
