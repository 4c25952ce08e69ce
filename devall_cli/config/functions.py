"""Function tools: discovery in the functions directory, with schemas read from the source.

Config-time code (SPEC.md §4 "function"); it never imports fastmcp or httpx. Resolving a tooling
entry's `tools` list (`resolve_function_tools`) reads the modules as source text and never runs
them, so `devall validate` and `devall tools list` run no user code. A run imports a module
(`load_module`, `load_function`) only when it is about to call its functions.
"""

from __future__ import annotations

import contextlib
import enum
import hashlib
import importlib.util
import sys
import threading
import traceback
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from devall_cli.config.function_signature import CONTEXT_PARAM, describe, read_signature
from devall_cli.config.model import FunctionRef
from devall_cli.config.module_source import (
    FunctionNode,
    ModuleReadError,
    ModuleSource,
    parse_module,
)

CHATDEV_SUBDIR = "function_calling"  # ChatDev keeps its functions in functions/function_calling/
_ALL = "All"


@dataclass(frozen=True)
class FunctionInfo:
    """One Python function offered as a tool, as its module's source describes it."""

    name: str
    module: str  # module name: the file stem
    file: str  # absolute path of the module file
    description: str
    input_schema: Mapping[str, Any]
    accepts_context: bool
    nullable: tuple[str, ...] = ()  # parameters that take None: Optional, or None by default
    warnings: tuple[str, ...] = ()  # annotations the source alone could not tell
    ref_index: int = 0  # the entry of the `tools` list that named it


