"""JSON schemas from parameter annotations read as source (syntax nodes), not as Python objects.

The mapping (SPEC.md §4 "function"): str/int/float/bool → string/integer/number/boolean,
list/tuple/set/Sequence[T] → array (of T), dict/Mapping[str, T] → object (of T), Literal and
Enum (a class of the module with literal member values) → enum, `Optional[T]`/`T | None` →
T and not required, `Annotated[T, "text"]` → T with that description, `Annotated[T, Meta(...)]`
→ T with the JSON-schema keywords of the call (ChatDev's `ParamMeta(description=..., enum=...)`,
an enum also giving the type its values share), `Any` or no annotation →
any value. Names are followed through the module's imports (`from typing import Optional as O`,
`import typing as t`) and its own aliases (`Vector = list[float]`). An annotation that cannot be
read without running code (a type imported from another module, an Enum using `auto()`) gives a
permissive schema and a problem the caller turns into a warning.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from devall_cli.config.module_source import MAX_ALIAS_DEPTH, Binding, ModuleSource

_SIMPLE: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "NoneType": {"type": "null"},
    "list": {"type": "array"},
    "tuple": {"type": "array"},
    "set": {"type": "array", "uniqueItems": True},
    "frozenset": {"type": "array", "uniqueItems": True},
    "dict": {"type": "object"},
}
# Modules whose names are understood without reading them; other names of theirs accept anything.
_KNOWN_MODULES = ("builtins", "typing", "typing_extensions", "collections.abc", "types", "enum")
_ARRAYS = {
    "List": "list", "Sequence": "list", "Tuple": "tuple", "Set": "set", "FrozenSet": "set",
    "list": "list", "tuple": "tuple", "set": "set", "frozenset": "set",
}  # fmt: skip
_OBJECTS = {"Dict", "Mapping", "dict"}
_ENUM_BASES = {"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag", "ReprEnum"}
_FLAG_BASES = {"Flag", "IntFlag"}
# Keyword arguments of an `Annotated` metadata object that become the parameter's JSON schema
# (ChatDev's `ParamMeta` has description and enum; a pydantic-style Field may say more).
_META_KEYWORDS = frozenset(
    {
        "description", "enum", "title", "examples", "format", "pattern",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
        "minLength", "maxLength", "minItems", "maxItems", "uniqueItems",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Term:
    """A parameter type as far as the schema is concerned."""

    kind: str  # any | simple | enum | literal | union | array | object | annotated
    name: str = ""  # simple: str, int, ...; array: list, tuple or set
    values: tuple[Any, ...] = ()  # enum and literal values
    args: tuple[Term, ...] = ()  # union members; the item or value type; the annotated type
    description: str | None = None  # annotated
    # annotated: JSON-schema keywords of a metadata object (`ParamMeta(enum=[...])`), in order
    keywords: tuple[tuple[str, Any], ...] = ()


ANY = Term("any")
NONE = Term("simple", "NoneType")


@dataclass
class AnnotationReader:
    """Reads the annotations of one module; `problems` collects what could not be read."""

    module: ModuleSource
    problems: list[str] = field(default_factory=list)

    def read(self, node: ast.expr | None) -> Term:
        """The Term of an annotation (None: no annotation, any value)."""
        return ANY if node is None else self._term(node, 0)

    def _unreadable(self, node: ast.expr, reason: str) -> Term:
        self.problems.append(f"cannot read type '{_shown(node)}' from the source ({reason})")
        return ANY

    def _term(self, node: ast.expr, depth: int) -> Term:
        if depth > MAX_ALIAS_DEPTH:
            return self._unreadable(node, "aliases nested too deeply")
        if isinstance(node, ast.Constant):
            if node.value is None:
                return NONE
            if isinstance(node.value, str):  # a forward reference: "int", "Unit | None"
                return self._forward(node, node.value, depth)
            return self._unreadable(node, "not a type")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return union([self._term(node.left, depth), self._term(node.right, depth)])
        if isinstance(node, ast.Subscript):
            return self._generic(node, depth)
        if isinstance(node, ast.Name | ast.Attribute):
            return self._named(node, depth)
        return self._unreadable(node, "not a type the source can tell")

    def _forward(self, node: ast.expr, text: str, depth: int) -> Term:
        try:
            parsed = ast.parse(text.strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return self._unreadable(node, "not a valid expression")
        return self._term(parsed, depth + 1)

    def _named(self, node: ast.Name | ast.Attribute, depth: int) -> Term:
        qualified, binding = self.module.qualified_name(node)
        module, _, name = qualified.rpartition(".")
        if module == "local" and binding is not None:
            return self._local(node, binding, depth)
        problem = self._unknown_origin(module, name, qualified)
        if problem:
            return self._unreadable(node, problem)
        if (module == "builtins" and name in _SIMPLE) or (module, name) == ("types", "NoneType"):
            return Term("simple", name)
        if module != "builtins" and (name in _ARRAYS or name in _OBJECTS):
            return self._generic_of(node, qualified, (), depth)
        return ANY  # Any, object, bytes, Callable...: nothing to say about the value

    def _unknown_origin(self, module: str, name: str, qualified: str) -> str:
        """Why a name is not one the source can tell about ("" when it is)."""
        if module == "builtins" and not hasattr(builtins, name):
            return f"'{name}' is not defined in {self.module.file.name}"
        if module not in _KNOWN_MODULES:
            return f"imported from '{module or qualified}'"
        return ""

    def _local(self, node: ast.expr, binding: Binding, depth: int) -> Term:
        if binding.kind == "class":
            assert isinstance(binding.node, ast.ClassDef)
            if not self._is_enum(binding.node, depth):
                return ANY  # a class of its own: the schema cannot describe it
            return self._enum(node, binding.node)
        if binding.kind == "value" and isinstance(binding.node, ast.expr):
            return self._term(binding.node, depth + 1)  # a type alias: Vector = list[float]
        return self._unreadable(node, "not a type")

    def _generic(self, node: ast.Subscript, depth: int) -> Term:
        qualified, _ = self.module.qualified_name(node.value)
        module, _, name = qualified.rpartition(".")
        if module == "local":
            return self._unreadable(node, "a generic type of the module itself")
        problem = self._unknown_origin(module, name, qualified)
        if problem:
            return self._unreadable(node, problem)
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return self._generic_of(node, qualified, tuple(elts), depth)

    def _generic_of(
        self, node: ast.expr, qualified: str, elts: tuple[ast.expr, ...], depth: int
    ) -> Term:
        name = qualified.rpartition(".")[2]
        if name == "Optional" and len(elts) == 1:
            return union([self._term(elts[0], depth), NONE])
        if name == "Union" and elts:
            return union([self._term(e, depth) for e in elts])
        if name == "Literal" and elts:
            return self._literal(node, elts)
        if name == "Annotated" and elts:
            return self._annotated(elts, depth)
        if name in _ARRAYS:
            kind = _ARRAYS[name]
            items = None
            if elts and (kind != "tuple" or _is_ellipsis_tuple(elts)):
                items = self._term(elts[0], depth)
            return Term("array", kind, args=() if items is None else (items,))
        if name in _OBJECTS:
            value = self._term(elts[1], depth) if len(elts) == 2 else None
            return Term("object", args=() if value is None else (value,))
        return ANY  # Iterable[int], Callable[..., T]: nothing more to say

    def _annotated(self, elts: Sequence[ast.expr], depth: int) -> Term:
        base = self._term(elts[0], depth)
        metadata: list[str] = []
        keywords: dict[str, Any] = {}
        for meta in elts[1:]:
            known, value = self.module.constant(meta)
            if known and isinstance(value, str):
                metadata.append(value)
            elif isinstance(meta, ast.Call):  # ParamMeta(description=..., enum=...), Field(...)
                for key, found in self._schema_keywords(meta).items():
                    keywords.setdefault(key, found)
        description = keywords.pop("description", None)
        if isinstance(description, str) and description:
            metadata.append(description)
        extra = tuple(keywords.items())
        if base.kind == "annotated":  # Annotated[Annotated[T, a], b] is Annotated[T, a, b]
            description = base.description or _first(metadata)
            merged = dict(extra)
            merged.update(base.keywords)  # the inner annotation's wins, as its description does
            return Term(
                "annotated", args=base.args, description=description, keywords=tuple(merged.items())
            )
        return Term("annotated", args=(base,), description=_first(metadata), keywords=extra)

    def _schema_keywords(self, call: ast.Call) -> dict[str, Any]:
        """The JSON-schema keywords among a metadata object's constant keyword arguments, the
        way ChatDev's function catalog reads its `ParamMeta(description=..., enum=...)`."""
        found: dict[str, Any] = {}
        for keyword in call.keywords:
            if keyword.arg not in _META_KEYWORDS:
                continue
            known, value = self.module.constant(keyword.value)
            if not known or value is None:
                continue
            if keyword.arg == "enum":
                values = list(value) if isinstance(value, list | tuple | set) else None
                if values and all(_plain(item) for item in values):
                    found["enum"] = values
            elif keyword.arg == "description":
                if isinstance(value, str):
                    found["description"] = value
            elif _plain(value) or isinstance(value, list | tuple):
                found[keyword.arg] = list(value) if isinstance(value, tuple) else value
        return found

    def _literal(self, node: ast.expr, elts: Sequence[ast.expr]) -> Term:
        values: list[Any] = []
        for elt in elts:
            nested = self._term(elt, 0) if isinstance(elt, ast.Subscript) else None
            if nested is not None and nested.kind == "enum" and nested.name == "literal":
                values.extend(nested.values)
                continue
            known, value = self.module.constant(elt)
            if not known or not _plain(value):
                return self._unreadable(node, "a Literal value that is not a plain constant")
            values.append(value)
        unique: list[Any] = []
        for value in values:  # typing drops repeated values (1 and True are different)
            if not any(type(v) is type(value) and v == value for v in unique):
                unique.append(value)
        return Term("enum", "literal", values=tuple(unique))

    def _is_enum(self, cls: ast.ClassDef, depth: int) -> bool:
        return bool(self._enum_bases(cls, depth))

    def _enum_bases(self, cls: ast.ClassDef, depth: int) -> set[str]:
        """The `enum` base classes `cls` derives from, directly or through local classes."""
        found: set[str] = set()
        for base in cls.bases:
            qualified, binding = self.module.qualified_name(base)
            module, _, name = qualified.rpartition(".")
            if module == "enum" and name in _ENUM_BASES:
                found.add(name)
            elif (
                module == "local"
                and binding is not None
                and isinstance(binding.node, ast.ClassDef)
                and binding.node is not cls
                and depth < MAX_ALIAS_DEPTH
            ):
                found |= self._enum_bases(binding.node, depth + 1)
        return found

    def _enum(self, node: ast.expr, cls: ast.ClassDef) -> Term:
        values: list[Any] = []
        for name, value_node in _member_assignments(cls):
            known, value = self.module.constant(value_node)
            if not known or not _plain(value):
                reason = f"the value of {cls.name}.{name} is not a plain literal"
                return self._unreadable(node, reason)
            if not any(v == value for v in values):  # an equal value is an alias, not a member
                values.append(value)
        if self._enum_bases(cls, 0) & _FLAG_BASES:  # iterating a Flag gives single bits only
            values = [v for v in values if isinstance(v, int) and v > 0 and v & (v - 1) == 0]
        return Term("enum", "enum", values=tuple(values))


