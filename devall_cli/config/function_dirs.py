"""Where user functions live: the functions directory and its three folders, found as ChatDev does.

One `functions/` root holds `function_calling/` (tools), `edge/` (edge conditions) and
`edge_processor/` (edge processors). The root is `DEVALL_FUNCTIONS_DIR`, else the first
`functions/` folder beside the workflow file or in one of its parent folders, up to the
filesystem root (ChatDev keeps `functions/` at its repository root and its workflows in
`yaml_instance/`). ChatDev's `MAC_FUNCTIONS_DIR`, `MAC_EDGE_FUNCTIONS_DIR` and
`MAC_EDGE_PROCESSOR_FUNCTIONS_DIR` name one folder each and win over the root.

Folders are searched recursively for `*.py` files; files whose name starts with `_`, hidden
folders and `__pycache__` are skipped. Nothing here reads or imports a module.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from devall_cli.config.file_probe import is_dir

ROOT_ENV = "DEVALL_FUNCTIONS_DIR"
ROOT_NAME = "functions"
TOOLS = "function_calling"
CONDITIONS = "edge"
PROCESSORS = "edge_processor"
FOLDER_ENV = {
    TOOLS: "MAC_FUNCTIONS_DIR",
    CONDITIONS: "MAC_EDGE_FUNCTIONS_DIR",
    PROCESSORS: "MAC_EDGE_PROCESSOR_FUNCTIONS_DIR",
}
MAX_MODULES = 1000  # module files one folder may hold; a virtualenv inside it is a mistake


class FolderError(Exception):
    """A folder cannot be listed (too many modules, unreadable)."""


@dataclass(frozen=True)
class FunctionFolder:
    """The directories searched for one kind of function, in order, and how they were found."""

    kind: str  # function_calling | edge | edge_processor
    directories: tuple[str, ...]  # absolute; each searched recursively
    excluded: tuple[str, ...] = ()  # sub-trees left out (the other kinds' folders of a root)
    root: str = ""  # the functions directory shown to users (absolute), "" when none was found
    origin: str = ""  # how it was found, for messages

    @property
    def exists(self) -> bool:
        """Whether at least one of the directories exists."""
        return any(is_dir(Path(d)) for d in self.directories)

    def describe(self) -> str:
        """The folder as messages name it: the functions directory for tools, else the folder."""
        if not self.directories:
            return f"no {ROOT_NAME}/ folder"
        if self.kind == TOOLS and self.root:
            return self.root
        return " or ".join(self.directories)

    def missing_message(self) -> str:
        """Why nothing can be found here: no folder, or a folder that does not exist."""
        if not self.directories:
            return (
                f"{self.origin} (set {ROOT_ENV}, or {FOLDER_ENV[self.kind]} for this folder "
                "alone, to use another one)"
            )
        return f"functions directory not found: {self.describe()}"

    def modules(self) -> list[tuple[Path, str]]:
        """(file, module id) of every module file, in search order.

        The module id is the file's path relative to the directory it was found in, without
        `.py`, folders joined by `/` (`utils`, `tools/web`), as ChatDev names modules for
        `module:All`. Raises FolderError past MAX_MODULES files.
        """
        found: list[tuple[Path, str]] = []
        excluded = {Path(e) for e in self.excluded}
        for directory in (Path(d) for d in self.directories):
            if is_dir(directory):
                found.extend(_walk(directory, excluded, self.directories))
            if len(found) > MAX_MODULES:
                raise FolderError(
                    f"{directory}: more than {MAX_MODULES} function modules; "
                    "keep only the functions there (no virtualenv or package checkout)"
                )
        return found


NO_FOLDER = FunctionFolder(TOOLS, ())  # a tooling entry built without the loader


def _walk(
    directory: Path, excluded: set[Path], others: tuple[str, ...]
) -> list[tuple[Path, str]]:
    """Module files under `directory`, sorted; other searched directories inside are left out."""
    skip = excluded | {Path(o) for o in others if Path(o) != directory}
    found: list[tuple[Path, str]] = []
    for current, folders, files in os.walk(directory, followlinks=False):
        here = Path(current)
        folders[:] = sorted(
            f
            for f in folders
            if not f.startswith(".") and f != "__pycache__" and here / f not in skip
        )
        for name in sorted(files):
            if name.endswith(".py") and not name.startswith("_"):
                file = here / name
                module_id = file.relative_to(directory).with_suffix("").as_posix()
                found.append((file, module_id))
        if len(found) > MAX_MODULES:
            break
    return found


def find_root(start: Path, environ: Mapping[str, str]) -> tuple[Path | None, str]:
    """(the functions directory or None, how it was found)."""
    configured = environ.get(ROOT_ENV, "").strip()
    if configured:
        return Path(os.path.expanduser(configured)).resolve(), ROOT_ENV
    start = start.resolve()
    for folder in (start, *start.parents):
        candidate = folder / ROOT_NAME
        if is_dir(candidate):
            return candidate, "found beside the workflow or in a parent folder"
    return None, f"no {ROOT_NAME}/ folder beside the workflow or in a parent folder"


def locate(kind: str, start: Path, environ: Mapping[str, str]) -> FunctionFolder:
    """Where functions of `kind` are looked for, for a workflow in the folder `start`."""
    override = environ.get(FOLDER_ENV[kind], "").strip()
    if override:
        path = str(Path(os.path.expanduser(override)).resolve())
        return FunctionFolder(kind, (path,), root=path, origin=FOLDER_ENV[kind])
    root, origin = find_root(start, environ)
    if root is None:
        return FunctionFolder(kind, (), origin=origin)
    if kind != TOOLS:
        return FunctionFolder(kind, (str(root / kind),), root=str(root), origin=origin)
    # Tools: ChatDev's `function_calling/` first, then the root itself (devall's flat layout);
    # the edge folders of the root hold no tools.
    excluded = tuple(str(root / other) for other in (CONDITIONS, PROCESSORS))
    return FunctionFolder(
        kind, (str(root / TOOLS), str(root)), excluded=excluded, root=str(root), origin=origin
    )


def tools_folder(root: Path) -> FunctionFolder:
    """The tool folder of a functions directory given directly (as tests and callers do)."""
    root = root.resolve()
    excluded = tuple(str(root / other) for other in (CONDITIONS, PROCESSORS))
    return FunctionFolder(TOOLS, (str(root / TOOLS), str(root)), excluded=excluded, root=str(root))
