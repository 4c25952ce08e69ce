"""A stdio MCP server written by hand (no SDK), for protocol edges both of devall's clients meet.

    --pages N        tools/list answers in N pages (nextCursor), one tool a page
    --modern-only    refuses the initialize handshake (-32022, it speaks 2026-07-28 only)
    --no-schema      lists a tool without an inputSchema
    --asks METHOD    during each call, asks the client METHOD first and answers with its reply
    --asks-times N   with --asks: asks N times in each call (answers with the list of replies)
    --fixture        also lists the fixture tools below (callable by name either way)
    --tools-file PATH  lists the tools of this JSON file (a list of MCP tool objects) instead,
                     read at each tools/list: a test changes the file to change the surface
    --annotated      with --fixture: the fixture tools carry annotation hints (ANNOTATIONS)
    --record PATH    appends one JSON line per `sleep` call: tag, start, end, in_flight, peak
    --meta-log PATH  appends one JSON line per tools/call, over stdio and HTTP: the tool's name
                     and the request's `_meta` as received ({"name", "meta"}; meta null if none)
    --cancel-asked   with --asks: cancels its own request at once (notifications/cancelled) and
                     answers the call without waiting for the client's reply
    --string-ids     echoes the id of every request it answers as a string ("1" for 1)
    --string-progress-tokens  during each call, reports progress with the token as a string
    --exit-on-list   exits (status 3) when asked for tools/list
    --silent-handshake  never answers initialize; logs on stderr each message it gets meanwhile
                      (a cancellation with the id it cancels)
    --transport http    serves streamable HTTP instead (`--host`, `--port`, 0 for a free one):
                     each request answered with one JSON body, on /mcp; the socket is bound before
                     `raw server ready on port N` goes to stderr. Tools and fixture tools as
                     below (no progress, nothing asked of the client), and with --fixture also
                     `request_header {name}` (a header of the call's request, "" if none); the
                     stdio-only flags are refused. Over HTTP also:
      --sse          answers each request as an event stream; a call carrying a progressToken
                     gets two progress notifications first, and with --asks METHOD the server
                     asks the client METHOD in the stream, waits for the answer the client POSTs
                     and names it in the result (`called tool_0; asked: {...}`)
      --sse-resume   answers a call with a stream that ends after one numbered event (`retry: 100`);
                     the answer comes on the GET that resumes it with `Last-Event-ID`
      --refuse STATUS  answers every request with STATUS and a two-line text/plain reason
                     (REFUSAL below), with `WWW-Authenticate` for 401
      --modern-only  answers initialize with HTTP 400 and the -32022 error

Tools: `tool_<i>` (one a page) answer `called tool_<i>`; `shaped` declares an output schema
{"n": integer} and returns structured content as asked: `{"mode": "none" | "wrong" | "right"}`.

Fixture tools, at a fraction of a FastMCP server's start-up cost: `echo {text}` (with `times`,
repeated), `add {a, b}`, `fail {message}` (a tool error), `sleep {seconds, tag}` (answered on a
thread of its own, so calls overlap; reports progress when the call carries a progressToken and
answers `<tag> peak=<most calls in flight so far>`), `track` (the same as `sleep`, by the name
fixture_server.py gives it), `slow {seconds}` (the same, answering `slept <seconds>`), `peak`,
`stall {seconds}` (holds the whole server still), `env {name}`, `counter` (handshakes answered),
`image` (a PNG), `structured` (structured content only), `pid` (the server's process id) and
`die` (exits with status 7 in the middle of the call, without answering).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import struct
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from typing import Any, ClassVar

SHAPED = {
    "name": "shaped",
    "description": "Returns structured content as asked.",
    "inputSchema": {"type": "object", "properties": {"mode": {"type": "string"}}},
    "outputSchema": {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
    },
}


_SEND = threading.Lock()  # calls answered on threads of their own write whole lines
STRING_IDS = [False]
TOOLS_FILE: list[str | None] = [None]  # --tools-file
META_LOG: list[str | None] = [None]  # --meta-log


def log_meta(message: dict[str, Any]) -> None:
    """With --meta-log: note the name and `_meta` of a tools/call request."""
    if META_LOG[0] is None or message.get("method") != "tools/call":
        return
    params = message.get("params") or {}
    line = json.dumps({"name": params.get("name"), "meta": params.get("_meta")})
    with _SEND, open(META_LOG[0], "a", encoding="utf-8") as out:
        out.write(line + "\n")


def send(message: dict[str, Any]) -> None:
    if "serverInfo" in (message.get("result") or {}):
        Seen.handshakes += 1
    if STRING_IDS[0] and "method" not in message and isinstance(message.get("id"), int):
        message = {**message, "id": str(message["id"])}
    with _SEND:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def receive() -> dict[str, Any] | None:
    line = sys.stdin.readline()
    return json.loads(line) if line else None


def tool(number: int, with_schema: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": f"tool_{number}", "description": f"Tool {number}."}
    if with_schema:
        entry["inputSchema"] = {"type": "object", "properties": {}}
    return entry


def _schema(**properties: str) -> dict[str, Any]:
    """An object schema of `name=type` properties, every one of them required."""
    return {
        "type": "object",
        "properties": {name: {"type": kind} for name, kind in properties.items()},
        "required": list(properties),
    }


FIXTURE_TOOLS = [
    {"name": "echo", "description": "Return the text.", "inputSchema": _schema(text="string")},
    {
        "name": "add",
        "description": "Add two integers.",
        "inputSchema": _schema(a="integer", b="integer"),
    },
    {"name": "fail", "description": "Always fails.", "inputSchema": _schema(message="string")},
    {
        "name": "sleep",
        "description": "Sleep (calls overlap), reporting progress.",
        "inputSchema": _schema(seconds="number", tag="string"),
    },
    {
        "name": "track",
        "description": "Sleep (calls overlap), counted as running.",
        "inputSchema": _schema(seconds="number", tag="string"),
    },
    {
        "name": "slow",
        "description": "Sleep, then answer.",
        "inputSchema": _schema(seconds="number"),
    },
    {"name": "peak", "description": "Most sleeps in flight at once.", "inputSchema": _schema()},
    {
        "name": "stall",
        "description": "Hold the server still.",
        "inputSchema": _schema(seconds="number"),
    },
    {
        "name": "env",
        "description": "An environment variable.",
        "inputSchema": _schema(name="string"),
    },
    {"name": "counter", "description": "Handshakes answered.", "inputSchema": _schema()},
    {"name": "image", "description": "A small PNG.", "inputSchema": _schema()},
    {"name": "structured", "description": "Structured content only.", "inputSchema": _schema()},
    {"name": "pid", "description": "The server's process id.", "inputSchema": _schema()},
    {"name": "die", "description": "Exit with status 7 mid-call.", "inputSchema": _schema()},
]
# With --annotated, for the tool policy: read-only tools, a destructive one, one that says it
# is not destructive; every other fixture tool says nothing (the MCP spec's defaults hold).
ANNOTATIONS = {
    "echo": {"readOnlyHint": True},
    "add": {"readOnlyHint": True, "idempotentHint": True},
    "die": {"readOnlyHint": False, "destructiveHint": True},
    "pid": {"readOnlyHint": False, "destructiveHint": False},
}
# Over HTTP only: what the request of a call carried.
REQUEST_HEADER = {
    "name": "request_header",
    "description": "A header of this request.",
    "inputSchema": _schema(name="string"),
}
STRUCTURED = {"answer": 42, "items": ["a", "b"], "nested": {"ok": True}}


def png_bytes() -> bytes:
    """A valid 2x1 RGB PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 2, 1, 8, 2, 0, 0, 0)
    rows = zlib.compress(b"\x00\xff\x00\x00\x00\x00\xff")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", rows) + chunk(b"IEND", b"")
    )


