"""mcpServers files: the JSON server lists of desktop MCP clients, read as tooling entries.

Claude Desktop, Cursor and Windsurf write `{"mcpServers": {NAME: ENTRY}}`, VS Code writes
`{"servers": {NAME: ENTRY}, "inputs": [...]}`. An entry is a local (stdio) server with
`command`, `args`, `env`, `cwd`, or a remote one with `url` (Windsurf: `serverUrl`) and
`headers`; `type` (`stdio`, `http`, `sse`) may say which. Each entry is checked by the same
parser as an `mcp_local` / `mcp_remote` tooling entry, and every problem is reported at its
line and column in the file. `${VAR}`, `${env:VAR}` and `${VAR:-default}` read `--var` values
and the environment; VS Code's `${input:ID}` reads ID there too (devall asks no questions), and
`${workspaceFolder}` / `${userHome}` are the folder above `.vscode/` (else the file's folder)
and the home directory. JSON with comments and trailing commas (VS Code's JSONC) is accepted.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from devall_cli.config.model import ToolingConfig
from devall_cli.config.schema import Checker, describe, get_mapping
from devall_cli.config.yaml_source import KeyPath, SourceDocument, format_path
from devall_cli.errors import ConfigError, ConfigIssue
from devall_cli.redaction import is_secret_name
from devall_cli.text import safe_id
from devall_cli.tools.kinds.mcp_local import parse_mcp_local
from devall_cli.tools.kinds.mcp_remote import parse_mcp_remote

MAX_FILE_BYTES = 1_000_000
_PLACEHOLDER = re.compile(r"\$\{(?:(env|input):)?([A-Za-z_][A-Za-z0-9_.-]*)(?::-([^}]*))?\}")
_LOCAL_TYPES = frozenset({"stdio", "local"})
_REMOTE_TYPES = frozenset({"http", "streamable-http", "streamableHttp", "sse", "remote"})
# Keys other clients use that say nothing about how to reach the server.
_QUIET_KEYS = frozenset(
    {
        "description",
        "disabled",
        "autoApprove",
        "alwaysAllow",
        "disabledTools",
        "enabledTools",
        "timeout",
        "transportType",
        "gallery",
        "version",
        "dev",
        "trust",
        "includeTools",
        "excludeTools",
        "oauth",
    }
)
_LOCAL_KEYS = ("command", "args", "env", "cwd")
_REMOTE_KEYS = ("url", "serverUrl", "headers")


@dataclass(frozen=True)
class ServersFile:
    """The servers of one mcpServers file, by name in file order."""

    display: str
    servers: Mapping[str, ToolingConfig]  # the servers checked
    disabled: frozenset[str] = frozenset()
    names: tuple[str, ...] = ()  # every server of the file, checked or not


def read_servers_file(
    path: Path,
    display: str,
    *,
    environ: Mapping[str, str],
    values: Mapping[str, str] | None = None,
    only: Collection[str] | None = None,
) -> tuple[ServersFile | None, Checker | None, list[ConfigIssue]]:
    """(the file's servers, its checker with secrets, every issue); the file may not parse.

    With `only`, the other servers are listed by name but not checked (their placeholders may
    stay unset).
    """
    try:
        doc = _parse(path, display)
    except ConfigError as exc:
        issues = exc.issues or [ConfigIssue(exc.message, file=display)]
        return None, None, [_as_json(issue) for issue in issues]
    ck = Checker(doc, workflow_dir=path.resolve().parent, environ=environ)
    lookup = _Lookup(path.resolve(), environ, values or {})
    servers_file = _servers(ck, doc, lookup, only)
    return servers_file, ck, ck.issues


def _as_json(issue: ConfigIssue) -> ConfigIssue:
    """A parse error of the file speaks of JSON, which is what the file is meant to be."""
    return replace(issue, message=issue.message.replace("invalid YAML", "invalid JSON", 1))


def load_servers_file(
    path: Path,
    display: str,
    *,
    environ: Mapping[str, str],
    values: Mapping[str, str],
    only: Collection[str] | None = None,
) -> tuple[ServersFile, Checker]:
    """The servers of a file, or a ConfigError carrying every issue."""
    servers_file, ck, issues = read_servers_file(
        path, display, environ=environ, values=values, only=only
    )
    if servers_file is None or ck is None or any(i.severity == "error" for i in issues):
        raise ConfigError.from_issues([i for i in issues if i.severity == "error"] or issues)
    return servers_file, ck


def _parse(path: Path, display: str) -> SourceDocument:
    """The file parsed with positions; comments of JSONC become spaces, so columns stay true."""
    from devall_cli.config import yaml_source as ys

    raw = ys._read_bytes(path, display, "MCP servers file", MAX_FILE_BYTES)
    text = ys._lines(ys._decode(raw, display))
    if "//" in text or "/*" in text:
        text = _strip_comments(text)
    doc = SourceDocument(data=None, file=display, lines=text.split("\n"))
    ys._check_text(text, doc, bom=0)
    doc.data = ys._parse_yaml(text, doc)
    return _checked_top(doc)


def _checked_top(doc: SourceDocument) -> SourceDocument:
    if not isinstance(doc.data, dict):
        message = (
            "an MCP servers file must be a JSON object with an 'mcpServers' "
            "(Claude Desktop, Cursor, Windsurf) or 'servers' (VS Code) object"
        )
        raise ConfigError.from_issues([doc.issue((), message)])
    return doc


def _strip_comments(text: str) -> str:
    """`//` and `/* */` comments outside strings replaced by spaces (line breaks kept)."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
            out.append(c)
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:end]))
            i = end
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


