"""Reading workflow files: positions of keys and items, and located parse errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from devall_cli.config.yaml_source import format_path, load_source
from devall_cli.errors import ConfigError

SOURCE = """\
graph:
  start: [a]
  nodes:
    - id: a
      config:
        args: [x, 2]
        empty:
  anchor: &base {k: 1}
  merged:
    <<: *base
    own: 2
"""


def load(tmp_path: Path, text: str | bytes, name: str = "flow.yaml"):  # type: ignore[no-untyped-def]
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return load_source(path, name)


def test_plain_data_comes_out(tmp_path: Path) -> None:
    doc = load(tmp_path, SOURCE)
    assert doc.data["graph"]["nodes"][0]["config"]["args"] == ["x", 2]
    assert type(doc.data["graph"]["nodes"][0]["config"]["args"][1]) is int
    assert doc.data["graph"]["merged"] == {"own": 2, "k": 1}


def test_positions_of_keys_values_and_items(tmp_path: Path) -> None:
    doc = load(tmp_path, SOURCE)
    args = ("graph", "nodes", 0, "config", "args")
    assert doc.position(args) == (6, 15)
    assert doc.position(args, at_key=True) == (6, 9)
    assert doc.position((*args, 1)) == (6, 19)
    assert doc.position(("graph", "nodes", 0)) == (4, 7)


def test_missing_value_points_at_its_key(tmp_path: Path) -> None:
    doc = load(tmp_path, SOURCE)
    assert doc.position(("graph", "nodes", 0, "config", "empty")) == (7, 9)


def test_unknown_paths_fall_back_to_the_nearest_ancestor(tmp_path: Path) -> None:
    doc = load(tmp_path, SOURCE)
    assert doc.position(("graph", "nodes", 0, "config", "nope")) == (5, 7)


def test_merged_keys_point_where_their_value_is_written(tmp_path: Path) -> None:
    doc = load(tmp_path, SOURCE)
    assert doc.position(("graph", "merged", "k")) == (8, 21)
    assert doc.position(("graph", "merged", "k"), at_key=True) == (8, 18)
    assert doc.position(("graph", "merged", "own")) == (11, 10)


def test_issue_carries_file_path_and_source_line(tmp_path: Path) -> None:
    doc = load(tmp_path, SOURCE)
    issue = doc.issue(("graph", "nodes", 0, "config", "args", 1), "bad")
    assert issue.headline() == "flow.yaml:6:19: graph.nodes[0].config.args[1]: bad"
    assert issue.source_line == "        args: [x, 2]"


def test_format_path() -> None:
    assert format_path(("graph", "nodes", 1, "config", "tooling", 0)) == (
        "graph.nodes[1].config.tooling[0]"
    )
    assert format_path(()) == ""


@pytest.mark.parametrize(
    ("text", "line", "col", "message"),
    [
        ("graph:\n  a: 1\n  a: 2\n", 3, 3, 'duplicate key "a"'),
        ("graph:\n\tstart: a\n", 2, 1, "tab characters"),
        ("graph: [a, b\n", 2, 1, "invalid YAML"),
        ("graph: 'open\n", 2, 1, "invalid YAML"),
        ("graph: *nowhere\n", 1, 8, "undefined alias"),
        ("a: 1\n---\nb: 2\n", 2, 1, "single document"),
    ],
)
def test_yaml_errors_are_located(
    tmp_path: Path, text: str, line: int, col: int, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, text)
    (issue,) = caught.value.issues
    assert (issue.file, issue.line, issue.col) == ("flow.yaml", line, col)
    assert message in issue.message


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file") as caught:
        load_source(tmp_path / "missing.yaml", "missing.yaml")
    assert caught.value.issues[0].file == "missing.yaml"


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory"):
        load_source(tmp_path, "some/dir")


def test_non_utf8_is_located(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, b"graph:\n  id: caf\xe9\n")
    issue = caught.value.issues[0]
    assert (issue.line, issue.col) == (2, 10)
    assert "UTF-8" in issue.message


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    assert load(tmp_path, "\ufeffgraph: {}\n".encode()).data == {"graph": {}}


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "empty"), ("# only\n", "empty"), ("- a\n", "mapping"), ("just text\n", "mapping")],
)
def test_empty_or_non_mapping_top_level(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load(tmp_path, text)


def test_custom_tags_are_read_as_text(tmp_path: Path) -> None:
    assert load(tmp_path, "a: !custom value\n").data == {"a": "value"}


def test_anchored_booleans_stay_booleans(tmp_path: Path) -> None:
    assert load(tmp_path, "a: &t true\nb: *t\n").data == {"a": True, "b": True}


# Large files are composed by libyaml (yaml_libyaml.py); what comes out must be what ruamel
# alone reads: the same data, positions and located problems.
RICH = """\
n@: &a@
  plain: text @
  numbers: [0x1F, 1.5e3, 0o17, 012]
  flags: [yes, off, true, ~, null]
  quoted: "q\\u00e9 @"
  single: 'it''s'
  literal: |
    line one
      indented
  folded: >-
    folded
    text
  flow: {k: v, list: [1, {x: y}]}
  empty:
  items:
    - first
    - &i@ {z: 1}
    - *i@
m@:
  <<: *a@
  own: 1
  ? long key
  : value
"""


def _both_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> list[object]:
    from devall_cli.config import yaml_libyaml
    from devall_cli.config.yaml_source import parse_source

    path = tmp_path / "big.yaml"
    path.write_text(text)
    fast_answers: list[object] = []
    compose = yaml_libyaml.compose_libyaml

    def spy(*args: object) -> object:
        fast_answers.append(root := compose(*args))  # type: ignore[arg-type]
        return root

    results: list[object] = []
    for fast in (True, False):
        monkeypatch.setattr(yaml_libyaml, "compose_libyaml", spy)
        if not fast:
            monkeypatch.setattr(yaml_libyaml, "MIN_CHARS", len(text) + 1)
        try:
            doc = parse_source(path, "big.yaml")
            results.append((doc.data, doc.key_positions, doc.value_positions))
        except ConfigError as exc:
            results.append([(i.line, i.col, i.message) for i in exc.issues])
    assert len(fast_answers) == 1, "the large file was not composed by libyaml"
    return results


def test_large_files_read_alike_through_libyaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "".join(RICH.replace("@", str(i)) for i in range(60))
    fast, slow = _both_paths(tmp_path, monkeypatch, text)
    assert fast == slow
    data = fast[0]  # type: ignore[index]
    assert data["m3"]["plain"] == "text 3" and data["n3"]["numbers"] == [31, 1500.0, 15, 12]
    assert data["n3"]["flags"] == ["yes", "off", True, None, None]


def test_problems_of_large_files_are_located_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "".join(RICH.replace("@", str(i)) for i in range(60))
    text += f"dup:\n  k: 1\n  k: 2\n  <<: [x]\nn0: again\nhuge: {'9' * 400}\n"
    fast, slow = _both_paths(tmp_path, monkeypatch, text)
    assert fast == slow
    assert fast == [
        (1385, 1, 'duplicate key "n0" (first written at line 1)'),
        (1383, 3, 'duplicate key "k" (first written at line 1382)'),
        (1384, 7, "a merge key (<<) takes a mapping or a list of mappings"),
        (1386, 7, "the number is too large (more than 1024 bits)"),
    ]
