"""Loading subgraph nodes: inline graphs, workflow files (where found, vars, loops, limits)."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

import pytest

from devall_cli import limits
from devall_cli.config import expansion
from devall_cli.config.model import GraphConfig, Workflow, walk_nodes
from devall_cli.config.yaml_source import load_source
from devall_cli.errors import ConfigIssue
from devall_cli.nodes.literal import LiteralConfig
from devall_cli.nodes.subgraph import SubgraphConfig
from devall_cli.tools.kinds.mcp_local import McpLocalConfig
from devall_cli.workflow.loader import load_workflow, validate_workflow


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def load(path: Path, environ: Mapping[str, str] | None = None, **kwargs: object) -> Workflow:
    return load_workflow(path, environ=environ or {}, **kwargs)  # type: ignore[arg-type]


def errors_of(path: Path, environ: Mapping[str, str] | None = None) -> list[ConfigIssue]:
    workflow, issues = validate_workflow(path, environ=environ or {})
    errors = [issue for issue in issues if issue.severity == "error"]
    assert workflow is None and errors
    return errors


def file_node(path: str, node_id: str = "sub") -> str:
    return f"""
        - id: {node_id}
          type: subgraph
          config:
            type: file
            config: {{path: {path}}}
    """


def top(nodes: str, start: str = "sub", extra: str = "") -> str:
    body = textwrap.indent(textwrap.dedent(nodes).strip(), "    ")
    return f"{extra}graph:\n  start: {start}\n  nodes:\n{body}\n"


def child(workflow: Workflow, node_id: str = "sub") -> SubgraphConfig:
    config = workflow.graph.node(node_id).config
    assert isinstance(config, SubgraphConfig)
    return config


def literal_text(graph: GraphConfig, node_id: str) -> str:
    config = graph.node(node_id).config
    assert isinstance(config, LiteralConfig)
    return config.content


LITERAL_GRAPH = """\
graph:
  start: x
  nodes:
    - id: x
      type: literal
      config: {content: "%s"}
"""


# --- inline --------------------------------------------------------------------------------


def test_an_inline_graph_is_built_with_the_parent_vars(tmp_path: Path) -> None:
    flow = write(
        tmp_path / "flow.yaml",
        """\
        vars: {WORD: hello}
        graph:
          start: sub
          nodes:
            - id: sub
              type: subgraph
              config:
                type: config
                config:
                  id: inner
                  start: [a]
                  end: b
                  nodes:
                    - {id: a, type: literal, config: {content: "${WORD}"}}
                    - {id: b, type: passthrough}
                  edges: [{from: a, to: b}]
        """,
    )
    sub = child(load(flow))
    assert sub.source == "config" and sub.file is None
    assert sub.graph.id == "inner" and sub.graph.start == ("a",) and sub.graph.end == ("b",)
    assert literal_text(sub.graph, "a") == "hello"
    assert [path for path, _ in walk_nodes(load(flow).graph)] == ["sub", "sub/a", "sub/b"]


def test_an_inline_graph_without_start_starts_at_the_nodes_no_edge_leads_to(
    tmp_path: Path,
) -> None:
    """ChatDev's docs make start optional here (its code refuses it; its demo_sub_graph fails)."""
    flow = write(
        tmp_path / "flow.yaml",
        """\
        graph:
          start: sub
          nodes:
            - id: sub
              type: subgraph
              config:
                type: config
                config:
                  nodes:
                    - {id: b, type: passthrough}
                    - {id: a, type: passthrough}
                    - {id: c, type: passthrough}
                  edges: [{from: a, to: c}]
        """,
    )
    assert child(load(flow)).graph.start == ("b", "a")


def test_an_inline_graph_all_in_a_cycle_needs_a_start(tmp_path: Path) -> None:
    flow = write(
        tmp_path / "flow.yaml",
        """\
        graph:
          start: sub
          nodes:
            - id: sub
              type: subgraph
              config:
                type: config
                config:
                  nodes: [{id: a, type: passthrough}, {id: b, type: passthrough}]
                  edges: [{from: a, to: b}, {from: b, to: a}]
        """,
    )
    (error,) = errors_of(flow)
    assert error.path == "graph.nodes[0].config.config.start"
    assert "every node of this graph has an incoming edge" in error.message
    assert (error.file, error.line) == (str(flow), 8)  # at `config:`, where start is missing


