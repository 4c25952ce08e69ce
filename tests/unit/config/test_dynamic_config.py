"""Loading an edge's `dynamic` block: defaults, every option, located errors, agreement."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from devall_cli.config.dynamic import (
    DynamicConfig,
    JsonPathSplit,
    RegexSplit,
    SplitConfig,
    json_path_steps,
)
from devall_cli.config.model import EdgeConfig
from devall_cli.errors import ConfigIssue
from devall_cli.workflow.loader import load_workflow, validate_workflow

FLOW = """\
graph:
  start: a
  end: b
  nodes:
    - {id: a, type: passthrough}
    - {id: b, type: passthrough}
    - {id: c, type: passthrough}
  edges:
    - from: a
      to: b
      dynamic:
EDGES
"""


def write(tmp_path: Path, dynamic: str, more_edges: str = "") -> Path:
    block = textwrap.indent(textwrap.dedent(dynamic).strip("\n"), " " * 8)
    path = tmp_path / "flow.yaml"
    path.write_text(FLOW.replace("EDGES", block + "\n" + more_edges))
    return path


def first_edge(tmp_path: Path, dynamic: str) -> EdgeConfig:
    return load_workflow(write(tmp_path, dynamic), environ={}).graph.edges[0]


def issues(tmp_path: Path, dynamic: str, more_edges: str = "") -> list[ConfigIssue]:
    _, found = validate_workflow(write(tmp_path, dynamic, more_edges), environ={})
    return found


def errors(tmp_path: Path, dynamic: str, more_edges: str = "") -> dict[str, str]:
    """path -> message of every error."""
    found = [i for i in issues(tmp_path, dynamic, more_edges) if i.severity == "error"]
    return {issue.path: issue.message for issue in found}


# --- what loads --------------------------------------------------------------------------------


def test_a_map_with_nothing_but_its_type_splits_by_message_ten_at_a_time(tmp_path: Path) -> None:
    edge = first_edge(tmp_path, "type: map")
    assert edge.dynamic == DynamicConfig("map", SplitConfig("message"), 10, 3)
    assert edge.dynamic is not None and edge.dynamic.path == "graph.edges[0].dynamic"


def test_chatdev_null_split_and_message_config_mean_one_unit_per_message(tmp_path: Path) -> None:
    edge = first_edge(
        tmp_path,
        """
        type: tree
        split: {type: message, config: {}}
        config: {group_size: 2, max_parallel: 5}
        """,
    )
    assert edge.dynamic == DynamicConfig("tree", SplitConfig("message"), 5, 2)
    assert first_edge(tmp_path, "{type: map, split: null}").dynamic == DynamicConfig("map")


def test_regex_split_reads_every_option(tmp_path: Path) -> None:
    edge = first_edge(
        tmp_path,
        """
        type: map
        split:
          type: regex
          config:
            pattern: '^- (?P<item>.+)$'
            group: item
            case_sensitive: false
            multiline: true
            dotall: true
            on_no_match: empty
        """,
    )
    assert edge.dynamic is not None
    split = edge.dynamic.split.config
    assert split == RegexSplit("^- (?P<item>.+)$", "item", False, True, True, "empty")
    assert split.flags() == re.IGNORECASE | re.MULTILINE | re.DOTALL


def test_a_group_written_as_digits_is_a_group_number(tmp_path: Path) -> None:
    edge = first_edge(
        tmp_path, "{type: map, split: {type: regex, config: {pattern: 'a(b)', group: '1'}}}"
    )
    assert edge.dynamic is not None and edge.dynamic.split.config == RegexSplit("a(b)", 1)


@pytest.mark.parametrize(
    ("written", "steps"),
    [
        ("", ()),
        ("$", ()),
        ("items", ("items",)),
        ("data.results", ("data", "results")),
        ("items.0.tags", ("items", "0", "tags")),
        ("$.items[*]", ("items",)),
        ("$.data.results[2]", ("data", "results", "2")),
        ("$['odd key'].list", ("odd key", "list")),
        ("items[0]", ("items", "0")),
    ],
)
def test_json_path_reads_dot_notation_and_simple_jsonpath(written: str, steps: tuple[str]) -> None:
    assert json_path_steps(written) == steps


def test_json_path_split_keeps_the_path_as_written(tmp_path: Path) -> None:
    edge = first_edge(
        tmp_path, "{type: map, split: {type: json_path, config: {json_path: '$.a[*]'}}}"
    )
    assert edge.dynamic is not None
    assert edge.dynamic.split == SplitConfig("json_path", JsonPathSplit("$.a[*]", ("a",)))


# --- what does not, located and all at once ------------------------------------------------------


def test_every_problem_of_a_dynamic_block_is_reported_at_its_path(tmp_path: Path) -> None:
    found = errors(
        tmp_path,
        """
        type: fanout
        split:
          type: regex
          config: {pattern: '(a)', group: 2, case_sensitive: maybe}
        config: {max_parallel: many, group_size: 1}
        """,
    )
    here = "graph.edges[0].dynamic"
    assert found == {
        f"{here}.type": "unknown dynamic type 'fanout' (known: map, tree)",
        f"{here}.split.config.case_sensitive": "case_sensitive must be true or false, got "
        "'maybe' (text)",
        f"{here}.split.config.group": "group 2 does not exist: the pattern has 1 group",
        f"{here}.config.max_parallel": "max_parallel must be a whole number, got 'many' (text)",
    }


@pytest.mark.parametrize(
    ("dynamic", "path", "message"),
    [
        ("{split: {type: message}}", "type", "type is required"),
        ("{type: mapp}", "type", "did you mean 'map'?"),
        ("[map]", "", "dynamic must be a mapping, got a list"),
        ("{type: map, split: {type: regexp}}", "split.type", "did you mean 'regex'?"),
        (
            "{type: map, split: {type: regex}}",
            "split",
            "a regex split needs config: {pattern: ...}",
        ),
        (
            "{type: map, split: {type: regex, pattern: x}}",
            "split.pattern",
            "pattern belongs in split.config: write `split: {type: regex, config: {pattern: ...}}`",
        ),
        (
            "{type: map, split: {type: json_path, json_path: items}}",
            "split.json_path",
            "json_path belongs in split.config",
        ),
        (
            "{type: map, split: {type: regex, config: {pattern: ''}}}",
            "split.config.pattern",
            "must not be empty",
        ),
        (
            "{type: map, split: {type: regex, config: {pattern: '(x'}}}",
            "split.config.pattern",
            "pattern is not a valid regular expression",
        ),
        (
            "{type: map, split: {type: regex, config: {pattern: '(?P<a>x)', group: b}}}",
            "split.config.group",
            "group 'b' is not a group name of the pattern (names: a)",
        ),
        (
            "{type: map, split: {type: regex, config: {pattern: x, group: true}}}",
            "split.config.group",
            "group must be a group number or name, got true (boolean)",
        ),
        (
            "{type: map, split: {type: regex, config: {pattern: x, on_no_match: drop}}}",
            "split.config.on_no_match",
            "unknown on_no_match 'drop' (known: pass, empty)",
        ),
        (
            "{type: map, split: {type: json_path, config: {}}}",
            "split.config.json_path",
            "json_path is required",
        ),
        (
            "{type: map, split: {type: json_path, config: {json_path: 'a..b'}}}",
            "split.config.json_path",
            "is not a path devall can follow",
        ),
        (
            "{type: map, split: {type: json_path, config: {json_path: '$.a[*].b'}}}",
            "split.config.json_path",
            "is not a path devall can follow",
        ),
        ("{type: map, config: {max_parallel: 0}}", "config.max_parallel", "at least 1, got 0"),
        ("{type: tree, config: {group_size: 1}}", "config.group_size", "at least 2, got 1"),
        ("{type: tree, config: [2]}", "config", "config must be a mapping, got a list"),
    ],
)
def test_a_bad_dynamic_block_is_a_located_error(
    tmp_path: Path, dynamic: str, path: str, message: str
) -> None:
    found = errors(tmp_path, dynamic)
    where = "graph.edges[0].dynamic" + (f".{path}" if path else "")
    assert list(found) == [where]
    assert message in found[where]


def test_unknown_keys_are_warnings_and_group_size_on_a_map_is_named(tmp_path: Path) -> None:
    found = issues(tmp_path, "{type: map, splitt: x, config: {group_size: 2}}")
    assert all(issue.severity == "warning" for issue in found)
    messages = {issue.path: issue.message for issue in found}
    assert "did you mean 'split'?" in messages["graph.edges[0].dynamic.splitt"]
    assert messages["graph.edges[0].dynamic.config.group_size"] == (
        "group_size applies to tree edges only (ignored for map)"
    )


# --- several dynamic edges into one node -------------------------------------------------------

SECOND_INTO_B = """\
    - from: c
      to: b
      dynamic: {DYNAMIC}
