"""Skills during an agent's visit: the `<available_skills>` block of the system prompt, the
`activate_skill` and `read_skill_file` tools (answered here, not by a tool server), and the
active skill's `allowed-tools` restriction (ChatDev's AgentSkillManager).

Besides the skills folder's, the skills the agent's MCP servers serve (the skills extension,
tools/mcp_skills.py) when `skills.servers` is on: listed at the start of the visit, their files
read from the server only when the model activates the skill or reads a file, and verified
first. A file that fails verification is an error result naming it and why; its content is not
used. A served skill whose name is taken (by a folder skill or another server's) is offered as
`<server>/<name>`: a server cannot stand in for a skill of the folder."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from devall_cli.errors import ConfigError
from devall_cli.messages import SYSTEM
from devall_cli.skills.config import SkillsConfig
from devall_cli.skills.discovery import Skill, SkillError, discover, read_text, shown_path
from devall_cli.tools.base import TextBlock, ToolResult, ToolSpec
from devall_cli.tools.mcp_skills import ServedSkill

SOURCE = "skill"  # ToolSpec.source of the two skill tools
ACTIVATE = "activate_skill"
READ_FILE = "read_skill_file"
_NAME_PARAM = {"type": "string", "description": "Exact skill name from <available_skills>."}
_SPECS = (
    (
        ACTIVATE,
        "Load the full SKILL.md instructions for a discovered agent skill.",
        {"type": "object", "properties": {"skill_name": _NAME_PARAM}, "required": ["skill_name"]},
    ),
    (
        READ_FILE,
        "Read a text file inside an activated skill directory, such as references or scripts.",
        {
            "type": "object",
            "properties": {
                "skill_name": {
                    "type": "string",
                    "description": "Exact activated skill name from <available_skills>.",
                },
                "relative_path": {
                    "type": "string",
                    "description": "Path relative to the skill directory, for example "
                    "references/example.md.",
                },
            },
            "required": ["skill_name", "relative_path"],
        },
    ),
)
_INTRO = (
    "You have access to Agent Skills.",
    "Use `activate_skill` to load the full SKILL.md instructions for a relevant skill before "
    "following it.",
    "Use `read_skill_file` to read supporting files from that skill directory when the "
    "instructions reference them.",
    "Do not assume a skill's contents until you load it.",
)
_NONE_AVAILABLE = (
    "Agent Skills are enabled for this node, but no compatible skills are currently available.",
    "Do not claim to use or load any skill unless it appears in <available_skills>.",
)


class SkillTools:
    """The skills one agent visit may use; owns the state of which skill is active."""

    def __init__(
        self, config: SkillsConfig, external: Sequence[ToolSpec], workflow_dir: Path | None
    ) -> None:
        self.base = workflow_dir or Path.cwd()
        found, self.warnings = discover(Path(config.root) if config.root else None)
        names = {name for spec in external for name in (spec.name, spec.original_name)}
        self.skills: dict[str, Skill] = {}
        for skill in found:
            if config.allow and skill.name not in config.allow:
                continue
            if self._compatible(skill, names):
                self.skills[skill.name] = skill
        for spec in external:
            if self.skills and spec.name in (ACTIVATE, READ_FILE):
                raise ConfigError(f"Tool name '{spec.name}' conflicts with a built-in skill tool")
        self.activated: set[str] = set()
        self.active: Skill | ServedSkill | None = None
        self._followups: list[dict[str, Any]] = []
        self.allow = config.allow
        self.served: dict[str, tuple[ServedSkill, Any]] = {}  # offered name -> (skill, source)
        self._tool_names = names
        self._spec_names = {spec.name for spec in external}

    async def add_served(self, sources: Sequence[tuple[str, Any]]) -> None:
        """The skills the servers `sources` ((id, source)) serve: listed, no file read."""
        from devall_cli.errors import DevallError
        from devall_cli.tools.mcp_skills import list_skills

        for server, source in sources:
            if not hasattr(source, "on_session"):  # a function source, or one on a tape
                continue
            try:
                listed = await list_skills(source, server)
            except DevallError as exc:  # a server that fails to list costs its skills only
                self.warnings.append(f"Skipping the skills of server '{server}': {exc.message}")
                continue
            for served in listed or ():
                name = served.name
                if name in self.skills or name in self.served:
                    name = f"{server}/{served.name}"
                if self.allow and not {served.name, name} & set(self.allow):
                    continue
                if self._compatible(served, self._tool_names):
                    self.served[name] = (served, source)
        if self.served:
            self._check_names()

    def _check_names(self) -> None:
        for spec_name in self._spec_names:
            if spec_name in (ACTIVATE, READ_FILE):
                raise ConfigError(f"Tool name '{spec_name}' conflicts with a built-in skill tool")

    def _compatible(self, skill: Skill | ServedSkill, tool_names: set[str]) -> bool:
        if not skill.allowed_tools:
            return True
        if not tool_names:
            self.warnings.append(
                f"Skipping skill '{skill.name}': skill declares allowed-tools "
                f"{list(skill.allowed_tools)} but this agent has no bound external tools."
            )
            return False
        if not tool_names.intersection(skill.allowed_tools):
            self.warnings.append(
                f"Skipping skill '{skill.name}': none of its allowed-tools "
                f"{list(skill.allowed_tools)} are configured on this agent."
            )
            return False
        return True

    # --- what the model sees -----------------------------------------------------------------

    def prompt(self) -> str:
        """The part of the system prompt about skills."""
        if not self.skills and not self.served:
            warnings = "\n".join(f"- {warning}" for warning in self.warnings[:5])
            return "\n".join([*_NONE_AVAILABLE, warnings]).strip()
        lines = ["<available_skills>"]
        for skill in self.skills.values():
            lines += [
                "  <skill>",
                f"    <name>{escape(skill.name)}</name>",
                f"    <description>{escape(skill.description)}</description>",
                f"    <location>{escape(self._shown(skill.file))}</location>",
            ]
            if skill.allowed_tools:
                lines.append("    <allowed_tools>")
                lines += [f"      <tool>{escape(tool)}</tool>" for tool in skill.allowed_tools]
                lines.append("    </allowed_tools>")
            lines.append("  </skill>")
        for name, (served, _) in self.served.items():
            lines += [
                "  <skill>",
                f"    <name>{escape(name)}</name>",
                f"    <description>{escape(served.description)}</description>",
                f"    <location>{escape(served.uri)}</location>",
            ]
            if served.allowed_tools:
                lines.append("    <allowed_tools>")
                lines += [f"      <tool>{escape(tool)}</tool>" for tool in served.allowed_tools]
                lines.append("    </allowed_tools>")
            lines.append("  </skill>")
        lines.append("</available_skills>")
        return "\n".join([*_INTRO, "\n".join(lines)])

    def specs(self) -> list[ToolSpec]:
        """The two skill tools, when there is a skill to use."""
        if not self.skills and not self.served:
            return []
        return [
            ToolSpec(name, name, description, schema, SOURCE, "", SOURCE)
            for name, description, schema in _SPECS
        ]

    def handles(self, name: str) -> bool:
        """Whether a call by this name is answered here."""
        return bool(self.skills or self.served) and name in (ACTIVATE, READ_FILE)

    async def answer(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """`call`, for a served skill too: its file is read from its server, verified."""
        skill_name = str(arguments.get("skill_name") or "").strip()
        if skill_name not in self.served or skill_name in self.skills:
            return self.call(name, arguments)
        from devall_cli.errors import ProtocolError
        from devall_cli.tools.mcp_extras import RequestRefusedError
        from devall_cli.tools.mcp_skills import SkillVerificationError

        try:
            if name == ACTIVATE:
                answer = await self._activate_served(skill_name)
            else:
                path = _argument(arguments, "relative_path")
                answer = await self._read_served(skill_name, path)
        except SkillError as exc:
            return _result(f"Tool {name} error: {exc}", name, error=True)
        except (SkillVerificationError, RequestRefusedError, ProtocolError) as exc:
            return _result(f"Tool {name} error: {exc.message}", name, error=True)
        return _result(json.dumps(answer, ensure_ascii=False, indent=2), name)

    # --- calls ---------------------------------------------------------------------------------

    def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Answer a skill tool call; a failure is an error result the model sees."""
        try:
            if name == ACTIVATE:
                answer = self._activate(_argument(arguments, "skill_name"))
            else:
                answer = self._read(
                    _argument(arguments, "skill_name"), _argument(arguments, "relative_path")
                )
        except SkillError as exc:
            return _result(f"Tool {name} error: {exc}", name, error=True)
        return _result(json.dumps(answer, ensure_ascii=False, indent=2), name)

    def refuse(self, spec: ToolSpec | None, name: str) -> ToolResult | None:
        """An error result for a tool the active skill does not allow, else None."""
        skill = self.active
        if skill is None or not skill.allowed_tools:
            return None
        names = {name} if spec is None else {spec.name, spec.original_name}
        if names.intersection(skill.allowed_tools):
            return None
        message = (
            f"Error: Tool '{name}' is not allowed by active skill '{skill.name}'. "
            f"Allowed tools: {list(skill.allowed_tools)}"
        )
        return _result(message, name, error=True)

    def take_followups(self) -> list[dict[str, Any]]:
        """System messages to add after this turn's tool results (a skill's instructions)."""
        followups, self._followups = self._followups, []
        return followups

    def _activate(self, skill_name: str) -> dict[str, Any]:
        skill = self._skill(skill_name)
        instructions = read_text(skill.file, f"{skill.name}/SKILL.md")
        self.activated.add(skill.name)
        self.active = skill
        self._follow(skill_name, skill.allowed_tools, instructions)
        return {
            "skill_name": skill.name,
            "path": self._shown(skill.file),
            "instructions": instructions,
            "allowed_tools": list(skill.allowed_tools),
        }

    async def _activate_served(self, name: str) -> dict[str, Any]:
        from devall_cli.tools.mcp_skills import read_skill_file

        served, source = self.served[name]
        instructions = await read_skill_file(source, served)  # verified, or it raises
        self.activated.add(name)
        self.active = served
        self._follow(name, served.allowed_tools, instructions)
        return {
            "skill_name": name,
            "path": served.uri,
            "instructions": instructions,
            "allowed_tools": list(served.allowed_tools),
        }

    async def _read_served(self, name: str, relative_path: str) -> dict[str, Any]:
        from devall_cli.tools.mcp_skills import read_skill_file

        served, source = self.served[name]
        if name not in self.activated:
            raise SkillError(f"Skill '{name}' must be activated before reading files")
        parts = relative_path.replace("\\", "/").split("/")
        if relative_path.startswith("/") or ".." in parts:
            raise SkillError("relative_path must stay within the skill directory")
        relative = "/".join(part for part in parts if part not in ("", "."))
        file = served.file(relative)
        if file is None:
            raise SkillError(f"Skill file '{relative_path}' not found")
        return {
            "skill_name": name,
            "path": file.uri,
            "relative_path": relative,
            "content": await read_skill_file(source, served, relative),
        }

    def _follow(self, name: str, allowed: Sequence[str], instructions: str) -> None:
        """The system message with the activated skill's instructions, after the turn."""
        if instructions.strip():
            constraint = ""
            if allowed:
                constraint = (
                    "\n\nOnly use these external tools while this skill is active: "
                    f"{list(allowed)}"
                )
            self._followups.append(
                {
                    "role": SYSTEM,
                    "content": f"Activated Agent Skill `{name}`. Follow its instructions "
                    "for the current task until they are completed or no longer relevant.\n\n"
                    f"{instructions}{constraint}",
                }
            )

    def _read(self, skill_name: str, relative_path: str) -> dict[str, Any]:
        skill = self._skill(skill_name)
        if skill.name not in self.activated:
            raise SkillError(f"Skill '{skill.name}' must be activated before reading files")
        candidate = (skill.folder / relative_path).resolve()
        if not candidate.is_relative_to(skill.folder):
            raise SkillError("relative_path must stay within the skill directory")
        if not candidate.is_file():
            raise SkillError(f"Skill file '{relative_path}' not found")
        relative = candidate.relative_to(skill.folder).as_posix()
        return {
            "skill_name": skill.name,
            "path": self._shown(candidate),
            "relative_path": relative,
            "content": read_text(candidate, f"{skill.name}/{relative}"),
        }

    def _skill(self, name: str) -> Skill:
        skill = self.skills.get(name)
        if skill is None:
            raise SkillError(f"Skill '{name}' not found")
        return skill

    def _shown(self, path: Path) -> str:
        return shown_path(path, self.base)


def _argument(arguments: Mapping[str, Any], key: str) -> str:
    value = str(arguments.get(key) or "").strip()
    if not value:
        raise SkillError(f"{key} is required")
    return value


def _result(text: str, tool: str, *, error: bool = False) -> ToolResult:
    block = TextBlock(text=text, tool_name=tool, source=SOURCE)
    return ToolResult(blocks=(block,), is_error=error, error_class="tool_error" if error else None)
