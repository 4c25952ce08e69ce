"""`type: function`: Python functions from the functions directory (SPEC.md §4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from devall_cli.config.function_dirs import NO_FOLDER, TOOLS, FunctionFolder, locate
from devall_cli.config.json_shapes import array_of, keys_object
from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import (
    Checker,
    KeySpec,
    check_keys,
    describe,
    get_mapping,
    opt_number,
    opt_str,
)
from devall_cli.config.yaml_source import KeyPath
from devall_cli.tools.kinds.registry import TOOLING_TYPES, ToolingType

if TYPE_CHECKING:
    from devall_cli.tools.base import ToolSource
    from devall_cli.tools.plan import SourceContext


@dataclass(frozen=True)
class FunctionRef:
    """One entry of a function tooling's `tools` list."""

    name: str  # a function name, or `module:All`


@dataclass(frozen=True)
class FunctionToolingConfig:
    """`tooling[].config` of `type: function`."""

    tools: tuple[FunctionRef, ...]
    timeout: float = 30.0
    folder: FunctionFolder = NO_FOLDER  # where the loader found the functions

    @property
    def functions_dir(self) -> str:
        """The functions directory (absolute), as listings show it."""
        return self.folder.root

    def identity(self) -> tuple[Any, ...]:
        """Function tooling has no server; each entry is its own source."""
        return ("function", self.folder, self.tools, self.timeout)

    def display_target(self) -> str:
        """The functions directory."""
        return self.functions_dir


_FUNCTION_KEYS = KeySpec(known=frozenset({"tools", "timeout"}), ignored=frozenset({"auto_load"}))


_FUNCTION_REF_KEYS = KeySpec(
    known=frozenset({"name"}),
    noted={
        key: f"'{key}' of a function tool has no effect in devall (ignored)"
        for key in ("description", "parameters", "auto_fill")
    },
)


def functions_folder(ck: Checker, kind: str = TOOLS) -> FunctionFolder:
    """Where functions of `kind` are looked for, for the workflow being loaded."""
    return locate(kind, ck.workflow_dir, ck.environ)


def parse_function(
    ck: Checker, config: dict[str, Any], path: KeyPath
) -> FunctionToolingConfig | None:
    """`type: function`: Python functions from the functions directory.

    Every reference is checked, also when others are wrong, and each problem is reported at the
    entry that names it.
    """
    check_keys(ck, config, path, _FUNCTION_KEYS)
    refs = _function_refs(ck, config, path)
    timeout = opt_number(ck, config, "timeout", path, 30.0, positive=True)
    if refs is None:
        return None
    folder = functions_folder(ck)
    usable = tuple(ref for _, ref in refs)
    names = _resolve_functions(ck, folder, refs, path)
    if names is None or len(usable) != len(_entries(config)):
        return None
    ck.static_tool_names[path[:-1]] = names
    return FunctionToolingConfig(tools=usable, timeout=timeout, folder=folder)


def _entries(config: dict[str, Any]) -> list[Any]:
    tools = config.get("tools")
    return tools if isinstance(tools, list) else []


def _function_refs(
    ck: Checker, config: dict[str, Any], path: KeyPath
) -> list[tuple[int, FunctionRef]] | None:
    """(index in `tools`, reference) of every well-formed entry; None when `tools` is unusable."""
    tools = config.get("tools")
    here = (*path, "tools")
    if tools is UNRESOLVED:
        return None
    if tools is None or tools == []:
        ck.error(here, "tools is required: list the functions, e.g. tools: [{name: get_weather}]")
        return None
    if not isinstance(tools, list):
        ck.error(here, f"tools must be a list of {{name: ...}} entries, got {describe(tools)}")
        return None
    refs: list[tuple[int, FunctionRef]] = []
    for index, item in enumerate(tools):
        entry = get_mapping(ck, item, (*here, index), "a function tool entry")
        if entry is None:
            continue
        check_keys(ck, entry, (*here, index), _FUNCTION_REF_KEYS)
        name = opt_str(ck, entry, "name", (*here, index), required=True)
        if name is not None:
            refs.append((index, FunctionRef(name.strip())))
    return refs


def _resolve_functions(
    ck: Checker,
    folder: FunctionFolder,
    refs: list[tuple[int, FunctionRef]],
    path: KeyPath,
) -> list[str] | None:
    """The final function names, or None after reporting every reason they cannot be resolved."""
    from devall_cli.config.functions import resolve_functions

    infos, problems = resolve_functions(folder, [ref for _, ref in refs])
    for problem in problems:
        where: KeyPath = (*path, "tools")
        if problem.index is not None:
            where = (*where, refs[problem.index][0], "name")
        ck.error(where, problem.message)
    for info in infos:
        for warning in info.warnings:
            ck.warning((*path, "tools", refs[info.ref_index][0], "name"), warning)
    return None if problems else [info.name for info in infos]


def make_function_source(
    source_id: str, settings: FunctionToolingConfig, ctx: SourceContext
) -> ToolSource:
    """The functions of a functions directory."""
    from devall_cli.tools.functions import FunctionSource

    context = {
        "run_id": ctx.run_id,
        "workflow_dir": ctx.workflow_dir,
        "run_dir": ctx.run_dir,
        "attachment_store": ctx.store,
    }
    return FunctionSource(
        id=source_id,
        config=settings,
        store=ctx.store,
        context=context,
        import_modules=ctx.import_functions,
    )


TOOLING_TYPES.register(
    ToolingType(
        "function",
        parse_function,
        "Python functions from the functions directory",
        keys=_FUNCTION_KEYS,
        make_source=make_function_source,
        base_name=lambda settings: "functions",
        is_server=False,
        shapes=lambda: {"tools": array_of(keys_object(_FUNCTION_REF_KEYS, strict=True))},
    )
)
