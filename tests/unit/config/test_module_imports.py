"""A function module's top-level imports are looked up without running it (module_imports.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devall_cli.config.module_imports import missing_import
from devall_cli.config.module_source import parse_module


def problem(folder: Path, source: str) -> str | None:
    file = folder / "tools.py"
    file.write_text(textwrap.dedent(source))
    return missing_import(parse_module(file))


def test_the_standard_library_installed_packages_and_helpers_beside_it_are_found(
    tmp_path: Path,
) -> None:
    (tmp_path / "helpers.py").write_text("X = 1\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "part.py").write_text("Y = 2\n")
    source = """
        import json, os.path
        from collections.abc import Mapping
        import pytest
        import helpers
        from pkg.part import Y
        from . import sibling
    """
    assert problem(tmp_path, source) is None


def test_optional_and_lazy_imports_are_not_checked(tmp_path: Path) -> None:
    source = """
        try:
            import nowhere_to_be_found
        except ImportError:
            nowhere_to_be_found = None
        if False:
            import nor_this_one

        def f() -> None:
            import nor_inside
    """
    assert problem(tmp_path, source) is None


def test_the_first_missing_import_is_named_with_its_line_and_an_install_hint(
    tmp_path: Path,
) -> None:
    found = problem(tmp_path, "import json\nimport yaml_nowhere.sub\nimport also_missing\n")
    assert found == (
        f"{tmp_path / 'tools.py'}:2: imports 'yaml_nowhere', which is not installed: install it "
        "into the Python environment devall runs in (pip install yaml_nowhere)"
    )
    assert "(pip install pillow)" in str(problem(tmp_path, "import PIL.Image\n"))


def test_a_module_beside_it_is_no_package_of_submodules(tmp_path: Path) -> None:
    # ChatDev's functions/function_calling/utils.py next to a module importing `utils.attachments`.
    (tmp_path / "utils.py").write_text("def shout(text: str) -> str:\n    return text\n")
    found = problem(tmp_path, "from utils.attachments import AttachmentStore\n")
    assert found is not None
    assert "imports 'utils.attachments', which is not installed and not beside the module" in found
    assert "one of ChatDev's packages" in found
