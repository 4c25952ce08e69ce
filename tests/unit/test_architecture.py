"""The rules of the code's shape that a reviewer would otherwise have to check by eye."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "devall_cli"
# Import name -> distribution name, where they differ.
DISTRIBUTIONS = {"ruamel": "ruamel.yaml", "mcp_types": "mcp-types", "jwt": "pyjwt"}


def imports(path: Path) -> Iterator[str]:
    """Every module a file imports (absolute imports; relative ones are the package's own)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def modules(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.py"))


def test_every_package_devall_imports_is_declared_in_pyproject() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    # An extra's packages (e.g. ray) count: devall imports them lazily, where they are needed.
    optional = [r for name, listed in extras.items() if name != "dev" for r in listed]
    requirements = [*project["dependencies"], *optional]
    declared = {re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0].lower() for r in requirements}
    used = {
        DISTRIBUTIONS.get(name.split(".")[0], name.split(".")[0]).lower()
        for path in modules(PACKAGE)
        for name in imports(path)
    }
    third_party = used - set(sys.stdlib_module_names) - {"devall_cli", "__future__"}
    assert third_party <= declared, f"imported but not declared: {third_party - declared}"


def test_the_tool_layer_imports_neither_the_engine_nor_the_renderers() -> None:
    offending = [
        f"{path.relative_to(REPO_ROOT)}: {name}"
        for path in modules(PACKAGE / "tools")
        for name in imports(path)
        if name.startswith(("devall_cli.engine", "devall_cli.trace"))
    ]
    assert offending == []


def test_the_config_layer_imports_no_network_stack() -> None:
    offending = [
        f"{path.relative_to(REPO_ROOT)}: {name}"
        for path in modules(PACKAGE / "config")
        for name in imports(path)
        if name.split(".")[0] in {"fastmcp", "mcp", "httpx", "httpx2"}
    ]
    assert offending == []


def test_no_code_outside_the_config_layer_switches_on_config_types() -> None:
    settings = r"(AgentConfig|LiteralConfig|PassthroughConfig|McpRemoteConfig|McpLocalConfig|"
    settings += r"FunctionToolingConfig|KeywordCondition|FunctionCondition)"
    pattern = re.compile(r"isinstance\([^)]*\b" + settings)
    offending = [
        str(path.relative_to(REPO_ROOT))
        for path in modules(PACKAGE)
        if not {"config", "workflow"} & set(path.parts)
        and pattern.search(path.read_text(encoding="utf-8"))
    ]
    assert offending == []