def test_problems_of_an_inline_graph_are_located_in_the_file(tmp_path: Path) -> None:
    flow = write(
        tmp_path / "flow.yaml",
        """\
        graph:
          start: sub
          nodes:
            - id: sub
              type: subgraph
              config:
                type: config
                config:
                  start: nope
                  nodes:
                    - {id: a, type: agent, config: {provider: openai}}
        """,
    )
    found = {(e.line, e.path) for e in errors_of(flow)}
    assert found == {
        (9, "graph.nodes[0].config.config.start"),
        (11, "graph.nodes[0].config.config.nodes[0].config.name"),
    }


# --- files ---------------------------------------------------------------------------------


def test_a_file_beside_the_including_file_and_one_beside_the_workflow(tmp_path: Path) -> None:
    """ChatDev's layout: a file in subgraphs/ names `subgraphs/x.yaml`, found from the root."""
    flow = write(tmp_path / "flow.yaml", top(file_node("subgraphs/level1.yaml")))
    write(tmp_path / "subgraphs" / "level1.yaml", top(file_node("level2.yaml")))
    write(tmp_path / "subgraphs" / "level2.yaml", top(file_node("subgraphs/level3.yaml")))
    write(tmp_path / "subgraphs" / "level3.yaml", LITERAL_GRAPH % "deep")
    workflow = load(flow)
    one = child(workflow)
    two = child(Workflow(one.graph, flow))
    three = child(Workflow(two.graph, flow))
    assert one.file == str(tmp_path / "subgraphs" / "level1.yaml")
    assert two.file == str(tmp_path / "subgraphs" / "level2.yaml")
    assert three.file == str(tmp_path / "subgraphs" / "level3.yaml")
    assert literal_text(three.graph, "x") == "deep"
    paths = [path for path, _ in walk_nodes(workflow.graph)]
    assert paths == ["sub", "sub/sub", "sub/sub/sub", "sub/sub/sub/x"]


def test_the_including_files_folder_is_tried_first(tmp_path: Path) -> None:
    flow = write(tmp_path / "flow.yaml", top(file_node("sub/a.yaml")))
    write(tmp_path / "sub" / "a.yaml", top(file_node("b.yaml")))
    write(tmp_path / "sub" / "b.yaml", LITERAL_GRAPH % "beside a.yaml")
    write(tmp_path / "b.yaml", LITERAL_GRAPH % "beside the workflow")
    inner = child(Workflow(child(load(flow)).graph, flow))
    assert literal_text(inner.graph, "x") == "beside a.yaml"


def test_an_absolute_path_is_used_as_given(tmp_path: Path) -> None:
    target = write(tmp_path / "elsewhere" / "g.yaml", LITERAL_GRAPH % "absolute")
    flow = write(tmp_path / "flow" / "flow.yaml", top(file_node(str(target))))
    assert literal_text(child(load(flow)).graph, "x") == "absolute"


def test_shown_paths_follow_the_path_the_user_gave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "wf" / "flow.yaml", top(file_node("parts/a.yaml")))
    write(tmp_path / "wf" / "parts" / "a.yaml", top(file_node("../b.yaml")))
    write(tmp_path / "wf" / "b.yaml", LITERAL_GRAPH % "b")
    monkeypatch.chdir(tmp_path)
    workflow = load(Path("wf/flow.yaml"))
    assert child(workflow).file == "wf/parts/a.yaml"
    assert child(Workflow(child(workflow).graph, workflow.path)).file == "wf/b.yaml"


def test_a_missing_file_names_every_place_tried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "wf" / "flow.yaml", top(file_node("parts/a.yaml")))
    write(tmp_path / "wf" / "parts" / "a.yaml", top(file_node("gone.yaml")))
    (tmp_path / "wf" / "parts" / "dir.yaml").mkdir()
    monkeypatch.chdir(tmp_path)
    (error,) = errors_of(Path("wf/flow.yaml"))
    assert error.file == "wf/parts/a.yaml"
    assert error.path == "graph.nodes[0].config.config.path"
    assert (error.line, error.col) == (8, 24)
    assert error.message == (
        "subgraph file 'gone.yaml' not found (tried: wf/parts/gone.yaml, wf/gone.yaml)"
    )


def test_a_folder_is_not_a_subgraph_file(tmp_path: Path) -> None:
    flow = write(tmp_path / "flow.yaml", top(file_node("parts")))
    (tmp_path / "parts").mkdir()
    (error,) = errors_of(flow)
    assert "subgraph file 'parts' not found" in error.message


