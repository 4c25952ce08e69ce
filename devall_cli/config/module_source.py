"""A function module read from its source text (the `ast` module), never imported.

`validate` and `tools list` must not run user code, so what a module defines is read from its
syntax tree: which names its top-level statements bind (functions, classes, imports, constants)
and in which order. Compound statements at the top level (`if`, `try`, `with`) are read through,
later bindings replacing earlier ones, as running them would in the usual case.
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devall_cli.config.file_probe import is_file

MAX_MODULE_BYTES = 10 * 1024 * 1024  # as for workflow files; real function modules are small
MAX_ALIAS_DEPTH = 20  # `A = B`, `B = C`, ... followed at most this far

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


class ModuleReadError(Exception):
    """The module's source cannot be read or parsed; the message names the file and line."""


@dataclass(frozen=True)
class Binding:
    """What a top-level name refers to, as far as the source tells."""

    kind: str  # function | class | module | imported | value | unknown
    node: ast.AST | None = None  # the def, lambda, class or assigned expression
    target: str = ""  # module | imported: the dotted name it came from


@dataclass(frozen=True)
class ModuleSource:
    """The parsed module and the final binding of each top-level name."""

    file: Path
    bindings: dict[str, Binding]
    # The modules its unconditional top-level imports name (not those under `if` or `try`,
    # which may be optional): (line, dotted name), `from . import x` left out.
    imports: tuple[tuple[int, str], ...] = ()

    def functions(self) -> dict[str, FunctionNode]:
        """Public functions defined here (defs, lambdas and names bound to them), by name."""
        return {
            name: binding.node
            for name, binding in sorted(self.bindings.items())
            if isinstance(binding.node, FunctionNode) and not name.startswith("_")
        }

    def qualified_name(self, node: ast.expr) -> tuple[str, Binding | None]:
        """`typing.Optional` for `Optional`, `t.Optional` or `typing.Optional` as written here.

        A name the module defines itself comes back as `local.<name>` with its binding; a name
        it does not bind at all is a builtin (`builtins.str`). Other expressions give "".
        """
        if isinstance(node, ast.Name):
            binding = self.bindings.get(node.id)
            if binding is None:
                return f"builtins.{node.id}", None
            if binding.kind in ("module", "imported"):
                return binding.target, binding
            return f"local.{node.id}", binding
        if isinstance(node, ast.Attribute):
            base, binding = self.qualified_name(node.value)
            if binding is not None and binding.kind in ("module", "imported"):
                return f"{base}.{node.attr}", binding
        return "", None

    def constant(self, node: ast.expr, depth: int = 0) -> tuple[bool, Any]:
        """(known, value) of a literal, or of a name bound here to a literal."""
        if isinstance(node, ast.Name) and depth < MAX_ALIAS_DEPTH:
            binding = self.bindings.get(node.id)
            if binding is not None and binding.kind == "value" and binding.node is not None:
                assert isinstance(binding.node, ast.expr)
                return self.constant(binding.node, depth + 1)
            return False, None
        try:
            return True, ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return False, None


def read_source(file: Path) -> str:
    """The module's text, decoded as Python decodes source (coding cookie, BOM)."""
    if not is_file(file):
        raise ModuleReadError(f"{file}: not a regular file")
    with file.open("rb") as handle:
        raw = handle.read(MAX_MODULE_BYTES + 1)
    if len(raw) > MAX_MODULE_BYTES:
        raise ModuleReadError(f"{file}: function modules may hold at most 10 MB")
    try:
        return importlib.util.decode_source(raw)
    except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
        raise ModuleReadError(f"{file}: cannot read function module: {exc}") from None


