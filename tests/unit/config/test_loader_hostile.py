"""Bad and hostile workflow files: refused with a located ConfigError, quickly, never a crash."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from devall_cli.config import yaml_tree
from devall_cli.config.yaml_source import MAX_LINE_CHARS, load_source
from devall_cli.errors import ConfigError, ConfigIssue
from devall_cli.workflow.loader import load_workflow, validate_workflow
from tests.unit.config.hostile_files import (
    CASES,
    GRAPH,
    HostileCase,
    alias_bomb,
    merge_chain,
)

CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")

# Seconds. The refusals here answer in milliseconds; what they guard against (expanding an alias
# bomb, reading a terabyte, quadratic work on deep or large input) takes minutes to hours. The
# bound only catches that, never a slow machine.
HANG_GUARD = 30


def errors_of(path: Path) -> list[ConfigIssue]:
    workflow, issues = validate_workflow(path, environ={})
    assert workflow is None
    return [issue for issue in issues if issue.severity == "error"]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "flow.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_hostile_file_is_refused_with_one_located_error(tmp_path: Path, case: HostileCase) -> None:
    path = case.write(tmp_path)
    started = time.perf_counter()
    (error,) = errors_of(path)
    assert time.perf_counter() - started < HANG_GUARD
    assert case.message in error.message
    assert error.file == str(path)
    assert ((error.line, error.col) if error.line else None) == case.where
    assert not CONTROL.search(error.message + error.path + error.source_line)
    with pytest.raises(ConfigError) as raised:
        load_workflow(path, environ={})
    assert raised.value.issues == [error]


# --- aliases ------------------------------------------------------------------------------


def test_alias_bomb_is_refused_at_the_alias_before_anything_is_expanded(tmp_path: Path) -> None:
    # 10**40 values once expanded: only a refusal before expanding can answer at all.
    path = write(tmp_path, alias_bomb(levels=40))
    started = time.perf_counter()
    (error,) = errors_of(path)
    assert time.perf_counter() - started < HANG_GUARD
    assert error.message.startswith("alias *L3 would expand the document beyond 50000 values")
    assert error.source_line.startswith("  L4: &L4 [*L3, *L3,")


def test_a_workflow_using_anchors_aliases_and_merges_still_loads(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
defaults: &agent_defaults
  provider: scripted
  name: scripted-model
  script: [{content: done}]
shared_tools: &tools
  - type: mcp_local
    config: {command: python, args: [server.py]}
graph:
  start: [a]
  nodes:
    - id: a
      type: agent
      config:
        <<: *agent_defaults
        tooling: *tools
    - id: b
      type: agent
      config:
        <<: *agent_defaults
        name: own-name
        tooling: *tools
  edges: [{from: a, to: b}]
""",
    )
    workflow = load_workflow(path, environ={})
    first, second = (node.config for node in workflow.graph.nodes)
    assert (first.name, second.name) == ("scripted-model", "own-name")  # type: ignore[union-attr]
    assert first.tooling[0].config == second.tooling[0].config  # type: ignore[union-attr]


def test_earlier_merge_sources_win_and_own_keys_win_over_all(tmp_path: Path) -> None:
    doc = load_source(
        write(tmp_path, "a: &a {x: 1, y: 1}\nb: &b {x: 2, z: 2}\nc: {<<: [*a, *b], y: 3}\n"),
        "flow.yaml",
    )
    assert doc.data["c"] == {"y": 3, "x": 1, "z": 2}


def test_aliases_count_what_they_stand_for_up_to_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(yaml_tree, "MAX_VALUES", 100)
    # The anchored list holds 12 values (itself, 9 x, [y] and y); the document
    # 1 root + 2 keys + 12 + 1 list + 7 aliases of 12 = 100 values, at the limit.
    anchored = "k: &k [x, x, x, x, x, x, x, x, x, [y]]\n"
    fits = anchored + f"l: [{', '.join(['*k'] * 7)}]\n"
    assert load_source(write(tmp_path, fits), "f").data["l"][6][9] == ["y"]
    with pytest.raises(ConfigError, match="alias \\*k would expand the document beyond 100"):
        load_source(write(tmp_path, anchored + f"l: [{', '.join(['*k'] * 8)}]\n"), "f")
    with pytest.raises(ConfigError, match="the document holds more than 100 values"):
        load_source(write(tmp_path, f"k: [{', '.join(['x'] * 100)}]\n"), "f")


def test_redefined_anchor_is_valid_yaml_and_the_later_one_wins(tmp_path: Path) -> None:
    doc = load_source(write(tmp_path, "a: &x 1\nb: &x [2]\nc: *x\n"), "f")
    assert doc.data == {"a": 1, "b": [2], "c": [2]}


def test_merge_chains_up_to_the_limit_load(tmp_path: Path) -> None:
    merged = load_source(write(tmp_path, merge_chain(length=101)), "f").data["chain"]["m100"]
    assert (merged["k"], merged["k1"], merged["k100"]) == (0, 1, 100)
    (error,) = errors_of(write(tmp_path, merge_chain(length=150)))  # reported once, not 49 times
    assert error.source_line.startswith("  m101: &m101 {<<: *m100")


