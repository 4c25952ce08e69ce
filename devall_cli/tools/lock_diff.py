"""How a live tool surface differs from its lockfile: every change, breaking or compatible.

An input schema says what a caller may send: what narrows it breaks callers (a new required
property, a removed property, a type or an enum value taken away, a tighter bound, a constraint
added), what widens it does not. An output schema says what the tool returns: there a removed
property, or one no longer required, or a widened type breaks whoever reads the result.
Annotations break when they move toward destructive (readOnlyHint true -> false or unset,
destructiveHint false -> true or unset). A removed tool, prompt or resource breaks; a new one,
a new optional property and a changed title or description do not. The table is in
docs/lockfile.md.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from devall_cli.tools.schema_diff import Finding, schema_findings

Direction = Literal["input", "output"]


@dataclass(frozen=True)
class Change:
    """One difference between the lockfile and the live surface."""

    kind: str  # tool_added | tool_removed | tool_renamed | input_schema | annotations | ...
    message: str
    breaking: bool
    tool: str | None = None  # the tool it concerns (None for server, resource, prompt changes)
    path: str = ""  # where in the tool's (or server's) entry: `input_schema.properties.q.type`
    before: Any = None
    after: Any = None

    def to_json(self) -> dict[str, Any]:
        """The change as `tools diff --json` prints it."""
        return {
            "tool": self.tool,
            "kind": self.kind,
            "path": self.path,
            "breaking": self.breaking,
            "before": self.before,
            "after": self.after,
            "message": self.message,
        }


@dataclass(frozen=True)
class ServerDrift:
    """The changes of one server: `unchanged`, `changed`, `added`, `removed` or `not_checked`."""

    id: str
    status: str
    changes: tuple[Change, ...] = ()

    @property
    def breaking(self) -> int:
        """How many of its changes break callers."""
        return sum(1 for change in self.changes if change.breaking)

    @property
    def compatible(self) -> int:
        """How many of its changes do not."""
        return len(self.changes) - self.breaking

    def to_json(self) -> dict[str, Any]:
        """The server's entry of the JSON document."""
        return {
            "id": self.id,
            "status": self.status,
            "breaking": self.breaking,
            "compatible": self.compatible,
            "changes": [change.to_json() for change in self.changes],
        }


@dataclass(frozen=True)
class Drift:
    """Every server's changes against one lockfile."""

    lock: str  # the lockfile, as the user named it
    servers: tuple[ServerDrift, ...]

    @property
    def breaking(self) -> int:
        """Breaking changes over all servers."""
        return sum(server.breaking for server in self.servers)

    @property
    def compatible(self) -> int:
        """Compatible changes over all servers."""
        return sum(server.compatible for server in self.servers)

    def fails(self, strict: bool = False) -> bool:
        """Whether the drift fails a check: a breaking change, or (`strict`) any change."""
        return bool(self.breaking or (strict and self.compatible))

    def to_json(self, strict: bool = False) -> dict[str, Any]:
        """`{"ok", "lock", "breaking", "compatible", "servers": [...]}`."""
        return {
            "ok": not self.fails(strict),
            "lock": self.lock,
            "breaking": self.breaking,
            "compatible": self.compatible,
            "servers": [server.to_json() for server in self.servers],
        }


def compare_surfaces(
    lock: str,
    locked: Mapping[str, Any],
    live: Mapping[str, Any],
    not_checked: Collection[str] = (),
) -> Drift:
    """The drift of `live` server entries from `locked` ones (both by server id, as in the
    lockfile); the servers in `not_checked` did not answer and are not compared."""
    servers: list[ServerDrift] = []
    for server_id in sorted({*locked, *live, *not_checked}):
        if server_id in not_checked:
            servers.append(ServerDrift(server_id, "not_checked"))
        elif server_id not in locked:
            added = Change("server_added", "server added (not in the lockfile)", False)
            servers.append(ServerDrift(server_id, "added", (added,)))
        elif server_id not in live:
            message = "server removed: its tools are gone"
            removed = Change("server_removed", message, True, before=server_id)
            servers.append(ServerDrift(server_id, "removed", (removed,)))
        else:
            changes = tuple(server_changes(locked[server_id], live[server_id]))
            servers.append(ServerDrift(server_id, "changed" if changes else "unchanged", changes))
    return Drift(lock, tuple(servers))