def text(value: str, *, error: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": value}]}
    if error:
        result["isError"] = True
    return result


class Seen:
    """What the server has seen: sleeping calls in flight, the most there ever were, handshakes."""

    lock = threading.Lock()
    active = 0
    peak = 0
    record: str | None = None
    handshakes = 0  # initialize requests answered (counted as they are sent)


def sleep_call(request_id: Any, params: dict[str, Any]) -> None:
    """Answer one `sleep`/`slow` call on its own thread, with progress when asked for."""
    send({"jsonrpc": "2.0", "id": request_id, "result": sleep_result(params)})


def sleep_result(params: dict[str, Any], *, progress: bool = True) -> dict[str, Any]:
    """Sleep as a `sleep`/`slow`/`track` call asks (reporting progress if asked and allowed)."""
    arguments = params.get("arguments") or {}
    seconds = float(arguments.get("seconds", 0))
    tag = str(arguments.get("tag", ""))
    token = (params.get("_meta") or {}).get("progressToken")
    with Seen.lock:
        Seen.active += 1
        Seen.peak = max(Seen.peak, Seen.active)
        in_flight = Seen.active
    start = time.time()
    if token is not None and progress:
        for step in (1, 2):
            time.sleep(seconds / 2)
            params_out = {"progressToken": token, "progress": step, "total": 2}
            send({"jsonrpc": "2.0", "method": "notifications/progress", "params": params_out})
    else:
        time.sleep(seconds)
    with Seen.lock:
        Seen.active -= 1
        peak = Seen.peak
    if Seen.record:
        stamp = {"tag": tag, "start": start, "end": time.time(), "in_flight": in_flight}
        with Seen.lock, open(Seen.record, "a", encoding="utf-8") as out:
            out.write(json.dumps({**stamp, "peak": peak}) + "\n")
    said = f"{tag} peak={peak}" if params["name"] != "slow" else f"slept {arguments.get('seconds')}"
    return text(said)


def fixture_result(name: str, arguments: dict[str, Any], handshakes: int) -> dict[str, Any] | None:
    """The answer of a fixture tool, or None when `name` is none of them."""
    if name == "echo":  # with `times`, the text repeated (a large result from a small call)
        return text(str(arguments.get("text", "")) * int(arguments.get("times", 1)))
    if name == "add":
        return text(str(int(arguments["a"]) + int(arguments["b"])))
    if name == "fail":
        return text(str(arguments.get("message", "failed")), error=True)
    if name == "peak":
        return text(str(Seen.peak))
    if name == "stall":
        time.sleep(float(arguments.get("seconds", 0)))  # nothing is read or answered meanwhile
        return text(f"stalled {arguments.get('seconds')}")
    if name == "env":
        return text(os.environ.get(str(arguments.get("name")), ""))
    if name == "counter":
        return text(json.dumps({"handshakes": handshakes}))
    if name == "image":
        data = base64.b64encode(png_bytes()).decode("ascii")
        return {"content": [{"type": "image", "data": data, "mimeType": "image/png"}]}
    if name == "structured":
        return {"content": [], "structuredContent": STRUCTURED}
    if name == "pid":
        return text(str(os.getpid()))
    if name == "die":
        print("die server: going down with status 7", file=sys.stderr, flush=True)
        os._exit(7)
    return None


def call_result(name: str, arguments: dict[str, Any], asked: Any) -> dict[str, Any]:
    if name == "shaped":
        mode = arguments.get("mode")
        text = {"type": "text", "text": f"shaped {mode}"}
        if mode == "none":
            return {"content": [text]}
        value = "three" if mode == "wrong" else 3
        return {"content": [text], "structuredContent": {"n": value}}
    said = f"called {name}" + (f"; asked: {json.dumps(asked)}" if asked is not None else "")
    return {"content": [{"type": "text", "text": said}]}


def ask(method: str) -> dict[str, Any]:
    """The params of what the server asks the client: an elicitation needs a message and form,
    a sampling request messages and a token budget."""
    if method == "elicitation/create":
        schema = {"type": "object", "properties": {"name": {"type": "string", "default": "x"}}}
        return {"message": "Your name?", "requestedSchema": schema}
    if method == "sampling/createMessage":
        message = {"role": "user", "content": {"type": "text", "text": "Say something."}}
        return {"messages": [message], "maxTokens": 20}
    return {}


INITIALIZED = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "raw server", "version": "1"},
}


