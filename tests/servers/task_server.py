"""A stdio MCP server whose tools run as MCP tasks, written by hand (no SDK).

On 2025-11-25 (`initialize`) it declares `tasks.requests.tools.call`, runs a call that asks for
a task (`task: {ttl}`) as one and serves `tasks/get`, `tasks/result` (answered once the task
has ended) and `tasks/cancel`. With --modern it also answers `server/discover` (2026-07-28)
declaring the `io.modelcontextprotocol/tasks` extension: a call whose `_meta` client
capabilities declare it runs as a task (`resultType: "task"`), `tasks/get` inlines the result
once the task has ended, and `tasks/result` is no method. Tools:

    crunch {steps, delay}  taskSupport `optional`: `steps` steps of `delay` seconds; as a task,
                           each step sets the task's statusMessage (`step i/n`) and reports
                           progress on the call's token; answers `crunched <steps> steps`
    brief {topic}          taskSupport `required`: a call that is no task is refused (-32601);
                           as a task, answers `brief on <topic>`
    flop                   taskSupport `required`: the task fails (`failed`, with the error
                           `flop went wrong`, -32603)
    plain                  no task support: answers `plain`

    --log PATH  appends one JSON line per request: its method, whether it asked for a task
                (`task`: a tools/call with `task`, or any request declaring the extension), and
                the `taskId` of a tasks/* request
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from typing import Any

POLL_MS = 100
EXTENSION = "io.modelcontextprotocol/tasks"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
MODERN = [False]  # --modern
COMPLETE = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
DISCOVERED = {
    "supportedVersions": ["2026-07-28"],
    "capabilities": {"tools": {}, "extensions": {EXTENSION: {}}},
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "task server", "version": "1"}},
    **COMPLETE,
}
_SEND = threading.Lock()
TOOLS = [
    {
        "name": "crunch",
        "description": "Crunch numbers for a while, step by step.",
        "inputSchema": {
            "type": "object",
            "properties": {"steps": {"type": "integer"}, "delay": {"type": "number"}},
        },
        "execution": {"taskSupport": "optional"},
    },
    {
        "name": "brief",
        "description": "Write a brief on a topic (runs only as a task).",
        "inputSchema": {
            "type": "object",
            "properties": {"topic": {"type": "string"}},
            "required": ["topic"],
        },
        "execution": {"taskSupport": "required"},
    },
    {
        "name": "flop",
        "description": "Fail as a task.",
        "inputSchema": {"type": "object"},
        "execution": {"taskSupport": "required"},
    },
    {"name": "plain", "description": "Answer at once.", "inputSchema": {"type": "object"}},
]
FLOPPED = {"code": -32603, "message": "flop went wrong"}
INITIALIZED = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {}, "tasks": {"cancel": {}, "requests": {"tools": {"call": {}}}}},
    "serverInfo": {"name": "task server", "version": "1"},
}


def send(message: dict[str, Any]) -> None:
    with _SEND:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def text(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}]}


class Task:
    """One task: its status, and its result once it has ended."""

    def __init__(self, token: Any) -> None:
        self.id = str(uuid.uuid4())
        self.token = token  # the call's progress token, valid while the task runs
        self.status = "working"
        self.message: str | None = None
        self.created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.result: dict[str, Any] | None = None
        self.ended = threading.Event()

    def view(self) -> dict[str, Any]:
        modern = MODERN[0]
        task: dict[str, Any] = {
            "taskId": self.id,
            "status": self.status,
            "createdAt": self.created,
            "lastUpdatedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "ttlMs" if modern else "ttl": 60000,
            "pollIntervalMs" if modern else "pollInterval": POLL_MS,
        }
        if self.message is not None:
            task["statusMessage"] = self.message
        return task

    def detailed(self) -> dict[str, Any]:
        """`tasks/get` on 2026-07-28: the result inlined once the task completed."""
        task = {**self.view(), "resultType": "complete"}
        if self.status == "completed" and self.result is not None:
            task["result"] = {**self.result, "resultType": "complete"}
        if self.status == "failed":
            task["error"] = FLOPPED
        return task

    def end(self, status: str, result: dict[str, Any]) -> None:
        if self.ended.is_set():
            return  # cancelled meanwhile: it stays so
        self.status, self.result = status, result
        self.ended.set()


TASKS: dict[str, Task] = {}


def run(name: str, arguments: dict[str, Any], task: Task | None) -> dict[str, Any]:
    """What a tool answers; with `task`, its steps are the task's status and progress."""
    if name == "plain":
        return text("plain")
    if name == "brief":
        time.sleep(0.2)
        return text(f"brief on {arguments.get('topic')}")
    steps, delay = int(arguments.get("steps", 3)), float(arguments.get("delay", 0.1))
    for step in range(1, steps + 1):
        if task is not None:
            if task.ended.is_set():
                return text("cancelled")
            task.message = f"step {step}/{steps}"
            if task.token is not None:
                progress = {"progressToken": task.token, "progress": step, "total": steps}
                send({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress})
        time.sleep(delay)
    return text(f"crunched {steps} steps")


