"""A cassette: what a run got from outside its workflow file, written once and served back.

A cassette is a JSONL file (docs/cassettes.md). Its first line is the header; every other line
is one exchange — a model request and its reply, an MCP request and its result, a person's
answer — or a blob (binary content kept once, by sha256). Lines are written at the end of the run,
in an order that does not depend on timing: server exchanges by server, then everything a node
visit asked, by node and visit, each in the order it was asked.

Recording masks every string with the run's redactor before it is kept. Replaying serves each
request from the exchanges recorded for the same node visit (the same server, for listings),
whatever order the run's parallel branches take; a request that matches none stops the run with a
ReplayMismatchError (exit 6) showing the recorded and the asked request as a unified diff.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from devall_cli import json_limits
from devall_cli.cassette.scope import current_scope
from devall_cli.errors import (
    AuthError,
    ConfigError,
    ConfigIssue,
    DevallConnectionError,
    DevallError,
    LLMHTTPError,
    LLMUnreachableError,
    ProtocolError,
    RemoteError,
    ReplayMismatchError,
    RunFailedError,
    ServerDiedError,
    ServerStartError,
    ServerUnreachableError,
    UsageError,
)
from devall_cli.redaction import Redactor
from devall_cli.text import clean_value

if TYPE_CHECKING:
    import asyncio

FORMAT = "devall-cassette"
VERSION = 1
CASSETTE_BYTES = 256 * 1024 * 1024  # a cassette file; one line may be as long as the file
DIFF_LINES = 60  # lines of a mismatch's diff shown (the rest is counted)
Mode = Literal["record", "replay"]
Channel = Literal["model", "tools", "human"]
ONLY_CHOICES = ("model", "tools")
ENTRY_TYPES = ("model", "mcp", "human", "blob")
# Exchanges of a server, not of a node visit (roots/list: the roots devall answered with).
# notifications/message: the log messages of a server that no one call can claim.
SERVER_METHODS = ("initialize", "tools/list", "roots/list", "notifications/message")


@dataclass
class _Entry:
    data: dict[str, Any]
    line: int = 0  # in the file (replay)
    used: bool = False


@dataclass
class Tape:
    """One cassette, recording (`mode="record"`) or replaying (`mode="replay"`)."""

    path: Path
    mode: Mode
    redactor: Redactor = field(default_factory=Redactor)
    only: str | None = None  # replay only this channel: model | tools (None: everything)
    header: dict[str, Any] = field(default_factory=dict)
    hint: str = ""  # how to record the cassette again (shown with a mismatch)
    _entries: list[_Entry] = field(default_factory=list)
    _blobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _closed: bool = False
    # The order node visits finished in (recording), and the replay's progress through it.
    _order: list[tuple[str, int]] = field(default_factory=list)
    _running: set[tuple[str, int]] = field(default_factory=set)
    _done: set[tuple[str, int]] = field(default_factory=set)
    _waiting: dict[tuple[str, int], asyncio.Future[None]] = field(default_factory=dict)
    # The exchanges of each (type, node, visit), built once: a replay looks one up per request.
    _by_scope: dict[tuple[str, str, int], list[_Entry]] | None = None

    # --- what is taped ---------------------------------------------------------------------

    def replays(self, channel: Channel) -> bool:
        """Whether requests of `channel` are served from the cassette."""
        if self.mode != "replay":
            return False
        return self.only is None or self.only == channel

    def records(self) -> bool:
        """Whether exchanges are being recorded."""
        return self.mode == "record"

    # --- recording -------------------------------------------------------------------------

    def record(self, entry: Mapping[str, Any]) -> None:
        """Keep one exchange; node and visit come from the running node visit when not given."""
        if self.mode != "record":
            return
        data = dict(entry)
        if data.get("method") not in SERVER_METHODS and "node" not in data:
            node, visit = current_scope()
            data = {"type": data.pop("type"), "node": node, "visit": visit, **data}
        data = self.redactor.value(_plain(data))
        with self._lock:
            self._entries.append(_Entry(data))

    def store_blob(self, data: bytes, mime_type: str) -> str:
        """Keep `data` once; its sha256, which names it in the exchanges."""
        import base64
        import hashlib

        digest = hashlib.sha256(data).hexdigest()
        with self._lock:
            self._blobs.setdefault(
                digest,
                {
                    "type": "blob",
                    "sha256": digest,
                    "mime_type": mime_type,
                    "size": len(data),
                    "base64": base64.b64encode(data).decode("ascii"),
                },
            )
        return digest

    def close(self) -> None:
        """Write the cassette (recording; once). The file is replaced whole or not at all."""
        if self.mode != "record" or self._closed:
            return
        self._closed = True
        header = {**self.header, "visits": [[node, visit] for node, visit in self._order]}
        lines = [json.dumps(header, ensure_ascii=False)]
        lines += [json.dumps(e.data, ensure_ascii=False) for e in self._ordered()]
        lines += [json.dumps(self._blobs[k], ensure_ascii=False) for k in sorted(self._blobs)]
        text = "\n".join(lines) + "\n"
        write_atomically(self.path, text)

    def _ordered(self) -> list[_Entry]:
        """Server exchanges by server, then node visits by node and visit, each as asked."""
        numbered = list(enumerate(self._entries))

        def key(item: tuple[int, _Entry]) -> tuple[Any, ...]:
            n, entry = item
            data = entry.data
            if data.get("method") in SERVER_METHODS:
                return (0, str(data.get("server", "")), "", 0, n)
            return (1, str(data.get("node", "")), "", int(data.get("visit", 0)), n)

        return [entry for _, entry in sorted(numbered, key=key)]

    # --- the order node visits finish in ---------------------------------------------------

    def visit_started(self, node: str, visit: int) -> None:
        """A node visit began (its outputs are handed on through `visit_done`)."""
        if self.mode == "replay":
            self._running.add((node, visit))

    async def visit_done(self, node: str, visit: int) -> None:
        """A node visit produced its outputs; returns when they may be handed on.

        Recording notes the order visits finish in. A replay hands outputs on in that order:
        a visit waits while one that finished before it in the recording is still running, so
        that nodes fed by parallel branches get their inputs in the recorded order. When every
        running visit waits, the first of them in the recorded order goes on (never a deadlock).
        """
        import asyncio  # here: a run has it loaded already, `devall validate` never needs it

        key = (node, visit)
        if self.mode == "record":
            with self._lock:
                self._order.append(key)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting[key] = future
        try:
            self._release()
            await future
        finally:
            self._waiting.pop(key, None)
            self._running.discard(key)
            self._done.add(key)
            self._release()

    def visit_failed(self, node: str, visit: int) -> None:
        """A node visit ended without outputs: nothing waits for it any more."""
        if self.mode == "replay":
            self._running.discard((node, visit))
            self._done.add((node, visit))
            self._release()

    def _release(self) -> None:
        position: dict[tuple[str, int], int] = {}
        for number, key in enumerate(self._order):
            position.setdefault(key, number)
        waiting = [(key, f) for key, f in self._waiting.items() if not f.done()]
        if not waiting:
            return
        released = False
        for key, future in waiting:
            index = position.get(key)
            ahead = [] if index is None else self._order[:index]
            if not any(k in self._running and k not in self._done and k != key for k in ahead):
                future.set_result(None)
                released = True
        pending = {key for key, _ in waiting}  # released ones have yet to go on: no deadlock
        if not released and all(key in pending for key in self._running):
            first = min(waiting, key=lambda item: position.get(item[0], len(self._order)))
            first[1].set_result(None)

    # --- replaying -------------------------------------------------------------------------

    def take_server(self, server: str, method: str) -> dict[str, Any]:
        """The next recorded `method` exchange of `server` (a listing asked again: the last)."""
        with self._lock:
            found = [
                e
                for e in self._entries
                if e.data.get("type") == "mcp"
                and e.data.get("server") == server
                and e.data.get("method") == method
            ]
            for entry in found:
                if not entry.used:
                    entry.used = True
                    return entry.data
        if found and method == "tools/list":
            return found[-1].data
        recorded = sorted({str(e.data.get("server")) for e in self._entries if "server" in e.data})
        raise ReplayMismatchError(
            f"replay: server '{server}' was asked for {method}, which the cassette "
            f"{self.path} does not hold",
            details=[f"servers recorded: {', '.join(recorded) or 'none'}"],
            hint=self.hint,
        )

    def server_entry(self, server: str, method: str) -> dict[str, Any] | None:
        """The recorded `method` exchange of `server`, if any (not used up)."""
        for entry in self._entries:
            data = entry.data
            if data.get("server") == server and data.get("method") == method:
                return data
        return None

    def take(self, kind: str, what: str, asked: Mapping[str, Any], **match: Any) -> dict[str, Any]:
        """The exchange of the running node visit whose request equals `asked`.

        `kind` is the entry type, `match` the fields it must have besides (server, method);
        `what` names the request in a mismatch ("model request", "call of tool 'x'").
        """
        node, visit = current_scope()
        asked = self.redactor.value(_plain(dict(asked)))
        with self._lock:
            candidates = [
                e
                for e in self._scoped().get((kind, node, visit), ())
                if all(e.data.get(k) == v for k, v in match.items())
            ]
            for entry in candidates:
                if not entry.used and _request_of(entry.data, asked) == asked:
                    entry.used = True
                    return entry.data
        raise self._mismatch(what, node, visit, asked, candidates)

    def _scoped(self) -> dict[tuple[str, str, int], list[_Entry]]:
        if self._by_scope is None:
            self._by_scope = {}
            for entry in self._entries:
                data = entry.data
                node, visit = data.get("node"), data.get("visit")
                if not isinstance(node, str) or not isinstance(visit, int):
                    continue  # a server's exchange: no node visit to look it up by
                key = (str(data.get("type")), node, visit)
                self._by_scope.setdefault(key, []).append(entry)
        return self._by_scope

    def _mismatch(
        self,
        what: str,
        node: str,
        visit: int,
        asked: Mapping[str, Any],
        candidates: list[_Entry],
    ) -> ReplayMismatchError:
        where = f"node '{node}' visit {visit}" if node else "outside any node"
        waiting = [e for e in candidates if not e.used]
        if not waiting:
            if candidates:
                reason = f"every such request recorded for {where} was served already"
            else:
                visits = sorted(
                    {
                        f"{e.data.get('node')} visit {e.data.get('visit')}"
                        for e in self._entries
                        if e.data.get("type") != "blob" and e.data.get("node")
                    }
                )
                reason = f"the cassette holds none for {where}"
                if visits:
                    more = ", ..." if len(visits) > 8 else ""
                    reason += f" (it holds: {', '.join(visits[:8])}{more})"
            message = f"replay: {where} sent a {what} the cassette does not hold: {reason}"
            details = ["asked:", *_indented(asked)]
        else:
            nearest = waiting[0]
            number = candidates.index(nearest) + 1
            message = (
                f"replay: {where} sent a {what} that differs from the recording "
                f"(request {number} of that visit, line {nearest.line} of {self.path})"
            )
            details = diff_lines(_request_of(nearest.data, asked), asked)
        return ReplayMismatchError(message, details=details, hint=self.hint)

    def blob(self, digest: str) -> bytes:
        """The content a recorded exchange names by `digest`."""
        import base64

        found = self._blobs.get(digest)
        if found is None:
            raise ReplayMismatchError(
                f"replay: the cassette {self.path} names blob {digest[:12]}... "
                "but does not hold it",
                hint=self.hint,
            )
        return base64.b64decode(str(found.get("base64", "")))

    def unused(self) -> list[dict[str, Any]]:
        """Exchanges a replay never asked for (a run that did less than the recording)."""
        return [
            e.data
            for e in self._entries
            if not e.used and e.data.get("method") not in SERVER_METHODS and self._served(e.data)
        ]

    def _served(self, data: Mapping[str, Any]) -> bool:
        channel: Channel = {"model": "model", "mcp": "tools"}.get(str(data.get("type")), "human")  # type: ignore[assignment]
        # Asked outside any node visit: a server's sampling request, which a replay of its
        # tool call never makes.
        return self.replays(channel) and bool(data.get("node"))


def _request_of(data: Mapping[str, Any], like: Mapping[str, Any]) -> dict[str, Any]:
    """The recorded request fields named by the asked request."""
    return {key: data.get(key) for key in like}


def diff_lines(recorded: Any, asked: Any) -> list[str]:
    """A unified diff of two requests as indented JSON, cut to DIFF_LINES lines."""
    import difflib

    old = json.dumps(recorded, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    new = json.dumps(asked, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    lines = list(difflib.unified_diff(old, new, "recorded", "asked", n=2, lineterm=""))
    if len(lines) > DIFF_LINES:
        lines = [*lines[:DIFF_LINES], f"... ({len(lines) - DIFF_LINES} more lines of diff)"]
    return lines


def _indented(value: Any) -> list[str]:
    lines = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    return [f"  {line}" for line in lines[:DIFF_LINES]]


def _plain(value: Any) -> Any:
    """JSON data only: tuples become lists, mapping keys strings, anything else its text."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


