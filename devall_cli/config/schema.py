"""Type checks for resolved workflow data: each check records an issue instead of raising.

Every check returns a usable value (the default when the input is wrong) so one pass over the
file finds every problem. Values whose placeholder failed (UNRESOLVED) were reported already and
pass silently.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from devall_cli.config.placeholders import UNRESOLVED, TextValue
from devall_cli.config.yaml_source import KeyPath, SourceDocument
from devall_cli.errors import ConfigIssue
from devall_cli.redaction import is_secret_name, preview, url_credentials
from devall_cli.text import finite_number, suggest

if TYPE_CHECKING:
    from devall_cli.config.scope import GraphReader, LoadScope

_TRUE_WORDS = frozenset({"true", "yes", "on"})
_FALSE_WORDS = frozenset({"false", "no", "off"})
_MISSING = object()


class Checker:
    """Collects issues and secrets while typed config objects are built."""

    def __init__(
        self,
        doc: SourceDocument,
        *,
        workflow_dir: Path,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.doc = doc
        self.workflow_dir = workflow_dir
        self.environ: Mapping[str, str] = environ if environ is not None else {}
        self.issues: list[ConfigIssue] = []
        self.secrets: set[str] = set()
        # tool names known without starting a server (function tools), by tooling entry path
        self.static_tool_names: dict[KeyPath, list[str]] = {}
        self._counts: dict[str, int] = {}
        # the file being read, the files including it and the vars it sees (subgraph files)
        self.scope: LoadScope | None = None
        # the assembler's graph parser, for kinds that hold a graph (set when a graph is parsed)
        self.graphs: GraphReader | None = None
        # What an unknown key is where the parser is: an error inside nodes and tooling entries
        # (a typo there silently drops a setting), a warning elsewhere (see `strict_keys`).
        self.unknown_key_severity = "warning"
        # Advice about a valid graph's shape (how it ends, loops that cannot stop): for
        # `devall validate`, not for every command that loads the file.
        self.advice = False

    @property
    def file_dir(self) -> Path:
        """The folder of the file being read (a subgraph file's own, not the workflow's)."""
        return self.scope.file.parent if self.scope is not None else self.workflow_dir

    def for_document(self, doc: SourceDocument, scope: LoadScope) -> Checker:
        """A checker for another file read in the same load (a subgraph file).

        Its issues (located in `doc`), secrets and counts go to the same collections as this
        checker's, so one load reports every problem of every file and masks every secret.
        """
        child = Checker(doc, workflow_dir=self.workflow_dir, environ=self.environ)
        child.issues = self.issues
        child.secrets = self.secrets
        child._counts = self._counts
        child.scope = scope
        child.graphs = self.graphs
        child.unknown_key_severity = self.unknown_key_severity
        child.advice = self.advice
        return child

    @contextlib.contextmanager
    def strict_keys(self, strict: bool = True) -> Iterator[None]:
        """Unknown keys are errors (`strict`) or warnings while the block runs."""
        previous = self.unknown_key_severity
        self.unknown_key_severity = "error" if strict else "warning"
        try:
            yield
        finally:
            self.unknown_key_severity = previous

    def error(self, path: KeyPath, message: str, *, at_key: bool = False) -> None:
        """Record an error at `path`."""
        self.issues.append(self.doc.issue(path, message, at_key=at_key))

    def warning(self, path: KeyPath, message: str, *, at_key: bool = False) -> None:
        """Record a warning at `path`."""
        self.issues.append(self.doc.issue(path, message, severity="warning", at_key=at_key))

    def secret(self, value: Any) -> None:
        """Remember a value that must be masked in every output."""
        if isinstance(value, str) and value:
            self.secrets.add(str(value))

    def secret_url(self, url: str | None) -> None:
        """Remember the credentials a URL of the config carries (userinfo, secret query values)."""
        if url:
            self.secrets.update(url_credentials(url))

    def tally(self, what: str) -> int:
        """Count one more `what`; how many so far, this one included (for per-file limits)."""
        self._counts[what] = self._counts.get(what, 0) + 1
        return self._counts[what]

    @property
    def error_count(self) -> int:
        """How many errors (not warnings) were recorded so far."""
        return sum(1 for issue in self.issues if issue.severity == "error")


def describe(value: Any) -> str:
    """A short description of a value for messages: `'abc' (text)`, `true (boolean)`, …"""
    if isinstance(value, bool):
        return f"{'true' if value else 'false'} (boolean)"
    if value is None:
        return "nothing (null)"
    if isinstance(value, (int, float)):
        return f"{value} (number)"
    if isinstance(value, str):
        return f"{preview(value, 40)!r} (text)"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"{value!s} ({type(value).__name__})"


# --- key sets ------------------------------------------------------------------------------


@dataclass(frozen=True)
class KeySpec:
    """The keys one mapping may have."""

    known: frozenset[str]
    ignored: frozenset[str] = frozenset()  # ChatDev keys accepted without effect, silently
    noted: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # warn
    unsupported: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # error


def check_keys(ck: Checker, mapping: Mapping[str, Any], path: KeyPath, spec: KeySpec) -> None:
    """Warn about unknown keys (with a suggestion) and reject unsupported ChatDev features."""
    for key, value in mapping.items():
        here = (*path, key)
        if key in spec.known or key in spec.ignored:
            continue
        if key in spec.unsupported:
            if _is_set(value):
                ck.error(
                    here, f"{spec.unsupported[key]} ('{key}') is not supported yet", at_key=True
                )
            continue
        if key in spec.noted:
            if _is_set(value):  # `retry: null` asks for nothing, so nothing is ignored
                ck.warning(here, spec.noted[key], at_key=True)
            continue
        if ck.unknown_key_severity == "error":
            ck.error(here, unknown_key_message(key, spec, ignored=False), at_key=True)
        else:
            ck.warning(here, unknown_key_message(key, spec), at_key=True)


def unknown_key_message(key: str, spec: KeySpec, *, ignored: bool = True) -> str:
    """`unknown key 'edgs' (ignored); did you mean 'edges'?`; as an error, the known keys."""
    suggestion = suggest(key, sorted(spec.known))
    if ignored:
        message = f"unknown key '{key}' (ignored)"
    else:
        message = f"unknown key '{key}'"
        if not suggestion:
            message += f" (known keys: {', '.join(sorted(spec.known))})"
    return f"{message}; did you mean '{suggestion}'?" if suggestion else message


def _is_set(value: Any) -> bool:
    """Whether a value turns a feature on: null, false, empty and `{enabled: false}` do not."""
    if isinstance(value, dict) and value.get("enabled") is False:
        return False
    return value not in (None, False, "", [], {}) and value is not UNRESOLVED


# --- scalar checks -------------------------------------------------------------------------


def get_mapping(ck: Checker, value: Any, path: KeyPath, what: str) -> dict[str, Any] | None:
    """`value` if it is a mapping; otherwise an error (None or UNRESOLVED pass as None)."""
    if value is UNRESOLVED:
        return None
    if isinstance(value, dict):
        return value
    ck.error(path, f"{what} must be a mapping, got {describe(value)}")
    return None


def opt_str(
    ck: Checker,
    mapping: Mapping[str, Any],
    key: str,
    path: KeyPath,
    *,
    required: bool = False,
) -> str | None:
    """A text value; `required` also rejects empty text."""
    value = mapping.get(key, _MISSING)
    if value is UNRESOLVED:
        return None
    if value is _MISSING or value is None:
        if required:
            _missing(ck, mapping, key, path)
        return None
    if not isinstance(value, str):
        ck.error((*path, key), f"{key} must be text, got {describe(value)}")
        return None
    if required and not value.strip():
        ck.error((*path, key), f"{key} must not be empty")
        return None
    return str(value)


def _missing(ck: Checker, mapping: Mapping[str, Any], key: str, path: KeyPath) -> None:
    here = (*path, key)
    if key in mapping:
        ck.error(here, f"{key} is required and must not be empty", at_key=True)
    else:
        ck.error(here, f"{key} is required")


def opt_number(
    ck: Checker,
    mapping: Mapping[str, Any],
    key: str,
    path: KeyPath,
    default: float,
    *,
    minimum: float | None = None,
    positive: bool = False,
) -> float:
    """A number (int or float, never a boolean); text from a placeholder may spell one."""
    value = mapping.get(key)
    if value is None or value is UNRESOLVED:
        return default
    number = _as_number(value)
    here = (*path, key)
    if number is None:
        ck.error(here, f"{key} must be a number, got {describe(value)}")
        return default
    if positive and number <= 0:
        ck.error(here, f"{key} must be greater than 0, got {value}")
        return default
    if minimum is not None and number < minimum:
        ck.error(here, f"{key} must be at least {minimum:g}, got {value}")
        return default
    return float(number)


def _as_number(value: Any) -> float | None:
    # Text counts only when a placeholder gave it: YAML's own "1.5" is a string, as written.
    return finite_number(value, TextValue)


def opt_int(
    ck: Checker,
    mapping: Mapping[str, Any],
    key: str,
    path: KeyPath,
    default: int,
    *,
    minimum: int | None = None,
) -> int:
    """A whole number (never a boolean); text from a placeholder may spell one."""
    value = mapping.get(key)
    if value is None or value is UNRESOLVED:
        return default
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, TextValue) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        number = int(value)
    here = (*path, key)
    if number is None:
        ck.error(here, f"{key} must be a whole number, got {describe(value)}")
        return default
    if minimum is not None and number < minimum:
        ck.error(here, f"{key} must be at least {minimum}, got {number}")
        return default
    return number


def opt_bool(
    ck: Checker, mapping: Mapping[str, Any], key: str, path: KeyPath, default: bool
) -> bool:
    """A boolean; the YAML 1.1 words yes/no/on/off are accepted as ChatDev's loader reads them."""
    value = mapping.get(key)
    if value is None or value is UNRESOLVED:
        return default
    parsed = as_bool(value)
    if parsed is None:
        ck.error((*path, key), f"{key} must be true or false, got {describe(value)}")
        return default
    return parsed


