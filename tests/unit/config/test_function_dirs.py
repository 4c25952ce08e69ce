"""Finding the functions directory as ChatDev does, and listing the modules of each folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from devall_cli.config import function_dirs
from devall_cli.config.function_dirs import (
    CONDITIONS,
    PROCESSORS,
    TOOLS,
    FolderError,
    locate,
)


def touch(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("def f(x):\n    return x\n")


def ids(kind: str, start: Path, environ: dict[str, str] | None = None) -> list[str]:
    return [module_id for _, module_id in locate(kind, start, environ or {}).modules()]


def test_functions_beside_the_workflow(tmp_path: Path) -> None:
    touch(tmp_path, "functions/tools.py", "functions/edge/rules.py")
    folder = locate(TOOLS, tmp_path, {})
    assert folder.root == str(tmp_path / "functions")
    assert ids(TOOLS, tmp_path) == ["tools"]
    assert ids(CONDITIONS, tmp_path) == ["rules"]


def test_chatdev_layout_functions_at_the_repository_root(tmp_path: Path) -> None:
    """ChatDev keeps workflows in yaml_instance/ (and deeper) and functions/ at the root."""
    touch(
        tmp_path,
        "functions/function_calling/file.py",
        "functions/function_calling/web/search.py",
        "functions/edge/conditions.py",
        "functions/edge_processor/transformers.py",
    )
    workflow_dir = tmp_path / "yaml_instance" / "subgraphs"
    workflow_dir.mkdir(parents=True)
    assert ids(TOOLS, workflow_dir) == ["file", "web/search"]
    assert ids(CONDITIONS, workflow_dir) == ["conditions"]
    assert ids(PROCESSORS, workflow_dir) == ["transformers"]
    assert locate(TOOLS, workflow_dir, {}).root == str(tmp_path / "functions")


def test_the_nearest_functions_folder_wins(tmp_path: Path) -> None:
    touch(tmp_path, "functions/outer.py", "flows/functions/inner.py")
    assert ids(TOOLS, tmp_path / "flows") == ["inner"]


def test_no_functions_folder_anywhere_up_the_tree(tmp_path: Path) -> None:
    folder = locate(CONDITIONS, tmp_path, {})
    assert folder.directories == ()
    assert not folder.exists
    message = folder.missing_message()
    assert "no functions/ folder beside the workflow or in a parent folder" in message
    assert "DEVALL_FUNCTIONS_DIR" in message and "MAC_EDGE_FUNCTIONS_DIR" in message


def test_tools_come_from_function_calling_and_the_root_but_not_the_edge_folders(
    tmp_path: Path,
) -> None:
    touch(
        tmp_path,
        "functions/flat.py",
        "functions/function_calling/legacy.py",
        "functions/helpers/deep.py",
        "functions/edge/rules.py",
        "functions/edge_processor/shape.py",
    )
    assert ids(TOOLS, tmp_path) == ["legacy", "flat", "helpers/deep"]


def test_private_files_hidden_folders_and_caches_are_skipped(tmp_path: Path) -> None:
    touch(
        tmp_path,
        "functions/edge/_private.py",
        "functions/edge/__init__.py",
        "functions/edge/.venv/lib/site.py",
        "functions/edge/__pycache__/rules.py",
        "functions/edge/rules.py",
        "functions/edge/notes.txt",
    )
    assert ids(CONDITIONS, tmp_path) == ["rules"]


def test_devall_functions_dir_names_the_root(tmp_path: Path) -> None:
    touch(tmp_path, "elsewhere/edge/rules.py", "functions/edge/local.py")
    environ = {"DEVALL_FUNCTIONS_DIR": str(tmp_path / "elsewhere")}
    assert ids(CONDITIONS, tmp_path, environ) == ["rules"]
    assert locate(CONDITIONS, tmp_path, environ).origin == "DEVALL_FUNCTIONS_DIR"


@pytest.mark.parametrize(
    ("kind", "variable"),
    [
        (TOOLS, "MAC_FUNCTIONS_DIR"),
        (CONDITIONS, "MAC_EDGE_FUNCTIONS_DIR"),
        (PROCESSORS, "MAC_EDGE_PROCESSOR_FUNCTIONS_DIR"),
    ],
)
def test_chatdev_variables_name_one_folder_each_and_win_over_the_root(
    tmp_path: Path, kind: str, variable: str
) -> None:
    touch(tmp_path, "mine/sub/own.py", "functions/function_calling/a.py", "functions/edge/b.py")
    touch(tmp_path, "functions/edge_processor/c.py")
    environ = {variable: str(tmp_path / "mine"), "DEVALL_FUNCTIONS_DIR": str(tmp_path / "x")}
    assert ids(kind, tmp_path, environ) == ["sub/own"]
    others = [k for k in (TOOLS, CONDITIONS, PROCESSORS) if k != kind]
    for other in others:  # the other folders still come from the root
        assert locate(other, tmp_path, environ).root == str(tmp_path / "x")


def test_a_folder_with_too_many_modules_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(function_dirs, "MAX_MODULES", 3)
    touch(tmp_path, *(f"functions/edge/m{i}.py" for i in range(4)))
    with pytest.raises(FolderError, match="more than 3 function modules"):
        locate(CONDITIONS, tmp_path, {}).modules()