def list_result(params: dict[str, Any], pages: int, with_schema: bool, fixture: bool) -> Any:
    """One page of tools/list."""
    if TOOLS_FILE[0] is not None:
        with open(TOOLS_FILE[0], encoding="utf-8") as listed:
            return {"tools": json.load(listed)}
    page = int(params.get("cursor") or 0)
    tools = [tool(page, with_schema)]
    if page == 0:
        tools.append(SHAPED)
        if fixture:
            tools.extend(FIXTURE_TOOLS)
    result: dict[str, Any] = {"tools": tools}
    if page + 1 < pages:
        result["nextCursor"] = str(page + 1)
    return result


def http_answer(
    message: dict[str, Any], options: argparse.Namespace, headers: Any
) -> dict[str, Any]:
    """The answer to one request over HTTP (tools and fixture tools, nothing asked back)."""
    method, params = message.get("method"), message.get("params") or {}
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message.get("id")}
    name = params.get("name")
    if method == "initialize":
        with Seen.lock:
            Seen.handshakes += 1
        return {**reply, "result": INITIALIZED}
    if method == "tools/list":
        result = list_result(params, options.pages, True, options.fixture)
        if options.fixture and not params.get("cursor"):
            result["tools"].append(REQUEST_HEADER)
        return {**reply, "result": result}
    if method == "tools/call" and name == "request_header" and options.fixture:
        wanted = str((params.get("arguments") or {}).get("name"))
        return {**reply, "result": text(headers.get(wanted) or "")}
    if method == "tools/call" and name in ("sleep", "track", "slow"):
        return {**reply, "result": sleep_result(params, progress=False)}
    if method == "tools/call" and name in {t["name"] for t in FIXTURE_TOOLS} and name != "die":
        found = fixture_result(name, params.get("arguments") or {}, Seen.handshakes)
        return {**reply, "result": found}
    if method == "tools/call":
        return {**reply, "result": call_result(name, params.get("arguments") or {}, None)}
    if method == "ping":
        return {**reply, "result": {}}
    error = {"code": -32601, "message": f"Method not found: {method}"}
    return {**reply, "error": error}


