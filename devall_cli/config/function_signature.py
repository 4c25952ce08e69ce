"""A function's parameters read from its definition in the source: JSON schema and description.

The schema follows SPEC.md §4 "function" (types through `annotation_schema`); parameter defaults
written as literals (or as names of literals, or `Enum.MEMBER` of a module class) are copied into
it; `_context`, `*args` and `**kwargs` are not parameters the model sees.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from devall_cli.config.annotation_schema import AnnotationReader, is_optional, term_schema
from devall_cli.config.module_source import FunctionNode, ModuleSource

CONTEXT_PARAM = "_context"


def _parameters(args: ast.arguments) -> list[tuple[ast.arg, ast.expr | None]]:
    """Every named parameter with its default, in signature order (*args, **kwargs left out)."""
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += args.defaults
    keyword_only = zip(args.kwonlyargs, args.kw_defaults, strict=True)
    return [*zip(positional, defaults, strict=True), *keyword_only]


def _default(node: ast.expr, module: ModuleSource) -> tuple[bool, Any]:
    """(usable, value) of a default written in the source, as the schema's `default`."""
    known, value = module.constant(node)
    if not known and isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        # `Unit.CELSIUS`: the literal assigned to that name in a class of the module.
        binding = module.bindings.get(node.value.id)
        if binding is not None and isinstance(binding.node, ast.ClassDef):
            known, value = _class_constant(binding.node, node.attr, module)
    return json_default(value) if known else (False, None)


def _class_constant(cls: ast.ClassDef, name: str, module: ModuleSource) -> tuple[bool, Any]:
    for statement in cls.body:
        if isinstance(statement, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in statement.targets
        ):
            return module.constant(statement.value)
    return False, None


def json_default(value: Any) -> tuple[bool, Any]:
    """(usable, value) for a parameter default copied into the schema."""
    if isinstance(value, tuple | frozenset | set):
        value = list(value)
    if value is None or isinstance(value, str | int | float | bool):
        return True, value
    if isinstance(value, list) and all(json_default(v)[0] for v in value):
        return True, [json_default(v)[1] for v in value]
    if isinstance(value, dict) and all(
        isinstance(k, str) and json_default(v)[0] for k, v in value.items()
    ):
        return True, {k: json_default(v)[1] for k, v in value.items()}
    return False, None


@dataclass(frozen=True)
class _Parameter:
    """One parameter as the schema sees it."""

    schema: dict[str, Any]
    required: bool
    nullable: bool  # None is a value the function expects
    warnings: list[str]


def _parameter(
    function: str, arg: ast.arg, default: ast.expr | None, module: ModuleSource
) -> _Parameter:
    reader = AnnotationReader(module)
    term = reader.read(arg.annotation)
    warnings = [
        f"{module.file.name}:{arg.lineno}: parameter '{arg.arg}' of '{function}': {problem}; "
        "it accepts any value"
        for problem in reader.problems
    ]
    schema = term_schema(term)
    usable, value = _default(default, module) if default is not None else (False, None)
    if usable:
        schema["default"] = value
    optional = is_optional(term)
    required = default is None and not optional
    return _Parameter(schema, required, optional or (usable and value is None), warnings)


@dataclass(frozen=True)
class Signature:
    """A function's parameters as the tool list and the argument check see them."""

    input_schema: dict[str, Any]
    nullable: tuple[str, ...]
    warnings: tuple[str, ...]


def read_signature(name: str, node: FunctionNode, module: ModuleSource) -> Signature:
    """The JSON schema of a function's parameters (`_context` left out)."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    nullable: list[str] = []
    warnings: list[str] = []
    for arg, default in _parameters(node.args):
        if arg.arg == CONTEXT_PARAM:
            continue
        param = _parameter(name, arg, default, module)
        properties[arg.arg] = param.schema
        required += [arg.arg] if param.required else []
        nullable += [arg.arg] if param.nullable else []
        warnings += param.warnings
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return Signature(schema, tuple(nullable), tuple(warnings))


def describe(node: FunctionNode) -> str:
    """The first paragraph of the docstring, on one line."""
    doc = "" if isinstance(node, ast.Lambda) else ast.get_docstring(node, clean=True) or ""
    paragraph = doc.strip().split("\n\n", 1)[0]
    return " ".join(line.strip() for line in paragraph.splitlines()).strip()
