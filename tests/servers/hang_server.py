"""A TCP server that accepts connections, reads what comes, and never answers (a hung server).

python hang_server.py --port 0      # writes `hang server ready on port N` to stderr
"""

from __future__ import annotations

import argparse
import socket
import sys
import threading


def hold(conn: socket.socket) -> None:
    """Read and discard until the peer goes away; never write a byte."""
    with conn:
        while conn.recv(65536):
            pass


def main(argv: list[str] | None = None) -> None:
    """Listen on the port and hold every connection open without replying."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", default="http")  # accepted for a uniform command line
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((args.host, args.port))
    server.listen(64)
    print(f"hang server ready on port {server.getsockname()[1]}", file=sys.stderr, flush=True)
    while True:
        conn, _ = server.accept()
        threading.Thread(target=hold, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