# --- errors kept in a cassette ---------------------------------------------------------------

_ERRORS: dict[str, type[DevallError]] = {
    cls.__name__: cls
    for cls in (
        AuthError,
        DevallConnectionError,
        LLMHTTPError,
        LLMUnreachableError,
        ProtocolError,
        RemoteError,
        RunFailedError,
        ServerDiedError,
        ServerStartError,
        ServerUnreachableError,
    )
}


def error_entry(exc: DevallError) -> dict[str, Any]:
    """What a cassette keeps of an error that answered a request."""
    data: dict[str, Any] = {"class": type(exc).__name__, "message": exc.message}
    if exc.details:
        data["details"] = list(exc.details)
    if exc.hint:
        data["hint"] = exc.hint
    status = getattr(exc, "status", None)
    if isinstance(status, str):
        data["status"] = status
    code = getattr(exc, "status_code", None)
    if isinstance(code, int):
        data["status_code"] = code
    return data


def raise_recorded(data: Mapping[str, Any]) -> None:
    """Raise the error a cassette recorded as the answer to a request."""
    name = str(data.get("class", ""))
    cls = _ERRORS.get(name, RunFailedError)
    message = str(data.get("message", "error"))
    status = str(data.get("status", "")) or None
    exc: DevallError
    if cls is ServerStartError:
        exc = ServerStartError(message, status=status or "spawn_failed")
    elif cls in (ServerUnreachableError, AuthError):
        exc = cls(message, status=status) if status else cls(message)
    elif cls is LLMHTTPError:
        exc = LLMHTTPError(message, status_code=int(data.get("status_code", 0) or 0))
    else:
        exc = cls(message)
    exc.details = [str(line) for line in data.get("details", ())]
    exc.hint = str(data.get("hint", ""))
    raise exc