class FunctionResolutionError(Exception):
    """A function reference could not be resolved; `index` points into the refs list."""

    def __init__(self, message: str, index: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.index = index


# --- module loading ------------------------------------------------------------------------

# One module object per file, shared by every tooling entry and run of the process.
_MODULES: dict[str, types.ModuleType] = {}
_LOCK = threading.RLock()


def _module_name(file: Path) -> str:
    # Unique per path so that two `utils.py` in different folders never clash in sys.modules.
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

    This runs the module's code: called from a worker thread when a run needs its functions.
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
        # Registered before running so dataclasses and pickling inside the module work; the
        # module's folder is importable so that it can use helper modules beside it.
        sys.modules[name] = module
        sys.path.insert(0, str(file.parent))
        try:
            spec.loader.exec_module(module)
        except BaseException as exc:  # SystemExit, KeyboardInterrupt too: it is module code
            sys.modules.pop(name, None)
            raise _import_failure(file, exc) from None
        finally:
            with contextlib.suppress(ValueError):
                sys.path.remove(str(file.parent))
        _MODULES[key] = module
        return module


def load_function(info: FunctionInfo) -> Callable[..., Any]:
    """The callable behind `info`, importing its module (once per process)."""
    module = load_module(Path(info.file))
    func = getattr(module, info.name, None)
    if not callable(func):
        raise FunctionResolutionError(
            f"{info.file}: '{info.name}' is not a function once the module has run"
        )
    return typing.cast(Callable[..., Any], func)


# --- annotations at call time ------------------------------------------------------------
# The schema comes from the source (annotation_schema); a run still needs the imported hints to
# turn values into Enum members and to pass None for Optional parameters left out.


def _strip_annotated(tp: Any) -> Any:
    """`Annotated[T, ...]` → T."""
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def _union_args(tp: Any) -> tuple[Any, ...] | None:
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(tp)
    return None


def is_optional(tp: Any) -> bool:
    """True for `Optional[T]`, `T | None` (also inside `Annotated`)."""
    args = _union_args(_strip_annotated(tp))
    return args is not None and type(None) in args


def enum_type(tp: Any) -> type[enum.Enum] | None:
    """The Enum class of `E`, `Optional[E]` or `Annotated[E, ...]`, else None."""
    tp = _strip_annotated(tp)
    candidates = _union_args(tp) or (tp,)
    return next(
        (c for c in candidates if isinstance(c, type) and issubclass(c, enum.Enum)), None
    )


def read_type_hints(func: Callable[..., Any]) -> dict[str, Any]:
    """Resolved annotations (with `Annotated` extras); unresolvable ones are left out."""
    try:
        return typing.get_type_hints(func, include_extras=True)
    except Exception:
        pass
    # Some forward reference does not resolve: resolve the others one by one.
    hints: dict[str, Any] = {}
    namespace = getattr(func, "__globals__", {})
    for name, annotation in getattr(func, "__annotations__", {}).items():
        if not isinstance(annotation, str):
            hints[name] = annotation
            continue
        with contextlib.suppress(Exception):
            # Called once the module has been imported for a run: its code already ran.
            hints[name] = eval(annotation, namespace)
    return hints


def function_info(name: str, node: FunctionNode, module: ModuleSource) -> FunctionInfo:
    """Everything the tool list needs about one function, known in its module as `name`."""
    args = node.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    signature = read_signature(name, node, module)
    return FunctionInfo(
        name=name,
        module=module.file.stem,
        file=str(module.file),
        description=describe(node),
        input_schema=signature.input_schema,
        accepts_context=CONTEXT_PARAM in names,
        nullable=signature.nullable,
        warnings=signature.warnings,
    )


# --- resolution ----------------------------------------------------------------------------


def module_files(functions_dir: Path) -> list[Path]:
    """Candidate module files: `*.py` not starting with `_`, also in `function_calling/`."""
    files: list[Path] = []
    for folder in (functions_dir, functions_dir / CHATDEV_SUBDIR):
        if folder.is_dir():
            files.extend(p for p in sorted(folder.glob("*.py")) if not p.name.startswith("_"))
    return files


_Found = tuple[ModuleSource, str, FunctionNode]  # module, name in the module, its definition


class _Catalog:
    """The functions directory, read lazily: only the modules a reference needs are parsed."""

    def __init__(self, functions_dir: Path) -> None:
        self.dir = functions_dir
        self.files = module_files(functions_dir)
        self._parsed: dict[Path, ModuleSource] = {}

    def module(self, stem: str) -> Path | None:
        return next((f for f in self.files if f.stem == stem), None)

    def source(self, file: Path) -> ModuleSource:
        if file not in self._parsed:
            try:
                self._parsed[file] = parse_module(file)
            except ModuleReadError as exc:
                raise FunctionResolutionError(str(exc)) from None
        return self._parsed[file]

    def find(self, name: str) -> list[_Found]:
        """Every module defining `name`; unreadable modules are reported only if it is missing."""
        found: list[_Found] = []
        failures: list[FunctionResolutionError] = []
        for file in self.files:
            try:
                module = self.source(file)
            except FunctionResolutionError as exc:
                failures.append(exc)
                continue
            node = module.functions().get(name)
            if node is not None:
                found.append((module, name, node))
        if not found and failures:
            # The function may be in the module that could not be read: say so.
            raise FunctionResolutionError(f"unknown function '{name}'; {failures[0].message}")
        return found


def _expand(catalog: _Catalog, ref: FunctionRef) -> list[_Found]:
    module_name, sep, member = ref.name.partition(":")
    if sep:
        file = catalog.module(module_name.strip())
        if file is None:
            raise FunctionResolutionError(
                f"unknown function module '{module_name}' (no {module_name}.py in {catalog.dir})"
            )
        module = catalog.source(file)
        functions = module.functions()
        if member.strip() == _ALL:
            return [(module, name, node) for name, node in functions.items()]
        if member.strip() not in functions:
            raise FunctionResolutionError(f"unknown function '{member}' in {file}")
        return [(module, member.strip(), functions[member.strip()])]
    found = catalog.find(ref.name.strip())
    if not found:
        raise FunctionResolutionError(f"unknown function '{ref.name}' in {catalog.dir}")
    if len(found) > 1:
        where = ", ".join(str(module.file) for module, _, _ in found)
        raise FunctionResolutionError(
            f"function '{ref.name}' is defined in several modules ({where}); "
            f"use 'module:{ref.name}'"
        )
    return found


def resolve_function_tools(functions_dir: Path, refs: Sequence[FunctionRef]) -> list[FunctionInfo]:
    """The functions a tooling entry's `tools` list names, in order, read from their source.

    No module is imported. Errors carry the index of the reference they concern.
    """
    if not functions_dir.is_dir():
        raise FunctionResolutionError(f"functions directory not found: {functions_dir}")
    catalog = _Catalog(functions_dir)
    infos: list[FunctionInfo] = []
    seen: set[str] = set()
    for index, ref in enumerate(refs):
        try:
            expanded = _expand(catalog, ref)
        except FunctionResolutionError as exc:
            raise FunctionResolutionError(exc.message, index) from None
        for module, name, node in expanded:
            if name in seen:
                raise FunctionResolutionError(f"function '{name}' is declared twice", index)
            seen.add(name)
            info = function_info(name, node, module)
            infos.append(replace(info, ref_index=index))
    return infos