def server_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Change]:
    """The changes of one server's entry: what it says of itself, its tools, its listings."""
    changes: list[Change] = []
    if before.get("protocol_version") != after.get("protocol_version"):
        changes.append(_changed("protocol_version", "protocol_version", before, after))
    for key in ("name", "version"):
        was, now = (_get(entry, "server", key) for entry in (before, after))
        if was != now:
            message = f"server {key} {_show(was)} -> {_show(now)}"
            changes.append(Change("server_info", message, False, path=f"server.{key}",
                                  before=was, after=now))
    changes += tool_changes(_section(before, "tools"), _section(after, "tools"))
    for section, word in (("resources", "resource"), ("resource_templates", "resource_template")):
        changes += listing_changes(word, section, _section(before, section),
                                   _section(after, section))
    changes += prompt_changes(_section(before, "prompts"), _section(after, "prompts"))
    return changes


def tool_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Change]:
    """Tools removed, added, renamed-looking (the same input schema and description under a new
    name), and the changes of each tool listed on both sides."""
    removed = [name for name in sorted(before) if name not in after]
    added = [name for name in sorted(after) if name not in before]
    changes: list[Change] = []
    for old in list(removed):
        new = next((name for name in added if _same_tool(before[old], after[name])), None)
        if new is None:
            continue
        removed.remove(old)
        added.remove(new)
        message = f"renamed-looking: '{old}' is gone and '{new}' has its schema and description"
        changes.append(Change("tool_renamed", message, True, tool=old, before=old, after=new))
    for name in removed:
        changes.append(Change("tool_removed", "tool removed", True, tool=name, before=name))
    for name in added:
        changes.append(Change("tool_added", "tool added", False, tool=name, after=name))
    for name in sorted(set(before) & set(after)):
        changes += tool_entry_changes(name, before[name], after[name])
    return changes


def tool_entry_changes(
    name: str, before: Mapping[str, Any], after: Mapping[str, Any]
) -> list[Change]:
    """The changes of one tool listed in the lockfile and live."""
    changes: list[Change] = []
    if before.get("title") != after.get("title"):
        changes.append(_changed("title", "title", before, after, tool=name))
    if before.get("description_sha256") != after.get("description_sha256"):
        was, now = before.get("description"), after.get("description")
        message = "description changed" + (
            f": {_show(was)} -> {_show(now)}" if was != now else " (its first line did not)"
        )
        changes.append(Change("description", message, False, name, "description", was, now))
    inputs = (before.get("input_schema") or {}, after.get("input_schema") or {})
    changes += _schema("input_schema", name, *inputs, direction="input")
    changes += _output_changes(name, before.get("output_schema"), after.get("output_schema"))
    changes += annotation_changes(name, before.get("annotations"), after.get("annotations"))
    was, now = before.get("task_support"), after.get("task_support")
    if was != now:
        # A tool that only runs as a task is not offered to models any more.
        breaking = now == "required"
        message = f"execution.taskSupport {_show(was)} -> {_show(now)}"
        message += " (no longer offered: it runs only as a task)" if breaking else ""
        changes.append(Change("task_support", message, breaking, name, "task_support", was, now))
    return changes


def _output_changes(name: str, before: Any, after: Any) -> list[Change]:
    if before is None and after is None:
        return []
    if before is None:
        return [Change("output_schema", "output schema added", False, name, "output_schema",
                       None, after)]
    if after is None:
        message = "output schema removed: results are no longer structured as declared"
        return [Change("output_schema", message, True, name, "output_schema", before, None)]
    return _schema("output_schema", name, before, after, direction="output")


def _schema(kind: str, tool: str, before: Any, after: Any, *, direction: Direction) -> list[Change]:
    return [_from_finding(kind, tool, finding) for finding in
            schema_findings(before, after, kind, direction=direction)]


def _from_finding(kind: str, tool: str, finding: Finding) -> Change:
    return Change(kind, finding.message, finding.breaking, tool, finding.path, finding.before,
                  finding.after)


# The hints' values when a tool does not set them (the MCP specification's defaults).
HINT_DEFAULTS = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": True,
}