def test_a_bare_graph_file_with_vars_beside_it(tmp_path: Path) -> None:
    flow = write(tmp_path / "flow.yaml", top(file_node("bare.yaml")))
    write(
        tmp_path / "bare.yaml",
        """\
        version: 1
        vars: {WORD: bare}
        start: x
        nodes:
          - {id: x, type: literal, config: {content: "${WORD}"}}
        """,
    )
    workflow, issues = validate_workflow(flow, environ={})
    assert workflow is not None and issues == []
    assert literal_text(child(workflow).graph, "x") == "bare"


def test_vars_are_laid_over_the_inherited_ones_and_flags_win(tmp_path: Path) -> None:
    flow = write(
        tmp_path / "flow.yaml",
        top(file_node("a.yaml"), extra="vars: {A: top-a, B: top-b, C: top-c}\n"),
    )
    write(
        tmp_path / "a.yaml",
        top(file_node("b.yaml"), extra="vars: {B: a-b, C: '${C}-then-a'}\n"),
    )
    write(tmp_path / "b.yaml", LITERAL_GRAPH % "${A} ${B} ${C} ${D} ${E}")
    environ = {"D": "from-env", "A": "env-loses"}
    workflow = load(flow, environ, cli_vars={"E": "from-flag"})
    inner = child(Workflow(child(workflow).graph, flow)).graph
    assert literal_text(inner, "x") == "top-a a-b top-c-then-a from-env from-flag"
    flagged = load(flow, environ, cli_vars={"B": "flag-b", "E": "e"})
    inner = child(Workflow(child(flagged).graph, flow)).graph
    assert literal_text(inner, "x") == "top-a flag-b top-c-then-a from-env e"


def test_problems_of_a_subgraph_file_are_located_in_it(tmp_path: Path) -> None:
    flow = write(tmp_path / "flow.yaml", top(file_node("sub.yaml") + file_node("sub.yaml", "two")))
    sub = write(
        tmp_path / "sub.yaml",
        """\
        graph:
          start: x
          nodes:
            - id: x
              type: literal
              config: {content: "${NOWHERE}", colour: red}
        """,
    )
    workflow, issues = validate_workflow(flow, environ={})
    assert workflow is None
    # Included twice, reported once; both errors point into sub.yaml.
    assert [(i.file, i.line, i.col, i.severity) for i in issues] == [
        (str(sub), 6, 25, "error"),
        (str(sub), 6, 39, "error"),
    ]
    error = issues[0]
    assert issues[1].message == "unknown key 'colour' (known keys: content, role)"
    assert error.path == "graph.nodes[0].config.content"
    assert "unresolved placeholder ${NOWHERE}" in error.message
    assert error.source_line == '      config: {content: "${NOWHERE}", colour: red}'


def test_a_subgraph_file_that_is_not_yaml_is_reported_in_it(tmp_path: Path) -> None:
    flow = write(tmp_path / "flow.yaml", top(file_node("broken.yaml")))
    write(tmp_path / "broken.yaml", "graph: [unclosed\n")
    (error,) = errors_of(flow)
    assert error.file == str(tmp_path / "broken.yaml")
    assert error.message.startswith("invalid YAML")


def test_a_file_including_itself_is_an_error(tmp_path: Path) -> None:
    flow = write(tmp_path / "flow.yaml", top(file_node("flow.yaml")))
    (error,) = errors_of(flow)
    assert error.file == str(flow)
    assert error.path == "graph.nodes[0].config.config.path"
    assert error.message == (f"subgraph files include each other in a loop: {flow} → {flow}")


def test_files_including_each_other_name_the_chain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "flow.yaml", top(file_node("parts/a.yaml")))
    write(tmp_path / "parts" / "a.yaml", top(file_node("b.yaml")))
    write(tmp_path / "parts" / "b.yaml", top(file_node("a.yaml")))
    monkeypatch.chdir(tmp_path)
    (error,) = errors_of(Path("flow.yaml"))
    assert error.file == "parts/b.yaml"
    assert error.message == (
        "subgraph files include each other in a loop: parts/a.yaml → parts/b.yaml → parts/a.yaml"
    )


def test_the_same_file_may_be_included_many_times_without_a_loop(tmp_path: Path) -> None:
    """MACNet's shape: six nodes run one file, which itself runs another."""
    nodes = "".join(file_node("node.yaml", f"n{i}") for i in range(6))
    flow = write(tmp_path / "flow.yaml", top(nodes, start="n0"))
    write(tmp_path / "node.yaml", top(file_node("leaf.yaml")))
    write(tmp_path / "leaf.yaml", LITERAL_GRAPH % "leaf")
    paths = [path for path, _ in walk_nodes(load(flow).graph)]
    assert len(paths) == 18 and "n5/sub/x" in paths