def _member_assignments(cls: ast.ClassDef) -> list[tuple[str, ast.expr]]:
    """`NAME = value` statements of an Enum body that define members."""
    found: list[tuple[str, ast.expr]] = []
    for statement in cls.body:
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets, value = [statement.target], statement.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and _member_name(target.id):
                found.append((target.id, value))
    return found


def _member_name(name: str) -> bool:
    dunder = name.startswith("__") and name.endswith("__")
    sunder = len(name) > 2 and name.startswith("_") and name.endswith("_")
    return not (dunder or sunder or name.startswith("__"))


def _is_ellipsis_tuple(elts: Sequence[ast.expr]) -> bool:
    last = elts[-1] if len(elts) == 2 else None
    return isinstance(last, ast.Constant) and last.value is Ellipsis


def _plain(value: Any) -> bool:
    """A value a JSON schema can list as it is."""
    return value is None or isinstance(value, str | int | float | bool)


def _shared_type(values: Sequence[Any]) -> str | None:
    """The JSON type all of `values` have (booleans apart from integers), else None."""
    for kind, test in _VALUE_TYPES:
        if values and all(test(value) for value in values):
            return kind
    return None


_VALUE_TYPES: tuple[tuple[str, Any], ...] = (
    ("boolean", lambda value: isinstance(value, bool)),
    ("integer", lambda value: isinstance(value, int) and not isinstance(value, bool)),
    ("number", lambda value: isinstance(value, float)),
    ("string", lambda value: isinstance(value, str)),
)