class _Lookup:
    """Resolves `${...}` placeholders of one file."""

    def __init__(self, file: Path, environ: Mapping[str, str], values: Mapping[str, str]) -> None:
        folder = file.parent
        workspace = folder.parent if folder.name == ".vscode" else folder
        self.builtin = {"workspaceFolder": str(workspace), "userHome": os.path.expanduser("~")}
        self.environ = environ
        self.values = values
        self.secrets: set[str] = set()

    def resolve(self, ck: Checker, value: Any, path: KeyPath) -> Any:
        """`value` with its placeholders replaced (recursively); a failure is an error at path."""
        if isinstance(value, dict):
            return {k: self.resolve(ck, v, (*path, k)) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(ck, v, (*path, i)) for i, v in enumerate(value)]
        if not isinstance(value, str) or "${" not in value:
            return value
        missing: list[str] = []
        resolved = self._text(value, missing, 0)
        for placeholder in missing:
            ck.error(path, _unresolved(placeholder))
        return resolved

    def _text(self, text: str, missing: list[str], depth: int) -> str:
        """`text` with each `${...}` replaced; a default may hold placeholders of its own
        (`${A:-${B:-deep}}`), resolved only when it is used."""
        out: list[str] = []
        at = 0
        while (start := text.find("${", at)) >= 0:
            end = _closing(text, start)
            if end < 0:  # no closing brace: the rest is text
                break
            out.append(text[at:start])
            out.append(self._one(text[start : end + 1], missing, depth))
            at = end + 1
        out.append(text[at:])
        return "".join(out)

    def _one(self, placeholder: str, missing: list[str], depth: int) -> str:
        body = placeholder[2:-1]
        head, has_default, default = body.partition(":-")
        found = _PLACEHOLDER.fullmatch("${" + head + "}")
        if found is None:  # not a placeholder devall reads: kept as it is
            return placeholder
        kind, name, _ = found.groups()
        text = self._value(kind, name)
        if text is None or (text == "" and has_default):
            if not has_default:
                missing.append(placeholder)
                return ""
            if depth >= _MAX_DEFAULT_DEPTH:
                missing.append(placeholder)
                return ""
            text = self._text(default, missing, depth + 1)
        if is_secret_name(name):
            self.secrets.add(text)
        return text

    def _value(self, kind: str | None, name: str) -> str | None:
        if kind is None and name in self.builtin:
            return self.builtin[name]
        if kind != "env" and name in self.values:
            return self.values[name]
        return self.environ.get(name)


_MAX_DEFAULT_DEPTH = 8  # defaults inside defaults


def _closing(text: str, start: int) -> int:
    """The index of the `}` that closes the `${` at `start` (nested ones counted), else -1."""
    depth = 0
    i = start
    while i < len(text):
        if text.startswith("${", i):
            depth += 1
            i += 2
            continue
        if text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _unresolved(placeholder: str) -> str:
    name = _PLACEHOLDER.fullmatch(placeholder)
    bare = name.group(2) if name else placeholder
    how = f"set {bare} in the environment or with --var {bare}=VALUE"
    if placeholder.startswith("${env:"):
        how = f"set {bare} in the environment"
    if placeholder.startswith("${input:"):
        how += " (devall does not prompt for VS Code inputs)"
    return f"unresolved placeholder {placeholder}: {how}"


