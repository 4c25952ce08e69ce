"""The TASKS file: every format, ids and vars, and bad lines reported together with their lines."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from devall_cli import limits
from devall_cli.batch.tasks import choose_format, parse_tasks, read_tasks, task_dir_name
from devall_cli.errors import ConfigError, UsageError


def problems(text: str, fmt: str = "jsonl") -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_tasks(text, fmt, "tasks")  # type: ignore[arg-type]
    return [issue.headline() for issue in caught.value.issues]


def test_jsonl_takes_id_task_and_vars_and_names_the_others_by_line() -> None:
    text = (
        '{"id": "a", "task": "first", "vars": {"TOPIC": "rain", "N": 3, "ON": true}}\n'
        "\n"
        '{"task": "second", "expected": "kept for the user\'s own tools"}\n'
        '{"id": 7, "task": "third\\u2028still third"}\n'
    )
    tasks = parse_tasks(text, "jsonl", "tasks.jsonl")
    assert [(t.id, t.task, dict(t.vars), t.line) for t in tasks] == [
        ("a", "first", {"TOPIC": "rain", "N": "3", "ON": "true"}, 1),
        ("3", "second", {}, 3),
        ("7", "third\u2028still third", {}, 4),
    ]


def test_csv_columns_other_than_id_and_task_are_vars() -> None:
    text = 'id,task,TOPIC,STYLE\nr1,"a task, with a comma",rain,\n,"two\nlines",sun,haiku\n'
    tasks = parse_tasks(text, "csv", "tasks.csv")
    assert [(t.id, t.task, dict(t.vars), t.line) for t in tasks] == [
        ("r1", "a task, with a comma", {"TOPIC": "rain"}, 2),
        ("3", "two\nlines", {"TOPIC": "sun", "STYLE": "haiku"}, 3),
    ]


def test_chatdev_batch_csv_files_are_read_as_chatdev_reads_them() -> None:
    text = (
        "ID,Task,Vars,Attachments,TONE\n"
        'a1,  Summarise the report ,"{""TOPIC"": ""tides"", ""N"": 2}",,dry\n'
        "a2,Write a limerick,,[],\n"
    )
    tasks = parse_tasks(text, "csv", "batch.csv")
    assert [(t.id, t.task, dict(t.vars)) for t in tasks] == [
        ("a1", "Summarise the report", {"TOPIC": "tides", "N": "2", "TONE": "dry"}),
        ("a2", "Write a limerick", {}),
    ]


def test_text_is_one_task_a_line_and_skips_blank_lines() -> None:
    tasks = parse_tasks("write a poem\n\n  \r\nsum 2 and 3\r\n", "text", "t.txt")
    assert [(t.id, t.task) for t in tasks] == [("1", "write a poem"), ("4", "sum 2 and 3")]


def test_bad_jsonl_lines_are_all_reported_with_their_line_numbers() -> None:
    text = "\n".join(
        [
            '{"id": "a", "task": "ok"}',
            "not json",
            "[1, 2]",
            '{"id": "b"}',
            '{"id": "c", "task": 5}',
            '{"id": true, "task": "x"}',
            '{"id": "d", "task": "x", "vars": ["A"]}',
            '{"id": "e", "task": "x", "vars": {"A": {"deep": 1}}}',
            '{"id": "a", "task": "again"}',
            '{"id": "", "task": "x"}',
        ]
    )
    assert problems(text) == [
        "tasks:2:1: not a JSON object: Expecting value",
        "tasks:3: expected a JSON object with a 'task', got a list",
        "tasks:4: missing 'task'",
        "tasks:5: 'task' must be a text, got the number 5",
        "tasks:6: 'id' must be a text or an integer, got a boolean",
        "tasks:7: 'vars' must be an object of NAME: value, got a list",
        "tasks:8: vars.A must be a text or a number, got an object",
        "tasks:9: duplicate id 'a' (first on line 1)",
        "tasks:10: 'id' is empty",
    ]


def test_json_beyond_the_limits_is_a_located_problem_not_a_crash() -> None:
    deep = '{"a":' * 5000 + "1" + "}" * 5000
    text = "\n".join(
        [
            '{"id": "t1", "task": "x", "vars": ' + deep + "}",
            '{"id": ' + "9" * 5000 + ', "task": "x"}',
        ]
    )
    assert problems(text) == [
        "tasks:1: the line is nested deeper than 100 levels",
        "tasks:2: the line holds an integer longer than 4300 digits",
    ]
    csv = 'task,vars\nx,"' + deep.replace('"', '""') + '"\n'
    assert problems(csv, "csv") == ["tasks:2: the vars cell is nested deeper than 100 levels"]


def test_bad_csv_is_reported_with_lines() -> None:
    assert problems("id,prompt\n1,x\n", "csv") == ["tasks:1: the header has no 'task' column"]
    assert problems("task,A,A\nx,1,2\n", "csv") == ["tasks:1: the header names column 'A' twice"]
    assert problems("id,task\na,x\nb,y,extra\na,z\n", "csv") == [
        "tasks:3: 3 fields, but the header has 2",
        "tasks:4: duplicate id 'a' (first on line 2)",
    ]


def test_attachments_and_empty_tasks_are_refused() -> None:
    text = 'id,task,attachments,vars\n1,x,"[""a.png""]",\n2,  ,,\n3,y,,"[1]"\n4,z,,{bad\n'
    assert problems(text, "csv") == [
        "tasks:2: attachments are not supported: devall batch takes text tasks only",
        "tasks:3: the task is empty",
        "tasks:4: 'vars' must be an object of NAME: value, got a list",
        "tasks:5: the vars cell is not a JSON object: Expecting property name enclosed in "
        "double quotes",
    ]
    assert problems('{"task": "x", "attachments": ["a.png"]}\n{"task": " "}') == [
        "tasks:1: attachments are not supported: devall batch takes text tasks only",
        "tasks:2: the task is empty",
    ]


def test_an_empty_file_holds_no_task() -> None:
    assert problems("\n\n", "text") == ["tasks: holds no task"]
    assert problems("id,task\n", "csv") == ["tasks: holds no task"]


def test_a_flood_of_bad_lines_is_listed_up_to_a_limit() -> None:
    found = problems("x\n" * 150)
    assert len(found) == 101 and found[-1] == "tasks: 50 more bad lines not shown"


def test_a_task_over_the_size_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "TASK_BYTES", 10)
    assert problems('{"task": "short"}\n{"task": "far too long a task"}') == [
        "tasks:2: the task is larger than 0 MB"
    ]


def test_the_format_comes_from_the_option_the_suffix_or_the_first_line() -> None:
    assert choose_format("t.csv", '{"task": 1}', None) == "csv"
    assert choose_format("t.jsonl", "plain", None) == "jsonl"
    assert choose_format("t.txt", "{braces}", "jsonl") == "jsonl"
    assert choose_format("-", '\n {"task": "x"}', None) == "jsonl"
    assert choose_format("tasks", "do this", None) == "text"


def test_reading_a_file_stdin_and_bad_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.txt"
    path.write_bytes("\ufeffone\ntwo\n".encode())
    assert [t.task for t in read_tasks(str(path))] == ["one", "two"]
    stdin = io.TextIOWrapper(io.BytesIO(b'{"task": "from stdin"}\n'))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert [t.task for t in read_tasks("-")] == ["from stdin"]
    path.write_bytes(b"one\ntw\xffo\n")
    with pytest.raises(ConfigError) as caught:
        read_tasks(str(path))
    assert caught.value.issues[0].headline() == f"{path}:2: not valid UTF-8 (byte 0xff)"
    with pytest.raises(UsageError, match="cannot read TASKS"):
        read_tasks(str(tmp_path / "missing.txt"))


def test_run_directory_names_are_safe_distinct_and_stable() -> None:
    assert task_dir_name("django__django-11099") == "django__django-11099"
    names = {task_dir_name(i) for i in ("HumanEval/0", "HumanEval_0", "../x", ".hidden", "a b")}
    assert len(names) == 5
    assert all("/" not in n and not n.startswith(".") for n in names)
    assert task_dir_name("HumanEval/0") == task_dir_name("HumanEval/0")
    assert task_dir_name("HumanEval/0").startswith("HumanEval_0~")