"""


def test_dynamic_edges_into_one_node_must_agree(tmp_path: Path) -> None:
    found = errors(
        tmp_path,
        "{type: map, config: {max_parallel: 4}}",
        SECOND_INTO_B.replace(
            "{DYNAMIC}", "{type: map, split: {type: regex, config: {pattern: x}}}"
        ),
    )
    assert found == {
        "graph.edges[1].dynamic": "the dynamic edges into 'b' must agree: this one differs from "
        "the edge from 'a' (graph.edges[0]) in split (regex 'x', there message); "
        "max_parallel (10, there 4)"
    }


def test_agreeing_dynamic_edges_and_static_ones_into_one_node_load(tmp_path: Path) -> None:
    more = SECOND_INTO_B.replace("{DYNAMIC}", "{type: map, split: null, config: {}}")
    more += "    - {from: a, to: c}\n    - {from: c, to: b}\n"  # replaces the dynamic c → b
    flow = load_workflow(write(tmp_path, "{type: map, split: {type: message}}", more), environ={})
    assert [e.dynamic is not None for e in flow.graph.edges] == [True, False, False]


def test_a_disagreeing_edge_that_a_later_one_replaces_does_not_count(tmp_path: Path) -> None:
    more = SECOND_INTO_B.replace("{DYNAMIC}", "{type: tree}") + "    - {from: c, to: b}\n"
    flow, found = validate_workflow(write(tmp_path, "{type: map}", more), environ={})
    assert flow is not None
    assert [(i.severity, i.path) for i in found] == [("warning", "graph.edges[2]")]  # duplicate


# --- warnings ---------------------------------------------------------------------------------


def test_a_dynamic_edge_that_carries_no_data_is_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path, "{type: map}")
    path.write_text(path.read_text().replace("to: b\n", "to: b\n      carry_data: false\n"))
    _, found = validate_workflow(path, environ={})
    assert [(i.severity, i.path, i.message) for i in found] == [
        (
            "warning",
            "graph.edges[0].dynamic",
            "a dynamic edge with carry_data: false delivers nothing to split",
        )
    ]


def test_dynamic_on_a_node_is_ignored_with_a_warning_and_null_silently(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            graph:
              start: a
              end: b
              nodes:
                - {id: a, type: passthrough, dynamic: null}
                - {id: b, type: passthrough, dynamic: {type: map}}
            """
        )
    )
    flow, found = validate_workflow(path, environ={})
    assert flow is not None
    assert [(i.severity, i.path) for i in found] == [("warning", "graph.nodes[1].dynamic")]
    assert "put it on the edges into the node" in found[0].message


def test_an_empty_group_means_the_whole_match_as_in_chatdevs_files(tmp_path: Path) -> None:
    edge = first_edge(
        tmp_path, "{type: map, split: {type: regex, config: {pattern: 'a(b)', group: ''}}}"
    )
    assert edge.dynamic is not None
    split = edge.dynamic.split.config
    assert isinstance(split, RegexSplit) and split.group is None
