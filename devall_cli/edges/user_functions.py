"""User functions on edges: conditions from `functions/edge/`, processors from
`functions/edge_processor/`.

When a workflow is loaded the function is found by reading the folder's modules as source text
(nothing runs), and its parameters are checked against how it will be called; the module file
that defines it is kept in the settings. A run imports that module (`EdgeEnv.function`).
"""

from __future__ import annotations

import ast

from devall_cli.config.function_catalog import Found, FunctionCatalog
from devall_cli.config.function_dirs import locate
from devall_cli.config.function_loading import FunctionResolutionError
from devall_cli.config.module_source import FunctionNode
from devall_cli.config.schema import Checker
from devall_cli.config.yaml_source import KeyPath


def find_edge_function(
    ck: Checker, kind: str, name: str, path: KeyPath, *, what: str, arguments: tuple[str, ...]
) -> str | None:
    """The module file defining `name` in the `kind` folder, or None after recording why not.

    `what` names the use in messages ("edge condition"); `arguments` describes what the function
    is called with, one positional argument each ("the message text").
    """
    folder = locate(kind, ck.workflow_dir, ck.environ)
    try:
        catalog = FunctionCatalog(folder)
    except FunctionResolutionError as exc:
        ck.error(path, f"{what} function '{name}' cannot be found: {exc.message}")
        return None
    try:
        (found,) = catalog.lookup(name, allow_all=False)
    except FunctionResolutionError as exc:
        ck.error(path, f"{what}: {exc.message}")
        return None
    problem = call_problem(found.node, len(arguments))
    if problem is not None:
        ck.error(
            path,
            f"{what} function '{name}' ({_where(found)}) is called with "
            f"{_listed(arguments)}, but it {problem}",
        )
        return None
    return str(found.module.file)


def attribute(ref: str) -> str:
    """The function's own name in a reference: `is_done` for `is_done` and `rules:is_done`."""
    return ref.rpartition(":")[2].strip()


def call_problem(node: FunctionNode, count: int) -> str | None:
    """Why a call with `count` positional arguments would fail, read from the signature."""
    if getattr(node, "decorator_list", None):
        return None  # a decorator may change the signature: the run will tell
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    required = len(positional) - len(args.defaults)
    defaults = zip(args.kwonlyargs, args.kw_defaults, strict=True)
    keyword_only = [a.arg for a, default in defaults if default is None]
    if keyword_only:
        return f"also requires the keyword-only argument(s) {', '.join(keyword_only)}"
    if required > count:
        return f"requires {required} arguments"
    if len(positional) < count and args.vararg is None:
        return f"takes {_count(len(positional))}"
    return None


def _count(number: int) -> str:
    if number == 0:
        return "no argument"
    return f"only {number} argument{'s' * (number != 1)}"


def _listed(arguments: tuple[str, ...]) -> str:
    if len(arguments) == 1:
        return f"one argument ({arguments[0]})"
    return f"{len(arguments)} arguments ({', '.join(arguments)})"


def _where(found: Found) -> str:
    line = found.node.lineno if isinstance(found.node, ast.AST) else 0
    return f"{found.module.file.name}:{line}"
