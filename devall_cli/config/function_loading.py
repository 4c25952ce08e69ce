"""Importing user function modules by file path, each under a name of its own.

A module is imported with `importlib.util.spec_from_file_location` under a unique name
(`devall_functions_<hash>_<stem>`), so two `utils.py` in different folders never clash and
`sys.path` is never changed: a function module cannot shadow an installed package. A module
may still import a helper module beside it (`import helpers`): a finder placed after every
other one answers for top-level names that nothing else knows, from the folders of the
function modules imported so far. Installed modules always win.

ChatDev's own function modules import ChatDev's packages (`from utils.attachments import ...`,
`from entity.messages import ...`), which ChatDev finds because it runs from its checkout. When
a function module lies in the `functions/` folder of such a checkout (`chatdev_root`), the same
finder first answers from the checkout's top level, as ChatDev's `sys.path` does: so
`functions/function_calling/utils.py` does not shadow the checkout's `utils` package.

Importing runs the module's code: only a run does it, never `validate` or `tools list`.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import traceback
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from devall_cli.config.file_probe import is_dir, is_file


class FunctionResolutionError(Exception):
    """A function reference could not be resolved; `index` points into the refs list."""

    def __init__(self, message: str, index: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.index = index


# One module object per file, shared by every tooling entry, edge and run of the process.
_MODULES: dict[str, types.ModuleType] = {}
_LOCK = threading.RLock()


# What tells a ChatDev checkout: its `functions/` folder with ChatDev's packages beside it.
CHATDEV_PACKAGES = ("entity", "utils")


def chatdev_root(file: Path) -> Path | None:
    """The ChatDev checkout whose `functions/` folder holds `file`, else None."""
    for folder in file.resolve().parents:
        if folder.name == "functions" and all(
            is_dir(folder.parent / package) for package in CHATDEV_PACKAGES
        ):
            return folder.parent
    return None


class _HelperFinder(importlib.abc.MetaPathFinder):
    """Finds `import helpers` beside a function module, after every other finder failed; first
    in the checkout a ChatDev function module comes from."""

    def __init__(self) -> None:
        self.folders: list[Path] = []
        self.roots: list[Path] = []  # ChatDev checkouts: their top level, as on ChatDev's path

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        """A spec for a top-level module found in a function module's folder, else None."""
        if path is not None or "." in fullname:
            return None  # submodules are found through their package's own path
        for root in list(self.roots):
            spec = importlib.machinery.PathFinder.find_spec(fullname, [str(root)])
            if spec is not None:
                return spec
        for folder in list(self.folders):
            for candidate in (folder / f"{fullname}.py", folder / fullname / "__init__.py"):
                if is_file(candidate):
                    return importlib.util.spec_from_file_location(fullname, candidate)
        return None

    def add(self, folder: Path, root: Path | None = None) -> None:
        """Let modules of `folder` (and, first, of the checkout `root`) be imported by their
        plain name."""
        with _LOCK:
            if root is not None and root not in self.roots:
                self.roots.append(root)
            if folder not in self.folders:
                self.folders.append(folder)
            if self not in sys.meta_path:
                sys.meta_path.append(self)


_HELPERS = _HelperFinder()


def installed(top: str) -> bool:
    """Whether the top-level module `top` is found as an import finds it, the folders of function
    modules and ChatDev checkouts apart (nothing is imported)."""
    for finder in list(sys.meta_path):
        if finder is _HELPERS or not hasattr(finder, "find_spec"):
            continue
        try:
            if finder.find_spec(top, None) is not None:
                return True
        except (ImportError, ValueError):
            continue
    return False


def _module_name(file: Path) -> str:
    digest = hashlib.sha1(str(file).encode()).hexdigest()[:12]
    stem = "".join(c if c.isalnum() else "_" for c in file.stem)
    return f"devall_functions_{digest}_{stem}"


def _import_failure(file: Path, exc: BaseException) -> FunctionResolutionError:
    """A one-line error naming the file (and line) instead of a traceback."""
    if isinstance(exc, SyntaxError):
        where = f"{file}:{exc.lineno}" if exc.lineno else str(file)
        return FunctionResolutionError(f"{where}: cannot import function module: {exc.msg}")
    frames = traceback.extract_tb(exc.__traceback__)
    line = next((f.lineno for f in reversed(frames) if f.filename == str(file)), None)
    where = f"{file}:{line}" if line else str(file)
    return FunctionResolutionError(
        f"{where}: cannot import function module: {type(exc).__name__}: {exc}"
    )


def load_module(file: Path) -> types.ModuleType:
    """Import a function module by path (cached); an import failure becomes a clear error.

    This runs the module's code: called when a run needs its functions.
    """
    key = str(file)
    with _LOCK:
        cached = _MODULES.get(key)
        if cached is not None:
            return cached
        name = _module_name(file)
        spec = importlib.util.spec_from_file_location(name, file)
        if spec is None or spec.loader is None:
            raise FunctionResolutionError(f"{file}: not a loadable Python file")
        module = importlib.util.module_from_spec(spec)
        # Registered before running so that dataclasses and pickling inside the module work.
        sys.modules[name] = module
        _HELPERS.add(file.parent, chatdev_root(file))
        try:
            spec.loader.exec_module(module)
        except BaseException as exc:  # SystemExit, KeyboardInterrupt too: it is module code
            sys.modules.pop(name, None)
            raise _import_failure(file, exc) from None
        _MODULES[key] = module
        return module


def load_named(file: Path, name: str) -> Callable[..., Any]:
    """The function `name` of the module `file`, importing the module (once per process)."""
    module = load_module(file)
    func = getattr(module, name, None)
    if not callable(func):
        raise FunctionResolutionError(
            f"{file}: '{name}' is not a function once the module has run"
        )
    return cast(Callable[..., Any], func)
