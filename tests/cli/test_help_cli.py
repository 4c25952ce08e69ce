"""Every `--help` page: examples at the end, one style of usage line, commands sorted and uncut."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer

from devall_cli.cli.app import app
from tests.helpers import cli, devall

# Click lays help out at most 78 columns wide on any terminal wider than that; Typer's CliRunner
# lays it out 80 wide.
WIDTH = {"COLUMNS": "100"}
IN_PROCESS_COLUMNS = 80
# Typer's own forms: `{WORKFLOW}`, `[[DIR]]`, `<path>`, `<list[Path]>`, `<str>`.
BAD_METAVAR = re.compile(r"[{}<>]|\[\[|\]\]|list\[")


def command_paths(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command and group of the app, by its words after `devall`."""
    yield path
    for name, sub in getattr(command, "commands", {}).items():
        yield from command_paths(sub, (*path, name))


PATHS = sorted(command_paths(typer.main.get_command(app)))


def sections(page: str) -> dict[str, list[str]]:
    """The lines of each section of a help page ("Usage", "Arguments", "Examples", ...)."""
    found: dict[str, list[str]] = {}
    current = ""
    for line in page.splitlines():
        heading = re.fullmatch(r"(\w+):(?: (.*))?", line)
        if heading:
            current = heading.group(1)
            found[current] = [heading.group(2)] if heading.group(2) else []
        elif current and line.strip():
            found[current].append(line)
    return found


def terms(lines: list[str]) -> list[str]:
    """The first column of a definition list (`--out DIR`, `WORKFLOW`), without the help."""
    return [re.split(r"\s{2,}", line.strip())[0] for line in lines if re.match(r"  \S", line)]


@pytest.mark.parametrize("path", PATHS, ids=lambda path: " ".join(path) or "devall")
def test_every_help_page_ends_with_examples_and_writes_metavars_in_one_style(
    path: tuple[str, ...],
) -> None:
    done = cli(*path, "--help", env=WIDTH)
    assert done.returncode == 0, done.stderr
    page = sections(done.stdout)
    assert list(page)[-1] == "Examples", done.stdout
    examples = page["Examples"]
    commands = [line.strip() for line in examples if not line.startswith("      ")]
    assert 1 <= len(commands) <= 3, examples  # continuation lines are indented further
    assert all(" devall " in f" {line} " or line.endswith(" &") for line in commands), examples
    assert all(len(line) <= IN_PROCESS_COLUMNS for line in examples), examples
    usage = page["Usage"][0]
    assert usage.startswith(" ".join(("devall", *path, "[OPTIONS]")))
    shown = [usage, *terms(page.get("Arguments", [])), *terms(page.get("Options", []))]
    assert [text for text in shown if BAD_METAVAR.search(text)] == []


def test_an_optional_or_repeated_argument_is_bracketed_or_dotted_once() -> None:
    init = sections(cli("init", "--help", env=WIDTH).stdout)
    assert init["Usage"][0] == "devall init [OPTIONS] [DIR]"
    assert terms(init["Arguments"]) == ["DIR"]
    page = sections(cli("validate", "--help", env=WIDTH).stdout)
    assert page["Usage"][0] == "devall validate [OPTIONS] WORKFLOW..."
    assert terms(page["Arguments"]) == ["WORKFLOW..."]
    graph = sections(cli("graph", "--help", env=WIDTH).stdout)
    assert "-f, --format mermaid|svg|dot" in terms(graph["Options"])


def test_the_installed_command_lists_every_command_sorted_and_uncut() -> None:
    done = devall("--help", env=WIDTH)
    assert done.returncode == 0, done.stderr
    assert max(len(line) for line in done.stdout.splitlines()) <= 78
    rows = sections(done.stdout)["Commands"]
    names = [line.split()[0] for line in rows if re.match(r"  \S", line)]
    assert names == sorted(path[0] for path in PATHS if len(path) == 1)
    assert [line for line in rows if line.rstrip().endswith("...")] == []
    # Each command's first sentence, whole: every entry ends with its full stop.
    entries = re.split(r"\n  (?=\S)", "\n".join(rows).strip())
    assert all(entry.rstrip().endswith((".", ")")) for entry in entries), entries
