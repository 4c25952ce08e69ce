"""The tracing options run, batch and test share: `--otel` and `--otel-content` (docs/otel.md).

Nothing of OpenTelemetry is imported here: the SDK comes in only once tracing is on.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer

from devall_cli.cli.common import print_line, stderr_console
from devall_cli.errors import UsageError

if TYPE_CHECKING:
    from devall_cli.trace.otel_export import Tracing

OtelOption = Annotated[
    bool,
    typer.Option(
        "--otel",
        help="Send OpenTelemetry traces over OTLP/HTTP: to OTEL_EXPORTER_OTLP_ENDPOINT, else "
        "http://127.0.0.1:4318 (the otel extra; docs/otel.md). Also on when that variable is set.",
    ),
]
OtelContentOption = Annotated[
    bool,
    typer.Option(
        "--otel-content",
        help="With the traces, record message content: the task, node inputs and outputs, "
        "model replies, tool arguments and results (secrets masked). Implies --otel.",
    ),
]


def open_tracing(otel: bool, content: bool) -> Tracing | None:
    """The command's tracing, or None when it is off.

    Asked for on the command line without the extra: a UsageError. Turned on by an OTEL_
    variable only: a warning, and the command runs untraced.
    """
    from devall_cli.trace.otel_export import EXTRA_HINT, Tracing, otel_settings, sdk_installed

    settings = otel_settings(otel, content, os.environ)
    if settings is None:
        return None
    if not sdk_installed():
        if settings.asked:
            raise UsageError(f"--otel needs the otel extra, which is not installed: {EXTRA_HINT}")
        print_line(
            stderr_console(),
            "devall: warning: an OTEL_EXPORTER_OTLP_ endpoint is set, but the otel extra is "
            f"not installed: no traces are sent ({EXTRA_HINT})",
        )
        return None
    return Tracing(settings)


@contextmanager
def tracing_for(otel: bool, content: bool) -> Iterator[Tracing | None]:
    """The command's tracing for the block; its spans are flushed at the end (bounded), and a
    collector that could not take them is one warning line."""
    tracing = open_tracing(otel, content)
    try:
        yield tracing
    finally:
        warning = tracing.close() if tracing is not None else None
        if warning:
            print_line(stderr_console(), f"devall: warning: {warning}")