def start_task(params: dict[str, Any]) -> dict[str, Any]:
    task = Task((params.get("_meta") or {}).get("progressToken"))
    TASKS[task.id] = task

    def work() -> None:
        if params["name"] == "flop":
            task.end("failed", {})
            return
        task.end("completed", run(params["name"], params.get("arguments") or {}, task))

    threading.Thread(target=work, daemon=True).start()
    return {"resultType": "task", **task.view()} if MODERN[0] else {"task": task.view()}


def answer_result(request_id: Any, task: Task) -> None:
    """`tasks/result`: answered on a thread of its own once the task has ended."""
    task.ended.wait()
    if task.status in ("cancelled", "failed"):
        error = {"code": -32000, "message": "Task cancelled"}
        error = FLOPPED if task.status == "failed" else error
        send({"jsonrpc": "2.0", "id": request_id, "error": error})
        return
    related = {"io.modelcontextprotocol/related-task": {"taskId": task.id}}
    send({"jsonrpc": "2.0", "id": request_id, "result": {**(task.result or {}), "_meta": related}})


def declared(params: dict[str, Any]) -> bool:
    """Whether a request declares the tasks extension in its `_meta` (2026-07-28)."""
    capabilities = (params.get("_meta") or {}).get(CAPABILITIES_KEY) or {}
    return EXTENSION in (capabilities.get("extensions") or {})


def log(path: str | None, method: str, params: dict[str, Any]) -> None:
    if path is None:
        return
    asked = "task" in params or declared(params)
    entry = {"method": method, "task": asked, "taskId": params.get("taskId")}
    with _SEND, open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(entry) + "\n")


def answer(request_id: Any, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The result of one request (None: answered elsewhere); KeyError for an unknown task."""
    modern = MODERN[0]
    if method == "server/discover" and modern:
        return DISCOVERED
    if method == "initialize":
        return INITIALIZED
    if method == "tools/list":
        return {"tools": TOOLS, **(COMPLETE if modern else {})}
    if method == "ping":
        return {}
    if method == "tools/call":
        asked = declared(params) if modern else "task" in params
        if asked and params.get("name") in ("crunch", "brief", "flop"):
            return start_task(params)
        if params.get("name") in ("brief", "flop"):
            raise LookupError(f"Tool '{params['name']}' can only be called as a task")
        result = run(params["name"], params.get("arguments") or {}, None)
        return {**result, "resultType": "complete"} if modern else result
    if method not in ("tasks/get", "tasks/cancel", "tasks/result") or (
        modern and (method == "tasks/result" or not declared(params))
    ):
        raise LookupError(f"Method not found: {method}")
    task = TASKS[str(params.get("taskId"))]
    if method == "tasks/get":
        return task.detailed() if modern else task.view()
    if method == "tasks/cancel":
        task.end("cancelled", text("cancelled"))
        task.status, task.message = "cancelled", "cancelled by the client"
        return {"resultType": "complete"} if modern else task.view()
    threading.Thread(target=answer_result, args=(request_id, task), daemon=True).start()
    return None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", default=None)
    parser.add_argument("--modern", action="store_true")
    options = parser.parse_args()
    MODERN[0] = options.modern
    print("task server ready", file=sys.stderr, flush=True)
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method is None or request_id is None:
            continue  # notifications, and answers
        params = message.get("params") or {}
        log(options.log, method, params)
        try:
            result = answer(request_id, method, params)
        except LookupError as exc:
            error = {"code": -32601, "message": str(exc)}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})
            continue
        if result is not None:
            send({"jsonrpc": "2.0", "id": request_id, "result": result})


if __name__ == "__main__":
    main()
