"""Function schemas read from the source: as from the imported signatures, without running code."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

from devall_cli.config.functions import (
    FunctionInfo,
    FunctionResolutionError,
    resolve_function_tools,
)
from devall_cli.tools.kinds.function import FunctionRef
from tests.conftest import DATA_DIR

TYPED = DATA_DIR / "functions" / "typed"
EXPECTED: dict[str, Any] = json.loads((TYPED / "expected_schemas.json").read_text())


def resolve(directory: Path, *names: str) -> list[FunctionInfo]:
    return resolve_function_tools(directory, [FunctionRef(name) for name in names])


def module(tmp_path: Path, source: str, name: str = "tools") -> Path:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    return tmp_path


def schema_of(tmp_path: Path, source: str, function: str = "f") -> dict[str, Any]:
    (info,) = resolve(module(tmp_path, source), function)
    return dict(info.input_schema)


@pytest.mark.parametrize("stem", ["future_annotations", "plain_annotations"])
def test_schemas_read_from_source_equal_those_of_the_imported_signatures(stem: str) -> None:
    infos = resolve(TYPED, f"{stem}:All")
    found = {
        f"{stem}:{i.name}": {"description": i.description, "input_schema": i.input_schema}
        for i in infos
    }
    expected = {key: value for key, value in EXPECTED.items() if key.startswith(f"{stem}:")}
    assert found == expected
    assert [i.warnings for i in infos] == [()] * len(infos)


def test_a_few_schemas_spelled_out() -> None:
    (enums,) = [i for i in resolve(TYPED, "future_annotations:All") if i.name == "enums"]
    assert enums.input_schema["properties"]["a"] == {"type": "string", "enum": ["red", "green"]}
    assert enums.input_schema["properties"]["f"] == {"type": "integer", "enum": [4, 2, 1],
                                                     "default": 4}
    assert enums.nullable == ("d",)


@pytest.mark.parametrize(
    ("source", "shown", "reason"),
    [
        ("from geometry import Shape\ndef f(x: Shape): ...", "Shape", "imported from 'geometry'"),
        ("import geometry\ndef f(x: geometry.Shape): ...", "geometry.Shape",
         "imported from 'geometry'"),
        ("def f(x: Missing): ...", "Missing", "'Missing' is not defined in tools.py"),
        ("from enum import Enum, auto\nclass C(Enum):\n    A = auto()\ndef f(x: C): ...", "C",
         "the value of C.A is not a plain literal"),
        ("from pydantic import conlist\ndef f(x: conlist[int]): ...", "conlist[int]",
         "imported from 'pydantic'"),
        ("def f(x: 'not valid ('): ...", "'not valid ('", "not a valid expression"),
        ("def f(x: [int]): ...", "[int]", "not a type the source can tell"),
    ],
)
def test_an_annotation_that_needs_running_code_accepts_anything_with_a_warning(
    tmp_path: Path, source: str, shown: str, reason: str
) -> None:
    (tmp_path / "geometry.py").write_text("class Shape:\n    pass\n")  # found, not read
    (info,) = resolve(module(tmp_path, source + "\n"), "f")
    assert info.input_schema == {"type": "object", "properties": {"x": {}}, "required": ["x"]}
    line = source.count("\n") + 1
    assert info.warnings == (
        f"tools.py:{line}: parameter 'x' of 'f': cannot read type '{shown}' from the source "
        f"({reason}); it accepts any value",
    )


def test_definitions_are_read_in_order_through_if_try_and_with(tmp_path: Path) -> None:
    source = """
        import contextlib
        try:
            import numpy
        except ImportError:
            def f(a: int) -> int:
                return a
        if True:
            g = f
            def f(b: str) -> str:
                return b
        with contextlib.suppress(Exception):
            h = lambda c: c
        del numpy
        def _private(): ...
        from os.path import join
        """
    infos = resolve(module(tmp_path, source), "tools:All")
    assert [i.name for i in infos] == ["f", "g", "h"]
    assert [list(i.input_schema["properties"]) for i in infos] == [["b"], ["a"], ["c"]]


def test_decorated_functions_keep_their_own_signature(tmp_path: Path) -> None:
    source = """
        import functools

        @functools.lru_cache
        def f(a: int, b: str = "x") -> str:
            '''Cached.'''
            return b * a
        """
    (info,) = resolve(module(tmp_path, source), "f")
    assert info.description == "Cached."
    assert info.input_schema["required"] == ["a"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"def f(:\n", "tools.py:1: cannot read function module: invalid syntax"),
        (b"def f(): return '\xe9'\n", "cannot read function module: "),
        (b"x = 1\0\n", "cannot read function module: "),
        (b"x = " + b"(" * 500 + b")" * 500 + b"\n", "cannot read function module: "),
    ],
    ids=["syntax", "not_utf8", "nul_byte", "deep_nesting"],
)
def test_a_module_that_cannot_be_read_is_a_clear_error(
    tmp_path: Path, content: bytes, message: str
) -> None:
    (tmp_path / "tools.py").write_bytes(content)
    with pytest.raises(FunctionResolutionError) as caught:
        resolve(tmp_path, "tools:All")
    assert message in caught.value.message
    assert "\n" not in caught.value.message


def test_a_coding_cookie_is_honoured(tmp_path: Path) -> None:
    source = "# -*- coding: latin-1 -*-\ndef f(x: str) -> str:\n    '''Caf\xe9.'''\n    return x\n"
    (tmp_path / "tools.py").write_bytes(source.encode("latin-1"))
    (info,) = resolve(tmp_path, "f")
    assert info.description == "Café."


def test_a_fifo_named_like_a_module_is_refused_not_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "tools.py")
    with pytest.raises(FunctionResolutionError, match="not a regular file"):
        resolve(tmp_path, "tools:All")


def test_param_meta_objects_describe_parameters_as_chatdevs_catalog_reads_them(
    tmp_path: Path,
) -> None:
    # ChatDev's function modules describe parameters with utils.function_catalog.ParamMeta;
    # the metadata object is read from the source, whatever module defines it.
    schema = schema_of(
        tmp_path,
        """
        from dataclasses import dataclass
        from typing import Annotated, Any, Sequence

        @dataclass(frozen=True)
        class ParamMeta:
            description: str | None = None
            enum: Sequence[Any] | None = None

        DEPTH = "How deep to look"

        def f(
            path: Annotated[str, ParamMeta(description="Workspace-relative path")] = ".",
            mode: Annotated[str, ParamMeta(description="How to open", enum=["r", "w"])] = "r",
            level: Annotated[Any, ParamMeta(enum=(1, 2, 3))] = 1,
            depth: Annotated[int, ParamMeta(description=DEPTH)] = 3,
            both: Annotated[int, "the string wins", ParamMeta(description="second")] = 0,
            bounded: Annotated[int, ParamMeta(minimum=1, maximum=9, unknown=5)] = 1,
        ) -> str:
            return path
        """,
    )
    assert schema["properties"] == {
        "path": {"type": "string", "description": "Workspace-relative path", "default": "."},
        "mode": {
            "type": "string",
            "description": "How to open",
            "enum": ["r", "w"],
            "default": "r",
        },
        "level": {"enum": [1, 2, 3], "type": "integer", "default": 1},
        "depth": {"type": "integer", "description": "How deep to look", "default": 3},
        "both": {"type": "integer", "description": "the string wins", "default": 0},
        "bounded": {"type": "integer", "minimum": 1, "maximum": 9, "default": 1},
    }
