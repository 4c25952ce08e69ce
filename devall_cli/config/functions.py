"""Function tools: the functions a tooling entry names, with schemas read from the source.

Config-time code (SPEC.md §4 "function"); it never imports fastmcp or httpx. Resolving a tooling
entry's `tools` list (`resolve_functions`) reads the modules as source text and never runs
them, so `devall validate` and `devall tools list` run no user code. A run imports a module
(`load_module`, `load_function`) only when it is about to call its functions.
"""

from __future__ import annotations

import contextlib
import enum
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from devall_cli.config.function_catalog import Found, FunctionCatalog
from devall_cli.config.function_dirs import FunctionFolder, tools_folder
from devall_cli.config.function_loading import FunctionResolutionError, load_module, load_named
from devall_cli.config.function_signature import CONTEXT_PARAM, describe, read_signature
from devall_cli.config.module_imports import missing_import


class FunctionRef(Protocol):
    """One entry of a function tooling's `tools` list (tools.kinds.function.FunctionRef)."""

    @property
    def name(self) -> str: ...


__all__ = [
    "FunctionInfo",
    "FunctionResolutionError",
    "enum_type",
    "function_info",
    "is_optional",
    "load_function",
    "load_module",
    "read_type_hints",
    "resolve_function_tools",
    "resolve_functions",
]


@dataclass(frozen=True)
class FunctionInfo:
    """One Python function offered as a tool, as its module's source describes it."""

    name: str
    module: str  # module id: the path relative to its folder, without .py
    file: str  # absolute path of the module file
    description: str
    input_schema: Mapping[str, Any]
    accepts_context: bool
    nullable: tuple[str, ...] = ()  # parameters that take None: Optional, or None by default
    warnings: tuple[str, ...] = ()  # annotations the source alone could not tell
    ref_index: int = 0  # the entry of the `tools` list that named it


def load_function(info: FunctionInfo) -> Callable[..., Any]:
    """The callable behind `info`, importing its module (once per process)."""
    return load_named(Path(info.file), info.name)


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


def function_info(found: Found) -> FunctionInfo:
    """Everything the tool list needs about one function, as its module's source defines it."""
    node, module = found.node, found.module
    args = node.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    signature = read_signature(found.name, node, module)
    return FunctionInfo(
        name=found.name,
        module=found.module_id,
        file=str(module.file),
        description=describe(node),
        input_schema=signature.input_schema,
        accepts_context=CONTEXT_PARAM in names,
        nullable=signature.nullable,
        warnings=signature.warnings,
    )


# --- resolution ----------------------------------------------------------------------------


def resolve_functions(
    folder: FunctionFolder | Path, refs: Sequence[FunctionRef]
) -> tuple[list[FunctionInfo], list[FunctionResolutionError]]:
    """The functions a tooling entry's `tools` list names, in order, and every problem.

    No module is imported. Each problem carries the index of the reference it concerns (None
    when the folder itself is the problem); the other references are still resolved.
    """
    if isinstance(folder, Path):
        folder = tools_folder(folder)
    try:
        catalog = FunctionCatalog(folder)
    except FunctionResolutionError as exc:
        return [], [exc]
    infos: list[FunctionInfo] = []
    problems: list[FunctionResolutionError] = []
    seen: set[str] = set()
    checked: set[Path] = set()  # modules whose imports were looked up
    for index, ref in enumerate(refs):
        try:
            expanded = catalog.lookup(ref.name)
        except FunctionResolutionError as exc:
            problems.append(FunctionResolutionError(exc.message, index))
            continue
        for module in {found.module.file: found.module for found in expanded}.values():
            if module.file not in checked:
                checked.add(module.file)
                missing = missing_import(module)
                if missing is not None:
                    problems.append(FunctionResolutionError(missing, index))
        for found in expanded:
            if found.name in seen:
                message = f"function '{found.name}' is declared twice"
                problems.append(FunctionResolutionError(message, index))
                continue
            seen.add(found.name)
            infos.append(replace(function_info(found), ref_index=index))
    return infos, problems


def resolve_function_tools(
    folder: FunctionFolder | Path, refs: Sequence[FunctionRef]
) -> list[FunctionInfo]:
    """The functions `refs` name; the first problem is raised (with how many others there are)."""
    infos, problems = resolve_functions(folder, refs)
    if problems:
        first, more = problems[0], len(problems) - 1
        suffix = f" (and {more} more problem{'s' * (more != 1)})" if more else ""
        raise FunctionResolutionError(first.message + suffix, first.index)
    return infos
