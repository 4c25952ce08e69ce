"""One registry per kind of pluggable thing: node types, providers, tooling types, edge
condition types and edge processors, memory stores, thinking types.

Each kind is a descriptor object (a frozen dataclass with at least `name` and `summary`) that
owns its parsing, validation, description and runtime. A module registers its descriptor with
`REGISTRY.register(...)` when imported; each registry imports its built-in modules the first
time it is asked, so nothing heavy is loaded before it is needed and no import cycle forms. A
registry given a package imports every module of it: adding a kind there is adding one module.

A descriptor stays light: parsing and validating a workflow imports no runtime. What runs a
kind (a node's visit, a tooling type's source) is named with `runtime("module:function")` and
imported the first time it is called.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar


class Kind(Protocol):
    """What every descriptor has."""

    @property
    def name(self) -> str:
        """The name workflows use (`type: agent`, `provider: openai`)."""
        ...

    @property
    def summary(self) -> str:
        """One line for listings and error messages."""
        ...


K = TypeVar("K", bound=Kind)


class Registry(Generic[K]):
    """Descriptors of one kind by name; built-ins are imported on first use."""

    def __init__(self, what: str, builtins: Sequence[str] = (), *, package: str = "") -> None:
        self.what = what  # "node type", "provider", ...
        self._builtins = tuple(builtins)
        self._package = package  # every module of it is imported (its modules must stay light)
        self._loaded = False
        self._kinds: dict[str, K] = {}

    def register(self, kind: K) -> K:
        """Add (or replace) a descriptor; returns it, so modules can keep a name for it."""
        self._kinds[kind.name] = kind
        return kind

    def unregister(self, name: str) -> None:
        """Remove a descriptor (no error if there is none): a test's own kind, after the test."""
        self._kinds.pop(name, None)

    def get(self, name: str) -> K | None:
        """The descriptor called `name`, or None."""
        self._load()
        return self._kinds.get(name)

    def all(self) -> Mapping[str, K]:
        """Every descriptor by name, in registration order."""
        self._load()
        return dict(self._kinds)

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        return sorted(self.all())

    def unknown_message(self, name: str) -> str:
        """`unknown <what> 'x' (known: a, b); did you mean 'y'?`."""
        from devall_cli.text import suggest

        names = self.names()
        message = f"unknown {self.what} '{name}' (known: {', '.join(names)})"
        guess = suggest(name, names)
        return f"{message}; did you mean '{guess}'?" if guess else message

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True  # first: a built-in module may ask the registry while importing
        modules = list(self._builtins)
        if self._package:
            package = importlib.import_module(self._package)
            found = pkgutil.iter_modules(package.__path__, prefix=self._package + ".")
            modules += sorted(info.name for info in found)
        for module in modules:
            importlib.import_module(module)


class _Runtime:
    """A function of a runtime module, imported on its first call (see `runtime`)."""

    def __init__(self, target: str) -> None:
        self.target = target  # "package.module:function"
        self._function: Callable[..., Any] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        function = self._function
        if function is None:
            module, _, name = self.target.partition(":")
            function = self._function = getattr(importlib.import_module(module), name)
        return function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"runtime({self.target!r})"


def runtime(target: str) -> Callable[..., Any]:
    """`"module:function"`, imported when first called: a descriptor names its runtime lazily."""
    return _Runtime(target)
