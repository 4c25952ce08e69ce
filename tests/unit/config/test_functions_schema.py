"""Function tools: discovery in the functions directory and schemas from signatures."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from devall_cli.config.functions import (
    FunctionInfo,
    FunctionResolutionError,
    load_function,
    resolve_function_tools,
)
from devall_cli.tools.kinds.function import FunctionRef
from tests.conftest import DATA_DIR, REPO_ROOT

BASIC = DATA_DIR / "functions" / "basic"
BROKEN = DATA_DIR / "functions" / "broken"
DUPLICATE = DATA_DIR / "functions" / "duplicate"
OTHER = DATA_DIR / "functions" / "other"


def resolve(directory: Path, *names: str) -> list[FunctionInfo]:
    return resolve_function_tools(directory, [FunctionRef(name) for name in names])


def one(directory: Path, name: str) -> FunctionInfo:
    (info,) = resolve(directory, name)
    return info


def test_schema_of_a_typical_tool() -> None:
    info = one(BASIC, "get_weather")
    assert info.name == "get_weather"
    assert info.module == "weather"
    assert Path(info.file) == BASIC / "weather.py"
    assert info.description == "Get the weather forecast for a city."
    assert info.accepts_context is False
    assert info.input_schema == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name, e.g. Paris"},
            "days": {"type": "integer", "default": 1},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
            "detail": {"type": "string", "enum": ["short", "long"], "default": "short"},
            "hours": {"type": "array", "items": {"type": "integer"}, "default": None},
        },
        "required": ["city"],
    }
    json.dumps(info.input_schema)  # the schema is sent to the model as JSON


def test_every_supported_annotation() -> None:
    props = one(BASIC, "typed_everything").input_schema["properties"]
    assert props["text"] == {"type": "string"}
    assert props["count"] == {"type": "integer"}
    assert props["ratio"] == {"type": "number"}
    assert props["flag"] == {"type": "boolean"}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["weights"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert props["pair"] == {"type": "array", "items": {"type": "integer"}, "default": [1, 2]}
    assert props["mode"] == {"type": "integer", "enum": [1, 2, 3], "default": 2}
    assert props["options"] == {"type": "object", "additionalProperties": {}, "default": None}
    assert props["labelled"] == {"type": "string", "description": "An optional label"}


def test_optional_parameters_are_not_required_and_unknown_types_accept_anything() -> None:
    schema = one(BASIC, "typed_everything").input_schema
    assert schema["required"] == ["text", "count", "ratio", "flag", "tags", "weights",
                                  "anything", "station"]
    assert schema["properties"]["maybe"] == {"type": "integer"}
    assert schema["properties"]["maybe_new"] == {"type": "integer"}
    assert schema["properties"]["anything"] == {}
    assert schema["properties"]["station"] == {}  # a class the builder does not know
    assert schema["properties"]["untyped"] == {"default": None}


def test_context_parameter_is_hidden_from_the_schema() -> None:
    info = one(BASIC, "whoami")
    assert info.accepts_context is True
    assert list(info.input_schema["properties"]) == ["greeting"]
    assert info.input_schema["required"] == ["greeting"]
    assert "_context" not in one(BASIC, "save_note").input_schema["properties"]


def test_module_all_expands_to_its_own_public_functions_sorted() -> None:
    infos = resolve(BASIC, "utils:All")
    # `sleep = time.sleep` is not defined in utils.py, so it is not a tool.
    assert [i.name for i in infos] == ["add", "multiply", "zeta"]
    assert [i.name for i in resolve(BASIC, "weather:All")] == [
        "convert", "get_weather", "loud", "typed_everything"
    ]  # `join` is imported, `_private_helper` private, classes are not functions


def test_a_function_can_be_chosen_by_module() -> None:
    info = one(BASIC, "utils:multiply")
    assert info.name == "multiply"
    assert info.input_schema["required"] == ["a"]


def test_chatdev_function_calling_subfolder_is_searched() -> None:
    info = one(BASIC, "legacy_echo")
    assert Path(info.file) == BASIC / "function_calling" / "legacy_tools.py"
    assert [i.name for i in resolve(BASIC, "legacy_tools:All")] == ["legacy_echo"]


def test_underscore_files_are_not_tool_sources() -> None:
    with pytest.raises(FunctionResolutionError, match="unknown function 'shout'"):
        resolve(BASIC, "shout")
    with pytest.raises(FunctionResolutionError, match="unknown function module '_helpers'"):
        resolve(BASIC, "_helpers:All")


def test_unknown_name_is_an_error_with_the_reference_index() -> None:
    with pytest.raises(FunctionResolutionError) as caught:
        resolve(BASIC, "add", "get_wether")
    assert caught.value.index == 1
    assert "unknown function 'get_wether'" in str(caught.value)


def test_unknown_function_in_a_module() -> None:
    with pytest.raises(FunctionResolutionError, match="unknown function 'nope'") as caught:
        resolve(BASIC, "utils:nope")
    assert caught.value.index == 0


def test_a_name_declared_twice_is_an_error() -> None:
    with pytest.raises(FunctionResolutionError, match="'add' is declared twice") as caught:
        resolve(BASIC, "add", "utils:All")
    assert caught.value.index == 1
    with pytest.raises(FunctionResolutionError, match="declared twice") as caught:
        resolve(BASIC, "zeta", "zeta")
    assert caught.value.index == 1


def test_a_name_defined_in_two_modules_is_ambiguous() -> None:
    with pytest.raises(FunctionResolutionError, match="several modules") as caught:
        resolve(DUPLICATE, "same")
    assert "first.py" in caught.value.message and "second.py" in caught.value.message
    assert load_function(one(DUPLICATE, "second:same"))() == "second"


def test_missing_directory_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "functions"
    with pytest.raises(FunctionResolutionError) as caught:
        resolve(missing, "add")
    assert str(missing) in caught.value.message
    assert caught.value.index is None


def test_resolving_reads_the_source_and_never_runs_it(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    (tmp_path / "side.py").write_text(textwrap.dedent(f'''
        def touch(n: int) -> int:
            """Return n."""
            return n

        open({str(marker)!r}, "w").close()
        raise SystemExit(0)
    '''))
    (info,) = resolve(tmp_path, "side:All")
    assert (info.name, info.input_schema["required"]) == ("touch", ["n"])
    assert not marker.exists()
    assert one(BROKEN, "never").input_schema["required"] == ["x"]  # fails only when imported


def test_import_failure_names_file_and_line_without_traceback() -> None:
    info = one(BROKEN, "never")
    with pytest.raises(FunctionResolutionError) as caught:
        load_function(info)
    message = caught.value.message
    assert f"{BROKEN / 'broken.py'}:11: cannot import function module: KeyError" in message
    assert "Traceback" not in message and "\n" not in message


def test_an_unreadable_module_does_not_hide_functions_of_good_ones(tmp_path: Path) -> None:
    (tmp_path / "good.py").write_text("def fine() -> str:\n    return 'fine'\n")
    (tmp_path / "bad.py").write_text("def never(:\n")
    assert one(tmp_path, "fine").module == "good"
    with pytest.raises(FunctionResolutionError) as caught:
        resolve(tmp_path, "never")
    assert "unknown function 'never'" in caught.value.message
    assert "bad.py:1: cannot read function module" in caught.value.message  # the likely reason


def test_syntax_error_is_reported_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("def ok() -> int:\n    return 1\n\ndef broken(:\n")
    with pytest.raises(FunctionResolutionError, match=r"bad\.py:4: cannot read function module"):
        resolve(tmp_path, "bad:All")


def test_unresolvable_annotation_gives_any_instead_of_crashing(tmp_path: Path) -> None:
    (tmp_path / "fwd.py").write_text(textwrap.dedent('''
        from __future__ import annotations

        def lookup(key: str, where: MissingType, n: int = 3) -> str:
            """Look up a key."""
            return key
    '''))
    schema = one(tmp_path, "lookup").input_schema
    assert schema["properties"] == {"key": {"type": "string"}, "where": {},
                                    "n": {"type": "integer", "default": 3}}


def test_description_is_the_first_paragraph_joined(tmp_path: Path) -> None:
    (tmp_path / "doc.py").write_text(textwrap.dedent('''
        def wrapped():
            """Fetch the thing
            across two lines.

            Details that stay out.
            """

        def bare():
            pass
    '''))
    assert one(tmp_path, "wrapped").description == "Fetch the thing across two lines."
    assert one(tmp_path, "bare").description == ""
    assert one(tmp_path, "bare").input_schema == {"type": "object", "properties": {}}


def test_tools_are_named_as_the_module_names_them(tmp_path: Path) -> None:
    (tmp_path / "names.py").write_text(textwrap.dedent('''
        def original(x: int) -> int:
            """Double x."""
            return 2 * x

        alias = original
        triple = lambda x: 3 * x
    '''))
    infos = resolve(tmp_path, "names:All")
    assert [i.name for i in infos] == ["alias", "original", "triple"]
    assert [load_function(i)(2) for i in infos] == [4, 4, 6]


def test_load_function_returns_a_working_callable_from_one_module_object() -> None:
    info = one(BASIC, "add")
    add = load_function(info)
    assert add(2, 3) == 5
    assert load_function(info) is add
    assert load_function(one(BASIC, "loud"))("hi") == "HI!"  # sibling helper import works


def test_same_module_name_in_two_folders_does_not_clash() -> None:
    assert load_function(one(BASIC, "add"))(2, 3) == 5
    assert load_function(one(OTHER, "add"))("a", "b") == "ab"


def test_config_module_does_not_import_heavy_libraries() -> None:
    code = (
        "import sys; import devall_cli.config.functions; "
        "print(sorted(m for m in ('fastmcp', 'httpx', 'mcp', 'mcp_types') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO_ROOT, check=True, timeout=30).stdout
    assert out.strip() == "[]"
