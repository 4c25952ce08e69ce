"""Function tools through the CLI: hostile function modules, async functions, bad arguments.

`validate` and `tools list` read the functions from their source and never run them; `run`
imports them and runs every function (async ones too) in a worker thread, bounded by `timeout`;
arguments are checked against the function's schema before it is called.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_reliability_cli import invoke, of_kind, workflow
from tests.helpers import devall

DEVALL = Path(sys.executable).parent / "devall"

# Each module would take over devall if it were imported: loop forever, end the process with
# status 0, or write to stdout. All three also leave a mark on disk to prove they ran.
HOSTILE_TOP_LEVEL = {
    "endless_loop": "while True:\n    pass\n",
    "os_exit": "os._exit(0)\n",
    "print": 'print("junk from a function module")\n',
}


def write_functions(directory: Path, name: str, source: str) -> Path:
    folder = directory / "functions"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return path


def hostile_module(tmp_path: Path, case: str) -> Path:
    """A module with a typed function and, at top level, a mark on disk and then the fault."""
    marker = tmp_path / "imported.txt"
    write_functions(
        tmp_path,
        "hostile",
        f'''\
import os
from enum import Enum
from typing import Annotated, Literal, Optional


class Size(Enum):
    SMALL = "s"
    LARGE = "l"


def greet(
    name: Annotated[str, "Who to greet"],
    size: Size = Size.SMALL,
    tone: Literal["warm", "dry"] = "warm",
    times: Optional[int] = None,
) -> str:
    """Greet someone.

    Not part of the description.
    """
    return name


open({str(marker)!r}, "w").close()
''',
    )
    path = tmp_path / "functions" / "hostile.py"
    path.write_text(path.read_text() + HOSTILE_TOP_LEVEL[case])
    return marker


def function_tooling(*names: str, timeout: float | None = None) -> str:
    config: dict[str, Any] = {"tools": [{"name": n} for n in names]}
    if timeout is not None:
        config["timeout"] = timeout
    return json.dumps({"type": "function", "config": config})


GREET_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "Who to greet"},
        "size": {"type": "string", "enum": ["s", "l"], "default": "s"},
        "tone": {"type": "string", "enum": ["warm", "dry"], "default": "warm"},
        "times": {"type": "integer", "default": None},
    },
    "required": ["name"],
}


# --- validate and tools list never run a function module ---------------------------------------


@pytest.mark.parametrize("case", sorted(HOSTILE_TOP_LEVEL))
def test_validate_json_never_runs_function_modules(tmp_path: Path, case: str) -> None:
    marker = hostile_module(tmp_path, case)
    path = workflow(tmp_path, function_tooling("greet"), script=["done"])
    done = devall("validate", "--json", str(path))
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)  # stdout is exactly the JSON document
    assert document["ok"] is True and document["issues"] == []
    assert not marker.exists()


def test_validate_reports_other_errors_even_with_a_module_that_would_exit_0(
    tmp_path: Path,
) -> None:
    marker = hostile_module(tmp_path, "os_exit")
    path = workflow(tmp_path, function_tooling("greet", "no_such_function"), script=["done"])
    done = devall("validate", str(path))
    assert done.returncode == 3, done.stderr
    assert "unknown function 'no_such_function'" in done.stderr
    assert not marker.exists()


@pytest.mark.parametrize("case", ["endless_loop", "print"])
def test_tools_list_json_shows_the_schema_without_running_the_module(
    tmp_path: Path, case: str
) -> None:
    marker = hostile_module(tmp_path, case)
    path = workflow(tmp_path, function_tooling("hostile:All"), script=["done"])
    done = devall("tools", "list", "--json", str(path))
    assert done.returncode == 0, done.stderr
    (tool,) = json.loads(done.stdout)
    assert (tool["name"], tool["source"]) == ("greet", "function")
    assert tool["description"] == "Greet someone."
    assert tool["input_schema"] == GREET_SCHEMA
    assert not marker.exists()


def test_a_type_validate_cannot_read_is_a_warning_and_accepts_anything(tmp_path: Path) -> None:
    write_functions(tmp_path, "geometry", "class Shape:\n    pass\n")  # beside it: found
    write_functions(
        tmp_path,
        "shapes",
        '''\
        from geometry import Shape


        def area(shape: Shape, scale: float = 1.0) -> float:
            """Area of a shape."""
            return 0.0
        ''',
    )
    path = workflow(tmp_path, function_tooling("area"), script=["done"])
    code, out, err = invoke("validate", "--json", str(path))
    assert code == 0, err
    (issue,) = json.loads(out)["issues"]
    assert issue["severity"] == "warning"
    assert issue["path"] == "graph.nodes[0].config.tooling[0].config.tools[0].name"
    assert "parameter 'shape' of 'area'" in issue["message"]
    assert "'Shape'" in issue["message"] and "any value" in issue["message"]
    code, out, err = invoke("tools", "list", "--json", str(path))
    assert code == 0, err
    assert json.loads(out)[0]["input_schema"]["properties"]["shape"] == {}


def test_run_imports_the_module_and_reports_an_import_failure_as_exit_3(tmp_path: Path) -> None:
    write_functions(
        tmp_path,
        "broken",
        '''\
        import os


        def never(x: int) -> int:
            """Unreachable."""
            return x


        VALUE = os.environ["DEVALL_TEST_VARIABLE_THAT_IS_NEVER_SET"]
        ''',
    )
    path = workflow(tmp_path, function_tooling("never"), script=["done"])
    assert invoke("validate", str(path))[0] == 0  # the source is fine; validate does not run it
    code, _, err = invoke("run", str(path), "--out", str(tmp_path / "run"))
    assert code == 3, err
    assert "broken.py:9: cannot import function module: KeyError" in err
    assert "Traceback" not in err


# --- async functions run like sync ones --------------------------------------------------------

ASYNC_FUNCTIONS = '''\
import asyncio
import time


async def block(seconds: float) -> str:
    """Block the thread it runs on (a mistake, but a common one)."""
    time.sleep(seconds)
    return f"blocked {seconds}"


async def raise_base(kind: str) -> str:
    """Raise SystemExit, KeyboardInterrupt or another BaseException."""
    errors = {"exit": SystemExit(0), "interrupt": KeyboardInterrupt(), "base": BaseException("b")}
    raise errors[kind]


async def pause(seconds: float) -> str:
    """Sleep without blocking."""
    await asyncio.sleep(seconds)
    return f"paused {seconds}"
'''


@pytest.mark.parametrize(
    ("kind", "text"),
    [("exit", "SystemExit: 0"), ("interrupt", "KeyboardInterrupt"), ("base", "BaseException: b")],
    ids=["SystemExit", "KeyboardInterrupt", "BaseException"],
)
def test_an_async_function_raising_a_base_exception_is_a_tool_error(
    tmp_path: Path, kind: str, text: str
) -> None:
    write_functions(tmp_path, "aio", ASYNC_FUNCTIONS)
    script = [
        {"tool_calls": [{"name": "raise_base", "arguments": {"kind": kind}}]},
        {"tool_calls": [{"name": "pause", "arguments": {"seconds": 0}}]},
        {"content": "after: {tool_result}"},
    ]
    path = workflow(tmp_path, function_tooling("aio:All"), script=script)
    run_dir = tmp_path / "run"
    code, out, err = invoke("run", str(path), "--out", str(run_dir))
    assert code == 0, err
    assert out.strip() == "after: paused 0"
    first, second = of_kind(run_dir, "tool.result")
    assert (first["is_error"], first["error_class"]) == (True, "tool_error")
    assert first["blocks"][0]["text"] == text
    assert second["is_error"] is False
    assert json.loads((run_dir / "result.json").read_text())["status"] == "ok"


def test_a_blocking_async_function_obeys_its_timeout(tmp_path: Path) -> None:
    write_functions(tmp_path, "aio", ASYNC_FUNCTIONS)
    script = [
        {"tool_calls": [{"name": "block", "arguments": {"seconds": 5}}]},
        {"tool_calls": [{"name": "pause", "arguments": {"seconds": 0}}]},
        {"content": "after: {tool_result}"},
    ]
    path = workflow(tmp_path, function_tooling("aio:All", timeout=0.3), script=script)
    run_dir = tmp_path / "run"
    code, out, err = invoke("run", str(path), "--out", str(run_dir))
    assert code == 0, err
    assert out.strip() == "after: paused 0"
    first, second = of_kind(run_dir, "tool.result")
    assert (first["is_error"], first["error_class"]) == (True, "timeout")
    assert first["blocks"][0]["text"] == "tool 'block' timed out after 0.3s"
    assert second["is_error"] is False


# --- arguments are checked against the schema before the call -----------------------------------

RECORDING_FUNCTIONS = '''\
from pathlib import Path
from typing import Literal


def shout(text: str, times: int = 1, mode: Literal["plain", "loud"] = "plain") -> str:
    """Upper-case the text; every call is written to calls.log."""
    with open(Path(__file__).with_name("calls.log"), "a") as log:
        log.write(repr(text) + "\\n")
    return text.upper() * times
'''


def test_arguments_that_do_not_fit_the_schema_are_an_error_the_model_can_correct(
    tmp_path: Path,
) -> None:
    write_functions(tmp_path, "loud", RECORDING_FUNCTIONS)
    bad = [{"text": 5}, {}, {"text": "a", "volume": 11}, {"text": "a", "times": "2"},
           {"text": "a", "mode": "quiet"}]
    script = [
        {"tool_calls": [{"name": "shout", "arguments": arguments} for arguments in bad]},
        {"tool_calls": [{"name": "shout", "arguments": {"text": "hi"}}]},
        {"content": "{tool_result}"},
    ]
    path = workflow(tmp_path, function_tooling("shout"), script=script)
    run_dir = tmp_path / "run"
    code, out, err = invoke("run", str(path), "--out", str(run_dir))
    assert code == 0, err
    assert out.strip() == "HI"
    results = of_kind(run_dir, "tool.result")
    assert [r["error_class"] for r in results] == ["invalid_arguments"] * 5 + [None]
    texts = [r["blocks"][0]["text"] for r in results[:5]]
    assert texts == [
        "invalid arguments for 'shout': 'text' must be a string, got 5",
        "invalid arguments for 'shout': missing required argument 'text' (a string)",
        "invalid arguments for 'shout': unknown argument 'volume' (parameters: text, times, mode)",
        "invalid arguments for 'shout': 'times' must be an integer, got \"2\"",
        "invalid arguments for 'shout': 'mode' must be one of \"plain\", \"loud\", got \"quiet\"",
    ]
    # The function itself ran once, for the correct call.
    assert (tmp_path / "functions" / "calls.log").read_text() == "'hi'\n"
