"""A local Ray cluster for tests to join with --ray-address, stopped when its stdin closes.

Started by devall's own code (loopback only, a token of its own); prints one JSON line with
the address and the token, then waits. Run as `python -m tests.servers.ray_cluster`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from devall_cli.batch.ray_cluster import connect, loopback_environ


def main() -> None:
    """Start, tell, wait for stdin to close, stop."""
    environ = loopback_environ()
    cluster = connect(None, working_dir=Path.cwd(), num_cpus=2, environ=environ)
    import ray

    address = ray.get_runtime_context().gcs_address
    print(json.dumps({"address": address, "token": environ["RAY_AUTH_TOKEN"]}), flush=True)
    sys.stdin.read()
    cluster.shutdown()


if __name__ == "__main__":
    main()
