"""Whether a function module's imports can be found, told without running the module.

A module whose top-level import cannot be found would validate and then fail the run before its
first node. So `validate` (and every command that reads the functions) looks each unconditional
top-level import up, as the run would find it: the standard library, installed packages
(the import system's finders asked for the top-level name, which imports nothing), the checkout of a
ChatDev function module (function_loading.py's `chatdev_root`), then the module's own folder.
An import under `if` or `try` may be optional and is not checked.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

from devall_cli.config.file_probe import is_dir, is_file
from devall_cli.config.function_loading import chatdev_root, installed
from devall_cli.config.module_source import ModuleSource

# ChatDev's own top-level packages: an import of one of them means a ChatDev function module.
CHATDEV_TOP_LEVEL = frozenset(
    {"entity", "utils", "runtime", "workflow", "functions", "check", "schema_registry", "server"}
)
# Where the package to install is not named like the module it provides.
_DISTRIBUTIONS = {
    "yaml": "pyyaml",
    "PIL": "pillow",
    "cv2": "opencv-python",
    "bs4": "beautifulsoup4",
    "sklearn": "scikit-learn",
    "dotenv": "python-dotenv",
    "docx": "python-docx",
    "fitz": "pymupdf",
}


def missing_import(module: ModuleSource) -> str | None:
    """`file:line: ...` for the first top-level import the run could not find, else None."""
    root = chatdev_root(module.file)
    for line, name in module.imports:
        if _found(name, root, module.file.parent):
            continue
        where = f"{module.file}:{line}"
        top = name.partition(".")[0]
        if top in CHATDEV_TOP_LEVEL:
            return (
                f"{where}: imports '{name}', which is not installed and not beside the module: it "
                "is one of ChatDev's packages, so this module comes from ChatDev; keep the "
                "workflow's functions/ folder inside a ChatDev checkout (devall then finds "
                "ChatDev's packages as ChatDev does) or provide the module"
            )
        package = _DISTRIBUTIONS.get(top, top)
        return (
            f"{where}: imports '{top}', which is not installed: install it into the Python "
            f"environment devall runs in (pip install {package})"
        )
    return None


def _found(name: str, root: Path | None, folder: Path) -> bool:
    top = name.partition(".")[0]
    if top in sys.stdlib_module_names or top in sys.builtin_module_names:
        return True
    if root is not None and _in_folder(root, name):
        return True  # the checkout answers first, as on ChatDev's path
    if _installed(top):
        return True
    return _in_folder(folder, name)


@lru_cache(maxsize=512)
def _installed(top: str) -> bool:
    return installed(top)


def _in_folder(folder: Path, name: str) -> bool:
    """Whether the dotted `name` is a module or package (namespace ones too) under `folder`."""
    parts = name.split(".")
    here = folder
    for number, part in enumerate(parts):
        last = number == len(parts) - 1
        if is_dir(here / part):
            here = here / part
            continue
        return last and is_file(here / f"{part}.py")
    return True
