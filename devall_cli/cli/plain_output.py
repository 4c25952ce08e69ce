"""What commands print without Rich or Typer: error lines and JSON documents.

The Typer commands (common.py) and the plain entry (plain.py) print through these, so that both
paths write the same bytes.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any

from devall_cli.errors import ConfigError, DevallError
from devall_cli.text import clean_text

# DEL and C1 controls, which json.dumps leaves raw; inside JSON they can only be in strings.
_C1_IN_JSON = re.compile("[\x7f-\x9f]")


def error_output(
    error: DevallError, *, debug: bool, mask: Callable[[str], str] | None
) -> list[tuple[bool, str]]:
    """What an error prints on stderr, in order, as (raw, text).

    Raw text (where devall found an issue, with --debug) is written as it is; every other text
    is one diagnostics line (`devall: error: ...`), its control characters escaped when printed.
    """
    out: list[tuple[bool, str]] = []
    if isinstance(error, ConfigError) and error.issues:
        for issue in error.issues:
            label = "error" if issue.severity == "error" else "warning"
            if debug and issue.origin and label == "error":
                out.append((True, issue.origin))
            out.append((False, f"devall: {label}: {issue.headline()}"))
            if issue.source_line:
                out.append((False, f"  {issue.source_line}"))
                if issue.col:
                    out.append((False, "  " + " " * (issue.col - 1) + "^"))
        return out
    shown = mask or (lambda text: text)
    out.append((False, f"devall: error: {shown(error.message)}"))
    out.extend((False, f"  {shown(line)}") for line in error.details)
    if error.hint:
        out.append((False, f"  hint: {shown(error.hint)}"))
    return out


def print_json(document: Any) -> None:
    """Write one JSON document on stdout."""
    write_json_text(json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n")


def write_json_text(text: str) -> None:
    """Write JSON text on stdout, DEL and C1 controls as `\\u` escapes (the same data)."""
    text = _C1_IN_JSON.sub(lambda found: f"\\u{ord(found.group()):04x}", clean_text(text))
    sys.stdout.write(text)
    sys.stdout.flush()
