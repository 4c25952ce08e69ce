"""An HTTP server that answers every request with one fixed status (e.g. 401), as a gateway might.

python status_server.py --status 401 --port 0   # writes `status server ready on port N`
"""

from __future__ import annotations

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def handler_for(status: int) -> type[BaseHTTPRequestHandler]:
    """A request handler class answering `status` with a small JSON body."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            if length:
                self.rfile.read(length)
            body = json.dumps({"error": f"status {status}"}).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_DELETE = _answer

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


def main(argv: list[str] | None = None) -> None:
    """Serve the fixed status until killed."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", default="http")  # accepted for a uniform command line
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--status", type=int, default=401)
    args = parser.parse_args(argv)
    server = ThreadingHTTPServer((args.host, args.port), handler_for(args.status))
    print(f"status server ready on port {server.server_address[1]}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