def test_subgraphs_nest_at_most_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "SUBGRAPH_DEPTH", 3)
    flow = write(tmp_path / "flow.yaml", top(file_node("l1.yaml")))
    for level in range(1, 4):
        write(tmp_path / f"l{level}.yaml", top(file_node(f"l{level + 1}.yaml")))
    write(tmp_path / "l4.yaml", LITERAL_GRAPH % "too deep")
    (error,) = errors_of(flow)
    assert error.file == str(tmp_path / "l3.yaml")
    assert error.message == "subgraphs are nested more than 3 levels deep"
    write(tmp_path / "l3.yaml", LITERAL_GRAPH % "deep enough")
    assert load(flow)


def test_inline_subgraphs_count_toward_the_depth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "SUBGRAPH_DEPTH", 1)
    flow = write(
        tmp_path / "flow.yaml",
        """\
        graph:
          start: s
          nodes:
            - id: s
              type: subgraph
              config:
                type: config
                config:
                  nodes:
                    - id: t
                      type: subgraph
                      config:
                        type: config
                        config: {nodes: [{id: u, type: passthrough}]}
        """,
    )
    (error,) = errors_of(flow)
    assert error.path == "graph.nodes[0].config.config.nodes[0].config.config"
    assert "nested more than 1 levels deep" in error.message


def test_inclusions_are_counted_up_to_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "SUBGRAPH_FILES", 4)
    nodes = "".join(file_node("leaf.yaml", f"n{i}") for i in range(6))
    flow = write(tmp_path / "flow.yaml", top(nodes, start="n0"))
    write(tmp_path / "leaf.yaml", LITERAL_GRAPH % "leaf")
    (error,) = errors_of(flow)
    assert error.path == "graph.nodes[4].config.config.path"
    assert error.message == (
        "the workflow includes subgraph files more than 4 times (each inclusion counted)"
    )


def test_values_of_included_files_are_counted_up_to_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    leaf = write(tmp_path / "leaf.yaml", LITERAL_GRAPH % "leaf")
    per_inclusion = len(load_source(leaf, "leaf.yaml").value_positions)
    monkeypatch.setattr(limits, "SUBGRAPH_VALUES", 3 * per_inclusion)
    nodes = "".join(file_node("leaf.yaml", f"n{i}") for i in range(6))
    flow = write(tmp_path / "flow.yaml", top(nodes, start="n0"))
    (error,) = errors_of(flow)
    assert error.path == "graph.nodes[3].config.config.path"
    assert error.message == (
        f"the subgraph files of the workflow hold more than {3 * per_inclusion} values "
        "(each inclusion counted)"
    )


def test_placeholders_of_all_files_share_one_expansion_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(expansion, "MAX_EXPANDED_CHARS", 100)
    write(tmp_path / "leaf.yaml", "vars: {X: '%s'}\n" % ("x" * 40) + LITERAL_GRAPH % "${X}")
    nodes = "".join(file_node("leaf.yaml", f"n{i}") for i in range(3))
    flow = write(tmp_path / "flow.yaml", top(nodes, start="n0"))
    (error,) = errors_of(flow)
    assert error.file == str(tmp_path / "leaf.yaml")
    assert "placeholders expand the workflow beyond 100 characters" in error.message
    write(tmp_path / "flow.yaml", top(file_node("leaf.yaml"), start="sub"))
    assert load(flow)


def test_a_broken_file_included_many_times_is_read_and_reported_once(tmp_path: Path) -> None:
    nodes = "".join(file_node("broken.yaml", f"n{i}") for i in range(3))
    flow = write(tmp_path / "flow.yaml", top(nodes, start="n0"))
    write(tmp_path / "broken.yaml", "graph: {start: x\n")
    workflow, issues = validate_workflow(flow, environ={})
    assert workflow is None and len(issues) == 1


# --- secrets, tooling ------------------------------------------------------------------------


