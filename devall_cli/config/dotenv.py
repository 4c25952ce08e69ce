"""`.env` files: `KEY=VALUE` lines that fill `${NAME}` placeholders the environment leaves unset."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from devall_cli import limits
from devall_cli.errors import ConfigIssue

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


@dataclass
class DotenvValues:
    """Values read from one or more `.env` files, plus warnings about lines that were skipped."""

    values: dict[str, str] = field(default_factory=dict)
    issues: list[ConfigIssue] = field(default_factory=list)


def parse_dotenv(text: str, *, file: str = ".env") -> DotenvValues:
    """Parse `.env` text: KEY=VALUE lines, `#` comments, optional `export `, quotes stripped."""
    result = DotenvValues()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not _KEY.fullmatch(key):
            result.issues.append(
                ConfigIssue(
                    "expected KEY=VALUE; line ignored",
                    file=file,
                    line=number,
                    col=1,
                    severity="warning",  # no source line: it may hold a secret
                )
            )
            continue
        result.values[key] = _unquote(value.strip())
    return result


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def read_dotenv(path: Path, *, display: str | None = None) -> DotenvValues:
    """Read one `.env` file; unreadable, oversized or non-UTF-8 files become an error issue."""
    file = display or str(path)
    try:
        raw = _read_capped(path)
        text = raw.decode("utf-8-sig")
    except _TooLarge as exc:
        message = (
            f"the env file is too large: {exc}; env files may hold at most "
            f"{limits.ENV_FILE_BYTES // limits.MB} MB ({limits.ENV_FILE_BYTES} bytes)"
        )
        return DotenvValues(issues=[ConfigIssue(message, file=file)])
    except OSError as exc:
        message = f"cannot read the env file: {exc.strerror or exc}"
        return DotenvValues(issues=[ConfigIssue(message, file=file)])
    except UnicodeDecodeError:
        return DotenvValues(issues=[ConfigIssue("the env file is not valid UTF-8", file=file)])
    return parse_dotenv(text, file=file)


class _TooLarge(Exception):
    """The file is over `limits.ENV_FILE_BYTES`; the message says by how much, if known."""


def _read_capped(path: Path) -> bytes:
    """The file's bytes: refused from its size first, and never read past the limit."""
    limit = limits.ENV_FILE_BYTES
    with path.open("rb") as handle:
        size = os.fstat(handle.fileno())
        if stat.S_ISREG(size.st_mode) and size.st_size > limit:
            raise _TooLarge(f"{size.st_size} bytes")
        # Pipes and devices (`--env-file <(...)`) tell no size: read one byte past the limit.
        raw = handle.read(limit + 1)
    if len(raw) > limit:
        raise _TooLarge(f"more than {limit} bytes")
    return raw


def load_dotenv_files(workflow_dir: Path, cwd: Path, env_file: Path | None) -> DotenvValues:
    """Merge `.env` of the workflow's folder, then of the current folder, then `--env-file`.

    Later files replace earlier ones: the user's current folder is more specific than the
    workflow's, and an explicit `--env-file` wins over both.
    """
    merged = DotenvValues()
    candidates: list[tuple[Path, str]] = []
    seen: set[Path] = set()
    for folder in (workflow_dir, cwd):
        path = folder / ".env"
        if path.resolve() not in seen and path.is_file():
            seen.add(path.resolve())
            candidates.append((path, str(path)))
    for path, display in candidates:
        _merge(merged, read_dotenv(path, display=display))
    if env_file is not None:
        # Not `is_file()`: `--env-file <(command)` names a pipe, which is read like a file.
        if not env_file.exists() or env_file.is_dir():
            merged.issues.append(ConfigIssue("env file not found", file=str(env_file)))
        else:
            _merge(merged, read_dotenv(env_file, display=str(env_file)))
    return merged


def _merge(into: DotenvValues, other: DotenvValues) -> None:
    into.values.update(other.values)
    into.issues.extend(other.issues)