# --- nesting ------------------------------------------------------------------------------


def test_nesting_up_to_the_limit_loads_and_one_more_level_is_refused(tmp_path: Path) -> None:
    # The root mapping is the first level, the flow lists the other 99 (or 100).
    assert load_source(write(tmp_path, "k: " + "[" * 99 + "]" * 99 + "\n"), "f").data
    with pytest.raises(ConfigError, match="nested more than 100 levels deep") as raised:
        load_source(write(tmp_path, "k: " + "[" * 100 + "]" * 100 + "\n"), "f")
    assert (raised.value.issues[0].line, raised.value.issues[0].col) == (1, 103)


@pytest.mark.parametrize(
    "text",
    [
        "k: " + "[" * 90_000,
        "k: " + "{a: " * 20_000,
        "".join(" " * i + "- x:\n" for i in range(0, 1000, 2)),
        "- " * 40_000 + "x",
        "k: " + "[{a: " * 15_000,
    ],
    ids=["lists", "mappings", "block", "compact_block", "mixed"],
)
def test_deep_nesting_is_refused_quickly_without_recursion_error(tmp_path: Path, text: str) -> None:
    started = time.perf_counter()
    with pytest.raises(ConfigError, match="nested more than 100 levels deep"):
        load_source(write(tmp_path, text + "\n"), "f")
    assert time.perf_counter() - started < HANG_GUARD


def test_placeholders_cannot_nest_values_deeper_than_yaml_may(tmp_path: Path) -> None:
    deep = "[" * 60 + "'${INNER}'" + "]" * 60
    path = write(
        tmp_path, f"vars:\n  INNER: {deep.replace('${INNER}', 'x')}\n  OUTER: {deep}\n{GRAPH}"
    )
    (error,) = errors_of(path)
    assert (
        error.message
        == "placeholders nest values more than 100 levels deep; refused before expanding them"
    )
    assert error.line == 3


@pytest.mark.parametrize("kind", ["defaults", "structures"])
def test_long_chains_of_deep_vars_are_an_error_not_a_recursion_error(
    tmp_path: Path, kind: str
) -> None:
    lines = ["vars:"]
    for i in range(45):
        if kind == "defaults":
            lines.append(f"  V{i}: '" + "${X:-" * 45 + f"${{V{i + 1}}}" + "}" * 45 + "'")
        else:
            lines.append(f"  V{i}: " + "[" * 90 + f"'${{V{i + 1}}}'" + "]" * 90)
    lines.append("  V45: end")
    errors = errors_of(write(tmp_path, "\n".join(lines) + "\n" + GRAPH))
    assert errors
    assert all("levels deep" in error.message for error in errors)


# --- sizes and text -----------------------------------------------------------------------


def test_size_is_checked_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "sparse.yaml"
    with path.open("wb") as handle:
        handle.truncate(2**40)  # a terabyte that would take hours to read
    started = time.perf_counter()
    with pytest.raises(ConfigError, match="the file is too large: 1099511627776 bytes"):
        load_source(path, "sparse.yaml")
    assert time.perf_counter() - started < HANG_GUARD


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_endless_device_is_refused_after_the_limit() -> None:
    with pytest.raises(ConfigError, match="the file is too large: more than 10485760 bytes"):
        load_source(Path("/dev/zero"), "/dev/zero")


def test_a_line_of_exactly_the_limit_loads(tmp_path: Path) -> None:
    value = "x" * (MAX_LINE_CHARS - len("  description: "))
    workflow = load_workflow(write(tmp_path, f"{GRAPH}  description: {value}\n"), environ={})
    assert workflow.graph.description == value


def test_long_source_lines_are_cut_in_messages(tmp_path: Path) -> None:
    path = write(tmp_path, GRAPH + "  id: [" + "x, " * 2000 + "]\n")
    (error,) = errors_of(path)
    assert error.message.startswith("id must be text")
    assert error.source_line == ("  id: [" + "x, " * 2000)[:200] + " ..."


def test_escape_sequences_written_in_yaml_are_not_echoed(tmp_path: Path) -> None:
    path = write(tmp_path, GRAPH + '  "\\e[2Jnodez": 1\n')
    workflow, issues = validate_workflow(path, environ={})
    assert workflow is not None
    (warning,) = issues
    assert "unknown key '\\x1b[2Jnodez'" in warning.message
    assert warning.path == "graph.\\x1b[2Jnodez"


def test_utf8_line_separators_keep_line_numbers_right(tmp_path: Path) -> None:
    path = write(
        tmp_path, "graph:\n  id: a\u2028b\n  start: 1\n  nodes: [{id: a, type: passthrough}]\n"
    )
    (error,) = errors_of(path)
    assert (error.line, error.source_line) == (3, "  start: 1")