def test_secrets_of_a_subgraph_file_reach_the_workflows_redactor(tmp_path: Path) -> None:
    flow = write(tmp_path / "flow.yaml", top(file_node("sub.yaml")))
    write(
        tmp_path / "sub.yaml",
        """\
        vars: {SERVICE_TOKEN: tok-child-4f9a2c7e}
        graph:
          start: x
          nodes:
            - id: x
              type: agent
              config:
                provider: openai
                name: m
                api_key: sk-child-key-81d3
                base_url: "https://user:pw-child-77aa@example.invalid/v1"
                role: "use ${SERVICE_TOKEN}"
        """,
    )
    masked = load(flow).redactor.text("sk-child-key-81d3 tok-child-4f9a2c7e pw-child-77aa")
    assert masked == "*** *** ***"


def test_a_secret_in_a_subgraph_file_is_masked_in_its_issues(tmp_path: Path) -> None:
    flow = write(tmp_path / "flow.yaml", top(file_node("sub.yaml")))
    write(
        tmp_path / "sub.yaml",
        """\
        vars: {API_TOKEN: tok-hidden-1234567}
        graph:
          start: x
          nodes:
            - {id: x, type: literal, config: {content: "${API_TOKEN}", role: "${API_TOKEN}"}}
        """,
    )
    (error,) = errors_of(flow)
    assert "tok-hidden" not in error.message and "***" in error.message


def test_relative_cwd_is_taken_from_the_subgraph_files_folder(tmp_path: Path) -> None:
    flow = write(tmp_path / "flow.yaml", top(file_node("parts/sub.yaml")))
    (tmp_path / "parts" / "server").mkdir(parents=True)
    write(
        tmp_path / "parts" / "sub.yaml",
        """\
        graph:
          start: x
          nodes:
            - id: x
              type: agent
              config:
                provider: scripted
                script: [done]
                tooling:
                  - type: mcp_local
                    config: {command: python, cwd: server}
        """,
    )
    (tooling,) = child(load(flow)).graph.node("x").config.tooling
    assert isinstance(tooling.config, McpLocalConfig)
    assert tooling.config.cwd == str(tmp_path / "parts" / "server")


# --- the node's own keys -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "path", "message"),
    [
        ("{type: files, config: {}}", "config.type", "subgraph type must be 'file'"),
        ("{config: {path: x.yaml}}", "config.type", "type is required"),
        ("{type: file}", "config.config", "config is required: {path: FILE}"),
        ("{type: config, config: []}", "config.config", "config must be a mapping"),
        ("{type: file, config: {}}", "config.config.path", "path is required"),
        ("{type: file, config: {path: 3}}", "config.config.path", "path must be text"),
        (
            "{type: config, config: {nodes: [{id: a, type: literal}]}, vars: {A: 1}}",
            "config.vars",
            "vars belong at the top level",
        ),
    ],
)
def test_bad_subgraph_configs_are_located(
    tmp_path: Path, config: str, path: str, message: str
) -> None:
    flow = write(
        tmp_path / "flow.yaml",
        f"graph:\n  start: s\n  nodes:\n    - {{id: s, type: subgraph, config: {config}}}\n",
    )
    errors = errors_of(flow)
    assert any(e.path == f"graph.nodes[0].{path}" and message in e.message for e in errors), [
        (e.path, e.message) for e in errors
    ]


@pytest.mark.parametrize(
    ("name", "content", "secret", "problem"),
    [
        ("credentials", "[default]\nkey = wJalrXUtnFEMIK7MDENG\n", "wJalrXUtnFEMIK7MDENG", "file"),
        ("keys.env", "OPENAI_API_KEY=sk-leak-0123456789\nA: b\n", "sk-leak-0123456789", "file"),
        ("shadow.yaml", "root:$6$saltsalt$hashhash:19000:0:99999:7:::\n", "saltsalt", "top level"),
        ("config.yaml", "password: hunter2-very-secret\n", "hunter2-very-secret", "top level"),
        ("list.yaml", "- secret-item-one\n", "secret-item-one", "top level"),
    ],
)
def test_a_file_that_is_not_a_workflow_is_refused_without_quoting_it(
    tmp_path: Path, name: str, content: str, secret: str, problem: str
) -> None:
    """Naming any readable file as a subgraph must not print its lines back as warnings."""
    (tmp_path / name).write_text(content)
    path = write(tmp_path / "flow.yaml", top(file_node(name)))
    workflow, issues = validate_workflow(path, environ={})
    assert workflow is None
    (error,) = [issue for issue in issues if issue.severity == "error"]
    assert error.file == str(path) and "is not a workflow" in error.message
    assert ("name must end in" if problem == "file" else "top level") in error.message
    assert not any(secret in f"{i.message} {i.source_line}" for i in issues)
