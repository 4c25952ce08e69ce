"""Function tools: discovery in the functions directory and JSON schemas from signatures.

Config-time code (SPEC.md §4 "function"): it imports the user's modules but never fastmcp or
httpx. `resolve_function_tools` turns a tooling entry's `tools` list into `FunctionInfo`s;
`load_function` gives the callable back for execution.
"""

from __future__ import annotations

import contextlib
import enum
import hashlib
import importlib.util
import inspect
import sys
import threading
import traceback
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devall_cli.config.model import FunctionRef

CONTEXT_PARAM = "_context"
CHATDEV_SUBDIR = "function_calling"  # ChatDev keeps its functions in functions/function_calling/
_ALL = "All"


@dataclass(frozen=True)
class FunctionInfo:
    """One Python function offered as a tool."""

    name: str
    module: str  # module name: the file stem
    file: str  # absolute path of the module file
    description: str
    input_schema: Mapping[str, Any]
    accepts_context: bool


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
    """Import a function module by path (cached); an import failure becomes a clear error."""
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
        except BaseException as exc:
            sys.modules.pop(name, None)
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise _import_failure(file, exc) from None
        finally:
            with contextlib.suppress(ValueError):
                sys.path.remove(str(file.parent))
        _MODULES[key] = module
        return module


def public_functions(module: types.ModuleType) -> dict[str, Callable[..., Any]]:
    """The public functions defined in `module` itself (imported ones are left out), by name."""
    found: dict[str, Callable[..., Any]] = {}
    for name, obj in vars(module).items():
        if name.startswith("_") or not inspect.isfunction(obj):
            continue
        if obj.__module__ == module.__name__:
            found[name] = obj
    return dict(sorted(found.items()))


def load_function(info: FunctionInfo) -> Callable[..., Any]:
    """The callable behind `info` (modules are imported once per process)."""
    module = load_module(Path(info.file))
    func = public_functions(module).get(info.name)
    if func is None:
        raise FunctionResolutionError(f"{info.file}: function '{info.name}' no longer exists")
    return func


# --- schemas -------------------------------------------------------------------------------

_SIMPLE: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    list: {"type": "array"},
    tuple: {"type": "array"},
    set: {"type": "array", "uniqueItems": True},
    frozenset: {"type": "array", "uniqueItems": True},
    dict: {"type": "object"},
}
_ARRAYS = {list, tuple, set, frozenset, Sequence}
_OBJECTS = {dict, Mapping}


def _simple(tp: Any) -> dict[str, Any] | None:
    try:
        found = _SIMPLE.get(tp)
    except TypeError:  # an unhashable annotation object
        return None
    return dict(found) if found is not None else None


def _json_type(value: Any) -> str | None:
    for py_type, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string")):
        if isinstance(value, py_type):
            return name
    return "null" if value is None else None


def _enum_schema(values: Sequence[Any]) -> dict[str, Any]:
    schema: dict[str, Any] = {"enum": list(values)}
    kinds = {_json_type(v) for v in values}
    if len(kinds) == 1 and None not in kinds:
        schema = {"type": kinds.pop(), **schema}
    return schema


def _strip_annotated(tp: Any) -> tuple[Any, str | None]:
    """`Annotated[T, "text", ...]` → (T, "text")."""
    description = None
    while typing.get_origin(tp) is typing.Annotated:
        base, *meta = typing.get_args(tp)
        description = description or next((m for m in meta if isinstance(m, str)), None)
        tp = base
    return tp, description


def _union_args(tp: Any) -> tuple[Any, ...] | None:
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(tp)
    return None


def is_optional(tp: Any) -> bool:
    """True for `Optional[T]`, `T | None` (also inside `Annotated`)."""
    args = _union_args(_strip_annotated(tp)[0])
    return args is not None and type(None) in args


def enum_type(tp: Any) -> type[enum.Enum] | None:
    """The Enum class of `E`, `Optional[E]` or `Annotated[E, ...]`, else None."""
    tp = _strip_annotated(tp)[0]
    candidates = _union_args(tp) or (tp,)
    return next(
        (c for c in candidates if isinstance(c, type) and issubclass(c, enum.Enum)), None
    )


def type_schema(tp: Any) -> dict[str, Any]:
    """The JSON schema of one annotation; anything unsupported is `{}` (any value)."""
    tp, description = _strip_annotated(tp)
    schema = _bare_schema(tp)
    if description:
        schema = {**schema, "description": description}
    return schema


def _bare_schema(tp: Any) -> dict[str, Any]:
    if tp is Any or tp is inspect.Parameter.empty:
        return {}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum_schema([member.value for member in tp])
    simple = _simple(tp)
    if simple is not None:
        return simple
    union = _union_args(tp)
    if union is not None:
        branches = [type_schema(arg) for arg in union if arg is not type(None)]
        return branches[0] if len(branches) == 1 else {"anyOf": branches}
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Literal:
        return _enum_schema(args)
    if origin in _ARRAYS:
        schema: dict[str, Any] = {"type": "array"}
        if origin in (set, frozenset):
            schema["uniqueItems"] = True
        if args and (origin is not tuple or (len(args) == 2 and args[1] is Ellipsis)):
            schema["items"] = type_schema(args[0])
        return schema
    if origin in _OBJECTS:
        schema = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = type_schema(args[1])
        return schema
    return {}


