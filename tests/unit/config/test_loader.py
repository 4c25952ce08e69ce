"""The loader: typed objects with every field and default, lookup order, secrets, warnings."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

import pytest

from devall_cli.config.model import ConditionConfig, FunctionCondition, KeywordCondition, Workflow
from devall_cli.errors import ConfigError, ConfigIssue
from devall_cli.nodes.agent_settings import AgentConfig
from devall_cli.nodes.literal import LiteralConfig
from devall_cli.nodes.passthrough import PassthroughConfig
from devall_cli.redaction import Redactor
from devall_cli.tools.kinds.function import FunctionToolingConfig
from devall_cli.tools.kinds.mcp_local import McpLocalConfig
from devall_cli.tools.kinds.mcp_remote import McpRemoteConfig
from devall_cli.workflow.loader import load_workflow, mask_issue, validate_workflow


def write(folder: Path, text: str, name: str = "flow.yaml") -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def load(
    folder: Path, text: str, environ: Mapping[str, str] | None = None, **kwargs: object
) -> Workflow:
    return load_workflow(write(folder, text), environ=environ or {}, **kwargs)  # type: ignore[arg-type]


def errors_of(
    folder: Path, text: str, environ: Mapping[str, str] | None = None
) -> list[ConfigIssue]:
    workflow, issues = validate_workflow(write(folder, text), environ=environ or {})
    errors = [issue for issue in issues if issue.severity == "error"]
    assert workflow is None and errors
    return errors


def agent(workflow: Workflow, node_id: str = "a") -> AgentConfig:
    config = workflow.graph.node(node_id).config
    assert isinstance(config, AgentConfig)
    return config


AGENT = """\
graph:
  start: a
  nodes:
    - id: a
      type: agent
      config:
        provider: openai
        name: gpt-4o-mini
        {extra}
