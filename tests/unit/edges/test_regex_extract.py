"""`regex_extract`: every key of ChatDev's processor, and its checks when the file is loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from devall_cli.edges.regex_extract import RegexExtract
from tests.unit.edges.helpers import edge_errors, load_edge, processor

ANSWER = "intro\n```python\nprint(1)\n```\nscore: 7\nScore: 9\n"


def extract(tmp_path: Path, text: str, **config: Any) -> str | None:
    process = {"type": "regex_extract", "config": config}
    message = processor(tmp_path, process=process)(text)
    return None if message is None else message.text


def test_the_settings_and_chatdevs_defaults(tmp_path: Path) -> None:
    process = {"type": "regex_extract", "config": {"pattern": "x", "group": "0"}}
    _, edge = load_edge(tmp_path, process=process)
    assert edge.process is not None and edge.process.type == "regex_extract"
    assert edge.process.config == RegexExtract(pattern="x", group=0)


def test_the_whole_first_match_by_default(tmp_path: Path) -> None:
    assert extract(tmp_path, ANSWER, pattern=r"score: \d") == "score: 7"


def test_a_group_by_number_or_name_and_the_dotall_flag(tmp_path: Path) -> None:
    pattern = r"```(?P<lang>\w*)\n(?P<code>.*?)```"
    assert extract(tmp_path, ANSWER, pattern=pattern, group="code", dotall=True) == "print(1)\n"
    assert extract(tmp_path, ANSWER, pattern=pattern, group=1, dotall=True) == "python"


def test_case_insensitive_multiple_matches_with_a_template(tmp_path: Path) -> None:
    text = extract(
        tmp_path,
        ANSWER,
        pattern=r"^score: (\d)$",
        group=1,
        case_sensitive=False,
        multiline=True,
        multiple=True,
        template="[{match}/10]",
    )
    assert text == "[7/10]\n[9/10]"


def test_a_group_that_did_not_take_part_in_a_match_is_skipped(tmp_path: Path) -> None:
    text = extract(tmp_path, "a1 b a2", pattern=r"a(\d)|b", group=1, multiple=True)
    assert text == "1\n2"


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({}, "no numbers here"),
        ({"on_no_match": "pass"}, "no numbers here"),
        ({"on_no_match": "default", "default_value": "NONE"}, "NONE"),
        ({"on_no_match": "default"}, ""),
        ({"on_no_match": "drop"}, None),
    ],
)
def test_what_happens_without_a_match(
    tmp_path: Path, settings: dict[str, Any], expected: str | None
) -> None:
    assert extract(tmp_path, "no numbers here", pattern=r"\d+", **settings) == expected


def test_the_message_keeps_its_other_fields(tmp_path: Path) -> None:
    process = {"type": "regex_extract", "config": {"pattern": r"\d+"}}
    message = processor(tmp_path, process=process)("abc 42")
    assert message is not None
    assert (message.text, message.role, dict(message.meta)) == ("42", "user", {"m": 1})


def test_every_bad_key_is_reported_at_once(tmp_path: Path) -> None:
    config = {
        "pattern": "(unclosed",
        "on_no_match": "skip",
        "multiple": "often",
        "template": 3,
        "patern": "x",
    }
    errors = edge_errors(tmp_path, process={"type": "regex_extract", "config": config})
    found = {issue.path: issue.message for issue in errors}
    here = "graph.edges[0].process.config"
    assert set(found) == {f"{here}.pattern", f"{here}.on_no_match", f"{here}.multiple",
                          f"{here}.template"}
    assert "not a valid regular expression" in found[f"{here}.pattern"]
    assert "one of pass, default, drop" in found[f"{here}.on_no_match"]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({}, "pattern is required"),
        ({"pattern": ""}, "pattern must not be empty"),
        ({"pattern": "a(b)", "group": 2}, "group 2 does not exist: the pattern has 1 group"),
        ({"pattern": "(?P<x>a)", "group": "y"}, "no group named 'y' (named: x)"),
        ({"pattern": "a", "group": True}, "group must be a group number or name"),
        ({"pattern": "a", "group": -1}, "group must be a group number"),
    ],
)
def test_a_pattern_and_group_that_cannot_work_are_errors(
    tmp_path: Path, config: dict[str, Any], message: str
) -> None:
    (error,) = edge_errors(tmp_path, process={"type": "regex_extract", "config": config})
    assert message in error.message


def test_an_unknown_processor_type_names_the_known_ones(tmp_path: Path) -> None:
    (error,) = edge_errors(tmp_path, process={"type": "regex_extrct", "config": {"pattern": "a"}})
    assert error.path == "graph.edges[0].process.type"
    assert "unknown processor type 'regex_extrct' (known: function, regex_extract)" in error.message
    assert "did you mean 'regex_extract'?" in error.message