def _json_default(value: Any) -> tuple[bool, Any]:
    """(usable, value) for a parameter default copied into the schema."""
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, tuple | frozenset | set):
        value = list(value)
    if value is None or isinstance(value, str | int | float | bool):
        return True, value
    if isinstance(value, list) and all(_json_default(v)[0] for v in value):
        return True, [_json_default(v)[1] for v in value]
    if isinstance(value, dict) and all(
        isinstance(k, str) and _json_default(v)[0] for k, v in value.items()
    ):
        return True, {k: _json_default(v)[1] for k, v in value.items()}
    return False, None


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
            # The module's own code already ran, so evaluating its annotations adds no risk.
            hints[name] = eval(annotation, namespace)
    return hints


def input_schema(func: Callable[..., Any]) -> dict[str, Any]:
    """The JSON schema of a function's parameters (`_context`, *args, **kwargs left out)."""
    hints = read_type_hints(func)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in inspect.signature(func).parameters.values():
        if param.name == CONTEXT_PARAM or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(param.name, inspect.Parameter.empty)
        prop = type_schema(annotation)
        if param.default is not param.empty:
            usable, default = _json_default(param.default)
            if usable:
                prop["default"] = default
        elif not is_optional(annotation):
            required.append(param.name)
        properties[param.name] = prop
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def describe(func: Callable[..., Any]) -> str:
    """The first paragraph of the docstring, on one line."""
    doc = inspect.getdoc(func) or ""
    paragraph = doc.strip().split("\n\n", 1)[0]
    return " ".join(line.strip() for line in paragraph.splitlines()).strip()


def function_info(name: str, func: Callable[..., Any], file: Path) -> FunctionInfo:
    """Everything the tool list needs about one function, known in its module as `name`."""
    params = inspect.signature(func).parameters
    return FunctionInfo(
        name=name,
        module=file.stem,
        file=str(file),
        description=describe(func),
        input_schema=input_schema(func),
        accepts_context=CONTEXT_PARAM in params,
    )


# --- resolution ----------------------------------------------------------------------------


def module_files(functions_dir: Path) -> list[Path]:
    """Candidate module files: `*.py` not starting with `_`, also in `function_calling/`."""
    files: list[Path] = []
    for folder in (functions_dir, functions_dir / CHATDEV_SUBDIR):
        if folder.is_dir():
            files.extend(p for p in sorted(folder.glob("*.py")) if not p.name.startswith("_"))
    return files


_Found = tuple[Path, str, Callable[..., Any]]  # module file, name in the module, function


class _Catalog:
    """The functions directory, imported lazily: only the modules a reference needs."""

    def __init__(self, functions_dir: Path) -> None:
        self.dir = functions_dir
        self.files = module_files(functions_dir)

    def module(self, stem: str) -> Path | None:
        return next((f for f in self.files if f.stem == stem), None)

    def functions(self, file: Path) -> dict[str, Callable[..., Any]]:
        return public_functions(load_module(file))

    def find(self, name: str) -> list[_Found]:
        """Every module file defining `name`; import failures are raised only if it is missing."""
        found: list[_Found] = []
        failures: list[FunctionResolutionError] = []
        for file in self.files:
            try:
                func = self.functions(file).get(name)
            except FunctionResolutionError as exc:
                failures.append(exc)
                continue
            if func is not None:
                found.append((file, name, func))
        if not found and failures:
            # The function may be in the module that did not import: say so.
            raise FunctionResolutionError(f"unknown function '{name}'; {failures[0].message}")
        return found


def _expand(catalog: _Catalog, ref: FunctionRef) -> list[_Found]:
    module, sep, member = ref.name.partition(":")
    if sep:
        file = catalog.module(module.strip())
        if file is None:
            raise FunctionResolutionError(
                f"unknown function module '{module}' (no {module}.py in {catalog.dir})"
            )
        functions = catalog.functions(file)
        if member.strip() == _ALL:
            return [(file, name, f) for name, f in functions.items()]
        if member.strip() not in functions:
            raise FunctionResolutionError(f"unknown function '{member}' in {file}")
        return [(file, member.strip(), functions[member.strip()])]
    found = catalog.find(ref.name.strip())
    if not found:
        raise FunctionResolutionError(f"unknown function '{ref.name}' in {catalog.dir}")
    if len(found) > 1:
        where = ", ".join(str(file) for file, _, _ in found)
        raise FunctionResolutionError(
            f"function '{ref.name}' is defined in several modules ({where}); "
            f"use 'module:{ref.name}'"
        )
    return found


def resolve_function_tools(functions_dir: Path, refs: Sequence[FunctionRef]) -> list[FunctionInfo]:
    """The functions a tooling entry's `tools` list names, in order; errors carry the ref index."""
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
        for file, name, func in expanded:
            if name in seen:
                raise FunctionResolutionError(f"function '{name}' is declared twice", index)
            seen.add(name)
            infos.append(function_info(name, func, file))
    return infos
