"""The JSON text of a large listing, masked and indented in one pass.

`masked_json` writes the same bytes as
`json.dumps(redactor.value(value), indent=2, ensure_ascii=False, default=str)` without the
masked copy and without Python's pure indenting encoder (json_indent.py): for a server of
thousands of tools, most of the time of `tools list --json`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from devall_cli.json_indent import indented_json
from devall_cli.redaction import Redactor


def masked_json(value: Any, redactor: Redactor) -> str:
    """`value` as indented JSON (two spaces), secrets masked in its strings (not in its keys)."""
    return indented_json(value, _mask_of(redactor))


def _mask_of(redactor: Redactor) -> Callable[[str], str]:
    if redactor.secrets:
        return redactor.text

    def mask(text: str) -> str:
        # Without secrets, only a URL's credentials or a secret-named query value is masked.
        return redactor.text(text) if "://" in text or "=" in text else text

    return mask