REFUSAL = "Access is only allowed at localhost:8773\nStart the server with --allowed-hosts."
MODERN_ONLY = {
    "code": -32022,
    "message": "Unsupported protocol version",
    "data": {"supported": ["2026-07-28"]},
}


class Asked:
    """Over HTTP: the client's answers to what the server asked in a stream, by request id; and
    the answer a resumed stream will carry."""

    answered = threading.Condition()
    answers: ClassVar[dict[Any, Any]] = {}
    next_id = 1000
    pending: ClassVar[dict[str, dict[str, Any]]] = {}  # by the Last-Event-ID that resumes it


def ask_and_wait(method: str) -> Iterator[dict[str, Any]]:
    """Ask the client `method` (the request is yielded), then yield its answer when it is in."""
    with Asked.answered:
        Asked.next_id += 1
        asked_id = Asked.next_id
    yield {"jsonrpc": "2.0", "id": asked_id, "method": method, "params": ask(method)}
    with Asked.answered:
        Asked.answered.wait_for(lambda: asked_id in Asked.answers, timeout=10)
        yield Asked.answers.pop(asked_id, None)


def stream_messages(
    message: dict[str, Any], options: argparse.Namespace, headers: Any
) -> Iterator[dict[str, Any]]:
    """What an answer as an event stream carries: progress, a request to the client, the answer."""
    params = message.get("params") or {}
    if message.get("method") != "tools/call":
        yield http_answer(message, options, headers)
        return
    token = (params.get("_meta") or {}).get("progressToken")
    for step in (1, 2) if token is not None else ():
        progress = {"progressToken": token, "progress": step, "total": 2}
        yield {"jsonrpc": "2.0", "method": "notifications/progress", "params": progress}
    if not options.asks:
        yield http_answer(message, options, headers)
        return
    asking = ask_and_wait(options.asks)
    yield next(asking)
    reply = next(asking)
    asked = reply.get("result", reply.get("error")) if isinstance(reply, dict) else None
    result = call_result(params["name"], params.get("arguments") or {}, asked)
    yield {"jsonrpc": "2.0", "id": message.get("id"), "result": result}


