"""Looking functions up by reading the source, every problem at once, and importing by path."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from devall_cli.config.function_catalog import FunctionCatalog
from devall_cli.config.function_dirs import CONDITIONS, TOOLS, locate, tools_folder
from devall_cli.config.function_loading import FunctionResolutionError, load_named
from devall_cli.config.functions import resolve_functions
from devall_cli.tools.kinds.function import FunctionRef


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def refs(*names: str) -> list[FunctionRef]:
    return [FunctionRef(name) for name in names]


def test_every_bad_reference_of_an_entry_is_reported_with_its_index(tmp_path: Path) -> None:
    write(tmp_path / "tools.py", "def count(text: str) -> int:\n    return len(text)\n")
    infos, problems = resolve_functions(
        tmp_path, refs("count", "fetch", "tools:cuont", "helpers:All", "count")
    )
    assert [info.name for info in infos] == ["count"]
    assert [(p.index, p.message.split(";")[0]) for p in problems] == [
        (1, f"unknown function 'fetch' in {tmp_path}"),
        (2, f"unknown function 'cuont' in {tmp_path / 'tools.py'}"),
        (3, f"unknown function module 'helpers' (no helpers.py in {tmp_path})"),
        (4, "function 'count' is declared twice"),
    ]
    assert "did you mean 'count'?" in problems[1].message


def test_a_missing_function_names_the_unreadable_module_that_defines_it(tmp_path: Path) -> None:
    write(tmp_path / "a_first.py", "def other(:\n")  # unreadable, and unrelated
    write(tmp_path / "b_rules.py", "import json\n\ndef is_done(text:\n    return True\n")
    write(tmp_path / "c_good.py", "def fine(text):\n    return text\n")
    environ = {"MAC_EDGE_FUNCTIONS_DIR": str(tmp_path)}
    catalog = FunctionCatalog(locate(CONDITIONS, tmp_path, environ))
    with pytest.raises(FunctionResolutionError) as caught:
        catalog.lookup("is_done")
    message = caught.value.message
    assert message.startswith("unknown function 'is_done': it is defined in b_rules.py")
    assert "b_rules.py:3: cannot read function module" in message
    assert "a_first.py" not in message


def test_a_missing_function_defined_nowhere_says_how_many_modules_were_unreadable(
    tmp_path: Path,
) -> None:
    write(tmp_path / "bad.py", "def broken(:\n")
    write(tmp_path / "good.py", "def is_ready(text):\n    return True\n")
    with pytest.raises(FunctionResolutionError) as caught:
        FunctionCatalog(tools_folder(tmp_path)).lookup("is_redy")
    message = caught.value.message
    assert "did you mean 'is_ready'?" in message
    assert "1 module could not be read, such as" in message and "bad.py:1" in message


def test_a_name_defined_twice_is_ambiguous_where_chatdev_lets_the_last_win(tmp_path: Path) -> None:
    write(tmp_path / "one.py", "def same(text):\n    return 1\n")
    write(tmp_path / "two.py", "def same(text):\n    return 2\n")
    catalog = FunctionCatalog(tools_folder(tmp_path))
    with pytest.raises(FunctionResolutionError, match="defined in several modules"):
        catalog.lookup("same")
    (found,) = catalog.lookup("two:same")
    assert found.module.file == tmp_path / "two.py"


def test_modules_in_sub_folders_are_named_by_their_relative_path(tmp_path: Path) -> None:
    module = tmp_path / "function_calling" / "web" / "search.py"
    write(module, "def find(q: str) -> str:\n    return q\n")
    infos, problems = resolve_functions(tmp_path, refs("web/search:All"))
    assert problems == []
    assert [(info.name, info.module) for info in infos] == [("find", "web/search")]


def test_a_missing_directory_is_one_problem_without_an_index(tmp_path: Path) -> None:
    infos, problems = resolve_functions(locate(TOOLS, tmp_path, {}), refs("a", "b"))
    assert infos == []
    assert [(p.index, "no functions/ folder" in p.message) for p in problems] == [(None, True)]


# --- importing ---------------------------------------------------------------------------


def test_importing_changes_no_search_path_and_shadows_no_installed_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A function module named like a standard module must not replace it for its neighbours."""
    write(tmp_path / "colorsys.py", "def tool() -> str:\n    return 'local'\n")
    paint = write(
        tmp_path / "paint.py",
        """\
        import colorsys

        def lightness(r: float, g: float, b: float) -> float:
            return colorsys.rgb_to_hls(r, g, b)[1]
        """,
    )
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    path_before = list(sys.path)
    lightness = load_named(paint, "lightness")
    assert sys.path == path_before
    assert lightness(1.0, 1.0, 1.0) == 1.0  # the standard module, not the local file
    assert load_named(tmp_path / "colorsys.py", "tool")() == "local"  # itself importable by path


def test_a_helper_module_beside_a_function_module_can_be_imported(tmp_path: Path) -> None:
    write(tmp_path / "devall_test_helper_x1.py", "PREFIX = '>> '\n")
    module = write(
        tmp_path / "shout.py",
        """\
        from devall_test_helper_x1 import PREFIX

        def shout(text: str) -> str:
            return PREFIX + text.upper()
        """,
    )
    assert load_named(module, "shout")("hi") == ">> HI"


def test_an_import_failure_names_the_file_and_line(tmp_path: Path) -> None:
    module = write(tmp_path / "rules.py", "import os\n\nVALUE = os.environ['DEVALL_NOT_SET_X']\n")
    with pytest.raises(FunctionResolutionError) as caught:
        load_named(module, "anything")
    assert caught.value.message == (
        f"{module}:3: cannot import function module: KeyError: 'DEVALL_NOT_SET_X'"
    )
