"""`.env` files: `KEY=VALUE` lines that fill `${NAME}` placeholders the environment leaves unset."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

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
    """Read one `.env` file; unreadable or non-UTF-8 files become an error issue."""
    file = display or str(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        message = f"cannot read the env file: {exc.strerror or exc}"
        return DotenvValues(issues=[ConfigIssue(message, file=file)])
    except UnicodeDecodeError:
        return DotenvValues(issues=[ConfigIssue("the env file is not valid UTF-8", file=file)])
    return parse_dotenv(text, file=file)


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
        if not env_file.is_file():
            merged.issues.append(ConfigIssue("env file not found", file=str(env_file)))
        else:
            _merge(merged, read_dotenv(env_file, display=str(env_file)))
    return merged


def _merge(into: DotenvValues, other: DotenvValues) -> None:
    into.values.update(other.values)
    into.issues.extend(other.issues)
