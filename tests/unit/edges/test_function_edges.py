"""Function conditions (`functions/edge/`) and function processors (`functions/edge_processor/`):
found by reading the source when the file loads, imported and called when a run builds them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from devall_cli.config.model import ConditionConfig, FunctionCondition
from devall_cli.edges.function_processor import FunctionProcessor, apply_result
from devall_cli.errors import ConfigError
from devall_cli.messages import USER, Message
from tests.unit.edges.helpers import condition, edge_errors, load_edge, processor, write

CONDITIONS = '''\
import re


def has_done(text):
    """Met when the text says DONE."""
    return "DONE" in text


def score_of(text, minimum=7):
    match = re.search(r"(\\d+)/10", text)
    return bool(match) and int(match.group(1)) >= minimum


def two_required(text, strict):
    return True


def keyword_only(text, *, mode):
    return True


def nothing():
    return True


def explode(text):
    raise ValueError("cannot decide")


is_long = lambda text: len(text) > 10  # noqa: E731
'''

PROCESSORS = '''\
def shout(text, state):
    state["calls"] = state.get("calls", 0) + 1
    return text.upper() + "!" * state["calls"]


def describe_state(text, state):
    return f"{sorted(state)} {state['vars']}"


def as_mapping(text, state):
    return {"content": text[::-1], "metadata": {"reversed": True}}


def one_argument(text):
    return text
'''


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    write(tmp_path / "functions" / "edge" / "rules.py", CONDITIONS)
    write(tmp_path / "functions" / "edge_processor" / "shape.py", PROCESSORS)
    return tmp_path


# --- conditions ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    ["has_done", {"type": "function", "config": {"name": "has_done"}}, " has_done "],
)
def test_short_and_long_forms_find_the_function_and_keep_its_module(
    folder: Path, value: Any
) -> None:
    _, edge = load_edge(folder, condition=value)
    file = str(folder / "functions" / "edge" / "rules.py")
    assert edge.condition == ConditionConfig("function", FunctionCondition("has_done", file))


def test_a_function_condition_decides(folder: Path) -> None:
    holds = condition(folder, "has_done")
    assert (holds("all DONE"), holds("not yet")) == (True, False)
    score = condition(folder, {"type": "function", "config": {"name": "score_of"}})
    assert (score("8/10"), score("3/10")) == (True, False)
    assert condition(folder, "is_long")("a long enough text") is True  # a lambda works too


def test_a_function_named_with_its_module(folder: Path) -> None:
    write(folder / "functions" / "edge" / "more.py", "def has_done(text):\n    return False\n")
    (error,) = edge_errors(folder, condition="has_done")
    assert "defined in several modules" in error.message and "'<module>:has_done'" in error.message
    assert condition(folder, "rules:has_done")("DONE") is True
    assert condition(folder, "more:has_done")("DONE") is False
    assert shape(folder, "shape:shout")("a").text == "A!"


@pytest.mark.parametrize(("name", "met"), [("true", True), ("TRUE", True), ("False", False)])
def test_true_and_false_are_built_in_and_need_no_folder(
    tmp_path: Path, name: str, met: bool
) -> None:
    holds = condition(tmp_path, {"type": "function", "config": {"name": name}})
    assert holds("anything") is met


def test_a_missing_condition_function_is_an_error_at_its_name(folder: Path) -> None:
    (error,) = edge_errors(folder, condition={"type": "function", "config": {"name": "has_dne"}})
    assert error.path == "graph.edges[0].condition.config.name"
    assert error.message.startswith("edge condition: unknown function 'has_dne' in ")
    assert "did you mean 'has_done'?" in error.message
    (error,) = edge_errors(folder, condition="is_ready")
    assert error.path == "graph.edges[0].condition"  # the short form: at the condition itself


def test_without_an_edge_folder_the_message_says_where_it_looked(tmp_path: Path) -> None:
    (error,) = edge_errors(tmp_path, condition="is_ready")
    assert error.message.startswith("edge condition function 'is_ready' cannot be found: no ")
    write(tmp_path / "functions" / "tools.py", "def t():\n    return 1\n")
    (error,) = edge_errors(tmp_path, condition="is_ready")
    assert error.message == (
        "edge condition function 'is_ready' cannot be found: functions directory not found: "
        f"{tmp_path / 'functions' / 'edge'}"
    )


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("two_required", "but it requires 2 arguments"),
        ("keyword_only", "also requires the keyword-only argument(s) mode"),
        ("nothing", "but it takes no argument"),
    ],
)
def test_a_condition_that_cannot_take_the_text_is_an_error(
    folder: Path, name: str, problem: str
) -> None:
    (error,) = edge_errors(folder, condition=name)
    assert f"edge condition function '{name}' (rules.py:" in error.message
    assert "is called with one argument (the message text)" in error.message
    assert problem in error.message


def test_the_edge_folder_can_be_named_by_chatdevs_variable(tmp_path: Path) -> None:
    write(tmp_path / "mine" / "checks.py", "def ok(text):\n    return text == 'ok'\n")
    environ = {"MAC_EDGE_FUNCTIONS_DIR": str(tmp_path / "mine")}
    _, edge = load_edge(tmp_path, environ=environ, condition="ok")
    assert edge.condition.config == FunctionCondition("ok", str(tmp_path / "mine" / "checks.py"))


def test_validate_reads_the_condition_module_without_running_it(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    write(
        tmp_path / "functions" / "edge" / "side.py",
        f"open({str(marker)!r}, 'w').close()\n\ndef ok(text):\n    return True\n",
    )
    load_edge(tmp_path, condition="ok")
    assert not marker.exists()
    condition(tmp_path, "ok")  # building it for a run imports the module
    assert marker.exists()


def test_a_module_that_fails_to_import_is_a_config_error_naming_it(tmp_path: Path) -> None:
    module = write(
        tmp_path / "functions" / "edge" / "bad.py",
        "def ok(text):\n    return True\n\nraise RuntimeError('no config')\n",
    )
    with pytest.raises(ConfigError) as caught:
        condition(tmp_path, "ok")
    assert caught.value.message == (
        f"{module}:4: cannot import function module: RuntimeError: no config"
    )


# --- processors ---------------------------------------------------------------------------


def shape(folder: Path, name: str) -> Any:
    return processor(folder, process={"type": "function", "config": {"name": name}})


def test_a_processor_function_is_found_and_kept_with_its_module(folder: Path) -> None:
    _, edge = load_edge(folder, process={"type": "function", "config": {"name": "shout"}})
    assert edge.process is not None
    file = str(folder / "functions" / "edge_processor" / "shape.py")
    assert edge.process.config == FunctionProcessor("shout", file)


def test_the_function_gets_the_text_and_one_state_for_the_run(folder: Path) -> None:
    process = shape(folder, "shout")
    first, second = process("hi"), process("ho")
    assert (first.text, second.text) == ("HI!", "HO!!")  # the state outlives one call
    described = shape(folder, "describe_state")("x")
    assert described.text == "['graph_directory', 'vars', 'workflow_dir'] {}"


def test_a_mapping_sets_the_content_and_merges_metadata(folder: Path) -> None:
    message = shape(folder, "as_mapping")("abc")
    assert (message.text, dict(message.meta)) == ("cba", {"m": 1, "reversed": True})


@pytest.mark.parametrize(
    ("result", "text"),
    [
        ("new", "new"),
        ({"content": "c"}, "c"),
        ({"content": None}, ""),
        ({"content": ["a", "b"]}, "['a', 'b']"),
        ({"metadata": {"k": 2}}, "old"),
        (42, "42"),
    ],
)
def test_what_a_processor_function_returns_becomes_the_payload(result: Any, text: str) -> None:
    message = Message(role=USER, text="old", source="a")
    processed = apply_result(message, result)
    assert processed is not None
    assert (processed.text, processed.role, processed.source) == (text, USER, "a")


@pytest.mark.parametrize("result", [None, {"drop": True}, {"drop": 1, "content": "x"}])
def test_none_or_drop_drops_the_payload(result: Any) -> None:
    assert apply_result(Message(role=USER, text="old"), result) is None


def test_a_processor_that_cannot_take_text_and_state_is_an_error(folder: Path) -> None:
    (error,) = edge_errors(folder, process={"type": "function", "config": {"name": "one_argument"}})
    assert error.path == "graph.edges[0].process.config.name"
    assert "is called with 2 arguments (the message text, the run's state)" in error.message
    assert "but it takes only 1 argument" in error.message


def test_a_missing_processor_function_and_a_missing_name_are_errors(folder: Path) -> None:
    (error,) = edge_errors(folder, process={"type": "function", "config": {"name": "shuot"}})
    assert error.message.startswith("edge processor: unknown function 'shuot' in ")
    assert "did you mean 'shout'?" in error.message
    (error,) = edge_errors(folder, process={"type": "function", "config": {}})
    assert error.path == "graph.edges[0].process.config.name"
    assert "name is required" in error.message
