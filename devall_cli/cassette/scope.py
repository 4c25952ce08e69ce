"""Which tape a run uses and which node visit an exchange belongs to (context variables).

The run sets its tape once (`use_tape`); the engine marks each node visit (`exchange_scope`).
Both are context variables, so the concurrent tasks of a batch and the parallel branches of one
run each see their own, and whatever a node visit asks (a model, a tool, a person) is filed under
that visit without being passed down through every layer.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from devall_cli.cassette.tape import Tape

_TAPE: ContextVar[Tape | None] = ContextVar("devall_tape", default=None)
_SCOPE: ContextVar[tuple[str, int]] = ContextVar("devall_exchange_scope", default=("", 0))


def active_tape() -> Tape | None:
    """The tape of the run this code runs in, if it records or replays."""
    return _TAPE.get()


def current_scope() -> tuple[str, int]:
    """(node path, visit) of the node visit running here; ("", 0) outside any node."""
    return _SCOPE.get()


@contextlib.contextmanager
def use_tape(tape: Tape | None) -> Iterator[None]:
    """Make `tape` the run's tape for the block (None: neither record nor replay)."""
    token = _TAPE.set(tape)
    try:
        yield
    finally:
        _TAPE.reset(token)


@contextlib.contextmanager
def exchange_scope(node: str, visit: int) -> Iterator[None]:
    """File what the block asks under node `node`, visit `visit`."""
    token = _SCOPE.set((node, visit))
    try:
        yield
    finally:
        _SCOPE.reset(token)
