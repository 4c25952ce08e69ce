"""A functions folder read from source: which module defines which function (nothing is run).

Names are looked up as ChatDev writes them: a bare function name (`get_weather`), a function of
one module (`utils:add`), or every function of a module (`utils:All`); the module id is the
file's path relative to the folder, without `.py` (`utils`, `tools/web`). Where ChatDev lets the
last module loaded win a name defined twice, devall reports the ambiguity: the order in which
ChatDev loads modules depends on the file system.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from devall_cli.config.function_dirs import FolderError, FunctionFolder
from devall_cli.config.function_loading import FunctionResolutionError
from devall_cli.config.module_source import (
    MAX_MODULE_BYTES,
    FunctionNode,
    ModuleReadError,
    ModuleSource,
    parse_module,
)
from devall_cli.text import suggest

ALL = "All"
_CACHE_SIZE = 512
# Parsed modules by (path, modification time, size): a file read by several entries or edges
# is parsed once, and a changed file is read again.
_PARSED: dict[tuple[str, int, int], ModuleSource] = {}


@dataclass(frozen=True)
class Found:
    """A function as its module's source defines it."""

    module: ModuleSource
    module_id: str
    name: str
    node: FunctionNode

    @property
    def where(self) -> str:
        """`file:line` of the definition."""
        return f"{self.module.file}:{getattr(self.node, 'lineno', 0)}"


def read_module(file: Path) -> ModuleSource:
    """The parsed module (cached); an unreadable one is a FunctionResolutionError."""
    try:
        stat = file.stat()
        key = (str(file), stat.st_mtime_ns, stat.st_size)
        cached = _PARSED.get(key)
        if cached is None:
            cached = parse_module(file)
            if len(_PARSED) >= _CACHE_SIZE:
                _PARSED.clear()
            _PARSED[key] = cached
        return cached
    except ModuleReadError as exc:
        raise FunctionResolutionError(str(exc)) from None
    except OSError as exc:
        raise FunctionResolutionError(
            f"{file}: cannot read function module: {exc.strerror}"
        ) from None


class FunctionCatalog:
    """The modules of one folder, parsed only as far as a lookup needs them."""

    def __init__(self, folder: FunctionFolder) -> None:
        if not folder.exists:
            raise FunctionResolutionError(folder.missing_message())
        self.folder = folder
        try:
            self.files = folder.modules()
        except FolderError as exc:
            raise FunctionResolutionError(str(exc)) from None

    def lookup(self, ref: str, *, allow_all: bool = True) -> list[Found]:
        """The functions `ref` names: `name`, `module:name` or (if allowed) `module:All`."""
        module_id, sep, member = (part.strip() for part in ref.partition(":"))
        if not sep:
            found = self.find(ref.strip())
            if len(found) > 1:
                where = ", ".join(str(f.module.file) for f in found)
                raise FunctionResolutionError(
                    f"function '{ref.strip()}' is defined in several modules ({where}); "
                    f"name one of them: '<module>:{ref.strip()}'"
                )
            return found
        module = read_module(self._module_file(module_id))
        functions = module.functions()
        if member == ALL and allow_all:
            return [Found(module, module_id, name, node) for name, node in functions.items()]
        if member not in functions:
            message = f"unknown function '{member}' in {module.file}"
            guess = suggest(member, list(functions))
            raise FunctionResolutionError(_with_guess(message, guess))
        return [Found(module, module_id, member, functions[member])]

    def _module_file(self, module_id: str) -> Path:
        files = [file for file, known in self.files if known == module_id]
        if not files:
            ids = [known for _, known in self.files]
            message = (
                f"unknown function module '{module_id}' "
                f"(no {module_id}.py in {self.folder.describe()})"
            )
            guess = suggest(module_id, ids)
            raise FunctionResolutionError(_with_guess(message, guess))
        if len(files) > 1:
            raise FunctionResolutionError(
                f"function module '{module_id}' is ambiguous: {', '.join(map(str, files))}"
            )
        return files[0]

    def find(self, name: str) -> list[Found]:
        """Every module defining `name`; when none does, the error names the likely module."""
        found: list[Found] = []
        failures: list[tuple[Path, FunctionResolutionError]] = []
        known: list[str] = []
        for file, module_id in self.files:
            try:
                module = read_module(file)
            except FunctionResolutionError as exc:
                failures.append((file, exc))
                continue
            functions = module.functions()
            known.extend(functions)
            if name in functions:
                found.append(Found(module, module_id, name, functions[name]))
        if not found:
            raise FunctionResolutionError(self._missing(name, known, failures))
        return found

    def _missing(
        self, name: str, known: list[str], failures: list[tuple[Path, FunctionResolutionError]]
    ) -> str:
        for file, failure in failures:
            if _mentions(file, name):
                return (
                    f"unknown function '{name}': it is defined in {file.name}, which cannot be "
                    f"read: {failure.message}"
                )
        message = f"unknown function '{name}' in {self.folder.describe()}"
        guess = suggest(name, known)
        if guess:
            message += f"; did you mean '{guess}'?"
        if failures:
            count = len(failures)
            message += (
                f" ({count} module{'s' * (count != 1)} could not be read, such as "
                f"{failures[0][1].message})"
            )
        return message


def _mentions(file: Path, name: str) -> bool:
    """Whether the text of an unreadable module defines `name` (a `def` or an assignment)."""
    try:
        with file.open("rb") as handle:
            text = handle.read(MAX_MODULE_BYTES).decode("utf-8", "replace")
    except OSError:
        return False
    pattern = rf"^(?:[ \t]*(?:async[ \t]+)?def[ \t]+{re.escape(name)}\b|{re.escape(name)}[ \t]*=)"
    return re.search(pattern, text, re.MULTILINE) is not None


def _with_guess(message: str, guess: str | None) -> str:
    return f"{message}; did you mean '{guess}'?" if guess else message
