"""Skill discovery, the allow list, the two skill tools and the active skill's tool list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devall_cli.errors import ConfigError
from devall_cli.skills.config import SkillsConfig
from devall_cli.skills.discovery import discover, skills_root
from devall_cli.skills.tools import SkillTools
from devall_cli.tools.base import ToolSpec


def skill(root: Path, folder_name: str, body: str = "Do the thing.", **front: str) -> Path:
    folder = root / folder_name
    folder.mkdir(parents=True)
    lines = [
        f"name: {front.pop('name', folder_name)}",
        f"description: {front.pop('description', 'A skill.')}",
    ]
    lines += [f"{key}: {value}" for key, value in front.items()]
    (folder / "SKILL.md").write_text("---\n" + "\n".join(lines) + "\n---\n" + body + "\n")
    return folder


def spec(name: str, original: str | None = None) -> ToolSpec:
    return ToolSpec(name, original or name, "", {}, "function", "functions/", "f")


def text(result: object) -> str:
    return result.blocks[0].text  # type: ignore[attr-defined]


def test_the_skills_folder_is_found_beside_the_workflow_or_above(tmp_path: Path) -> None:
    root = tmp_path / ".agents" / "skills"
    root.mkdir(parents=True)
    deep = tmp_path / "flows" / "team"
    deep.mkdir(parents=True)
    assert skills_root(deep, {}) == root.resolve()
    other = tmp_path / "elsewhere"
    other.mkdir()
    assert skills_root(deep, {"DEVALL_SKILLS_DIR": str(other)}) == other.resolve()
    assert skills_root(deep, {"DEVALL_SKILLS_DIR": str(tmp_path / "missing")}) is None


def test_invalid_skills_are_skipped_with_a_reason(tmp_path: Path) -> None:
    skill(tmp_path, "good")
    skill(tmp_path, "renamed", name="other")
    skill(tmp_path, "nodesc", description="''")
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "SKILL.md").write_text("no front matter\n")
    found, warnings = discover(tmp_path)
    assert [s.name for s in found] == ["good"]
    assert sorted(w.split("/")[0] for w in warnings) == ["nodesc", "plain", "renamed"]
    assert any("must match its folder's name" in w for w in warnings)


def test_allow_list_and_tool_compatibility_decide_what_the_model_sees(tmp_path: Path) -> None:
    skill(tmp_path, "alpha")
    skill(tmp_path, "beta", **{"allowed-tools": "execute_code"})
    skill(tmp_path, "gamma")
    only_alpha = SkillTools(SkillsConfig(("alpha", "beta"), str(tmp_path)), [], tmp_path)
    assert list(only_alpha.skills) == ["alpha"]  # beta needs a tool the agent lacks
    assert "Skipping skill 'beta'" in only_alpha.warnings[0]
    with_tool = SkillTools(
        SkillsConfig((), str(tmp_path)), [spec("py_execute_code", "execute_code")], tmp_path
    )
    assert list(with_tool.skills) == ["alpha", "beta", "gamma"]
    prompt = with_tool.prompt()
    assert prompt.startswith("You have access to Agent Skills.")
    assert "<name>beta</name>" in prompt and "<tool>execute_code</tool>" in prompt
    assert [s.name for s in with_tool.specs()] == ["activate_skill", "read_skill_file"]


def test_no_usable_skill_means_no_tools_and_a_warning_prompt(tmp_path: Path) -> None:
    skill(tmp_path, "beta", **{"allowed-tools": "execute_code"})
    tools = SkillTools(SkillsConfig((), str(tmp_path)), [], tmp_path)
    assert tools.specs() == [] and not tools.handles("activate_skill")
    assert tools.prompt().startswith("Agent Skills are enabled for this node, but no compatible")
    assert "- Skipping skill 'beta'" in tools.prompt()


def test_activate_then_read_a_file_of_the_skill(tmp_path: Path) -> None:
    folder = skill(tmp_path, "alpha", body="Read references/howto.md.")
    (folder / "references").mkdir()
    (folder / "references" / "howto.md").write_text("step one")
    (tmp_path / "secret.txt").write_text("outside")
    tools = SkillTools(SkillsConfig((), str(tmp_path)), [], tmp_path)
    early = tools.call(
        "read_skill_file", {"skill_name": "alpha", "relative_path": "references/howto.md"}
    )
    assert early.is_error and "must be activated before reading files" in text(early)

    activated = json.loads(text(tools.call("activate_skill", {"skill_name": "alpha"})))
    assert (
        activated["skill_name"] == "alpha"
        and "Read references/howto.md." in activated["instructions"]
    )
    (followup,) = tools.take_followups()
    assert followup["role"] == "system"
    assert followup["content"].startswith("Activated Agent Skill `alpha`.")
    assert tools.take_followups() == []

    read = json.loads(
        text(
            tools.call(
                "read_skill_file", {"skill_name": "alpha", "relative_path": "references/howto.md"}
            )
        )
    )
    assert (read["relative_path"], read["content"]) == ("references/howto.md", "step one")
    escape = tools.call(
        "read_skill_file", {"skill_name": "alpha", "relative_path": "../secret.txt"}
    )
    assert escape.is_error and "must stay within the skill directory" in text(escape)
    missing = tools.call("activate_skill", {"skill_name": "nope"})
    assert missing.is_error and text(missing) == "Tool activate_skill error: Skill 'nope' not found"


def test_an_active_skill_limits_the_external_tools(tmp_path: Path) -> None:
    skill(tmp_path, "beta", **{"allowed-tools": "execute_code"})
    tools = SkillTools(
        SkillsConfig((), str(tmp_path)),
        [spec("py_execute_code", "execute_code"), spec("web")],
        tmp_path,
    )
    assert tools.refuse(spec("web"), "web") is None  # no skill active yet
    tools.call("activate_skill", {"skill_name": "beta"})
    refused = tools.refuse(spec("web"), "web")
    assert refused is not None and refused.is_error
    assert text(refused) == (
        "Error: Tool 'web' is not allowed by active skill 'beta'. Allowed tools: ['execute_code']"
    )
    assert tools.refuse(spec("py_execute_code", "execute_code"), "py_execute_code") is None


def test_a_tool_named_like_a_skill_tool_is_a_config_error(tmp_path: Path) -> None:
    skill(tmp_path, "alpha")
    with pytest.raises(ConfigError, match="conflicts with a built-in skill tool"):
        SkillTools(SkillsConfig((), str(tmp_path)), [spec("activate_skill")], tmp_path)
