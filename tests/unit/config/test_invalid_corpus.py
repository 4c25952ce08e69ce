"""The corpus of broken workflows: each file states the errors it must produce, by line and path.

A file's `# expect: LINE PATH | MESSAGE PART` comments list every error expected (PATH `-` for
errors without a path, such as YAML syntax); no other error may appear.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from devall_cli.workflow.loader import validate_workflow

INVALID_DIR = Path(__file__).resolve().parents[2] / "data" / "invalid"
FILES = sorted(INVALID_DIR.glob("*.yaml"))
# Control characters of a file are never echoed to the terminal: they are shown as U+FFFD.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def expectations(path: Path) -> list[tuple[int, str, str]]:
    """(line, path, message part) of every `# expect:` comment."""
    found = []
    for line in path.read_bytes().decode("utf-8", "replace").splitlines():
        if line.startswith("# expect:"):
            where, _, message = line[len("# expect:") :].partition("|")
            number, issue_path = where.split()
            found.append((int(number), "" if issue_path == "-" else issue_path, message.strip()))
    return found


def test_the_corpus_is_large_enough() -> None:
    assert len(FILES) >= 25
    assert all(expectations(path) for path in FILES)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_broken_workflow_reports_exactly_the_expected_errors(path: Path) -> None:
    workflow, issues = validate_workflow(path, environ={})
    assert workflow is None
    errors = [issue for issue in issues if issue.severity == "error"]
    expected = expectations(path)
    assert sorted((e.line, e.path) for e in errors) == sorted((line, p) for line, p, _ in expected)
    for line, issue_path, message in expected:
        (match,) = [e for e in errors if (e.line, e.path) == (line, issue_path)]
        assert message in match.message
        assert match.file == str(path)
        if match.line:
            assert match.col >= 1
            text = path.read_bytes().decode("utf-8", "replace").splitlines()[match.line - 1]
            assert match.source_line == CONTROL.sub("\ufffd", text)