def parse_module(file: Path) -> ModuleSource:
    """Read and parse `file`; a syntax error becomes a ModuleReadError naming its line."""
    try:
        source = read_source(file)
    except OSError as exc:
        raise ModuleReadError(f"{file}: cannot read function module: {exc.strerror}") from None
    try:
        tree = ast.parse(source, filename=str(file))
    except SyntaxError as exc:
        where = f"{file}:{exc.lineno}" if exc.lineno else str(file)
        raise ModuleReadError(f"{where}: cannot read function module: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        reason = str(exc) or "the code is nested too deeply"
        raise ModuleReadError(f"{file}: cannot read function module: {reason}") from None
    bindings: dict[str, Binding] = {}
    for statement in _top_level(tree.body):
        _bind(statement, bindings)
    return ModuleSource(file, bindings, _imports(tree.body))


def _imports(body: list[ast.stmt]) -> tuple[tuple[int, str], ...]:
    """The modules the module-level `import` statements (outside `if`/`try`) name."""
    found: list[tuple[int, str]] = []
    for statement in body:
        if isinstance(statement, ast.Import):
            found.extend((statement.lineno, alias.name) for alias in statement.names)
        elif isinstance(statement, ast.ImportFrom) and statement.level == 0 and statement.module:
            found.append((statement.lineno, statement.module))
    return tuple(found)


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements in order, reading through `if`, `try` and `with` blocks."""
    for statement in body:
        if isinstance(statement, ast.If):
            yield from _top_level(statement.body)
            yield from _top_level(statement.orelse)
        elif isinstance(statement, ast.Try | ast.TryStar):
            yield from _top_level(statement.body)
            for handler in statement.handlers:
                yield from _top_level(handler.body)
            yield from _top_level(statement.orelse)
            yield from _top_level(statement.finalbody)
        elif isinstance(statement, ast.With | ast.AsyncWith):
            yield from _top_level(statement.body)
        else:
            yield statement


def _bind(statement: ast.stmt, bindings: dict[str, Binding]) -> None:
    """Record the names one statement binds."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
        bindings[statement.name] = Binding("function", statement)
    elif isinstance(statement, ast.ClassDef):
        bindings[statement.name] = Binding("class", statement)
    elif isinstance(statement, ast.Import):
        for alias in statement.names:
            if alias.asname:
                bindings[alias.asname] = Binding("module", target=alias.name)
            else:
                top = alias.name.split(".", 1)[0]
                bindings[top] = Binding("module", target=top)
    elif isinstance(statement, ast.ImportFrom):
        origin = "." * statement.level + (statement.module or "")
        for alias in statement.names:
            if alias.name != "*":
                target = f"{origin}.{alias.name}"
                bindings[alias.asname or alias.name] = Binding("imported", target=target)
    elif isinstance(statement, ast.Assign):
        _assign(statement.targets, statement.value, bindings)
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        _assign([statement.target], statement.value, bindings)
    else:
        for name in _names_bound_otherwise(statement):
            bindings[name] = Binding("unknown")


def _assign(targets: list[ast.expr], value: ast.expr, bindings: dict[str, Binding]) -> None:
    if isinstance(value, ast.Lambda):
        binding = Binding("function", value)
    elif isinstance(value, ast.Name) and value.id in bindings:
        # `alias = original` refers to what `original` is at this point of the module.
        binding = bindings[value.id]
    else:
        binding = Binding("value", value)
    for target in targets:
        if isinstance(target, ast.Name):
            bindings[target.id] = binding
        else:
            for node in ast.walk(target):
                if isinstance(node, ast.Name):
                    bindings[node.id] = Binding("unknown")


def _names_bound_otherwise(statement: ast.stmt) -> Iterator[str]:
    """Names a statement rebinds in ways the source cannot tell the value of."""
    if isinstance(statement, ast.Delete | ast.AugAssign | ast.For | ast.AsyncFor):
        targets = statement.targets if isinstance(statement, ast.Delete) else [statement.target]
        for target in targets:
            yield from (n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    for node in ast.walk(statement):
        if isinstance(node, ast.NamedExpr):
            yield node.target.id
