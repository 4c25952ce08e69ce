"""`devall schema` in step with the loader: same keys, every registered kind, same verdicts."""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from ruamel.yaml import YAML

import devall_cli
from devall_cli.config.json_shapes import accepted_keys
from devall_cli.config.schema import KeySpec
from devall_cli.edges import CONDITION_TYPES, PROCESSOR_TYPES
from devall_cli.memory.base import MEMORY_STORES
from devall_cli.nodes import NODE_TYPES
from devall_cli.providers.registry import PROVIDERS
from devall_cli.thinking.base import THINKING_TYPES
from devall_cli.tools.kinds.registry import TOOLING_TYPES
from devall_cli.workflow.json_schema import workflow_schema

ROOT = Path(__file__).resolve().parents[3]
# A ChatDev checkout's yaml_instance/ folder to check the schema against, when one is at hand.
CHATDEV = Path(os.environ.get("DEVALL_CHATDEV_DIR", "chatdev-not-set")) / "yaml_instance"
# Files of workflows/ that are not whole workflows: bare subgraph graphs (answers files for
# human nodes are JSON, which the glob leaves out).
NOT_WORKFLOWS = {"polish.yaml"}

SCHEMA = workflow_schema()
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def load_yaml(path: Path) -> Any:
    return YAML(typ="safe").load(path.read_text(encoding="utf-8"))


