"""FunctionSource: listing and calling Python functions, with failures returned as data."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest

from devall_cli.config.function_dirs import tools_folder
from devall_cli.errors import ConfigError
from devall_cli.tools.attachments import AttachmentStore
from devall_cli.tools.base import AttachmentBlock, TextBlock, ToolResult
from devall_cli.tools.functions import FunctionSource
from devall_cli.tools.kinds.function import FunctionRef, FunctionToolingConfig
from tests.conftest import DATA_DIR

BASIC = DATA_DIR / "functions" / "basic"


def make_source(
    *names: str,
    timeout: float = 5.0,
    store: AttachmentStore | None = None,
    context: dict[str, object] | None = None,
    directory: Path = BASIC,
) -> FunctionSource:
    config = FunctionToolingConfig(
        tools=tuple(FunctionRef(n) for n in names), timeout=timeout,
        folder=tools_folder(directory),
    )
    return FunctionSource(id="functions-0", config=config, store=store, context=context)


def text(result: ToolResult) -> str:
    (block,) = result.blocks
    assert isinstance(block, TextBlock)
    return block.text


async def test_start_and_list_tools() -> None:
    source = make_source("get_weather", "utils:All")
    info = await source.start()
    assert info.server_name == "functions"
    assert (source.kind, source.target, source.id) == ("function", str(BASIC), "functions-0")
    tools = await source.list_tools()
    assert [t.name for t in tools] == ["get_weather", "add", "multiply", "zeta"]
    weather = tools[0]
    assert weather.description == "Get the weather forecast for a city."
    assert weather.input_schema["required"] == ["city"]
    assert weather.meta == {"module": "weather", "file": str(BASIC / "weather.py")}
    await source.close()
    await source.close()  # idempotent


async def test_a_bad_reference_is_a_config_error() -> None:
    source = make_source("add", "no_such_function")
    with pytest.raises(ConfigError, match="unknown function 'no_such_function'"):
        await source.start()


async def test_call_returns_normalized_text() -> None:
    source = make_source("utils:All", "as_mapping")
    result = await source.call_tool("add", {"a": 2, "b": 40})
    assert not result.is_error and result.error_class is None
    assert result.blocks == (TextBlock(text="42", tool_name="add", source="function"),)
    assert result.duration_ms > 0
    mapping = await source.call_tool("as_mapping", {"name": "ada"})
    assert json.loads(text(mapping)) == {"name": "ada", "length": 3, "upper": "ADA"}
    assert text(mapping).startswith('{\n  "name": "ada",')  # indented, as ChatDev sends a dict


async def test_enum_optional_and_default_arguments() -> None:
    source = make_source("get_weather", "convert")
    assert text(await source.call_tool("convert", {"temperature": 100, "unit": "fahrenheit"})) \
        == "212 FAHRENHEIT"
    result = await source.call_tool("get_weather", {"city": "Oslo", "unit": "fahrenheit"})
    assert text(result) == "Oslo: sunny for 1 day(s) in fahrenheit (short, hours=None)"


async def test_omitted_optional_parameter_without_default_is_none() -> None:
    source = make_source("typed_everything")
    args = {"text": "t", "count": 1, "ratio": 0.5, "flag": True, "tags": [], "weights": {},
            "anything": 1, "station": None}
    result = await source.call_tool("typed_everything", args)
    assert not result.is_error, text(result)
    sent = json.loads(text(result))
    assert (sent["maybe"], sent["maybe_new"], sent["labelled"]) == (None, None, None)


async def test_exception_becomes_a_tool_error_result() -> None:
    source = make_source("fail", "leave")
    result = await source.call_tool("fail", {"message": "no luck"})
    assert result.is_error and result.error_class == "tool_error"
    assert text(result) == "ValueError: no luck"
    assert result.blocks[0].tool_name == "fail"
    exited = await source.call_tool("leave", {})
    assert exited.is_error and text(exited) == "SystemExit: 3"


async def test_unknown_tool_is_an_error_result() -> None:
    result = await make_source("add").call_tool("subtract", {"a": 1})
    assert (result.is_error, result.error_class) == (True, "unknown_tool")
    assert text(result) == "unknown tool 'subtract'"


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"a": 1}, "missing required argument 'b' (an integer)"),
        ({"a": 1, "b": 2, "c": 3}, "unknown argument 'c' (parameters: a, b)"),
        ({"a": 1, "b": True}, "'b' must be an integer, got true"),
    ],
)
async def test_bad_arguments_are_an_error_result(arguments: dict[str, int], fragment: str) -> None:
    result = await make_source("add").call_tool("add", arguments)
    assert (result.is_error, result.error_class) == (True, "invalid_arguments")
    assert text(result) == f"invalid arguments for 'add': {fragment}"


async def test_every_problem_is_named_in_parameter_order() -> None:
    result = await make_source("get_weather").call_tool(
        "get_weather", {"hours": [1, "2"], "days": 1.5, "extra": 0}
    )
    assert text(result) == (
        "invalid arguments for 'get_weather': unknown argument 'extra' "
        "(parameters: city, days, unit, detail, hours); "
        "missing required argument 'city' (a string); "
        "'days' must be an integer, got 1.5; "
        "'hours[1]' must be an integer, got \"2\""
    )


async def test_null_is_accepted_where_the_function_accepts_none() -> None:
    # `hours: list[int] | None = None` and `unit: Unit = Unit.CELSIUS`.
    source = make_source("get_weather")
    result = await source.call_tool("get_weather", {"city": "Oslo", "hours": None})
    assert text(result) == "Oslo: sunny for 1 day(s) in celsius (short, hours=None)"
    refused = await source.call_tool("get_weather", {"city": "Oslo", "unit": None})
    assert text(refused) == (
        "invalid arguments for 'get_weather': 'unit' must be one of \"celsius\", \"fahrenheit\", "
        "got null"
    )


async def test_bad_enum_value_is_an_error_result() -> None:
    result = await make_source("convert").call_tool("convert", {"temperature": 1, "unit": "K"})
    assert result.error_class == "invalid_arguments"
    assert text(result) == (
        "invalid arguments for 'convert': 'unit' must be one of \"celsius\", \"fahrenheit\", "
        "got \"K\""
    )


async def test_positional_only_and_keyword_parameters_are_passed_as_declared(
    tmp_path: Path,
) -> None:
    (tmp_path / "shapes.py").write_text(
        "def box(width: int, /, height: int = 1, *, label: str = '', **extra: int) -> str:\n"
        "    return f'{width}x{height} {label} {sorted(extra)}'\n"
    )
    source = make_source("box", directory=tmp_path)
    result = await source.call_tool("box", {"width": 2, "label": "b", "depth": 3})
    assert text(result) == "2x1 b ['depth']"  # **extra takes arguments the schema does not name


async def test_timeout_returns_an_error_and_the_source_stays_usable() -> None:
    source = make_source("nap", "async_nap", timeout=0.2)
    result = await asyncio.wait_for(source.call_tool("nap", {"seconds": 3}), 30)  # a hang guard
    assert (result.is_error, result.error_class) == (True, "timeout")
    assert text(result) == "tool 'nap' timed out after 0.2s"
    assert text(await source.call_tool("nap", {"seconds": 0.01})) == "slept 0.01"
    slow = await source.call_tool("async_nap", {"seconds": 3})
    assert text(slow) == "tool 'async_nap' timed out after 0.2s"
    assert text(await source.call_tool("async_nap", {"seconds": 0})) == "async slept 0"


async def test_calls_run_concurrently_in_threads(tmp_path: Path) -> None:
    (tmp_path / "overlap.py").write_text(
        "import threading, time\n"
        "lock, running, most = threading.Lock(), [0], [0]\n"
        "def nap(seconds: float) -> str:\n"
        "    with lock:\n"
        "        running[0] += 1\n"
        "        most[0] = max(most[0], running[0])\n"
        "    time.sleep(seconds)  # blocking: only threads of their own let naps overlap\n"
        "    with lock:\n"
        "        running[0] -= 1\n"
        "    return f'slept {seconds}'\n"
        "def peak() -> int:\n"
        "    return most[0]\n"
    )
    source = make_source("nap", "peak", directory=tmp_path)
    await source.start()
    results = await asyncio.gather(*(source.call_tool("nap", {"seconds": 0.4}) for _ in range(4)))
    assert [text(r) for r in results] == ["slept 0.4"] * 4
    assert text(await source.call_tool("peak", {})) == "4"  # all four naps ran at once


async def test_the_event_loop_is_not_blocked_by_a_call() -> None:
    source = make_source("nap")
    await source.start()
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.02)
            ticks += 1

    task = asyncio.create_task(ticker())
    await source.call_tool("nap", {"seconds": 0.3})
    task.cancel()
    assert ticks >= 5


async def test_bytes_are_saved_as_an_attachment(tmp_path: Path) -> None:
    store = AttachmentStore(tmp_path)
    result = await make_source("as_bytes", store=store).call_tool("as_bytes", {"size": 300})
    (block,) = result.blocks
    assert isinstance(block, AttachmentBlock)
    expected = bytes(i % 256 for i in range(300))
    assert (tmp_path / block.path).read_bytes() == expected
    assert block.sha256 == hashlib.sha256(expected).hexdigest()
    assert (block.kind, block.source, block.tool_name) == ("file", "function", "as_bytes")


async def test_context_is_passed_and_cannot_be_forged(tmp_path: Path) -> None:
    context: dict[str, object] = {"run_id": "run-1", "node_id": "writer",
                                  "workflow_dir": str(tmp_path)}
    source = make_source("whoami", context=context)
    result = await source.call_tool("whoami", {"greeting": "hi", "_context": "forged"})
    assert text(result) == f"hi run=run-1 node=writer dir={tmp_path} tool=whoami"
    context["node_id"] = "reviewer"  # read at call time
    assert "node=reviewer" in text(await source.call_tool("whoami", {"greeting": "hi"}))


async def test_context_gives_the_attachment_store(tmp_path: Path) -> None:
    store = AttachmentStore(tmp_path)
    result = await make_source("save_note", store=store).call_tool("save_note", {"text": "memo"})
    assert text(result) == "attachments/save_note_file_1.txt"
    assert (tmp_path / "attachments" / "save_note_file_1.txt").read_text() == "memo"


async def test_functions_from_the_chatdev_subfolder_are_callable() -> None:
    result = await make_source("legacy_echo").call_tool("legacy_echo", {"text": "old"})
    assert text(result) == "old"
