"""Finding skills: folders holding a SKILL.md whose YAML front matter names and describes them.

devall looks for skills in `DEVALL_SKILLS_DIR` when it is set, else in the first `.agents/skills`
folder found beside the workflow file or in one of its parent folders (ChatDev keeps them in
`.agents/skills` at its repository root). A folder whose SKILL.md is invalid is skipped with a
warning, as ChatDev skips it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devall_cli import limits

SKILLS_ENV = "DEVALL_SKILLS_DIR"
SKILLS_FOLDER = Path(".agents") / "skills"


class SkillError(ValueError):
    """A skill folder or its SKILL.md is not usable."""


@dataclass(frozen=True)
class Skill:
    """One discovered skill."""

    name: str
    description: str
    folder: Path
    allowed_tools: tuple[str, ...] = ()
    frontmatter: Mapping[str, Any] = field(default_factory=dict)

    @property
    def file(self) -> Path:
        """Its SKILL.md."""
        return self.folder / "SKILL.md"


def skills_root(workflow_dir: Path, environ: Mapping[str, str]) -> Path | None:
    """Where the workflow's skills live, or None when there is no such folder."""
    configured = environ.get(SKILLS_ENV, "").strip()
    if configured:
        root = (workflow_dir / configured).resolve()
        return root if root.is_dir() else None
    for folder in (workflow_dir, *workflow_dir.parents):
        candidate = folder / SKILLS_FOLDER
        if candidate.is_dir():
            return candidate.resolve()
    return None


def discover(root: Path | None) -> tuple[list[Skill], list[str]]:
    """The valid skills of `root` in name order, and a warning for each invalid one."""
    skills: list[Skill] = []
    warnings: list[str] = []
    if root is None or not root.is_dir():
        return skills, warnings
    for folder in sorted(root.iterdir()):
        if not folder.is_dir() or not (folder / "SKILL.md").is_file():
            continue
        try:
            skills.append(read_skill(folder))
        except SkillError as exc:
            warnings.append(str(exc))
    return skills, warnings


def read_skill(folder: Path) -> Skill:
    """The skill of one folder; SkillError says what is wrong with it."""
    file = folder / "SKILL.md"
    shown = f"{folder.name}/SKILL.md"
    text = read_text(file, shown)
    front = parse_frontmatter(text, shown)
    name, description = front.get("name"), front.get("description")
    if not isinstance(name, str) or not name.strip():
        raise SkillError(f"{shown}: the front matter must give a non-empty name")
    if not isinstance(description, str) or not description.strip():
        raise SkillError(f"{shown}: the front matter must give a non-empty description")
    if name.strip() != folder.name:
        raise SkillError(f"{shown}: skill name '{name.strip()}' must match its folder's name")
    allowed = _tool_list(front.get("allowed-tools"), shown)
    if front.get("compatibility") is not None and not isinstance(front["compatibility"], dict):
        raise SkillError(f"{shown}: compatibility must be a mapping")
    return Skill(name.strip(), description.strip(), folder.resolve(), allowed, dict(front))


def read_text(file: Path, shown: str) -> str:
    """A skill file's UTF-8 text, at most `limits.SKILL_FILE_BYTES` of it."""
    try:
        size = file.stat().st_size
        if size > limits.SKILL_FILE_BYTES:
            raise SkillError(
                f"{shown} holds {size} bytes, more than the {limits.SKILL_FILE_BYTES} devall reads"
            )
        return file.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillError(f"{shown} is not UTF-8 text") from exc
    except OSError as exc:
        raise SkillError(f"{shown}: {exc.strerror or exc}") from exc


def parse_frontmatter(text: str, shown: str) -> dict[str, Any]:
    """The YAML front matter of a SKILL.md text (SkillError says what is wrong)."""
    if not text.startswith("---"):
        raise SkillError(f"{shown} must start with YAML front matter between '---' lines")
    lines = text.splitlines()
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise SkillError(f"{shown}: the closing '---' of the front matter is missing")
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        data = YAML(typ="safe", pure=True).load("\n".join(lines[1:end]))
    except (YAMLError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SkillError(f"{shown}: invalid YAML front matter: {first}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SkillError(f"{shown}: the front matter must be a mapping")
    return {str(key): value for key, value in data.items()}


def _tool_list(value: Any, shown: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(value.split())
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise SkillError(f"{shown}: allowed-tools must be a list of tool names")
    return tuple(v.strip() for v in value)


def shown_path(path: Path, base: Path) -> str:
    """`path` relative to `base` (the workflow's folder) when that is shorter, else as it is."""
    try:
        relative = os.path.relpath(path, base)
    except ValueError:  # another drive
        return str(path)
    return relative if len(relative) < len(str(path)) else str(path)