def as_bool(value: Any) -> bool | None:
    """`value` as a boolean, or None when it is not one."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE_WORDS:
            return True
        if word in _FALSE_WORDS:
            return False
    return None


def opt_str_list(
    ck: Checker,
    mapping: Mapping[str, Any],
    key: str,
    path: KeyPath,
    default: tuple[str, ...] = (),
) -> tuple[str, ...]:
    """A list of text items; every item is checked and reported at its own index."""
    value = mapping.get(key)
    if value is None or value is UNRESOLVED:
        return default
    here = (*path, key)
    if not isinstance(value, list):
        ck.error(here, f"{key} must be a list of text items, got {describe(value)}")
        return default
    items: list[str] = []
    for index, item in enumerate(value):
        if item is UNRESOLVED:
            continue
        if not isinstance(item, str):
            ck.error((*here, index), f"every item of {key} must be text, got {describe(item)}")
            continue
        items.append(str(item))
    return tuple(items)


def opt_str_map(
    ck: Checker,
    mapping: Mapping[str, Any],
    key: str,
    path: KeyPath,
    *,
    secret_names: bool = False,
) -> dict[str, str]:
    """A mapping whose scalar values are coerced to text.

    `secret_names`: the values of entries whose name looks secret are secrets (headers, env).
    """
    value = mapping.get(key)
    if value is None or value is UNRESOLVED:
        return {}
    here = (*path, key)
    if not isinstance(value, dict):
        ck.error(here, f"{key} must be a mapping of names to values, got {describe(value)}")
        return {}
    result: dict[str, str] = {}
    for name, item in value.items():
        if item is UNRESOLVED:
            continue
        if isinstance(item, (list, dict)):
            ck.error((*here, name), f"the value of {key}.{name} must be text, got {describe(item)}")
            continue
        result[name] = scalar_text(item)
        if secret_names and is_secret_name(str(name)):
            ck.secret(result[name])
    return result


def scalar_text(value: Any) -> str:
    """A scalar as text the way YAML writes it (true/false, '' for null)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def opt_regex(ck: Checker, mapping: Mapping[str, Any], key: str, path: KeyPath) -> str | None:
    """A regular expression, compiled to prove it is valid."""
    pattern = opt_str(ck, mapping, key, path)
    if pattern is not None and not check_regex(ck, pattern, (*path, key), key):
        return None
    return pattern


def check_regex(ck: Checker, pattern: str, path: KeyPath, what: str, flags: int = 0) -> bool:
    """Compile `pattern`; an invalid one is an error at `path`."""
    try:
        re.compile(pattern, flags)
    except (re.error, RecursionError, OverflowError) as exc:
        ck.error(path, f"{what} is not a valid regular expression: {exc}")
        return False
    return True


def is_http_url(text: str) -> bool:
    """Whether `text` is an absolute http:// or https:// URL with a host."""
    try:
        parts = urlsplit(text.strip())
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def regex_group(ck: Checker, value: Any, path: KeyPath) -> int | str | None:
    """A regex capture group: a number (digits in text count, as in ChatDev) or a name.

    None, and an empty text (ChatDev's files write `group: ''`), mean the whole match.
    """
    if value is None or value is UNRESOLVED or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            ck.error(path, f"group must be a group number (0 or more) or name, got {value}")
            return None
        return value
    if isinstance(value, str):
        return int(value) if value.strip().isdigit() else value.strip()
    ck.error(path, f"group must be a group number or name, got {describe(value)}")
    return None
