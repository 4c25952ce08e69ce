"""Property: whatever a workflow file holds, loading it succeeds or raises ConfigError.

Inputs are generated (junk in a valid document, arbitrary text) and mutated (the repository's
workflows and the invalid corpus, with bytes, lines, keys, values and types changed).
"""

from __future__ import annotations

import copy
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devall_cli.config.yaml_source import load_source
from devall_cli.errors import ConfigError
from devall_cli.workflow.loader import load_workflow, validate_workflow
from tests.unit.config.hostile_files import REPO_ROOT, mutated_files

VALID: dict[str, Any] = {
    "version": "0.4.0",
    "vars": {"MODEL": "m", "PORT": 8001},
    "graph": {
        "id": "fuzz",
        "start": ["a"],
        "end": ["c"],
        "nodes": [
            {
                "id": "a",
                "type": "agent",
                "config": {
                    "provider": "scripted",
                    "name": "${MODEL}",
                    "params": {"timeout": 5, "temperature": 0.1},
                    "tooling": [
                        {
                            "type": "mcp_remote",
                            "prefix": "r",
                            "config": {"server": "http://127.0.0.1:${PORT}/mcp", "timeout": 3},
                        },
                        {
                            "type": "mcp_local",
                            "config": {"command": "srv", "args": ["x"], "wait_for_log": "ready"},
                        },
                    ],
                    "script": [
                        {"tool_calls": [{"name": "r_t", "arguments": {}}]},
                        {"content": "x"},
                    ],
                },
            },
            {"id": "b", "type": "literal", "config": {"content": "hi"}},
            {"id": "c", "type": "passthrough"},
        ],
        "edges": [
            {"from": "a", "to": "b", "condition": {"type": "keyword", "config": {"any": ["x"]}}},
            {"from": "b", "to": "c"},
        ],
    },
}

JUNK = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(["", "a", "${", "${X}", "${MODEL}", "$${Y}", "mcp", "(", "http://", "agent"])
    | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(["id", "type", "config", "from", "x"]), children, max_size=3
        )
    ),
    max_leaves=6,
)


def paths(tree: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(tree, dict):
        for key, value in tree.items():
            found.extend(paths(value, (*prefix, key)))
    elif isinstance(tree, list):
        for index, value in enumerate(tree):
            found.extend(paths(value, (*prefix, index)))
    return found


ALL_PATHS = paths(VALID)[1:]


def replaced(tree: Any, path: tuple[Any, ...], value: Any) -> Any:
    copied = copy.deepcopy(tree)
    holder = copied
    for part in path[:-1]:
        holder = holder[part]
    holder[path[-1]] = value
    return copied


def test_the_base_document_is_valid() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "flow.yaml"
        path.write_text(json.dumps(VALID))
        assert load_workflow(path, environ={}).name == "fuzz"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(ALL_PATHS), JUNK), min_size=1, max_size=3))
def test_mutated_workflows_load_or_raise_config_error(
    mutations: list[tuple[tuple[Any, ...], Any]],
) -> None:
    document: Any = VALID
    for where, value in mutations:
        try:
            document = replaced(document, where, value)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed this path
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "flow.yaml"
        path.write_text(json.dumps(document, allow_nan=True))
        try:
            load_workflow(path, environ={})
        except ConfigError as exc:
            assert exc.issues
            assert all(issue.file == str(path) for issue in exc.issues)
        workflow, issues = validate_workflow(path, environ={})
        assert (workflow is None) == any(i.severity == "error" for i in issues)


YAML_ALPHABET = list("graph:start nodes-[]{}\n\t &*!|>'\"#%@`,?${}0x")


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(YAML_ALPHABET), max_size=120)
    | st.binary(max_size=60).map(lambda raw: raw.decode("latin-1"))
)
def test_arbitrary_text_never_crashes_the_loader(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "flow.yaml"
        path.write_text(text, encoding="utf-8")
        workflow, issues = validate_workflow(path, environ={})
        assert workflow is not None or issues


# --- mutated files and restructured workflows ---------------------------------------------

ENV = {"BASE_URL": "http://127.0.0.1:9/v1", "API_KEY": "sk-fuzz-key-123"}
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
WORKFLOW_DATA = [
    load_source(path, path.name).data for path in sorted((REPO_ROOT / "workflows").glob("*.yaml"))
] + [VALID]


def assert_loads_or_raises_config_error(path: Path) -> None:
    """The property: success, or a ConfigError whose issues are located and printable."""
    try:
        load_workflow(path, environ=ENV)
    except ConfigError as exc:
        assert exc.issues
        for issue in exc.issues:
            assert issue.file == str(path)
            assert issue.col >= 1 if issue.line else issue.col == 0
            assert not CONTROL.search(issue.message + issue.path + issue.source_line)


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(mutated_files())
def test_mutated_files_load_or_raise_config_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "flow.yaml"
        path.write_bytes(data)
        assert_loads_or_raises_config_error(path)


KEY_VARIANTS = st.sampled_from(["", "<<", "${X}", "id", "type", "config", "nodes", "\u00e9t\u00e9"])
VALUE_VARIANTS = JUNK | st.sampled_from(
    ["${MISSING}", "${A:-${B:-x}}", "$${X}", "${API_KEY}", "${BASE_URL}/x", "${" * 3, "x" * 300]
)


@st.composite
def restructured_workflows(draw: st.DrawFn) -> Any:
    """A valid workflow with values replaced, keys renamed and types changed."""
    document = copy.deepcopy(draw(st.sampled_from(WORKFLOW_DATA)))
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(paths(document)[1:] or [()]))
        if not path:
            break
        holder = document
        for part in path[:-1]:
            holder = holder[part]
        value = holder[path[-1]]
        action = draw(st.sampled_from(["value", "key", "wrap", "text", "drop", "copy"]))
        if action == "value":
            holder[path[-1]] = draw(VALUE_VARIANTS)
        elif action == "key" and isinstance(holder, dict):
            holder[draw(KEY_VARIANTS | st.just(str(path[-1]).upper()))] = holder.pop(path[-1])
        elif action == "wrap":
            holder[path[-1]] = draw(st.sampled_from([[value], {"config": value}, {"x": value}]))
        elif action == "text":
            holder[path[-1]] = json.dumps(value)
        elif action == "drop":
            del holder[path[-1]]
        elif isinstance(holder, list):
            holder.append(copy.deepcopy(value))
    return document


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(restructured_workflows(), st.booleans())
def test_restructured_workflows_load_or_raise_config_error(document: Any, as_yaml: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "flow.yaml"
        if as_yaml:
            from ruamel.yaml import YAML

            with path.open("w", encoding="utf-8") as handle:
                YAML(typ="safe", pure=True).dump(document, handle)
        else:
            path.write_text(json.dumps(document, allow_nan=True))
        assert_loads_or_raises_config_error(path)