# --- opening ---------------------------------------------------------------------------------


def open_recording(
    path: Path,
    redactor: Redactor,
    *,
    workflow: str,
    placeholders: Mapping[str, str | None] | None = None,
) -> Tape:
    """A tape recording into `path` (written when it is closed).

    `placeholders` are the values of the `${NAME}`s the workflow took from outside its file (a
    secret's as None): a replay without them set resolves them from the cassette.
    """
    from devall_cli import __version__

    _check_writable(path)
    header = {
        "type": "header",
        "format": FORMAT,
        "version": VERSION,
        "devall": __version__,
        "workflow": workflow,
        "recorded": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "placeholders": redactor.value(dict(placeholders or {})),
    }
    return Tape(path, "record", redactor, header=header)


def open_replay(path: Path, redactor: Redactor, *, only: str | None = None) -> Tape:
    """A tape serving the exchanges of the cassette at `path`; ConfigError when it is unusable."""
    if only is not None and only not in ONLY_CHOICES:
        raise ConfigError(f"--replay-only must be one of {', '.join(ONLY_CHOICES)}, not '{only}'")
    header, entries = read_cassette(path)
    tape = Tape(path, "replay", redactor, only=only, header=header)
    for item in header.get("visits") or []:
        if isinstance(item, list) and len(item) == 2:
            tape._order.append((str(item[0]), int(item[1])))
    for entry in entries:
        if entry.data.get("type") == "blob":
            tape._blobs[str(entry.data.get("sha256"))] = entry.data
        else:
            tape._entries.append(entry)
    return tape