def _servers(
    ck: Checker, doc: SourceDocument, lookup: _Lookup, only: Collection[str] | None
) -> ServersFile | None:
    top: dict[str, Any] = doc.data
    keys = [key for key in ("mcpServers", "servers") if key in top]
    if not keys:
        ck.error(
            (),
            "no 'mcpServers' (Claude Desktop, Cursor, Windsurf) or 'servers' (VS Code) object "
            "in the file",
        )
        return None
    servers: dict[str, ToolingConfig] = {}
    disabled: set[str] = set()
    names: list[str] = []
    for key in keys:
        block = get_mapping(ck, top[key], (key,), f"'{key}'")
        for name, raw in (block or {}).items():
            where: KeyPath = (key, name)
            if name in names:
                ck.error(where, f"server '{name}' is defined twice", at_key=True)
                continue
            names.append(str(name))
            # A server may be chosen by its key or by the id it is shown as (`${X}` as X).
            if only is not None and name not in only and safe_id(str(name)) not in only:
                continue
            entry = get_mapping(ck, raw, where, f"server '{name}'")
            if entry is None:
                continue
            if entry.get("disabled") is True:
                disabled.add(str(name))
            tooling = _server(ck, str(name), entry, where, lookup)
            if tooling is not None:
                servers[str(name)] = tooling
    ck.secrets.update(lookup.secrets)
    return ServersFile(doc.file, servers, frozenset(disabled), tuple(names))


def _server(
    ck: Checker, name: str, entry: dict[str, Any], where: KeyPath, lookup: _Lookup
) -> ToolingConfig | None:
    """One entry as an `mcp_local` or `mcp_remote` tooling entry, checked by that parser."""
    kind = _kind(ck, entry, where)
    if kind is None:
        return None
    own = _LOCAL_KEYS if kind == "mcp_local" else _REMOTE_KEYS
    other = _REMOTE_KEYS if kind == "mcp_local" else _LOCAL_KEYS
    for key in entry:
        if key in other:
            what = "a local (stdio)" if kind == "mcp_local" else "a remote"
            ck.warning((*where, key), f"'{key}' has no effect on {what} server (ignored)")
        elif key not in own and key not in _QUIET_KEYS and key not in ("type", "envFile"):
            ck.warning((*where, key), f"unknown key '{key}' in server '{name}' (ignored)")
    if "envFile" in entry:
        ck.warning((*where, "envFile"), "envFile is not read by devall: list the values in env")
    raw = {key: lookup.resolve(ck, entry[key], (*where, key)) for key in own if key in entry}
    if kind == "mcp_local":
        settings: Any = parse_mcp_local(ck, raw, where)
    else:
        _alias(ck.doc, where, "url" if "url" in raw else "serverUrl", "server")
        url = raw.pop("url", None) or raw.pop("serverUrl", None)
        raw.pop("serverUrl", None)
        if url is None:
            ck.error(where, f"server '{name}' needs a 'command' (local) or a 'url' (remote)")
            return None
        if not _sse_ok(ck, entry, url, where):
            return None
        settings = parse_mcp_remote(ck, {"server": url, **raw}, where)
    if settings is None:
        return None
    return ToolingConfig(type=kind, config=settings, path=format_path(where), name=name)


def _kind(ck: Checker, entry: dict[str, Any], where: KeyPath) -> str | None:
    declared = entry.get("type", entry.get("transportType"))
    if declared is not None:
        if declared in _LOCAL_TYPES:
            return "mcp_local"
        if declared in _REMOTE_TYPES:
            return "mcp_remote"
        ck.error(
            (*where, "type"),
            f"type must be stdio, http or sse, got {describe(declared)}",
        )
        return None
    if "command" in entry:
        return "mcp_local"
    if "url" in entry or "serverUrl" in entry:
        return "mcp_remote"
    ck.error(where, f"server '{where[-1]}' needs a 'command' (local) or a 'url' (remote)")
    return None


def _sse_ok(ck: Checker, entry: dict[str, Any], url: Any, where: KeyPath) -> bool:
    """devall picks the SSE transport by the URL: `type: sse` needs a URL ending in `/sse`."""
    declared = entry.get("type", entry.get("transportType"))
    if declared == "sse" and isinstance(url, str) and not _sse_url(url):
        ck.error(
            (*where, "type"),
            "type 'sse': devall speaks SSE to URLs whose path ends in /sse, and streamable "
            f"HTTP to the others; {url!r} does not end in /sse (use the server's /sse URL, "
            "or type http)",
        )
        return False
    return True


def _sse_url(url: str) -> bool:
    return urlsplit(url).path.rstrip("/").endswith("/sse")


def _alias(doc: SourceDocument, where: KeyPath, key: str, alias: str) -> None:
    """Problems reported at `alias` point at `key` in the file."""
    for positions in (doc.key_positions, doc.value_positions):
        if (*where, key) in positions:
            positions[(*where, alias)] = positions[(*where, key)]