def _first(texts: list[str]) -> str | None:
    return texts[0] if texts else None


def _shown(node: ast.expr) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 80 else text[:77] + "..."


def union(members: Sequence[Term]) -> Term:
    """`Union[...]` as typing builds it: nested unions flattened, repeats dropped."""
    flat: list[Term] = []
    for member in members:
        for part in member.args if member.kind == "union" else (member,):
            if part not in flat:
                flat.append(part)
    return flat[0] if len(flat) == 1 else Term("union", args=tuple(flat))


# --- Term → JSON schema ------------------------------------------------------------------------


def is_optional(term: Term) -> bool:
    """True for `Optional[T]` and `T | None`, also inside `Annotated`."""
    while term.kind == "annotated":
        term = term.args[0]
    return term.kind == "union" and NONE in term.args


def term_schema(term: Term) -> dict[str, Any]:
    """The JSON schema of a Term; `{}` accepts any value."""
    if term.kind == "annotated":
        schema = term_schema(term.args[0])
        if term.description:
            schema = {**schema, "description": term.description}
        for key, value in term.keywords:
            schema = {**schema, key: value}
            if key == "enum":  # the type the values share, as ChatDev's catalog infers it
                shared = _shared_type(value)
                if shared is not None:
                    schema["type"] = shared
        return schema
    if term.kind in ("array", "object"):
        return _container_schema(term)
    if term.kind == "simple":
        return dict(_SIMPLE[term.name])
    if term.kind == "enum":
        return enum_schema(term.values)
    if term.kind == "union":
        branches = [term_schema(arg) for arg in term.args if arg != NONE]
        return branches[0] if len(branches) == 1 else {"anyOf": branches}
    return {}


def _container_schema(term: Term) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": term.kind}
    if term.kind == "array" and term.name == "set":
        schema["uniqueItems"] = True
    if term.args:
        key = "items" if term.kind == "array" else "additionalProperties"
        schema[key] = term_schema(term.args[0])
    return schema


def enum_schema(values: Sequence[Any]) -> dict[str, Any]:
    """`{"type": ..., "enum": [...]}`, the type only when every value has the same one."""
    schema: dict[str, Any] = {"enum": list(values)}
    kinds = {_json_type(v) for v in values}
    if len(kinds) == 1 and None not in kinds:
        schema = {"type": kinds.pop(), **schema}
    return schema


def _json_type(value: Any) -> str | None:
    for py_type, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string")):
        if isinstance(value, py_type):
            return name
    return "null" if value is None else None