def objects(schema: Any) -> Iterator[dict[str, Any]]:
    """Every object schema with properties, anywhere in the schema."""
    if isinstance(schema, dict):
        if "properties" in schema:
            yield schema
        for value in schema.values():
            yield from objects(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from objects(item)


def config_of(block: dict[str, Any], name: str) -> dict[str, Any]:
    """The `config` schema a typed block gives the kind `name`."""
    for rule in block["allOf"]:
        if rule["if"]["properties"]["type"]["const"] == name:
            config: dict[str, Any] = rule["then"]["properties"]["config"]
            return config
    raise AssertionError(f"no config schema for type {name!r}")


def props(schema: dict[str, Any]) -> set[str]:
    return set(schema["properties"])


def agent_config(schema: dict[str, Any] = SCHEMA) -> dict[str, Any]:
    return config_of(schema["$defs"]["node"], "agent")


def test_the_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


# The registry tests build the schema afresh: test modules register kinds of their own when
# imported, and with several workers that may happen after this module's SCHEMA was built.


def test_every_node_type_and_its_config_keys() -> None:
    node = workflow_schema()["$defs"]["node"]
    assert node["properties"]["type"]["enum"] == NODE_TYPES.names()
    for name, kind in NODE_TYPES.all().items():
        config = config_of(node, name)
        assert props(config) == accepted_keys(kind.keys), name
        assert config["additionalProperties"] is False  # unknown keys in a node are errors


def test_every_tooling_type_and_its_config_keys() -> None:
    entry = workflow_schema()["$defs"]["tooling_entry"]
    assert entry["properties"]["type"]["enum"] == sorted(TOOLING_TYPES.all())
    assert entry["additionalProperties"] is False
    for name, kind in TOOLING_TYPES.all().items():
        assert accepted_keys(kind.keys), f"tooling type {name} declares no keys"
        assert props(config_of(entry, name)) == accepted_keys(kind.keys), name


def test_every_condition_processor_memory_and_thinking_kind() -> None:
    schema = workflow_schema()
    edge = schema["$defs"]["edge"]
    condition = edge["properties"]["condition"]["anyOf"][1]
    stores = schema["$defs"]["graph"]["properties"]["memory"]["items"]
    thinking = agent_config(schema)["properties"]["thinking"]
    for registry, block in (
        (CONDITION_TYPES, condition),
        (PROCESSOR_TYPES, edge["properties"]["process"]),
        (MEMORY_STORES, stores),
        (THINKING_TYPES, thinking),
    ):
        assert block["properties"]["type"]["enum"] == registry.names()
        for name, kind in registry.all().items():
            assert props(config_of(block, name)) == accepted_keys(kind.keys), name


def test_every_provider_and_the_keys_it_reads() -> None:
    agent = agent_config(workflow_schema())
    assert [p for p in agent["properties"]["provider"]["enum"] if p] == PROVIDERS.names()
    for kind in PROVIDERS.all().values():
        assert kind.keys <= props(agent), kind.name


# Packages whose KeySpecs read other files than workflows: `devall test`'s test files.
OTHER_FORMATS = ("devall_cli.testing.",)


def key_specs() -> Iterator[tuple[str, KeySpec]]:
    """Every KeySpec the loader's modules hold (module level, alone or in a mapping)."""
    for info in pkgutil.walk_packages(devall_cli.__path__, prefix="devall_cli."):
        if info.name.endswith("__main__") or info.name.startswith(OTHER_FORMATS):
            continue
        module = importlib.import_module(info.name)
        for attr, value in vars(module).items():
            found = value.values() if isinstance(value, dict) else [value]
            for item in found:
                if isinstance(item, KeySpec):
                    yield f"{info.name}.{attr}", item


def test_every_key_set_of_the_loader_is_in_the_schema() -> None:
    # A block the loader learns (a new KeySpec) must be placed in the schema too.
    shapes = [props(schema) for schema in objects(SCHEMA)]
    specs = list(key_specs())
    assert len(specs) > 30
    for where, spec in specs:
        keys = accepted_keys(spec)
        if keys:
            assert keys in shapes, f"{where}: keys {sorted(keys)} are not in the schema"


def workflow_files() -> list[Path]:
    files = sorted((ROOT / "workflows").rglob("*.yaml"))
    return [path for path in files if path.name not in NOT_WORKFLOWS]


@pytest.mark.parametrize("path", workflow_files(), ids=lambda p: p.name)
def test_every_example_workflow_matches_the_schema(path: Path) -> None:
    errors = [error.message for error in VALIDATOR.iter_errors(load_yaml(path))]
    assert errors == []


@pytest.mark.skipif(not CHATDEV.is_dir(), reason="no ChatDev checkout to compare with")
def test_chatdevs_own_workflows_match_the_schema() -> None:
    failed = {}
    for path in sorted(CHATDEV.glob("*.yaml")):
        errors = [error.message for error in VALIDATOR.iter_errors(load_yaml(path))]
        if errors:
            failed[path.name] = errors[:2]
    assert failed == {}


def test_unknown_keys_in_a_node_are_rejected_as_the_loader_does() -> None:
    data = load_yaml(ROOT / "tests" / "data" / "invalid" / "unknown_keys_in_node.yaml")
    messages = " ".join(error.message for error in VALIDATOR.iter_errors(data))
    assert "'tolling' was unexpected" in messages


def test_an_unknown_key_at_graph_level_is_allowed_as_the_loader_only_warns() -> None:
    data = {"graph": {"id": "g", "start": ["a"], "nodes": [], "edgs": []}}
    assert list(VALIDATOR.iter_errors(data)) == []


def test_a_new_node_type_with_a_nested_block_needs_no_edit_outside_its_module() -> None:
    from devall_cli.config.json_shapes import array_of, keys_object
    from devall_cli.nodes.base import NodeType

    inner = KeySpec(known=frozenset({"name", "weight"}))
    kind = NodeType(
        "weighing",
        "a node type of this test",
        KeySpec(known=frozenset({"items", "limit"})),
        parse=lambda ck, config, path: config,
        run=lambda run: None,  # type: ignore[arg-type,return-value]
        shapes=lambda: {"items": array_of(keys_object(inner, strict=True))},
    )
    NODE_TYPES.register(kind)
    try:
        node = workflow_schema()["$defs"]["node"]
        (rule,) = [r for r in node["allOf"] if r["if"]["properties"]["type"]["const"] == "weighing"]
        items = rule["then"]["properties"]["config"]["properties"]["items"]
        assert set(items["items"]["properties"]) == {"name", "weight"}
        assert items["items"]["additionalProperties"] is False
    finally:
        NODE_TYPES.unregister("weighing")
    assert "weighing" not in NODE_TYPES.names()
