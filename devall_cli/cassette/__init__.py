"""Record what a run gets from outside its workflow file, and serve it back (docs/cassettes.md).

`devall run --record CASSETTE` keeps every model exchange, MCP exchange and person's answer of a
run; `--replay CASSETTE` runs again with no network and no server, every request answered from
the cassette, and stops at the first request the recording does not hold (exit 6).
"""

from devall_cli.cassette.scope import active_tape, current_scope, exchange_scope, use_tape
from devall_cli.cassette.tape import (
    FORMAT,
    ONLY_CHOICES,
    VERSION,
    Tape,
    error_entry,
    open_recording,
    open_replay,
    raise_recorded,
    replay_environ,
    replay_placeholders,
)

__all__ = [
    "FORMAT",
    "ONLY_CHOICES",
    "VERSION",
    "Tape",
    "active_tape",
    "current_scope",
    "error_entry",
    "exchange_scope",
    "open_recording",
    "open_replay",
    "raise_recorded",
    "replay_environ",
    "replay_placeholders",
    "use_tape",
]