def annotation_changes(name: str, before: Any, after: Any) -> list[Change]:
    """Annotation changes; toward destructive ones break (a policy or a person trusted them)."""
    was_all = before if isinstance(before, Mapping) else {}
    now_all = after if isinstance(after, Mapping) else {}
    changes: list[Change] = []
    for key in sorted({*was_all, *now_all}):
        was, now = was_all.get(key), now_all.get(key)
        if was == now:
            continue
        breaking = (key == "readOnlyHint" and was is True and now is not True) or (
            key == "destructiveHint" and was is False and now is not False
        )
        message = f"{key} {_show(was)} -> {_show(now)}"
        if breaking:
            message += " (toward destructive)"
        changes.append(Change("annotations", message, breaking, name, f"annotations.{key}",
                              was, now))
    return changes


def listing_changes(
    word: str, section: str, before: Mapping[str, Any], after: Mapping[str, Any]
) -> list[Change]:
    """Resources (by URI) or resource templates (by URI template): removed ones break."""
    changes: list[Change] = []
    for key in sorted({*before, *after}):
        path = f"{section}[{_quoted(key)}]"
        if key not in after:
            changes.append(Change(f"{word}_removed", f"{word} removed", True, None, path, key))
        elif key not in before:
            changes.append(Change(f"{word}_added", f"{word} added", False, None, path, None, key))
        else:
            for field in sorted({*before[key], *after[key]}):
                was, now = before[key].get(field), after[key].get(field)
                if was != now:
                    message = f"{word} {field} {_show(was)} -> {_show(now)}"
                    changes.append(Change(f"{word}_changed", message, False, None,
                                          f"{path}.{field}", was, now))
    return changes


def prompt_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Change]:
    """Prompts: a removed prompt or argument, or a newly required argument, breaks."""
    changes: list[Change] = []
    for name in sorted({*before, *after}):
        path = f"prompts[{_quoted(name)}]"
        if name not in after:
            changes.append(Change("prompt_removed", "prompt removed", True, None, path, name))
            continue
        if name not in before:
            changes.append(Change("prompt_added", "prompt added", False, None, path, None, name))
            continue
        was, now = before[name], after[name]
        if was.get("description_sha256") != now.get("description_sha256"):
            changes.append(Change("prompt_changed", "prompt description changed", False, None,
                                  f"{path}.description"))
        changes += _argument_changes(path, _arguments(was), _arguments(now))
    return changes


def _argument_changes(path: str, was: dict[str, bool], now: dict[str, bool]) -> list[Change]:
    changes: list[Change] = []
    for arg in sorted({*was, *now}):
        where = f"{path}.arguments.{arg}"
        if arg not in now:
            changes.append(Change("prompt_changed", f"argument '{arg}' removed", True, None,
                                  where, arg))
        elif arg not in was:
            required = now[arg]
            message = f"new {'required' if required else 'optional'} argument '{arg}'"
            changes.append(Change("prompt_changed", message, required, None, where, None, arg))
        elif was[arg] != now[arg]:
            message = f"argument '{arg}' is now {'required' if now[arg] else 'optional'}"
            changes.append(Change("prompt_changed", message, now[arg], None, where + ".required",
                                  was[arg], now[arg]))
    return changes


def _arguments(prompt: Mapping[str, Any]) -> dict[str, bool]:
    listed = prompt.get("arguments") or []
    return {str(a.get("name")): bool(a.get("required")) for a in listed if isinstance(a, Mapping)}


def _same_tool(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    return bool(
        before.get("input_schema") == after.get("input_schema")
        and before.get("description_sha256") == after.get("description_sha256")
    )


def _changed(
    kind: str,
    key: str,
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    tool: str | None = None,
) -> Change:
    was, now = before.get(key), after.get(key)
    return Change(kind, f"{key} {_show(was)} -> {_show(now)}", False, tool, key, was, now)


def _section(entry: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = entry.get(key)
    return value if isinstance(value, Mapping) else {}


def _get(entry: Mapping[str, Any], outer: str, key: str) -> Any:
    value = entry.get(outer)
    return value.get(key) if isinstance(value, Mapping) else None


def _quoted(key: str) -> str:
    return '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _show(value: Any) -> str:
    """A value in a message: `unset`, `true`, `'text'`, `["a", "b"]`."""
    import json

    if value is None:
        return "unset"
    if isinstance(value, str):
        return repr(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