def serve_http(options: argparse.Namespace) -> None:
    """Streamable HTTP on /mcp: every POSTed request answered with one JSON body (or a stream)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: a thousand calls would fill the log

        def _reply(self, status: int, body: bytes = b"", **headers: str) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key.replace("_", "-"), value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _stream(self, events: Iterator[str]) -> None:
            """An event stream, ended by closing the connection."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Mcp-Session-Id", "raw-session")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            for event in events:
                self.wfile.write(event.encode())
                self.wfile.flush()

        def _refuse(self) -> None:
            challenge = {"WWW_Authenticate": 'Bearer realm="raw"'} if options.refuse == 401 else {}
            body = REFUSAL.encode()
            self._reply(options.refuse, body, Content_Type="text/plain", **challenge)

        def do_POST(self) -> None:
            if self.path.split("?")[0] != "/mcp":
                return self._reply(404)
            message = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            log_meta(message)
            if options.refuse:
                return self._refuse()
            if message.get("method") is None and message.get("id") is not None:
                with Asked.answered:  # the client's answer to what the server asked
                    Asked.answers[message["id"]] = message
                    Asked.answered.notify_all()
            if message.get("id") is None or message.get("method") is None:
                return self._reply(202)  # notifications, and answers
            if options.modern_only and message.get("method") == "initialize":
                refusal = {"jsonrpc": "2.0", "id": message["id"], "error": MODERN_ONLY}
                body = json.dumps(refusal).encode()
                return self._reply(400, body, Content_Type="application/json")
            if options.sse_resume and message.get("method") == "tools/call":
                Asked.pending["e1"] = http_answer(message, options, self.headers)
                return self._stream(iter(["id: e1\nretry: 100\ndata: \n\n"]))
            if options.sse:
                messages = stream_messages(message, options, self.headers)
                return self._stream(f"event: message\ndata: {json.dumps(m)}\n\n" for m in messages)
            body = json.dumps(http_answer(message, options, self.headers)).encode()
            return self._reply(
                200, body, Content_Type="application/json", Mcp_Session_Id="raw-session"
            )

        def do_GET(self) -> None:
            if options.refuse:
                return self._refuse()
            resumed = Asked.pending.pop(self.headers.get("Last-Event-ID", ""), None)
            if resumed is not None:
                return self._stream(iter([f"id: e2\ndata: {json.dumps(resumed)}\n\n"]))
            self._reply(405, Allow="POST, DELETE")  # no stream of the server's own messages

        def do_DELETE(self) -> None:
            self._reply(200)

    server = ThreadingHTTPServer((options.host, options.port), Handler)
    server.daemon_threads = True
    port = server.server_address[1]
    print(f"raw server ready on port {port}", file=sys.stderr, flush=True)
    server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=1)
    parser.add_argument("--modern-only", action="store_true")
    parser.add_argument("--no-schema", action="store_true")
    parser.add_argument("--asks", default=None)
    parser.add_argument("--asks-times", type=int, default=1)
    parser.add_argument("--fixture", action="store_true")
    parser.add_argument("--record", default=None)
    parser.add_argument("--cancel-asked", action="store_true")
    parser.add_argument("--string-ids", action="store_true")
    parser.add_argument("--string-progress-tokens", action="store_true")
    parser.add_argument("--exit-on-list", action="store_true")
    parser.add_argument("--silent-handshake", action="store_true")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--sse", action="store_true")
    parser.add_argument("--sse-resume", action="store_true")
    parser.add_argument("--refuse", type=int, default=0)
    # With --fixture, also lists `research`, which can only be called as a task.
    parser.add_argument("--task-only", action="store_true")
    parser.add_argument("--annotated", action="store_true")
    parser.add_argument("--tools-file", default=None)
    parser.add_argument("--meta-log", default=None)
    options = parser.parse_args()
    TOOLS_FILE[0] = options.tools_file
    META_LOG[0] = options.meta_log
    if options.annotated:
        for entry in FIXTURE_TOOLS:
            if entry["name"] in ANNOTATIONS:
                entry["annotations"] = ANNOTATIONS[entry["name"]]
    if options.task_only:
        research = {"name": "research", "inputSchema": {"type": "object"}}
        FIXTURE_TOOLS.append({**research, "execution": {"taskSupport": "required"}})
    Seen.record = options.record
    STRING_IDS[0] = options.string_ids
    if options.transport == "http":
        stdio_only = ("no_schema", "cancel_asked", "string_ids")
        stdio_only += ("string_progress_tokens", "exit_on_list", "silent_handshake")
        if given := [name for name in stdio_only if getattr(options, name)]:
            parser.error(f"over HTTP these are not served: {', '.join(given)}")
        serve_http(options)
        return
    print("raw server ready", file=sys.stderr, flush=True)
    asked_id = 1000
    while (message := receive()) is not None:
        log_meta(message)
        method, request_id = message.get("method"), message.get("id")
        if options.silent_handshake:
            cancelled = (message.get("params") or {}).get("requestId", "")
            detail = f" {cancelled}" if method == "notifications/cancelled" else ""
            print(f"raw server got {method}{detail}", file=sys.stderr, flush=True)
            continue
        if request_id is None or method is None:
            continue  # notifications, and answers outside a call
        params = message.get("params") or {}
        if method == "tools/list" and options.exit_on_list:
            sys.exit(3)
        token = (params.get("_meta") or {}).get("progressToken")
        if method == "tools/call" and options.string_progress_tokens and token is not None:
            progress = {"progressToken": str(token), "progress": 1, "total": 2, "message": "half"}
            send({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress})
        if method == "initialize":
            if options.modern_only:
                error = {
                    "code": -32022,
                    "message": "Unsupported protocol version",
                    "data": {"supported": ["2026-07-28"], "requested": params["protocolVersion"]},
                }
                send({"jsonrpc": "2.0", "id": request_id, "error": error})
                continue
            send({"jsonrpc": "2.0", "id": request_id, "result": INITIALIZED})
        elif method == "tools/list":
            result = list_result(params, options.pages, not options.no_schema, options.fixture)
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "tools/call" and params.get("name") in ("sleep", "track", "slow"):
            threading.Thread(target=sleep_call, args=(request_id, params), daemon=True).start()
        elif method == "tools/call" and params.get("name") in {t["name"] for t in FIXTURE_TOOLS}:
            arguments = params.get("arguments") or {}
            result = fixture_result(params["name"], arguments, Seen.handshakes)
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "tools/call":
            asked: Any = None
            answers: list[Any] = []
            for _ in range(options.asks_times if options.asks else 0):
                asked_id += 1
                asking = {"jsonrpc": "2.0", "id": asked_id, "method": options.asks}
                send({**asking, "params": ask(options.asks)})
                if options.cancel_asked:
                    cancel = {"requestId": asked_id, "reason": "no longer needed"}
                    send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
                    answers.append("cancelled")
                else:
                    answer = receive()
                    answers.append(answer.get("result", answer.get("error")) if answer else None)
            if answers:
                asked = answers[0] if options.asks_times == 1 else answers
            result = call_result(params["name"], params.get("arguments") or {}, asked)
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})


if __name__ == "__main__":
    main()