"""


def agent_flow(extra: str) -> str:
    body = textwrap.indent(textwrap.dedent(extra).strip("\n"), " " * 8).lstrip()
    return AGENT.replace("{extra}", body)


# --- nodes --------------------------------------------------------------------------------


def test_agent_fields_and_reserved_params(tmp_path: Path) -> None:
    flow = load(
        tmp_path,
        agent_flow(
            """
            base_url: http://127.0.0.1:8000/v1/
            api_key: sk-local-123
            role: You are terse.
            params:
              temperature: 0.2
              max_tokens: 100
              tool_loop_limit: 3
              timeout: 12.5
              retries: 0
              max_result_chars: 500
            """
        ),
    )
    config = agent(flow)
    assert config.provider == "openai"
    assert config.name == "gpt-4o-mini"
    assert config.base_url == "http://127.0.0.1:8000/v1"
    assert config.api_key == "sk-local-123"
    assert config.role == "You are terse."
    assert dict(config.params) == {"temperature": 0.2, "max_tokens": 100}
    assert (config.tool_loop_limit, config.timeout, config.retries, config.max_result_chars) == (
        3,
        12.5,
        0,
        500,
    )
    with pytest.raises(TypeError):
        config.params["x"] = 1  # type: ignore[index]


def test_agent_defaults(tmp_path: Path) -> None:
    config = agent(load(tmp_path, agent_flow("")))
    assert (config.base_url, config.api_key, config.role, config.tooling) == (None, None, None, ())
    assert (config.provider_config, config.input_mode) == (None, "messages")
    assert (config.tool_loop_limit, config.timeout, config.retries, config.max_result_chars) == (
        50,
        300.0,
        5,
        100_000,
    )
    assert dict(config.params) == {}


def test_scripted_agent_script(tmp_path: Path) -> None:
    flow = load(
        tmp_path,
        """\
        graph:
          start: a
          nodes:
            - id: a
              type: agent
              config:
                provider: scripted
                script:
                  - tool_calls: [{name: rand_num, arguments: {a: 1, b: 100}}, {name: ping}]
                  - content: "Number {tool_result}"
                  - Plain text turn
        """,
    )
    config = agent(flow)
    assert config.name == "scripted"
    first, second, third = config.provider_config  # the scripted provider's turns
    assert [(c.name, dict(c.arguments)) for c in first.tool_calls] == [
        ("rand_num", {"a": 1, "b": 100}),
        ("ping", {}),
    ]
    assert first.content is None
    assert (second.content, second.tool_calls) == ("Number {tool_result}", ())
    assert third.content == "Plain text turn"


def test_script_turn_needs_content_or_tool_calls(tmp_path: Path) -> None:
    (issue,) = errors_of(
        tmp_path,
        """\
        graph:
          start: a
          nodes:
            - id: a
              type: agent
              config: {provider: scripted, script: [{}]}
        """,
    )
    assert issue.path == "graph.nodes[0].config.script[0]"


def test_script_on_openai_agent_is_a_warning(tmp_path: Path) -> None:
    flow = load(tmp_path, agent_flow("script: [{content: hi}]"))
    assert [w.path for w in flow.warnings] == ["graph.nodes[0].config.script"]


def test_literal_and_passthrough(tmp_path: Path) -> None:
    flow = load(
        tmp_path,
        """\
        graph:
          start: [hello]
          end: fwd
          nodes:
            - id: hello
              type: literal
              description: greets
              config: {content: Hello, role: assistant}
            - id: fwd
              type: passthrough
            - id: fwd_all
              type: passthrough
              config: {only_last_message: false}
          edges:
            - {from: hello, to: fwd}
            - {from: hello, to: fwd_all}
        """,
    )
    assert flow.graph.node("hello").config == LiteralConfig(content="Hello", role="assistant")
    assert flow.graph.node("hello").description == "greets"
    assert flow.graph.node("fwd").config == PassthroughConfig(only_last_message=True)
    assert flow.graph.node("fwd_all").config == PassthroughConfig(only_last_message=False)
    assert flow.graph.start == ("hello",)
    assert flow.graph.end == ("fwd",)
    assert flow.graph.node("fwd").path == "graph.nodes[1]"


# --- tooling ------------------------------------------------------------------------------


def test_mcp_remote_fields_and_coercion(tmp_path: Path) -> None:
    flow = load(
        tmp_path,
        agent_flow(
            """
            tooling:
              - type: mcp_remote
                prefix: web
                config:
                  server: https://mcp.example.test/mcp
                  headers: {Authorization: Bearer abcdef, X-Retry: 3, X-Flag: true}
                  timeout: 15
                  cache_ttl: 60
                  tool_sources: [mcp_tools, extra]
            """
        ),
    )
    (entry,) = agent(flow).tooling
    assert (entry.type, entry.prefix, entry.path) == (
        "mcp_remote",
        "web",
        "graph.nodes[0].config.tooling[0]",
    )
    assert isinstance(entry.config, McpRemoteConfig)
    assert entry.config == McpRemoteConfig(
        server="https://mcp.example.test/mcp",
        headers=entry.config.headers,
        timeout=15.0,
        cache_ttl=60.0,
        tool_sources=("mcp_tools", "extra"),
    )
    assert dict(entry.config.headers) == {
        "Authorization": "Bearer abcdef",
        "X-Retry": "3",
        "X-Flag": "true",
    }
    assert entry.final_name("search") == "web_search"


def test_mcp_remote_defaults_and_single_mapping_tooling(tmp_path: Path) -> None:
    flow = load(
        tmp_path,
        agent_flow(
            """
            tooling:
              type: mcp_remote
              config: {server: "http://127.0.0.1:8001/mcp"}
            """
        ),
    )
    (entry,) = agent(flow).tooling
    assert entry.config == McpRemoteConfig(server="http://127.0.0.1:8001/mcp")
    assert entry.prefix is None
    assert entry.path == "graph.nodes[0].config.tooling"


def test_mcp_local_fields(tmp_path: Path) -> None:
    (tmp_path / "servers").mkdir()
    flow = load(
        tmp_path,
        agent_flow(
            """
            tooling:
              - type: mcp_local
                config:
                  command: python
                  args: [server.py, --port, "8080"]
                  cwd: servers
                  env: {PORT: 8080, DEBUG: false}
                  inherit_env: false
                  startup_timeout: 5
                  wait_for_log: "ready on port \\\\d+"
                  cache_ttl: 1.5
                  tool_sources: [mcp_tools]
                  max_concurrency: 4
                  call_timeout: 2.5
                  max_restarts: 0
            """
        ),
    )
    config = agent(flow).tooling[0].config
    assert isinstance(config, McpLocalConfig)
    assert config.command == "python"
    assert config.args == ("server.py", "--port", "8080")
    assert config.cwd == str((tmp_path / "servers").resolve())
    assert dict(config.env) == {"PORT": "8080", "DEBUG": "false"}
    assert config.inherit_env is False
    assert config.startup_timeout == 5.0
    assert config.wait_for_log == "ready on port \\d+"
    assert (config.cache_ttl, config.tool_sources) == (1.5, ("mcp_tools",))
    assert (config.max_concurrency, config.call_timeout, config.max_restarts) == (4, 2.5, 0)
    assert config.display_target() == "python server.py --port 8080"


def test_mcp_local_defaults(tmp_path: Path) -> None:
    flow = load(tmp_path, agent_flow("tooling: [{type: mcp_local, config: {command: srv}}]"))
    assert agent(flow).tooling[0].config == McpLocalConfig(command="srv")


def test_mcp_local_missing_cwd_is_a_warning(tmp_path: Path) -> None:
    flow = load(
        tmp_path, agent_flow("tooling: [{type: mcp_local, config: {command: x, cwd: nowhere}}]")
    )
    assert "not a directory" in flow.warnings[0].message


def test_an_mcp_local_cwd_too_long_to_look_up_is_the_same_warning(tmp_path: Path) -> None:
    # A name longer than the file system allows makes Path.is_dir() raise (ENAMETOOLONG).
    flow = load(
        tmp_path,
        agent_flow(f"tooling: [{{type: mcp_local, config: {{command: x, cwd: {'x' * 300}}}}}]"),
    )
    assert "not a directory" in flow.warnings[0].message


@pytest.mark.parametrize(
    ("config", "path"),
    [
        ("{command: x, args: 'server.py --port 1'}", "config.args"),
        ("{command: x, env: {A: [1]}}", "config.env.A"),
        ("{command: x, tool_sources: [1]}", "config.tool_sources[0]"),
        ("{command: 7}", "config.command"),
        ("{command: ''}", "config.command"),
        ("{command: x, timeout: 3}", "config.timeout"),  # unknown key in tooling: an error
    ],
)
def test_mcp_local_type_errors(tmp_path: Path, config: str, path: str | None) -> None:
    text = agent_flow(f"tooling: [{{type: mcp_local, config: {config}}}]")
    workflow, issues = validate_workflow(write(tmp_path, text), environ={})
    errors = [i.path for i in issues if i.severity == "error"]
    if path is None:
        assert workflow is not None and errors == []
        assert "unknown key 'timeout'" in issues[0].message
    else:
        assert errors == [f"graph.nodes[0].config.tooling[0].{path}"]


def test_tooling_entry_needs_config(tmp_path: Path) -> None:
    (issue,) = errors_of(tmp_path, agent_flow("tooling: [{type: mcp_remote}]"))
    assert issue.path == "graph.nodes[0].config.tooling[0].config"


def test_invalid_prefix(tmp_path: Path) -> None:
    text = agent_flow("tooling: [{type: mcp_local, prefix: 'a b', config: {command: x}}]")
    (issue,) = errors_of(tmp_path, text)
    assert issue.path == "graph.nodes[0].config.tooling[0].prefix"


def test_legacy_mcp_with_command_suggests_mcp_local(tmp_path: Path) -> None:
    (issue,) = errors_of(tmp_path, agent_flow("tooling: [{type: mcp, config: {command: x}}]"))
    assert "mcp_local" in issue.message and "mcp_remote" not in issue.message


def test_a_new_tooling_type_plugs_in_through_the_registry(tmp_path: Path) -> None:
    from devall_cli.tools.kinds import registry as tooling_registry

    def parse(ck, config, path):  # type: ignore[no-untyped-def]
        return McpRemoteConfig(server=f"http://127.0.0.1/{config['name']}")

    tooling_registry.TOOLING_TYPES.register(tooling_registry.ToolingType("custom_kind", parse))
    try:
        flow = load(tmp_path, agent_flow("tooling: [{type: custom_kind, config: {name: z}}]"))
        assert agent(flow).tooling[0].config == McpRemoteConfig(server="http://127.0.0.1/z")
    finally:
        tooling_registry.TOOLING_TYPES.unregister("custom_kind")


# --- function tooling ---------------------------------------------------------------------

FUNCTIONS = '''\
def get_weather(city: str) -> str:
    """Weather for a city."""
    return city


def get_time() -> str:
    """The time."""
    return "noon"
'''


def function_flow(*entries: str) -> str:
    lines = "\n".join(f"  - {entry}" for entry in entries)
    return agent_flow("tooling:\n" + lines)


def test_function_tooling_fills_the_functions_dir(tmp_path: Path) -> None:
    write(tmp_path, FUNCTIONS, "functions/tools.py")
    flow = load(
        tmp_path,
        function_flow("{type: function, config: {tools: [{name: get_weather}], timeout: 5}}"),
    )
    config = agent(flow).tooling[0].config
    assert isinstance(config, FunctionToolingConfig)
    assert [ref.name for ref in config.tools] == ["get_weather"]
    assert config.timeout == 5.0
    assert config.functions_dir == str((tmp_path / "functions").resolve())


def test_functions_dir_from_the_environment(tmp_path: Path) -> None:
    write(tmp_path, FUNCTIONS, "elsewhere/tools.py")
    flow = load(
        tmp_path,
        function_flow("{type: function, config: {tools: [{name: 'tools:All'}]}}"),
        environ={"DEVALL_FUNCTIONS_DIR": str(tmp_path / "elsewhere")},
    )
    config = agent(flow).tooling[0].config
    assert isinstance(config, FunctionToolingConfig)
    assert config.functions_dir == str((tmp_path / "elsewhere").resolve())
    assert config.timeout == 30.0


def test_unknown_function_is_reported_at_its_name(tmp_path: Path) -> None:
    write(tmp_path, FUNCTIONS, "functions/tools.py")
    text = function_flow("{type: function, config: {tools: [{name: get_time}, {name: nope}]}}")
    (issue,) = errors_of(tmp_path, text)
    assert issue.path == "graph.nodes[0].config.tooling[0].config.tools[1].name"
    assert "nope" in issue.message


def test_missing_functions_dir(tmp_path: Path) -> None:
    (issue,) = errors_of(tmp_path, function_flow("{type: function, config: {tools: [{name: x}]}}"))
    assert issue.path == "graph.nodes[0].config.tooling[0].config.tools"


def test_duplicate_function_tool_names_across_entries(tmp_path: Path) -> None:
    write(tmp_path, FUNCTIONS, "functions/tools.py")
    text = function_flow(
        "{type: function, config: {tools: [{name: get_weather}]}}",
        "{type: function, config: {tools: [{name: 'tools:All'}]}}",
    )
    (issue,) = errors_of(tmp_path, text)
    assert issue.message == (
        "Duplicate tool name 'get_weather' detected. "
        "Please use a unique 'prefix' in your tooling configuration."
    )
    assert issue.path == "graph.nodes[0].config.tooling[1]"


def test_a_prefix_resolves_duplicate_function_names(tmp_path: Path) -> None:
    write(tmp_path, FUNCTIONS, "functions/tools.py")
    flow = load(
        tmp_path,
        function_flow(
            "{type: function, config: {tools: [{name: get_weather}]}}",
            "{type: function, prefix: more, config: {tools: [{name: 'tools:All'}]}}",
        ),
    )
    assert len(agent(flow).tooling) == 2


def test_an_empty_prefix_is_no_prefix_as_in_chatdevs_files(tmp_path: Path) -> None:
    write(tmp_path, FUNCTIONS, "functions/tools.py")
    flow = load(
        tmp_path, function_flow("{type: function, prefix: '', config: {tools: [{name: get_time}]}}")
    )
    entry = agent(flow).tooling[0]
    assert (entry.prefix, entry.final_name("get_time")) == (None, "get_time")


# --- edges and graph ----------------------------------------------------------------------

GRAPH = """\
graph:
  start: [a]
  nodes:
    - {id: a, type: passthrough}
    - {id: b, type: passthrough}
  edges:
    - from: a
      to: b
      {edge}
