"""`.env` files: syntax, and which file wins."""

from __future__ import annotations

from pathlib import Path

from devall_cli.config.dotenv import load_dotenv_files, parse_dotenv


def test_key_value_lines_comments_export_and_quotes() -> None:
    text = "\n".join(
        [
            "# a comment",
            "",
            "PLAIN=value",
            "export EXPORTED=yes",
            'DOUBLE="quoted value"',
            "SINGLE='single # not a comment'",
            "MISMATCHED=\"half'",
            "  SPACED  =  padded  ",
            "EMPTY=",
            "EQUALS=a=b=c",
        ]
    )
    values = parse_dotenv(text).values
    assert values == {
        "PLAIN": "value",
        "EXPORTED": "yes",
        "DOUBLE": "quoted value",
        "SINGLE": "single # not a comment",
        "MISMATCHED": "\"half'",
        "SPACED": "padded",
        "EMPTY": "",
        "EQUALS": "a=b=c",
    }


def test_lines_without_equals_are_warned_about_without_showing_them() -> None:
    parsed = parse_dotenv("GOOD=1\nsk-secret-value\n", file="x.env")
    assert parsed.values == {"GOOD": "1"}
    (issue,) = parsed.issues
    assert (issue.file, issue.line, issue.severity) == ("x.env", 2, "warning")
    assert "sk-secret-value" not in issue.headline() + issue.source_line


def test_current_folder_wins_over_workflow_folder_and_env_file_wins_over_both(
    tmp_path: Path,
) -> None:
    flow_dir = tmp_path / "flows"
    flow_dir.mkdir()
    (flow_dir / ".env").write_text("A=flow\nB=flow\nC=flow\n")
    (tmp_path / ".env").write_text("B=cwd\nC=cwd\n")
    extra = tmp_path / "extra.env"
    extra.write_text("C=extra\n")
    merged = load_dotenv_files(flow_dir, tmp_path, extra)
    assert merged.values == {"A": "flow", "B": "cwd", "C": "extra"}
    assert merged.issues == []


def test_same_folder_is_read_once(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("A=1\n")
    assert load_dotenv_files(tmp_path, tmp_path, None).values == {"A": "1"}


def test_missing_env_file_is_an_error(tmp_path: Path) -> None:
    merged = load_dotenv_files(tmp_path, tmp_path, tmp_path / "nope.env")
    (issue,) = merged.issues
    assert issue.severity == "error"
    assert "env file not found" in issue.message


def test_non_utf8_env_file_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.env"
    bad.write_bytes(b"A=\xff\xfe\n")
    (issue,) = load_dotenv_files(tmp_path, tmp_path, bad).issues
    assert "UTF-8" in issue.message
