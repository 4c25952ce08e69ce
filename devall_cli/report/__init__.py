"""`devall report`: one self-contained HTML page of a run, from its events.jsonl and result.json."""

from __future__ import annotations

from pathlib import Path

REPORT_NAME = "report.html"


def write_report(run_dir: Path, out: Path | None = None) -> Path:
    """Write the report of `run_dir` (default `RUN_DIR/report.html`); returns its path.

    The file is created afresh with mode 0600, like the run's own files (it shows tool output).
    Raises UsageError when `run_dir` is no run directory, RunFailedError when the file cannot
    be written.
    """
    from devall_cli.errors import RunFailedError
    from devall_cli.report.reader import read_run
    from devall_cli.report.render import render_report
    from devall_cli.run_files import open_run_file, write_failure

    target = out if out is not None else run_dir / REPORT_NAME
    page = render_report(read_run(run_dir), target)
    try:
        with open_run_file(target) as handle:
            handle.write(page)
    except OSError as exc:
        raise RunFailedError(write_failure(target, exc)) from None
    return target
