"""A bug in devall exits 70 (EX_SOFTWARE), not 1; `--debug` is scoped to its command."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from devall_cli import errors
from devall_cli.cli.app import app
from devall_cli.errors import ExitCode
from devall_cli.workflow import loader

ROOT = Path(__file__).resolve().parents[2]
INVALID = ROOT / "tests" / "data" / "invalid" / "unknown_keys_in_node.yaml"


def broken(*_: object, **__: object) -> object:
    raise RuntimeError("boom in the loader")


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"NO_COLOR": "1"})
    return result.exit_code, result.stdout, result.stderr


def test_exit_code_70_is_part_of_the_contract() -> None:
    assert int(ExitCode.INTERNAL) == 70
    assert ExitCode.INTERNAL not in (ExitCode.FAILED, ExitCode.CONFIG, ExitCode.REMOTE)


def test_an_unexpected_exception_exits_70_with_one_line_and_a_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(loader, "validate_workflow", broken)
    code, out, err = invoke("validate", str(INVALID))
    assert code == 70
    assert out == ""
    assert err == (
        "devall: error: internal error: RuntimeError: boom in the loader "
        "(run with --debug for the traceback)\n"
    )


def test_with_debug_an_unexpected_exception_shows_its_traceback_and_still_exits_70(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(loader, "validate_workflow", broken)
    code, _, err = invoke("--debug", "validate", str(INVALID))
    assert code == 70
    assert "Traceback (most recent call last)" in err
    assert 'raise RuntimeError("boom in the loader")' in err
    assert err.endswith("devall: error: internal error: RuntimeError: boom in the loader\n")


def test_the_installed_entry_point_exits_70_on_a_bug(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        from devall_cli.workflow import loader

        def broken(*args, **kwargs):
            raise RuntimeError("boom in the loader")

        loader.validate_workflow = broken
        sys.argv = ["devall", "validate", {str(INVALID)!r}]
        from devall_cli.cli.app import main
        main()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert done.returncode == 70, done.stderr
    assert done.stdout == ""
    assert done.stderr.startswith("devall: error: internal error: RuntimeError: boom in the loader")
    assert "Traceback" not in done.stderr


def test_a_failed_command_still_exits_with_its_own_code() -> None:
    code, _, err = invoke("validate", str(INVALID))
    assert code == ExitCode.CONFIG
    assert "internal error" not in err


def test_debug_records_issue_origins_for_its_own_command_only() -> None:
    assert not errors.recording_issue_origins()
    code, _, err = invoke("--debug", "validate", str(INVALID))
    assert code == ExitCode.CONFIG
    assert 'File "' in err  # the check that found the issue, shown while the flag was on
    assert not errors.recording_issue_origins()
    code, _, err = invoke("validate", str(INVALID))
    assert code == ExitCode.CONFIG
    assert 'File "' not in err  # the next command, without --debug, records nothing


def test_issue_origins_recorded_restores_the_previous_setting() -> None:
    with errors.issue_origins_recorded():
        assert errors.recording_issue_origins()
        with errors.issue_origins_recorded(False):
            assert not errors.recording_issue_origins()
        assert errors.recording_issue_origins()
    assert not errors.recording_issue_origins()