# --- values -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("!!int soon", "invalid value 'soon' for !!int: invalid literal"),
        ("!!float x", "invalid value 'x' for !!float"),
        ("!!bool maybe", "invalid value 'maybe' for !!bool"),
        ("!!timestamp x", "invalid value 'x' for !!timestamp"),
        ("!!binary 'not base64 at all'", "invalid value 'not base64 at all' for !!binary"),
        ("1" * 5000, "for !!int: Exceeds the limit"),
        ("0x" + "f" * 300, "the number is too large"),
    ],
)
def test_values_a_tag_cannot_build_are_located(tmp_path: Path, value: str, message: str) -> None:
    (error,) = errors_of(write(tmp_path, f"{GRAPH}  timeout: {value}\n"))
    assert message in error.message
    assert (error.line, error.col) == (4, 12)


def test_every_duplicate_key_is_reported(tmp_path: Path) -> None:
    errors = errors_of(write(tmp_path, "a: 1\nb: 2\na: 3\nb: 4\n"))
    assert [(e.line, e.message) for e in errors] == [
        (3, 'duplicate key "a" (first written at line 1)'),
        (4, 'duplicate key "b" (first written at line 2)'),
    ]


def test_keys_that_read_the_same_are_duplicates(tmp_path: Path) -> None:
    (error,) = errors_of(write(tmp_path, "1: a\n'1': b\n"))
    assert error.message == 'duplicate key "1" (first written at line 1)'


# --- placeholders -------------------------------------------------------------------------


def test_unclosed_defaults_by_the_thousand_answer_quickly(tmp_path: Path) -> None:
    path = write(tmp_path, "vars:\n  A: '" + "${A:-" * 19_000 + "'\n" + GRAPH)
    started = time.perf_counter()
    workflow, issues = validate_workflow(path, environ={})
    assert time.perf_counter() - started < HANG_GUARD
    assert workflow is not None
    assert "does not start a placeholder" in issues[0].message


def test_vars_may_be_reused_within_the_budget(tmp_path: Path) -> None:
    prompt = "You are careful. " * 500  # 8.5 kB
    uses = "".join(
        f"    - {{id: n{i}, type: literal, config: {{content: '${{P}}'}}}}\n" for i in range(200)
    )
    path = write(tmp_path, f"vars:\n  P: {prompt}\ngraph:\n  start: n0\n  nodes:\n{uses}")
    workflow = load_workflow(path, environ={})
    assert len(workflow.graph.nodes) == 200


# --- large graphs -------------------------------------------------------------------------


def test_messages_about_large_graphs_stay_short_and_fast(tmp_path: Path) -> None:
    count = 2000
    nodes = "".join(f"    - {{id: n{i}, type: passthrough}}\n" for i in range(count))
    edges = "".join(f"    - {{from: n{i}, to: n{i}x}}\n" for i in range(count))
    path = write(tmp_path, f"graph:\n  start: n0\n  nodes:\n{nodes}  edges:\n{edges}")
    started = time.perf_counter()
    errors = errors_of(path)
    # A bound against quadratic message building (minutes), not a timing target: parsing 2,000
    # nodes of YAML alone takes seconds on a loaded 2-core machine.
    assert time.perf_counter() - started < HANG_GUARD
    assert len(errors) == count
    assert errors[0].message == (
        "to names 'n0x', which is not a node id (nodes: n0, n1, n2, n3, n4, n5, n6, n7, n8, n9, "
        "... (2000 in all)); did you mean 'n0'?"
    )
    assert "did you mean" not in errors[-1].message  # suggestions are bounded per file


def test_a_long_cycle_loads_and_its_nodes_are_shown_shortened(tmp_path: Path) -> None:
    count = 2000  # iterative cycle detection: no recursion limit
    nodes = "".join(f"    - {{id: n{i}, type: passthrough}}\n" for i in range(count))
    edges = "".join(f"    - {{from: n{i}, to: n{(i + 1) % count}}}\n" for i in range(count))
    graph = f"graph:\n  nodes:\n{nodes}  edges:\n{edges}"
    workflow, issues = validate_workflow(
        write(tmp_path, graph + "  start: n0\n"), environ={}, advice=True
    )
    assert workflow is not None
    # Valid, and warned about: the ring has no end and no way out (its nodes shown shortened).
    assert [(i.severity, i.message.split(":")[0]) for i in issues] == [
        ("warning", "every node has an outgoing edge and the graph names no end"),
        ("warning", "the cycle n0, n1, n2, n3, n4, n5, n6, n7, n8, n9, n10, n11, ... (2000 nodes) "
         "has no way out"),
    ]
    (error,) = errors_of(write(tmp_path, graph + "  start: [n0, n7]\n"))
    assert error.message == (
        "start names n0, n7, which are in one cycle (n0, n1, n2, n3, n4, n5, n6, n7, n8, n9, "
        "n10, n11, ... (2000 nodes)); a cycle can have only one start node"
    )