"""The rules of the code's shape that a reviewer would otherwise have to check by eye."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "devall_cli"
# Import name -> distribution name, where they differ.
DISTRIBUTIONS = {
    "ruamel": "ruamel.yaml",
    "yaml": "pyyaml",
    "mcp_types": "mcp-types",
    "jwt": "pyjwt",
    "opentelemetry": "opentelemetry-api",  # and the otel extra's SDK and exporter
}


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


# --- layers --------------------------------------------------------------------------------
# Lowest first. A module may import only from its own layer or a lower one: at module level,
# inside a function and under TYPE_CHECKING alike (docs/architecture.md explains each layer).
# A name is a top-level package or module of devall_cli; "" is the package itself.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "ground floor",
        frozenset(
            {
                "",
                "errors",
                "events",
                "redaction",
                "procs",
                "json_limits",
                "text",
                "block_text",
                "kinds",
                "limits",
                "messages",
                "node_paths",
                "run_files",
                "run_values",
                "json_indent",
                "cassette",
            }
        ),
    ),
    ("parse kit and graph model", frozenset({"config"})),
    ("sinks and renderers", frozenset({"trace", "report", "graphview"})),
    (
        "kinds",
        frozenset({"nodes", "edges", "memory", "thinking", "providers", "skills", "tools"}),
    ),
    ("engine", frozenset({"engine"})),
    ("workflow assembler", frozenset({"workflow"})),
    ("use-cases", frozenset({"batch", "tool_run", "testing"})),
    ("command line", frozenset({"cli", "__main__"})),
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(module: str) -> str:
    """`devall_cli.tools.kinds.mcp_local` -> `tools`; `devall_cli.errors` -> `errors`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_of(module: str) -> int:
    package = package_of(module)
    for index, (_, members) in enumerate(LAYERS):
        if package in members:
            return index
    raise AssertionError(f"{module} is in no layer: add its package to LAYERS and the docs")


def internal_imports(path: Path, known: set[str]) -> Iterator[tuple[int, str]]:
    """(line, module) for every devall_cli module a file imports, wherever the import is."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from devall_cli.tools import probe` imports the module devall_cli.tools.probe
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        for name in names:
            if name in known and name != "devall_cli":
                yield node.lineno, name


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(path): path for path in modules(PACKAGE)}
    known = set(paths)
    return {
        module: {name for _, name in internal_imports(path, known) if name != module}
        for module, path in paths.items()
    }


def test_every_module_sits_in_a_layer() -> None:
    for path in modules(PACKAGE):
        layer_of(module_name(path))


def test_no_module_imports_a_higher_layer() -> None:
    known = {module_name(path) for path in modules(PACKAGE)}
    offending = []
    for path in modules(PACKAGE):
        module = module_name(path)
        for line, name in internal_imports(path, known):
            if layer_of(name) > layer_of(module):
                low, high = LAYERS[layer_of(module)][0], LAYERS[layer_of(name)][0]
                offending.append(f"{path.relative_to(REPO_ROOT)}:{line}: {low} imports {high}")
    assert sorted(set(offending)) == [], "\n".join(sorted(set(offending)))


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(graph[module]):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_import_circle_crosses_packages() -> None:
    crossing = [c for c in circles(import_graph()) if len({package_of(m) for m in c}) > 1]
    assert crossing == []


def test_the_circle_finder_finds_a_circle_across_packages() -> None:
    graph = {"devall_cli.a.x": {"devall_cli.b.y"}, "devall_cli.b.y": {"devall_cli.a.x"}}
    assert circles(graph | {"devall_cli.c": set()}) == [["devall_cli.a.x", "devall_cli.b.y"]]


def test_the_layer_check_sees_imports_inside_functions_and_type_checking(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from devall_cli.engine import graph\n"
        "def f():\n    import devall_cli.cli.app\n",
        encoding="utf-8",
    )
    known = {"devall_cli.engine", "devall_cli.engine.graph", "devall_cli.cli.app"}
    assert {name for _, name in internal_imports(source, known)} == known


def test_loading_a_workflow_with_mcp_servers_imports_no_network_stack() -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from devall_cli.workflow.loader import load_workflow\n"
        "load_workflow(Path('workflows/demo_offline.yaml'))\n"
        "print(sorted(m for m in ('fastmcp', 'mcp', 'httpx') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def python_blocks(markdown: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", markdown, flags=re.S)


def test_the_node_type_of_the_architecture_page_plugs_in_with_no_other_edit(
    tmp_path: Path,
) -> None:
    from devall_cli.nodes import NODE_TYPES
    from devall_cli.workflow.json_schema import workflow_schema
    from devall_cli.workflow.loader import load_workflow

    page = (REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    node_example = python_blocks(page)[0]
    exec(compile(node_example, "docs/architecture.md", "exec"), {})  # registers `repeat`
    try:
        flow = tmp_path / "flow.yaml"
        flow.write_text(
            "graph:\n  start: [echo]\n  nodes:\n"
            "    - {id: echo, type: repeat, config: {times: 3}}\n",
            encoding="utf-8",
        )
        node = load_workflow(flow).graph.nodes[0]
        assert node.config.times == 3
        assert NODE_TYPES.get("repeat").label(node.config) == "x3"  # type: ignore[union-attr]
        types = workflow_schema()["$defs"]["node"]["properties"]["type"]["enum"]
        assert "repeat" in types
    finally:
        NODE_TYPES.unregister("repeat")


def test_the_tooling_type_of_the_architecture_page_parses_and_plans(tmp_path: Path) -> None:
    from devall_cli.tools.kinds.registry import TOOLING_TYPES
    from devall_cli.tools.plan import plan_sources
    from devall_cli.workflow.loader import load_workflow

    page = (REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    exec(compile(python_blocks(page)[1], "docs/architecture.md", "exec"), {})
    try:
        flow = tmp_path / "flow.yaml"
        flow.write_text(
            "graph:\n  start: [a]\n  nodes:\n"
            "    - id: a\n      type: agent\n      config:\n"
            "        provider: scripted\n        script: [done]\n"
            "        tooling: [{type: socket, config: {socket: /run/x.sock}}]\n",
            encoding="utf-8",
        )
        (source,) = plan_sources(load_workflow(flow)).sources
        assert source.tooling.type == "socket"
        assert source.tooling.config.display_target() == "/run/x.sock"
    finally:
        TOOLING_TYPES.unregister("socket")