"""


def edge_flow(extra: str) -> str:
    return GRAPH.replace("{edge}", extra)


def test_edge_defaults(tmp_path: Path) -> None:
    (edge,) = load(tmp_path, edge_flow("")).graph.edges
    assert (edge.source, edge.target, edge.carry_data, edge.trigger) == ("a", "b", True, True)
    assert edge.condition == ConditionConfig("function", FunctionCondition("true"))
    assert (edge.keep_message, edge.clear_context, edge.clear_kept_context) == (False,) * 3
    assert (edge.process, edge.dynamic) == (None, None)
    assert edge.path == "graph.edges[0]"


@pytest.mark.parametrize(
    ("extra", "name"),
    [
        ("condition: false", "false"),
        ("condition: 'true'", "true"),
        ("condition: 'false'", "false"),
        ("condition: null", "true"),
        ("condition: {type: function, config: {name: 'true'}}", "true"),
    ],
)
def test_boolean_conditions_are_the_built_in_functions(
    tmp_path: Path, extra: str, name: str
) -> None:
    condition = load(tmp_path, edge_flow(extra)).graph.edges[0].condition
    assert condition == ConditionConfig("function", FunctionCondition(name))


def test_keyword_condition_and_flags(tmp_path: Path) -> None:
    extra = """condition:
        type: keyword
        config: {any: [done], none: [error], regex: ["^ok\\\\b"], case_sensitive: false}
      carry_data: no
      trigger: false"""
    (edge,) = load(tmp_path, edge_flow(extra)).graph.edges
    assert edge.condition == ConditionConfig(
        "keyword",
        KeywordCondition(any=("done",), none=("error",), regex=("^ok\\b",), case_sensitive=False),
    )
    assert (edge.carry_data, edge.trigger) == (False, False)


def test_unknown_edge_source_is_reported_once(tmp_path: Path) -> None:
    errors = errors_of(tmp_path, GRAPH.replace("from: a", "from: z").replace("{edge}", ""))
    assert [e.path for e in errors] == ["graph.edges[0].from"]


def test_chatdev_keys_without_effect_are_accepted_quietly(tmp_path: Path) -> None:
    flow = load(
        tmp_path,
        """\
        graph:
          start: a
          log_level: INFO
          is_majority_voting: false
          organization: demos
          nodes:
            - {id: a, type: passthrough, log_output: true}
            - {id: b, type: passthrough}
          edges:
            - {from: a, to: b, keep_message: true}
        """,
    )
    assert flow.warnings == ()


def test_vars_inside_graph_is_an_error(tmp_path: Path) -> None:
    (issue,) = errors_of(
        tmp_path, "graph:\n  vars: {A: 1}\n  start: a\n  nodes: [{id: a, type: passthrough}]\n"
    )
    assert issue.path == "graph.vars"


# --- warnings -----------------------------------------------------------------------------


def test_unknown_keys_are_warnings_outside_nodes_with_suggestions(tmp_path: Path) -> None:
    flow = load(
        tmp_path,
        """\
        verison: 1
        graph:
          start: a
          nodes: [{id: a, type: passthrough}]
          edgs: []
          memory: [{name: m, type: blackboard, config: {max_itmes: 3}}]
        """,
    )
    messages = {w.path: w.message for w in flow.warnings}
    assert messages["verison"] == "unknown key 'verison' (ignored); did you mean 'version'?"
    assert messages["graph.edgs"].endswith("did you mean 'edges'?")
    assert messages["graph.memory[0].config.max_itmes"].endswith("did you mean 'max_items'?")
    assert all(w.severity == "warning" for w in flow.warnings)
    assert flow.warnings[0].line == 1


def test_unknown_keys_in_nodes_and_tooling_are_errors_with_suggestions(tmp_path: Path) -> None:
    issues = errors_of(
        tmp_path,
        """\
        graph:
          start: a
          nodes:
            - id: a
              type: agent
              descripton: x
              config:
                provider: openai
                name: m
                tolling:
                  - type: mcp_remote
                    config: {server: "http://127.0.0.1:1/mcp"}
                completely_unrelated: 1
        """,
    )
    errors = {i.path: i.message for i in issues if i.severity == "error"}
    base = "graph.nodes[0]"
    assert errors == {
        f"{base}.descripton": "unknown key 'descripton'; did you mean 'description'?",
        f"{base}.config.tolling": "unknown key 'tolling'; did you mean 'tooling'?",
        f"{base}.config.completely_unrelated": (
            "unknown key 'completely_unrelated' (known keys: api_key, base_url, input_mode, "
            "memories, name, params, provider, role, skills, thinking, tool_policy, tooling)"
        ),
    }


def test_unknown_keys_in_a_tooling_entry_are_errors(tmp_path: Path) -> None:
    issues = errors_of(
        tmp_path,
        agent_flow(
            "tooling:\n"
            "  - type: mcp_remote\n"
            "    prefx: p\n"
            '    config: {server: "http://127.0.0.1:1/mcp", timout: 3}'
        ),
    )
    errors = {i.path: i.message for i in issues if i.severity == "error"}
    assert errors == {
        "graph.nodes[0].config.tooling[0].prefx": "unknown key 'prefx'; did you mean 'prefix'?",
        "graph.nodes[0].config.tooling[0].config.timout": (
            "unknown key 'timout'; did you mean 'timeout'?"
        ),
    }


def test_retry_is_noted(tmp_path: Path) -> None:
    flow = load(tmp_path, agent_flow("retry: {max_attempts: 3}"))
    assert "params.retries" in flow.warnings[0].message


# --- placeholders through the loader ------------------------------------------------------

PLACEHOLDERS = """\
vars:
  MODEL: from-vars
  API_KEY: ${API_KEY}
