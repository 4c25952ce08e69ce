"""An agent's `skills: {enabled, allow, servers}`, checked against its skills folder if enabled."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devall_cli.config.json_shapes import Schema, array_of, keys_object
from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import Checker, KeySpec, check_keys, describe, get_mapping, opt_bool
from devall_cli.config.yaml_source import KeyPath
from devall_cli.skills.discovery import SKILLS_ENV, SKILLS_FOLDER, discover, shown_path, skills_root
from devall_cli.text import suggest

_SKILLS_KEYS = KeySpec(known=frozenset({"enabled", "allow", "servers"}))
_ALLOW_KEYS = KeySpec(known=frozenset({"name"}))


@dataclass(frozen=True)
class SkillsConfig:
    """Skills turned on for an agent."""

    allow: tuple[str, ...] = ()  # empty: every discovered skill
    root: str | None = None  # the skills folder found for the workflow (absolute)
    servers: bool = True  # also the skills the agent's MCP servers serve (skills extension)


def parse_skills(ck: Checker, raw: Any, path: KeyPath) -> SkillsConfig | None:
    """`skills: {enabled: true, allow: [{name: x}]}`; None when skills are off."""
    if raw is None or raw is UNRESOLVED or raw is False:
        return None
    block = get_mapping(ck, raw, path, "skills")
    if block is None:
        return None
    check_keys(ck, block, path, _SKILLS_KEYS)
    enabled = opt_bool(ck, block, "enabled", path, False)
    allow = _allow(ck, block.get("allow"), (*path, "allow"))
    servers = opt_bool(ck, block, "servers", path, True)
    if not enabled:
        return None
    root = skills_root(ck.workflow_dir, ck.environ)
    _check_discovery(ck, root, allow, path, servers)
    names = tuple(name for name, _ in allow)
    return SkillsConfig(names, str(root) if root else None, servers)


def _allow(ck: Checker, raw: Any, path: KeyPath) -> list[tuple[str, KeyPath]]:
    if raw is None or raw is UNRESOLVED:
        return []
    if not isinstance(raw, list):
        ck.error(path, f"allow must be a list of skill names, got {describe(raw)}")
        return []
    names: list[tuple[str, KeyPath]] = []
    for index, item in enumerate(raw):
        here = (*path, index)
        if isinstance(item, str):
            if item.strip():
                names.append((item.strip(), here))
            continue
        entry = get_mapping(ck, item, here, "an allowed skill ({name: ...} or a name)")
        if entry is None:
            continue
        check_keys(ck, entry, here, _ALLOW_KEYS)
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            ck.error((*here, "name"), "skill name is required")
            continue
        names.append((name.strip(), (*here, "name")))
    return names


def _check_discovery(
    ck: Checker,
    root: Path | None,
    allow: list[tuple[str, KeyPath]],
    path: KeyPath,
    servers: bool = False,
) -> None:
    """Warnings a run would otherwise only show the model: no folder, missing or bad skills.

    With `servers` on, an allowed name may be a server's skill, known only at run time."""
    if root is None:
        if servers:  # the skills may all come from the agent's servers
            return
        looked = ck.environ.get(SKILLS_ENV) or f"{SKILLS_FOLDER} beside the workflow or above it"
        message = f"skills are enabled, but no skills folder was found ({looked})"
        ck.warning((*path, "enabled"), message)
        return
    skills, problems = discover(root)
    names = [skill.name for skill in skills]
    allowed = {name for name, _ in allow}
    for problem in problems:
        folder = problem.split("/", 1)[0]
        if not allowed or folder in allowed:
            ck.warning(path, f"skill skipped: {problem}")
    folder_shown = shown_path(root, ck.workflow_dir)
    for name, where in allow:
        if name in names:
            continue
        message = f"no skill '{name}' in {folder_shown}"
        message += f" (skills: {', '.join(names)})" if names else " (it holds no valid skill)"
        guess = suggest(name, names)
        ck.warning(where, f"{message}; did you mean '{guess}'?" if guess else message)


def skills_shape() -> Schema:
    """The schema of an agent's `skills` block (`devall schema`)."""
    allow = array_of(keys_object(_ALLOW_KEYS, strict=True))
    return keys_object(_SKILLS_KEYS, strict=True, shapes={"allow": allow})