def replay_environ(path: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` over the placeholders the recording at `path` took from outside its file:
    what a replayed workflow loads with, so that it needs neither those variables nor keys."""
    return {**replay_placeholders(path), **environ}


def replay_placeholders(path: Path) -> dict[str, str]:
    """The recorded values of the placeholders the workflow took from outside its file.

    A secret's value is never recorded: it comes back as `***`, which is enough to load the
    workflow and is masked everywhere like the real one.
    """
    header, _ = read_cassette(path, header_only=True)
    found = header.get("placeholders")
    if not isinstance(found, Mapping):
        return {}
    return {str(k): "***" if v is None else str(v) for k, v in found.items()}


def read_cassette(path: Path, *, header_only: bool = False) -> tuple[dict[str, Any], list[_Entry]]:
    """The header and the entries of a cassette file; ConfigError naming the line when bad."""
    display = str(path)
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block the open for ever
            raise _bad(display, 0, "the cassette is not a regular file")
        with open(path, "rb") as handle:
            # The header is the first line: a replay's placeholders need no more of the file.
            raw = handle.readline(CASSETTE_BYTES + 1) if header_only else b""
            if not raw.strip():
                raw += handle.read(CASSETTE_BYTES + 1 - len(raw))
    except OSError as exc:
        raise _bad(display, 0, f"cannot read the cassette: {exc.strerror or exc}") from None
    if len(raw) > CASSETTE_BYTES:
        raise _bad(display, 0, f"the cassette is larger than {CASSETTE_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _bad(display, 0, f"the cassette is not UTF-8 (byte offset {exc.start})") from None
    header: dict[str, Any] | None = None
    entries: list[_Entry] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = clean_value(json_limits.loads(line))
        except (ValueError, json_limits.JsonLimitError) as exc:
            raise _bad(display, number, f"not a JSON line: {exc}") from None
        if not isinstance(value, dict):
            raise _bad(display, number, "each line must be a JSON object")
        if header is None:
            header = _checked_header(value, display, number)
            if header_only:
                return header, []
            continue
        if value.get("type") not in ENTRY_TYPES:
            kinds = ", ".join(ENTRY_TYPES)
            found = value.get("type")
            raise _bad(display, number, f"unknown entry type {found!r} (one of {kinds})")
        entries.append(_Entry(value, line=number))
    if header is None:
        raise _bad(display, 0, "the cassette is empty (record one with --record)")
    return header, entries


def _checked_header(value: dict[str, Any], display: str, number: int) -> dict[str, Any]:
    if value.get("format") != FORMAT:
        problem = f"not a devall cassette (its first line has no format: {FORMAT})"
        raise _bad(display, number, problem)
    version = value.get("version")
    if version != VERSION:
        raise _bad(
            display,
            number,
            f"cassette format version {version!r}; this devall reads version {VERSION} "
            "(record it again with --record)",
        )
    return value


def _bad(display: str, line: int, message: str) -> ConfigError:
    issue = ConfigIssue(message, file=display, line=line)
    return ConfigError(issue.headline(), issues=[issue])


def _check_writable(path: Path) -> None:
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"cannot record to {path}: the folder {parent} does not exist")
    if path.is_dir():
        raise UsageError(f"cannot record to {path}: it is a folder")


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file beside it (RunFailedError when it fails)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise RunFailedError(f"cannot write the cassette {path}: {exc.strerror or exc}") from None