graph:
  start: a
  nodes:
    - id: a
      type: agent
      config:
        provider: openai
        name: ${MODEL}
        api_key: ${API_KEY}
        base_url: ${BASE_URL}
        role: ${ROLE}
"""


def test_lookup_order_through_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flows = tmp_path / "flows"
    write(flows, PLACEHOLDERS)
    write(flows, "ROLE=from-workflow-dotenv\nBASE_URL=http://dotenv.invalid\n", ".env")
    write(tmp_path, "API_KEY=sk-dotenv-key\n", ".env")
    monkeypatch.chdir(tmp_path)
    flow = load_workflow(
        flows / "flow.yaml",
        environ={"BASE_URL": "http://127.0.0.1:9/v1"},
        cli_vars={"MODEL": "from-cli"},
    )
    config = agent(flow)
    assert config.name == "from-cli"
    assert config.api_key == "sk-dotenv-key"
    assert config.base_url == "http://127.0.0.1:9/v1"  # the environment beats .env
    assert config.role == "from-workflow-dotenv"
    assert dict(flow.vars) == {"MODEL": "from-cli", "API_KEY": "sk-dotenv-key"}


def test_env_file_option(tmp_path: Path) -> None:
    write(tmp_path, "API_KEY=sk-file-key\nBASE_URL=http://127.0.0.1/v1\nROLE=r\n", "my.env")
    flow = load(tmp_path, PLACEHOLDERS, env_file=tmp_path / "my.env")
    assert agent(flow).api_key == "sk-file-key"


def test_placeholder_text_may_stand_for_numbers_and_booleans(tmp_path: Path) -> None:
    text = agent_flow(
        """
        tooling:
          - type: mcp_local
            config:
              command: x
              startup_timeout: ${STARTUP}
              max_concurrency: ${CONC:-3}
              inherit_env: ${INHERIT}
        """
    )
    flow = load(tmp_path, text, environ={"STARTUP": "2.5", "INHERIT": "false"})
    config = agent(flow).tooling[0].config
    assert isinstance(config, McpLocalConfig)
    assert (config.startup_timeout, config.max_concurrency, config.inherit_env) == (2.5, 3, False)


def test_quoted_numbers_written_in_yaml_are_not_numbers(tmp_path: Path) -> None:
    text = agent_flow("tooling: [{type: mcp_local, config: {command: x, startup_timeout: '5'}}]")
    (issue,) = errors_of(tmp_path, text)
    assert issue.message.startswith("startup_timeout must be a number")


def test_unresolved_placeholder_does_not_cause_a_second_error(tmp_path: Path) -> None:
    text = agent_flow("tooling: [{type: mcp_local, config: {command: x, call_timeout: '${NOPE}'}}]")
    (issue,) = errors_of(tmp_path, text)
    assert "unresolved placeholder ${NOPE}" in issue.message


# --- secrets ------------------------------------------------------------------------------


def test_secrets_are_the_values_of_secret_looking_names_only(tmp_path: Path) -> None:
    text = agent_flow(
        """
        api_key: ${OPENAI_KEY}
        tooling:
          - type: mcp_remote
            config:
              server: http://127.0.0.1:1/mcp?auth=${SERVICE_TOKEN}&apiToken=qtok-98765&page=22
              headers: {X-Api-Key: header-value, x-tenant: "1", Accept: text/plain-long}
          - type: mcp_local
            config:
              command: x
              args: [--token, flag-token-1, --port, "8001"]
              env: {LOG_LEVEL: debug, DB_PASSWORD: dbpass-123, REGION: eu-west-1}
        """
    )
    environ = {"OPENAI_KEY": "sk-openai", "SERVICE_TOKEN": "tok-1234", "OPENAI_API_KEY": "sk-d-0"}
    flow = load(tmp_path, text, environ=environ)
    assert set(flow.redactor.secrets) == {
        "sk-openai",
        "tok-1234",
        "qtok-98765",
        "header-value",
        "flag-token-1",
        "dbpass-123",
        "sk-d-0",
    }
    ordinary = "switch from debug to production in eu-west-1 took 10 ms (text/plain-long)"
    assert flow.redactor.text(ordinary) == ordinary


def test_secrets_quoted_in_messages_are_masked_before_they_are_cut(tmp_path: Path) -> None:
    token = "tok-" + "7" * 60
    text = agent_flow("tooling: [{type: mcp_remote, config: {server: 'x ${API_TOKEN}'}}]")
    (issue,) = errors_of(tmp_path, text, environ={"API_TOKEN": token})
    assert "tok-7" not in issue.message and "***" in issue.message


def test_secrets_are_masked_in_issues(tmp_path: Path) -> None:
    text = agent_flow("tooling: [{type: mcp_remote, config: {server: '${API_TOKEN}'}}]")
    (issue,) = errors_of(tmp_path, text, environ={"API_TOKEN": "not-a-url-secret"})
    assert "not-a-url-secret" not in issue.message
    assert "***" in issue.message


def test_mask_issue_moves_the_caret_with_the_mask() -> None:
    issue = ConfigIssue("bad", line=1, col=28, source_line="headers: {A: secret-value, T: x}")
    masked = mask_issue(issue, Redactor(["secret-value"]))
    assert masked.source_line == "headers: {A: ***, T: x}"
    assert masked.source_line[masked.col - 1] == "T"
    line = "a: secret-value"
    inside = mask_issue(ConfigIssue("bad", col=8, source_line=line), Redactor(["secret-value"]))
    assert inside.col == 4


# --- whole-file behaviour -----------------------------------------------------------------


def test_load_workflow_raises_with_every_issue(tmp_path: Path) -> None:
    text = agent_flow("params: {timeout: x, retries: -1}\nretry: {max_attempts: 3}")
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, text)
    assert caught.value.message == "2 problems in workflow"
    assert [i.severity for i in caught.value.issues] == ["error", "error", "warning"]


def test_workflow_metadata(tmp_path: Path) -> None:
    flow = load(
        tmp_path,
        """\
        version: 1.0
        graph:
          id: named
          description: d
          start: a
          nodes: [{id: a, type: passthrough}]
        """,
    )
    assert (flow.version, flow.name, flow.graph.description) == ("1.0", "named", "d")
    assert flow.path == (tmp_path / "flow.yaml").resolve()
    assert flow.directory == tmp_path.resolve()


def test_name_falls_back_to_the_file_stem(tmp_path: Path) -> None:
    flow = load(tmp_path, "graph: {start: a, nodes: [{id: a, type: passthrough}]}\n")
    assert flow.name == "flow"
